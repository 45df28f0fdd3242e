"""The results branch: the durable home of the nights.

``fetch-history`` checks the branch out as ROOT (a git worktree of this
repository); ``publish`` commits one night's merged files to it and pushes.
The git steps talk to the remote with the token in ``NIGHTLY_GIT_TOKEN``
when it is set (the workflow's own token, as ``actions/checkout`` sends it),
without writing it anywhere: the checkouts keep no credentials.

Standard library only: the publish job installs nothing.
"""
from __future__ import annotations

import argparse
import base64
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from benchmarks.nightly.night import DATE, NIGHT_FILE, PUBLISHED, RESULT, Night, night_dir, write_state
from benchmarks.usage import UsageError

RESULTS_BRANCH = "nightly-results"


def add_arguments(p: argparse.ArgumentParser, step: str) -> None:
    p.add_argument("--branch", default=RESULTS_BRANCH, help=f"results branch (default {RESULTS_BRANCH})")
    p.add_argument("--remote", default="origin", help="git remote (default origin)")


def git_env(env: dict[str, str]) -> dict[str, str]:
    """``env`` plus, when it holds ``NIGHTLY_GIT_TOKEN``, that token as the
    authorization header for the git server (``GITHUB_SERVER_URL``), given to
    git as command-line configuration through ``GIT_CONFIG_COUNT``: never on
    a command line or in a config file."""
    token = env.get("NIGHTLY_GIT_TOKEN", "")
    if not token:
        return env
    server = env.get("GITHUB_SERVER_URL", "https://github.com").rstrip("/")
    count = int(env.get("GIT_CONFIG_COUNT") or 0)
    basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
    return {**env, "GIT_CONFIG_COUNT": str(count + 1),
            f"GIT_CONFIG_KEY_{count}": f"http.{server}/.extraheader",
            f"GIT_CONFIG_VALUE_{count}": f"AUTHORIZATION: basic {basic}"}


def _git(*args: str, cwd: Path | None = None, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True,
                          env=git_env(dict(os.environ)))
    if check and done.returncode != 0:
        detail = (done.stderr.strip() or done.stdout.strip()).splitlines()
        raise UsageError(f"git {' '.join(args)}: {detail[-1] if detail else f'exit {done.returncode}'}")
    return done


def fetch_history(args: argparse.Namespace) -> int:
    """Check the results branch out as ROOT (a worktree of this repository);
    on the very first night, when the branch does not exist yet, ROOT
    becomes an empty worktree that ``publish`` turns into the branch."""
    root = args.root
    if root.exists() and any(root.iterdir()):
        raise UsageError(f"{root} exists and is not empty; fetch the history into a fresh folder")
    found = _git("fetch", "--depth=1", args.remote, f"refs/heads/{args.branch}", check=False)
    if found.returncode == 0:
        _git("worktree", "add", "--detach", str(root), "FETCH_HEAD")
        write_state(root, branch=args.branch, remote=args.remote, exists=True)
        nights = sorted(p.name for p in root.iterdir() if DATE.match(p.name))
        print(f"nightly: {len(nights)} earlier night(s) from {args.remote}/{args.branch} in {root}",
              file=sys.stderr)
        return 0
    if _git("ls-remote", "--exit-code", "--heads", args.remote, args.branch, check=False).returncode != 2:
        # The gate reads this: a night judged without the history it exists
        # to be judged against must fail, not pass as a first night.
        error = f"cannot fetch {args.branch} from {args.remote}: {found.stderr.strip()}"
        write_state(root, branch=args.branch, remote=args.remote, exists=True,
                            error=(error.splitlines() or [error])[-1])
        raise UsageError(error)
    _git("worktree", "add", "--detach", str(root), "HEAD")
    _git("checkout", "--orphan", f"{args.branch}-new", cwd=root)
    _git("rm", "-r", "-q", "--cached", ".", cwd=root, check=False)
    for path in root.iterdir():
        if path.name != ".git":
            _remove(path)
    write_state(root, branch=args.branch, remote=args.remote, exists=False)
    print(f"nightly: {args.remote} has no branch {args.branch} yet; {root} starts it", file=sys.stderr)
    return 0


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()


def published_night(root: Path, date: str) -> Night | None:
    """The night ``date`` as the results branch (checked out as ``root``)
    holds it, whatever the files in the worktree now say; None when absent."""
    if _git("cat-file", "-e", f"HEAD:{date}/{RESULT}", cwd=root, check=False).returncode != 0:
        return None
    shown = _git("show", f"HEAD:{date}/{NIGHT_FILE}", cwd=root, check=False)
    try:
        meta = json.loads(shown.stdout) if shown.returncode == 0 else {}
    except ValueError:
        meta = {}
    return Night(date, root / date, meta if isinstance(meta, dict) else {})


def publish(args: argparse.Namespace) -> int:
    """Commit the night's merged files (not its shards or logs) to the
    results branch and push them.  An ad-hoc night never replaces a
    scheduled one of the same date."""
    tonight = night_dir(args.root, args.date)
    files = [f"{args.date}/{name}" for name in PUBLISHED if (tonight / name).is_file()]
    if RESULT not in {Path(f).name for f in files}:
        raise UsageError(f"{tonight / RESULT} not found: nothing to publish")
    try:
        night = Night.read(tonight)
    except ValueError as err:
        raise UsageError(str(err)) from None
    there = published_night(args.root, args.date)
    if night.ad_hoc and there is not None and not there.ad_hoc:
        print(f"nightly: {args.branch} holds the scheduled night {args.date}; this ad-hoc run does not "
              "replace it: nothing published", file=sys.stderr)
        return 0
    _git("add", "--", *files, cwd=args.root)
    if _git("diff", "--cached", "--quiet", cwd=args.root, check=False).returncode == 0:
        print(f"nightly: {args.date} is already on {args.branch} as it is; nothing to publish",
              file=sys.stderr)
        return 0
    _git("-c", "user.name=nightly", "-c", "user.email=nightly@localhost",
         "commit", "-q", "-m", f"nightly {args.date}", cwd=args.root)
    _git("push", "-q", args.remote, f"HEAD:refs/heads/{args.branch}", cwd=args.root)
    print(f"nightly: pushed {len(files)} file(s) of {args.date} to {args.remote}/{args.branch}",
          file=sys.stderr)
    return 0
