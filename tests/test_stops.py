"""What a stopped run leaves on disk, and the status of a run whose rows all
failed. Runs of the fake TorchBench models (tests/fault_models), as a user
runs them (``test_reliability.Run``): ``hang`` keeps a worker busy until the
test stops the run."""
import os
import signal
import time

import pytest

from benchmarks import cli
from benchmarks.results import store
from benchmarks.run import orchestrate
from benchmarks.run.output_lock import lock_path
from test_reliability import QUICK, Run


def _worker_folders(run: Run) -> list:
    return sorted(run.tmpdir.glob(f"{orchestrate.WORKER_FOLDER}*"))


def _wait_for_worker(run: Run, within: float = 180.0) -> None:
    deadline = time.monotonic() + within
    while not (_worker_folders(run) and run.loaded().get("hang")) and time.monotonic() < deadline:
        assert run.proc.poll() is None, run.stderr[-2000:]
        time.sleep(0.2)
    assert _worker_folders(run), run.stderr[-2000:]


def _hang(folder):
    return Run(folder, *QUICK, "--backend", "eager", "--only", "hang", "--timeout", "300")


def test_a_stale_worker_folder_is_removed_and_a_live_one_kept(tmp_path):
    with orchestrate._worker_folder() as live:
        stale = tmp_path / f"{orchestrate.WORKER_FOLDER}dead"
        stale.mkdir()
        (stale / orchestrate.OWNER_FILE).write_text("")  # nobody holds it: its run is gone
        (stale / "job.json").write_text("{}")
        unowned = tmp_path / f"{orchestrate.WORKER_FOLDER}new"
        unowned.mkdir()  # no owner file yet: being made, left alone
        assert orchestrate.clean_stale_folders(tmp_path) == [stale]
        assert orchestrate.clean_stale_folders(os.path.dirname(live)) == []
        assert os.path.isdir(live) and unowned.is_dir()


def test_a_run_whose_every_row_failed_exits_1(tmp_path, capsys, fault_models):
    out = tmp_path / "run.csv"
    code = cli.main(["--suite", "torchbench", "--only", "raise_on_load", "--backend", "eager", "--no-isolate",
                     "--repeat", "2", "--warmup", "1", "--no-cold-start", "--output", str(out)])
    err = capsys.readouterr().err
    assert code == 1, err
    assert f"every row of {out} failed (1 row(s)): exit status 1" in err
    assert list(store.read_rows(out)["status"]) == ["model_fail_to_load"]  # its row is kept all the same


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_run_stopped_before_any_row_leaves_nothing(tmp_path, signum):
    run = _hang(tmp_path)
    try:
        _wait_for_worker(run)
        os.kill(run.proc.pid, signum)
        run.wait(timeout=120)
    finally:
        run.kill()
    assert run.returncode == 128 + signum, run.stderr[-2000:]
    assert "Traceback" not in run.stderr
    assert "before any row: nothing of this run is kept" in run.stderr.strip().splitlines()[-1]
    left = sorted(p.name for p in tmp_path.iterdir())
    assert not [n for n in left if n.startswith("run")], left  # no header-only CSV, no md, no png, no lock
    assert _worker_folders(run) == []


@pytest.mark.slow
def test_after_a_sigkill_before_any_row_a_plain_rerun_runs_and_cleans_up(tmp_path):
    first = _hang(tmp_path)
    try:
        _wait_for_worker(first)
        folders = _worker_folders(first)
        os.killpg(first.proc.pid, signal.SIGKILL)
        first.wait()
    finally:
        first.kill()
    # What a SIGKILL leaves: the files a run starts, headers only, its lock and its worker's folder.
    assert _worker_folders(first) == folders
    assert lock_path(first.csv).exists() and store.read_rows(first.csv).empty
    assert not store.markdown_path(first.csv).exists() and not store.plot_path(first.csv).exists()
    again = Run(tmp_path, *QUICK, "--backend", "eager", "--only", "ok_mlp").ok()  # no --overwrite needed
    assert f"removed {folders[0]}: the temporary folder of a run that was killed" in again.stderr
    assert "no longer running" in again.stderr  # the stale lock, taken over
    assert list(again.rows()["name"]) == ["ok_mlp"]
    assert _worker_folders(again) == [] and not lock_path(first.csv).exists()


@pytest.mark.slow
def test_ctrl_c_after_rows_shows_their_table(tmp_path):
    run = Run(tmp_path, *QUICK, "--backend", "eager", "--timeout", "300", "-k", "^(fixed_bsize|hang)$")  # in the suite's order
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and not (run.csv.exists() and len(store.read_rows(run.csv))):
            assert run.proc.poll() is None, run.stderr[-2000:]
            time.sleep(0.2)
        _wait_for_worker(run)
        os.kill(run.proc.pid, signal.SIGINT)
        run.wait(timeout=120)
    finally:
        run.kill()
    assert run.returncode == 130
    stdout = (tmp_path / "stdout.txt").read_text()
    assert "fixed_bsize" in stdout and "geomean" in stdout  # the kept rows' table
    assert "1 row is kept" in run.stderr and "with their report" in run.stderr
    assert store.markdown_path(run.csv).exists()
