"""The power benchmark (benchmarks.tools.power): it replays the judge
itself, over stored nights and over nights drawn from variance components."""
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from benchmarks.judge import verdict as v
from benchmarks.tools import power

NIGHTS = Path(__file__).resolve().parents[1] / "docs" / "data" / "power-nights"
POLICY = replace(v.Policy.load(), window=6, min_nights=5, metrics={"speedup": v.MetricPolicy(0.03, 0.2)})


def test_exact_interval_is_clopper_pearson():
    assert power.exact_interval(0, 20) == (0.0, pytest.approx(0.1684, abs=1e-4))
    low, high = power.exact_interval(2, 19)
    assert (round(low, 3), round(high, 3)) == (0.013, 0.331)


def test_the_shapes_slow_what_they_say():
    rng = np.random.default_rng(0)
    units = (0.0,) * 6
    assert power.SHAPES["every process +5%"](units, rng) == (math.log(1.05),) * 6
    half = power.SHAPES["half the processes +10%"](units, rng)
    assert sorted(half) == [0.0] * 3 + [math.log(1.10)] * 3
    one = power.SHAPES["one process in six +30%"](units, rng)
    assert sorted(one) == [0.0] * 5 + [math.log(1.30)]


def test_components_recover_what_the_nights_were_drawn_from():
    parts = [power.Component("m", "a", 0.02, 0.01), power.Component("m", "b", 0.02, 0.01)]
    nights = power.simulated_nights(parts, 0.5, 2, 400, 6, np.random.default_rng(1))
    found, rho = power.components(nights)
    assert all(abs(c.processes - 0.02) < 0.001 for c in found)
    assert all(abs(c.nights - 0.01) < 0.0015 for c in found)
    assert abs(rho - 0.5) < 0.05


@pytest.mark.slow
def test_a_simulated_season_with_no_change_rarely_flags_and_a_slowdown_is_caught():
    parts = [power.Component("m", "a", 0.02, 0.005), power.Component("m", "b", 0.02, 0.005)]
    season = power.simulated_nights(parts, 0.5, 20, 40, 6, np.random.default_rng(2))
    verdicts = power.replay(season, POLICY, judged_from=6)
    assert sum(x.state in ("suspected", "fail") for x in verdicts) <= 3
    caught = power.power(season[:12], POLICY, 6, power.every(1.15))
    assert caught.rows == 5 * 20 and caught.by_night_2 >= 0.9 * caught.rows


def test_the_stored_nights_replay_through_the_judge():
    nights = power.read_nights(NIGHTS, "2000-01-27", POLICY)
    verdicts = power.replay(nights, POLICY, judged_from=POLICY.min_nights)
    assert [x.date for x in verdicts] == [n.date for n in nights[POLICY.min_nights:]]
    assert all(x.rows for x in verdicts)


def test_each_stored_night_shows_its_own_verdict_beside_the_judges():
    nights = power.read_nights(NIGHTS, "2000-01-20", POLICY)
    text = power.verdicts_report(NIGHTS, nights, POLICY)
    lines = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]]
             for line in text.splitlines() if line.startswith("| 2000-")}
    assert list(lines) == [n.date for n in nights]
    # The stored night 2000-01-20 failed under the gate of its day; the judge, with no
    # history before it here, cannot judge it.
    assert lines["2000-01-20"][0] == "1" and lines["2000-01-20"][2] == "unjudged"
    assert all(row[2] in ("pass", "suspected", "fail", "unjudged") for row in lines.values())
    assert f"then: {sum(r[0] == '1' for r in lines.values())} of {len(lines)} failed" in text


def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys):
    assert power.main(["stored", "--root", str(tmp_path / "none")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no such folder" in err
