"""Workspaces as a GitHub runner lays them out, for the workflow tests.

GitHub's hosted runners check the repository out as the ``runner`` user
(uid 1001); a job in a container runs its steps as root.  The tests build
that here (they run as root): an "origin" repository holding this working
tree as one commit, and clones of it owned by uid 1001, in which commands
run as root -- the situation in which git refuses the checkout with
"detected dubious ownership".
"""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

RUNNER_UID = 1001  # the hosted runners' `runner` user; needs no entry in /etc/passwd here
GIT_IDENTITY = ["-c", "user.name=test", "-c", "user.email=test@localhost"]


def needs_root() -> str | None:
    """Why the ownership tests cannot run here, or None."""
    return None if os.geteuid() == 0 else "needs root: runs commands as root in a checkout another uid owns"


def git(*args, cwd=None, check=True, env=None) -> subprocess.CompletedProcess:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=120,
                          env=env)
    if check and done.returncode != 0:
        raise AssertionError(f"git {' '.join(args)}: {done.stderr}")
    return done


def working_tree_files(root: Path) -> list[str]:
    """The files of ``root``'s working tree that git would commit (tracked or
    not ignored), as they are now: the workflow under test is the one on disk."""
    listed = git("ls-files", "-z", "--cached", "--others", "--exclude-standard", cwd=root).stdout
    return sorted(p for p in set(listed.split("\0")) if p and (root / p).is_file())


def make_origin(root: Path, bare: Path) -> str:
    """A bare repository whose ``main`` is one commit of ``root``'s working
    tree; returns the commit."""
    staging = bare.with_name(bare.name + "-staging")
    git("init", "-q", "-b", "main", str(staging))
    for rel in working_tree_files(root):
        dest = staging / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / rel, dest)
    git("add", "-A", cwd=staging)
    git(*GIT_IDENTITY, "commit", "-q", "-m", "the tree under test", cwd=staging)
    git("clone", "-q", "--bare", str(staging), str(bare))
    shutil.rmtree(staging)
    return git("rev-parse", "HEAD", cwd=bare).stdout.strip()


def checkout(origin: Path, workspace: Path, uid: int = RUNNER_UID) -> Path:
    """``actions/checkout`` as the runner's user: a clone of origin's main,
    every file owned by ``uid``."""
    git("clone", "-q", "--branch", "main", str(origin), str(workspace))
    chown_tree(workspace, uid)
    return workspace


def chown_tree(path: Path, uid: int) -> None:
    for folder, dirs, files in os.walk(path):
        os.chown(folder, uid, uid)
        for name in dirs + files:
            os.chown(os.path.join(folder, name), uid, uid, follow_symlinks=False)
