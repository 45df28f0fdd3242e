"""The plan: the night, its shard matrix and its settings, frozen once; and
what the light install needs.

A plan is a few ``key=value`` lines (GitHub step outputs, and the file
``plan.txt`` a cluster's jobs read): ``date``, ``count``, ``shards`` and
``settings``, a JSON object of everything a shard's run depends on --
the night's variables (``SETTINGS``: model filter, backends, repeat, suite,
extra runner arguments, the image) and, where the plan runs in the night's
venv (``--dependencies``), the digest of every installed distribution's
version.  Every shard and the merge compare theirs with it and refuse a
mismatch (``check``), so a shard run again with other settings never merges
into the night.  ``--file PATH`` keeps the plan in PATH: written the first
time, read back (whatever the clock or the variables say now) every time
after, so a re-run of the night is the night it was.

Standard library only: the workflow runs ``plan`` and ``light-requirements``
before installing anything.
"""
from __future__ import annotations

import argparse
import configparser
import hashlib
import importlib.metadata
import json
import os
import re
import sys
from pathlib import Path
from typing import Mapping

from benchmarks.nightly.night import date_arg
from benchmarks.usage import UsageError

MAX_SHARDS = 64
# compare's default --min-samples (benchmarks.cli.compare): with fewer timed
# repeats a row is never compared, and every night would "PASS (inconclusive)".
MIN_REPEAT = 5
# Distributions the run needs but merge, gate and the dashboard never import.
HEAVY = frozenset({"torch", "torchvision", "torch_xla", "timm", "transformers"})
PROJECT_ROOT = Path(__file__).resolve().parent.parent.parent
# The night's settings: a plan's key -> the variable every job reads it from.
SETTINGS = {"filter": "NIGHTLY_FILTER", "backends": "NIGHTLY_BACKENDS", "repeat": "NIGHTLY_REPEAT",
            "suite": "NIGHTLY_SUITE", "args": "NIGHTLY_ARGS", "image": "NIGHTLY_IMAGE"}
PLAN_KEYS = ("date", "count", "shards", "settings")


def shards_arg(text: str) -> int:
    """A shard count, 1 to MAX_SHARDS (an argparse type)."""
    if not text.strip().isdigit() or not 1 <= int(text) <= MAX_SHARDS:
        raise argparse.ArgumentTypeError(f"must be a whole number from 1 to {MAX_SHARDS}, got {text!r}")
    return int(text)


def repeat_arg(text: str) -> int | None:
    """A night's timed repeats: none given (the harness's default), or at
    least MIN_REPEAT, which the gate can judge (an argparse type)."""
    if not text.strip():
        return None
    if not text.strip().isdigit() or int(text) < MIN_REPEAT:
        raise argparse.ArgumentTypeError(
            f"{text!r}: the gate judges a row on at least {MIN_REPEAT} timed repeats (compare's "
            f"--min-samples); with fewer every night would pass as inconclusive")
    return int(text)


def add_arguments(p: argparse.ArgumentParser, step: str) -> None:
    if step == "plan":
        p.add_argument("--shards", type=shards_arg, default=4, help="number of shard jobs")
        p.add_argument("--date", default="", type=date_arg, help="the night (default: today, UTC)")
        p.add_argument("--repeat", default="", type=repeat_arg,
                       help=f"the night's timed repeats, checked here (at least {MIN_REPEAT})")
        p.add_argument("--file", type=Path, help="keep the plan here: written once, then read back")
        p.add_argument("--dependencies", action="store_true",
                       help="freeze the installed distributions' versions too (run in the night's venv)")


# --------------------------------------------------------------------------
# The night's settings and dependencies


def settings_from_env(env: Mapping[str, str]) -> dict[str, str]:
    """The night's settings as this job's environment gives them."""
    found = {key: env.get(variable, "").strip() for key, variable in SETTINGS.items()}
    for key, value in found.items():
        if "\n" in value or "\r" in value:
            raise UsageError(f"{SETTINGS[key]} holds a line break: a night's settings are one line each")
    return found


def installed_versions() -> dict[str, str]:
    """Every installed distribution's version, by its normalised name."""
    found = {}
    for dist in importlib.metadata.distributions():
        name = dist.metadata.get("Name")
        if name:
            found[re.sub(r"[-_.]+", "-", name).lower()] = dist.version
    return dict(sorted(found.items()))


def dependencies_digest(versions: Mapping[str, str]) -> str:
    """One digest of every distribution's version: equal exactly when the
    resolved dependencies are."""
    text = "".join(f"{name}=={version}\n" for name, version in sorted(versions.items()))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def differences(planned: Mapping[str, object], found: Mapping[str, object]) -> list[str]:
    """``key 'found' (plan: 'planned')`` for each setting that differs."""
    return [f"{key} {found.get(key)!r} (plan: {planned.get(key)!r})"
            for key in sorted(set(planned) | set(found)) if planned.get(key) != found.get(key)]


# --------------------------------------------------------------------------
# The plan's file


def plan_lines(date: str, count: int, settings: Mapping[str, object]) -> str:
    return (f"date={date}\ncount={count}\nshards={json.dumps(list(range(count)))}\n"
            f"settings={json.dumps(dict(settings), sort_keys=True)}\n")


def read_plan(path: Path) -> dict:
    """A plan file's ``date``, ``count`` (int) and ``settings`` (dict; ``{}``
    in a plan written before settings were frozen); ``UsageError`` naming
    the file when it is not a plan."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as err:
        raise UsageError(f"{path}: unreadable plan ({err.strerror})") from None
    found = dict(line.split("=", 1) for line in lines if "=" in line)
    try:
        date, count = date_arg(found["date"]), shards_arg(found["count"])
        settings = json.loads(found.get("settings", "{}"))
    except (KeyError, argparse.ArgumentTypeError, json.JSONDecodeError):
        raise UsageError(f"{path}: not a night's plan (date=, count=, settings= lines)") from None
    if not isinstance(settings, dict):
        raise UsageError(f"{path}: not a night's plan (settings= is not a JSON object)")
    return {"date": date, "count": count, "settings": settings}


def check(plan_file: Path, settings: Mapping[str, object], who: str) -> None:
    """Refuse (``UsageError``: one line, exit status 2) when ``settings``
    differ from the plan's in any setting the plan froze."""
    planned = read_plan(plan_file)["settings"]
    wrong = differences(planned, {k: v for k, v in settings.items() if k in planned})
    if wrong:
        raise UsageError(f"{who} does not run the night's plan ({plan_file}): {'; '.join(wrong)}")


def plan(args: argparse.Namespace) -> int:
    """The night, its shard matrix and its settings, as GitHub step-output
    lines; with ``--file``, the plan kept there (read back when it is)."""
    if args.file is not None and args.file.is_file():
        found = read_plan(args.file)
        print(f"nightly plan: the night {found['date']} was planned before ({args.file}): its plan is kept",
              file=sys.stderr)
        sys.stdout.write(args.file.read_text(encoding="utf-8"))
        return 0
    settings: dict[str, object] = settings_from_env(os.environ)
    settings["repeat"] = "" if args.repeat is None else str(args.repeat)
    if args.dependencies:
        settings["dependencies"] = dependencies_digest(installed_versions())
    text = plan_lines(args.date, args.shards, settings)
    if args.file is not None:
        args.file.parent.mkdir(parents=True, exist_ok=True)
        partial = args.file.with_name(args.file.name + ".new")
        partial.write_text(text, encoding="utf-8")
        partial.replace(args.file)
    sys.stdout.write(text)
    return 0


def light_requirements(args: argparse.Namespace) -> int:
    """The project's requirements (setup.cfg) less the heavy ones, one a line:
    what ``make install-light`` installs for merge, gate and the dashboard."""
    for requirement in requirements_without_heavy(PROJECT_ROOT / "setup.cfg"):
        print(requirement)
    return 0


def requirements_without_heavy(setup_cfg: Path) -> list[str]:
    config = configparser.ConfigParser()
    config.read(setup_cfg)
    wanted = [line.strip() for line in config["options"]["install_requires"].splitlines() if line.strip()]
    return [r for r in wanted if re.split(r"[<>=!~\[; ]", r, maxsplit=1)[0].lower() not in HEAVY]
