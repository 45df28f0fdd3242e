"""Two backends of one run side by side, paired repeat by repeat:
``python -m benchmarks.tools.beside CSV [--ours BACKEND] [--other BACKEND]``.

A run measures every backend of a model in the same repeats (and the same
worker processes), interleaved with the baseline, so ours and another
backend can be compared directly, without the baseline: per repeat, the
other's time over ours (above 1: ours is faster).  Where the repeats were
spread over several worker processes, each process's median of those ratios
is a unit, as the gate takes them (a process's own state shifts its timings
by more than the noise within it); else each repeat is one.

Printed per model: each backend's median time, ours' speedup over the other
(the median unit) with its 95% bootstrap interval, and which side the
interval leaves 1.0 on, if either; then the geomean over the models, its
95% interval from resampling every model's units at once (percentile
bootstrap), and whether that interval separates the two backends.  "Ours at
least the other in geomean" is shown by a run only when the interval's low
end is at least 1.0; one whose interval straddles 1.0 has not ordered them.

Only models where both rows passed and the two were measured in the same
repeats (identical baseline samples) count; the others are listed.  Exit
status 0 when printed; bad input: one line on stderr and 2.
"""
from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

PROG = "python -m benchmarks.tools.beside"
OURS = "aot_torchxla_trace_once"
OTHER = "openxla"
RESAMPLES = 10_000


@dataclass(frozen=True)
class Pair:
    """One model's two backends, paired: the units (other/ours) and medians."""

    name: str
    ours_ms: float
    other_ms: float
    units: np.ndarray
    by_process: bool

    @property
    def speedup(self) -> float:
        return float(np.median(self.units))


def pairs(csv_path: Path, ours: str, other: str) -> tuple[list[Pair], list[str]]:
    """(the models paired, a line per model left out and why)."""
    from benchmarks.results import pairing

    run, _ = pairing.load_run(csv_path)
    by_model: dict[tuple, dict[str, pairing.Side]] = {}
    for key, side in run.items():
        by_model.setdefault((key.name, key.batch_size, key.settings), {})[key.backend] = side
    found, left_out = [], []
    for (name, _, _), sides in by_model.items():
        if ours not in sides and other not in sides:
            continue
        a, b = sides.get(ours), sides.get(other)
        why = ("not run by both" if a is None or b is None
               else "failed" if not (a.passed and b.passed)
               else "not measured in the same repeats" if not (a.paired and a.baseline_s == b.baseline_s
                                                               and a.process_repeats == b.process_repeats)
               else "")
        if why:
            left_out.append(f"{name}: {why}")
            continue
        found.append(_pair(name, a, b))
    return found, left_out


def _pair(name: str, ours, other) -> Pair:
    ratios = np.array([o / s for o, s in zip(other.backend_s, ours.backend_s)], dtype=float)
    sizes = ours.process_repeats if ours.by_process and len(ours.process_repeats) > 1 else ()
    if sizes:
        units = np.array([np.median(part) for part in np.split(ratios, np.cumsum(sizes)[:-1]) if part.size])
    else:
        units = ratios
    return Pair(name, float(np.median(ours.backend_s)) * 1e3, float(np.median(other.backend_s)) * 1e3,
                units[np.isfinite(units) & (units > 0)], bool(sizes))


def geomean_interval(found: Sequence[Pair], resamples: int = RESAMPLES, seed: int = 0,
                     confidence: float = 0.95) -> tuple[float, float, float]:
    """(geomean of the models' median units, low, high): each resample draws
    every model's units with replacement, takes each median and their
    geomean; the interval is those geomeans' percentiles."""
    rng = np.random.default_rng(seed)
    logs = np.zeros(resamples)
    for pair in found:
        draws = pair.units[rng.integers(0, pair.units.size, (resamples, pair.units.size))]
        logs += np.log(np.median(draws, axis=1))
    logs /= len(found)
    tail = (1 - confidence) / 2 * 100
    low, high = np.exp(np.percentile(logs, [tail, 100 - tail]))
    estimate = math.exp(sum(math.log(p.speedup) for p in found) / len(found))
    return estimate, float(low), float(high)


def side_of(low: float, high: float) -> str:
    if not (math.isfinite(low) and math.isfinite(high)):
        return "too few units"
    return "ours faster" if low > 1 else "ours slower" if high < 1 else "not separated"


def report(found: Sequence[Pair], left_out: Sequence[str], ours: str, other: str,
           resamples: int = RESAMPLES) -> str:
    from benchmarks.results import stats, tables

    rows = []
    for pair in sorted(found, key=lambda p: p.name):
        low, high = stats.median_ci(pair.units)
        rows.append([pair.name, f"{pair.ours_ms:.1f}", f"{pair.other_ms:.1f}",
                     f"{pair.speedup:.3f} [{low:.3f}, {high:.3f}]",
                     f"{pair.units.size} {'processes' if pair.by_process else 'repeats'}", side_of(low, high)])
    headers = ["model", "ours ms", f"{other} ms", f"ours over {other} [95%]", "units", "interval"]
    text = (f"{ours} (ours) beside {other}, paired repeat by repeat: {other}'s time over ours "
            "(above 1: ours is faster)\n" + tables.render_table(headers, rows) + "\n")
    estimate, low, high = geomean_interval(found, resamples)
    sides = [r[-1] for r in rows]
    text += (f"geomean over {len(found)} model(s): {estimate:.3f} [{low:.3f}, {high:.3f}] "
             f"(95%, {resamples} resamples): {side_of(low, high)}; per model: "
             f"{sides.count('ours faster')} faster, {sides.count('ours slower')} slower, "
             f"{sides.count('not separated')} not separated\n")
    if left_out:
        text += "left out: " + "; ".join(left_out) + "\n"
    return text


def main(argv: Sequence[str] | None = None) -> int:
    from benchmarks.usage import guarded

    return guarded(PROG, lambda: _main(argv))


def _main(argv) -> int:
    from benchmarks.usage import Parser, UsageError

    parser = Parser(prog=PROG, description=__doc__.split("\n\n")[0])
    parser.add_argument("csv", help="a runner.py run's CSV (its .jsonl samples beside it)")
    parser.add_argument("--ours", default=OURS, help=f"default {OURS}")
    parser.add_argument("--other", default=OTHER, help=f"default {OTHER}")
    parser.add_argument("--resamples", type=int, default=RESAMPLES, help=f"bootstrap resamples (default {RESAMPLES})")
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    path = Path(args.csv)
    if not path.is_file():
        raise UsageError(f"{path}: no such file")
    if args.resamples < 100:
        raise UsageError(f"--resamples must be at least 100, got {args.resamples}")
    try:
        found, left_out = pairs(path, args.ours, args.other)
    except (OSError, ValueError) as err:
        raise UsageError(f"{path}: {str(err).splitlines()[0] if str(err) else type(err).__name__}") from None
    if not found:
        raise UsageError(f"{path}: no model with passing rows of both {args.ours} and {args.other} "
                         "measured in the same repeats" + (f" ({'; '.join(left_out)})" if left_out else ""))
    print(report(found, left_out, args.ours, args.other, args.resamples), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
