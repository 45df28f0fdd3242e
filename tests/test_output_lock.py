"""One run per output (benchmarks.run.output_lock): a second run on an output
another is writing is refused with one line; the lock a killed run leaves is
recognised as stale and taken over."""
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from benchmarks.run import output_lock
from benchmarks.run.output_lock import OutputLock, OutputLocked, lock_path
from test_reliability import QUICK, Run


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_held_lock_refuses_a_second_taker_and_names_the_first(tmp_path):
    csv = tmp_path / "run.csv"
    first = OutputLock.take(csv)
    try:
        with pytest.raises(OutputLocked) as refused:
            OutputLock.take(csv)  # flock is per open file: a second open conflicts, as another process's
        assert f"pid {os.getpid()}" in str(refused.value) and str(csv) in str(refused.value)
        assert output_lock.holder(csv).pid == os.getpid()
        held = json.loads(lock_path(csv).read_text())
        assert held["pid"] == os.getpid() and held["host"] and held["started"]
    finally:
        first.release()
    assert not lock_path(csv).exists()
    assert output_lock.holder(csv) is None
    OutputLock.take(csv).release()


def test_a_dead_runs_lock_is_stale_and_taken_over(tmp_path):
    csv = tmp_path / "run.csv"
    dead = _dead_pid()
    lock_path(csv).write_text(json.dumps({"pid": dead, "host": "h", "started": "2026-01-01T00:00:00+00:00"}))
    assert output_lock.holder(csv) is None  # nobody holds its flock
    lock = OutputLock.take(csv)
    try:
        assert lock.stale.pid == dead
        assert f"pid {dead}" in lock.stale_note() and "no longer running" in lock.stale_note()
        assert json.loads(lock_path(csv).read_text())["pid"] == os.getpid()
    finally:
        lock.release()


def _wait_for(path, run, within=120.0):
    deadline = time.monotonic() + within
    while not path.exists() and time.monotonic() < deadline:
        assert run.proc.poll() is None, run.stderr[-2000:]
        time.sleep(0.2)
    assert path.exists(), run.stderr[-2000:]


@pytest.mark.slow
def test_two_runs_on_one_output_the_second_is_refused_and_a_killed_runs_lock_is_taken_over(tmp_path):
    # A hangs in its model (its timeout far away): it holds the output while B starts.
    first = Run(tmp_path / "a", *QUICK, "--backend", "eager", "--only", "hang", "--timeout", "120",
                output="../same.csv")
    csv = tmp_path / "same.csv"
    try:
        _wait_for(lock_path(csv), first)
        for extra in ((), ("--overwrite",), ("--resume",)):
            second = Run(tmp_path / f"b{len(extra)}{''.join(extra)}", *QUICK, "--backend", "eager",
                         "--only", "ok_mlp", *extra, output="../same.csv").wait()
            lines = second.stderr.strip().splitlines()
            assert second.returncode == 2, second.stderr
            assert len(lines) == 1 and "Traceback" not in second.stderr, second.stderr
            assert "being written by another run" in lines[0] and f"pid {first.proc.pid}" in lines[0]
        assert first.proc.poll() is None  # the first goes on
        os.killpg(first.proc.pid, signal.SIGKILL)
        first.wait()
        assert json.loads(lock_path(csv).read_text())["pid"] == first.proc.pid  # left behind
        third = Run(tmp_path / "c", *QUICK, "--backend", "eager", "--only", "ok_mlp", "--no-isolate",
                    "--overwrite", output="../same.csv").ok()
        assert f"pid {first.proc.pid}" in third.stderr and "no longer running" in third.stderr
        assert list(third.rows()["name"]) == ["ok_mlp"]
        assert not lock_path(csv).exists()
    finally:
        first.kill()
