"""benchmarks.run.machine_load: the cores other processes kept busy while a
model was timed, from the kernel's CPU times."""
import subprocess
import sys
import time

import pytest

from benchmarks.run import machine_load


def test_the_load_is_the_machines_busy_time_less_this_process_over_the_wall_time(monkeypatch):
    clock = iter([10.0, 12.0])
    busy = iter([100.0, 104.5])  # 4.5 CPU seconds busy over 2 s of wall time
    own = iter([7.0, 9.0])  # 2 of them this process's
    monkeypatch.setattr(machine_load.time, "monotonic", lambda: next(clock))
    monkeypatch.setattr(machine_load, "_busy_s", lambda: next(busy))
    monkeypatch.setattr(machine_load, "_own_s", lambda: next(own))
    assert machine_load.OtherLoad().cores() == pytest.approx(1.25)


def test_no_figure_from_the_kernel_is_no_load_figure(monkeypatch):
    def fails():
        raise OSError("no /proc/stat")

    monkeypatch.setattr(machine_load, "_busy_s", fails)
    assert machine_load.OtherLoad().cores() is None


def test_a_busy_child_counts_as_other_load():
    spin = "import time\nend = time.monotonic() + 1.5\nwhile time.monotonic() < end: pass\n"
    child = subprocess.Popen([sys.executable, "-c", spin])
    try:
        load = machine_load.OtherLoad()
        time.sleep(1.0)
        # The child's thread is another process's: about one core (less if
        # the machine is so busy that it got less, more with other load).
        assert load.cores() >= 0.5
    finally:
        child.wait()
