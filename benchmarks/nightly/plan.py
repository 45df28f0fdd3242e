"""The plan: the night and its shard matrix, and what the light install needs.

Standard library only: the workflow runs ``plan`` and ``light-requirements``
before installing anything.
"""
from __future__ import annotations

import argparse
import configparser
import json
import re
from pathlib import Path

from benchmarks.nightly.night import date_arg

MAX_SHARDS = 64
# compare's default --min-samples (benchmarks.cli.compare): with fewer timed
# repeats a row is never compared, and every night would "PASS (inconclusive)".
MIN_REPEAT = 5
# Distributions the run needs but merge, gate and the dashboard never import.
HEAVY = frozenset({"torch", "torchvision", "torch_xla", "timm", "transformers"})
PROJECT_ROOT = Path(__file__).resolve().parent.parent.parent


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


def plan(args: argparse.Namespace) -> int:
    """The night and the shard matrix, as GitHub step-output lines."""
    print(f"date={args.date}")
    print(f"count={args.shards}")
    print(f"shards={json.dumps(list(range(args.shards)))}")
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
