"""Reports rendered from a results DataFrame (``benchmarks.results.read_rows``).

Offers:

* ``speedup_table(df) -> (headers, rows)`` -- the model x backend table of
  speedups with bootstrap CIs, failure statuses and a geomean row.
* ``failures(df) -> list[(name, backend, status)]``.
* ``caption(df) -> str`` -- ``"Baseline: xla on cpu"``.
* ``render_markdown(df, title=...) -> str`` and ``render_console(df) -> str``.
* ``write_markdown(csv_path, title=None) -> Path`` -- renders the stored CSV
  into the ``.md`` beside it.

Everything is computed from the data first and only then formatted; the
renderers return strings and never print, so they are testable against golden
files.  If a (model, backend) pair appears more than once (a re-run appended
to the same CSV), the last row wins.
"""
from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import pandas as pd
from tabulate import tabulate

from benchmarks import results, stats

DEFAULT_TITLE = "Speedup over baseline"
MISSING = "-"  # a (model, backend) pair that was not run at all
EXPLANATION = (
    "Speedup = median baseline latency / median backend latency (higher is better); "
    "brackets: bootstrap confidence interval; geomean over the models that passed "
    "with that backend (n = how many)."
)


# --------------------------------------------------------------------------
# Compute


def _unique(series: pd.Series) -> list:
    """Distinct non-missing values in order of first appearance."""
    return list(pd.unique(series.dropna()))


def _format_speedup(value: float, low: float = math.nan, high: float = math.nan) -> str:
    if not results.is_finite(value):
        return "n/a"
    if results.is_finite(low) and results.is_finite(high):
        return f"{value:.2f}x [{low:.2f}, {high:.2f}]"
    return f"{value:.2f}x"


def _cell(row: pd.Series | None) -> str:
    if row is None:
        return MISSING
    if not results.passed(row):
        return str(row["status"])
    if not results.is_finite(row["speedup"]) and isinstance(row.get("accuracy"), str):
        return row["accuracy"]  # an --accuracy run measures no speedup
    return _format_speedup(row["speedup"], row["speedup_ci_low"], row["speedup_ci_high"])


def _batch_size(rows: pd.DataFrame) -> str:
    # Normally one value per model; show every distinct one rather than pick.
    return "/".join(str(int(b)) for b in _unique(rows["batch_size"]))


def _geomean_cell(rows: pd.DataFrame) -> str:
    passed = [row["speedup"] for _, row in rows.iterrows() if results.passed(row) and results.is_finite(row["speedup"])]
    if not passed:
        return MISSING
    return f"{stats.geomean(passed):.2f}x (n={len(passed)})"


def speedup_table(df: pd.DataFrame) -> tuple[list[str], list[list[str]]]:
    """Headers and rows of the speedup table.

    One row per model in order of first appearance (the harness runs models
    sorted by name), one column per backend in order of first appearance,
    and a final ``geomean`` row over each backend's passing models.
    """
    latest = results.latest(df)
    backends = _unique(df["backend"])
    headers = ["name", "batch_size", *backends]
    body = []
    for name in _unique(df["name"]):
        model_rows = latest[latest["name"] == name]
        by_backend = {row["backend"]: row for _, row in model_rows.iterrows()}
        body.append([name, _batch_size(model_rows), *(_cell(by_backend.get(b)) for b in backends)])
    if body:
        body.append(["geomean", "", *(_geomean_cell(latest[latest["backend"] == b]) for b in backends)])
    return headers, body


def failures(df: pd.DataFrame) -> list[tuple[str, str, str]]:
    """``(name, backend, status)`` of every pair whose latest row did not pass."""
    latest = results.latest(df)
    return [
        (row["name"], row["backend"], str(row["status"]))
        for _, row in latest.iterrows()
        if not results.passed(row)
    ]


def caption(df: pd.DataFrame) -> str:
    """``"Baseline: <baseline> on <dev>"``; several values are comma-joined."""
    baselines = ", ".join(map(str, _unique(df["baseline"]))) or "unknown"
    devices = ", ".join(map(str, _unique(df["dev"]))) or "unknown device"
    return f"Baseline: {baselines} on {devices}"


# What the compiler-metrics table shows: header -> CSV column.
METRICS = {
    "first call s": "compilation_latency",
    "of it XLA compile s": "first_call_compile_s",
    "compiles/iter": "compiles_per_iter",
    "execute ms/iter": "execute_ms",
    "graphs run/iter": "executes_per_iter",
    "host ms/iter": "host_ms",
    "baseline host ms/iter": "baseline_host_ms",
    "dynamo graphs": "dynamo_graphs",
    "graph breaks": "graph_breaks",
    "recompiles": "recompiles",
    "fallback ops": "fallback_ops",
}
UNSTABLE_REMEDY = "rerun with a larger --repeat, on a quieter machine"


def metrics_table(df: pd.DataFrame) -> tuple[list[str], list[list[str]]]:
    """Compiler metrics of the rows that passed; empty when none were recorded."""
    present = {h: c for h, c in METRICS.items() if c in df.columns}
    recorded = [c for c in present.values() if c != "compilation_latency"]
    if not recorded or not df[recorded].notna().any().any():
        return [], []
    latest = results.latest(df)
    rows = [[row["name"], row["backend"], *(_metric(row[c]) for c in present.values())]
            for _, row in latest.iterrows() if results.passed(row)]
    return ["name", "backend", *present], rows


def _metric(value: Any) -> str:
    if isinstance(value, str):
        return value
    if value is None or pd.isna(value):
        return ""
    if float(value).is_integer():
        return str(int(value))
    return f"{value:.3g}"


def unstable(df: pd.DataFrame) -> list[tuple[str, str, str]]:
    """``(name, backend, reason)`` of every row flagged as unstable."""
    if "unstable" not in df.columns:
        return []
    latest = results.latest(df)
    return [(row["name"], row["backend"], row["unstable"]) for _, row in latest.iterrows()
            if isinstance(row["unstable"], str) and row["unstable"]]


# --------------------------------------------------------------------------
# Render


def _table(df: pd.DataFrame, tablefmt: str) -> str:
    headers, rows = speedup_table(df)
    # Speedup columns right-aligned so the "x" and brackets line up.
    align = ("left", "right", *("right",) * (len(headers) - 2))
    # disable_numparse: cells are already formatted; keep them verbatim.
    return tabulate(rows, headers=headers, tablefmt=tablefmt, colalign=align, disable_numparse=True)


def render_markdown(df: pd.DataFrame, title: str = DEFAULT_TITLE, plot: str | None = None) -> str:
    """Markdown report: title, caption, table, then the sections that apply:
    the plot, failures, unstable measurements, compiler metrics."""
    parts = [f"# {title}", ""]
    if df.empty:
        return "\n".join([*parts, "_No results._", ""])
    parts += [f"{caption(df)}.", "", EXPLANATION, "", _table(df, "github"), ""]
    if plot:
        parts += [f"![speedups]({plot})", ""]
    failed = failures(df)
    if failed:
        listing = tabulate(failed, headers=["name", "backend", "status"], tablefmt="github")
        parts += ["## Failures", "", listing, ""]
    shaky = unstable(df)
    if shaky:
        listing = tabulate(shaky, headers=["name", "backend", "why"], tablefmt="github")
        parts += ["## Unstable measurements", "", f"To firm them up, {UNSTABLE_REMEDY}.", "",
                  listing, ""]
    headers, rows = metrics_table(df)
    if rows:
        parts += ["## Compiler metrics", "",
                  tabulate(rows, headers=headers, tablefmt="github", disable_numparse=True), ""]
    return "\n".join(parts)


def render_console(df: pd.DataFrame) -> str:
    """Plain-text report for the terminal: caption line, table, and a warning
    per unstable measurement."""
    if df.empty:
        return "No results.\n"
    text = f"{caption(df)}\n\n{_table(df, 'simple')}\n"
    for name, backend, why in unstable(df):
        text += f"\nwarning: {name} / {backend} may be unstable ({why}); {UNSTABLE_REMEDY}."
    return text + ("\n" if unstable(df) else "")


def write_markdown(csv_path: str | os.PathLike, title: str | None = None,
                   plot: str | None = None) -> Path:
    """Render the CSV at ``csv_path`` into the ``.md`` beside it; return its path.

    Written to a temporary file and renamed, so a reader never sees half a
    report.  The default title names the run (the CSV's stem).
    """
    df = results.read_rows(csv_path)
    text = render_markdown(df, title=title or f"{DEFAULT_TITLE}: {Path(csv_path).stem}", plot=plot)
    target = results.markdown_path(csv_path)
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, target)
    return target
