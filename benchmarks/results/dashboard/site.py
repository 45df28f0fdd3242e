"""Writing the site: ``SITE/index.html``, its assets, and the data a reader
loads when choosing a model or two nights.

The page is ``assets/index.html`` (a ``string.Template``) filled with the
tables written here and one JSON blob of the trends (``page_data``); its
script, style and the Plotly library (the *basic* bundle: scatter and bar
charts, a quarter of the full library's size, which is what lets a year of
history draw its first chart quickly) are copied beside it under
``assets/``.  Each model's series, per group, is a small script under
``data/models/`` that the page loads when the model is chosen: a script
element, not ``fetch``, so the page also works opened from disk.
"""
from __future__ import annotations

import html
import json
import shutil
from importlib import resources
from pathlib import Path
from string import Template
from typing import Sequence

import pandas as pd

from benchmarks.results import store

from benchmarks.results.dashboard import aggregate, pairs
from benchmarks.nightly.night import COMPARE_MD, FAIL, REPORT, Night, listed_dates, missing_dates

ASSETS = ("dashboard.css", "dashboard.js", "plotly-basic.min.js")
TEMPLATE = "index.html"
# Files of a night copied into the site and linked from its table row.
LINKED = {"report": REPORT, "comparison": COMPARE_MD}
# Longer series are drawn as bare lines: a marker is an SVG node, and 4 x 365
# of them per chart cost more time to draw than the rest of the chart.
MARKER_LIMIT = 60
COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
          "#bcbd22", "#17becf")
COMMIT_CHARS = 7


def asset(name: str) -> str:
    """The text of one of the package's page files (``assets/``)."""
    return resources.files(__package__).joinpath("assets", name).read_text(encoding="utf-8")


def script_json(data) -> str:
    """``data`` as JSON that can sit inside a ``<script>`` element: "<" is
    escaped, so no string in it (a model name, an error) can close the
    element; JSON reads \\u003c back as "<"."""
    return json.dumps(data, separators=(",", ":"), allow_nan=False).replace("<", "\\u003c")


# --------------------------------------------------------------------------
# The data


def page_data(nights: Sequence[Night], history: pd.DataFrame, repo_url: str | None = None,
              baseline_night: int | None = None, compared: Sequence[tuple[int, int]] = ()) -> dict:
    """The page's blob: the nights, their gates, commits and CI runs, the
    pairs of nights ``compared`` (and their files), and per group its lines,
    models and trends (``aggregate.line_trend``) and the latest night's
    summary (``aggregate.latest_summary``)."""
    count = len(nights)
    ad_hoc = frozenset(i for i, n in enumerate(nights) if n.ad_hoc)  # never a baseline, not in the trends
    lines = sorted(history["series"].unique())
    commits, per_night = aggregate.night_commits(history, count)
    groups = []
    for index, (label, rows) in enumerate(history.groupby("group", sort=True)):
        memory = aggregate.memory_column(rows)
        first = rows.iloc[0]
        models = sorted(rows["name"].dropna().astype(str).unique())
        groups.append({
            "label": str(label), "suite": first["suite"], "mode": first["mode"], "dtype": first["dtype"],
            "memory": memory, "lines": sorted(rows["series"].unique()), "models": models,
            "modelFiles": [model_file(index, i) for i in range(len(models))],
            "trends": {str(s): aggregate.line_trend(own, count, memory, ad_hoc) for s, own in rows.groupby("series")},
            "summary": store.plain(aggregate.latest_summary(rows, baseline_night, ad_hoc)),  # nan -> null
        })
    return {
        "nights": [n.date for n in nights],
        "verdicts": [n.verdict for n in nights],
        "failedGate": [i for i, n in enumerate(nights) if n.gate_failed],
        "states": [n.state for n in nights],
        "runUrls": [n.run_url for n in nights],
        "commits": commits,
        "nightCommits": per_night,
        "repoUrl": repo_url,
        "lines": lines,
        "colors": {b: COLORS[i % len(COLORS)] for i, b in enumerate(lines)},
        "ranges": aggregate.ranges(count),
        "markerLimit": MARKER_LIMIT,
        "groups": groups,
        "pairs": {f"{a},{b}": pairs.pair_file(a, b) for a, b in compared},
    }


def model_file(group: int, model: int) -> str:
    return f"data/models/g{group}-m{model}.js"


def model_scripts(data: dict, history: pd.DataFrame) -> dict[str, str]:
    """Per model file: the script that hands the page that model's series."""
    files = {}
    by_group = dict(tuple(history.groupby("group", sort=True)))
    for group in data["groups"]:
        rows = by_group[group["label"]]
        by_model = dict(tuple(rows.groupby("name", sort=True)))
        for name, path in zip(group["models"], group["modelFiles"]):
            series = aggregate.model_series(by_model[name], len(data["nights"]), group["memory"], data["commits"])
            files[path] = f"dashboardLoaded({script_json(path)},{script_json(series)});\n"
    return files


# --------------------------------------------------------------------------
# Tables written into the page


def _commit_link(sha: str, repo_url: str | None) -> str:
    short = html.escape(sha[:COMMIT_CHARS])
    if not repo_url:
        return f'<code title="{html.escape(sha)}">{short}</code>'
    return f'<a class="commit" href="{html.escape(repo_url)}/commit/{html.escape(sha)}"><code>{short}</code></a>'


def night_links(data: dict, night: int) -> str:
    """A night's commits and CI run, as links."""
    parts = [_commit_link(data["commits"][c], data["repoUrl"]) for c in data["nightCommits"][night]]
    run = data["runUrls"][night]
    if run:
        parts.append(f'<a class="run" href="{html.escape(run)}">CI run</a>')
    return " ".join(parts) or "-"


def nights_table(nights: Sequence[Night], data: dict, links: dict[str, dict[str, str]]) -> str:
    rows = []
    for index in reversed(range(len(nights))):  # newest first
        night = nights[index]
        date = html.escape(night.date) + (' <span class="ad-hoc" title="dispatched with its own settings: '
                                          'never a baseline">ad-hoc</span>' if night.ad_hoc else "")
        verdict = night.verdict or (f"NOT JUDGED: {night.not_judged}" if night.not_judged else "-")
        if night.state and not verdict.upper().startswith(night.state.upper()):  # old words may not say so
            verdict = f"{night.state.upper()}: {verdict}"
        cells = [date, html.escape(verdict), night_links(data, index)]
        for kind in LINKED:
            href = links.get(night.date, {}).get(kind)
            cells.append(f'<a href="{html.escape(href)}">{kind}</a>' if href else "-")
        # Red for a regression or a gate that never finished, amber for the
        # other states that are not green (suspected, unjudged).
        css = ' class="fail"' if night.state == FAIL or night.not_judged else \
            ' class="not-green"' if night.gate_failed else ""
        rows.append(f'<tr{css} data-night="{index}" data-state="{night.state or ""}">' + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    head = "<tr><th>night</th><th>gate</th><th>commit, CI run</th><th>report</th><th>comparison</th></tr>"
    missing = missing_dates([n.date for n in nights if not n.ad_hoc])
    gap = (f'<p class="missing" id="missing-nights">Missing nights (no scheduled night ran): '
           f'{html.escape(listed_dates(missing, limit=30))}</p>' if missing else "")
    return gap + f'<table id="nights"><thead>{head}</thead><tbody>{"".join(rows)}</tbody></table>'


def _number(value, fmt: str, suffix: str = "") -> str:
    return "-" if value is None or not pd.notna(value) else format(value, fmt) + suffix


def _delta(value, kind: str) -> str:
    """A change cell: good or bad by the direction that is better."""
    if value is None or not pd.notna(value):
        return ""
    text = f"{value:+d}" if kind == "count" else f"{value:+.1%}"
    better = value > 0 if kind in ("count", "up") else value < 0
    css = "same" if abs(value) < (1 if kind == "count" else 0.005) else ("better" if better else "worse")
    return f' <span class="delta {css}">{text}</span>'


SUMMARY_HEAD = ("line", "pass rate", "geomean speedup", "mean first call", "memory compression")


def summary_table(group: dict, data: dict) -> str:
    """The latest night's table of one group (``aggregate.latest_summary``)."""
    s = group["summary"]
    nights = data["nights"]
    base = s["baseline"]
    caption = (f'{html.escape(group["label"])}: night {html.escape(nights[s["latest"]])} '
               f'({night_links(data, s["latest"])}), change from '
               + (html.escape(nights[base]) if base is not None else "no earlier night"))
    body = []
    for line, n in s["lines"].items():
        change = n["change"] or {}
        before = n["baseline"]
        cells = [
            f'<span class="swatch" style="background:{data["colors"][line]}"></span>{html.escape(line)}',
            f'{n["passed"]}/{n["total"]}' + (_delta(n["passed"] - before["passed"], "count") if before else ""),
            _number(n["geomean"], ".3f", "x") + _delta(change.get("geomean"), "up"),
            _number(n["compile_s"], ".2f", " s") + _delta(change.get("compile_s"), "down"),
            _number(n["memory"], ".3f", "x") + _delta(change.get("memory"), "up"),
        ]
        body.append(f'<tr data-line="{html.escape(line)}">' + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    head = "".join(f"<th>{h}</th>" for h in SUMMARY_HEAD)
    return (f'<table class="summary" data-group="{html.escape(group["label"])}"><caption>{caption}</caption>'
            f'<thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>')


# --------------------------------------------------------------------------
# Writing


def copy_linked(nights: Sequence[Night], site: Path) -> dict[str, dict[str, str]]:
    """Copy each night's report and comparison into the site; their links."""
    links: dict[str, dict[str, str]] = {}
    for night in nights:
        for kind, name in LINKED.items():
            source = night.folder / name
            if source.is_file():
                target = site / "nights" / night.date / name
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(source, target)
                links.setdefault(night.date, {})[kind] = f"nights/{night.date}/{name}"
    return links


def render_page(data: dict, nights: Sequence[Night], links: dict[str, dict[str, str]], title: str,
                gate_failures: str = "") -> str:
    """The whole ``index.html``."""
    first, last = data["nights"][0], data["nights"][-1]
    models = len({m for g in data["groups"] for m in g["models"]})
    summary = (f"{len(data['nights'])} nights ({first} to {last}), {models} models, "
               f"lines: {', '.join(data['lines']) or 'none'}")
    return Template(asset(TEMPLATE)).substitute(
        title=html.escape(title),
        summary=html.escape(summary),
        summary_tables="".join(summary_table(g, data) for g in data["groups"]) or "<p>No rows.</p>",
        gate_failures=gate_failures or "<p>No night's gate failed.</p>",
        nights_table=nights_table(nights, data, links),
        blob=script_json(data),
    )


def write(site: Path, files: dict[str, str]) -> None:
    """Write ``files`` (path under ``site`` -> text); each file whole or not at all."""
    for name, text in files.items():
        path = site / name
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)  # a reader never sees half a page


def pair_scripts(compared: dict[tuple[int, int], "pairs.compare.Comparison"]) -> dict[str, str]:
    """Per pair of nights compared: the script that hands the page its table."""
    return {pairs.pair_file(a, b): f"dashboardLoaded({script_json(pairs.pair_file(a, b))},"
                                   f"{script_json(store.plain(pairs.pair_data(c)))});\n"
            for (a, b), c in compared.items()}


def site_files(data: dict, nights: Sequence[Night], history: pd.DataFrame, links: dict[str, dict[str, str]],
               title: str, compared: dict | None = None) -> dict[str, str]:
    """Everything the site holds but the copied reports: assets, data, page
    (last, so a page never names data not yet written)."""
    files = {f"assets/{name}": asset(name) for name in ASSETS}
    files.update(model_scripts(data, history))
    files.update(pair_scripts(compared or {}))
    files["index.html"] = render_page(data, nights, links, title, pairs.gate_failures_html(nights, data))
    return files
