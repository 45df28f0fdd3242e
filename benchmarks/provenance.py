"""What a row records about the software that produced it: versions, commit, time.

``versions()`` gives the ``torch_version``, ``torch_xla_version``,
``python_version`` and ``commit`` columns (the project's git commit, or
``"unknown"`` outside a checkout); ``timestamp()`` the ``timestamp`` column
(UTC, ISO-8601).
"""
from __future__ import annotations

import functools
import platform
import subprocess
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
UNKNOWN = "unknown"


def timestamp() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return UNKNOWN


def git_commit(root: Path = PROJECT_ROOT) -> str:
    """The commit checked out at ``root``; ``"unknown"`` outside a checkout
    (an installed copy, a tarball) or without git."""
    try:
        done = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True,
                              text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return UNKNOWN
    commit = done.stdout.strip()
    return commit if done.returncode == 0 and commit else UNKNOWN


@functools.cache  # one process, one software stack
def versions() -> dict[str, str]:
    return {
        "torch_version": _version("torch"),
        "torch_xla_version": _version("torch_xla"),
        "python_version": platform.python_version(),
        "commit": git_commit(),
    }
