"""Charts of a run and of a comparison, written as PNG files.

Offers:

* ``plot_speedups(df, png_path)`` -- one run (``store.read_rows`` output):
  grouped bars of speedup per model (and batch size, in a cycle) and backend
  with bootstrap-CI error bars, a line at 1.0 and a dashed geomean line per
  backend (each model counted once), a panel per group of settings (``store.groups``); failed pairs
  are left out and listed under the chart.
* ``plot_comparison(comparison, png_path)`` -- a ``compare.Comparison``:
  horizontal bars of the change of the backend/baseline ratio per (model,
  backend), the number the gate judges, colored by mark, with the
  +-threshold band shaded and untested (inconclusive) pairs hatched.

Both build a ``matplotlib.figure.Figure`` directly instead of going through
pyplot: no global figure state, no GUI backend picked from the environment
(saving a bare Figure renders with Agg), so they are safe in a headless CI job
and in threads.  Both return the path written.
"""
from __future__ import annotations

import os
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter

from benchmarks.results import compare, store, stats

DPI = 100
MARK_COLORS = {
    compare.SLOWER: "tab:red",
    compare.FASTER: "tab:green",
    compare.NO_CHANGE: "tab:gray",
    compare.INCONCLUSIVE: "tab:orange",
}
LOG_TICKS = tuple(m * 10.0 ** e for e in range(-3, 4) for m in (1, 2, 5))  # labelled speedups
OTHER_COLOR = "tab:purple"  # a mark with a change but no color of its own


def _plotted(row: pd.Series) -> bool:
    """A row with a bar to draw: passed, with a speedup."""
    return store.passed(row) and store.is_finite(row["speedup"])


def _note(prefix: str, items: list[str], width: int) -> str:
    """``"<prefix>: a, b, c"`` wrapped to ``width`` characters; ``""`` if none."""
    if not items:
        return ""
    return "\n".join(textwrap.wrap(f"{prefix}: " + ", ".join(items), width=width))


def _save(fig: Figure, png_path: str | os.PathLike) -> Path:
    path = Path(png_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="png", dpi=DPI)
    return path


def _empty(fig: Figure, message: str) -> None:
    ax = fig.add_subplot()
    ax.text(0.5, 0.5, message, ha="center", va="center")
    ax.set_axis_off()


# --------------------------------------------------------------------------
# One run


def _error_bars(rows: pd.DataFrame) -> np.ndarray:
    """Asymmetric error lengths (2 x n) from the CI columns; 0 where missing."""
    speedup = rows["speedup"].to_numpy(dtype=float)
    low = rows["speedup_ci_low"].to_numpy(dtype=float)
    high = rows["speedup_ci_high"].to_numpy(dtype=float)
    below = np.where(np.isfinite(low), speedup - low, 0.0)
    above = np.where(np.isfinite(high), high - speedup, 0.0)
    # A percentile-bootstrap CI should contain the estimate; clip in case it
    # does not (tiny samples), since matplotlib rejects negative lengths.
    return np.clip(np.vstack([below, above]), 0.0, None)


def speedup_title(df: pd.DataFrame) -> str:
    """``"Speedup (inference, fp32, on cpu, xla baseline)"``: the brief
    caption, as the report's title has it, saying ``dynamic shapes`` and
    ``random inputs`` when they were."""
    return f"Speedup ({store.caption(store.settings_of(df), brief=True)})"


def plot_speedups(df: pd.DataFrame, png_path: str | os.PathLike, title: str | None = None) -> Path:
    """``speedup_figure(df, title)`` written to ``png_path``; returns the path."""
    return _save(speedup_figure(df, title), png_path)


def speedup_figure(df: pd.DataFrame, title: str | None = None) -> Figure:
    """Grouped speedup bars of one run.

    Bars grow from 1.0x on a log axis, so 0.5x and 2x are the same length
    and a slowdown points down. As in ``benchmarks.results.report``, the last row of
    an experiment wins, rows of other settings (``store.groups``: a
    training run resumed on an inference CSV) get a panel each, and a model
    run at several batch sizes (a cycle) a bar per size. The default title
    says what was measured; ``title`` replaces the first panel's.
    """
    latest = store.latest(df)
    panels = [g for g in store.groups(latest) if g.apply(_plotted, axis=1).any()] if not latest.empty else []
    failed = [f"{r['name']}/{r['backend']} ({r['status']})" for _, r in latest.iterrows() if not _plotted(r)]
    widest = max((len(_bars(p)[0]) * max(1, p["backend"].nunique()) for p in panels), default=0)
    fig = Figure(figsize=(max(6.0, 1.0 + 0.5 * widest), 5.0 * max(1, len(panels))), layout="constrained")
    if not panels:
        _empty(fig, "No passing results")
        return fig
    for k, panel in enumerate(panels):
        ax = fig.add_subplot(len(panels), 1, k + 1)
        _draw_speedups(ax, panel, title if k == 0 and title is not None else speedup_title(panel))
    note = _note("Omitted (failed)", failed, width=110)
    if note:
        fig.supxlabel(note, fontsize="small")  # supxlabel takes part in constrained layout
    return fig


def _bars(panel: pd.DataFrame) -> tuple[list[str], list[str]]:
    """The bar positions of a panel (model, or model and batch size when a
    model ran at several) and, per row, its position's label."""
    sizes = panel.groupby("name")["batch_size"].nunique() if "batch_size" in panel else None
    cycled = set(sizes[sizes > 1].index) if sizes is not None else set()
    labels = [f"{r['name']} bs {int(r['batch_size'])}" if r["name"] in cycled else str(r["name"])
              for _, r in panel.iterrows()]
    plotted = [label for label, ok in zip(labels, panel.apply(_plotted, axis=1)) if ok]
    return list(dict.fromkeys(plotted)), labels


def _draw_speedups(ax, panel: pd.DataFrame, title: str) -> None:
    positions_of, labels = _bars(panel)
    ok_mask = panel.apply(_plotted, axis=1).to_numpy()
    ok = panel[ok_mask]
    ok_labels = [label for label, keep in zip(labels, ok_mask) if keep]
    backends = list(pd.unique(panel["backend"].dropna()))
    width = 0.8 / len(backends)
    x = np.arange(len(positions_of))
    for i, backend in enumerate(backends):
        mine = (ok["backend"] == backend).to_numpy()
        rows = ok[mine]
        if rows.empty:
            continue  # every model failed with it: listed in the note
        color = f"C{i}"
        at = [positions_of.index(label) for label, m in zip(ok_labels, mine) if m]
        positions = x[at] + (i - (len(backends) - 1) / 2) * width
        ax.bar(positions, rows["speedup"] - 1.0, width, bottom=1.0, yerr=_error_bars(rows), capsize=3,
               color=color, label=backend)
        # As the report's geomean row: a model run at several batch sizes counts once.
        geomean, models = stats.geomean_of_groups(rows["speedup"], rows["name"])
        ax.axhline(geomean, color=color, linestyle="--", linewidth=1,
                   label=f"geomean {backend}: {geomean:.2f}x (n={models})")
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_yscale("log")
    low, high = ax.get_ylim()
    # Out to the labelled ticks around the data: each end of the axis says its value.
    low = max((t for t in LOG_TICKS if t <= low), default=low)
    high = min((t for t in LOG_TICKS if t >= high), default=high)
    ax.set_yticks([t for t in LOG_TICKS if low <= t <= high])
    ax.set_ylim(low, high)
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}x"))
    ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _: ""))
    ax.set_xticks(x, positions_of, rotation=30, ha="right")
    ax.set_ylabel("speedup, log scale (higher is better)")
    ax.set_title(title)
    ax.legend(fontsize="small")


# --------------------------------------------------------------------------
# A comparison


def plot_comparison(comparison: compare.Comparison, png_path: str | os.PathLike) -> Path:
    """Latency change bars of ``comparison``, written to ``png_path``; returns the path.

    Pairs without a change (failures, added, removed, not comparable) have no
    bar; they are listed under the chart with their mark.
    """
    plotted = [row for row in comparison.rows if store.is_finite(row.change)]
    skipped = [f"{row.name}/{row.backend} ({row.mark})" for row in comparison.rows if not store.is_finite(row.change)]

    fig = Figure(figsize=(8.0, max(3.0, 1.5 + 0.35 * len(plotted))), layout="constrained")
    if not plotted:
        _empty(fig, "No pair passed in both runs with the same settings")
    else:
        _draw_changes(fig.add_subplot(), comparison, plotted)
    note = _note("Not plotted", skipped, width=100)
    if note:
        fig.supxlabel(note, fontsize="small")
    return _save(fig, png_path)


def _draw_changes(ax, comparison: compare.Comparison, rows: list[compare.RowComparison]) -> None:
    y = np.arange(len(rows))[::-1]  # first row at the top, like the table
    changes = [100 * row.change for row in rows]
    colors = [MARK_COLORS.get(row.mark, OTHER_COLOR) for row in rows]
    bars = ax.barh(y, changes, color=colors)
    untested = [not store.is_finite(row.p_value) for row in rows]
    for bar, hatched in zip(bars, untested):
        if hatched:  # no test ran: the length alone proves nothing
            bar.set_hatch("//")
    band = 100 * comparison.threshold
    # Inside the band a change is never flagged, however significant.
    ax.axvspan(-band, band, color="0.9", zorder=0)
    ax.axvline(0, color="black", linewidth=0.8)
    ax.set_yticks(y, [f"{row.name} / {row.backend}" for row in rows])
    ax.set_xlabel("change of the backend/baseline ratio new vs old, % (negative = faster)")
    geomean = (
        f"geomean new/old {comparison.geomean_ratio:.3f}x (n={comparison.geomean_n})"
        if comparison.geomean_n
        else "geomean n/a"
    )
    ax.set_title(f"{comparison.old_label} → {comparison.new_label}: {geomean}")
    marks = [m for m in compare.MARKS if any(row.mark == m for row in rows)]
    handles = [Patch(color=MARK_COLORS.get(m, OTHER_COLOR), label=m) for m in marks]
    if any(untested):
        handles.append(Patch(facecolor="white", edgecolor="black", hatch="//", label="untested"))
    handles.append(Patch(color="0.9", label=f"±{comparison.threshold:.0%} threshold"))
    ax.legend(handles=handles, fontsize="small", loc="best")
