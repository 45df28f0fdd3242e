"""Tests of the nightly gate step (benchmarks.nightly.gate) on nights written
to disk: a slowdown suspected then confirmed, partial and ad-hoc nights kept
out of the history, a night with too little history, the files it writes.
The rules themselves are tested on hand-made evidence in tests/test_judge.py.

Nights are written here from chosen per-repeat ratios (the gate judges
backend/baseline ratios paired by repeat), with seeded noise.
"""
import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from benchmarks import nightly
from benchmarks.nightly import gate
from benchmarks.nightly.night import NIGHT_FILE, Night, shard_meta_path, write_json, write_state
from benchmarks.nightly.shard import NIGHT_FLAGS, planned_models
from benchmarks.judge import verdict as v
from benchmarks.results import store

DRIFT, STEADY = "torchxla_trace_once", "openxla_eval"
REPEATS = 8


def _write_night(root, date, ratios, seed=0, spread=0.01, models=("m1", "m2"), cpu=("Xeon", 2),
                 processes=0, process_spread=0.0, commit="", failing=()):
    """Night ``date``: each model on each backend of ``ratios`` (backend ->
    median ratio), REPEATS paired repeats with ``spread`` relative noise;
    with ``processes``, spread over that many worker processes, each's
    ratio shifted by up to ``process_spread``."""
    rng = np.random.default_rng(seed)
    rows, records = [], []
    for name in models:
        for backend, ratio in ratios.items():
            base = 0.01 * (1 + rng.uniform(-0.2, 0.2, REPEATS))  # the machine's state moves both
            timed = base * ratio * (1 + rng.uniform(-spread, spread, REPEATS))
            if processes:
                shifts = 1 + rng.uniform(-process_spread, process_spread, processes)
                timed = timed * np.repeat(shifts, REPEATS // processes)
            rows.append(dict(dev="cpu", name=name, batch_size=1, backend=backend, baseline="xla",
                             suite="builtin", mode="inference", dtype="fp32", dynamic="static",
                             speedup=float(np.median(base) / np.median(timed)),
                             abs_latency=float(np.median(timed)) * 1e3,
                             status="fail_to_run" if name in failing else "pass",
                             cpu_model=cpu[0], cpu_count=cpu[1], commit=commit))
            key = {k: v for k, v in store.key_fields(rows[-1]).items() if k not in ("name", "backend")}
            by_process = {"process_repeats": [REPEATS // processes] * processes} if processes else {}
            records += [{**store.sample_record(name, backend, "baseline", base, **key), **by_process},
                        {**store.sample_record(name, backend, "backend", timed, **key), **by_process}]
    csv_path = root / date / "performance.csv"
    store.append_rows(csv_path, rows)
    store.append_samples(store.samples_path(csv_path), records)
    return csv_path


SMALL = """alpha: 0.05
window: 4
min_nights: 3
max_age_days: 60
loaded_cores: 0.1
min_judged: 0.5
metrics:
  speedup: {threshold: 0.03, fail_at_once: 0.30}
"""


def _gate(root, date, *flags):
    """The gate with a window of 4 nights (3 at least), steady speedup only."""
    config = root / "_gate.yaml"
    config.write_text(SMALL)
    return nightly.main(["gate", "--root", str(root), "--date", date, "--gate-config", str(config), *flags])


def _verdict(root, date):
    return json.loads((root / date / "compare.json").read_text())


DATES = [f"2026-01-{i:02d}" for i in range(1, 20)]


# --------------------------------------------------------------------------
# A slowdown: suspected, then confirmed


def _steady(root, nights, ratio=0.8, **kw):
    for night in range(nights):
        _write_night(root, DATES[night], {DRIFT: ratio, STEADY: 0.9}, seed=night, processes=4,
                     process_spread=0.01, **kw)


def test_a_slowdown_is_suspected_on_its_first_night_and_fails_on_its_second(tmp_path, capsys):
    _steady(tmp_path, 4)
    for night in (4, 5):
        _write_night(tmp_path, DATES[night], {DRIFT: 0.8 * 1.12, STEADY: 0.9}, seed=night, processes=4,
                     process_spread=0.01)
    assert _gate(tmp_path, DATES[4]) == 4
    first = _verdict(tmp_path, DATES[4])
    assert first["state"] == "suspected"
    suspected = {(r["key"]["name"], r["key"]["backend"]) for r in first["rows"] if r["mark"] == "suspected"}
    assert suspected == {("m1", DRIFT), ("m2", DRIFT)}
    assert (tmp_path / DATES[4] / "compare.md").read_text().startswith(f"# Night {DATES[4]}: SUSPECTED")
    assert _gate(tmp_path, DATES[5]) == 1
    second = _verdict(tmp_path, DATES[5])
    assert second["state"] == "fail"
    assert {r["rule"] for r in second["rows"] if r["mark"] == "fail"} == {"confirmed"}
    # The suspected night was left out of the history it is confirmed against.
    assert all(any(f"{DATES[4]} (flagged suspected" in why for why in r["left_out"])
               for r in second["rows"] if r["mark"] == "fail")
    assert capsys.readouterr().out.splitlines()[-1].startswith("policy: alpha 0.05")


def test_a_steady_night_passes(tmp_path):
    _steady(tmp_path, 5)
    assert _gate(tmp_path, DATES[4]) == 0
    assert _verdict(tmp_path, DATES[4])["state"] == "pass"


def test_a_gate_policy_with_an_unknown_key_is_exit_2(tmp_path, capsys):
    _steady(tmp_path, 1)
    config = tmp_path / "bad.yaml"
    config.write_text(SMALL + "floor: 0.02\n")
    assert nightly.main(["gate", "--root", str(tmp_path), "--date", DATES[0], "--gate-config", str(config)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown key(s) floor" in err


# --------------------------------------------------------------------------
# Partial nights


def _shard_night(root, date, seed, shards, finished=None, models=("a", "b", "c", "d")):
    """A night of ``models`` split over 2 shards (a, c | b, d), merged from
    the shards in ``shards`` with records saying 2 were planned."""
    finished = finished or {}
    full = _write_night(root / "_full", date, {DRIFT: 0.8}, seed=seed, models=models)
    plan = {0: ["a", "c"], 1: ["b", "d"]}
    folder = root / date / "shards"
    folder.mkdir(parents=True)
    for shard in shards:
        kept = plan[shard] if finished.get(shard, True) else plan[shard][:1]
        rows = [r for r in store.read_rows(full).to_dict("records") if r["name"] in kept]
        path = folder / f"shard-{shard}.csv"
        store.append_rows(path, [{k: v for k, v in r.items() if k != "schema_version"} for r in rows])
        store.append_samples(store.samples_path(path), [
            r for r in store.read_samples(store.samples_path(full)) if r["name"] in kept])
        write_json(shard_meta_path(folder, shard), {
            "shard": shard, "shards": 2, "models": plan[shard], "finished": finished.get(shard, True)})
    assert nightly.main(["merge", "--root", str(root), "--date", date]) == 0
    return root / date


def test_a_night_that_lost_a_shard_is_partial_and_its_models_missing(tmp_path, capsys):
    _shard_night(tmp_path, DATES[0], 0, [0, 1])
    night = _shard_night(tmp_path, DATES[1], 1, [0])  # shard 1 never came back
    assert "PARTIAL NIGHT 2026-01-02: shard 1 of 2 lost" in capsys.readouterr().err
    meta = Night.read(night).meta
    assert (meta["shards_lost"], meta["partial"]) == ([1], "shard 1 of 2 lost")
    assert _gate(tmp_path, DATES[1]) == 3  # a lost shard never passes silently
    verdict = _verdict(tmp_path, DATES[1])
    marks = {r["key"]["name"]: r["mark"] for r in verdict["rows"]}
    assert marks == {"a": v.MARK_UNJUDGED, "c": v.MARK_UNJUDGED, "b": v.MARK_MISSING, "d": v.MARK_MISSING}
    assert verdict["state"] == "unjudged"
    assert "the night is partial (shard 1 of 2 lost): 2 row(s) missing" in verdict["reasons"]
    assert "partial (shard 1 of 2 lost)" in (night / "compare.md").read_text()


def test_a_partial_night_is_never_a_baseline(tmp_path, capsys):
    _shard_night(tmp_path, DATES[0], 0, [0, 1])
    _shard_night(tmp_path, DATES[1], 1, [0])
    _shard_night(tmp_path, DATES[2], 2, [0, 1])
    assert _gate(tmp_path, DATES[2]) == 3
    verdict = _verdict(tmp_path, DATES[2])
    assert f"{DATES[1]} (partial: shard 1 of 2 lost)" in verdict["passed_over"]
    # Night 1 alone is history: too few nights, every row says so.
    assert {r["rule"] for r in verdict["rows"]} == {"too few nights"}


def test_an_unfinished_shard_makes_the_night_partial_and_names_the_models_not_run(tmp_path):
    night = _shard_night(tmp_path, DATES[0], 0, [0, 1], finished={1: False})
    meta = Night.read(night).meta
    assert meta["shards_unfinished"] == [1] and meta["models_not_run"] == ["d"]
    assert meta["partial"] == "shard 1 did not finish (not run: d)"


def test_the_models_of_a_lost_shard_are_worked_out_from_the_settings(fault_models):
    runner = {"flags": [*NIGHT_FLAGS, "--suite", "torchbench"], "backends": "eager",
              "filter": ["^(ok_|slow_)"]}
    assert planned_models(runner, 2, 1) == ["ok_tiny", "slow_2"]
    assert planned_models({**runner, "filter": ["^nothing$"]}, 2, 1) is None


# --------------------------------------------------------------------------
# Too little history: never a pass


def test_a_first_night_is_unjudged_and_says_why(tmp_path, monkeypatch):
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    _write_night(tmp_path, DATES[0], {DRIFT: 0.8})
    assert _gate(tmp_path, DATES[0]) == 3
    first = (tmp_path / DATES[0] / "compare.md").read_text().splitlines()[0]
    assert first == f"# Night {DATES[0]}: UNJUDGED"
    assert summary.read_text().splitlines()[0] == first
    verdict = _verdict(tmp_path, DATES[0])
    assert verdict["state"] == "unjudged" and verdict["exit_code"] == 3
    assert {r["note"] for r in verdict["rows"]} == {"0 usable earlier night(s), 3 needed"}


def test_an_unreadable_results_branch_is_named_and_never_green(tmp_path):
    _steady(tmp_path, 5)
    write_state(tmp_path, branch="nightly-results", exists=True, error="fatal: unable to access")
    assert _gate(tmp_path, DATES[4]) == 3
    assert "exists but could not be read: fatal: unable to access" in (tmp_path / DATES[4] / "compare.md").read_text()


def test_an_unreadable_earlier_night_is_passed_over_with_its_reason(tmp_path):
    broken = tmp_path / DATES[0] / "performance.csv"
    broken.parent.mkdir()
    broken.write_text("not,a,results,file\n1,2,3,4\n")
    _write_night(tmp_path, DATES[1], {DRIFT: 0.8})
    assert _gate(tmp_path, DATES[1]) == 3
    assert any(p.startswith(f"{DATES[0]} (unreadable") for p in _verdict(tmp_path, DATES[1])["passed_over"])


def test_an_ad_hoc_night_is_never_history(tmp_path):
    """A dispatched night between scheduled ones is passed over, saying so."""
    _steady(tmp_path, 3)
    _write_night(tmp_path, DATES[3], {DRIFT: 0.8 * 1.5}, models=("m1",))
    write_json(tmp_path / DATES[3] / NIGHT_FILE, {"partial": "", "kind": "ad-hoc"})
    _write_night(tmp_path, DATES[4], {DRIFT: 0.8, STEADY: 0.9}, seed=4, processes=4, process_spread=0.01)
    assert _gate(tmp_path, DATES[4]) == 0
    verdict = _verdict(tmp_path, DATES[4])
    assert f"{DATES[3]} (ad-hoc: not the nightly's default plan)" in verdict["passed_over"]
    assert {r["nights"] for r in verdict["rows"]} == {3}


@pytest.mark.parametrize("env, kind", [({"GITHUB_EVENT_NAME": "schedule", "NIGHTLY_KIND": "ad-hoc"}, "scheduled"),
                                       ({"GITHUB_EVENT_NAME": "workflow_dispatch"}, "ad-hoc"),
                                       ({"GITHUB_EVENT_NAME": "push"}, "ad-hoc"),
                                       ({"NIGHTLY_KIND": "ad-hoc"}, "ad-hoc"), ({}, "scheduled")])
def test_the_merge_records_how_the_night_started(tmp_path, monkeypatch, env, kind):
    for name in ("GITHUB_EVENT_NAME", "NIGHTLY_KIND"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    _shard_night(tmp_path, DATES[0], 0, [0, 1])
    assert Night.read(tmp_path / DATES[0]).kind == kind


def test_an_unknown_night_kind_is_bad_input(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("GITHUB_EVENT_NAME", raising=False)
    monkeypatch.setenv("NIGHTLY_KIND", "nightly")
    full = _write_night(tmp_path / "_full", DATES[0], {DRIFT: 0.8})
    (tmp_path / DATES[0] / "shards").mkdir(parents=True)
    shutil.copy(full, tmp_path / DATES[0] / "shards" / "shard-0.csv")
    assert nightly.main(["merge", "--root", str(tmp_path), "--date", DATES[0]]) == 2
    assert "NIGHTLY_KIND='nightly'" in capsys.readouterr().err


def test_the_next_night_names_the_scheduled_nights_that_never_ran(tmp_path):
    """Nights 1 and 2 ran, then nothing until night 5 but an ad-hoc
    dispatch on night 3: night 5's report (and so the run's page) names
    nights 3 and 4 as missing; a night after its predecessor names none."""
    for index in (0, 1):
        _write_night(tmp_path, DATES[index], {DRIFT: 0.8}, seed=index)
    _write_night(tmp_path, DATES[2], {DRIFT: 0.8}, seed=2)
    write_json(tmp_path / DATES[2] / NIGHT_FILE, {"partial": "", "kind": "ad-hoc"})
    _write_night(tmp_path, DATES[4], {DRIFT: 0.8}, seed=4)
    assert _gate(tmp_path, DATES[4]) == 3
    assert _verdict(tmp_path, DATES[4])["missing_nights"] == [DATES[2], DATES[3]]
    report = (tmp_path / DATES[4] / "compare.md").read_text()
    assert f"## Missing nights\n\nNo scheduled night ran on {DATES[2]}, {DATES[3]}" in report
    assert _gate(tmp_path, DATES[1]) == 3
    assert _verdict(tmp_path, DATES[1])["missing_nights"] == []
    assert "Missing nights" not in (tmp_path / DATES[1] / "compare.md").read_text()


# --------------------------------------------------------------------------
# A/A nights: the tool counts the gate's states


def test_the_aa_tool_counts_nights_by_the_gates_state(tmp_path):
    from benchmarks.tools import aa_nights

    _steady(tmp_path, 4)
    _write_night(tmp_path, DATES[4], {DRIFT: 0.8 * 1.12, STEADY: 0.9}, seed=4, processes=4, process_spread=0.01)
    for night in range(5):
        _gate(tmp_path, DATES[night])
    text = aa_nights.report(tmp_path, DATES[:5])
    assert "nights by state: pass 1, suspected 1, unjudged 3, fail 0, none 0" in text
    assert "false alarms (suspected or failed): 1 of 2 judged night(s)" in text
    [flagged] = [line for line in text.splitlines() if line.startswith(DATES[4])]
    assert "m1/torchxla_trace_once speedup suspected" in flagged
