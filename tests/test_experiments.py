"""The experiments people run, end to end on tiny models: rows that say what
was run, --training --resume on an inference CSV, precision, a cycle of
batch sizes with dynamic shapes, profiler traces, HLO dumps, graph breaks and
memory. Real models (resnet18) are in the slow tests at the end."""
import gzip
import json
import re
import sys
from pathlib import Path

import pytest
import torch

from benchmarks.run import accuracy, orchestrate, placement, probes, provenance, worker
from benchmarks import cli
from benchmarks.results import compare, store
from benchmarks.run.config import RunConfig
from conftest import TINY_CONFIGS


@pytest.fixture
def config(tmp_path, fault_models):
    path = tmp_path / "models.yaml"
    path.write_text(TINY_CONFIGS)
    return RunConfig(suite="torchbench", backends=("eager",), repeat=3, warmup=1, configs=str(path),
                     output=str(tmp_path / "out.csv"), isolate=False)


def run(argv, capsys):
    code = cli.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def _fast(tmp_path, *more):
    configs = tmp_path / "models.yaml"
    configs.write_text(TINY_CONFIGS)
    return ["--suite", "torchbench", "--repeat", "3", "--warmup", "1", "--no-isolate",
            "--configs", str(configs), *more]


# --------------------------------------------------------------------------
# Rows that say what was run


def test_rows_record_what_was_run(config):
    (row,) = worker.run_model(config.replace(precision="bf16", seed=7), "ok_mlp").rows
    assert row["status"] == "pass", row
    assert (row["mode"], row["dtype"], row["dynamic"], row["suite"]) == ("inference", "bf16", "static",
                                                                         "torchbench")
    assert (row["repeat"], row["warmup"], row["seed"]) == (3, 1, 7)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00", row["timestamp"])
    assert row["torch_version"].startswith("2.9") and row["torch_xla_version"].startswith("2.9")
    assert row["python_version"] == ".".join(map(str, sys.version_info[:3]))
    in_checkout = (provenance.PROJECT_ROOT / ".git").exists()
    assert re.fullmatch(r"[0-9a-f]{40}", row["commit"]) if in_checkout else row["commit"] == "unknown"


def test_commit_is_unknown_outside_a_checkout(tmp_path):
    assert provenance.git_commit(tmp_path) == "unknown"


@pytest.mark.slow
def test_training_resumed_on_an_inference_csv_runs_the_training_rows(tmp_path, fault_models, capsys):
    out = tmp_path / "run.csv"
    args = _fast(tmp_path, "--only", "ok_mlp", "--backend", "eager", "--output", str(out))
    code, _, err = run(args, capsys)
    assert code == 0, err
    code, console, err = run([*args, "--training", "--resume"], capsys)
    assert code == 0, err
    df = store.read_rows(out)
    assert df["mode"].tolist() == ["inference", "training"]
    assert "Training, fp32" in console  # the training table, not the inference one again
    # Resumed again, nothing is left to run.
    config = cli.make_config(cli.build_parser().parse_args([*args, "--training", "--resume"]))
    assert orchestrate.pending_work(config) == []
    assert orchestrate.pending_work(config.replace(precision="bf16")) == [("ok_mlp", ("eager",))]
    md = store.markdown_path(out).read_text()
    assert "## inference, fp32" in md and "## training, fp32" in md


def test_accuracy_and_performance_runs_do_not_resume_each_other(tmp_path, fault_models, capsys):
    out = tmp_path / "run.csv"
    args = _fast(tmp_path, "-k", "^(ok_mlp|raise_on_run)$", "--backend", "eager", "--output", str(out))
    code, _, err = run([*args, "--accuracy"], capsys)
    assert code == 0, err
    df = store.read_rows(out)
    # Every row of an accuracy run holds a verdict, a failed one too.
    assert dict(zip(df["name"], df["accuracy"])) == {"ok_mlp": "pass", "raise_on_run": "eager_fail_to_run"}
    assert {store.measures(r) for r in df.to_dict("records")} == {"accuracy"}
    text = out.read_text()
    code, _, err = run([*args, "--resume"], capsys)
    assert code == 2 and err.count("\n") == 1, err
    assert f"cannot --resume {out} as a performance run: it holds accuracy rows" in err
    assert out.read_text() == text
    # The other way round: a performance CSV refuses an --accuracy resume.
    perf = tmp_path / "perf.csv"
    args = _fast(tmp_path, "--only", "ok_mlp", "--backend", "eager", "--output", str(perf))
    assert run(args, capsys)[0] == 0
    text = perf.read_text()
    code, _, err = run([*args, "--accuracy", "--resume"], capsys)
    assert code == 2 and "it holds performance rows (--performance)" in err, err
    assert perf.read_text() == text
    # Resumed in its own mode, an accuracy CSV has nothing left to run.
    config = cli.make_config(cli.build_parser().parse_args(
        [*_fast(tmp_path, "--only", "ok_mlp", "--backend", "eager", "--output", str(out)),
         "--accuracy", "--resume"]))
    assert orchestrate.pending_work(config) == []


def test_failed_rows_of_a_performance_run_are_not_done_accuracy_experiments(config):
    # A failed row holds neither a speedup nor a verdict: it counts as done
    # for a performance resume only.
    from benchmarks.run.rows import failed, row_bases

    config = config.replace(models=("ok_mlp",))
    assert orchestrate.pending_work(config.replace(resume=True)) == [("ok_mlp", ("eager",))]
    bases = row_bases(config, "ok_mlp")
    store.append_rows(config.csv_path, failed(config, bases, "crashed", "killed").rows)
    assert orchestrate.pending_work(config.replace(resume=True)) == []
    accuracy = config.replace(resume=True, measure="accuracy")
    assert orchestrate.pending_work(accuracy) == [("ok_mlp", ("eager",))]
    assert failed(accuracy, bases, "crashed", "killed").rows[0]["accuracy"] == "crashed"


@pytest.mark.slow
def test_compare_of_inference_and_training_runs(tmp_path, fault_models, capsys):
    common = _fast(tmp_path, "--only", "ok_mlp", "--backend", "eager", "--repeat", "6")
    inference, training = tmp_path / "inference.csv", tmp_path / "training.csv"
    assert run([*common, "--output", str(inference)], capsys)[0] == 0
    assert run([*common, "--training", "--output", str(training)], capsys)[0] == 0
    code, out, err = run(["compare", str(inference), str(training)], capsys)
    assert "not comparable" in out and "mode inference -> training" in out, out + err
    (row,) = compare.compare(inference, training).rows
    assert row.mark == compare.NOT_COMPARABLE


# --------------------------------------------------------------------------
# Precision


class _Mixed(torch.nn.Module):
    """An embedding (integer input) and a linear layer (floating input)."""

    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(10, 4)
        self.linear = torch.nn.Linear(4, 4)

    def forward(self, ids, x):
        assert not ids.is_floating_point()
        return self.linear(self.embed(ids) + x)


@pytest.mark.parametrize("make", [
    lambda m: placement.baseline_contender(m, use_xla=False, precision="bf16"),
    lambda m: placement.baseline_contender(m, use_xla=True, precision="bf16"),
    lambda m: placement.backend_contender(m, "eager", precision="bf16"),
    lambda m: placement.backend_contender(m, "torchxla_trace_once", precision="bf16"),
], ids=["eager", "xla", "eager-backend", "trace_once"])
def test_every_runner_casts_model_and_floating_inputs_alike(make):
    runner = make(_Mixed())
    ids, x = runner.prepare((torch.tensor([[1, 2]]), torch.randn(1, 2, 4)))
    assert ids.dtype == torch.int64 and x.dtype == torch.bfloat16
    assert runner.step((ids, x)).dtype == torch.bfloat16


def test_amp_runs_under_autocast_on_the_runners_device():
    for runner in (placement.baseline_contender(_Mixed(), use_xla=False, precision="amp"),
                   placement.baseline_contender(_Mixed(), use_xla=True, precision="amp")):
        ids, x = runner.prepare((torch.tensor([[1, 2]]), torch.randn(1, 2, 4)))
        assert x.dtype == torch.float32  # amp casts nothing itself
        assert runner.step((ids, x)).dtype == torch.bfloat16  # autocast did


def test_fp64_reference_rule():
    ref64 = torch.linspace(-3, 3, 100, dtype=torch.float64)
    noise = torch.sin(torch.arange(100, dtype=torch.float64))
    baseline = (ref64 + 0.04 * noise).to(torch.bfloat16)
    close = (ref64 - 0.04 * noise).to(torch.bfloat16)  # as far from fp64 as the baseline
    far = (ref64 + 0.5 * noise).to(torch.bfloat16)
    assert not accuracy.compare(baseline, close, 1e-2).ok  # the tolerance alone fails it
    assert accuracy.compare(baseline, close, 1e-2, fp64_ref=ref64).ok
    check = accuracy.compare(baseline, far, 1e-2, fp64_ref=ref64)
    assert not check.ok and "RMSE vs fp64" in check.reason


def test_bf16_accuracy_passes_within_its_tolerance(config):
    rows = worker.run_model(config.replace(measure="accuracy", precision="bf16",
                                           backends=("eager", "torchxla_trace_once")), "ok_mlp").rows
    assert [(r["backend"], r["dtype"], r["accuracy"]) for r in rows] == [
        ("eager", "bf16", "pass"), ("torchxla_trace_once", "bf16", "pass")], rows


def test_per_dtype_tolerances_come_from_configs():
    from benchmarks.run.settings import load_settings

    settings = load_settings().for_model("resnet18")
    assert settings.tolerance(xla=True, dtype="bf16") == 5.0e-2
    assert settings.tolerance(xla=False, dtype="fp16") == 1.0e-2
    assert settings.tolerance(xla=False) == 1.0e-4


# --------------------------------------------------------------------------
# Dynamic shapes


def test_a_cycle_of_batch_sizes_reports_each_shapes_compiles(config):
    run_config = config.replace(use_xla_baseline=True, backends=("torchxla_trace_once",),
                                batch_sizes=(1, 2, 4), dynamic_shapes=True)
    result = worker.run_model(run_config, "ok_mlp")
    rows = result.rows
    assert [(r["batch_size"], r["dynamic"], r["status"]) for r in rows] == [
        (1, "dynamic", "pass"), (2, "dynamic", "pass"), (4, "dynamic", "pass")], rows
    # Every new shape compiles at least one XLA executable in its first call,
    # in the backend and in the lazy baseline alike; dynamo compiles a graph
    # for the first shape and at most one more (size 1 is specialised).
    assert all(r["first_call_compiles"] >= 1 and r["baseline_first_call_compiles"] >= 1 for r in rows)
    assert rows[0]["recompiles"] == 0 and sum(r["dynamo_graphs"] for r in rows) <= 2
    assert all(r["compilation_latency"] > 0 and len(s["samples_s"]) == 3 for r in rows
               for s in result.samples)
    # Each row has its own samples, keyed by its experiment.
    keys = {store.experiment_key(s) for s in result.samples}
    assert keys == {store.experiment_key(r) for r in rows}


def test_batch_sizes_flag_rejects_bad_values(capsys):
    for bad in (["--batch-sizes", "1,x"], ["--batch-sizes", "0,2"], ["--batch-sizes", "2,2"],
                ["--batch-sizes", "1,2", "--batch-size", "4"], ["--bfloat16", "--float16"]):
        code, _, err = run(["--only", "resnet18", *bad], capsys)
        assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, (bad, err)


# --------------------------------------------------------------------------
# Profiles, HLO, graph breaks, memory


def test_profiler_traces_hlo_and_graph_breaks(tmp_path, fault_models, capsys):
    traces, hlo, out = tmp_path / "traces", tmp_path / "hlo", tmp_path / "run.csv"
    code, _, err = run(_fast(tmp_path, "--only", "print_break", "--use-xla-baseline",
                             "--backend", "torchxla_trace_once,eager", "--output", str(out),
                             "--export-profiler-trace", str(traces), "--dump-hlo", str(hlo)), capsys)
    assert code == 0, err
    for runner in ("baseline_xla", "torchxla_trace_once", "eager"):
        events = probes.chrome_trace_events(traces / f"print_break_{runner}.json")
        assert any(e.get("ph") == "X" for e in events), runner  # complete events: a real trace
    xla_traces = list((traces / "print_break_torchxla_trace_once_xla").rglob("*.trace.json.gz"))
    assert xla_traces and json.loads(gzip.decompress(xla_traces[0].read_bytes()))
    for runner in ("baseline_xla", "torchxla_trace_once"):
        (dump,) = hlo.glob(f"print_break_{runner}.*.hlo.txt")
        assert "ENTRY" in dump.read_text() and "HloModule" in dump.read_text()
    assert not list(hlo.glob("print_break_eager*"))  # a host runner has no HLO
    breaks = store.read_graph_breaks(out)
    assert set(breaks["backend"]) == {"torchxla_trace_once", "eager"}
    for _, brk in breaks.iterrows():
        assert "print" in brk["reason"]
        assert "print_break/__init__.py:5 in _say_hello" in brk["user_frame"]
    df = store.read_rows(out)
    assert (df["graph_breaks"] >= 1).all()
    md = store.markdown_path(out).read_text()
    assert "[run_graph_breaks.csv](run_graph_breaks.csv)" in md and re.search(r"\| print_break \| +1 \|", md)


def test_memory_peaks_and_ratio(config):
    (row,) = worker.run_model(config.replace(use_xla_baseline=True, backends=("torchxla_trace_once",)),
                              "ok_mlp").rows
    assert row["peak_host_mb"] > 100 and row["baseline_peak_host_mb"] > 100  # a process with torch
    assert row["host_compression_ratio"] == pytest.approx(row["baseline_peak_host_mb"] / row["peak_host_mb"])
    assert row["peak_device_mb"] is None  # PJRT CPU reports no memory: empty, not made up
    # PyTorch's names for the same: GB of 10**9 bytes, of the host where the device reports none.
    assert row["eager_peak_mem"] == pytest.approx(row["baseline_peak_host_mb"] * 2 ** 20 / 1e9)
    assert row["dynamo_peak_mem"] == pytest.approx(row["peak_host_mb"] * 2 ** 20 / 1e9)
    assert row["compression_ratio"] == pytest.approx(row["host_compression_ratio"])
    assert row["unique_graphs"] == row["dynamo_graphs"] >= 1


_HOST_PEAK_STEP = """
import torch
from benchmarks.run import probes
peak = probes.HostPeak()
if not peak.resettable:
    print("unresettable")
    raise SystemExit
peak.reset()
quiet = peak.peak_bytes()
peak.reset()
block = torch.ones(64 * 1024 * 1024, dtype=torch.uint8)  # 64 MiB, touched
del block
print(peak.peak_bytes() - quiet)
"""


def test_host_peak_sees_a_step_that_allocates():
    # In a process of its own: in a test worker, memory other tests free
    # (a compile thread ending) can drop the resident set by more than the
    # step allocates, between the reset and the reading.
    import subprocess

    done = subprocess.run([sys.executable, "-c", _HOST_PEAK_STEP], capture_output=True, text=True,
                          timeout=120, cwd=Path(__file__).resolve().parent.parent)
    assert done.returncode == 0, done.stderr
    if done.stdout.strip() == "unresettable":
        pytest.skip("no /proc/self/clear_refs here")
    assert int(done.stdout.strip()) > 50 * 1024 * 1024


# --------------------------------------------------------------------------
# Real models (minutes on 2 cores)


@pytest.mark.slow
def test_bf16_resnet18_performance_and_accuracy(tmp_path, capsys):
    common = ["--bfloat16", "--use-xla-baseline", "--backend", "torchxla_trace_once", "--only", "resnet18",
              "--repeat", "5"]
    perf, acc = tmp_path / "X.csv", tmp_path / "A.csv"
    assert run(["--performance", *common, "--output", str(perf)], capsys)[0] == 0
    (row,) = store.read_rows(perf).to_dict("records")
    assert (row["dtype"], row["status"], row["mode"]) == ("bf16", "pass", "inference")
    assert row["schema_version"] == store.SCHEMA_VERSION
    assert row["commit"] and row["timestamp"]
    assert run(["--accuracy", *common, "--output", str(acc)], capsys)[0] == 0
    (row,) = store.read_rows(acc).to_dict("records")
    assert row["accuracy"] == "pass", row


@pytest.mark.slow
def test_dynamic_shapes_on_resnet18_show_each_shapes_compiles(tmp_path, capsys):
    out = tmp_path / "D.csv"
    code, _, err = run(["--dynamic-shapes", "--batch-sizes", "1,2,4", "--use-xla-baseline",
                        "--backend", "torchxla_trace_once,torchxla_trivial", "--only", "resnet18",
                        "--repeat", "3", "--warmup", "1", "--output", str(out)], capsys)
    assert code == 0, err
    df = store.read_rows(out)
    for backend in ("torchxla_trace_once", "torchxla_trivial"):
        rows = df[df["backend"] == backend]
        assert rows["batch_size"].tolist() == [1, 2, 4] and set(rows["status"]) == {"pass"}
        assert (rows["first_call_compiles"] >= 1).all() and (rows["baseline_first_call_compiles"] >= 1).all()
    # Once each batch size is seen nothing compiles (a graph break at each
    # max-pool used to run the pool lazily, one compile per call).
    ours = df[df["backend"] == "torchxla_trace_once"]
    assert (ours["compiles_per_iter"] == 0).all(), ours[["batch_size", "compiles_per_iter"]]


def test_accuracy_checks_every_batch_size_of_a_cycle(config):
    rows = worker.run_model(config.replace(measure="accuracy", batch_sizes=(1, 3), dynamic_shapes=True,
                                           backends=("torchxla_trace_once",)), "ok_mlp").rows
    assert [(r["batch_size"], r["dynamic"], r["accuracy"]) for r in rows] == [
        (1, "dynamic", "pass"), (3, "dynamic", "pass")], rows


def test_explain_prints_breaks_fallbacks_recompiles_and_host_share(tmp_path, fault_models, capsys):
    """--explain (PyTorch's --print-graph-breaks too): per model and backend,
    the graph breaks with their reasons, the recompiles with the guard that
    failed (a cycle of batch sizes on static shapes recompiles), the ops run on
    the host and the host's share of a step."""
    out = tmp_path / "run.csv"
    code, stdout, err = run(_fast(tmp_path, "--only", "print_break", "--use-xla-baseline",
                                  "--backend", "torchxla_trace_once", "--batch-sizes", "2,3",
                                  "--output", str(out), "--print-graph-breaks"), capsys)
    assert code == 0, err
    explained = stdout[stdout.index("Explain:"):]
    assert "print_break · torchxla_trace_once (batch size 3)" in explained, explained
    assert "graph breaks: 1" in explained and "print_break/__init__.py:5 in _say_hello" in explained
    assert "size mismatch at index 0. expected 2, actual 3" in explained, explained
    at_2 = explained[:explained.index("(batch size 3)")]
    assert "size mismatch" not in at_2, explained  # the recompile happened at batch size 3
    assert "ops run on the host by torch_xla: none" in explained
    assert "host time: " in explained and "ms step (" in explained
