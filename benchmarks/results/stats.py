"""Statistics for benchmark timings.

Offers:

* ``median(samples)`` -- the location estimate used for every latency.
* ``speedup(baseline_samples, backend_samples)`` -- ratio of medians.
* ``speedup_ci(baseline_samples, backend_samples, ...)`` -- percentile
  bootstrap confidence interval of that ratio (``scipy.stats.bootstrap``).
* ``median_ci(values, ...)`` -- bootstrap interval of the median of a few
  values (per-process speedups).
* ``geomean(values)`` -- geometric mean over the finite, positive values only.
* ``geomean_of_groups(values, groups)`` -- ``(geomean, n)`` with each group
  (a model measured at several batch sizes) counted once.
* ``relative_ci_width(low, high, estimate)`` -- CI width relative to the
  estimate, the number used to flag unstable measurements.

All functions take plain sequences of floats (seconds or any unit, as long as
both sides use the same one) and return plain floats; "no answer" is ``nan``
rather than an exception, so one bad model never stops a report.
"""
from __future__ import annotations

import math
from typing import Iterable, Sequence

import numpy as np
from scipy import stats as _sps

__all__ = ["median", "speedup", "speedup_ci", "median_ci", "geomean", "geomean_of_groups", "relative_ci_width"]

NAN = float("nan")


def _as_array(samples: Iterable[float]) -> np.ndarray:
    return np.asarray(list(samples), dtype=float)


def median(samples: Iterable[float]) -> float:
    """Median of ``samples``; ``nan`` when there are none.

    The median (not the mean) because timing noise is one-sided: a GC pause
    or a context switch only ever makes an iteration slower.
    """
    arr = _as_array(samples)
    if arr.size == 0:
        return NAN
    return float(np.median(arr))


def _ratio(numerator: float, denominator: float) -> float:
    # A zero, negative or missing denominator is a broken measurement, not an
    # infinitely fast backend: report "unknown" instead of inf.
    if not (math.isfinite(numerator) and math.isfinite(denominator)) or denominator <= 0:
        return NAN
    return numerator / denominator


def speedup(baseline_samples: Iterable[float], backend_samples: Iterable[float]) -> float:
    """``median(baseline) / median(backend)``: above 1 means the backend is faster."""
    return _ratio(median(baseline_samples), median(backend_samples))


def _ratio_of_medians(baseline: np.ndarray, backend: np.ndarray, axis: int = -1) -> np.ndarray:
    # Vectorised form required by scipy.stats.bootstrap: it hands in a whole
    # batch of resamples at once and names the sample axis.
    return np.median(baseline, axis=axis) / np.median(backend, axis=axis)


def speedup_ci(
    baseline_samples: Sequence[float],
    backend_samples: Sequence[float],
    confidence: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
) -> tuple[float, float]:
    """Bootstrap confidence interval ``(low, high)`` of :func:`speedup`.

    The two sample sets are resampled independently (``paired=False``): the
    i-th baseline iteration has nothing to do with the i-th backend iteration.
    The percentile method is used because BCa needs a jackknife that
    degenerates (returns nan) on the near-constant timings fast models give.
    The fixed ``seed`` makes a re-rendered report identical to the first one.
    Fewer than two samples on either side give ``(nan, nan)``.
    """
    baseline = _as_array(baseline_samples)
    backend = _as_array(backend_samples)
    if baseline.size < 2 or backend.size < 2:
        return NAN, NAN
    if not (np.all(np.isfinite(baseline)) and np.all(np.isfinite(backend))):
        return NAN, NAN
    result = _sps.bootstrap(
        (baseline, backend),
        _ratio_of_medians,
        n_resamples=n_resamples,
        vectorized=True,
        paired=False,
        axis=-1,
        confidence_level=confidence,
        method="percentile",
        rng=np.random.default_rng(seed),
    )
    interval = result.confidence_interval
    return float(interval.low), float(interval.high)


def median_ci(values: Sequence[float], confidence: float = 0.95, n_resamples: int = 2000,
              seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap interval ``(low, high)`` of the median of
    ``values`` (one per worker process: the units that vary from run to
    run); ``(nan, nan)`` with fewer than two finite values."""
    arr = _as_array(values)
    arr = arr[np.isfinite(arr)]
    if arr.size < 2:
        return NAN, NAN
    if np.ptp(arr) == 0:
        return float(arr[0]), float(arr[0])
    result = _sps.bootstrap((arr,), np.median, n_resamples=n_resamples, vectorized=True, axis=-1,
                            confidence_level=confidence, method="percentile",
                            rng=np.random.default_rng(seed))
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


def geomean(values: Iterable[float]) -> float:
    """Geometric mean of the finite, positive ``values``; ``nan`` when none.

    Failed models arrive as nan (or are left out by the caller); they are
    dropped here rather than counted as 0 (which would zero the mean) or as
    1 (which would pretend the backend broke even).
    """
    arr = _as_array(values)
    kept = arr[np.isfinite(arr) & (arr > 0)]
    if kept.size == 0:
        return NAN
    return float(_sps.gmean(kept))


def geomean_of_groups(values: Iterable[float], groups: Iterable) -> tuple[float, int]:
    """``(geomean, n)`` over the groups: each group's values first reduced to
    their own geometric mean, so a model measured at four batch sizes weighs
    as much as a model measured at one; ``n`` counts the groups with a value
    (``nan, 0`` when none)."""
    means = {}
    for value, group in zip(values, groups):
        means.setdefault(group, []).append(value)
    kept = [m for m in map(geomean, means.values()) if math.isfinite(m)]
    return geomean(kept), len(kept)


def relative_ci_width(low: float, high: float, estimate: float) -> float:
    """``(high - low) / estimate``; ``nan`` when any input is missing.

    0.10 means the interval spans 10% of the estimate: a scale-free measure
    of how much the number would move on a re-run, so one threshold works
    for 0.5x and 5x speedups alike.
    """
    values = (low, high, estimate)
    if not all(v is not None and math.isfinite(v) for v in values) or estimate <= 0:
        return NAN
    return (high - low) / estimate


# The fewest paired samples per side on which ``compare`` runs its test
# (``--min-samples``'s default); a run timed fewer times has a speedup but no
# interval worth the name, and its report says so.
MIN_PAIRED_SAMPLES = 5

# A measurement is flagged unstable when its speedup's CI is wider than this
# fraction of the speedup, or when its samples drift over the run.
UNSTABLE_CI_WIDTH = 0.25
DRIFT_MIN_SAMPLES = 10
DRIFT_ALPHA = 0.01
DRIFT_MIN_RHO = 0.5


def drifts(samples: Iterable[float]) -> bool:
    """Whether ``samples`` trend up or down over the run (thermal throttling,
    a background job starting): a strong, significant Spearman correlation
    between sample index and value."""
    arr = _as_array(samples)
    if arr.size < DRIFT_MIN_SAMPLES or np.ptp(arr) == 0:
        return False
    rho, p = _sps.spearmanr(np.arange(arr.size), arr)
    return bool(p < DRIFT_ALPHA and abs(rho) >= DRIFT_MIN_RHO)


def instability(baseline_samples, backend_samples, low: float, high: float, estimate: float) -> str | None:
    """Why a speedup measurement may be unreliable, or None when it looks stable."""
    reasons = []
    width = relative_ci_width(low, high, estimate)
    if math.isfinite(width) and width > UNSTABLE_CI_WIDTH:
        reasons.append(f"95% CI spans {width:.0%} of the speedup")
    drifting = [role for role, s in (("baseline", baseline_samples), ("backend", backend_samples))
                if drifts(s)]
    if drifting:
        reasons.append(f"{' and '.join(drifting)} samples drift over the run")
    return "; ".join(reasons) or None
