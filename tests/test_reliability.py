"""Reliability of a run, through the command line, against injected faults.

Every run here is ``python runner.py --suite torchbench`` on the fake
TorchBench package of ``tests/fault_models`` (on PYTHONPATH, which the worker
processes inherit), with ``--backend eager`` (a host dynamo backend: no XLA
compile) and the fewest repeats. Starting torch costs seconds per process, so
the module starts its runs together (``runs``) and the tests read their
results; the SIGKILL test works alongside them.
"""
import csv
import math
import os
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pandas as pd
import pytest

from benchmarks.results import store
from benchmarks.run import worker
from benchmarks.run.config import RunConfig
from conftest import FAULT_MODELS, write_earlier_run

REPO = Path(__file__).resolve().parent.parent
# First calls in the measuring process: these runs count the processes that
# load a model and time workers; cold first calls (a process per runner) are
# tested in test_first_calls.py.
QUICK = ("--suite", "torchbench", "--repeat", "2", "--warmup", "1", "--no-cold-start")
WRONG_BACKEND = "fault_wrong_output"  # tests/fault_models/fault_backends.py
HANG_TIMEOUT = 60  # s; far above a tiny model's worker (~6 s quiet, ~30 s on a loaded 2-core machine), far below the hang
RUN_TIMEOUT = 420  # s; how long a test waits for a run before giving up on it

# Model -> (status, text its error must contain) of the faults run: what only
# a worker process of its own survives (a crash, a flood of output), with a
# raise among them, so the report lists failures of both kinds.
FAULTS = {
    "ok_mlp": ("pass", None),
    "flood": ("pass", None),  # 20 MB of stdout: no deadlock
    "raise_on_run": ("eager_fail_to_run", "RuntimeError: boom from raise_on_run"),
    "raise_in_backend": ("fail_to_run", "RuntimeError: boom from raise_in_backend"),
    "segfault": ("crashed", "SIGSEGV"),
    "oom": ("OOM", "can't allocate memory"),
}
# Faults a Python exception carries: the same rows in-process (--no-isolate),
# without a worker each.
RAISES = {
    "raise_on_load": ("model_fail_to_load", "RuntimeError: raise_on_load: cannot build"),
    "raise_on_run": ("eager_fail_to_run", "RuntimeError: boom from raise_on_run"),
    "raise_in_backend": ("fail_to_run", "RuntimeError: boom from raise_in_backend"),
}


class Run:
    """``runner.py ARGS`` started in the background, in a folder of its own.

    The folder holds the output (``run.csv`` and its companions), stdout and
    stderr, the PID log of the fake models, and TMPDIR, under which the
    workers' job files live: a process whose command line names it is one of
    this run's workers.
    """

    def __init__(self, folder: Path, *args: str, output: str = "run.csv"):
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self.csv = folder / output
        self.pid_log = folder / f"pids-{time.monotonic_ns()}.txt"
        self.tmpdir = folder / "tmp"
        self.tmpdir.mkdir(exist_ok=True)
        env = {**os.environ, "PJRT_DEVICE": "CPU", "PYTHONPATH": str(FAULT_MODELS),
               "TMPDIR": str(self.tmpdir), "FAULT_MODELS_PID_LOG": str(self.pid_log)}
        self._out = open(folder / "stdout.txt", "wb")
        self._err = open(folder / "stderr.txt", "wb")
        self.proc = subprocess.Popen(
            [sys.executable, "runner.py", *args, "--output", str(self.csv)],
            cwd=REPO, env=env, stdin=subprocess.DEVNULL, stdout=self._out, stderr=self._err,
            start_new_session=True)  # a group of its own: the SIGKILL test kills it
        self.returncode = None

    def wait(self, timeout: float = RUN_TIMEOUT) -> "Run":
        if self.returncode is None:
            try:
                self.returncode = self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.kill()
                pytest.fail(f"runner.py did not finish in {timeout} s; stderr:\n{self.stderr[-3000:]}")
            finally:
                self._out.close()
                self._err.close()
        return self

    def kill(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()

    @property
    def stderr(self) -> str:
        return (self.folder / "stderr.txt").read_text(errors="replace")

    def ok(self) -> "Run":
        """Wait, and insist the run itself succeeded, whatever its models did."""
        self.wait()
        assert self.returncode == 0, f"exit code {self.returncode}; stderr:\n{self.stderr[-3000:]}"
        assert "Traceback" not in self.stderr, self.stderr[-3000:]
        return self

    def rows(self) -> pd.DataFrame:
        return store.read_rows(self.csv)

    def row(self, name: str, backend: str = "eager") -> pd.Series:
        df = self.rows()
        match = df[(df["name"] == name) & (df["backend"] == backend)]
        assert len(match) == 1, f"{len(match)} rows for {name}/{backend}:\n{df}"
        return match.iloc[0]

    def loaded(self) -> dict[str, list[int]]:
        """Model -> the PIDs of the processes that loaded it."""
        pids: dict[str, list[int]] = {}
        if self.pid_log.exists():
            for line in self.pid_log.read_text().splitlines():
                name, pid = line.split()
                pids.setdefault(name, []).append(int(pid))
        return pids

    def live_workers(self) -> list[int]:
        """PIDs of processes still running with this run's TMPDIR in their command line."""
        found = []
        for proc in Path("/proc").iterdir():
            if not proc.name.isdigit():
                continue
            try:
                cmdline = (proc / "cmdline").read_bytes()
                state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if str(self.tmpdir).encode() in cmdline and state != "Z":
                found.append(int(proc.name))
        return found


def wait_for_no_workers(run: Run, within: float = 15.0) -> list[int]:
    deadline = time.monotonic() + within
    while (left := run.live_workers()) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


def finite(value) -> bool:
    return value is not None and not pd.isna(value) and math.isfinite(value)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The module's runs, started together; each test waits for the one it reads."""
    base = tmp_path_factory.mktemp("reliability")
    started = {
        # Every fault but the hang, and ok_mlp, in one run.
        "faults": Run(base / "faults", *QUICK, "--backend", "eager", "--timeout", "300",
                      "-k", "^(" + "|".join(FAULTS) + ")$"),
        # An XLA backend working in a worker process.
        "xla": Run(base / "xla", *QUICK, "--backend", "eager,torchxla_trace_once", "--only", "ok_mlp"),
        "in_process": Run(base / "in_process", *QUICK, "--backend", "eager", "--only", "ok_mlp",
                          "--no-isolate"),
        "accuracy": Run(base / "accuracy", "--suite", "torchbench", "--accuracy", "--only", "ok_mlp",
                        "--backend", f"eager,torchxla_trace_once,{WRONG_BACKEND}", "--no-isolate"),
    }
    yield started
    for run in started.values():
        run.kill()  # a no-op for the finished ones


@pytest.fixture(scope="module")
def hang(tmp_path_factory):
    """A model that hangs, then ok_mlp, in one run: the hang costs its whole
    timeout (tests/test_run_messages.py covers the timeout in seconds)."""
    run = Run(tmp_path_factory.mktemp("hang"), *QUICK, "--backend", "eager,torchxla_trace_once",
              "--timeout", str(HANG_TIMEOUT), "-k", "^(hang|ok_mlp)$")
    yield run
    run.kill()


# --------------------------------------------------------------------------
# A kill at any moment, then --resume (first: it works while `runs` run).
# A minute long: test_results covers whole lines after a kill in seconds.


@pytest.mark.slow
def test_sigkill_leaves_whole_rows_and_resume_completes(runs, tmp_path):
    args = ("--suite", "torchbench", "--repeat", "2", "--warmup", "1", "-k", "^slow_",
            "--backend", f"eager,{WRONG_BACKEND}")
    expected = {(m, b) for m in ("slow_1", "slow_2", "slow_3") for b in ("eager", WRONG_BACKEND)}
    first = Run(tmp_path / "killed", *args)
    deadline = time.monotonic() + RUN_TIMEOUT
    # Kill the whole process group as soon as the first model's rows appear.
    while first.proc.poll() is None and time.monotonic() < deadline:
        if first.csv.exists() and first.csv.read_bytes().count(b"\n") >= 2:
            first.kill()
            break
        time.sleep(0.02)
    else:
        first.kill()
        pytest.fail(f"no row before the run ended or timed out; stderr:\n{first.stderr[-3000:]}")
    first.wait()
    assert first.returncode == -signal.SIGKILL

    # The worker dies with its parent (PR_SET_PDEATHSIG): nothing left running.
    assert wait_for_no_workers(first) == []

    # Whole lines only, each with every column; read back without a warning.
    raw = first.csv.read_bytes()
    assert raw.endswith(b"\n")
    lines = list(csv.reader(raw.decode().splitlines()))
    assert lines[0] == store.CSV_COLUMNS
    assert all(len(line) == len(store.CSV_COLUMNS) for line in lines)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        done = first.rows()
        store.read_samples(store.samples_path(first.csv))
    done_pairs = set(zip(done["name"], done["backend"]))
    assert done_pairs and done_pairs < expected, "killed too late to test anything"
    assert len(done) == len(done_pairs)

    resumed = Run(tmp_path / "killed", *args, "--resume").ok()
    df = resumed.rows()
    assert sorted(zip(df["name"], df["backend"])) == sorted(expected)  # each exactly once
    assert set(df["status"]) == {"pass"}
    assert len(df) == len(expected)
    # A model all of whose rows were written was not run again.
    finished = {m for m, _ in done_pairs if {(m, "eager"), (m, WRONG_BACKEND)} <= done_pairs}
    assert not finished & set(resumed.loaded())
    # Every passing row still has its samples beside it.
    samples = store.read_samples(store.samples_path(resumed.csv))
    assert {(s["name"], s["backend"]) for s in samples if s["role"] == "backend"} >= expected


# --------------------------------------------------------------------------
# Ctrl-C and SIGTERM during an --overwrite run (make bench's): the earlier
# run's files stay whole, the new rows are kept beside them with their
# report, no worker and no temporary folder remain.

STOPS = {"SIGINT": (signal.SIGINT, 130, "Ctrl-C"), "SIGTERM": (signal.SIGTERM, 143, "SIGTERM")}


@pytest.fixture(scope="module")
def stopped(tmp_path_factory):
    """A run of ok_mlp then slow_1 per signal, started together over an
    earlier run's files, each sent its signal once ok_mlp's row is written
    (slow_1's worker is then starting or cold-starting: SIGTERM's run times
    cold first calls, whose processes make temporary folders of their own)."""
    started = {}
    for name in STOPS:
        folder = tmp_path_factory.mktemp(name)
        earlier = write_earlier_run(folder / "run.csv")
        cold = ("--no-cold-start",) if name == "SIGINT" else ()
        run = Run(folder, "--suite", "torchbench", "--repeat", "2", "--warmup", "1", *cold,
                  "--backend", "eager", "-k", "^(ok_mlp|slow_1)$", "--overwrite")
        started[name] = (run, earlier)
    pending = dict(started)
    deadline = time.monotonic() + RUN_TIMEOUT
    while pending and time.monotonic() < deadline:
        for name, (run, _) in list(pending.items()):
            partial = store.partial_path(run.csv)
            if run.proc.poll() is not None:
                del pending[name]  # ended before its signal: the test says so
            elif partial.exists() and partial.read_bytes().count(b"\n") >= 2:
                run.proc.send_signal(STOPS[name][0])
                del pending[name]
        time.sleep(0.05)
    yield {name: (run.wait(), earlier) for name, (run, earlier) in started.items()}
    for run, _ in started.values():
        run.kill()


@pytest.mark.parametrize("name", sorted(STOPS))
def test_a_signal_during_an_overwrite_keeps_the_earlier_files(stopped, name):
    run, earlier = stopped[name]
    _, code, said = STOPS[name]
    assert run.returncode == code, f"exit code {run.returncode}; stderr:\n{run.stderr[-3000:]}"
    for path, data in earlier.items():
        assert path.read_bytes() == data, f"{path} changed"
    partial = store.partial_path(run.csv)
    assert store.read_rows(partial)["name"].tolist() == ["ok_mlp"]
    assert "ok_mlp" in store.markdown_path(partial).read_text()  # the report of the rows kept
    last = run.stderr.strip().splitlines()[-1]
    assert last == (f"runner.py: interrupted ({said}); the earlier run's files are kept as they were "
                    f"({run.csv}); this run's 1 row is beside them in {partial}, with their report "
                    f"(complete it with --output {partial} --resume)")
    assert "Traceback" not in run.stderr
    assert wait_for_no_workers(run) == []
    assert sorted(p.name for p in run.tmpdir.iterdir()) == []  # no xdb-worker-*, no xdb-cold-*


# --------------------------------------------------------------------------
# Each fault becomes its row; the run goes on


@pytest.fixture(scope="module")
def faults(runs):
    return runs["faults"].ok()


def test_every_model_gets_one_row(faults):
    df = faults.rows()
    assert sorted(df["name"]) == sorted(FAULTS)
    assert set(df["backend"]) == {"eager"}


@pytest.mark.parametrize("model", sorted(FAULTS))
def test_fault_gives_its_status_and_error(faults, model):
    status, error = FAULTS[model]
    row = faults.row(model)
    assert row["status"] == status, row.to_dict()
    if error is None:
        assert pd.isna(row["error"])
        assert finite(row["speedup"]) and row["speedup"] > 0
        assert finite(row["abs_latency"]) and finite(row["baseline_latency"])
        assert finite(row["speedup_ci_low"]) and row["speedup_ci_low"] <= row["speedup_ci_high"]
    else:
        assert error in row["error"], row["error"]
        assert not finite(row["speedup"])


@pytest.mark.parametrize("model", sorted(RAISES))
def test_a_raise_gives_its_status_and_error_in_process(model, fault_models, tmp_path):
    config = RunConfig(suite="torchbench", backends=("eager",), repeat=2, warmup=1, isolate=False,
                       cold_start=False, output=str(tmp_path / "run.csv"))
    (row,) = worker.run_model(config, model).rows
    status, error = RAISES[model]
    assert row["status"] == status and error in row["error"], row


@pytest.mark.parametrize("model", sorted(RAISES))
def test_a_raise_keeps_its_traceback_in_process(model, fault_models, tmp_path):
    config = RunConfig(suite="torchbench", backends=("eager",), repeat=2, warmup=1, isolate=False,
                       cold_start=False, output=str(tmp_path / "run.csv"))
    result = worker.run_model(config, model)
    (cause,) = result.failures
    _, error = RAISES[model]
    assert (cause["backend"], cause["status"]) == ("eager", RAISES[model][0])
    assert cause["traceback"].startswith("Traceback (most recent call last):")
    assert error in cause["traceback"] and "faults.py" in cause["traceback"]


@pytest.mark.parametrize("model", ["raise_on_run", "raise_in_backend"])
def test_a_failed_row_keeps_its_traceback_and_the_workers_output(faults, model):
    """Not only crashed workers: a row failed by a Python exception keeps
    its full traceback and the worker's output, named by the report."""
    log = store.logs_path(faults.csv) / f"{model}.log"
    text = log.read_text()
    status, error = FAULTS[model]
    assert f"== {model} / eager (batch size " in text and f"): {status}: {error}" in text
    assert "Traceback (most recent call last):" in text and "faults.py" in text
    assert model != "raise_on_run" or "second line of the message" in text  # the whole message
    assert f"worker: loading {model}" in text.split("== the worker's output")[1]
    failures = section(store.markdown_path(faults.csv).read_text(), "Failures")
    (listed,) = [line for line in failures.splitlines() if line.startswith(f"| {model} ")]
    assert str(log) in listed


def test_error_column_holds_the_first_line_only(faults):
    assert "second line" not in faults.row("raise_on_run")["error"]


def test_samples_only_for_passing_rows(faults):
    samples = store.read_samples(store.samples_path(faults.csv))
    pairs = sorted((s["name"], s["role"]) for s in samples)
    assert pairs == [("flood", "backend"), ("flood", "baseline"),
                     ("ok_mlp", "backend"), ("ok_mlp", "baseline")]
    assert all(len(s["samples_s"]) == 2 for s in samples)  # --repeat 2


def test_each_model_runs_in_a_worker_of_its_own(faults):
    loaded = faults.loaded()
    assert sorted(loaded) == sorted(FAULTS)  # each got as far as loading
    pids = [pid for pid_list in loaded.values() for pid in pid_list]
    assert len(set(pids)) == len(FAULTS)
    assert faults.proc.pid not in pids


def section(md: str, heading: str) -> str:
    """The text of ``## heading`` up to the next heading ("" if absent)."""
    _, found, rest = md.partition(f"\n## {heading}\n")
    return rest.split("\n## ", 1)[0] if found else ""


def test_report_lists_every_failure(faults):
    md = store.markdown_path(faults.csv).read_text()
    table = md.split("\n## ", 1)[0]
    failures = section(md, "Failures")
    for model, (status, _) in FAULTS.items():
        assert f"| {model} " in table
        listed = [line for line in failures.splitlines() if line.startswith(f"| {model} ")]
        if status == "pass":
            assert not listed
        else:
            assert len(listed) == 1 and f" {status} " in listed[0]


def test_crashed_worker_output_is_kept(faults):
    assert (faults.csv.with_suffix(".logs") / "segfault.log").exists()


@pytest.mark.slow
def test_hang_times_out_and_the_run_goes_on(hang):
    hang = hang.ok()
    for backend in ("eager", "torchxla_trace_once"):
        row = hang.row("hang", backend)
        assert row["status"] == "timeout"
        assert f"{HANG_TIMEOUT}" in row["error"]
        assert hang.row("ok_mlp", backend)["status"] == "pass"
    assert wait_for_no_workers(hang) == []  # the hung worker was killed


# --------------------------------------------------------------------------
# In-process, XLA, accuracy


def test_no_isolate_runs_in_process(runs):
    run = runs["in_process"].ok()
    assert run.row("ok_mlp")["status"] == "pass"
    assert run.loaded() == {"ok_mlp": [run.proc.pid]}


def test_isolation_works_with_an_xla_backend(runs):
    run = runs["xla"].ok()
    row = run.row("ok_mlp", "torchxla_trace_once")
    assert row["status"] == "pass", row.to_dict()
    assert finite(row["speedup"]) and finite(row["compilation_latency"])
    assert run.proc.pid not in run.loaded()["ok_mlp"]


def test_accuracy_passes_correct_backends_and_fails_a_wrong_one(runs):
    run = runs["accuracy"].ok()
    for backend in ("eager", "torchxla_trace_once"):
        row = run.row("ok_mlp", backend)
        assert (row["status"], row["accuracy"]) == ("pass", "pass"), row.to_dict()
        assert 0 <= row["max_error"] < 1e-3
    wrong = run.row("ok_mlp", WRONG_BACKEND)
    assert (wrong["status"], wrong["accuracy"]) == ("fail_accuracy", "fail_accuracy")
    assert wrong["max_error"] > 1e-2  # outputs off by half their size
    assert "max abs error" in wrong["error"]
    failures = section(store.markdown_path(run.csv).read_text(), "Failures")
    assert f"| ok_mlp | {WRONG_BACKEND} | fail_accuracy |" in " ".join(failures.split())
