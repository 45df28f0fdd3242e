"""Compare two benchmark runs and gate on the result: which (model, backend)
pairs got slower or faster.

Offers:

* ``compare(old_csv, new_csv, ...) -> Comparison`` -- the computed result: one
  ``RowComparison`` per (model, backend) found in either run, with a mark.
* ``exit_code(comparison) -> int`` -- the gate: 1 when a row is ``slower``, a
  ``new failure`` or ``removed`` (unless allowed), or ``inconclusive`` when
  told to fail on it; else 0.
* ``render_markdown`` / ``render_console`` / ``render_json`` -- strings.
* The command line (``python runner.py compare OLD NEW``, in ``benchmarks.cli``):
  0 pass, 1 fail, 2 bad input or an output that cannot be written.

Each run's view of its experiments (rows and raw samples, pooled reference
runs, labels) is read by ``benchmarks.results.pairing``. Compute first,
render second (the shape of google/benchmark's
``get_difference_report`` / ``print_difference_report``): the renderers only
format what ``compare`` decided, so they are testable against golden files.

**What is judged.** Every run measures its baseline interleaved with each
backend, repeat by repeat (``benchmarks.run.measure``), and stores both sample
lists in the ``.jsonl`` beside its CSV.  Drift between two runs -- another
job on the machine, a different CPU frequency, another CI machine -- moves
baseline and backend alike, so the gate judges the per-repeat ratio
``backend_i / baseline_i`` (below 1 = the backend is faster than the
baseline), a quantity each run controls, and not the absolute latency, which
it does not.  Absolute latency is shown for information; ``latency_criterion``
(``--latency-criterion``) also flags a row whose absolute latency alone got
significantly slower, for machines quiet and alike enough to trust it.

The rules, in the order they are applied to a (name, backend) pair:

1. only in the new run: ``added``; only in the old run: ``removed``;
2. settings differ (``store.SETTING_COLUMNS``: suite, baseline, dev,
   batch_size, mode, dtype, dynamic): ``not comparable`` -- even if
   a status changed, because the changed setting may be the reason;
3. old passed, new did not: ``new failure``; the reverse: ``fixed``; neither
   passed: ``still failing``;
4. both passed: change = median(new ratios) / median(old ratios) - 1.
   Fewer than ``min_samples`` paired ratios on either side (or no samples at
   all): ``inconclusive`` -- too few to test is not "no change".  Otherwise
   ``slower`` / ``faster`` need BOTH a two-sided Mann-Whitney U test of the
   two ratio samples significant at p < alpha AND |change| >= threshold
   (half the threshold on per-process units: ``flag_at``); with
   ``alternative="slower"`` (a re-run asking whether a night's slowdown is
   there again) the test is one-sided and only ``slower`` can be found;
   anything else is ``no change``.  The ratios are the per-process medians
   when both sides recorded which worker process each sample came from
   (``units``; runs spread over processes, ``benchmarks.run.processes``):
   the spread between processes is what a second run would show, so the
   test and the interval must see it; else each repeat's ratio.  Every
   tested row has a 95% bootstrap interval of its change and the smallest
   slowdown it could have caught (``detectable``).  An old side pooled from
   three runs or more leaves out of each row's pool a run whose median
   ratio is further than ``LEAVE_OUT_THRESHOLDS`` thresholds from the
   others' middle (at most a minority; the row's note names them).  The
   test's processes are not all a night can move: when the pooled nights'
   means spread more than their processes explain (a night's own state),
   a per-process ``slower`` or ``faster`` must also clear that spread
   (``night_spread``), else it is ``no change`` with a note.
5. load moves the paired ratio itself by a few percent: a worker process
   timed while other processes kept more than ``loaded`` cores busy
   (``process_other_cores``; a version-10 row's ``other_cores`` for each of
   its processes; default the gate's ``loaded_cores``, configs/gate.yaml) leaves the units of its side
   before the test (``Side.quiet``; the note counts them), and a row left
   with too few (fewer than two processes) is ``inconclusive``.  A tested row of one process (no
   per-process loads) above it is ``inconclusive``, and such a run leaves
   a pooled old side while a quiet one stays.  A verdict with rows the load
   left untested is never a PASS;
6. a pooled old side (two runs or more) keeps only the runs on NEW's CPU
   (``cpu_model``, ``cpu_count``; runs that did not record it stay): a
   paired ratio moves between machines (mobilenet_v2: 0.64-0.67 on the
   machines of eleven nights, 0.72 on another, all "AMD EPYC").  With none on it the row is
   ``inconclusive`` and the verdict never a PASS.  One old run on another
   CPU is judged, with a ``CPU changed`` line.

The gate fails on ``slower`` and ``new failure``; on ``removed`` unless
``allow_removed`` (a nightly that lost a shard must not pass silently); on
``inconclusive`` only with ``fail_on_inconclusive``.

**Damaged and empty files.** A run's file cut mid-line (a shard killed
mid-write: ``store.cuts``) is named in one line with what it lost; a pair
whose OLD row was the one lost is ``inconclusive``, not ``added``, and the
verdict says the file is damaged (INCONCLUSIVE, never a PASS). An OLD side with no
rows at all (a header-only file) leaves nothing to judge against: the gate
fails.

Within one file the last row (and the last samples record of each role) of a
pair wins, as in ``benchmarks.results.report``: a re-run appended to the same CSV
replaces the earlier attempt.

One module, though over 600 lines: the rules above, their statistics and
the three renderings of their verdicts must say the same thing; reading
the runs lives apart (``pairing``), and the renderers only format.
"""
from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field, replace
from typing import Any, Sequence

import numpy as np
import pandas as pd
from scipy import stats as sps
from tabulate import tabulate

from benchmarks.results import load as load_rule
from benchmarks.results import pairing, store, stats
from benchmarks.results.pairing import (  # noqa: F401 - read as compare.X by its callers
    COMMIT_CHARS, NAN, SETTINGS, cpu_change, cpu_label, experiment_key, paired_ratios, run_labels,
)

SLOWER = "slower"
FASTER = "faster"
NO_CHANGE = "no change"
INCONCLUSIVE = "inconclusive"
NEW_FAILURE = "new failure"
FIXED = "fixed"
STILL_FAILING = "still failing"
NOT_COMPARABLE = "not comparable"
ADDED = "added"
REMOVED = "removed"
MISSING = "missing"  # absent from a run known to be partial (a lost shard)
UNCONFIRMED = "unconfirmed"  # slower or newly failing, but a re-run of it was not (see confirm)
# The units the test compares (``units``): per-process median ratios, or per-repeat ratios.
UNIT_PROCESS = "process"
UNIT_REPEAT = "repeat"
UNITS = (UNIT_PROCESS, UNIT_REPEAT)
# What the test asks (``compare``'s ``alternative``): has the ratio moved
# either way, or only: is the new side slower (one-sided; a confirmation)?
TWO_SIDED = "two-sided"
SLOWER_ONLY = "slower"
ALTERNATIVES = (TWO_SIDED, SLOWER_ONLY)
# Per-process units flag a change from this fraction of the threshold on: a
# slowdown as large as the threshold lands below the threshold itself on
# half the nights whatever the precision (its estimate is as likely under as
# over), but above half of it on nine in ten once the change's interval is
# within about two fifths of the threshold.  The test's level still rules
# out noise: per process it sees the spread a second run would show
# (docs/methodology.md, the gate's power).  Per-repeat units cannot see
# the processes' spread; the whole threshold keeps them from crying wolf.
PROCESS_FLAG_FRACTION = 0.5
# A pooled baseline leaves out of a row's pool a run whose median ratio lies
# further than this many thresholds from the median of the runs' medians
# (``pairing._pool``): a night measured on a loaded machine moved one
# model's ratio 18% where quiet nights stay within 5%; over 18 judged quiet
# nights the gate caught a +5% slowdown on 134 of 144 rows with such nights
# left out and on 125 with them pooled (docs/methodology.md, the gate's power).
LEAVE_OUT_THRESHOLDS = 2.0
# ``compare``'s ``loaded`` by default: the gate's ``loaded_cores``
# (``benchmarks.results.load.threshold``, configs/gate.yaml).
GATE_LOADED = "gate"

# Summary order: what needs attention first.
MARKS = (SLOWER, NEW_FAILURE, REMOVED, MISSING, INCONCLUSIVE, UNCONFIRMED, FASTER, FIXED, NO_CHANGE,
         STILL_FAILING, NOT_COMPARABLE, ADDED)
# Rows whose change was tested (passed in both runs, same settings, enough
# samples): their change enters the geomean.
MEASURED_MARKS = frozenset({SLOWER, FASTER, NO_CHANGE, UNCONFIRMED})


# --------------------------------------------------------------------------
# Data


@dataclass(frozen=True)
class RowComparison:
    """One (name, backend) pair across the two runs.

    A status of ``None`` means the pair is absent from that run; a passing
    row's status is ``"pass"``.  ``old_ratio`` / ``new_ratio`` are the
    medians of the per-repeat backend/baseline ratios, ``change`` is
    ``new_ratio / old_ratio - 1`` (positive = slower relative to the
    baseline) and ``p_value`` the Mann-Whitney p-value of the ratios: these
    decide the mark; ``change_low`` / ``change_high`` bound ``change`` (a
    95% bootstrap interval of the ratio of medians) on every tested row, and
    ``detectable`` is the smallest slowdown it could have caught; ``unit``
    says what the test compared (``process`` or ``repeat``).  ``n_old`` /
    ``n_new`` count the paired ratios.
    Latencies (ms per iteration, median of the backend samples, else the
    CSV's) with ``latency_change`` and ``latency_p`` are information unless
    the latency criterion is on.  Speedups are the CSV's, for information.
    All numbers are ``nan`` when not computed.
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
    old_ratio: float = NAN
    new_ratio: float = NAN
    latency_change: float = NAN
    latency_p: float = NAN
    # 95% bootstrap interval of ``change`` (every tested row).
    change_low: float = NAN
    change_high: float = NAN
    # The smallest slowdown the row could have caught (``detectable``), and
    # the units its test compared (``units``: process or repeat).
    detectable: float = NAN
    unit: str = ""
    # Timed on a loaded machine (``compare``'s ``loaded``): inconclusive for that.
    loaded: bool = False
    # No run of the pooled old side ran on NEW's CPU: inconclusive for that.
    other_cpu: bool = False
    # The experiment (store.ExperimentKey); not rendered.
    key: Any = field(default=None, compare=False, repr=False)

    @property
    def ratio(self) -> float:
        """``new / old`` backend/baseline ratio (below 1 = faster)."""
        return 1.0 + self.change


@dataclass(frozen=True)
class Confirmation:
    """How the ``slower`` and ``new failure`` rows of a comparison were
    re-measured (``confirm``):
    how many, how many the re-run confirmed, and the verdict before it.
    ``note`` says why none were re-measured, or what went wrong."""

    rerun: int = 0
    confirmed: int = 0
    unconfirmed: int = 0
    verdict_before: str = ""
    exit_code_before: int = 0
    note: str = ""
    alternative: str = ""  # the re-run's test (``compare``'s alternative); "" with no re-run

    def describe(self) -> str:
        if not self.rerun:
            return f"no re-run ({self.note})" if self.note else "no re-run"
        text = (f"{self.rerun} slower or newly failing row(s) re-measured in a re-run: {self.confirmed} confirmed, "
                f"{self.unconfirmed} not (verdict before the re-run: {self.verdict_before})")
        return f"{text}; {self.note}" if self.note else text


@dataclass(frozen=True)
class Comparison:
    """The result of :func:`compare`: rows sorted by (name, backend), the
    parameters they were judged with, and the geomean of the new/old ratio
    change over the ``geomean_n`` rows whose change was tested (``slower``,
    ``faster``, ``no change``, ``unconfirmed``).

    ``baseline`` says what the old side is (one run, or several runs' samples
    pooled); ``partial`` why the new run is known to be incomplete (its
    absent rows are then ``missing``); ``cpu_change`` the CPUs of the two
    sides when they differ; ``confirmation`` how slower rows were re-measured.
    """

    rows: list[RowComparison]
    old_label: str
    new_label: str
    threshold: float
    alpha: float
    min_samples: int
    geomean_ratio: float
    geomean_n: int
    allow_removed: bool = False
    fail_on_inconclusive: bool = False
    latency_criterion: bool = False
    baseline: str = ""
    partial: str = ""
    cpu_change: str = ""
    alternative: str = TWO_SIDED
    confirmation: Confirmation | None = None
    # One line per damage of a file (``store.Damage.describe``), OLD's first;
    # ``damage``: the same as data, (side, Damage), for the gate to refuse a PASS on.
    damaged: tuple[str, ...] = ()
    damage: tuple[tuple[str, store.Damage], ...] = ()
    old_damaged: bool = False
    # OLD had no rows at all: nothing to judge NEW against (the gate fails).
    old_empty: bool = False
    units: str = UNIT_PROCESS

    @property
    def gating_marks(self) -> frozenset[str]:
        """The marks that fail the gate under this comparison's policy."""
        marks = {SLOWER, NEW_FAILURE}
        if not self.allow_removed:
            marks |= {REMOVED, MISSING}
        if self.fail_on_inconclusive:
            marks.add(INCONCLUSIVE)
        return frozenset(marks)

    def counts(self) -> dict[str, int]:
        """Rows per mark, in ``MARKS`` order, marks with no rows left out."""
        found = [row.mark for row in self.rows]
        return {mark: found.count(mark) for mark in MARKS if mark in found}

    def frame(self) -> pd.DataFrame:
        """The rows as a DataFrame (one column per rendered ``RowComparison`` field)."""
        return pd.DataFrame([_row_fields(row) for row in self.rows], columns=ROW_FIELDS)


ROW_FIELDS = [f for f in RowComparison.__dataclass_fields__ if f != "key"]


def _row_fields(row: RowComparison) -> dict:
    return {f: getattr(row, f) for f in ROW_FIELDS}


# --------------------------------------------------------------------------
# Judging one pair


def _shorten(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _settings_note(old: pairing.Side, new: pairing.Side) -> str:
    return ", ".join(
        f"{name} {a} -> {b}" for name, a, b in zip(SETTINGS, old.settings, new.settings) if a != b
    )


def _relative(new: float, old: float) -> float:
    return new / old - 1 if store.is_finite(old) and store.is_finite(new) and old > 0 else NAN


def _inverse(value: float) -> float:
    return 1 / value if store.is_finite(value) and value > 0 else NAN


def _check_alternative(alternative: str) -> None:
    if alternative not in ALTERNATIVES:
        raise ValueError(f"alternative must be one of {ALTERNATIVES}, got {alternative!r}")


def _mann_whitney(new: Sequence[float], old: Sequence[float], alternative: str = TWO_SIDED) -> float:
    # Rank-based: no normality assumption, and one outlier iteration (a GC
    # pause) moves a rank by one instead of dragging a mean.
    side = "greater" if alternative == SLOWER_ONLY else "two-sided"  # greater: new above old
    return float(sps.mannwhitneyu(new, old, alternative=side).pvalue)


def flag_at(threshold: float, unit: str) -> float:
    """The smallest |change| marked slower or faster with ``unit`` units:
    ``PROCESS_FLAG_FRACTION`` of ``threshold`` per process, all of it per repeat."""
    return threshold * PROCESS_FLAG_FRACTION if unit == UNIT_PROCESS else threshold


def _direction(change: float, p_value: float, threshold: float, alpha: float) -> str:
    significant = store.is_finite(p_value) and p_value < alpha
    if significant and store.is_finite(change) and abs(change) >= threshold:
        return SLOWER if change > 0 else FASTER
    return NO_CHANGE


def _why_untested(old: pairing.Side, new: pairing.Side, min_samples: int) -> str:
    if not (old.backend_s and new.backend_s):
        return "inconclusive: no raw samples (.jsonl); change from the CSV's speedups"
    unpaired = [f"{side} has {len(s.backend_s)} backend vs {len(s.baseline_s)} baseline samples"
                for side, s in (("old", old), ("new", new)) if not s.paired]
    if unpaired:
        return "inconclusive: not paired: " + "; ".join(unpaired)
    return (f"inconclusive: {len(old.ratios)} vs {len(new.ratios)} paired samples "
            f"(< {min_samples} per side)")


@dataclass(frozen=True)
class _Policy:
    threshold: float
    alpha: float
    min_samples: int
    latency_criterion: bool
    units: str = "process"
    loaded: float | None = None  # cores: above it a row's timing is inconclusive (None: not judged)
    alternative: str = TWO_SIDED


def _judge_status(old: pairing.Side, new: pairing.Side) -> str | None:
    if old.passed and not new.passed:
        return NEW_FAILURE
    if new.passed and not old.passed:
        return FIXED
    if not old.passed:
        return STILL_FAILING
    return None


def _tails(alternative: str) -> int:
    """How many tails of a test's distribution ``alternative`` counts."""
    return 1 if alternative == SLOWER_ONLY else 2


def _attainable_p(n_new: int, n_old: int, alternative: str = TWO_SIDED) -> float:
    """The smallest Mann-Whitney p-value samples of these sizes can give."""
    return min(1.0, _tails(alternative) / math.comb(n_new + n_old, n_new)) if n_new and n_old else 1.0


def units(old: pairing.Side, new: pairing.Side, policy: "_Policy") -> tuple[str, tuple, tuple]:
    """What the test compares: ``("process", old, new)`` per-process median
    ratios when both sides say which process each sample came from and so
    few units can still reach ``alpha`` two-sided (``policy.units`` is
    ``process``; a one-sided re-run keeps the units its night had); else
    ``("repeat", old, new)``, the per-repeat ratios."""
    if policy.units == UNIT_PROCESS:
        old_units, new_units = old.process_ratios, new.process_ratios
        if (len(old_units) >= 2 and len(new_units) >= 2
                and _attainable_p(len(new_units), len(old_units)) < policy.alpha):
            return UNIT_PROCESS, old_units, new_units
    return UNIT_REPEAT, old.ratios, new.ratios


def detectable(change: float, change_low: float, threshold: float) -> float:
    """The smallest slowdown the row could have shown: one whose interval
    (as wide as this row's, ``change - change_low`` below its estimate) would
    have left no change out, and at least ``threshold`` (the smallest change
    its units flag: ``flag_at``); ``nan`` when the row has no interval."""
    if not (store.is_finite(change) and store.is_finite(change_low)):
        return NAN
    return max(threshold, change - change_low)


def judge_units(old_units: Sequence[float], new_units: Sequence[float], threshold: float = 0.05,
                alpha: float = 0.05, unit: str = UNIT_PROCESS,
                alternative: str = TWO_SIDED) -> tuple[str, float, float]:
    """``(mark, change, p_value)`` of ratios ``new_units`` against
    ``old_units`` (``unit``: per-process medians or per-repeat ratios) by
    the rule of ``compare`` (``slower``, ``faster`` or ``no change``; with
    ``alternative="slower"``, one-sided: ``slower`` or ``no change``): what
    the gate decides for a row once its units are chosen
    (``benchmarks.tools.power`` replays it on resampled units)."""
    _check_alternative(alternative)
    change = _relative(stats.median(new_units), stats.median(old_units))
    p_value = _mann_whitney(new_units, old_units, alternative)
    mark = _direction(change, p_value, flag_at(threshold, unit), alpha)
    if alternative == SLOWER_ONLY and mark == FASTER:  # ranks above, median below: not the question
        mark = NO_CHANGE
    return mark, change, p_value


@dataclass(frozen=True)
class NightSpread:
    """What the nights' own spread makes of a change (``night_spread``):
    the change of the means, its p-value, the spread of a night's mean
    beyond its processes' share (``between``, log ratio) and the standard
    error of the change (log ratio) with it."""

    change: float
    p_value: float
    between: float
    std_error: float


def night_spread(old_runs: Sequence[Sequence[float]], new_runs: Sequence[Sequence[float]],
                 alternative: str = TWO_SIDED) -> NightSpread | None:
    """The change of ``new_runs`` against ``old_runs`` (per-process ratios,
    grouped by the run -- the night -- they came from) judged with the
    spread between nights, or None when there is none to add.

    The per-process test takes the pool's processes as alike, whichever
    night ran them; but a night can move all its processes together (a
    machine's state for some minutes), and then tonight's processes, and
    its re-run's minutes later, share that move.  Of three or more old
    nights with two processes or more, the variance of the nights' mean
    log ratios beyond what their processes' own variance explains is the
    nights' share (``between``, a random effect's moment estimate); when
    there is one, the change of the means is a z-test with it: each new
    night adds it, each old night's mean carries it (one-sided with
    ``alternative="slower"``).  None when the nights move no more than
    their processes (the Mann-Whitney test stands)."""
    _check_alternative(alternative)
    old = [np.log(np.asarray(g, dtype=float)) for g in old_runs if len(g) >= 2]
    new = [np.log(np.asarray(g, dtype=float)) for g in new_runs if len(g)]
    if len(old) < 3 or not new:
        return None
    means = np.array([g.mean() for g in old])
    within = float(np.mean([g.var(ddof=1) for g in old]))
    inverse = float(np.mean([1 / len(g) for g in old]))  # E[var(means)] = between + within * mean(1/n)
    between = float(means.var(ddof=1)) - within * inverse
    if not between > 0:
        return None
    units = np.concatenate(new)
    std_error = math.sqrt(between / len(new) + within / len(units) + (between + within * inverse) / len(old))
    difference = units.mean() - means.mean()
    p_value = (sps.norm.sf(difference / std_error) if alternative == SLOWER_ONLY
               else 2 * sps.norm.sf(abs(difference) / std_error))
    return NightSpread(math.expm1(difference), float(p_value),
                       math.sqrt(between), std_error)


def _judge_measured(old: pairing.Side, new: pairing.Side, policy: _Policy) -> dict:
    """Mark, numbers and note of a pair that passed in both runs."""
    unit, old_ratios, new_ratios = units(old, new, policy)
    if old_ratios and new_ratios:
        old_ratio, new_ratio = stats.median(old_ratios), stats.median(new_ratios)
    else:  # information only: such a row is inconclusive
        old_ratio, new_ratio = _inverse(old.speedup), _inverse(new.speedup)
    if old.latencies_s and new.latencies_s:
        old_ms, new_ms = stats.median(old.latencies_s) * 1e3, stats.median(new.latencies_s) * 1e3
    else:
        old_ms, new_ms = old.abs_latency_ms, new.abs_latency_ms
    found = dict(old_ratio=old_ratio, new_ratio=new_ratio, change=_relative(new_ratio, old_ratio),
                 old_latency_ms=old_ms, new_latency_ms=new_ms,
                 latency_change=_relative(new_ms, old_ms), p_value=NAN, latency_p=NAN, note="")
    if min(len(old.latencies_s), len(new.latencies_s)) >= policy.min_samples:
        found["latency_p"] = _mann_whitney(new.latencies_s, old.latencies_s, policy.alternative)
    if min(len(old.ratios), len(new.ratios)) < policy.min_samples:
        return {**found, "mark": INCONCLUSIVE, "note": _why_untested(old, new, policy.min_samples)}
    if _attainable_p(len(new_ratios), len(old_ratios), policy.alternative) >= policy.alpha:
        # A test that cannot reach alpha would call every change "no change".
        return {**found, "mark": INCONCLUSIVE,
                "note": (f"inconclusive: {len(old_ratios)} vs {len(new_ratios)} units cannot reach "
                         f"p < {policy.alpha:g}")}
    mark, _, found["p_value"] = judge_units(old_ratios, new_ratios, policy.threshold, policy.alpha, unit,
                                            policy.alternative)
    found["unit"] = unit
    # How large the change may be, and so the smallest slowdown this row
    # could have caught (a reader of "no change" on a noisy model needs it).
    low, high = stats.speedup_ci(new_ratios, old_ratios)  # of median(new) / median(old)
    found.update(change_low=low - 1, change_high=high - 1,
                 detectable=detectable(found["change"], low - 1, flag_at(policy.threshold, unit)))
    spread = (night_spread(old.process_ratios_by_run, new.process_ratios_by_run, policy.alternative)
              if unit == UNIT_PROCESS else None)
    if spread is not None:
        # A slowdown this row would catch must clear the nights' spread too.
        quantile = sps.norm.ppf(1 - policy.alpha / _tails(policy.alternative))
        found["detectable"] = max(found["detectable"], math.expm1(quantile * spread.std_error))
        beyond = spread.p_value < policy.alpha and (spread.change > 0) == (mark == SLOWER)
        if mark in (SLOWER, FASTER) and not beyond:
            found["note"] = (f"{mark} by its processes (p {_p_cell(found['p_value'])}), not beyond the "
                             f"baseline nights' own spread (each night's mean moves {spread.between:.1%} "
                             f"beyond its processes'; p {_p_cell(spread.p_value)} with it)")
            mark = NO_CHANGE
    if policy.latency_criterion and mark != SLOWER:
        by_latency = _direction(found["latency_change"], found["latency_p"], policy.threshold, policy.alpha)
        if by_latency == SLOWER:
            return {**found, "mark": SLOWER, "note": "slower by absolute latency (--latency-criterion)"}
    return {**found, "mark": mark}


def _judge_load(row: RowComparison, old: pairing.Side, new: pairing.Side, loaded: float | None,
                left_out: dict[str, tuple[float, ...]]) -> RowComparison:
    """The load's part in a row.  ``left_out``: per side, the loads of the
    processes left out of its units (``Side.quiet``), named in the note; a
    row they left too few units to test is inconclusive for the load.  A
    tested row whose side does not say each process's load (one process,
    or a run older than schema version 11 with no processes) and whose
    ``other_cores`` is above ``loaded`` is inconclusive: its change and
    interval stay as information, its mark and the slowdown it could catch
    do not."""
    if loaded is None:
        return row
    dropped = {side: loads for side, loads in left_out.items() if loads}
    if dropped:
        said = "; ".join(f"{side} {len(loads)} (up to {max(loads):.2f} cores)" for side, loads in dropped.items())
        emptied = [side for side, s in (("OLD", old), ("NEW", new)) if side in dropped and not s.ratios]
        # Every process of a side loaded: that, not a lack of samples, is why it is untested.
        why = (f"every process of {' and '.join(emptied)} was timed on a loaded machine: nothing quiet to test"
               if emptied else row.note)
        row = replace(row, loaded=row.mark == INCONCLUSIVE,
                      note=joined(why, f"processes timed on a loaded machine left out (above {loaded:g} "
                                        f"cores): {said}"))
    if row.mark not in (SLOWER, FASTER, NO_CHANGE):
        return row
    busy = [f"{side} {cores:.2f}" for side, s, cores in (("OLD", old, old.other_cores), ("NEW", new, new.other_cores))
            if cores > loaded and not s.process_loads]
    if not busy:
        return row
    return replace(row, mark=INCONCLUSIVE, detectable=NAN, loaded=True,
                   note=joined(row.note, f"timed on a loaded machine: other processes kept {', '.join(busy)} "
                                          f"cores busy (above {loaded:g}); a {row.mark} ratio there is "
                                          "the load's as much as the code's"))


def _lost_by(cuts: Sequence[store.Cut], key: store.ExperimentKey) -> store.Cut | None:
    """The cut of an OLD file that may have lost ``key``'s row: one that
    names its model (and backend, when the fragment got that far)."""
    return next((c for c in cuts if c.record == "row" and c.name == key.name
                 and c.backend in (None, key.backend)), None)


def _row(key: store.ExperimentKey, old: pairing.Side | None, new: pairing.Side | None, policy: _Policy,
         partial: bool = False, mixed_cpus: bool = False,
         old_cuts: Sequence[store.Cut] = ()) -> RowComparison:
    base = dict(
        key=key,
        name=key.name,
        backend=key.backend,
        old_status=old.status if old else None,
        new_status=new.status if new else None,
        old_latency_ms=old.abs_latency_ms if old and old.passed else NAN,
        new_latency_ms=new.abs_latency_ms if new and new.passed else NAN,
        change=NAN,
        p_value=NAN,
        n_old=len(old.ratios) if old else 0,
        n_new=len(new.ratios) if new else 0,
        old_speedup=old.speedup if old else NAN,
        new_speedup=new.speedup if new else NAN,
    )
    if old is None:
        cut = _lost_by(old_cuts, key)
        if cut is not None:  # not new: OLD lost its row to the cut
            return RowComparison(mark=INCONCLUSIVE, note=f"OLD lost its row: {cut.path.name} is cut mid-row",
                                 **base)
        return RowComparison(mark=ADDED, **base)
    if new is None:
        # A partial run lost it (a shard died); a complete run no longer has it.
        return RowComparison(mark=MISSING if partial else REMOVED,
                             note="not measured: the run is partial" if partial else "", **base)
    if old.settings != new.settings:
        return RowComparison(mark=NOT_COMPARABLE, note=_settings_note(old, new), **base)
    status_mark = _judge_status(old, new)
    if status_mark is not None:
        # What broke is the first question a reviewer has about a new failure.
        note = _shorten(new.error) if not new.passed else ""
        return RowComparison(mark=status_mark, note=note, **base)
    if old.other_cpu:
        return RowComparison(mark=INCONCLUSIVE, other_cpu=True, note=(
            f"no baseline run on this CPU ({new.cpu}; theirs: {old.other_cpu}): a paired ratio moves "
            "between machines"), **base)
    quiet = {}
    if policy.loaded is not None:  # the processes timed on a loaded machine leave the units
        (old, quiet["OLD"]), (new, quiet["NEW"]) = old.quiet(policy.loaded), new.quiet(policy.loaded)
        base.update(n_old=len(old.ratios), n_new=len(new.ratios))
        few = [f"{side} {len(s.process_repeats)}" for side, s in (("OLD", old), ("NEW", new))
               if quiet[side] and 0 < len(s.process_repeats) < 2]
        if few:
            # One quiet process's repeats share its offset: per repeat they
            # would pass one process off as a sample of many.
            return RowComparison(mark=INCONCLUSIVE, loaded=True, note=(
                f"too few processes timed quiet to test ({', '.join(few)} left; above {policy.loaded:g} cores: "
                + "; ".join(f"{side} {len(loads)}" for side, loads in quiet.items() if loads) + ")"), **base)
    row = RowComparison(**{**base, **_judge_measured(old, new, policy)})
    row = _judge_load(row, old, new, policy.loaded, quiet)
    if old.left_out:
        row = replace(row, note=joined(row.note, "left out of the pool: " + ", ".join(old.left_out)))
    if mixed_cpus and old.cpu and new.cpu and old.cpu != new.cpu:
        # Shards on different machines: which rows changed machine is worth a note.
        return replace(row, note=joined(row.note, f"CPU {old.cpu} -> {new.cpu}"))
    return row


# --------------------------------------------------------------------------
# Compute


def compare(
    old_csv: str | os.PathLike | Sequence[str | os.PathLike],
    new_csv: str | os.PathLike | Sequence[str | os.PathLike],
    threshold: float = 0.05,
    alpha: float = 0.05,
    min_samples: int = stats.MIN_PAIRED_SAMPLES,
    *,
    latency_criterion: bool = False,
    allow_removed: bool = False,
    fail_on_inconclusive: bool = False,
    baseline: str = "",
    old_label: str = "",
    partial: str = "",
    load: pairing.Loader = pairing.load_run,
    units: str = UNIT_PROCESS,
    leave_out: bool = True,
    loaded: float | str | None = GATE_LOADED,
    alternative: str = TWO_SIDED,
) -> Comparison:
    """Compare the run at ``new_csv`` against the one at ``old_csv``, or
    against several old runs pooled (a sequence of paths, oldest first: see
    ``pairing.load_baseline``); several new runs are pooled alike (a change
    judged over the nights it persisted).

    ``threshold`` is the smallest relative change of the backend/baseline
    ratio worth a mark (0.05 = 5%), ``alpha`` the significance level of the
    Mann-Whitney U test and ``min_samples`` the paired samples each side
    needs for the test to run.  ``latency_criterion`` also marks a row
    ``slower`` when its absolute latency alone got significantly slower;
    ``allow_removed`` and ``fail_on_inconclusive`` set what the gate
    (:func:`exit_code`) fails on.  ``baseline`` describes the old side in
    words and ``old_label`` names it (default: from its paths); ``partial``
    says why the new run is incomplete: its absent rows are then ``missing``,
    not ``removed``.  ``new_csv`` may be several runs too, pooled alike
    (the same commit measured in turns with the old one, as ``runner.py
    bisect`` does).  ``load`` reads a run: by default its per-repeat
    latencies; ``benchmarks.results.policies`` has views whose samples are
    other paired measurements (first calls, peak memory), judged by the same
    rules.  ``units`` is what the test compares (``process``: per-process
    medians where both sides have them; ``repeat``: per-repeat ratios
    always).  ``leave_out``: a pooled old side leaves out of each row's
    pool a run far from the others (``LEAVE_OUT_THRESHOLDS``), named in the
    row's note.  ``loaded`` (cores): a worker process timed while other
    processes kept more than that busy leaves the units tested, and a row
    of one process timed so is inconclusive (rule 5; None: the load is not
    judged; default ``GATE_LOADED``: the gate's ``loaded_cores``).  ``alternative``: ``two-sided`` (is the ratio any different?)
    or ``slower`` (one-sided: is the new side slower? what a re-run of a
    night's slower rows asks; only ``slower`` or ``no change``).
    See the module docstring for the rules.
    Raises ``OSError`` / ``ValueError`` on a missing or unreadable file.
    """
    if units not in UNITS:
        raise ValueError(f"units must be one of {UNITS}, got {units!r}")
    _check_alternative(alternative)
    if loaded == GATE_LOADED:
        loaded = load_rule.threshold()
    policy = _Policy(threshold, alpha, min_samples, latency_criterion, units, loaded, alternative)
    olds = [old_csv] if isinstance(old_csv, (str, os.PathLike)) else list(old_csv)
    news = [new_csv] if isinstance(new_csv, (str, os.PathLike)) else list(new_csv)
    if not olds:
        raise ValueError("no baseline run to compare with")
    if not news:
        raise ValueError("no run to judge")
    if len(news) == 1:
        new_run, new_df = load(news[0])
    else:
        new_run, new_dfs = pairing.load_baseline(news, load)
        new_df = pd.concat(new_dfs, ignore_index=True)
    old_run, old_dfs = pairing.load_baseline(olds, load,
                                             LEAVE_OUT_THRESHOLDS * threshold if leave_out else None, loaded,
                                             cpus={key: side.cpu for key, side in new_run.items()})
    old_cuts = [cut for path in olds for cut in store.cuts(path)]
    new_cuts = [cut for path in news for cut in store.cuts(path)]
    mixed = len(pairing.cpus_of(old_run)) > 1 or len(pairing.cpus_of(new_run)) > 1
    pairs = store.pair_experiments(old_run, new_run)
    rows = [_row(o or n, old_run.get(o), new_run.get(n), policy, bool(partial), mixed, old_cuts)
            for o, n in pairs]
    ratios = [row.ratio for row in rows if row.mark in MEASURED_MARKS and store.is_finite(row.change)]
    old_tag = pairing.run_tag(old_dfs[-1]) if len(olds) == 1 else ""
    labels = run_labels(olds, news[-1], old_tag, pairing.run_tag(new_df))
    return Comparison(
        rows=rows,
        old_label=old_label or labels[0],
        new_label=labels[1],
        threshold=threshold,
        alpha=alpha,
        min_samples=min_samples,
        geomean_ratio=stats.geomean(ratios),
        geomean_n=len(ratios),
        allow_removed=allow_removed,
        fail_on_inconclusive=fail_on_inconclusive,
        latency_criterion=latency_criterion,
        baseline=baseline,
        partial=partial,
        cpu_change=cpu_change(old_run, new_run),
        damaged=tuple(f"{side} {found.describe()}" for side, found in damage_of(olds, news)),
        damage=damage_of(olds, news),
        old_damaged=bool(old_cuts),
        old_empty=not old_run,
        units=units,
        alternative=alternative,
    )


def damage_of(olds: Sequence, news: Sequence) -> tuple[tuple[str, store.Damage], ...]:
    """Every damage of both sides' files (``store.damage``), OLD's first."""
    return tuple((side, found) for side, paths in (("OLD", olds), ("NEW", news))
                 for path in paths for found in store.damage(path))


# The marks of a pair found in both runs with the same settings: only these
# compared anything.
COMPARED = (SLOWER, FASTER, NO_CHANGE, UNCONFIRMED, INCONCLUSIVE, NEW_FAILURE, FIXED, STILL_FAILING)


def nothing_compared(comparison: Comparison) -> bool:
    """No experiment was in both runs with the same settings: the runs say
    nothing about each other, which is inconclusive, never a pass."""
    return not any(row.mark in COMPARED for row in comparison.rows)


RECHECKED = (SLOWER, NEW_FAILURE)  # the marks a confirmation re-run settles


def confirm(comparison: Comparison, rerun: Comparison | None, note: str = "",
            pooled: Comparison | None = None) -> Comparison:
    """``comparison`` with each ``slower`` and ``new failure`` row settled
    by a re-measurement.

    ``rerun`` compares a re-run of those experiments (same settings, same
    job) with the same baseline.  A row stays ``slower`` only when the
    re-run finds it slower too (a re-run compared with
    ``alternative="slower"`` asks just that, one-sided); it becomes
    ``unconfirmed`` when the re-run finds no change (or faster).  ``pooled``, where given, compares the
    night and its re-run together with the same baseline: a slower row the
    re-run alone does not show significantly is confirmed when the two
    together are slower and the re-run's own change is one its units flag
    (``flag_at``) -- twice the units for the test, and a slowdown seen
    twice; a one-off (a night on a loaded machine) is not seen by the
    re-run and stays unconfirmed.  Only with per-process units on both
    sides: per-repeat units do not see how far one process's ratio sits
    from the next's, so a re-run's change past the floor is no evidence
    there.  A new failure stays one when the re-run
    fails too; when the re-run passes it is ``unconfirmed`` (a flaky
    timeout), or ``slower`` if the re-run is significantly slower.  A re-run
    that could not judge the row (it is absent, or ``rerun`` is None) leaves
    it as it was: a regression is never waved through unmeasured.
    ``note`` says why there was no re-run, or what went wrong with it.
    """
    again = {row.key: row for row in rerun.rows} if rerun is not None else {}
    sided = " one-sided" if rerun is not None and rerun.alternative == SLOWER_ONLY else ""
    together = {row.key: row for row in pooled.rows} if pooled is not None else {}
    rows, confirmed, unconfirmed = [], 0, 0
    for row in comparison.rows:
        if row.mark not in RECHECKED:
            rows.append(row)
            continue
        second = again.get(row.key)
        tested = sided if second is not None and store.is_finite(second.p_value) else ""
        measured = f"{_change_cell(second.change)}, p {_p_cell(second.p_value)}{tested}" if second else ""
        if row.mark == NEW_FAILURE:
            if second is None or second.mark == NEW_FAILURE:
                confirmed += second is not None
                settled = "confirmed by a re-run" if second is not None else "not settled (no re-run of it)"
                rows.append(replace(row, note=joined(row.note, settled)))
            elif second.mark == SLOWER and (not sided or second.p_value < comparison.alpha / 2):
                # The night never timed the row: its re-run's slowdown is a
                # first finding, held to the night's two-sided level.
                confirmed += 1
                rows.append(replace(second, note=joined(second.note, "failed in the night; a re-run ran "
                                                                     f"it and found it slower ({measured})")))
            else:
                unconfirmed += 1
                found = second.mark if second.mark != SLOWER else f"{NO_CHANGE} at the night's two-sided level"
                rows.append(replace(row, mark=UNCONFIRMED,
                                    note=joined(row.note, f"a re-run ran it: {found} ({measured})")))
            continue
        both = together.get(row.key)
        if second is not None and second.mark == SLOWER:
            confirmed += 1
            rows.append(replace(row, note=joined(row.note, f"confirmed by a re-run ({measured})")))
        elif (second is not None and both is not None and second.unit == both.unit
              and confirmed_with_night(second.mark, second.change, both.mark, comparison.threshold, second.unit)):
            confirmed += 1
            rows.append(replace(row, note=joined(
                row.note, f"confirmed by a re-run ({measured}) with the night: together "
                          f"{_change_cell(both.change)}, p {_p_cell(both.p_value)}{sided}")))
        elif second is not None and second.mark in (NO_CHANGE, FASTER):
            unconfirmed += 1
            rows.append(replace(row, mark=UNCONFIRMED,
                                note=joined(row.note, f"a re-run found {second.mark} ({measured})")))
        else:
            why = f"the re-run: {second.mark}" if second is not None else "no re-run of it"
            rows.append(replace(row, note=joined(row.note, f"not settled ({why})")))
    tried = sum(1 for row in comparison.rows if row.mark in RECHECKED) if rerun is not None else 0
    result = Confirmation(rerun=tried, confirmed=confirmed, unconfirmed=unconfirmed,
                          verdict_before=verdict(comparison), exit_code_before=exit_code(comparison),
                          note=note, alternative=rerun.alternative if rerun is not None else "")
    return replace(comparison, rows=rows, confirmation=result)


def confirmed_with_night(rerun_mark: str, rerun_change: float, pooled_mark: str, threshold: float,
                         unit: str) -> bool:
    """Does a re-run not significant alone confirm a slower row with the
    night (``confirm``)? The night and the re-run together slower, the
    re-run's own change past the floor its units flag, per-process units."""
    return (rerun_mark == NO_CHANGE and pooled_mark == SLOWER and unit == UNIT_PROCESS
            and rerun_change >= flag_at(threshold, unit))


def joined(*notes: str) -> str:
    """Notes joined with "; ", the empty ones left out."""
    return "; ".join(n for n in notes if n)


def failing_counts(comparison: Comparison) -> dict[str, int]:
    """Rows per mark for the marks that fail the gate (none: it passes)."""
    return {m: n for m, n in comparison.counts().items() if m in comparison.gating_marks}


def exit_code(comparison: Comparison) -> int:
    """The gate: 1 when any row has a mark in ``comparison.gating_marks``,
    when OLD had no rows to judge against (or, with
    ``fail_on_inconclusive``, when nothing was compared), else 0."""
    return int(bool(failing_counts(comparison)) or comparison.old_empty
               or (comparison.fail_on_inconclusive and nothing_compared(comparison)))


# --------------------------------------------------------------------------
# Render


def _latency_cell(status: str | None, latency_ms: float) -> str:
    if status is None:
        return "-"
    if status != store.STATUS_PASS:
        return status
    return f"{latency_ms:.3f}" if store.is_finite(latency_ms) else "n/a"


def _change_cell(change: float) -> str:
    return f"{change:+.1%}" if store.is_finite(change) else "-"


def _p_cell(p_value: float) -> str:
    if not store.is_finite(p_value):
        return "-"
    return "<0.001" if p_value < 0.001 else f"{p_value:.3f}"


def _pair_cell(old: float, new: float, arrow: str, fmt: str) -> str:
    def one(value: float) -> str:
        return format(value, fmt) if store.is_finite(value) else "-"

    if not (store.is_finite(old) or store.is_finite(new)):
        return "-"
    return f"{one(old)} {arrow} {one(new)}"


HEADERS = ["name", "backend", "mark", "old ms", "new ms", "latency", "backend/baseline old→new",
           "change", "p", "detectable", "speedup old→new", "note"]
_ALIGN = ("left", "left", "left", "right", "right", "right", "right", "right", "right", "right", "right",
          "left")


def _detectable_cell(value: float) -> str:
    return f"{value:.1%}" if store.is_finite(value) else "-"


def _md_escape(cell: str) -> str:
    # A "|" in an error message would split the cell and shift the columns.
    return cell.replace("|", "\\|")


def _table_rows(comparison: Comparison, arrow: str, markdown: bool) -> list[list[str]]:
    body = []
    for row in comparison.rows:
        gating = row.mark in comparison.gating_marks
        mark = f"**{row.mark}**" if markdown and gating else row.mark
        cells = [
            row.name,
            row.backend,
            mark,
            _latency_cell(row.old_status, row.old_latency_ms),
            _latency_cell(row.new_status, row.new_latency_ms),
            _change_cell(row.latency_change),
            _pair_cell(row.old_ratio, row.new_ratio, arrow, ".3f"),
            _change_cell(row.change),
            _p_cell(row.p_value),
            _detectable_cell(row.detectable),
            _pair_cell(row.old_speedup, row.new_speedup, arrow, ".2f"),
            row.note.replace("->", arrow),
        ]
        body.append([_md_escape(c) for c in cells] if markdown else cells)
    return body


def _table(comparison: Comparison, tablefmt: str, arrow: str, markdown: bool) -> str:
    headers = [h.replace("→", arrow) for h in HEADERS]
    # disable_numparse: cells are already formatted; keep them verbatim.
    return tabulate(_table_rows(comparison, arrow, markdown), headers=headers, tablefmt=tablefmt,
                    colalign=_ALIGN, disable_numparse=True)


def summary(comparison: Comparison) -> str:
    """``"1 slower, 2 no change; geomean new/old ratio 0.98x (n=3, below 1 = faster)"``."""
    counts = ", ".join(f"{n} {mark}" for mark, n in comparison.counts().items()) or "no rows"
    if comparison.geomean_n:
        geomean = (
            f"geomean new/old backend/baseline ratio {comparison.geomean_ratio:.3f}x "
            f"(n={comparison.geomean_n}, below 1 = faster)"
        )
    else:
        geomean = "geomean new/old ratio n/a (no row tested)"
    return f"{counts}; {geomean}"


def sensitivity(comparison: Comparison) -> str:
    """``"smallest slowdown detectable: 2.5% (0.5 of the threshold, per
    process) on 3 of 4 tested rows; no better than: resnet18/x 12.0%"``: how
    sure the "no change" rows are; ``""`` when no row was tested.  A row is
    at the floor when it could catch the smallest change its units flag
    (``flag_at``)."""
    tested = [row for row in comparison.rows if store.is_finite(row.detectable)]
    if not tested:
        return ""
    floor = [row for row in tested if row.detectable <= flag_at(comparison.threshold, row.unit) + 1e-12]
    worse = sorted((row for row in tested if row not in floor), key=lambda row: -row.detectable)
    floors = sorted({flag_at(comparison.threshold, row.unit) for row in floor or tested})
    named = [f"{value:.1%} (" + ("the threshold" if value >= comparison.threshold else
                                 f"{PROCESS_FLAG_FRACTION:g} of the threshold, per process") + ")"
             for value in floors]
    text = f"smallest slowdown detectable: {' or '.join(named)} on {len(floor)} of {len(tested)} tested rows"
    if worse:
        shown = ", ".join(f"{row.name}/{row.backend} {row.detectable:.1%}" for row in worse[:8])
        more = f" and {len(worse) - 8} more" if len(worse) > 8 else ""
        text += f"; no better than: {shown}{more}"
    return text


def rule(comparison: Comparison) -> str:
    """The sentences that say how rows are marked and what fails the gate."""
    latency = (
        " A row whose absolute latency alone got slower by the same test is also 'slower' "
        "(--latency-criterion)." if comparison.latency_criterion else
        " Absolute latency is information only."
    )
    fails = [m for m in MARKS if m in comparison.gating_marks]
    confirmed = (
        " A slower row was re-measured in a re-run of it and stays slower only if the re-run is "
        f"slower too{_rerun_test(comparison.confirmation)}, a new failure only if the re-run fails too "
        "(else: unconfirmed)."
        if comparison.confirmation and comparison.confirmation.rerun
        else "")
    return (
        f"ratio = backend/baseline latency of the same repeat (paired within a run, so drift "
        f"between runs cancels); change = median new ratio / median old ratio - 1. "
        f"{_test_cell(comparison)}: significant at p<{comparison.alpha:g} ({_sided(comparison)} Mann-Whitney U on the "
        f"ratios) and |change| >= {comparison.threshold:.0%} ({_flag_cell(comparison)} on per-process units); fewer than {comparison.min_samples} "
        f"paired samples on a side, or too few units to reach p<{comparison.alpha:g}: inconclusive; else no change.{latency} "
        f"{_units_rule(comparison)} "
        f"The gate fails (exit status 1) on any {', '.join(fails)}.{confirmed}"
    )


def _rerun_test(confirmation: Confirmation) -> str:
    return (" (a one-sided test: the re-run asks only whether the night's slowdown is there again)"
            if confirmation.alternative == SLOWER_ONLY else "")


def _test_cell(comparison: Comparison) -> str:
    return "slower" if comparison.alternative == SLOWER_ONLY else "slower/faster"


def _sided(comparison: Comparison) -> str:
    return "one-sided" if comparison.alternative == SLOWER_ONLY else "two-sided"


def _flag_cell(comparison: Comparison) -> str:
    return f"{flag_at(comparison.threshold, UNIT_PROCESS):.1%}"


def _units_rule(comparison: Comparison) -> str:
    per_process = (" The test's units are the median ratios of each worker process where both sides "
                   "recorded their processes (and so few units can reach the level), else each "
                   "repeat's ratio." if comparison.units == UNIT_PROCESS else
                   " The test's units are each repeat's ratio.")
    return (per_process.strip() + " detectable: the smallest slowdown whose 95% interval, as wide as "
            "this row's, would have left out no change (at least the change the row's units flag): a slowdown that size "
            "is caught about half the time, twice that nearly always.")


def verdict(comparison: Comparison) -> str:
    """``"PASS"``, ``"PASS (2 inconclusive)"`` or ``"FAIL (1 slower, 2 removed)"``;
    never a PASS against a damaged OLD file (what it lost was not judged:
    ``INCONCLUSIVE (..., OLD damaged)``), nor where rows timed on a loaded
    machine could not be judged (``INCONCLUSIVE (3 inconclusive, 3 timed
    on a loaded machine)``), never a pass against an empty one."""
    failing = [f"{n} {m}" for m, n in failing_counts(comparison).items()]
    if comparison.old_empty:
        failing.append("OLD has no rows to judge against")
    loaded = sum(row.loaded for row in comparison.rows)
    elsewhere = sum(row.other_cpu for row in comparison.rows)
    unjudged = (["OLD damaged"] if comparison.old_damaged else []) + (
        [f"{loaded} timed on a loaded machine"] if loaded else []) + (
        [f"{elsewhere} on a CPU no baseline run had"] if elsewhere else [])
    if failing:
        return f"FAIL ({', '.join(failing + unjudged)})"
    if nothing_compared(comparison):
        return f"INCONCLUSIVE ({'; '.join(['no experiment in both runs with the same settings', *unjudged])})"
    inconclusive = comparison.counts().get(INCONCLUSIVE)
    qualifiers = ([f"{inconclusive} inconclusive"] if inconclusive else []) + unjudged
    if unjudged:
        return f"INCONCLUSIVE ({', '.join(qualifiers)})"
    return f"PASS ({', '.join(qualifiers)})" if qualifiers else "PASS"


def context(comparison: Comparison) -> list[str]:
    """What a reader must know before the table: the baseline used, a
    partial run, a change of CPU, the re-run of slower rows (each a line,
    only those that apply)."""
    lines = [f"DAMAGED: {line}" for line in comparison.damaged]
    loaded = [row for row in comparison.rows if row.loaded]
    if loaded:
        lines.append(f"LOADED: {len(loaded)} row(s) timed while other processes kept the machine busy "
                     f"({', '.join(f'{row.name}/{row.backend}' for row in loaded[:6])}"
                     f"{', ...' if len(loaded) > 6 else ''}): inconclusive, each note says how loaded")
    if comparison.old_empty:
        lines.append("EMPTY: OLD has no rows (a run that wrote none, or a header-only file): "
                     "nothing to judge NEW against")
    if comparison.partial:
        lines.append(f"PARTIAL RUN: {comparison.partial}; its absent rows are missing, not removed")
    if comparison.baseline:
        lines.append(f"baseline: {comparison.baseline}")
    if comparison.cpu_change:
        lines.append(f"CPU changed: {comparison.cpu_change}")
    if comparison.confirmation is not None:
        lines.append(f"confirmation: {comparison.confirmation.describe()}")
    return lines


# Above every table: its two measures of the same thing point opposite ways.
DIRECTION = ("How to read it: backend/baseline = the ratio of their latencies, below 1 = the backend is faster; it is "
             "what the gate judges (the median of each repeat's ratio). speedup = baseline/backend "
             "latency, above 1 = faster, as the run's report shows it (the ratio of the medians). On a "
             "noisy row the two can disagree (a 0.75x speedup beside a 0.935 ratio): the ratio is the "
             "paired one, the speedup only information.")


def render_markdown(comparison: Comparison, title: str | None = None) -> str:
    """Markdown for a pull request: verdict, summary, table and the rules."""
    title = title or f"Benchmark comparison: {comparison.old_label} → {comparison.new_label}"
    parts = [f"# {title}", "",
             f"old: `{comparison.old_label}`, new: `{comparison.new_label}`", "",
             *[f"- {line.replace('->', '→')}" for line in context(comparison)],
             *([""] if context(comparison) else []),
             f"**{verdict(comparison)}**: {summary(comparison)}.", "",
             *([sensitivity(comparison) + ".", ""] if sensitivity(comparison) else [])]
    if comparison.rows:
        parts += [DIRECTION, "", _table(comparison, "github", "→", markdown=True), ""]
    parts += [rule(comparison).replace(">=", "≥"), ""]
    return "\n".join(parts)


def render_console(comparison: Comparison) -> str:
    """Plain-text comparison for the terminal (ASCII arrows)."""
    header = f"{comparison.old_label} -> {comparison.new_label}: {verdict(comparison)}"
    parts = [header, *context(comparison), summary(comparison),
             *([sensitivity(comparison)] if sensitivity(comparison) else []), ""]
    if comparison.rows:
        parts += [DIRECTION, "", _table(comparison, "simple", "->", markdown=False), ""]
    parts += [rule(comparison), ""]
    return "\n".join(parts)


def render_json(comparison: Comparison) -> str:
    """Machine-readable result (the dashboard reads it): verdict, exit
    status, counts, the policy and every row; nan is written as null."""
    document = {
        "old": comparison.old_label,
        "new": comparison.new_label,
        "verdict": verdict(comparison),
        "exit_code": exit_code(comparison),
        "counts": comparison.counts(),
        "geomean_ratio": comparison.geomean_ratio,
        "geomean_n": comparison.geomean_n,
        "policy": {k: getattr(comparison, k) for k in (
            "threshold", "alpha", "min_samples", "allow_removed", "fail_on_inconclusive",
            "latency_criterion", "units", "alternative")},
        "sensitivity": sensitivity(comparison),
        "baseline": comparison.baseline,
        "partial": comparison.partial,
        "cpu_change": comparison.cpu_change,
        "damaged": list(comparison.damaged),
        "damage": [{"side": side, **found.to_json()} for side, found in comparison.damage],
        "old_empty": comparison.old_empty,
        "confirmation": (None if comparison.confirmation is None
                         else vars(comparison.confirmation)),
        "rows": [_row_fields(row) for row in comparison.rows],
    }
    return json.dumps(store.plain(document), indent=1, allow_nan=False) + "\n"

