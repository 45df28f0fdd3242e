"""The summary PyTorch's compiler dashboard (the HUD) shows per suite and
backend, computed from a run's rows: pass rate (``x%, p/t``), geomean
speedup over the passing models, mean compilation time and mean peak-memory
compression ratio over them, each with the HUD's mark where it is below the
HUD's line.

``summarise(df)`` returns ``Summary`` values; ``render(summaries)`` the
markdown table; ``SUITES`` names the suites it is drawn for (PyTorch's).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from benchmarks.results import stats, store

SUITES = ("torchbench", "huggingface", "timm_models")
# The HUD's lines: below them, a cell is marked.
PASS_RATE_LINE = 0.90
GEOMEAN_LINE = 0.95
COMPRESSION_LINE = 0.90


@dataclass(frozen=True)
class Summary:
    suite: str
    backend: str
    passed: int
    total: int
    geomean: float  # nan for an accuracy run (no speedups) or none passing
    compilation_s: float  # mean over the passing models with one; nan without
    compression: float  # mean over the passing models with one; nan without

    @property
    def pass_rate(self) -> float:
        return self.passed / self.total if self.total else math.nan

    @property
    def marks(self) -> tuple[str, ...]:
        """The columns the HUD would mark, in its words."""
        found = []
        if self.pass_rate < PASS_RATE_LINE:
            found.append("pass rate")
        if self.geomean < GEOMEAN_LINE:
            found.append("geomean speedup")
        if self.compression < COMPRESSION_LINE:
            found.append("compression ratio")
        return tuple(found)


def _passed(row: dict) -> bool:
    """A pass as the HUD counts it: an accuracy verdict of pass, or a
    performance row that ran (with a speedup)."""
    if store.measures(row) == "accuracy":
        return row.get("accuracy") in ("pass", "pass_due_to_skip")
    return store.passed(row)


def _mean(values) -> float:
    kept = [v for v in values if store.is_finite(v) and v != 0]
    return sum(kept) / len(kept) if kept else math.nan


def summarise(df: pd.DataFrame) -> list[Summary]:
    """One Summary per (suite, backend) of PyTorch's suites in ``df``."""
    if df.empty or "suite" not in df:
        return []
    found = []
    latest = store.latest(df)
    for (suite, backend), rows in latest.groupby(["suite", "backend"], sort=True):
        if suite not in SUITES:
            continue
        records = rows.to_dict("records")
        passing = [r for r in records if _passed(r)]
        timed = [r for r in passing if store.measures(r) == "performance"]
        geomean, _ = stats.geomean_of_groups([r.get("speedup") for r in timed], [r["name"] for r in timed])
        found.append(Summary(str(suite), str(backend), len({r["name"] for r in passing}),
                             len({r["name"] for r in records}), geomean,
                             _mean(r.get("compilation_latency") for r in passing),
                             _mean(r.get("compression_ratio") for r in passing)))
    return found


def _number(value: float, text: str, mark: bool) -> str:
    if not math.isfinite(value):
        return "-"
    return f"**{text}** ▼" if mark else text


def render(summaries: list[Summary]) -> tuple[list[str], list[list[str]]]:
    headers = ["suite", "backend", "pass rate", "geomean speedup", "compilation s", "compression ratio"]
    rows = []
    for s in summaries:
        marks = s.marks
        rate = f"{s.pass_rate:.0%}, {s.passed}/{s.total}" if s.total else "-"
        rows.append([s.suite, s.backend, f"**{rate}** ▼" if "pass rate" in marks else rate,
                     _number(s.geomean, f"{s.geomean:.2f}x", "geomean speedup" in marks),
                     _number(s.compilation_s, f"{s.compilation_s:.1f}", False),
                     _number(s.compression, f"{s.compression:.2f}x", "compression ratio" in marks)])
    # An accuracy run has no speedups, memory or compile times: columns of dashes go.
    keep = [i for i in range(len(headers)) if i < 3 or any(row[i] != "-" for row in rows)]
    return [headers[i] for i in keep], [[row[i] for i in keep] for row in rows]


_PHRASES = {"geomean speedup": "the geomean speedup", "compilation s": "the mean compilation time (s)",
            "compression ratio": "the mean peak-memory compression ratio"}
_LINES = {"pass rate": f"a pass rate below {PASS_RATE_LINE:.0%}",
          "geomean speedup": f"a geomean below {GEOMEAN_LINE}x",
          "compression ratio": f"a compression ratio below {COMPRESSION_LINE}x"}


def note(headers: list[str]) -> str:
    """What the summary's columns mean, for the columns shown."""
    text = ("As PyTorch's compiler dashboard summarises a suite: the pass rate counts the models that "
            "passed (the accuracy verdict, or in a performance run a speedup) of those the run has")
    over = [_PHRASES[h] for h in headers if h in _PHRASES]
    if over:
        text += f"; {', '.join(over)} {'is' if len(over) == 1 else 'are'} over the passing models"
    lines = [_LINES[h] for h in headers if h in _LINES]
    return f"{text}. ▼ marks what the dashboard marks: {', '.join(lines)}."
