"""The nightly job: every backend on the full suite, compared with last night.

``python -m benchmarks.nightly`` (``make nightly``) runs the harness into a
dated folder ``results/nightly/<date>/`` (``performance.csv`` with its raw
samples, markdown report and plot), then compares it with the newest earlier
nightly there, writing ``compare.md`` and ``compare.png`` beside it. The exit
code is the comparison's: 1 when a row got significantly slower or newly
fails, so a CI job can gate on it; 0 otherwise (and on the first night).

Arguments after ``--`` go to ``runner.py`` as they are, e.g. a model
selection or shard flags. Rerunning the same date completes that night's run
(``--resume``) instead of starting over.
"""
from __future__ import annotations

import argparse
import datetime
import sys
from pathlib import Path

from . import cli, compare

NIGHTLY_BACKENDS = ("torchxla_trivial", "torchxla_trace_once", "openxla_eval", "inductor")
RESULT = "performance.csv"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.nightly", description=__doc__.splitlines()[0])
    parser.add_argument("--root", default="results/nightly", help="folder of the dated runs")
    parser.add_argument("--date", default=datetime.date.today().isoformat(), help="this night's folder name")
    parser.add_argument("--backends", default=",".join(NIGHTLY_BACKENDS),
                        help=f"comma-separated (default {','.join(NIGHTLY_BACKENDS)})")
    parser.add_argument("runner_args", nargs="*", help="extra runner.py flags, after --")
    args = parser.parse_args(argv)
    owned = {"--output", "--output-directory", "--resume", "--overwrite", "--backend"}
    clash = sorted(owned.intersection(a.split("=")[0] for a in args.runner_args))
    if clash:
        parser.error(f"the nightly job sets {', '.join(clash)} itself")
    root = Path(args.root)
    tonight = root / args.date
    csv_path = tonight / RESULT
    flags = ["--performance", "--use-xla-baseline", "--randomize-input",
             "--backend", args.backends, "--output", str(csv_path), *args.runner_args]
    if csv_path.exists():
        flags.append("--resume")
    code = cli.main(flags)
    if code != 0:
        return code
    previous = previous_run(root, args.date)
    if previous is None:
        print(f"nightly: first run under {root}; nothing to compare with", file=sys.stderr)
        return 0
    print(f"nightly: comparing with {previous}", file=sys.stderr)
    return compare.main([str(previous), str(csv_path), "--markdown", str(tonight / "compare.md"),
                         "--plot", str(tonight / "compare.png")], prog="nightly compare")


def previous_run(root: Path, date: str) -> Path | None:
    """The newest nightly result strictly before ``date``."""
    earlier = sorted(p for p in root.glob(f"*/{RESULT}") if p.parent.name < date)
    return earlier[-1] if earlier else None


if __name__ == "__main__":
    sys.exit(main())
