"""``python -m benchmarks.nightly state``: what the gate made of the night,
as a job's status.

It prints ``state=STATE`` (a GitHub step-output line) and exits with that
state's status (``night.STATE_EXIT``: 0 pass, 1 fail, 3 unjudged, 4
suspected), so a job is green only when the gate passed the night, whatever
the gate's own process exited with (a gate cut off by a time limit wrote
nothing: unjudged).  Standard library only: it runs where nothing is installed.
"""
from __future__ import annotations

import argparse
import sys

from benchmarks.nightly.night import PASS, STATE_EXIT, UNJUDGED, VERDICT_FILE, Night, night_dir


def add_arguments(p: argparse.ArgumentParser, step: str) -> None:
    """``state`` takes only ``--root`` and ``--date``."""


def state(args: argparse.Namespace) -> int:
    night = Night.read(night_dir(args.root, args.date), on_error=lambda why: print(f"state: {why}", file=sys.stderr))
    found = night.state or UNJUDGED  # no gate finished: nothing says the night is fine
    print(f"state={found}")
    if found != PASS:
        why = "" if night.state else f" ({night.folder / VERDICT_FILE} not written or not readable: the gate did not finish)"
        print(f"nightly: night {args.date} is not green: {found}{why}", file=sys.stderr)
    return STATE_EXIT[found]
