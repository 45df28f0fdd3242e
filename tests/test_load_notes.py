"""Load named where it bends a number: a run timed beside a busy loop names
the loaded processes on the console and in its report, with what would help."""
import subprocess
import sys

import pytest

from benchmarks.results import store
from test_reliability import Run


@pytest.mark.slow
def test_a_run_beside_a_busy_loop_names_its_loaded_processes(tmp_path):
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])  # holds one core
    try:
        run = Run(tmp_path, "--suite", "torchbench", "--only", "steady", "--backend", "eager", "--processes", "2",
                  "--repeat", "5", "--warmup", "1", "--no-cold-start").ok()
    finally:
        busy.kill()
        busy.wait()
    stdout = (tmp_path / "stdout.txt").read_text()
    table_end = stdout.index("geomean")
    [line] = [ln for ln in stdout[table_end:].splitlines() if ln.startswith("load: steady / eager:")]
    assert "process 1 of 2 (" in line and "timed while other processes kept the machine busy" in line
    assert "--cpu-affinity" in line and "quieter machine" in line
    md = store.markdown_path(run.csv).read_text()
    assert "## Load" in md and line.removeprefix("load: ") in md


def _gate_policy(tmp_path, monkeypatch, loaded_cores: float) -> None:
    """configs/gate.yaml as it is, but for its ``loaded_cores``: the one place it is set."""
    from benchmarks.results import load

    text = load.GATE_CONFIG.read_text()
    assert "\nloaded_cores: 0.1\n" in text
    path = tmp_path / "gate.yaml"
    path.write_text(text.replace("\nloaded_cores: 0.1\n", f"\nloaded_cores: {loaded_cores}\n"))
    monkeypatch.setattr(load, "GATE_CONFIG", path)


@pytest.mark.parametrize("loaded_cores", [0.1, 0.5])
def test_one_loaded_cores_for_the_row_compare_and_the_judge(tmp_path, monkeypatch, loaded_cores):
    from benchmarks.judge import evidence, verdict
    from benchmarks.results import load, pairing

    _gate_policy(tmp_path, monkeypatch, loaded_cores)
    loads = [0.3, 0.02, 0.01]  # loaded at 0.1, quiet at 0.5
    busy = (0,) if loaded_cores < 0.3 else ()
    # The row's own speedup (``processes.join``) and its note on the console and in the report:
    assert load.load_outliers(loads) == busy
    row = {"name": "m", "backend": "b", "batch_size": 1}
    record = {"name": "m", "backend": "b", "batch_size": 1, "role": "backend", "process_other_cores": loads}
    assert len(load.notes([row], [record])) == len(busy)
    # The gate's judge, by the policy it loads:
    side = pairing.Side("pass", (), 1.0, 1.0, backend_s=(1.0, 1.0, 1.0), baseline_s=(1.0, 1.0, 1.0),
                        process_repeats=(1, 1, 1), process_loads=tuple(loads))
    units, left = evidence.units_of(side, verdict.Policy.load().loaded_cores)
    assert len(units) == 3 - len(busy) and len(left) == len(busy)
    # compare (and the gate's re-run through it), by default:
    from benchmarks.cli.compare import add_policy
    import argparse

    parser = argparse.ArgumentParser()
    add_policy(parser)
    assert parser.parse_args([]).max_other_cores == loaded_cores
