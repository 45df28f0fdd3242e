"""Compare two benchmark runs: which (model, backend) pairs got slower or faster.

Offers:

* ``compare(old_csv, new_csv, ...) -> Comparison`` -- the computed result: one
  ``RowComparison`` per (model, backend) found in either run, with a mark.
* ``exit_code(comparison) -> int`` -- 1 when any row is ``slower`` or a
  ``new failure`` (CI gates on it), else 0.
* ``render_markdown(comparison)`` / ``render_console(comparison)`` -- strings.
* ``main(argv) -> int`` -- the command line (``python runner.py compare OLD NEW``).

Compute first, render second (the shape of google/benchmark's
``get_difference_report`` / ``print_difference_report``): the renderers only
format what ``compare`` decided, so they are testable against golden files.

The rules, in the order they are applied to a (name, backend) pair:

1. only in the new run: ``added``; only in the old run: ``removed``;
2. settings (dev, batch_size, baseline) differ: ``not comparable`` -- even if
   a status changed, because the changed setting may be the reason;
3. old passed, new did not: ``new failure``; the reverse: ``fixed``; neither
   passed: ``still failing``;
4. both passed: change = median(new backend samples) / median(old backend
   samples) - 1, from the raw samples in the ``.jsonl`` beside each CSV.
   ``slower`` / ``faster`` need BOTH a two-sided Mann-Whitney U test
   significant at p < alpha AND |change| >= threshold; otherwise ``no change``.
   The test runs only when each side has >= min_samples samples (below that
   it cannot reach significance anyway: 3 vs 3 samples give p >= 0.1).  When
   either side has no samples, the change comes from the CSV's
   ``abs_latency`` instead.  Untested rows are never ``slower`` / ``faster``:
   with no idea of the noise, a 10% change is as likely a fluke as real, and
   a gate that fires on flukes gets switched off.  Their note says
   "untested" so a reader can still see a large change.

Within one file the last row (and the last samples record) of a pair wins,
as in ``benchmarks.report``: a re-run appended to the same CSV replaces the
earlier attempt.
"""
from __future__ import annotations

import argparse
import os
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd
from scipy import stats as sps
from tabulate import tabulate

from benchmarks import results, stats

SLOWER = "slower"
FASTER = "faster"
NO_CHANGE = "no change"
NEW_FAILURE = "new failure"
FIXED = "fixed"
STILL_FAILING = "still failing"
NOT_COMPARABLE = "not comparable"
ADDED = "added"
REMOVED = "removed"

# Summary order: what needs attention first.
MARKS = (SLOWER, NEW_FAILURE, FASTER, FIXED, NO_CHANGE, STILL_FAILING, NOT_COMPARABLE, ADDED, REMOVED)
GATING_MARKS = frozenset({SLOWER, NEW_FAILURE})
# Rows whose latency ratio enters the geomean: passed in both, same settings.
MEASURED_MARKS = frozenset({SLOWER, FASTER, NO_CHANGE})

SETTINGS = ("dev", "batch_size", "baseline")
NAN = float("nan")


# --------------------------------------------------------------------------
# Data


@dataclass(frozen=True)
class RowComparison:
    """One (name, backend) pair across the two runs.

    A status of ``None`` means the pair is absent from that run; a passing
    row's status is ``"pass"``.  Latencies are in ms per iteration; ``change``
    is ``new / old - 1`` (positive = slower) and ``p_value`` the Mann-Whitney
    p-value, both ``nan`` when not computed.  ``n_old`` / ``n_new`` count the
    backend timing samples found.  Speedups are the CSV's, for information.
    """

    name: str
    backend: str
    mark: str
    old_status: str | None
    new_status: str | None
    old_latency_ms: float
    new_latency_ms: float
    change: float
    p_value: float
    n_old: int
    n_new: int
    old_speedup: float
    new_speedup: float
    note: str = ""

    @property
    def ratio(self) -> float:
        """``new / old`` latency (below 1 = faster)."""
        return 1.0 + self.change


@dataclass(frozen=True)
class Comparison:
    """The result of :func:`compare`: rows sorted by (name, backend), the
    parameters they were judged with, and the geomean of new/old latency over
    the ``geomean_n`` rows that passed in both runs with the same settings."""

    rows: list[RowComparison]
    old_label: str
    new_label: str
    threshold: float
    alpha: float
    min_samples: int
    geomean_ratio: float
    geomean_n: int

    def counts(self) -> dict[str, int]:
        """Rows per mark, in ``MARKS`` order, marks with no rows left out."""
        found = [row.mark for row in self.rows]
        return {mark: found.count(mark) for mark in MARKS if mark in found}

    def frame(self) -> pd.DataFrame:
        """The rows as a DataFrame (one column per ``RowComparison`` field)."""
        columns = list(RowComparison.__dataclass_fields__)
        return pd.DataFrame([asdict(row) for row in self.rows], columns=columns)


@dataclass(frozen=True)
class _Side:
    """One run's view of a (name, backend) pair."""

    status: str
    settings: tuple
    abs_latency_ms: float
    speedup: float
    samples_s: tuple[float, ...]
    error: str = ""

    @property
    def passed(self) -> bool:
        return self.status == results.STATUS_PASS


# --------------------------------------------------------------------------
# Loading


def _status(row: pd.Series) -> str:
    if results.passed(row):
        return results.STATUS_PASS
    return "unknown" if pd.isna(row["status"]) else str(row["status"])


def _setting(value: Any) -> Any:
    # pd.NA == pd.NA is NA, not True: normalise before comparing tuples.
    if pd.isna(value):
        return None
    return int(value) if isinstance(value, (int, np.integer)) else str(value)


def _backend_samples(jsonl_path: Path) -> dict[tuple[str, str], tuple[float, ...]]:
    """Backend timing samples per (name, backend); last record wins.

    A missing file is not an error: older runs had none, and the comparison
    falls back to the CSV's latencies.
    """
    if not jsonl_path.exists():
        return {}
    found = {}
    for record in results.read_samples(jsonl_path):
        if record.get("role") != "backend":
            continue
        # nan was stored as null; a sample that is not a finite number is dropped.
        samples = tuple(float(s) for s in record.get("samples_s") or () if results.is_finite(s))
        found[(record["name"], record["backend"])] = samples
    return found


def _load_run(csv_path: str | os.PathLike) -> dict[tuple[str, str], _Side]:
    df = results.latest(results.read_rows(csv_path))
    samples = _backend_samples(results.samples_path(csv_path))
    run = {}
    for _, row in df.iterrows():
        key = (row["name"], row["backend"])
        run[key] = _Side(
            status=_status(row),
            settings=tuple(_setting(row[s]) for s in SETTINGS),
            abs_latency_ms=float(row["abs_latency"]) if results.is_finite(row["abs_latency"]) else NAN,
            speedup=float(row["speedup"]) if results.is_finite(row["speedup"]) else NAN,
            samples_s=samples.get(key, ()),
            # Optional column (schema v1 files lack it): the first line of a failure.
            error=str(row["error"]) if "error" in row and not pd.isna(row["error"]) else "",
        )
    return run


# --------------------------------------------------------------------------
# Judging one pair


def _shorten(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _settings_note(old: _Side, new: _Side) -> str:
    return ", ".join(
        f"{name} {a} -> {b}" for name, a, b in zip(SETTINGS, old.settings, new.settings) if a != b
    )


def _latencies(old: _Side, new: _Side) -> tuple[float, float, str]:
    """Old and new latency (ms) and a note on where they came from.

    Both sides from the same source: mixing a sample median with a CSV value
    would compare two different estimators.
    """
    if old.samples_s and new.samples_s:
        return stats.median(old.samples_s) * 1e3, stats.median(new.samples_s) * 1e3, ""
    return old.abs_latency_ms, new.abs_latency_ms, "untested: no samples, change from abs_latency"


def _p_value(old: _Side, new: _Side, min_samples: int) -> tuple[float, str]:
    """Two-sided Mann-Whitney U p-value, or nan and why it was not run."""
    n_old, n_new = len(old.samples_s), len(new.samples_s)
    if not (old.samples_s and new.samples_s):
        return NAN, ""  # _latencies already says why
    if min(n_old, n_new) < min_samples:
        return NAN, f"untested: {n_old} vs {n_new} samples (< {min_samples} per side)"
    # Rank-based: no normality assumption, and one outlier iteration (a GC
    # pause) moves a rank by one instead of dragging a mean.
    result = sps.mannwhitneyu(new.samples_s, old.samples_s, alternative="two-sided")
    return float(result.pvalue), ""


def _judge_measured(change: float, p_value: float, threshold: float, alpha: float) -> str:
    significant = results.is_finite(p_value) and p_value < alpha
    if significant and results.is_finite(change) and abs(change) >= threshold:
        return SLOWER if change > 0 else FASTER
    return NO_CHANGE


def _judge_status(old: _Side, new: _Side) -> str | None:
    if old.passed and not new.passed:
        return NEW_FAILURE
    if new.passed and not old.passed:
        return FIXED
    if not old.passed:
        return STILL_FAILING
    return None


def _row(
    key: tuple[str, str],
    old: _Side | None,
    new: _Side | None,
    threshold: float,
    alpha: float,
    min_samples: int,
) -> RowComparison:
    base = dict(
        name=key[0],
        backend=key[1],
        old_status=old.status if old else None,
        new_status=new.status if new else None,
        old_latency_ms=old.abs_latency_ms if old and old.passed else NAN,
        new_latency_ms=new.abs_latency_ms if new and new.passed else NAN,
        change=NAN,
        p_value=NAN,
        n_old=len(old.samples_s) if old else 0,
        n_new=len(new.samples_s) if new else 0,
        old_speedup=old.speedup if old else NAN,
        new_speedup=new.speedup if new else NAN,
    )
    if old is None or new is None:
        return RowComparison(mark=ADDED if old is None else REMOVED, **base)
    if old.settings != new.settings:
        return RowComparison(mark=NOT_COMPARABLE, note=_settings_note(old, new), **base)
    status_mark = _judge_status(old, new)
    if status_mark is not None:
        # What broke is the first question a reviewer has about a new failure.
        note = _shorten(new.error) if not new.passed else ""
        return RowComparison(mark=status_mark, note=note, **base)
    old_ms, new_ms, source_note = _latencies(old, new)
    change = new_ms / old_ms - 1 if results.is_finite(old_ms) and results.is_finite(new_ms) and old_ms > 0 else NAN
    p_value, test_note = _p_value(old, new, min_samples)
    base.update(old_latency_ms=old_ms, new_latency_ms=new_ms, change=change, p_value=p_value)
    mark = _judge_measured(change, p_value, threshold, alpha)
    return RowComparison(mark=mark, note=source_note or test_note, **base)


# --------------------------------------------------------------------------
# Compute


def compare(
    old_csv: str | os.PathLike,
    new_csv: str | os.PathLike,
    threshold: float = 0.05,
    alpha: float = 0.05,
    min_samples: int = 5,
) -> Comparison:
    """Compare the run at ``new_csv`` against the one at ``old_csv``.

    ``threshold`` is the smallest relative latency change worth a mark (0.05 =
    5%), ``alpha`` the significance level of the Mann-Whitney U test and
    ``min_samples`` the samples each side needs for the test to run.  See the
    module docstring for the rules.  Raises ``OSError`` / ``ValueError`` on a
    missing or unreadable file.
    """
    old_run, new_run = _load_run(old_csv), _load_run(new_csv)
    keys = sorted(set(old_run) | set(new_run))
    rows = [_row(k, old_run.get(k), new_run.get(k), threshold, alpha, min_samples) for k in keys]
    ratios = [row.ratio for row in rows if row.mark in MEASURED_MARKS and results.is_finite(row.change)]
    return Comparison(
        rows=rows,
        old_label=Path(old_csv).name,
        new_label=Path(new_csv).name,
        threshold=threshold,
        alpha=alpha,
        min_samples=min_samples,
        geomean_ratio=stats.geomean(ratios),
        geomean_n=len(ratios),
    )


def exit_code(comparison: Comparison) -> int:
    """1 when any row is ``slower`` or a ``new failure``, else 0."""
    return int(any(row.mark in GATING_MARKS for row in comparison.rows))


# --------------------------------------------------------------------------
# Render


def _latency_cell(status: str | None, latency_ms: float) -> str:
    if status is None:
        return "-"
    if status != results.STATUS_PASS:
        return status
    return f"{latency_ms:.3f}" if results.is_finite(latency_ms) else "n/a"


def _change_cell(change: float) -> str:
    return f"{change:+.1%}" if results.is_finite(change) else "-"


def _p_cell(p_value: float) -> str:
    if not results.is_finite(p_value):
        return "-"
    return "<0.001" if p_value < 0.001 else f"{p_value:.3f}"


def _speedup_cell(old: float, new: float, arrow: str) -> str:
    def one(value: float) -> str:
        return f"{value:.2f}x" if results.is_finite(value) else "-"

    if not (results.is_finite(old) or results.is_finite(new)):
        return "-"
    return f"{one(old)} {arrow} {one(new)}"


HEADERS = ["name", "backend", "mark", "old ms", "new ms", "change", "p", "speedup old→new", "note"]


def _md_escape(cell: str) -> str:
    # A "|" in an error message would split the cell and shift the columns.
    return cell.replace("|", "\\|")


def _table_rows(comparison: Comparison, arrow: str, markdown: bool) -> list[list[str]]:
    body = []
    for row in comparison.rows:
        mark = f"**{row.mark}**" if markdown and row.mark in GATING_MARKS else row.mark
        cells = [
            row.name,
            row.backend,
            mark,
            _latency_cell(row.old_status, row.old_latency_ms),
            _latency_cell(row.new_status, row.new_latency_ms),
            _change_cell(row.change),
            _p_cell(row.p_value),
            _speedup_cell(row.old_speedup, row.new_speedup, arrow),
            row.note.replace("->", arrow),
        ]
        body.append([_md_escape(c) for c in cells] if markdown else cells)
    return body


def _table(comparison: Comparison, tablefmt: str, arrow: str, markdown: bool) -> str:
    headers = [h.replace("→", arrow) for h in HEADERS]
    align = ("left", "left", "left", "right", "right", "right", "right", "right", "left")
    # disable_numparse: cells are already formatted; keep them verbatim.
    return tabulate(
        _table_rows(comparison, arrow, markdown),
        headers=headers,
        tablefmt=tablefmt,
        colalign=align,
        disable_numparse=True,
    )


def summary(comparison: Comparison) -> str:
    """``"1 slower, 2 no change; geomean new/old latency 0.98x (n=3, below 1 = faster)"``."""
    counts = ", ".join(f"{n} {mark}" for mark, n in comparison.counts().items()) or "no rows"
    if comparison.geomean_n:
        geomean = (
            f"geomean new/old latency {comparison.geomean_ratio:.3f}x "
            f"(n={comparison.geomean_n}, below 1 = faster)"
        )
    else:
        geomean = "geomean new/old latency n/a (no row passed in both runs with the same settings)"
    return f"{counts}; {geomean}"


def rule(comparison: Comparison) -> str:
    """The sentence that says when a row counts as slower or faster."""
    return (
        f"change = median new / median old backend latency - 1. "
        f"slower/faster: significant at p<{comparison.alpha:g} (two-sided Mann-Whitney U on the raw "
        f"samples) with >={comparison.min_samples} samples per side and "
        f"|change| >= {comparison.threshold:.0%}; anything else is 'no change', including untested rows. "
        f"Exit status 1 on any slower or new failure."
    )


def _verdict(comparison: Comparison) -> str:
    gating = {m: n for m, n in comparison.counts().items() if m in GATING_MARKS}
    if not gating:
        return "PASS"
    return "FAIL (" + ", ".join(f"{n} {m}" for m, n in gating.items()) + ")"


def render_markdown(comparison: Comparison, title: str | None = None) -> str:
    """Markdown for a pull request: verdict, summary, table and the rule."""
    title = title or f"Benchmark comparison: {comparison.old_label} → {comparison.new_label}"
    parts = [f"# {title}", "", f"**{_verdict(comparison)}**: {summary(comparison)}.", ""]
    if comparison.rows:
        parts += [_table(comparison, "github", "→", markdown=True), ""]
    parts += [rule(comparison).replace(">=", "≥"), ""]
    return "\n".join(parts)


def render_console(comparison: Comparison) -> str:
    """Plain-text comparison for the terminal (ASCII arrows)."""
    header = f"{comparison.old_label} -> {comparison.new_label}: {_verdict(comparison)}"
    parts = [header, summary(comparison), ""]
    if comparison.rows:
        parts += [_table(comparison, "simple", "->", markdown=False), ""]
    parts += [rule(comparison), ""]
    return "\n".join(parts)


# --------------------------------------------------------------------------
# Command line


def _parser(prog: str | None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Compare two benchmark runs (result CSVs with their .jsonl samples beside them). "
        "Exit status: 0 no regression, 1 a row got slower or newly failed, 2 bad input.",
    )
    parser.add_argument("old", metavar="OLD", help="results CSV of the reference run")
    parser.add_argument("new", metavar="NEW", help="results CSV of the run to judge")
    parser.add_argument("--threshold", type=float, default=0.05,
                        help="smallest relative latency change that counts (default 0.05 = 5%%)")
    parser.add_argument("--alpha", type=float, default=0.05,
                        help="significance level of the Mann-Whitney U test (default 0.05)")
    parser.add_argument("--min-samples", type=int, default=5,
                        help="samples per side needed to run the test (default 5)")
    parser.add_argument("--markdown", metavar="PATH", help="also write the markdown comparison here")
    parser.add_argument("--plot", metavar="PATH", help="also write the comparison chart (PNG) here")
    return parser


def main(argv: Sequence[str] | None = None, prog: str | None = None) -> int:
    """Print the comparison of OLD and NEW; return the exit status (0, 1 or 2)."""
    parser = _parser(prog)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # usage error (2) or --help (0): return, don't exit
        return int(exc.code or 0)
    try:
        comparison = compare(args.old, args.new, args.threshold, args.alpha, args.min_samples)
    except (OSError, ValueError, KeyError) as exc:
        # KeyError: a samples record without name/backend.  One line, no traceback:
        # this is bad input, not a bug.
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return 2
    print(render_console(comparison), end="")
    if args.markdown:
        Path(args.markdown).write_text(render_markdown(comparison), encoding="utf-8")
    if args.plot:
        from benchmarks import plots  # matplotlib is slow to import; only when asked

        plots.plot_comparison(comparison, args.plot)
    return exit_code(comparison)


if __name__ == "__main__":
    sys.exit(main())
