"""First calls, caches and how the numbers are made, on tiny models:

* cold first calls, each runner in a fresh process of its own: no runner's
  first call is served by an executable another runner compiled (torch_xla's
  compile counters say so), where in one process it is;
* warm starts find their executables cached;
* ``--compile-cache`` turns on torch_xla's persistent cache: a miss in one
  process, a load attempt in the next (on PJRT CPU, a deserialize failure);
* threads and CPU affinity applied in the worker and recorded;
* adaptive repeats recorded in the rows; headroom from hand-computed numbers;
* ``--compile-step``: the whole training step compiled, as one graph or as
  written, its accuracy checked over several steps (a backend that loses the
  optimizer's updates fails); one graph runs one executable per step.
"""
import copy
import os
import sys

import pandas as pd
import pytest
import torch

from benchmarks.run import affinity, coldstart, worker
from benchmarks.results import report
from benchmarks.run.config import RunConfig
from conftest import FAULT_MODELS, TINY_CONFIGS


def _forget_torchbenchmark():
    for name in [n for n in sys.modules if n.split(".")[0] == "torchbenchmark"]:
        del sys.modules[name]


@pytest.fixture
def config(tmp_path, monkeypatch):
    _forget_torchbenchmark()
    monkeypatch.syspath_prepend(str(FAULT_MODELS))
    manual_seed = torch.manual_seed
    path = tmp_path / "models.yaml"
    path.write_text(TINY_CONFIGS)
    yield RunConfig(suite="torchbench", backends=("eager",), repeat=3, warmup=1, configs=str(path),
                    output=str(tmp_path / "out.csv"), isolate=False)
    torch.manual_seed = manual_seed
    _forget_torchbenchmark()


def _by_backend(result):
    return {row["backend"]: row for row in result.rows}


# --------------------------------------------------------------------------
# Fresh processes


def test_a_fresh_process_is_another_process_and_reports_errors():
    assert coldstart.in_fresh_process(os.getpid) != os.getpid()
    assert coldstart.in_fresh_process(os.getpid, fork=True) != os.getpid()
    # Tensors come back by value (not as descriptors of the dead process's memory).
    assert torch.equal(coldstart.in_fresh_process(torch.ones, 3), torch.ones(3))
    with pytest.raises(coldstart.FreshProcessError, match="ValueError: invalid literal"):
        coldstart.in_fresh_process(int, "not a number\nsecond line")


def _make_a_temporary_folder_and_hang():
    import tempfile
    import time

    tempfile.mkdtemp(prefix="xdb-cold-")
    time.sleep(120)


def test_a_fresh_process_killed_leaves_no_temporary_folder(tmp_path, monkeypatch):
    """A cold process killed (its timeout here; Ctrl-C in an in-process
    run) cannot remove what it made: its folders go with the caller's."""
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with pytest.raises(coldstart.FreshProcessError, match="no result after 3 s"):
        coldstart.in_fresh_process(_make_a_temporary_folder_and_hang, timeout=3, fork=True)
    assert list(tmp_path.iterdir()) == []


def test_a_fresh_process_starts_without_an_xla_compilation_cache(xla):
    torch.ones(2, device=xla).add(1).cpu()  # this process has compiled
    from torch_xla import _XLAC

    assert _XLAC._xla_computation_cache_is_initialized()
    assert coldstart.in_fresh_process(_XLAC._xla_computation_cache_is_initialized) is False


def test_fresh_processes_take_turns_and_a_failed_runner_is_not_tried_again(monkeypatch):
    order = []

    def fake(fn, key, **kwargs):
        order.append(key)
        if key == "C":
            raise coldstart.FreshProcessError("the process died (exit code -9)")
        return {"key": key, "try": order.count(key)}

    monkeypatch.setattr(coldstart, "in_fresh_process", fake)
    failures = []
    found = coldstart.taking_turns(lambda key: None, {k: (k,) for k in "ABC"}, 3,
                                   on_error=lambda key, err: failures.append((key, str(err))))
    # ABC, then (C dropped) BA, AB: each round starts one later.
    assert order == ["A", "B", "C", "B", "A", "A", "B"]
    assert found == {"A": [{"key": "A", "try": t} for t in (1, 2, 3)],
                     "B": [{"key": "B", "try": t} for t in (1, 2, 3)], "C": []}
    assert failures == [("C", "the process died (exit code -9)")]


def test_a_summary_of_processes_is_their_median_range_and_count():
    tries = [{"seconds": 4.0, "first_call_compiles": 1, "first_call_compile_s": 2.0},
             {"seconds": 1.0, "first_call_compiles": 2, "first_call_compile_s": 0.5},
             {"seconds": 2.0, "first_call_compiles": 1, "first_call_compile_s": 1.0},
             {"seconds": 3.0, "first_call_compiles": 2, "first_call_compile_s": 1.5}]
    got = coldstart.summary(tries)
    assert got == {"seconds": 2.5, "first_call_compiles": 1, "first_call_compile_s": 1.25,
                   "low": 1.0, "high": 4.0, "n": 4, "tries": [4.0, 1.0, 2.0, 3.0]}
    assert isinstance(got["first_call_compiles"], int)  # a count stays a count
    assert coldstart.summary([{"seconds": 3.0, "execute_s": None}]) == {
        "seconds": 3.0, "low": 3.0, "high": 3.0, "n": 1, "tries": [3.0]}


# --------------------------------------------------------------------------
# Cold and warm first calls


def test_cold_first_calls_are_not_served_by_another_runners_compile(config, xla):
    """The lazy baseline and torchxla_trivial compile the same graph. In one
    process, trivial's first call finds the baseline's executable (a cache
    hit, no compile of its own); cold, each compiles its own."""
    config = config.replace(backends=("torchxla_trivial", "torchxla_trace_once"), use_xla_baseline=True)
    shared = _by_backend(worker.run_model(config, "ok_mlp"))
    assert shared["torchxla_trivial"]["compilation_kind"] == "in_process"
    assert shared["torchxla_trivial"]["first_call_cache_hits"] >= 1

    result = worker.run_model(config.replace(cold_start=True, cold_start_repeat=2), "ok_mlp")
    cold = _by_backend(result)
    for backend, row in cold.items():
        assert row["status"] == "pass", row
        assert row["compilation_kind"] == "cold", backend
        assert row["first_call_compiles"] >= 1 and row["first_call_cache_hits"] == 0, (backend, row)
        assert row["baseline_first_call_compiles"] >= 1
        # The median of two fresh processes, between their fastest and slowest.
        assert row["cold_starts"] == 2
        assert 0 < row["compilation_latency_low"] <= row["compilation_latency"] <= row["compilation_latency_high"]
    # The samples records keep each process's seconds; their median is the row's.
    for record in result.samples:
        assert len(record["cold_first_calls_s"]) == 2
        assert record["first_call_s"] == pytest.approx(sum(record["cold_first_calls_s"]) / 2)
        if record["role"] == "backend":
            assert record["first_call_s"] == cold[record["backend"]]["compilation_latency"]


@pytest.mark.slow
def test_cold_first_calls_from_an_isolated_worker(config, tmp_path, monkeypatch, capsys):
    """What ``runner.py`` does by default: the isolated worker forks itself
    for each runner's cold first call before it runs anything."""
    from benchmarks import cli
    from benchmarks.results import store

    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(FAULT_MODELS), os.environ.get("PYTHONPATH")])))
    out = tmp_path / "cold.csv"
    assert cli.main(["--suite", "torchbench", "--configs", config.configs, "--only", "ok_mlp",
                     "--use-xla-baseline", "--backend", "torchxla_trivial,eager", "--repeat", "2",
                     "--warmup", "1", "--output", str(out)]) == 0, capsys.readouterr().err
    rows = store.read_rows(out).set_index("backend")
    assert set(rows["status"]) == {"pass"} and set(rows["compilation_kind"]) == {"cold"}
    assert rows.loc["torchxla_trivial", "first_call_cache_hits"] == 0
    assert rows.loc["torchxla_trivial", "first_call_compiles"] >= 1
    assert rows.loc["torchxla_trivial", "baseline_first_call_compiles"] >= 1


def test_a_failed_cold_process_leaves_the_in_process_first_call_labelled(config, monkeypatch, capsys):
    def broken(*args, **kwargs):
        raise coldstart.FreshProcessError("the process died (exit code -9)")

    monkeypatch.setattr(coldstart, "in_fresh_process", broken)
    (row,) = worker.run_model(config.replace(cold_start=True), "ok_mlp").rows
    assert row["status"] == "pass" and row["compilation_kind"] == "in_process"
    assert row["compilation_latency"] > 0
    assert "cold first call of ok_mlp / eager failed: the process died" in capsys.readouterr().err


def test_warm_start_finds_the_executable_cached(config, xla):
    config = config.replace(backends=("torchxla_trace_once",), use_xla_baseline=True, warm_start=True)
    (row,) = worker.run_model(config, "ok_mlp").rows
    assert row["status"] == "pass"
    assert row["warm_start_fresh_compiles"] == 0 and row["warm_start_latency"] > 0
    assert row["first_call_compiles"] >= 1


# --------------------------------------------------------------------------
# The persistent compilation cache


def test_compile_cache_misses_then_tries_to_load(config, tmp_path, xla):
    """Two processes on one cache folder: the first finds nothing and writes
    its executable; the second finds the file and tries to load it (torch_xla
    2.9 on PJRT CPU fails to: a deserialize failure, and a compile)."""
    folder = str(tmp_path / "xla-cache")
    config = config.replace(backends=("torchxla_trace_once",), compile_cache=folder)
    first = _run_fresh(config)
    assert first["status"] == "pass", first
    assert first["persistent_cache_misses"] >= 1
    assert first["persistent_cache_hits"] + first["persistent_cache_load_failures"] == 0
    assert os.listdir(folder)  # the executable was written
    second = _run_fresh(config)
    assert second["persistent_cache_hits"] + second["persistent_cache_load_failures"] >= 1
    warning = report.persistent_cache_warning(pd.DataFrame([first, second]))
    if second["persistent_cache_hits"] == 0:
        assert "every attempt to load" in warning
    else:
        assert warning is None


def _run_fresh(config, name="ok_mlp") -> dict:
    """``worker.run_model`` in a fresh process (as an isolated worker is)."""
    (row,) = coldstart.in_fresh_process(worker.run_model, config, name).rows
    return row


def test_without_compile_cache_the_rows_leave_its_counters_empty(config, xla):
    (row,) = worker.run_model(config.replace(backends=("torchxla_trace_once",)), "ok_mlp").rows
    assert row["status"] == "pass"
    assert "persistent_cache_misses" not in row
    (row,) = worker.run_model(config.replace(measure="accuracy", backends=("torchxla_trace_once",)), "ok_mlp").rows
    assert row["accuracy"] == "pass" and "persistent_cache_misses" not in row  # an accuracy run's too


# --------------------------------------------------------------------------
# Threads, CPUs, adaptive repeats


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="no CPU affinity here")
def test_threads_and_affinity_are_applied_in_the_worker_and_recorded(config):
    row = _run_fresh(config.replace(threads=1, cpu_affinity=(min(os.sched_getaffinity(0)),)))
    assert row["status"] == "pass"
    assert row["threads"] == 1 and row["cpu_affinity"] == str(min(os.sched_getaffinity(0)))


def test_the_default_is_a_thread_per_allowed_cpu(config):
    (row,) = worker.run_model(config, "ok_mlp").rows
    assert row["threads"] == len(os.sched_getaffinity(0)) == torch.get_num_threads()
    assert row["cpu_affinity"] == affinity.format_cpus(os.sched_getaffinity(0))


def test_format_cpus():
    assert affinity.format_cpus([5, 0, 1, 2]) == "0-2,5"
    assert affinity.format_cpus([3]) == "3"


def test_adaptive_repeats_are_recorded(config):
    config = config.replace(max_time=60.0, min_repeat=3, repeat=4, target_ci=1e-9)
    (row,) = worker.run_model(config, "ok_mlp").rows
    # An unreachable target: the repeats run to the most.
    assert row["repeat_stop"] == "max" and row["repeats_used"] == 4
    assert (row["min_repeat"], row["max_time_s"], row["target_ci"]) == (3, 60.0, 1e-9)
    (row,) = worker.run_model(config.replace(max_time=None, repeat=3), "ok_mlp").rows
    assert row["repeat_stop"] == "fixed" and row["repeats_used"] == 3 and "min_repeat" not in row


# --------------------------------------------------------------------------
# Headroom


def test_headroom_from_the_lazy_baselines_tracing_time():
    # Baseline step 10 ms of which 2 ms tracing: a zero-overhead replay
    # reaches 10 / 8 = 1.25x; a backend at 1.20x took 80% of that.
    got = worker.headroom({"baseline_latency": 10.0, "baseline_host_ms": 2.0, "speedup": 1.2})
    assert got["zero_overhead_speedup"] == pytest.approx(1.25)
    assert got["headroom_captured"] == pytest.approx(0.8)
    # Nothing to gain: no share.
    flat = worker.headroom({"baseline_latency": 10.0, "baseline_host_ms": 0.1, "speedup": 1.0})
    assert flat["zero_overhead_speedup"] == pytest.approx(10 / 9.9) and flat["headroom_captured"] is None
    # An eager baseline has no tracing time: no limit.
    assert worker.headroom({"baseline_latency": 10.0, "speedup": 1.2}) == {}


def test_headroom_in_the_markdown():
    rows = pd.DataFrame([
        {"name": "m1", "batch_size": 1, "backend": "b", "status": "pass", "speedup": 1.2,
         "speedup_ci_low": 1.18, "speedup_ci_high": 1.22, "zero_overhead_speedup": 1.25,
         "headroom_captured": 0.8},
        {"name": "m2", "batch_size": 1, "backend": "b", "status": "pass", "speedup": 1.0,
         "speedup_ci_low": 0.98, "speedup_ci_high": 1.02, "zero_overhead_speedup": 1.01,
         "headroom_captured": None},
        {"name": "m3", "batch_size": 1, "backend": "b", "status": "pass", "speedup": 1.39,
         "speedup_ci_low": 1.37, "speedup_ci_high": 1.41, "zero_overhead_speedup": 1.41,
         "headroom_captured": 0.95},
        {"name": "m4", "batch_size": 1, "backend": "b", "status": "pass", "speedup": 1.39,
         "speedup_ci_low": None, "speedup_ci_high": None, "zero_overhead_speedup": 1.41,
         "headroom_captured": 0.95},
    ])
    headers, table = report.headroom_table(rows)
    assert headers == ["name", "batch_size", "backend", "speedup", "zero-overhead limit",
                       "share captured", "left"]
    assert table == [["m1", "1", "b", "1.20x [1.18, 1.22]", "1.25x", "80% [72%, 88%]", "up to 1.25x"],
                     ["m2", "1", "b", "1.00x [0.98, 1.02]", "1.01x", "", "nothing to gain"],
                     ["m3", "1", "b", "1.39x [1.37, 1.41]", "1.41x", "95% [90%, 100%]", "at the limit"],
                     ["m4", "1", "b", "1.39x", "1.41x", "no interval", "up to 1.41x"]]
    rows["compilation_latency"], rows["compilation_kind"] = 1.5, "cold"
    text = report.render_markdown(rows.assign(speedup_ci_low=None, speedup_ci_high=None,
                                              baseline="xla", dev="cpu"))
    assert "## Headroom" in text and "| m3 " in text and report.HEADROOM_NOTE in text
    assert report.FIRST_CALL_NOTE in text and "| cold " in text


# --------------------------------------------------------------------------
# The whole training step compiled


def _drop_updates(gm, example_inputs):
    """A backend that runs graphs as they are, except that the optimizer's
    in-place updates land on a copy of the graph's parameters and are lost
    (dynamo hands the optimizer's graph the parameters as attributes)."""
    updates = any("foreach" in str(node.target) or str(node.target).endswith("add_")
                  for node in gm.graph.nodes if node.op in ("call_function", "call_method"))
    return copy.deepcopy(gm).forward if updates else gm.forward


def _drop_input_updates(gm, example_inputs):
    """A backend that runs graphs on copies of their inputs: every in-place
    update of an argument (the whole step's parameters and state) is lost."""
    def run(*args):
        return gm(*[a.clone() if isinstance(a, torch.Tensor) else a for a in args])

    return run


def _registered(name, backend) -> str:
    import torch._dynamo

    if name not in torch._dynamo.list_backends(exclude_tags=()):
        torch._dynamo.register_backend(backend, name=name)
    return name


@pytest.fixture
def drop_updates():
    return _registered("test_drop_updates", _drop_updates)


@pytest.fixture
def drop_input_updates():
    return _registered("test_drop_input_updates", _drop_input_updates)


def test_compile_step_checks_accuracy_over_several_steps(config, drop_updates, drop_input_updates, xla):
    # (xla: torch_xla loaded before this process's first backward, or the
    # autograd engine starts without the XLA device's queue.)
    training = config.replace(measure="accuracy", training=True)
    whole, as_written = training.replace(compile_step="whole"), training.replace(compile_step="graphs")
    (row,) = worker.run_model(whole, "ok_mlp").rows
    assert row["mode"] == "training_step" and row["accuracy"] == "pass", row
    (row,) = worker.run_model(as_written, "ok_mlp").rows
    assert row["mode"] == "training_step_graphs" and row["accuracy"] == "pass", row
    # Losing the SGD updates leaves the first step right and the next wrong.
    (row,) = worker.run_model(as_written.replace(backends=(drop_updates,)), "ok_mlp").rows
    assert row["accuracy"] == "fail_accuracy", row
    (row,) = worker.run_model(whole.replace(backends=(drop_input_updates,)), "ok_mlp").rows
    assert row["accuracy"] == "fail_accuracy", row
    # With the model alone compiled, the optimizer runs eagerly: right.
    (row,) = worker.run_model(training.replace(backends=(drop_updates,)), "ok_mlp").rows
    assert row["mode"] == "training" and row["accuracy"] == "pass", row


def test_compile_step_puts_loss_and_optimizer_in_the_backends_graphs(config, xla):
    """With aot_torchxla_trace_once, the step compiled as written leaves
    lazily only the copy of updated parameters: fewer XLA graphs run lazily
    per step than when the loss and SGD step run lazily around the compiled
    model. Compiled as one graph, a step runs one executable and compiles
    nothing."""
    training = config.replace(training=True, use_xla_baseline=True, backends=("aot_torchxla_trace_once",))
    (model_only,) = worker.run_model(training, "ok_mlp").rows
    (as_written,) = worker.run_model(training.replace(compile_step="graphs"),
                                     "ok_mlp").rows
    (whole,) = worker.run_model(training.replace(compile_step="whole"), "ok_mlp").rows
    rows = (model_only, as_written, whole)
    assert [r["status"] for r in rows] == ["pass"] * 3, [r.get("error") for r in rows]
    assert [r["mode"] for r in rows] == ["training", "training_step_graphs", "training_step"]
    assert as_written["dynamo_graphs"] > model_only["dynamo_graphs"]  # the optimizer step is a graph too
    assert as_written["compiles_per_iter"] < model_only["compiles_per_iter"]
    assert whole["executes_per_iter"] == 1 and whole["compiles_per_iter"] == 0
    assert as_written["executes_per_iter"] > 1


@pytest.mark.slow
def test_a_seed_models_step_compiled_whole_runs_one_executable(tmp_path, monkeypatch, xla):
    """On a seed model (its tiny variant, so that it compiles in seconds),
    the row of the step compiled whole says one XLA executable runs per
    step, and nothing compiles once warm; the step compiled as written runs
    several."""
    from benchmarks.run import suite

    def tiny(config, name, bases):
        return [suite.load(name, base["batch_size"], seed=config.seed, suite=config.suite,
                           training=config.training, profile="tiny") for base in bases]

    monkeypatch.setattr(worker, "load_benches", tiny)
    configs = tmp_path / "models.yaml"
    configs.write_text(TINY_CONFIGS)
    whole = RunConfig(suite="seed", backends=("aot_torchxla_trace_once",), training=True, compile_step="whole",
                      repeat=2, warmup=2, configs=str(configs), output=str(tmp_path / "out.csv"),
                      isolate=False)
    (row,) = worker.run_model(whole, "BERT_pytorch").rows
    assert (row["status"], row["mode"], row["batch_size"]) == ("pass", "training_step", 2), row.get("error")
    assert row["executes_per_iter"] == 1 and row["compiles_per_iter"] == 0, row
    (row,) = worker.run_model(whole.replace(compile_step="graphs"), "BERT_pytorch").rows
    assert (row["status"], row["mode"]) == ("pass", "training_step_graphs"), row.get("error")
    assert row["executes_per_iter"] > 1, row
