"""How the gate decides: one ordered table of rules, the first that applies
to a row deciding its mark.

Each row (an experiment, for one metric) is a ``Case``: tonight's value --
the mean of its quiet processes' log backend/baseline ratios -- and the
same row's values on its last ``window`` usable nights.  Its test is a
prediction test with the night as the unit: tonight is one more draw from
the history's spread if ``t = (x - mean) / (sd * sqrt(1 + 1/K))`` follows
Student's t with ``K - 1`` degrees of freedom, so the night-to-night
variation -- which a night's processes share -- is in the p-value.  The
one-sided p-values (slower) of every row and metric of the night are
adjusted together by Holm's method, so ``alpha`` bounds the chance that a
night with no regression flags anything at all, however many rows it has.

A flag on a first night is *suspected*; the next night confirms it by one
pre-stated test at ``alpha`` (the night's family was already controlled when
the row was flagged), or clears it.  ``docs/gate.md`` is generated from
``RULES`` (``python -m benchmarks.judge.docs``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Callable, Sequence

import numpy as np
from scipy import stats as sps
from statsmodels.stats.multitest import multipletests

from benchmarks.judge import verdict as v
from benchmarks.judge.evidence import RowNight
from benchmarks.results import store

NAN = float("nan")


@dataclass(frozen=True)
class Case:
    """Everything a rule may look at for one row."""

    metric: str
    key: store.ExperimentKey
    tonight: RowNight | None  # None: the row has no result tonight
    history: tuple[float, ...] = ()  # the row's values on earlier nights, oldest first
    left_out: tuple[str, ...] = ()  # nights and processes left out, with reasons
    last_mark: str = ""  # the row's mark on the newest earlier night, when flagged
    last_passed: bool | None = None  # the row's status on the newest earlier night (None: absent)
    partial: bool = False  # tonight's night is partial
    flaky: bool = False  # the expected files' flaky list names the row
    limits: v.MetricPolicy = v.MetricPolicy(0.05, 0.2)
    alpha: float = 0.05
    min_nights: int = 10
    change: float = NAN  # exp(x - mean) - 1: + is slower
    p_slower: float = NAN
    p_faster: float = NAN
    slower_adjusted: float = NAN  # Holm-adjusted over the night
    faster_adjusted: float = NAN

    @property
    def failed(self) -> bool:
        return self.tonight is not None and not self.tonight.passed

    @property
    def testable(self) -> bool:
        return (self.tonight is not None and self.tonight.passed and bool(self.tonight.units)
                and len(self.history) >= self.min_nights)


@dataclass(frozen=True)
class Rule:
    name: str
    mark: str
    why: str  # one sentence: why the rule exists
    applies: Callable[[Case], str | None]  # the row's note when it applies, else None


def _pct(x: float) -> str:
    return f"{x:+.1%}"


def _evidence(c: Case) -> str:
    return (f"{_pct(c.change)} against {len(c.history)} night(s), p {c.p_slower:.2g} "
            f"(Holm {c.slower_adjusted:.2g}), threshold {c.limits.threshold:.0%}")


RULES: tuple[Rule, ...] = (
    Rule("missing", v.MARK_MISSING,
         "A partial night lacks the rows of its lost shards: they are named, not judged.",
         lambda c: "no result tonight: the night is partial" if c.tonight is None and c.partial else None),
    Rule("removed", v.MARK_UNJUDGED,
         "A row the last night had and tonight's complete night lacks cannot be judged, and says so.",
         lambda c: "no result tonight" if c.tonight is None else None),
    Rule("flaky", v.MARK_FLAKY,
         "A model on the expected files' flaky list is reported when it fails, never failing the night.",
         lambda c: f"failed ({c.tonight.status}); on the flaky list" if c.failed and c.flaky else None),
    Rule("new failure", v.MARK_FAIL,
         "A row that passed on the last night and fails tonight is a regression whatever its timing.",
         lambda c: f"failed ({c.tonight.status}); passed on the last night" if c.failed and c.last_passed else None),
    Rule("known failure", v.MARK_KNOWN,
         "A row that failed before too is not a new regression (the expected files judge failures).",
         lambda c: (f"failed ({c.tonight.status}), as before" if c.last_passed is False else
                    f"failed ({c.tonight.status}); no earlier night to compare with") if c.failed else None),
    Rule("no quiet process", v.MARK_UNJUDGED,
         "Processes timed beside other work are left out; with none left there is nothing to judge.",
         lambda c: "; ".join(c.tonight.left_out) or "no paired samples" if not c.tonight.units else None),
    Rule("too few nights", v.MARK_UNJUDGED,
         "The test needs the row's own night-to-night spread, estimated from enough earlier nights.",
         lambda c: f"{len(c.history)} usable earlier night(s), {c.min_nights} needed"
         if len(c.history) < c.min_nights else None),
    Rule("confirmed", v.MARK_FAIL,
         "A suspected row slower again on the next night, by one pre-stated test at alpha, is a regression.",
         lambda c: f"suspected on the last night, slower again: {_pct(c.change)}, p {c.p_slower:.2g} < "
                   f"{c.alpha:g}, threshold {c.limits.threshold:.0%}"
         if c.last_mark == v.MARK_SUSPECTED and c.p_slower < c.alpha and c.change >= c.limits.threshold else None),
    Rule("large", v.MARK_FAIL,
         "A slowdown past fail_at_once is not worth a second night's wait.",
         lambda c: f"slower {_evidence(c)}, past fail_at_once {c.limits.fail_at_once:.0%}"
         if c.slower_adjusted < c.alpha and c.change >= c.limits.fail_at_once else None),
    Rule("suspected", v.MARK_SUSPECTED,
         "A first-night slowdown may be the night's own state: the next night confirms or clears it.",
         lambda c: f"slower {_evidence(c)}" if c.slower_adjusted < c.alpha and c.change >= c.limits.threshold
         else None),
    Rule("faster", v.MARK_FASTER,
         "A significant speed-up past the threshold is reported; it never fails a night.",
         lambda c: f"faster {_pct(c.change)} against {len(c.history)} night(s), Holm p {c.faster_adjusted:.2g}"
         if c.faster_adjusted < c.alpha and c.change <= -c.limits.threshold else None),
    Rule("not significant", v.MARK_PASS,
         "A change past the threshold that the night's test cannot tell from the row's own spread is no "
         "evidence of a regression; its note says how far it moved and how weak the test was.",
         lambda c: f"{_pct(c.change)} against {len(c.history)} night(s), p {c.p_slower:.2g} "
                   f"(Holm {c.slower_adjusted:.2g}): not significant at {c.alpha:g}"
         if abs(c.change) >= c.limits.threshold else None),
    Rule("no change", v.MARK_PASS,
         "Anything else moved less than the threshold.",
         lambda c: f"{_pct(c.change)} against {len(c.history)} night(s), p {c.p_slower:.2g}"),
)


def prediction_test(x: float, history: Sequence[float]) -> tuple[float, float, float]:
    """(relative change, one-sided p slower, one-sided p faster) of tonight's
    value ``x`` as one more night of ``history``."""
    k = len(history)
    mean, sd = float(np.mean(history)), float(np.std(history, ddof=1))
    change = math.expm1(x - mean)
    if sd == 0.0:  # a spread never seen: any change is beyond it
        return change, float(x <= mean), float(x >= mean)
    t = (x - mean) / (sd * math.sqrt(1 + 1 / k))
    return change, float(sps.t.sf(t, k - 1)), float(sps.t.cdf(t, k - 1))


def _holm(ps: Sequence[float], alpha: float) -> list[float]:
    return list(multipletests(ps, alpha=alpha, method="holm")[1]) if ps else []


def tested(cases: Sequence[Case]) -> list[Case]:
    """``cases`` with their tests and the night's Holm adjustment filled in."""
    out = [replace(c, **dict(zip(("change", "p_slower", "p_faster"),
                                 prediction_test(c.tonight.value, c.history))))
           if c.testable else c for c in cases]
    index = [i for i, c in enumerate(out) if c.testable]
    alpha = cases[0].alpha if cases else 0.05
    slower = _holm([out[i].p_slower for i in index], alpha)
    faster = _holm([out[i].p_faster for i in index], alpha)
    for i, ps, pf in zip(index, slower, faster):
        out[i] = replace(out[i], slower_adjusted=ps, faster_adjusted=pf)
    return out


def decide(case: Case) -> tuple[Rule, str]:
    """The first rule that applies, and its note."""
    for rule in RULES:
        note = rule.applies(case)
        if note is not None:
            return rule, note
    raise AssertionError("the last rule always applies")
