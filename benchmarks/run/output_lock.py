"""One run per output: a lock file beside the CSV names the run writing it.

``OutputLock.take(csv_path)`` is what a run does before it touches its
output: it creates ``<output>.lock`` (``lock_path``), holds an exclusive
``flock`` on it for as long as the run lives and writes in it who holds it
(``Holder``: pid, host, start time, command line). A second run on the same
output finds the lock held and is refused (``OutputLocked``, naming the
first); ``holder(csv_path)`` asks the same question without taking it (a
dry run, a check before the run's other checks).

A stale lock is recognised by the kernel, not guessed from a pid: a process
killed however (SIGKILL included) loses its ``flock``, so the file it leaves
is free to take, and ``take`` reports whose it was (``OutputLock.stale``).
``release`` removes the file at the run's end.
"""
from __future__ import annotations

import fcntl
import json
import os
import socket
import sys
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path


def lock_path(csv_path: str | os.PathLike) -> Path:
    """``results/x.csv`` -> ``results/x.csv.lock``."""
    path = Path(csv_path)
    return path.with_name(f"{path.name}.lock")


@dataclass(frozen=True)
class Holder:
    """Who holds (or held) an output's lock."""

    pid: int
    host: str
    started: str  # ISO 8601, UTC
    command: str = ""

    @classmethod
    def me(cls) -> "Holder":
        started = datetime.now(timezone.utc).isoformat(timespec="seconds")
        return cls(os.getpid(), socket.gethostname(), started, " ".join(["runner.py", *sys.argv[1:]]))

    def describe(self) -> str:
        """``"pid 123 on host, started 2026-12-07T20:01:02+00:00"``."""
        return f"pid {self.pid} on {self.host}, started {self.started}"

    @classmethod
    def parse(cls, text: str) -> "Holder | None":
        try:
            data = json.loads(text)
            return cls(int(data["pid"]), str(data["host"]), str(data["started"]), str(data.get("command", "")))
        except (ValueError, TypeError, KeyError):
            return None


class OutputLocked(Exception):
    """Another run holds the output's lock."""

    def __init__(self, csv_path: Path, holder: Holder | None):
        who = holder.describe() if holder else "a process that wrote no name in it"
        super().__init__(f"{csv_path} is being written by another run ({who}; lock {lock_path(csv_path)}); "
                         "wait for it to end or pass another --output")
        self.holder = holder


def _read(fd: int) -> Holder | None:
    return Holder.parse(os.pread(fd, 4096, 0).decode("utf-8", errors="replace"))


def holder(csv_path: str | os.PathLike) -> Holder | None:
    """The run holding ``csv_path``'s lock now; None when none does (no
    lock file, or one a run that ended without removing it left)."""
    path = lock_path(csv_path)
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _read(fd) or Holder(0, "?", "?")
        return None
    finally:
        os.close(fd)


def check_free(csv_path: Path) -> None:
    """``OutputLocked`` when another run holds ``csv_path``'s lock."""
    found = holder(csv_path)
    if found is not None:
        raise OutputLocked(csv_path, None if found.pid == 0 else found)


class OutputLock:
    """A held lock on one output; ``stale``: whose lock file it replaced
    (a run killed before it could remove it), else None."""

    def __init__(self, path: Path, fd: int, stale: Holder | None):
        self.path, self._fd, self.stale = path, fd, stale

    @classmethod
    def take(cls, csv_path: Path) -> "OutputLock":
        path = lock_path(csv_path)
        path.parent.mkdir(parents=True, exist_ok=True)
        while True:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                found = _read(fd)
                os.close(fd)
                raise OutputLocked(csv_path, found) from None
            if _same_file(fd, path):
                break
            os.close(fd)  # the holder removed the file while we waited for it: take the new one
        stale = _read(fd)
        os.ftruncate(fd, 0)
        os.pwrite(fd, (json.dumps(asdict(Holder.me())) + "\n").encode("utf-8"), 0)
        os.fsync(fd)
        return cls(path, fd, stale)

    def stale_note(self) -> str | None:
        """One line on a stale lock taken over, or None."""
        if self.stale is None:
            return None
        return (f"{self.path}: taken over from a run that is no longer running "
                f"({self.stale.describe()}; it was stopped before it could remove its lock)")

    def release(self) -> None:
        """Remove the lock file (while still holding it), then let go."""
        if self._fd < 0:
            return
        try:
            if _same_file(self._fd, self.path):
                self.path.unlink()
        finally:
            os.close(self._fd)
            self._fd = -1


def _same_file(fd: int, path: Path) -> bool:
    try:
        return os.fstat(fd).st_ino == os.stat(path).st_ino
    except FileNotFoundError:
        return False
