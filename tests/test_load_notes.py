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
