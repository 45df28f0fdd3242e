"""What is judged of a run, metric by metric: each a view of the run as
``pairing.Side``s whose paired samples are that metric's, so that
``compare.compare(..., load=METRICS[name].load)`` judges it by the gate's own
test (the backend/baseline ratio paired within each run, compared across
runs: Mann-Whitney U and a threshold).

* ``speedup``: steady-state latencies, one pair per timed repeat
  (``pairing.load_run``, what ``compare`` has always judged);
* ``first_call``: the cold first call (``compilation_latency``) of the
  backend and of the baseline, one pair per cold process: the runner starts
  several fresh processes per contender, taking turns, and the samples
  records keep each one's seconds (``cold_first_calls_s``), so the k-th
  process of the backend is paired with the k-th of the baseline, started in
  the same round; a run that kept one first call per side (the measuring
  process's, or an older record) is one pair (``first_call_s``);
* ``host_memory`` / ``device_memory``: the peak memory of the backend and of
  the baseline (``peak_host_mb`` / ``baseline_peak_host_mb``, the device's
  likewise), one pair per run;
* ``accuracy``: the rows' statuses only (an ``--accuracy`` run: a model that
  starts failing is a ``new failure``).

A metric with one pair per run needs as many runs per side as the test needs
samples: pooled nights, or rounds of ``runner.py bisect``.  The first call
has one pair per cold process: a night's three against the pooled nights'
are enough for the test (``min_samples: 3`` in ``configs/compare.yaml``).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any, Callable, Sequence

import pandas as pd
import yaml
from scipy import stats as sps

from benchmarks.results import pairing, stats, store

NAN = float("nan")

Run = tuple[dict[store.ExperimentKey, pairing.Side], pd.DataFrame]


def _first_calls(csv_path: str | os.PathLike) -> dict[tuple, tuple[float, tuple[float, ...]]]:
    """Per (experiment key..., role): the first call in s and each cold
    process's seconds (``()`` when the record kept none)."""
    path = store.samples_path(csv_path)
    if not path.exists():
        return {}
    found = {}
    for record in store.read_samples(path):
        if isinstance(record, dict) and record.get("role") in store.SAMPLE_ROLES:
            value = record.get("first_call_s")
            tries = record.get("cold_first_calls_s") or ()
            found[(*store.experiment_key(record), record["role"])] = (
                float(value) if store.is_finite(value) else pairing.NAN,
                tuple(float(t) if store.is_finite(t) else pairing.NAN for t in tries))
    return found


def _first_call_pairs(backend: tuple[float, tuple], baseline: tuple[float, tuple], by_process: bool
                      ) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """(backend, baseline) first calls: one per cold process, the k-th of
    each side together (they started in the same round), when ``by_process``
    and both sides kept their processes; else the one pair of the record."""
    if by_process and backend[1] and baseline[1]:
        n = min(len(backend[1]), len(baseline[1]))
        return backend[1][:n], baseline[1][:n]
    return (backend[0],), (baseline[0],)


def load_first_calls(csv_path: str | os.PathLike, by_process: bool = True) -> Run:
    """A run whose pairs are (backend, baseline) first calls, s: one per cold
    process (``_first_call_pairs``; ``by_process=False``: one per run, the
    medians the row reports, as the gate judged before it kept each process)."""
    run, df = pairing.load_run(csv_path)
    calls = _first_calls(csv_path)
    view = {}
    for key, side in run.items():
        # A version-1 samples record names only its (name, backend).
        pair = tuple(calls.get((*key, role), calls.get((*key.pair_only(), role)))
                     for role in ("backend", "baseline"))
        samples = _first_call_pairs(pair[0], pair[1], by_process) if None not in pair else ((), ())
        view[key] = replace(side, backend_s=samples[0], baseline_s=samples[1], process_repeats=())
    return view, df


def _peak_loader(where: str) -> Callable[[str | os.PathLike], Run]:
    backend_column, baseline_column = f"peak_{where}_mb", f"baseline_peak_{where}_mb"

    def load(csv_path: str | os.PathLike) -> Run:
        run, df = pairing.load_run(csv_path)
        peaks = {}
        for row in store.latest(df).to_dict("records"):
            backend, baseline = row.get(backend_column), row.get(baseline_column)
            if store.is_finite(backend) and store.is_finite(baseline):
                peaks[store.experiment_key(row)] = ((float(backend),), (float(baseline),))
        return {key: replace(side, backend_s=peaks.get(key, ((), ()))[0],
                             baseline_s=peaks.get(key, ((), ()))[1])
                for key, side in run.items()}, df

    load.__doc__ = f"A run whose one pair per experiment is (backend, baseline) peak {where} memory, MB."
    return load


def load_statuses(csv_path: str | os.PathLike) -> Run:
    """A run's statuses, no samples: only a change of status is judged."""
    run, df = pairing.load_run(csv_path)
    return {key: replace(side, backend_s=(), baseline_s=()) for key, side in run.items()}, df


@dataclass(frozen=True)
class Metric:
    """One metric: its name, how a run is read for it, the runner's measure
    that records it, and what its ratio means."""

    name: str
    load: pairing.Loader
    measure: str  # "performance" | "accuracy"
    per_repeat: bool  # one pair per timed repeat (else one per run)
    ratio: str


METRICS = {m.name: m for m in (
    Metric("speedup", pairing.load_run, "performance", True, "backend/baseline latency"),
    Metric("first_call", load_first_calls, "performance", False, "backend/baseline first call"),
    Metric("host_memory", _peak_loader("host"), "performance", False, "backend/baseline peak host memory"),
    Metric("device_memory", _peak_loader("device"), "performance", False,
           "backend/baseline peak device memory"),
    Metric("accuracy", load_statuses, "accuracy", False, "status"),
)}


# --------------------------------------------------------------------------
# Policies: which metric, what threshold, from configs/compare.yaml

DEFAULT_PATH = Path(__file__).resolve().parents[2] / "configs" / "compare.yaml"
PASS_RATE = "pass_rate"


class PolicyError(ValueError):
    """A gate configuration that cannot be used; the message names the file and the key."""


@dataclass(frozen=True)
class Policy:
    """How one metric is judged against the baseline nights.

    ``threshold``: the smallest relative change of the metric's paired
    ratio that counts (for ``pass_rate``: the largest drop of the pass
    rate, in points, that passes); ``alpha`` and ``min_samples``: the U
    test's level and the samples each side needs for it; a metric with one
    pair per run and fewer samples than that on the new side is judged by
    its range instead (``min_baseline`` baseline pairs at least: see
    ``judge_metric``);
    ``confirm``: whether a regression is measured again before it fails
    the night."""

    name: str
    threshold: float
    alpha: float = 0.05
    min_samples: int = 5
    min_baseline: int = 3
    confirm: bool = True

    @property
    def metric(self) -> Metric | None:
        return METRICS.get(self.name)


def _policy(path: Path, name: str, entry: Any) -> Policy:
    if name not in METRICS and name != PASS_RATE or name == "accuracy":
        raise PolicyError(f"{path}: policies: {name!r} is no metric (one of: "
                          f"{', '.join(sorted(set(METRICS) - {'accuracy'} | {PASS_RATE}))})")
    if not isinstance(entry, dict):
        raise PolicyError(f"{path}: policies.{name}: a mapping of settings, not {entry!r}")
    known = {f.name for f in fields(Policy)} - {"name"}
    unknown = sorted(set(entry) - known)
    if unknown:
        raise PolicyError(f"{path}: policies.{name}.{unknown[0]}: unknown key (known: {', '.join(sorted(known))})")
    if "threshold" not in entry:
        raise PolicyError(f"{path}: policies.{name}: threshold is required")
    policy = Policy(name=name, **entry)
    checks = {"threshold": isinstance(policy.threshold, (int, float)) and policy.threshold >= 0,
              "alpha": isinstance(policy.alpha, float) and 0 < policy.alpha < 1,
              "min_samples": isinstance(policy.min_samples, int) and policy.min_samples >= 2,
              "min_baseline": isinstance(policy.min_baseline, int) and policy.min_baseline >= 1,
              "confirm": isinstance(policy.confirm, bool)}
    bad = [key for key, ok in checks.items() if not ok]
    if bad:
        raise PolicyError(f"{path}: policies.{name}.{bad[0]}: bad value {getattr(policy, bad[0])!r}")
    return policy


def load_policies(path: str | os.PathLike | None = None) -> tuple[Policy, ...]:
    """The policies of ``path`` (default ``configs/compare.yaml``), in its order."""
    path = Path(path) if path else DEFAULT_PATH
    try:
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as err:
        raise PolicyError(f"{path}: {str(err).splitlines()[0]}") from None
    if not isinstance(document, dict) or set(document) != {"policies"} or not isinstance(
            document["policies"], dict) or not document["policies"]:
        raise PolicyError(f"{path}: one key, policies, mapping metric names to their settings")
    return tuple(_policy(path, name, entry) for name, entry in document["policies"].items())


# --------------------------------------------------------------------------
# Judging


@dataclass(frozen=True)
class Verdict:
    """One policy applied: its rows (``compare``'s, on the metric's view),
    the regressed ones, and a one-line summary.  For ``pass_rate`` the
    "ratio" is the new pass rate over the old, with the new rate's 95%
    interval (Wilson) over the old rate."""

    policy: Policy
    comparison: Any  # compare.Comparison (None for pass_rate)
    regressed: tuple  # the rows (compare.RowComparison) the policy fails on
    failed: bool = False
    judged: bool = True  # something was measured on both sides (else: inconclusive)
    ratio: float = NAN
    low: float = NAN
    high: float = NAN
    detail: str = ""

    @property
    def passed(self) -> bool:
        return not self.failed

    def line(self) -> str:
        """``first_call: FAIL: 1 slower (resnet18/ours 1.42x [1.30, 1.55]), threshold 20%``."""
        state = "FAIL" if self.failed else "PASS" if self.judged else "INCONCLUSIVE"
        return f"{self.policy.name}: {state}: {self.detail}"


def _range_row(row, old: pairing.Side | None, new: pairing.Side | None, policy: Policy):
    """A row of a one-pair-per-run metric with too few new samples for the U
    test: judged by the range of the baseline runs' ratios."""
    from benchmarks.results import compare

    if old is None or new is None or not new.ratios or len(old.ratios) < policy.min_baseline:
        return row
    old_ratios, new_ratios = old.ratios, new.ratios
    low, high = stats.median(new_ratios) / max(old_ratios) - 1, stats.median(new_ratios) / min(old_ratios) - 1
    change = row.change
    if change >= policy.threshold and min(new_ratios) > max(old_ratios):
        mark = compare.SLOWER
    elif change <= -policy.threshold and max(new_ratios) < min(old_ratios):
        mark = compare.FASTER
    else:
        mark = compare.NO_CHANGE
    note = (f"{len(new_ratios)} run(s) against {len(old_ratios)}: judged by the baseline runs' range "
            f"(interval: the change against the highest and the lowest)")
    return replace(row, mark=mark, change_low=low, change_high=high, note=note)


def judge_metric(policy: Policy, olds: Sequence, news: Sequence, **compare_kwargs):
    """``compare.compare`` of the metric's view (``load=``: another view of
    it, e.g. the first call one pair a night): the U test where both
    sides have ``min_samples`` pairs; a one-pair-per-run metric with fewer
    on the new side (one night) is ``slower`` when its new ratio is above
    every baseline run's and above their median by ``threshold`` (faster
    likewise), with the change against the highest and lowest baseline run
    as its interval."""
    from benchmarks.results import compare

    metric = METRICS[policy.name]
    # Leaving a far night out of the pool, and judging a row timed on a
    # loaded machine inconclusive, are the steady ratio's rules; the other
    # metrics keep every night (the cold first call is noisy night to night)
    # and are not timed where the load is read.
    steady = policy.name == "speedup"
    compare_kwargs = {"leave_out": steady, "load": metric.load, **compare_kwargs,
                      **({} if steady else {"loaded": None})}
    comparison = compare.compare(list(olds), list(news), policy.threshold, policy.alpha, policy.min_samples,
                                 **compare_kwargs)
    if metric.per_repeat:
        return comparison
    old, _ = pairing.load_baseline(list(olds), compare_kwargs["load"])
    new, _ = pairing.load_baseline(list(news), compare_kwargs["load"])
    rows = [_range_row(row, old.get(row.key), new.get(row.key), policy) if row.mark == compare.INCONCLUSIVE
            else row for row in comparison.rows]
    ratios = [row.ratio for row in rows if row.mark in compare.MEASURED_MARKS and store.is_finite(row.change)]
    return replace(comparison, rows=rows, geomean_ratio=stats.geomean(ratios), geomean_n=len(ratios))


def _cell(row) -> str:
    if not store.is_finite(row.change):
        return f"{row.name}/{row.backend} {row.mark}"
    interval = (f" [{1 + row.change_low:.2f}, {1 + row.change_high:.2f}]"
                if store.is_finite(row.change_low) else "")
    return f"{row.name}/{row.backend} {row.ratio:.2f}x{interval}"


def judge_pass_rate(policy: Policy, speedup) -> Verdict:
    """The pass rate over the experiments found in both runs (``speedup``:
    the steady-state comparison, whose statuses these are)."""
    from benchmarks.results import compare

    both = [row for row in speedup.rows if row.mark in compare.COMPARED]
    if not both:
        return Verdict(policy, None, (), judged=False, detail="no experiment in both runs")
    old_ok = sum(row.old_status == store.STATUS_PASS for row in both)
    # A new failure its re-run did not reproduce (unconfirmed: a flaky
    # timeout) passed when measured again.
    new_ok = sum(row.new_status == store.STATUS_PASS or row.mark == compare.UNCONFIRMED for row in both)
    old_rate, new_rate = old_ok / len(both), new_ok / len(both)
    interval = sps.binomtest(new_ok, len(both)).proportion_ci(method="wilson")
    failures = tuple(row for row in both if row.mark == compare.NEW_FAILURE)
    failed = new_rate < old_rate - policy.threshold
    ratio = new_rate / old_rate if old_rate else NAN
    names = ", ".join(f"{r.name}/{r.backend}" for r in failures)
    detail = (f"{new_ok}/{len(both)} passed, was {old_ok}/{len(both)}: "
              f"ratio {ratio:.2f}x [{interval.low / old_rate if old_rate else NAN:.2f}, "
              f"{interval.high / old_rate if old_rate else NAN:.2f}]; allowed drop {policy.threshold:.0%}"
              + (f"; new failures: {names}" if names else ""))
    return Verdict(policy, None, failures if failed else (), failed=failed, ratio=ratio,
                   low=interval.low / old_rate if old_rate else NAN,
                   high=interval.high / old_rate if old_rate else NAN, detail=detail)


def verdict_of(policy: Policy, comparison) -> Verdict:
    """A metric policy's verdict from its comparison: it fails on ``slower`` rows."""
    from benchmarks.results import compare

    # Steady speedup fails as the gate always has (slower, new failure,
    # removed...); the other metrics on their slower rows only (a failure is
    # the pass rate's, and speedup's, to judge).
    failing = comparison.gating_marks if policy.name == "speedup" else {compare.SLOWER}
    slower = tuple(row for row in comparison.rows if row.mark in failing)
    # Other metrics count what they measured: statuses are speedup's to tell.
    shown_marks = None if policy.name == "speedup" else {*compare.MEASURED_MARKS, compare.INCONCLUSIVE}
    counts = ", ".join(f"{n} {m}" for m, n in comparison.counts().items()
                       if shown_marks is None or m in shown_marks) or "nothing measured on both sides"
    shown = "; ".join(_cell(row) for row in slower)
    geomean = comparison.geomean_ratio
    detail = (f"{counts}" + (f" ({shown})" if shown else "")
              + (f"; geomean {geomean:.2f}x (n={comparison.geomean_n})" if comparison.geomean_n else "")
              + f"; {policy.threshold:.0%} threshold, {METRICS[policy.name].ratio} ratio")
    failed = compare.exit_code(comparison) == 1 if policy.name == "speedup" else bool(slower)
    judged = any(row.mark in compare.MEASURED_MARKS for row in comparison.rows) or (
        policy.name == "speedup" and not compare.nothing_compared(comparison))
    return Verdict(policy, comparison, slower, failed=failed, judged=judged, ratio=geomean, detail=detail)


def metric_comparisons(policies: Sequence[Policy], olds: Sequence, news: Sequence,
                       **compare_kwargs) -> dict:
    """``judge_metric`` of every policy but speedup and the pass rate, by name."""
    return {p.name: judge_metric(p, olds, news, **compare_kwargs)
            for p in policies if p.metric is not None and p.name != "speedup"}


def verdicts(policies: Sequence[Policy], speedup, others: dict) -> list[Verdict]:
    """Every policy's verdict, in the configuration's order: ``speedup`` is
    the steady-state comparison (the pass rate counts its statuses),
    ``others`` the other metrics' (``metric_comparisons``)."""
    found = []
    for policy in policies:
        if policy.name == PASS_RATE:
            found.append(judge_pass_rate(policy, speedup))
        elif policy.name == "speedup":
            found.append(verdict_of(policy, speedup))
        else:
            found.append(verdict_of(policy, others[policy.name]))
    return found


def judge(policies: Sequence[Policy], olds: Sequence, news: Sequence, *, speedup=None,
          **compare_kwargs) -> list[Verdict]:
    """Every policy's verdict of ``news`` against ``olds`` (paths, oldest
    first); ``speedup``: the steady-state comparison when the caller made it
    already (its own flags set it)."""
    if speedup is None:
        chosen = next((p for p in policies if p.name == "speedup"), Policy("speedup", 0.05))
        speedup = judge_metric(chosen, olds, news, **compare_kwargs)
    return verdicts(policies, speedup, metric_comparisons(policies, olds, news, **compare_kwargs))


def with_speedup(policies: Sequence[Policy], threshold: float, alpha: float, min_samples: int
                 ) -> tuple[Policy, ...]:
    """``policies`` with speedup's set by compare's flags (as the gate always has)."""
    return tuple(replace(p, threshold=threshold, alpha=alpha, min_samples=min_samples)
                 if p.name == "speedup" else p for p in policies)


def failed(found: Sequence[Verdict]) -> list[str]:
    return [v.policy.name for v in found if v.failed]


def _row_json(row) -> dict:
    return {"name": row.name, "backend": row.backend, "mark": row.mark, "ratio": row.ratio,
            "low": 1 + row.change_low, "high": 1 + row.change_high, "note": row.note}


def exit_code_before(verdict: Verdict) -> int:
    """1 when the policy failed, or would have without its confirmation
    re-run (rows slower before the re-run made them ``unconfirmed``)."""
    confirmation = getattr(verdict.comparison, "confirmation", None)
    before = confirmation.exit_code_before if confirmation is not None else 0
    return max(int(verdict.failed), before)


def to_json(found: Sequence[Verdict]) -> list[dict]:
    """The verdicts as plain data (nan stays nan: ``store.plain`` makes it null)."""
    return [{"policy": v.policy.name, "verdict": v.line().split(": ")[1], "threshold": v.policy.threshold,
             "ratio": v.ratio, "low": v.low, "high": v.high, "detail": v.detail,
             "exit_code_before": exit_code_before(v),
             "regressed": [_row_json(r) for r in v.regressed]} for v in found]


def _ratio_cell(row) -> str:
    if not store.is_finite(row.change):
        return "-"
    interval = f" [{1 + row.change_low:.2f}, {1 + row.change_high:.2f}]" if store.is_finite(row.change_low) else ""
    return f"{row.ratio:.2f}x{interval}"


def regressed_table(found: Sequence[Verdict]) -> list[list[str]]:
    """``[policy, model, backend, mark, ratio [interval], note]`` per regressed row of a failed policy."""
    return [[v.policy.name, row.name, row.backend, row.mark, _ratio_cell(row), row.note]
            for v in found if v.failed for row in v.regressed]


def render(found: Sequence[Verdict], markdown: bool = False) -> str:
    """One line per policy (a markdown list with ``markdown``, and a table
    of the failed policies' rows)."""
    bullet = "- " if markdown else ""
    text = "\n".join(f"{bullet}{v.line()}" for v in found) + "\n"
    table = regressed_table(found)
    if markdown and table:
        from tabulate import tabulate

        cells = [[c.replace("|", "\\|") for c in row] for row in table]
        text += "\n" + tabulate(cells, headers=["policy", "model", "backend", "mark", "ratio [95% interval]",
                                                  "note"], tablefmt="github", disable_numparse=True) + "\n"
    return text
