"""A/A nights: run N identical nights on this machine through the real
nightly (runner, then gate) and count the gate's false alarms.

    python -m benchmarks.tools.aa_nights --nights 20 --root results/aa [--resume] [-- RUNNER FLAGS]

Every night runs the same code with the same settings (by default
``--backends openxla_eval,torchxla_trace_once -- --only squeezenet1_1
--repeat 8``, with the nightly's ``--use-xla-baseline --randomize-input``),
as ``python -m benchmarks.nightly`` runs a night: the runner, ``night.json``,
then the gate (``benchmarks.judge``, configs/gate.yaml) against the night's
own history.  Nothing changed between the nights, so every night the gate
flags (suspected or failed) is a false alarm.  Printed per night: the gate's
state, its reasons and the rows it flagged; then the nights counted by state.
Nights before the policy's ``min_nights`` are unjudged by design.

Nights are dated from 2000-01-01 under ROOT; ``--resume`` keeps the nights
already there and adds the rest.  Exit status: 0 when the nights ran
(whatever the counts), 1 when a night's runner failed, 2 bad input.
"""
from __future__ import annotations

import argparse
import datetime
import json
import sys
from pathlib import Path
from typing import Sequence

from tabulate import tabulate

from benchmarks import nightly
from benchmarks.nightly.night import FLAGGED, RESULT, STATES, VERDICT_FILE, Night, flagged_rows
from benchmarks.results import compare, stats
from benchmarks.usage import Parser, UsageError, guarded

PROG = "python -m benchmarks.tools.aa_nights"
FIRST_NIGHT = datetime.date(2000, 1, 1)
DEFAULT_BACKENDS = "openxla_eval,torchxla_trace_once"
DEFAULT_FLAGS = ("--only", "squeezenet1_1", "--repeat", "8")


def _parser() -> argparse.ArgumentParser:
    p = Parser(prog=PROG, description=__doc__.splitlines()[0])
    p.add_argument("--nights", type=int, default=20, help="identical nights to run (default 20, at least 2)")
    p.add_argument("--root", type=Path, default=Path("results/aa"), help="folder of the nights (default results/aa)")
    p.add_argument("--backends", default=DEFAULT_BACKENDS, help=f"comma-separated (default {DEFAULT_BACKENDS})")
    p.add_argument("--resume", action="store_true", help="keep the nights already under ROOT, add the rest")
    p.add_argument("runner_args", nargs="*",
                   help=f"runner.py flags, after -- (default: {' '.join(DEFAULT_FLAGS)})")
    return p


def dates(count: int) -> list[str]:
    return [(FIRST_NIGHT + datetime.timedelta(days=i)).isoformat() for i in range(count)]


def _judged(folder: Path) -> dict | None:
    try:
        return json.loads((folder / VERDICT_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def run_nights(args: argparse.Namespace) -> int:
    flags = args.runner_args or list(DEFAULT_FLAGS)
    for date in dates(args.nights):
        if _judged(args.root / date) is not None:
            continue  # resumed: this night ran and was judged
        print(f"{PROG}: night {date}", file=sys.stderr)
        code = nightly.main(["--root", str(args.root), "--date", date, "--backends", args.backends,
                             "--", *flags])
        if code not in (0, 1, 3, 4):  # the gate's states; anything else: the night did not run
            print(f"{PROG}: night {date} exited with status {code}; stopping", file=sys.stderr)
            return 1
    return 0


def tally(root: Path, nights: Sequence[str]) -> tuple[list[list[str]], dict[str, int]]:
    """Per night: its state, reasons, flagged rows and median ratios; the
    nights counted by state (``none``: no verdict written)."""
    table, counts = [], {state: 0 for state in (*STATES, "none")}
    for date in nights:
        night = Night.read(root / date)
        state = night.state or "none"
        counts[state] += 1
        flagged = ", ".join(f"{r['name']}/{r['backend']} {r['metric']} {r['mark']}" for r in flagged_rows(night.gate))
        table.append([date, state, "; ".join(map(str, night.gate.get("reasons") or ())), flagged or "-",
                      _ratios(root / date)])
    return table, counts


def _ratios(folder: Path) -> str:
    ratios = compare.paired_ratios(folder / RESULT)
    return ", ".join(f"{key.backend} {stats.median(r):.3f}"
                     for key, r in sorted(ratios.items(), key=lambda item: item[0].sort_key()) if r)


def report(root: Path, nights: Sequence[str]) -> str:
    table, counts = tally(root, nights)
    alarms = sum(counts[state] for state in FLAGGED)
    judged = counts["pass"] + alarms
    return (tabulate(table, headers=["night", "state", "reasons", "flagged rows", "median ratio per backend"]) +
            f"\n\nnights by state: {', '.join(f'{k} {n}' for k, n in counts.items())}"
            f"\nfalse alarms (suspected or failed): {alarms} of {judged} judged night(s)\n")


def main(argv: Sequence[str] | None = None) -> int:
    def body() -> int:
        args = _parser().parse_args(list(sys.argv[1:] if argv is None else argv))
        if args.nights < 2:
            raise UsageError(f"--nights must be at least 2 (the first has no baseline), got {args.nights}")
        if args.root.exists() and not args.root.is_dir():
            raise UsageError(f"--root {args.root} is not a folder")
        if args.root.is_dir() and any(args.root.iterdir()) and not args.resume:
            raise UsageError(f"{args.root} is not empty; pass --resume to add to its nights or choose another --root")
        code = run_nights(args)
        print(report(args.root, [d for d in dates(args.nights) if (args.root / d).is_dir()]), end="")
        return code

    return guarded(PROG, body)


if __name__ == "__main__":
    sys.exit(main())
