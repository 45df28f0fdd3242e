"""Is this night a regression?  One home for the answer.

``judge_night(root, date, policy)`` reads the night and its history
(``evidence``), judges every row by the ordered rules (``rules.RULES``) and
returns a ``verdict.Verdict``: a value whose fields -- state, reasons, exit
code, each row's mark, rule and note -- are what the gate's files, the page,
the step summary and the issue read.  ``judge(tonight, history, policy)`` is
the same on evidence already read: the power benchmark and the simulated
nightly replay it.
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterable, Mapping

from benchmarks.judge import evidence, rules
from benchmarks.judge.evidence import History, NightRows
from benchmarks.judge.verdict import Policy, RowVerdict, Verdict, night_state
from benchmarks.nightly.night import Night

__all__ = ["Policy", "Verdict", "RowVerdict", "judge", "judge_night", "History", "NightRows"]


def _cases(tonight: NightRows, history: History, policy: Policy, partial: str,
           flaky: set[tuple[str, str]]) -> list[rules.Case]:
    cases = []
    last = history.nights[0] if history.nights else None
    for metric, limits in policy.metrics.items():
        rows = tonight.rows.get(metric, {})
        keys = list(rows)
        if metric == "speedup" and last is not None:  # a row gone since the last night is named
            keys += [k for k in last.rows.get(metric, {}) if k not in rows]
        for key in keys:
            row = rows.get(key)
            if metric != "speedup" and (row is None or not row.passed or not row.units):
                continue  # statuses are judged once, by speedup; a metric the device never measured is not shown
            before = last.rows.get(metric, {}).get(key) if last is not None else None
            values, left, mark = history.values(row, policy.window) if row is not None else ((), (), "")
            cases.append(rules.Case(
                metric, key, row, values, (row.left_out if row is not None else ()) + left, mark,
                None if before is None else before.passed, bool(partial),
                (key.name, key.backend) in flaky, limits, policy.alpha, policy.min_nights))
    return cases


def judge(tonight: NightRows, history: History, policy: Policy, *, partial: str = "",
          flaky: Iterable[tuple[str, str]] = (), expected: Mapping | None = None,
          expected_failed: bool = False) -> Verdict:
    """The verdict on ``tonight`` against ``history``."""
    judged = []
    for case in rules.tested(_cases(tonight, history, policy, partial, set(flaky))):
        rule, note = rules.decide(case)
        judged.append(RowVerdict(
            evidence.key_json(case.key), case.metric, rule.mark, rule.name, note,
            case.change, case.p_slower, case.slower_adjusted, len(case.history),
            case.tonight.units if case.tonight is not None else (), case.left_out))
    rows = tuple(judged)
    state, reasons = night_state(rows, expected_failed, policy.min_judged, partial)
    return Verdict(tonight.date, state, reasons, rows, history.passed_over, policy, dict(expected or {}),
                   tuple(reversed([n.date for n in history.nights])))


def judge_night(root: Path, date: str, policy: Policy, expected_judgement=None,
                flaky: Iterable[tuple[str, str]] = ()) -> Verdict:
    """Night ``date`` under ``root`` judged against its earlier nights."""
    night = Night.read(root / date)
    metrics = tuple(policy.metrics)
    tonight = evidence.read_night(night, policy.loaded_cores, metrics)
    past = evidence.read_history(root, date, policy.loaded_cores, policy.max_age_days, 2 * policy.window, metrics)
    verdict = judge(tonight, past, policy, partial=night.partial, flaky=flaky,
                    expected=expected_judgement.to_json() if expected_judgement is not None else None,
                    expected_failed=bool(expected_judgement is not None and expected_judgement.failed))
    return verdict
