"""What a row records about what produced it: versions, commit, machine, time.

``versions()`` gives the ``torch_version``, ``torch_xla_version``,
``python_version`` and ``commit`` columns (the project's git commit, or
``"unknown"`` outside a checkout); ``machine()`` the ``cpu_model`` and
``cpu_count`` columns (CI machines of one name differ from night to night,
and a change of CPU moves every number); ``timestamp()`` the ``timestamp``
column (UTC, ISO-8601).

The commit comes from ``git rev-parse HEAD`` or, where git refuses the
checkout, from the files under ``.git``: git will not work in a repository
another user owns ("detected dubious ownership"), which is what a job running
as root in a container sees of a workspace checked out by the runner's user.
"""
from __future__ import annotations

import functools
import os
import platform
import re
import subprocess
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[2]
UNKNOWN = "unknown"
OBJECT_ID = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")  # SHA-1 or SHA-256 repositories


def timestamp() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return UNKNOWN


def git_commit(root: Path = PROJECT_ROOT) -> str:
    """The commit checked out at ``root``; ``"unknown"`` outside a checkout
    (an installed copy, a tarball)."""
    return _rev_parse(root) or _read_head(root) or UNKNOWN


def _rev_parse(root: Path) -> str | None:
    try:
        done = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True,
                              text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    commit = done.stdout.strip()
    return commit if done.returncode == 0 and OBJECT_ID.fullmatch(commit) else None


def _git_dirs(root: Path) -> tuple[Path, Path] | None:
    """(the checkout's own git folder, the repository's common folder): the
    same folder for a plain clone; for a linked worktree, ``.git`` is a file
    naming its folder under the main repository's ``.git/worktrees``."""
    dotgit = root / ".git"
    if dotgit.is_dir():
        return dotgit, dotgit
    if not dotgit.is_file():
        return None
    text = dotgit.read_text(errors="replace").strip()
    if not text.startswith("gitdir:"):
        return None
    own = root / text.removeprefix("gitdir:").strip()  # absolute, or relative to root
    common = own / "commondir"
    return own, (own / common.read_text().strip() if common.is_file() else own)


def _read_head(root: Path) -> str | None:
    """HEAD's commit from the files under ``.git`` (loose or packed refs),
    without running git."""
    try:
        dirs = _git_dirs(root)
        if dirs is None:
            return None
        own, common = dirs
        value = (own / "HEAD").read_text().strip()
        for _ in range(5):  # HEAD -> branch (-> a symbolic ref, rarely)
            if OBJECT_ID.fullmatch(value):
                return value
            if not value.startswith("ref: "):
                return None
            ref = value.removeprefix("ref: ").strip()
            loose = common / ref
            value = loose.read_text().strip() if loose.is_file() else _packed_ref(common, ref)
            if value is None:
                return None
    except OSError:
        return None
    return None


def _packed_ref(common: Path, ref: str) -> str | None:
    packed = common / "packed-refs"
    if not packed.is_file():
        return None
    for line in packed.read_text().splitlines():
        object_id, _, name = line.partition(" ")
        if name == ref and OBJECT_ID.fullmatch(object_id):
            return object_id
    return None


@functools.cache  # one process, one software stack
def versions() -> dict[str, str]:
    return {
        "torch_version": _version("torch"),
        "torch_xla_version": _version("torch_xla"),
        "python_version": platform.python_version(),
        "commit": git_commit(),
    }


def cpu_model(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    """The CPU's model name as the kernel reports it (``/proc/cpuinfo``,
    x86's "model name", else the first of the fields other architectures
    use); else what ``platform`` knows; else ``"unknown"``.  A name with no
    model number in it (a virtual machine's "AMD EPYC", whatever the
    generation under it) is followed by x86's family, model and stepping,
    so that two generations under one name are two CPUs."""
    try:
        text = cpuinfo.read_text(encoding="utf-8", errors="replace")
    except OSError:
        text = ""
    fields: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and value.strip():
            fields.setdefault(key.strip().lower(), " ".join(value.split()))
    for key in ("model name", "hardware", "cpu model", "processor"):
        # ARM's "processor" is a number (the CPU index), no name.
        if key in fields and not fields[key].isdigit():
            name = fields[key]
            generation = [f"{part} {fields[part]}" for part in ("cpu family", "model", "stepping") if part in fields]
            if key == "model name" and not any(c.isdigit() for c in name) and generation:
                return f"{name} ({', '.join(generation)})"
            return name
    return platform.processor() or platform.machine() or UNKNOWN


@functools.cache  # one process, one machine
def machine() -> dict[str, str | int | None]:
    """``cpu_model`` and ``cpu_count`` (logical CPUs of the machine, not only
    those the run may use: ``cpu_affinity`` says which those were; None
    when the system does not say)."""
    return {"cpu_model": cpu_model(), "cpu_count": os.cpu_count()}  # None: unknown
