"""Two nights side by side, judged as ``runner.py compare`` judges them.

``gate_failures_html`` lists, for each night the gate did not pass, its
state and the rows it flagged, read from the fields of the night's own
``compare.json`` (each row judged against its own earlier nights), each
linked to the night and the one before it side by side.  ``comparisons`` runs ``benchmarks.results.compare.compare`` on the
pairs of nights a reader can pick (every pair among the last nights, and
each failed gate's pair), when the page is built: the browser only shows
the verdicts, it never judges.
"""
from __future__ import annotations

import html
from typing import Sequence

from benchmarks.results import compare
from benchmarks.nightly.night import RESULT, Night, flagged_rows
from benchmarks.results.dashboard.history import warn

def gate_pair(nights: Sequence[Night], index: int) -> tuple[int, int] | None:
    """The two nights a flagged gate is shown with: the scheduled night
    before it (an ad-hoc night is nobody's previous night)."""
    if not index:
        return None
    return next((i for i in range(index - 1, -1, -1) if not nights[i].ad_hoc), index - 1), index


def _change(row: dict) -> str:
    change = row.get("change")
    return f"{change:+.1%}" if isinstance(change, (int, float)) and change == change else "-"


def _p(row: dict) -> str:
    p = row.get("p_value")
    return "-" if not isinstance(p, (int, float)) or p != p else ("<0.001" if p < 0.001 else f"{p:.3f}")


def gate_failures_html(nights: Sequence[Night], data: dict) -> str:
    """Per night the gate did not pass, newest first: its state, its
    reasons and the rows it flagged."""
    del data
    parts = []
    for index in reversed(range(len(nights))):
        night = nights[index]
        if not night.gate_failed:
            continue
        shown = gate_pair(nights, index)
        body = []
        for r in flagged_rows(night.gate):
            model = html.escape(str(r["name"]))
            link = f'<a href="#compare={shown[0]},{shown[1]}&amp;row={model}">{model}</a>' if shown else model
            body.append(f'<tr class="mark-{html.escape(str(r["mark"]))}">' + "".join(f"<td>{c}</td>" for c in (
                link, html.escape(str(r["backend"])), html.escape(str(r["metric"])), html.escape(str(r["mark"])),
                _change(r), html.escape(_p(r)), html.escape(f"{r['rule']}: {r['note']}"))) + "</tr>")
        head = "".join(f"<th>{h}</th>" for h in ("model", "backend", "metric", "mark", "change", "p",
                                                  "rule: note"))
        parts.append(f'<div class="gate-failure" data-night="{index}"><h3>{html.escape(night.date)}: '
                     f'{html.escape(night.verdict or "")}</h3>'
                     + (f'<table><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'
                        if body else '<p>No row was flagged: see the reasons above.</p>') + '</div>')
    return "".join(parts)


def pairs_to_compare(nights: Sequence[Night], recent: int) -> list[tuple[int, int]]:
    """Every (old, new) pair among the last ``recent`` nights whose old
    night is a scheduled one (an ad-hoc night is nobody's baseline), and each
    failed gate's pair (its reference night, or the night before, and it)."""
    last = range(max(0, len(nights) - recent), len(nights))
    wanted = {(a, b) for a in last for b in last if a < b and not nights[a].ad_hoc}
    wanted.update(gate_pair(nights, i) for i, night in enumerate(nights) if night.gate_failed and i)
    return sorted(wanted)


def comparisons(nights: Sequence[Night], pairs: Sequence[tuple[int, int]]) -> dict[tuple[int, int], compare.Comparison]:
    """``compare.compare`` of each (old, new) pair of night indices whose
    results are on disk, with compare's default policy: what ``runner.py
    compare OLD NEW`` decides."""
    found = {}
    for old, new in pairs:
        a, b = nights[old].folder / RESULT, nights[new].folder / RESULT
        if not (a.is_file() and b.is_file()):
            continue
        try:
            found[(old, new)] = compare.compare(a, b)
        except (OSError, ValueError) as err:
            warn(f"cannot compare {nights[old].date} with {nights[new].date}: {err}")
    return found


def pair_file(old: int, new: int) -> str:
    return f"data/pairs/n{old}-n{new}.js"


def pair_data(comparison: compare.Comparison) -> dict:
    """What the page's two-night table shows of one comparison."""
    gating = comparison.gating_marks
    rows = [{"name": r.name, "backend": r.backend, "mark": r.mark, "gating": r.mark in gating,
             "oldStatus": r.old_status, "newStatus": r.new_status,
             "oldSpeedup": r.old_speedup, "newSpeedup": r.new_speedup,
             "oldRatio": r.old_ratio, "newRatio": r.new_ratio, "change": r.change, "p": r.p_value,
             "changeLow": getattr(r, "change_low", None), "changeHigh": getattr(r, "change_high", None),
             "detectable": r.detectable, "note": r.note} for r in comparison.rows]
    return {"old": comparison.old_label, "new": comparison.new_label, "verdict": compare.verdict(comparison),
            "summary": compare.summary(comparison), "rule": compare.rule(comparison), "rows": rows}
