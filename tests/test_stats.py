"""Tests of benchmarks.results.stats against hand-computed numbers."""
import math

import numpy as np
import pytest

from benchmarks.results import stats

NAN = float("nan")


def test_median_odd_even_empty():
    assert stats.median([3.0, 1.0, 2.0]) == 2.0
    assert stats.median([4.0, 1.0, 3.0, 2.0]) == 2.5
    assert math.isnan(stats.median([]))


def test_speedup_is_ratio_of_medians():
    assert stats.speedup([4.0, 4.0, 4.0], [2.0, 2.0, 2.0]) == 2.0
    # medians 20 and 10: the backend's one outlier (100) does not matter.
    assert stats.speedup([10.0, 30.0, 20.0], [5.0, 100.0, 10.0]) == 2.0
    assert stats.speedup([1.0], [4.0]) == 0.25


@pytest.mark.parametrize("backend", [[], [0.0, 0.0], [NAN]])
def test_speedup_without_usable_backend_is_nan(backend):
    assert math.isnan(stats.speedup([1.0, 1.0], backend))


def test_geomean_hand_computed():
    assert stats.geomean([1.0, 4.0]) == pytest.approx(2.0)
    assert stats.geomean([2.0, 8.0]) == pytest.approx(4.0)
    assert stats.geomean([2.0, 0.5]) == pytest.approx(1.0)
    assert stats.geomean([1.0, 2.0, 4.0]) == pytest.approx(2.0)


def test_geomean_ignores_failed_values():
    # nan/inf/0/negative are failures, never counted as 0 or 1.
    assert stats.geomean([1.0, NAN, 4.0]) == pytest.approx(2.0)
    assert stats.geomean([1.0, 4.0, 0.0, -3.0, math.inf]) == pytest.approx(2.0)


@pytest.mark.parametrize("values", [[], [NAN], [0.0, NAN]])
def test_geomean_of_nothing_is_nan(values):
    assert math.isnan(stats.geomean(values))


def _noisy(rng, center, n):
    return rng.normal(center, 0.05 * center, n)


def test_ci_contains_point_estimate():
    rng = np.random.default_rng(1)
    base, back = _noisy(rng, 10.0, 30), _noisy(rng, 5.0, 30)
    low, high = stats.speedup_ci(base, back)
    assert low < stats.speedup(base, back) < high
    assert 1.5 < low and high < 2.5


def test_ci_is_deterministic_with_seed():
    rng = np.random.default_rng(2)
    base, back = _noisy(rng, 10.0, 20), _noisy(rng, 8.0, 20)
    first = stats.speedup_ci(base, back, seed=7)
    assert stats.speedup_ci(base, back, seed=7) == first
    assert stats.speedup_ci(base, back, seed=8) != first


def test_ci_narrows_with_more_samples():
    rng = np.random.default_rng(3)
    few = stats.speedup_ci(_noisy(rng, 10.0, 10), _noisy(rng, 5.0, 10))
    many = stats.speedup_ci(_noisy(rng, 10.0, 500), _noisy(rng, 5.0, 500))
    assert (many[1] - many[0]) < (few[1] - few[0]) / 2


def test_ci_of_identical_constant_samples_is_exactly_one():
    assert stats.speedup_ci([3.0] * 5, [3.0] * 5) == (1.0, 1.0)
    assert stats.speedup_ci([2.0] * 4, [1.0] * 6) == (2.0, 2.0)


def test_ci_confidence_level_widens_interval():
    rng = np.random.default_rng(4)
    base, back = _noisy(rng, 10.0, 40), _noisy(rng, 5.0, 40)
    lo90, hi90 = stats.speedup_ci(base, back, confidence=0.90)
    lo99, hi99 = stats.speedup_ci(base, back, confidence=0.99)
    assert lo99 <= lo90 and hi90 <= hi99


@pytest.mark.parametrize("base, back", [([1.0], [1.0, 2.0]), ([1.0, 2.0], [1.0]), ([], [])])
def test_ci_needs_two_samples_each(base, back):
    low, high = stats.speedup_ci(base, back)
    assert math.isnan(low) and math.isnan(high)


def test_relative_ci_width():
    assert stats.relative_ci_width(0.9, 1.1, 1.0) == pytest.approx(0.2)
    assert stats.relative_ci_width(1.8, 2.2, 2.0) == pytest.approx(0.2)
    assert stats.relative_ci_width(1.0, 1.0, 1.0) == 0.0


@pytest.mark.parametrize("args", [(NAN, 1.0, 1.0), (0.9, NAN, 1.0), (0.9, 1.1, NAN), (0.9, 1.1, 0.0), (None, 1.1, 1.0)])
def test_relative_ci_width_missing_is_nan(args):
    assert math.isnan(stats.relative_ci_width(*args))


def test_drift_detected_on_a_trend_not_on_noise():
    rng = np.random.default_rng(0)
    noise = 1.0 + 0.01 * rng.standard_normal(30)
    assert not stats.drifts(noise)
    assert stats.drifts(noise + np.linspace(0, 0.3, 30))
    assert not stats.drifts([1.0, 2.0, 3.0])  # too few samples to tell


def test_instability_reasons():
    steady = [1.0] * 20
    assert stats.instability(steady, steady, 1.0, 1.0, 1.0) is None
    wide = stats.instability(steady, steady, 0.8, 1.3, 1.0)
    assert wide == "95% CI spans 50% of the speedup"
    rising = list(np.linspace(1.0, 2.0, 20))
    assert stats.instability(steady, rising, 1.0, 1.0, 1.0) == "backend samples drift over the run"


def test_geomean_of_groups_counts_each_group_once():
    # "a" at two batch sizes (1x and 4x: its own geomean 2x), "b" once at 8x.
    value, n = stats.geomean_of_groups([1.0, 4.0, 8.0], ["a", "a", "b"])
    assert n == 2 and value == pytest.approx(4.0)  # sqrt(2 * 8), not cbrt(1 * 4 * 8)
    assert stats.geomean_of_groups([NAN, 2.0], ["a", "b"]) == (pytest.approx(2.0), 1)
    value, n = stats.geomean_of_groups([], [])
    assert math.isnan(value) and n == 0
