"""A slowed copy of the project: the regression the gate's evaluation injects.

    python -m benchmarks.tools.inject --factor 1.05 DEST [--share 0.5] [--commit REV]

Checks out ``REV`` (default HEAD) as a git worktree at ``DEST`` and appends to
its ``xla_backends/trace_once/_xlac.py`` a ``run_cached_graph`` that waits
for each replay of a compiled graph and then sleeps ``factor - 1`` times
the replay's own duration.  Every call of the bridge's cached executable is
``factor`` times as long, on every model, as a regression of the bridge
would be; other backends are untouched.  With ``--share S`` each worker
process is slowed with probability ``S``, drawn once when it imports the
bridge (``--share 0.5``: a random half of the processes), so nobody chooses
which rows and processes get it.  Nights run
from ``DEST`` (``cd DEST && python -m benchmarks.nightly ...``) are the
injected nights of docs/studies/gate-evaluation.md.  The project itself is
never changed: the slowdown exists only in the copy.

Exit status: 0 made, 2 bad input (a factor below 1, a ``DEST`` that exists,
an unknown revision).
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Sequence

from benchmarks.usage import Parser, UsageError, guarded

PROG = "python -m benchmarks.tools.inject"
REPO = Path(__file__).resolve().parents[2]
TARGET = Path("xla_backends/trace_once/_xlac.py")
MARKER = "# benchmarks.tools.inject:"


def slowdown(factor: float, share: float = 1.0) -> str:
    """The code appended to ``TARGET``: ``run_cached_graph`` redefined."""
    return f'''

{MARKER} every replay of a compiled graph {factor:g} times as long, in a share {share:g} of processes.
import random as _random

_SLOWED = _random.SystemRandom().random() < {share!r}


def run_cached_graph(_inner=run_cached_graph, _factor={factor!r}):
    import time

    run = _inner()
    if not _SLOWED:
        return run

    def slowed(graph_hash, inputs):
        start = time.perf_counter()
        results = run(graph_hash, inputs)
        _X()._xla_wait_device_ops([])
        time.sleep((_factor - 1.0) * (time.perf_counter() - start))
        return results

    return slowed
'''


def make(dest: Path, factor: float, commit: str = "HEAD", repo: Path = REPO, share: float = 1.0) -> Path:
    """The slowed worktree at ``dest``; its patched file."""
    if factor < 1.0:
        raise UsageError(f"--factor must be at least 1 (a slowdown), got {factor:g}")
    if not 0.0 < share <= 1.0:
        raise UsageError(f"--share must be in (0, 1], got {share:g}")
    if dest.exists():
        raise UsageError(f"{dest} exists; name a new folder")
    done = subprocess.run(["git", "-C", str(repo), "worktree", "add", "--detach", str(dest), commit],
                          capture_output=True, text=True)
    if done.returncode:
        raise UsageError(f"git worktree add {dest} {commit}: {(done.stderr.strip().splitlines() or ['failed'])[-1]}")
    target = dest / TARGET
    with target.open("a", encoding="utf-8") as out:
        out.write(slowdown(factor, share))
    return target


def main(argv: Sequence[str] | None = None) -> int:
    def body() -> int:
        p = Parser(prog=PROG, description=__doc__.splitlines()[0])
        p.add_argument("dest", type=Path, help="the new folder of the slowed copy")
        p.add_argument("--factor", type=float, required=True, help="each replay this many times as long (1.05: +5%%)")
        p.add_argument("--share", type=float, default=1.0,
                       help="the chance that a worker process is slowed (default 1: every process)")
        p.add_argument("--commit", default="HEAD", help="the revision copied (default HEAD)")
        args = p.parse_args(list(sys.argv[1:] if argv is None else argv))
        target = make(args.dest, args.factor, args.commit, share=args.share)
        print(f"{PROG}: {args.dest} at {args.commit}, {target.relative_to(args.dest)} slowed {args.factor:g}x in a share {args.share:g} "
              f"of processes "
              f"(remove with git worktree remove {args.dest})")
        return 0

    return guarded(PROG, body)


if __name__ == "__main__":
    sys.exit(main())
