"""PyTorch's files made from our rows: its own check_accuracy.py and
check_graph_breaks.py (run from ../shared/peer/) read our accuracy CSV
against our expected files, pass, and fail on an injected new failure or an
extra graph break; the benchmark-database records read back."""
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from benchmarks import cli
from benchmarks.results import pytorch_files, store

PEER = Path(__file__).resolve().parents[2] / "shared" / "peer" / "pytorch-benchmarks-dynamo"
BACKEND = "torchxla_trace_once"
STEM = f"{BACKEND}_huggingface_float32_inference_cpu_accuracy"


def _row(name, accuracy="pass", **fields):
    row = dict(dev="cpu", name=name, batch_size=1, backend=BACKEND, baseline="eager", suite="huggingface",
               mode="inference", dtype="fp32", dynamic="static", inputs="fixed", status=accuracy,
               accuracy=accuracy, max_error=0.0, tolerance=0.01, dynamo_graphs=1, unique_graphs=1,
               graph_breaks=0, calls_captured=40, unique_graph_breaks=0, fallbacks_to_eager=0,
               autograd_captures=0, autograd_compiles=0, cache_lookup_latency=400.0)
    row.update(fields)
    return row


GOOD = [_row("BertForMaskedLM"), _row("T5Small", dynamo_graphs=2, unique_graphs=2, graph_breaks=1,
                                       unique_graph_breaks=1, calls_captured=90),
        _row("BigBird", "model_fail_to_load", dynamo_graphs=None, unique_graphs=None, graph_breaks=None,
             calls_captured=None, unique_graph_breaks=None, fallbacks_to_eager=None,
             autograd_captures=None, autograd_compiles=None, cache_lookup_latency=None),
        _row("GoogleFnet", "crashed")]


def _run(tmp_path: Path, rows, name="run") -> Path:
    path = tmp_path / name / "accuracy.csv"
    path.parent.mkdir(parents=True)
    store.append_rows(path, rows)
    pytorch_files.write(path)
    return path


def _check(script: str, actual: Path, expected: Path) -> subprocess.CompletedProcess:
    if not PEER.exists():
        pytest.skip("no peer copy of PyTorch's checks")
    return subprocess.run([sys.executable, str(PEER / script), "--actual", str(actual),
                           "--expected", str(expected)], capture_output=True, text=True, timeout=120)


@pytest.fixture
def accepted(tmp_path):
    """A run, and PyTorch's expected file written from it by update-expected."""
    run = _run(tmp_path, GOOD)
    folder = tmp_path / "expected"
    assert cli.main(["update-expected", str(run), "--pytorch", str(folder)]) == 0
    (expected,) = folder.glob("*.csv")
    return run, expected


def test_the_accuracy_csv_has_pytorchs_shape_and_words(tmp_path):
    run = _run(tmp_path, GOOD)
    frame = pd.read_csv(pytorch_files.folder(run) / f"{STEM}.csv")
    assert list(frame.columns[:4]) == ["dev", "name", "batch_size", "accuracy"]
    assert dict(zip(frame["name"], frame["accuracy"])) == {
        "BertForMaskedLM": "pass", "T5Small": "pass", "BigBird": "model_fail_to_load",
        "GoogleFnet": "fail_to_run"}  # crashed is not a word of PyTorch's
    assert set(frame["accuracy"]) <= set(pytorch_files.PYTORCH_STATUSES)
    assert (frame.loc[frame["name"] == "BigBird", ["unique_graphs", "graph_breaks"]] == 0).all(axis=None)


def test_the_expected_file_has_ci_expected_accuracys_shape(accepted):
    _, expected = accepted
    assert expected.name == "cpu_torchxla_trace_once_huggingface_inference.csv"
    frame = pd.read_csv(expected)
    assert list(frame.columns) == ["name", "accuracy", "graph_breaks", "calls_captured", "fallbacks_to_eager"]
    assert frame.set_index("name").loc["T5Small", "graph_breaks"] == 1


@pytest.mark.parametrize("script", ["check_accuracy.py", "check_graph_breaks.py"])
def test_pytorchs_checks_pass_on_our_files(accepted, script):
    run, expected = accepted
    done = _check(script, pytorch_files.folder(run) / f"{STEM}.csv", expected)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "BertForMaskedLM" in done.stdout


def test_check_accuracy_fails_on_a_new_failure(accepted, tmp_path):
    _, expected = accepted
    worse = _run(tmp_path, [_row("BertForMaskedLM", "fail_accuracy"), *GOOD[1:]], "worse")
    done = _check("check_accuracy.py", pytorch_files.folder(worse) / f"{STEM}.csv", expected)
    assert done.returncode == 1
    assert "BertForMaskedLM" in done.stdout and "accuracy status regressed" in done.stdout


def test_check_graph_breaks_fails_on_an_extra_break(accepted, tmp_path):
    _, expected = accepted
    worse = _run(tmp_path, [_row("BertForMaskedLM", graph_breaks=1), *GOOD[1:]], "worse")
    done = _check("check_graph_breaks.py", pytorch_files.folder(worse) / f"{STEM}.csv", expected)
    assert done.returncode == 1
    assert "BertForMaskedLM" in done.stdout and "graph_breaks=1, expected=0" in done.stdout


def test_update_expected_keeps_the_models_a_run_lacks(accepted, tmp_path):
    _, expected = accepted
    only = _run(tmp_path, [_row("BertForMaskedLM", "fail_accuracy")], "only")
    assert cli.main(["update-expected", str(only), "--pytorch", str(expected.parent)]) == 0
    frame = pd.read_csv(expected).set_index("name")
    assert frame.loc["BertForMaskedLM", "accuracy"] == "fail_accuracy"
    assert frame.loc["T5Small", "accuracy"] == "pass"


def test_update_expected_refuses_a_performance_run(tmp_path, capsys):
    path = tmp_path / "perf.csv"
    store.append_rows(path, [dict(dev="cpu", name="m", batch_size=1, backend=BACKEND, status="pass",
                                  speedup=1.1)])
    assert cli.main(["update-expected", str(path), "--pytorch", str(tmp_path / "x")]) == 2
    assert "no accuracy rows" in capsys.readouterr().err


def test_benchmark_records_round_trip(tmp_path):
    run = _run(tmp_path, GOOD)
    records = pytorch_files.read_records(pytorch_files.folder(run) / f"{STEM}.json")
    frame = pd.read_csv(pytorch_files.folder(run) / f"{STEM}.csv")
    metrics = [c for c in frame.columns if c not in ("dev", "name", "batch_size")]
    assert len(records) == len(frame) * len(metrics)  # one per metric of a row, as output_json
    by = {(r["model"]["name"], r["metric"]["name"]): r for r in records}
    verdict = by[("BigBird", "accuracy")]
    assert verdict["metric"]["extra_info"]["benchmark_values"] == ["model_fail_to_load"]
    assert verdict["benchmark"] == {"name": pytorch_files.BENCHMARK_NAME, "mode": "inference",
                                    "dtype": "float32",
                                    "extra_info": {"device": "cpu", "quantization": "", "batch_size": 1,
                                                   "suite": "huggingface", "baseline": "eager"}}
    assert verdict["model"] == {"name": "BigBird", "type": "OSS model", "backend": BACKEND,
                                "origins": ["huggingface"]}
    assert by[("T5Small", "calls_captured")]["metric"]["benchmark_values"] == [90]
    assert by[("T5Small", "graph_breaks")]["metric"]["benchmark_values"] == [1]


def test_the_compilation_metrics_csv_is_beside_the_run(tmp_path):
    run = _run(tmp_path, [_row("BertForMaskedLM", first_call_compiles=2, first_call_compile_s=1.5)])
    frame = pd.read_csv(pytorch_files.compilation_metrics_path(run))
    assert pytorch_files.compilation_metrics_path(run).name == "accuracy_compilation_metrics.csv"
    assert list(frame.columns[:3]) == ["dev", "name", "batch_size"]
    assert frame.loc[0, "first_call_compiles"] == 2 and frame.loc[0, "first_call_compile_s"] == 1.5
