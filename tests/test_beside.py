"""benchmarks.tools.beside on runs written here with known effects."""
import numpy as np
import pytest

from benchmarks.results import store
from benchmarks.tools import beside

KEY = dict(dev="cpu", batch_size=1, baseline="xla", suite="seed", mode="training_step", dtype="fp32",
           dynamic="static", inputs="fixed", profile="", iterations_per_run=None)
OURS, OTHER = "aot_torchxla_trace_once", "openxla"


def _run(path, models, rng, repeats=8, processes=(), other_baseline_shift=None, failed=()):
    """A run: per model, ``models[name]`` = the other's time over ours (the
    lazy baseline 0.1 s, ours 0.08 s, each repeat with 1% noise)."""
    settings = {c: KEY[c] for c in store.SETTING_COLUMNS}
    rows, records = [], []
    for name, over in models.items():
        n = sum(processes) or repeats
        base = 0.1 * (1 + rng.normal(0, 0.01, n))
        ours = 0.08 * (1 + rng.normal(0, 0.01, n))
        other = ours * over * (1 + rng.normal(0, 0.002, n))
        extra = {"process_repeats": list(processes)} if processes else {}
        for backend, samples in ((OURS, ours), (OTHER, other)):
            status = "fail_to_run" if (name, backend) in failed else "pass"
            rows.append({**KEY, "name": name, "backend": backend, "status": status,
                         "speedup": float(np.median(base) / np.median(samples)),
                         "abs_latency": float(np.median(samples)) * 1e3})
            baseline = base * 1.01 if backend == OTHER and name == other_baseline_shift else base
            records += [{**store.sample_record(name, backend, "baseline", baseline, **settings), **extra},
                        {**store.sample_record(name, backend, "backend", samples, **settings), **extra}]
    store.append_rows(path, rows)
    store.append_samples(store.samples_path(path), records)
    return path


def test_a_faster_and_a_level_model(tmp_path):
    path = _run(tmp_path / "run.csv", {"fast": 1.10, "level": 1.0}, np.random.default_rng(0))
    found, left_out = beside.pairs(path, OURS, OTHER)
    by = {p.name: p for p in found}
    assert by["fast"].speedup == pytest.approx(1.10, rel=0.005) and by["level"].speedup == pytest.approx(1.0, abs=0.005)
    assert by["fast"].units.size == 8 and not by["fast"].by_process and left_out == []
    estimate, low, high = beside.geomean_interval(found, 2000)
    assert estimate == pytest.approx(np.sqrt(1.10), rel=0.005) and low < estimate < high
    text = beside.report(found, left_out, OURS, OTHER, 2000)
    fast = next(line for line in text.splitlines() if line.startswith("fast "))
    level = next(line for line in text.splitlines() if line.startswith("level "))
    assert fast.endswith("ours faster") and level.endswith("not separated")
    assert "geomean over 2 model(s): 1.05" in text and "1 faster, 0 slower, 1 not separated" in text


def test_a_slower_run_is_said_slower(tmp_path):
    path = _run(tmp_path / "run.csv", {"a": 0.9, "b": 0.92}, np.random.default_rng(1))
    text = beside.report(*beside.pairs(path, OURS, OTHER), OURS, OTHER, 2000)
    assert "ours slower; per model: 0 faster, 2 slower" in text


def test_processes_are_the_units(tmp_path):
    path = _run(tmp_path / "run.csv", {"m": 1.05}, np.random.default_rng(2), processes=(5, 5, 5, 5))
    (pair,), _ = beside.pairs(path, OURS, OTHER)
    assert pair.by_process and pair.units.size == 4
    assert "4 processes" in beside.report([pair], [], OURS, OTHER, 500)


def test_models_not_paired_are_left_out_and_named(tmp_path):
    path = _run(tmp_path / "run.csv", {"ok": 1.0, "broken": 1.0, "apart": 1.0}, np.random.default_rng(3),
                other_baseline_shift="apart", failed={("broken", OURS)})
    found, left_out = beside.pairs(path, OURS, OTHER)
    assert [p.name for p in found] == ["ok"]
    assert sorted(left_out) == ["apart: not measured in the same repeats", "broken: failed"]


@pytest.mark.parametrize("argv, message", [
    (["/nonexistent/run.csv"], "/nonexistent/run.csv: no such file"),
    (["RUN", "--other", "inductor"], "no model with passing rows of both aot_torchxla_trace_once and inductor"),
    (["RUN", "--resamples", "5"], "--resamples must be at least 100"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, argv, message):
    path = _run(tmp_path / "run.csv", {"m": 1.0}, np.random.default_rng(4))
    argv = [str(path) if a == "RUN" else a for a in argv]
    assert beside.main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1, err


def test_cli_prints_the_table(tmp_path, capsys):
    path = _run(tmp_path / "run.csv", {"m": 1.2}, np.random.default_rng(5))
    assert beside.main([str(path), "--resamples", "500"]) == 0
    out = capsys.readouterr().out
    assert "aot_torchxla_trace_once (ours) beside openxla" in out and "ours faster" in out
