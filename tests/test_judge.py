"""The judge: the rules on hand-made evidence, the policy file, the docs
generated from the rules, and the gate on stored nights."""
from __future__ import annotations

import json
import math
import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sps

from benchmarks import judge
from benchmarks.judge import docs as judge_docs
from benchmarks.judge import rules
from benchmarks.judge import verdict as v
from benchmarks.judge.evidence import History, NightRows, RowNight
from benchmarks.results import store
from benchmarks.usage import UsageError

ROOT = Path(__file__).resolve().parents[1]
NIGHTS = ROOT / "docs" / "data" / "power-nights"
CPU = "test CPU, 2 CPUs"
POLICY = v.Policy(alpha=0.05, window=20, min_nights=10, max_age_days=60, loaded_cores=0.1, min_judged=0.5,
                  metrics={"speedup": v.MetricPolicy(0.03, 0.20)})


def key(name="resnet18", backend="ours"):
    return store.ExperimentKey(**{**dict.fromkeys(store.ExperimentKey._fields), "name": name, "backend": backend})


def row(value, name="resnet18", backend="ours", status="pass", cpu=CPU, spread=0.0, left_out=()):
    units = tuple(value + spread * d for d in (-1, 0, 1)) if value is not None else ()
    return RowNight(key(name, backend), "speedup", status, cpu, units, tuple(left_out))


def night(date, *rows_, flagged=None):
    return NightRows(date, {"speedup": {r.key: r for r in rows_}}, flagged or {})


def past(values_by_row, flagged_last=None):
    """A history, newest first, from each row's values (oldest first)."""
    n = len(next(iter(values_by_row.values())))
    nights = []
    for i in reversed(range(n)):
        flagged = flagged_last if i == n - 1 and flagged_last else {}
        nights.append(night(f"2026-11-{i + 1:02d}", *(row(vals[i], *name) for name, vals in values_by_row.items()),
                            flagged=flagged))
    return History(tuple(nights))


SPREAD = [0.01 * x for x in (0.3, -0.8, 1.1, -0.2, 0.5, -1.3, 0.9, 0.0, -0.4, 0.7, -0.6, 0.2, 1.0, -0.9, 0.4,
                              -0.1, 0.6, -0.5, 0.8, -0.7)]  # 20 nights, sd ~0.7%


def test_prediction_test_matches_a_hand_computed_t():
    history = [0.0, 0.01, -0.01, 0.02, -0.02]
    change, p_slower, p_faster = rules.prediction_test(0.05, history)
    sd = np.std(history, ddof=1)
    t = 0.05 / (sd * math.sqrt(1 + 1 / 5))
    assert change == pytest.approx(math.expm1(0.05))
    assert p_slower == pytest.approx(sps.t.sf(t, 4))
    assert p_slower + p_faster == pytest.approx(1.0)


def test_a_quiet_night_passes_and_exits_zero():
    verdict = judge.judge(night("2026-12-01", row(0.002)), past({("resnet18", "ours"): SPREAD}), POLICY)
    assert verdict.state == v.PASS and verdict.exit_code == 0
    assert verdict.rows[0].mark == v.MARK_PASS and verdict.rows[0].rule == "no change"
    assert verdict.rows[0].nights == 20


def test_a_first_night_slowdown_is_suspected_then_confirmed_by_the_next_night():
    first = judge.judge(night("2026-12-01", row(math.log(1.06))), past({("resnet18", "ours"): SPREAD}), POLICY)
    assert first.state == v.SUSPECTED and first.exit_code == 4
    assert first.rows[0].rule == "suspected" and "threshold 3%" in first.rows[0].note
    flagged = {("speedup", key()): v.MARK_SUSPECTED}
    history = past({("resnet18", "ours"): SPREAD}, flagged_last=flagged)
    # The suspected night itself is left out of the history, with its reason.
    history = History((night("2026-12-01", row(math.log(1.06)), flagged=flagged), *history.nights[:-1]))
    second = judge.judge(night("2026-12-02", row(math.log(1.045))), history, POLICY)
    assert second.state == v.FAIL and second.exit_code == 1
    assert second.rows[0].rule == "confirmed"
    assert any("flagged suspected" in why for why in second.rows[0].left_out)


def test_a_suspected_row_back_to_normal_clears():
    flagged = {("speedup", key()): v.MARK_SUSPECTED}
    history = History((night("2026-12-01", row(math.log(1.06)), flagged=flagged),
                       *past({("resnet18", "ours"): SPREAD}).nights))
    verdict = judge.judge(night("2026-12-02", row(0.001)), history, POLICY)
    assert verdict.state == v.PASS


def test_a_large_slowdown_fails_at_once():
    verdict = judge.judge(night("2026-12-01", row(math.log(1.25))), past({("resnet18", "ours"): SPREAD}), POLICY)
    assert verdict.state == v.FAIL and verdict.rows[0].rule == "large"


def test_a_significant_change_below_the_threshold_passes():
    tight = [x / 20 for x in SPREAD]  # sd ~0.035%: +2% is many SDs, yet below the 3% threshold
    verdict = judge.judge(night("2026-12-01", row(math.log(1.02))), past({("resnet18", "ours"): tight}), POLICY)
    assert verdict.rows[0].p_adjusted < 1e-6
    assert verdict.state == v.PASS


def test_holm_controls_the_whole_night():
    """A row at p ~0.01 is flagged alone, not among the 92 rows of a night."""
    scale = math.log(1.035) / (2.6 * np.std(SPREAD, ddof=1) * math.sqrt(1 + 1 / 20))
    spread = [s * scale for s in SPREAD]
    x = float(np.mean(spread)) + math.log(1.035)
    alone = judge.judge(night("d", row(x)), past({("resnet18", "ours"): spread}), POLICY)
    assert 0.001 < alone.rows[0].p_value < 0.05 and alone.state == v.SUSPECTED
    others = [(f"m{i}", "ours") for i in range(91)]
    many = judge.judge(night("d", row(x), *(row(0.0, *n) for n in others)),
                       past({("resnet18", "ours"): spread, **{n: spread for n in others}}), POLICY)
    first = next(r for r in many.rows if r.name == "resnet18")
    assert first.p_value == pytest.approx(alone.rows[0].p_value)
    assert first.p_adjusted > 0.05 and many.state == v.PASS


def test_loaded_processes_are_left_out_and_a_night_with_none_left_is_unjudged():
    loaded = row(None, left_out=("process 0: loaded (0.70 other cores > 0.1)",))
    verdict = judge.judge(night("2026-12-01", loaded), past({("resnet18", "ours"): SPREAD}), POLICY)
    assert verdict.state == v.UNJUDGED and verdict.exit_code == 3
    assert verdict.rows[0].rule == "no quiet process" and "loaded" in verdict.rows[0].note


def test_too_few_nights_is_unjudged_never_a_pass():
    verdict = judge.judge(night("2026-12-01", row(0.0)), past({("resnet18", "ours"): SPREAD[:5]}), POLICY)
    assert verdict.state == v.UNJUDGED and verdict.rows[0].rule == "too few nights"
    first = judge.judge(night("2026-12-01", row(0.0)), History(), POLICY)
    assert first.state == v.UNJUDGED


def test_nights_on_another_cpu_are_not_history():
    other = History(tuple(replace(n, rows={"speedup": {k: replace(r, cpu="other CPU") for k, r in n.rows["speedup"].items()}})
                          for n in past({("resnet18", "ours"): SPREAD}).nights))
    verdict = judge.judge(night("2026-12-01", row(0.0)), other, POLICY)
    assert verdict.rows[0].rule == "too few nights"
    assert all("another CPU" in why for why in verdict.rows[0].left_out)


def test_a_new_failure_fails_and_a_flaky_one_does_not():
    history = past({("resnet18", "ours"): SPREAD})
    failed = row(None, status="fail_to_run")
    assert judge.judge(night("d", failed), history, POLICY).state == v.FAIL
    flaky = judge.judge(night("d", failed), history, POLICY, flaky={("resnet18", "ours")})
    assert flaky.rows[0].mark == v.MARK_FLAKY and flaky.state != v.FAIL


def test_a_row_gone_from_a_complete_night_is_unjudged_and_missing_on_a_partial_one():
    history = past({("resnet18", "ours"): SPREAD, ("alexnet", "ours"): SPREAD})
    tonight = night("d", row(0.0))
    gone = judge.judge(tonight, history, POLICY)
    assert {r.name: r.rule for r in gone.rows}["alexnet"] == "removed"
    partial = judge.judge(tonight, history, POLICY, partial="shard 1 of 2 lost")
    assert {r.name: r.mark for r in partial.rows}["alexnet"] == v.MARK_MISSING
    assert partial.state == v.UNJUDGED and "partial (shard 1 of 2 lost): 1 row(s) missing" in partial.reasons[-1]


def test_the_verdict_is_a_value_its_json_carries_state_and_exit_code():
    verdict = judge.judge(night("2026-12-01", row(math.log(1.06))), past({("resnet18", "ours"): SPREAD}), POLICY)
    document = json.loads(json.dumps(store.plain(verdict.to_json())))
    assert document["state"] == "suspected" and document["exit_code"] == 4
    assert document["rows"][0]["key"]["name"] == "resnet18" and document["rows"][0]["mark"] == "suspected"


# --------------------------------------------------------------------------
# The policy file


def test_the_shipped_policy_loads_and_every_metric_is_judged():
    policy = v.Policy.load()
    assert set(policy.metrics) == {"speedup", "first_call", "host_memory", "device_memory"}
    assert policy.metrics["speedup"].threshold == 0.03


@pytest.mark.parametrize("text, says", [
    ("alpha: 0.05\nwindow: 20\n", "unknown key"),
    ("{}", "'metrics'"),
    ("[1, 2]", "mapping"),
])
def test_a_bad_policy_is_refused_in_one_line(tmp_path, text, says):
    shipped = (ROOT / "configs" / "gate.yaml").read_text()
    path = tmp_path / "gate.yaml"
    path.write_text(shipped + "speedup_floor: 0.02\n" if says == "unknown key" else text)
    with pytest.raises(UsageError) as err:
        v.Policy.load(path)
    assert says in str(err.value) and "\n" not in str(err.value)


def test_an_out_of_range_threshold_is_refused(tmp_path):
    path = tmp_path / "gate.yaml"
    path.write_text((ROOT / "configs" / "gate.yaml").read_text().replace("threshold: 0.03", "threshold: -1"))
    with pytest.raises(UsageError, match="threshold"):
        v.Policy.load(path)


def test_docs_gate_md_is_generated_from_the_rules():
    text = (ROOT / "docs" / "gate.md").read_text()
    assert text == judge_docs.render(), "docs/gate.md is stale: python -m benchmarks.judge.docs --write"
    for rule in rules.RULES:
        assert f"`{rule.name}`" in text and rule.why in text


# --------------------------------------------------------------------------
# The gate on stored nights


def _scaled(folder: Path, factor: float) -> None:
    """Every backend sample of the night's ``folder`` multiplied by ``factor``."""
    path = folder / "performance.jsonl"
    records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    for r in records:
        if r.get("role") == "backend":
            r["samples_s"] = [s * factor for s in r["samples_s"]]
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


@pytest.fixture()
def stored(tmp_path):
    root = tmp_path / "nights"
    root.mkdir()
    for folder in sorted(NIGHTS.iterdir())[14:]:  # one CPU: nights 15-36
        shutil.copytree(folder, root / folder.name)
    return root


@pytest.mark.parametrize("factor, code", [(1.0, 0), (1.08, 4), (1.30, 1)])
def test_the_gate_on_a_stored_night(stored, factor, code, capsys):
    from benchmarks.nightly import gate

    last = sorted(stored.iterdir())[-1]
    _scaled(last, factor)
    assert gate.run(stored, last.name, v.Policy.load()) == code
    document = json.loads((last / "compare.json").read_text())
    assert document["exit_code"] == code and document["state"] == {0: "pass", 4: "suspected", 1: "fail"}[code]
    assert capsys.readouterr().out.startswith(f"night {last.name}: {document['state'].upper()}")
