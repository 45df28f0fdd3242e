"""``runner.py explain RUN.csv``: the ``--explain`` view (graph breaks,
host fallbacks, recompiles, host time) of a finished run, from its files.

Damage to the run's files is reported as every command reports it
(``store.damage``: file, line, what is lost): a cut last line on stderr and
the rest explained; anything worse, one line and exit 2.
"""
from __future__ import annotations

import sys
from pathlib import Path

from benchmarks.cli.flags import PROG
from benchmarks.usage import Parser, UsageError


def _parser(prog: str) -> Parser:
    p = Parser(prog=prog, description="What kept each compiled run of a finished run from being one graph "
                                      "replayed at no cost, read from its files.")
    p.add_argument("run", metavar="RUN.csv", type=Path, help="a run's CSV (its samples and graph breaks beside it)")
    return p


def explain_main(argv: list[str], prog: str = f"{PROG} explain") -> int:
    from benchmarks.results import explain, store

    args = _parser(prog).parse_args(argv)
    if args.run.is_dir() or args.run.suffix != ".csv":
        raise UsageError(f"{args.run}: give a run's CSV")
    try:
        found = store.read_run(args.run).damage
        text = explain.render(args.run)
    except (OSError, ValueError) as err:
        raise UsageError(str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__) from None
    for damage in found:
        print(f"{prog}: warning: {damage.describe()}", file=sys.stderr)
    print(text, end="")
    return 0
