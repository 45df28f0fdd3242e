"""Running the selected models: isolation, timeouts, resume, incremental writes.

``run(config)`` benchmarks each model of ``config.models`` in a worker
process of its own (``benchmarks.run.worker``) and appends its rows to the CSV as
soon as the model finishes, so a run killed at any moment leaves a valid CSV
with every finished model. Whatever a worker does (raise, crash on a signal,
hang past ``--timeout``, flood its output) becomes rows with a status; the
run goes on. With ``--resume``, experiments already in the CSV (the same
``store.experiment_key``: model, backend and every setting) are skipped,
so a training run resumed on an inference CSV runs its training rows.

Nothing lost: ``Output`` says where a run writes. A run that replaces an
earlier one's files (``--overwrite``) writes beside them
(``store.partial_path``) and swaps its files in only once it has finished
(``Output.commit``); stopped before that (Ctrl-C, SIGTERM, a crash, a kill),
the earlier files stay whole and the new rows stay beside them, named.
SIGTERM ends a run as Ctrl-C does (``benchmarks.run.signals``): rows
kept, the worker killed, its temporary folder removed. A worker's
temporary files (its own, its cold-start processes', the compilers') all go
in its temporary folder (``TMPDIR``), which the parent removes however the
worker ends.
A performance run with ``processes`` > 1 runs each model in that many
workers, one after the other, and joins them (``benchmarks.run.processes``).
"""
from __future__ import annotations

import ctypes
import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tqdm import tqdm

from benchmarks.results import store
from benchmarks.run import rows, signals
from benchmarks.run.config import RunConfig


WORKER = ("-m", "benchmarks.run.worker")  # python's arguments before the job's


@dataclass(frozen=True)
class Output:
    """Where a run's files go: ``final``, its output; ``writing``, where it
    writes them until it has finished (``final`` itself, or beside it when
    an earlier run's files there are to be replaced)."""

    final: Path
    writing: Path

    @classmethod
    def start(cls, csv_path: Path, overwrite: bool) -> "Output":
        """The output of a run to ``csv_path``; with ``overwrite`` and an
        earlier run's files there, written beside them (an earlier
        interrupted run's partial files are replaced)."""
        if not overwrite:
            return cls(csv_path, csv_path)
        staged = store.partial_path(csv_path)
        store.clear_outputs(staged)  # an earlier interrupted run's: replaced too
        if store.has_outputs(csv_path):
            return cls(csv_path, staged)
        store.clear_outputs(csv_path)  # a stray logs folder
        return cls(csv_path, csv_path)

    @property
    def staged(self) -> bool:
        return self.writing != self.final

    def commit(self) -> None:
        """The run finished: its files take the output's names."""
        if self.staged:
            store.replace_outputs(self.final, self.writing)

    def stopped(self, why: str, reported: bool = True) -> str:
        """The line a run stopped by ``why`` ends with: what it kept where
        (``reported``: whether the rows' report was written)."""
        path = self.writing
        count = len(store.read_rows(path)) if path.exists() else 0
        if not count:
            earlier = f"; the earlier run's files are kept as they were ({self.final})" if self.staged else ""
            return f"{why} before any row: nothing of this run is kept{earlier}"
        rows = f"{count} row is" if count == 1 else f"{count} rows are"
        report = ("with their report" if reported else
                  "without their report (stopped again while writing it; --resume writes it)")
        if not self.staged:
            return (f"{why}; this run's {rows} kept in {path}, {report} "
                    "(rerun with --resume to complete it)")
        return (f"{why}; the earlier run's files are kept as they were ({self.final}); this run's "
                f"{rows} beside them in {path}, {report} (complete it with "
                f"--output {path} --resume)")


def run(config: RunConfig) -> Path:
    """Benchmark every model of ``config``; returns the CSV's path."""
    csv_path = config.csv_path
    for folder in clean_stale_folders():
        print(f"removed {folder}: the temporary folder of a run that was killed", file=sys.stderr)
    if config.resume and store.upgrade_header(csv_path):
        print(f"{csv_path}: an older version's file, given this version's columns (its rows as they "
              "were) to resume it", file=sys.stderr)
    # Start both files now, so that a shard with no models (more partitions
    # than models) still leaves a valid, empty CSV to merge and report.
    store.append_samples(store.samples_path(csv_path), [])
    store.append_graph_breaks(csv_path, [])
    store.append_rows(csv_path, [])
    todo = pending_work(config)
    if not todo:
        print(f"nothing left to run: {csv_path} has a row of every experiment selected",
              file=sys.stderr)
        return csv_path
    with tqdm(total=len(todo), unit="model", desc=f"{config.measure} {config.experiment['mode']}", file=sys.stderr,
              dynamic_ncols=True) as progress:
        for name, backends in todo:
            progress.set_postfix_str(f"running {name}")
            result = run_one(config.replace(backends=backends), name)
            # Samples first: a row in the CSV always has its samples beside it.
            store.append_samples(store.samples_path(csv_path), result.samples)
            store.append_graph_breaks(csv_path, result.graph_breaks)
            store.append_rows(csv_path, result.rows)
            progress.update()
        # Shown once, by close: refreshing here too would print the last line twice.
        progress.set_postfix_str("done", refresh=False)
    return csv_path


def pending_work(config: RunConfig) -> list[tuple[str, tuple[str, ...]]]:
    """(model, backends still to run) for each model with work left: a
    backend is done when the CSV has a row of every experiment it would
    write (``store.experiment_key``: same settings, mode, dtype, shapes)."""
    done = completed(config) if config.resume else set()
    work = []
    for name in config.models:
        bases = rows.row_bases(config, name)
        missing = tuple(b for b in config.backends
                        if not all(store.experiment_key({**base, "backend": b}) in done
                                   for base in bases))
        if missing:
            work.append((name, missing))
    return work


def completed(config: RunConfig) -> set[store.ExperimentKey]:
    """The experiments the CSV has a row of (whatever its status) that
    measured what this run measures (``store.measures``)."""
    path = config.csv_path
    if not path.exists() or path.stat().st_size == 0:
        return set()
    df = store.read_rows(path)
    keys = {store.experiment_key(row) for row in df.to_dict("records")
            if store.measures(row) == config.measure}
    # TorchBench may choose the batch size (expected as None): any size matches.
    return keys | {key._replace(batch_size=None) for key in keys}


def run_one(config: RunConfig, name: str) -> rows.ModelResult:
    if config.measure == "performance" and config.processes > 1:
        from benchmarks.run import processes

        return processes.spread(config, name, _run_process)
    return _run_process(config, name)


def _run_process(config: RunConfig, name: str) -> rows.ModelResult:
    if not config.isolate:
        from benchmarks.run import worker  # torch and the models: only in the process that runs them

        result = worker.run_model(config, name)
        _keep_log(config, name, result)
        return result
    return run_isolated(config, name)


def run_isolated(config: RunConfig, name: str) -> rows.ModelResult:
    """``worker.run_model`` in a child process; its fate becomes rows."""
    base = rows.row_bases(config, name)
    with _worker_folder() as tmp:
        job, out, log = Path(tmp, "job.json"), Path(tmp, "result.json"), Path(tmp, "log.txt")
        job.write_text(json.dumps({"config": config.to_json(), "model": name}))
        with open(log, "wb") as log_file:
            # The child's output goes to a file, never a pipe: a model that
            # floods stdout cannot block on a pipe nobody reads.
            # Unbuffered (-u): a worker killed for its time keeps what it printed.
            # TMPDIR: whatever the worker and its children leave goes with tmp.
            with signals.deferred():  # a Ctrl-C raised in the fork's hooks would be dropped
                proc = subprocess.Popen(
                    [sys.executable, "-u", *WORKER, str(job), str(out)],
                    stdout=log_file, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                    start_new_session=True, preexec_fn=_die_with_parent, env={**os.environ, "TMPDIR": tmp},
                )
            try:
                signals.check()  # one that came during the fork stops the run here
                code = proc.wait(timeout=config.timeout)
            except subprocess.TimeoutExpired:
                _kill_group(proc)
                why = f"no result after {config.timeout:g} s"
                log_file.write(f"\n[runner.py] {name}: timed out: {why}; the worker was killed\n".encode())
                log_file.flush()
                return _keep_log(config, name, rows.failed(config, base, "timeout", why), log)
            except KeyboardInterrupt:  # Ctrl-C or SIGTERM (Terminated)
                _kill_group(proc)  # its own session: the signal reached only us
                raise
        # The worker writes its result last, in one rename: if it is there, the
        # rows are whole, whatever the exit code says. (torch_xla's exit handler
        # exits with 1 when work a failed backend left pending fails at exit.)
        if out.exists():
            result = rows.ModelResult.from_json(json.loads(out.read_text()))
            return _keep_log(config, name, result, log, always=code != 0)
        tail = _tail(log)
        if code < 0:
            sig = _signal_name(-code)
            return _keep_log(config, name, rows.failed(config, base, "crashed",
                                                       f"killed by {sig}: {tail}".rstrip(": ")), log)
        return _keep_log(config, name, rows.failed(config, base, "fail_to_run",
                                                   tail or f"worker exited with {code}"), log)


WORKER_FOLDER = "xdb-worker-"  # a worker's TMPDIR, under the run's
OWNER_FILE = ".owner.lock"  # in it, flock-ed by the run while the folder is in use


@contextmanager
def _worker_folder():
    """A worker's temporary folder, removed when the worker is done; while
    it is in use the run holds a ``flock`` on its ``OWNER_FILE``, which the
    kernel drops however the run ends, so that the next run can tell the
    folder of a run killed (SIGKILL) from one in use (``clean_stale_folders``)."""
    with tempfile.TemporaryDirectory(prefix=WORKER_FOLDER) as tmp:
        fd = os.open(Path(tmp, OWNER_FILE), os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield tmp
        finally:
            os.close(fd)


def clean_stale_folders(root: str | os.PathLike | None = None) -> list[Path]:
    """Remove the worker folders under ``root`` (the temporary folder) that
    no live run holds: those of runs killed before they could remove them.
    A folder with no owner file (being made this instant) is left alone.
    Returns the folders removed."""
    removed = []
    for folder in sorted(Path(root or tempfile.gettempdir()).glob(f"{WORKER_FOLDER}*")):
        try:
            fd = os.open(folder / OWNER_FILE, os.O_RDONLY)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            continue  # its run is alive
        finally:
            os.close(fd)
        shutil.rmtree(folder, ignore_errors=True)
        removed.append(folder)
    return removed


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:  # real-time signals have no name
        return f"signal {number}"


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def _die_with_parent() -> None:
    """Runs in the child: have Linux kill it if the parent dies, so a killed
    run leaves no worker behind."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _tail(log: Path) -> str:
    """The last meaningful line of a worker's output (usually the error)."""
    with open(log, "rb") as f:
        f.seek(max(0, os.path.getsize(log) - 64 * 1024))
        lines = [ln.strip() for ln in f.read().decode(errors="replace").splitlines()]
    lines = [ln for ln in lines if ln]
    return lines[-1][:500] if lines else ""


# Failed rows with nothing to trace: configs/ skipped the model, or its
# outputs were checked and found wrong (the error says by how much).
NOTHING_RAISED = ("skipped", "fail_accuracy")


def _keep_log(config: RunConfig, name: str, result: rows.ModelResult, log: Path | None = None,
              always: bool = False) -> rows.ModelResult:
    """Keep, beside the CSV (``store.logs_path``), the story of each failed
    row of ``result``: its status and error, its traceback when the worker
    caught one, then the tail of the worker's output ``log`` (everything it
    printed, stderr included); for every failed row, or ``always`` (a worker
    that exited with an error after its result). Returns ``result``."""
    failed = [row for row in result.rows if not store.passed(row) and row.get("status") not in NOTHING_RAISED]
    if not (failed or always):
        return result
    causes = {(f["backend"], f.get("batch_size")): f["traceback"] for f in result.failures}
    parts = [f"{name}: {len(failed)} failed row(s), each with its traceback"
             f"{', then the worker output' if log is not None else ''}\n"]
    for row in failed:
        reason = f": {row['error']}" if isinstance(row.get("error"), str) and row["error"] else ""
        parts.append(f"\n== {name} / {row['backend']} (batch size {row.get('batch_size')}): "
                     f"{row['status']}{reason}\n")
        cause = causes.get((row["backend"], row.get("batch_size")))
        parts.append(cause if cause else "(no traceback: the error came from outside Python, "
                                         "or from the run itself; see the worker output)\n")
    text = "".join(parts).encode()
    if log is not None:
        text += b"\n== the worker's output, its last 256 KiB (stdout and stderr)\n" + _log_tail(log)
    folder = store.logs_path(config.csv_path)
    folder.mkdir(parents=True, exist_ok=True)
    Path(folder, f"{name}.log").write_bytes(text)
    return result


def _log_tail(log: Path) -> bytes:
    with open(log, "rb") as f:
        f.seek(max(0, os.path.getsize(log) - 256 * 1024))
        return f.read()
