"""The nightly history as a static site: ``results/nightly/<date>/`` -> ``SITE/index.html``.

``python runner.py dashboard ROOT -o SITE`` (``make dashboard``) reads every
night under ROOT (folders named ``YYYY-MM-DD`` holding a ``performance.csv``,
as ``benchmarks.nightly`` writes them) and writes one self-contained page,
``SITE/index.html``, with:

* per backend, the geomean speedup over the models that passed each night,
  with its 95% confidence band, and the nights whose gate failed marked;
* per model (chosen from a list; ``index.html#model=NAME`` links to one):
  speedup with its confidence band, backend and baseline latency, first-call
  (compile) time, and a timeline of the nights each backend failed, with the
  status and error on hover;
* a table of the nights with the gate's verdict and links to each night's
  markdown report and comparison, copied to ``SITE/nights/<date>/``.

No server and no network: Plotly's JavaScript is inlined
(``include_plotlyjs=True``), so the page works offline and as a CI artifact.
To stay fast with a year of history (365 nights x 40 models x 4 backends),
the per-backend geomeans are computed here, not in the browser; every
per-model series travels in ONE JSON blob, compact (columnar, 4 significant
digits); and per-model charts are drawn only for the model on screen.

The band of a geomean: each row's 95% bootstrap interval gives the standard
error of its log speedup, se_i = (ln high - ln low) / (2 * 1.96); the mean of
n logs has standard error sqrt(sum se_i^2) / n, so the band is
exp(mean log +- 1.96 * that).  It says how far measurement noise alone could
move that night's geomean; rows without an interval add nothing to it.
"""
from __future__ import annotations

import argparse
import html
import json
import math
import re
import shutil
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from benchmarks import results
from benchmarks.usage import Parser, UsageError, guarded

PROG = "runner.py dashboard"
RESULT = "performance.csv"  # the merged run of a night (benchmarks.nightly.RESULT)
NIGHT_NAME = re.compile(r"^\d{4}-\d{2}-\d{2}$")
# Files of a night copied into the site and linked from its table row.
LINKED = {"report": "performance.md", "comparison": "compare.md"}
VERDICT_FILE = "compare.json"  # compare --json: the gate's verdict
Z95 = 1.959963984540054
DIGITS = 4  # significant digits kept in the page's data
# Longer series are drawn as bare lines: a marker is an SVG node, and 4 x 365
# of them per chart cost more time to draw than the rest of the chart.
MARKER_LIMIT = 60
ERROR_CHARS = 160
COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
          "#bcbd22", "#17becf")


# --------------------------------------------------------------------------
# Reading the nights


@dataclass(frozen=True)
class Night:
    """One night's folder: its name (a date) and the verdict of its gate."""

    date: str
    folder: Path
    verdict: str | None = None


def find_nights(root: Path) -> list[Night]:
    """The nights under ``root`` in date order; a folder without a result
    (a run still going, or one that died) is skipped with a warning."""
    if not root.is_dir():
        raise UsageError(f"{root}: no such folder")
    nights = []
    for folder in sorted(p for p in root.iterdir() if p.is_dir() and NIGHT_NAME.match(p.name)):
        if not (folder / RESULT).is_file():
            _warn(f"{folder}: no {RESULT}; night skipped")
            continue
        nights.append(Night(folder.name, folder, _verdict(folder / VERDICT_FILE)))
    if not nights:
        raise UsageError(f"{root}: no nights found (folders YYYY-MM-DD with a {RESULT})")
    return nights


def _verdict(path: Path) -> str | None:
    try:
        return str(json.loads(path.read_text(encoding="utf-8"))["verdict"])
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError):
        _warn(f"{path}: unreadable; verdict not shown")
        return None


def _warn(message: str) -> None:
    print(f"{PROG}: warning: {message}", file=sys.stderr)


def load_history(nights: Sequence[Night]) -> pd.DataFrame:
    """Every night's rows in one frame (see :func:`combine`); an unreadable
    night is skipped with a warning rather than hiding a year of history."""
    frames = []
    for index, night in enumerate(nights):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # a torn last line: the night is still shown
                frames.append((index, results.read_rows(night.folder / RESULT)))
        except (OSError, ValueError) as err:
            detail = (str(err).splitlines() or [type(err).__name__])[0]
            _warn(f"{night.folder / RESULT}: unreadable ({detail}); night skipped")
    if not frames:
        raise UsageError("no night could be read")
    return combine(frames)


def combine(frames: Sequence[tuple[int, pd.DataFrame]]) -> pd.DataFrame:
    """(night index, rows) pairs -> one frame: the last row of each
    experiment per night, a ``night`` column, a boolean ``passed`` column and
    the ``series`` (line) each row belongs to."""
    history = pd.concat([results.latest(df).assign(night=index) for index, df in frames], ignore_index=True)
    history["passed"] = [results.passed(row) for row in history[["status", "speedup"]].to_dict("records")]
    history["series"] = series_labels(history)
    return history


def series_labels(history: pd.DataFrame) -> pd.Series:
    """What a line on the page is: the backend, plus the settings (dtype,
    batch size, ...; ``results.SETTING_COLUMNS``) that differ within the
    history, so that two settings of one backend never share a line:
    ``"openxla_eval"`` or ``"openxla_eval [dtype=bf16]"``."""
    if history.empty:
        return pd.Series([], index=history.index, dtype=object)
    # One experiment_key per distinct key (it normalises: an older row gets
    # the settings it implied), not per row: a year has 58,000 rows.
    columns = [c for c in (*results.KEY_COLUMNS, "schema_version") if c in history]
    group = history.groupby(columns, dropna=False, sort=False).ngroup().to_numpy()
    first = ~pd.Series(group).duplicated().to_numpy()
    keys = [results.experiment_key(row) for row in history.loc[first].to_dict("records")]
    settings = pd.DataFrame([["-" if v is None else str(v) for v in k.settings] for k in keys],
                            columns=list(results.SETTING_COLUMNS))
    varying = [c for c in settings if settings[c].nunique() > 1]
    labels = np.empty(group.max() + 1, dtype=object)
    for g, key, (_, row) in zip(group[first], keys, settings.iterrows()):
        labels[g] = str(key.backend) + (" [" + ", ".join(f"{c}={row[c]}" for c in varying) + "]" if varying else "")
    return pd.Series(labels[group], index=history.index)


# --------------------------------------------------------------------------
# Aggregating


def _compact(values) -> list:
    """Floats with DIGITS significant digits; nan and inf become null."""
    out = []
    for v in np.asarray(values, dtype=float):
        out.append(float(f"{v:.{DIGITS}g}") if math.isfinite(v) else None)
    return out


def geomean_band(speedups, lows, highs) -> tuple[float, float, float]:
    """Geomean of ``speedups`` and its 95% band (see the module docstring)."""
    s = np.asarray(speedups, dtype=float)
    lo, hi = np.asarray(lows, dtype=float), np.asarray(highs, dtype=float)
    ok = np.isfinite(s) & (s > 0)
    if not ok.any():
        return math.nan, math.nan, math.nan
    logs = np.log(s[ok])
    with np.errstate(divide="ignore", invalid="ignore"):
        se = (np.log(hi[ok]) - np.log(lo[ok])) / (2 * Z95)
    se = np.where(np.isfinite(se) & (se >= 0), se, 0.0)
    center, spread = logs.mean(), Z95 * math.sqrt(float(np.sum(se**2))) / logs.size
    return math.exp(center), math.exp(center - spread), math.exp(center + spread)


def backend_geomeans(history: pd.DataFrame, backends: Sequence[str]) -> dict[str, dict]:
    """Per backend: night indices, geomean speedup, band and model count
    (``geomean_band`` for every (backend, night) at once)."""
    ok = history[history["passed"] & np.isfinite(history["speedup"]) & (history["speedup"] > 0)]
    with np.errstate(divide="ignore", invalid="ignore"):
        se = (np.log(ok["speedup_ci_high"]) - np.log(ok["speedup_ci_low"])) / (2 * Z95)
    frame = pd.DataFrame({"backend": ok["series"], "night": ok["night"], "log": np.log(ok["speedup"]),
                          "var": np.where(np.isfinite(se) & (se >= 0), se, 0.0) ** 2})
    stats = frame.groupby(["backend", "night"], sort=True).agg(
        log=("log", "mean"), var=("var", "sum"), n=("log", "size"))
    spread = Z95 * np.sqrt(stats["var"]) / stats["n"]
    stats = stats.assign(value=np.exp(stats["log"]), low=np.exp(stats["log"] - spread),
                         high=np.exp(stats["log"] + spread))
    out = {}
    for backend in backends:
        rows = stats.loc[backend] if backend in stats.index.get_level_values(0) else stats.iloc[:0]
        out[backend] = {"i": [int(i) for i in rows.index], "value": _compact(rows["value"]),
                        "low": _compact(rows["low"]), "high": _compact(rows["high"]),
                        "n": [int(n) for n in rows["n"]]}
    return out


def _error_text(row: pd.Series) -> str:
    error = row.get("error")
    text = "" if error is None or pd.isna(error) else str(error)
    return text if len(text) <= ERROR_CHARS else text[: ERROR_CHARS - 3] + "..."


def model_series(history: pd.DataFrame) -> dict[str, dict[str, dict]]:
    """Per model and backend: the passing nights' numbers and the failures."""
    series: dict[str, dict[str, dict]] = {}
    for (name, backend), group in history.groupby(["name", "series"], sort=True):
        group = group.sort_values("night")
        ok = group[group["passed"]]
        failed = group[~group["passed"]]
        series.setdefault(str(name), {})[str(backend)] = {
            "i": ok["night"].astype(int).tolist(),
            "lat": _compact(ok["abs_latency"]),
            "base": _compact(ok["baseline_latency"]),
            "sp": _compact(ok["speedup"]),
            "lo": _compact(ok["speedup_ci_low"]),
            "hi": _compact(ok["speedup_ci_high"]),
            "comp": _compact(ok["compilation_latency"]),
            "fail": [[int(r["night"]), str(r["status"]) if not pd.isna(r["status"]) else "unknown",
                      _error_text(r)] for _, r in failed.iterrows()],
        }
    return series


def page_data(nights: Sequence[Night], history: pd.DataFrame) -> dict:
    """The page's one data blob."""
    backends = sorted(history["series"].unique())
    models = sorted(history["name"].dropna().astype(str).unique())
    return {
        "nights": [n.date for n in nights],
        "failedGate": [i for i, n in enumerate(nights) if n.verdict and n.verdict.startswith("FAIL")],
        "verdicts": [n.verdict for n in nights],
        "backends": backends,
        "models": models,
        "colors": {b: COLORS[i % len(COLORS)] for i, b in enumerate(backends)},
        "markerLimit": MARKER_LIMIT,
        "geomean": backend_geomeans(history, backends),
        "series": model_series(history),
    }


# --------------------------------------------------------------------------
# Rendering


def overview_figure(data: dict):
    """Geomean speedup per backend over the nights, with bands and gate failures."""
    import plotly.graph_objects as go

    nights = data["nights"]
    fig = go.Figure()
    for backend in data["backends"]:
        g, color = data["geomean"][backend], data["colors"][backend]
        x = [nights[i] for i in g["i"]]
        fig.add_trace(go.Scatter(x=x, y=g["high"], mode="lines", line={"width": 0}, hoverinfo="skip",
                                 showlegend=False, legendgroup=backend))
        fig.add_trace(go.Scatter(x=x, y=g["low"], mode="lines", line={"width": 0}, fill="tonexty",
                                 fillcolor=_transparent(color), hoverinfo="skip", showlegend=False,
                                 legendgroup=backend))
        fig.add_trace(go.Scatter(
            x=x, y=g["value"], mode=_mode(len(x)), name=backend, legendgroup=backend,
            line={"color": color}, marker={"size": 4}, customdata=list(zip(g["low"], g["high"], g["n"])),
            hovertemplate="%{x}<br>geomean %{y:.3f}x<br>95% band %{customdata[0]:.3f}-%{customdata[1]:.3f}"
                          "<br>%{customdata[2]} models<extra>%{fullData.name}</extra>"))
    if data["failedGate"]:
        fig.add_trace(go.Scatter(
            x=[nights[i] for i in data["failedGate"]], y=[1] * len(data["failedGate"]), yaxis="y2",
            mode="markers", name="gate failed", marker={"symbol": "triangle-down", "color": "#d62728", "size": 9},
            customdata=[data["verdicts"][i] for i in data["failedGate"]],
            hovertemplate="%{x}<br>%{customdata}<extra></extra>"))
    fig.update_layout(
        height=420, margin={"l": 60, "r": 20, "t": 30, "b": 40}, hovermode="closest",
        yaxis={"title": {"text": "geomean speedup (higher is better)"}},
        yaxis2={"overlaying": "y", "range": [0, 1.05], "visible": False, "fixedrange": True},
        legend={"orientation": "h", "y": -0.15}, template="plotly_white")
    return fig


def _mode(points: int) -> str:
    return "lines+markers" if points <= MARKER_LIMIT else "lines"


def _transparent(color: str, alpha: float = 0.2) -> str:
    r, g, b = (int(color[i:i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r},{g},{b},{alpha})"


def _blob(data: dict) -> str:
    # "<" escaped so no string in the data (a model name, an error) can
    # close the <script> element that holds it; JSON reads \u003c back as "<".
    return json.dumps(data, separators=(",", ":"), allow_nan=False).replace("<", "\\u003c")


def _nights_table(nights: Sequence[Night], links: dict[str, dict[str, str]]) -> str:
    rows = []
    for night in reversed(nights):  # newest first
        cells = [html.escape(night.date), html.escape(night.verdict or "-")]
        for kind in LINKED:
            href = links.get(night.date, {}).get(kind)
            cells.append(f'<a href="{html.escape(href)}">{kind}</a>' if href else "-")
        css = ' class="fail"' if night.verdict and night.verdict.startswith("FAIL") else ""
        rows.append(f"<tr{css}>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    head = "<tr><th>night</th><th>gate</th><th>report</th><th>comparison</th></tr>"
    return f'<table id="nights"><thead>{head}</thead><tbody>{"".join(rows)}</tbody></table>'


def render_page(data: dict, nights: Sequence[Night], links: dict[str, dict[str, str]],
                title: str) -> str:
    """The whole ``index.html``."""
    overview = overview_figure(data).to_html(
        include_plotlyjs=True, full_html=False, div_id="overview",
        config={"displaylogo": False, "responsive": True})
    options = "".join(f'<option value="{html.escape(m)}">{html.escape(m)}</option>' for m in data["models"])
    first, last = data["nights"][0], data["nights"][-1]
    return _PAGE.format(
        title=html.escape(title),
        style=_STYLE,
        summary=html.escape(f"{len(data['nights'])} nights ({first} to {last}), {len(data['models'])} models, "
                            f"backends: {', '.join(data['backends'])}"),
        overview=overview,
        options=options,
        nights_table=_nights_table(nights, links),
        blob=_blob(data),
        app=_APP,
    )


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


def write_site(site: Path, nights: Sequence[Night], history: pd.DataFrame,
               title: str = "Nightly benchmark history") -> Path:
    """Write ``site/index.html`` (and the linked reports) from ``history``
    (:func:`combine`'s frame over ``nights``); returns the page's path."""
    data = page_data(nights, history)
    try:
        site.mkdir(parents=True, exist_ok=True)
        links = copy_linked(nights, site)
        index = site / "index.html"
        tmp = index.with_name(".index.html.tmp")
        tmp.write_text(render_page(data, nights, links, title), encoding="utf-8")
        tmp.replace(index)  # a reader never sees half a page
    except OSError as err:
        raise UsageError(f"cannot write the site: {err.filename or site}: {err.strerror or err}") from None
    return index


def build(root: str | Path, site: str | Path, title: str = "Nightly benchmark history") -> Path:
    """Write ``site/index.html`` from the nights under ``root``; returns its path.

    Raises ``UsageError`` on bad input or an unwritable site.
    """
    root, site = Path(root), Path(site)
    if site.exists() and not site.is_dir():
        raise UsageError(f"{site} exists and is not a folder")
    nights = find_nights(root)
    return write_site(site, nights, load_history(nights), title)


# --------------------------------------------------------------------------
# Command line


def build_parser() -> argparse.ArgumentParser:
    p = Parser(prog=PROG, description="Render the nightly history (ROOT/<date>/performance.csv) "
                                       "as a static site that works offline.")
    p.add_argument("root", metavar="ROOT", help="folder of the dated nights, e.g. results/nightly")
    p.add_argument("-o", "--output", metavar="SITE", required=True, help="folder to write index.html into")
    p.add_argument("--title", default="Nightly benchmark history", help="page title")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """0 when the site was written, 2 on bad input."""
    def body() -> int:
        args = build_parser().parse_args(argv)
        index = build(args.root, args.output, args.title)
        print(f"wrote {index}", file=sys.stderr)
        return 0

    return guarded(PROG, body)


_STYLE = """
body { font-family: system-ui, sans-serif; margin: 1.5em auto; max-width: 1200px; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 1.5em; }
.help { color: #555; font-size: 0.9em; }
.chart { min-height: 260px; }
#nights-wrap { max-height: 420px; overflow-y: auto; }
table { border-collapse: collapse; font-size: 0.9em; }
td, th { padding: 2px 10px; border-bottom: 1px solid #eee; text-align: left; }
tr.fail td { background: #fdecea; }
select { font-size: 1em; }
"""

_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{title}</title>
<style>{style}</style>
</head>
<body>
<h1>{title}</h1>
<p id="summary">{summary}</p>
<h2>Geomean speedup per backend</h2>
<p class="help">Over the models that passed that night; shaded: the 95% band from the rows' bootstrap
intervals; red triangles: nights whose gate failed. Hover for values.</p>
{overview}
<h2>Per model</h2>
<label>Model <select id="model">{options}</select></label>
<div id="model-speedup" class="chart"></div>
<div id="model-latency" class="chart"></div>
<div id="model-compile" class="chart"></div>
<div id="model-failures" class="chart"></div>
<h2>Nights</h2>
<div id="nights-wrap">{nights_table}</div>
<script type="application/json" id="dashboard-data">{blob}</script>
<script>{app}</script>
</body>
</html>
"""

# The per-model charts, drawn from the blob when a model is chosen.
_APP = r"""
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("dashboard-data").textContent);
  var config = {displaylogo: false, responsive: true};
  var select = document.getElementById("model");

  function mode(points) { return points.length <= data.markerLimit ? "lines+markers" : "lines"; }
  function dates(indices) { return indices.map(function (i) { return data.nights[i]; }); }
  function rgba(hex, alpha) {
    var n = parseInt(hex.slice(1), 16);
    return "rgba(" + (n >> 16) + "," + ((n >> 8) & 255) + "," + (n & 255) + "," + alpha + ")";
  }
  function layout(title, ytitle, extra) {
    var base = {title: {text: title, x: 0, font: {size: 14}}, height: 300, template: "plotly_white",
                margin: {l: 60, r: 20, t: 40, b: 40}, hovermode: "closest", showlegend: true,
                yaxis: {title: {text: ytitle}, rangemode: "tozero", automargin: true}, xaxis: {type: "date"},
                legend: {orientation: "h", y: -0.2}};
    return Object.assign(base, extra || {});
  }
  function eachBackend(model, fn) {
    var series = data.series[model] || {};
    data.backends.forEach(function (b) { if (series[b]) { fn(b, series[b], data.colors[b]); } });
  }

  function speedupTraces(model) {
    var traces = [];
    eachBackend(model, function (b, s, color) {
      var x = dates(s.i);
      traces.push({x: x, y: s.hi, mode: "lines", line: {width: 0}, hoverinfo: "skip",
                   showlegend: false, legendgroup: b, name: b + " CI"});
      traces.push({x: x, y: s.lo, mode: "lines", line: {width: 0}, fill: "tonexty",
                   fillcolor: rgba(color, 0.2), hoverinfo: "skip", showlegend: false,
                   legendgroup: b, name: b + " CI"});
      traces.push({x: x, y: s.sp, mode: mode(x), name: b, legendgroup: b,
                   line: {color: color}, marker: {size: 4},
                   hovertemplate: "%{x}<br>speedup %{y:.3f}x<extra>%{fullData.name}</extra>"});
    });
    return traces;
  }
  function latencyTraces(model) {
    var traces = [], baseline = null;
    eachBackend(model, function (b, s, color) {
      traces.push({x: dates(s.i), y: s.lat, mode: mode(s.i), name: b, line: {color: color},
                   marker: {size: 4}, hovertemplate: "%{x}<br>%{y:.3f} ms<extra>%{fullData.name}</extra>"});
      if (!baseline) { baseline = s; }
    });
    if (baseline) {
      traces.push({x: dates(baseline.i), y: baseline.base, mode: "lines", name: "baseline",
                   line: {color: "#444", dash: "dot"},
                   hovertemplate: "%{x}<br>%{y:.3f} ms<extra>baseline</extra>"});
    }
    return traces;
  }
  function compileTraces(model) {
    var traces = [];
    eachBackend(model, function (b, s, color) {
      traces.push({x: dates(s.i), y: s.comp, mode: mode(s.i), name: b, line: {color: color},
                   marker: {size: 4}, hovertemplate: "%{x}<br>%{y:.3f} s<extra>%{fullData.name}</extra>"});
    });
    return traces;
  }
  function failureTraces(model) {
    var traces = [];
    eachBackend(model, function (b, s, color) {
      if (!s.fail.length) { return; }
      traces.push({x: s.fail.map(function (f) { return data.nights[f[0]]; }),
                   y: s.fail.map(function () { return b; }),
                   customdata: s.fail.map(function (f) { return [f[1], f[2]]; }),
                   mode: "markers", name: b, marker: {symbol: "x", size: 10, color: "#d62728"},
                   hovertemplate: "%{x}<br>%{customdata[0]}<br>%{customdata[1]}<extra>%{fullData.name}</extra>"});
    });
    return traces;
  }

  function show(model) {
    var failures = failureTraces(model);
    var span = [data.nights[0], data.nights[data.nights.length - 1]];
    var failLayout = layout(failures.length ? model + ": failed nights" : model + ": no failures", "",
      {height: 120 + 25 * data.backends.length, showlegend: false,
       xaxis: {type: "date", range: span},
       yaxis: {type: "category", automargin: true, categoryorder: "array", categoryarray: data.backends, range: [-0.5, data.backends.length - 0.5]}});
    return Promise.all([
      Plotly.react("model-speedup", speedupTraces(model), layout(model + ": speedup over the baseline", "speedup"), config),
      Plotly.react("model-latency", latencyTraces(model), layout(model + ": latency", "ms per iteration"), config),
      Plotly.react("model-compile", compileTraces(model), layout(model + ": first call (trace + compile)", "seconds"), config),
      Plotly.react("model-failures", failures, failLayout, config)
    ]);
  }

  function choose(model) {
    return show(model).then(function () { document.body.dataset.shown = model; });
  }
  function fromHash() {  // index.html#model=NAME links to a model
    var wanted = decodeURIComponent((location.hash.match(/^#model=(.*)$/) || [])[1] || "");
    if (data.models.indexOf(wanted) >= 0) { select.value = wanted; }
  }
  select.addEventListener("change", function () {
    history.replaceState(null, "", "#model=" + encodeURIComponent(select.value));
    choose(select.value);
  });
  window.addEventListener("hashchange", function () { fromHash(); choose(select.value); });
  fromHash();
  choose(select.value).then(function () {
    window.dashboardReadyMs = performance.now();
    document.body.dataset.ready = "true";
  });
})();
"""


if __name__ == "__main__":
    sys.exit(main())
