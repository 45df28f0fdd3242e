"""``python -m benchmarks.nightly [STEP] ...``: the command line of every step.

Each step lives in its own module with ``add_arguments(parser, step)`` and
one function per step taking the parsed arguments.  A step's module is
imported only when that step runs (``importlib``): ``plan``, ``summary`` and
the results-branch steps run on the system's Python before anything is
installed and must find nothing beyond the standard library on their way,
and ``merge``, ``gate --no-confirm`` and the dashboard run in the light
install (no torch).
"""
from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Sequence

from benchmarks.nightly.night import date_arg
from benchmarks.run import signals
from benchmarks.usage import Parser, guarded

PROG = "python -m benchmarks.nightly"
DESCRIPTION = "The nightly job, in one go or step by step on several machines."
# step -> (module of benchmarks.nightly, function); None: the whole night here.
STEPS = {"plan": ("plan", "plan"), "light-requirements": ("plan", "light_requirements"),
         "shard": ("shard", "shard"), "merge": ("merge", "merge"), "gate": ("gate", "gate"),
         "summary": ("summary", "summary"), "fetch-history": ("publish", "fetch_history"),
         "publish": ("publish", "publish"), "notify": ("notify", "notify"),
         "state": ("status", "state"), None: ("whole", "run_all")}
NO_ROOT = ("plan", "light-requirements")  # steps that name no folder of nights


def parser(step: str | None):
    """The parser of ``step`` (None: the whole night) and its module."""
    module = importlib.import_module(f"benchmarks.nightly.{STEPS[step][0]}")
    p = Parser(prog=f"{PROG} {step}" if step else PROG, description=DESCRIPTION)
    if step not in NO_ROOT:
        p.add_argument("--root", default="results/nightly", type=Path, help="folder of the dated nights")
        p.add_argument("--date", default="", type=date_arg, help="this night's folder name (default: today, UTC)")
    module.add_arguments(p, step)
    return p, module


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    step = argv[0] if argv and argv[0] in STEPS else None
    rest = argv[1:] if step else argv

    def body() -> int:
        p, module = parser(step)
        return getattr(module, STEPS[step][1])(p.parse_args(rest))

    prog = f"{PROG}{' ' + step if step else ''}"
    # SIGTERM (Slurm's time limit) stops a step as Ctrl-C does
    return signals.stoppable(prog, lambda: guarded(prog, body), ": the step did not finish")
