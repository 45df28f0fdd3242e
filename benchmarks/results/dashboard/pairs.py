"""Two nights side by side, judged as ``runner.py compare`` judges them.

``gate_failures_html`` lists, for each night whose gate failed, the rows
that failed it, read from the night's own ``compare.json`` (what the gate
decided, against whatever reference it used), each linked to the two nights
side by side.  ``comparisons`` runs ``benchmarks.results.compare.compare`` on the
pairs of nights a reader can pick (every pair among the last nights, and
each failed gate's pair), when the page is built: the browser only shows
the verdicts, it never judges.
"""
from __future__ import annotations

import html
import re
from typing import Sequence

from benchmarks.results import compare
from benchmarks.nightly.night import RESULT, Night
from benchmarks.results.dashboard.history import warn

DATE_IN_LABEL = re.compile(r"^(\d{4}-\d{2}-\d{2})/")


def gating_marks(gate: dict) -> frozenset[str]:
    """The marks that failed this gate, under the policy it ran with."""
    policy = gate.get("policy") or {}
    judged = compare.Comparison(rows=[], old_label="", new_label="", threshold=0.0, alpha=0.0, min_samples=0,
                                geomean_ratio=compare.NAN, geomean_n=0,
                                allow_removed=bool(policy.get("allow_removed")),
                                fail_on_inconclusive=bool(policy.get("fail_on_inconclusive")))
    return judged.gating_marks


def reference_night(night: Night, dates: Sequence[str]) -> int | None:
    """The night a gate compared with, when its label names one of ``dates``."""
    found = DATE_IN_LABEL.match(str(night.gate.get("old") or ""))
    return dates.index(found.group(1)) if found and found.group(1) in dates else None


def gate_pair(nights: Sequence[Night], index: int) -> tuple[int, int] | None:
    """The two nights a failed gate is shown with: its reference night when
    its compare.json names one, else the scheduled night before (an ad-hoc
    night is nobody's previous night)."""
    if not index:
        return None
    ref = reference_night(nights[index], [n.date for n in nights])
    if ref is None or ref >= index:
        ref = next((i for i in range(index - 1, -1, -1) if not nights[i].ad_hoc), index - 1)
    return ref, index


def _ratio(value) -> str:
    return f"{value:.3f}" if isinstance(value, (int, float)) else "-"


def _change(row: dict) -> str:
    change = row.get("change")
    if not isinstance(change, (int, float)):
        return "-"
    low, high = row.get("change_low"), row.get("change_high")
    interval = f" [{low:+.1%}, {high:+.1%}]" if isinstance(low, (int, float)) and isinstance(high, (int, float)) else ""
    return f"{change:+.1%}{interval}"


def _detectable(row: dict) -> str:
    value = row.get("detectable")
    return f"{value:.1%}" if isinstance(value, (int, float)) else "-"


def _p(row: dict) -> str:
    p = row.get("p_value")
    return "-" if not isinstance(p, (int, float)) else ("<0.001" if p < 0.001 else f"{p:.3f}")


def gate_failures_html(nights: Sequence[Night], data: dict) -> str:
    """Per failed gate, newest first: its verdict and the rows that failed it."""
    dates = [n.date for n in nights]
    parts = []
    for index in reversed(range(len(nights))):
        night = nights[index]
        if not night.gate_failed:
            continue
        failing = gating_marks(night.gate)
        rows = [r for r in night.gate.get("rows") or () if isinstance(r, dict) and r.get("mark") in failing]
        ref = reference_night(night, dates)
        against = html.escape(dates[ref]) if ref is not None else html.escape(str(night.gate.get("old") or "?"))
        shown = gate_pair(nights, index)
        body = []
        for r in rows:
            pair = f"{shown[0]},{shown[1]}" if shown else ""
            model = html.escape(str(r.get("name")))
            link = (f'<a href="#compare={pair}&amp;row={model}">{model}</a>' if pair else model)
            body.append("<tr class=\"mark-{}\">".format(html.escape(str(r.get("mark")).replace(" ", "-")))
                        + "".join(f"<td>{c}</td>" for c in (
                            link, html.escape(str(r.get("backend"))), html.escape(str(r.get("mark"))),
                            f'{_ratio(r.get("old_ratio"))} → {_ratio(r.get("new_ratio"))}', _change(r), _p(r),
                            _detectable(r), html.escape(str(r.get("note") or "")))) + "</tr>")
        head = "".join(f"<th>{h}</th>" for h in ("model", "backend", "mark", "backend/baseline old → new",
                                                  "change [95% interval]", "p", "detectable", "note"))
        policy_rows = failed_policies_html(night.gate)
        parts.append(f'<div class="gate-failure" data-night="{index}"><h3>{html.escape(night.date)}: '
                     f'{html.escape(night.verdict or "")}, against {against}</h3>'
                     + (f'<table><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>' if body else
                      '' if policy_rows else '<p>Its compare.json names no failing row.</p>')
                     + policy_rows + '</div>')
    return "".join(parts)


def _interval(row: dict) -> str:
    ratio, low, high = (row.get(k) for k in ("ratio", "low", "high"))
    if not isinstance(ratio, (int, float)):
        return "-"
    both = isinstance(low, (int, float)) and isinstance(high, (int, float))
    return f"{ratio:.2f}x" + (f" [{low:.2f}, {high:.2f}]" if both else "")


def failed_policies_html(gate: dict) -> str:
    """The policies (``configs/gate.yaml``) a night's gate failed, each with
    its regressed rows' paired ratio and interval; "" when none failed (or
    the gate predates policies)."""
    failed = [p for p in gate.get("policies") or () if isinstance(p, dict) and p.get("verdict") == "FAIL"]
    if not failed:
        return ""
    body = "".join(
        f'<tr class="policy-failed">' + "".join(f"<td>{html.escape(str(c))}</td>" for c in (
            p.get("policy"), r.get("name"), r.get("backend"), r.get("mark"), _interval(r), r.get("note") or ""))
        + "</tr>"
        for p in failed for r in (p.get("regressed") or [{"name": "-", "backend": "-", "mark": p.get("detail")}]))
    head = "".join(f"<th>{h}</th>" for h in ("failed policy", "model", "backend", "mark",
                                              "ratio [95% interval]", "note"))
    names = ", ".join(html.escape(str(p.get("policy"))) for p in failed)
    return (f'<p class="failed-policies">Failed policies: {names}</p>'
            f'<table class="policies"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>')


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
