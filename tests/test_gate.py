"""Tests of the nightly gate (benchmarks.nightly.gate, benchmarks.nightly.history): the
stable baseline that catches a slow drift, partial nights kept out of it,
the confirmation re-run, and a night with no baseline.

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
from benchmarks.nightly import gate, history
from benchmarks.nightly.night import NIGHT_FILE, Night, shard_meta_path, write_json, write_state
from benchmarks.nightly.shard import NIGHT_FLAGS, planned_models
from benchmarks.results import compare, store

DRIFT, STEADY = "torchxla_trace_once", "openxla_eval"
REPEATS = 8


def _write_night(root, date, ratios, seed=0, spread=0.01, models=("m1", "m2"), cpu=("Xeon", 2),
                 processes=0, process_spread=0.0):
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
                             abs_latency=float(np.median(timed)) * 1e3, status="pass",
                             cpu_model=cpu[0], cpu_count=cpu[1]))
            key = {k: v for k, v in store.key_fields(rows[-1]).items() if k not in ("name", "backend")}
            by_process = {"process_repeats": [REPEATS // processes] * processes} if processes else {}
            records += [{**store.sample_record(name, backend, "baseline", base, **key), **by_process},
                        {**store.sample_record(name, backend, "backend", timed, **key), **by_process}]
    csv_path = root / date / "performance.csv"
    store.append_rows(csv_path, rows)
    store.append_samples(store.samples_path(csv_path), records)
    return csv_path


def _gate(root, date, *flags):
    return nightly.main(["gate", "--root", str(root), "--date", date, *flags])


def _verdict(root, date):
    return json.loads((root / date / "compare.json").read_text())


DATES = [f"2026-01-0{i}" for i in range(1, 10)]


# --------------------------------------------------------------------------
# A slow drift: 3% a night for six nights


@pytest.fixture
def drifting(tmp_path):
    """Night 1 as it was, then six nights in which one backend gets 3%
    slower each night (the other stays put)."""
    for night in range(7):
        _write_night(tmp_path, DATES[night], {DRIFT: 0.8 * 1.03 ** night, STEADY: 0.9}, seed=night)
    return tmp_path


@pytest.mark.slow
def test_night_to_night_passes_every_night_of_a_slow_drift(drifting, capsys):
    for date in DATES[1:7]:
        assert _gate(drifting, date, "--baseline-nights", "1", "--no-confirm") == 0, date
        verdict = _verdict(drifting, date)
        assert verdict["verdict"] == "PASS" and "night to night" in verdict["baseline"]
        changes = [row["change"] for row in verdict["rows"] if row["backend"] == DRIFT]
        assert all(0.0 < c < 0.05 for c in changes), changes  # each step under the threshold


def test_the_stable_baseline_catches_the_drift_by_night_7_and_names_itself(drifting, capsys):
    codes = {date: _gate(drifting, date, "--no-confirm") for date in DATES[1:7]}
    failed = [date for date, code in codes.items() if code == 1]
    assert failed and failed[0] <= DATES[6], codes
    first = _verdict(drifting, failed[0])
    assert first["verdict"] == "FAIL (2 slower)"
    assert {(r["name"], r["backend"]) for r in first["rows"] if r["mark"] == "slower"} == {
        ("m1", DRIFT), ("m2", DRIFT)}
    assert "complete night(s) pooled" in first["baseline"]
    # Every output says which baseline it used.
    markdown = (drifting / failed[0] / "compare.md").read_text()
    assert f"- baseline: {first['baseline']}" in markdown
    assert f"baseline: {first['baseline']}" in capsys.readouterr().out
    # Once caught, the drift stays caught while it goes on.
    assert all(codes[date] == 1 for date in DATES[1:7] if date >= failed[0])


def test_one_noisy_night_does_not_move_the_stable_baseline(tmp_path):
    """A night 8% off among steady ones: judged against it, tomorrow would
    look 7% faster; against the pooled week it is what it is."""
    for night in range(6):
        _write_night(tmp_path, DATES[night], {DRIFT: 1.08 if night == 5 else 1.0}, seed=night)
    _write_night(tmp_path, DATES[6], {DRIFT: 1.0}, seed=6)
    assert _gate(tmp_path, DATES[6], "--baseline-nights", "1", "--no-confirm") == 0
    assert {r["mark"] for r in _verdict(tmp_path, DATES[6])["rows"]} == {compare.FASTER}
    assert _gate(tmp_path, DATES[6], "--no-confirm") == 0
    assert {r["mark"] for r in _verdict(tmp_path, DATES[6])["rows"]} == {compare.NO_CHANGE}


def test_pinned_night(drifting):
    assert _gate(drifting, DATES[2], "--pin", DATES[0], "--no-confirm") == 1  # +6.1% since the pin
    assert _verdict(drifting, DATES[2])["baseline"] == f"the pinned night {DATES[0]}"


# --------------------------------------------------------------------------
# A slowdown two nights running


# Each night's eight worker processes sit at these multiples of its level
# (a spread of about 5%): +4% on one night is past the floor (2.5%) but not
# significant alone (p 0.14 against six nights); two such nights pooled are
# (p 0.03 against the five before them).
PROCESS_LEVELS = (0.92, 0.95, 0.97, 0.99, 1.01, 1.03, 1.05, 1.08)


def _process_night(root, date, level, jitter):
    """Night ``date``: DRIFT at ``level`` times 0.8, STEADY at 0.9, one model,
    each process three repeats at its multiple of PROCESS_LEVELS (times
    1 + ``jitter``, so that nights do not tie)."""
    rows, records = [], []
    for backend, ratio in ((DRIFT, 0.8 * level), (STEADY, 0.9)):
        base = np.full(3 * len(PROCESS_LEVELS), 0.01)
        timed = base * ratio * (1 + jitter) * np.repeat(PROCESS_LEVELS, 3)
        rows.append(dict(dev="cpu", name="m1", batch_size=1, backend=backend, baseline="xla", suite="builtin",
                         mode="inference", dtype="fp32", dynamic="static", speedup=float(1 / np.median(timed / base)),
                         abs_latency=float(np.median(timed)) * 1e3, status="pass", cpu_model="Xeon", cpu_count=2))
        key = {k: v for k, v in store.key_fields(rows[-1]).items() if k not in ("name", "backend")}
        sizes = {"process_repeats": [3] * len(PROCESS_LEVELS)}
        records += [{**store.sample_record("m1", backend, "baseline", base, **key), **sizes},
                    {**store.sample_record("m1", backend, "backend", timed, **key), **sizes}]
    csv_path = root / date / "performance.csv"
    store.append_rows(csv_path, rows)
    store.append_samples(store.samples_path(csv_path), records)


def _two_slow_nights(root, last, tonight):
    """Five steady nights, then last night and tonight with DRIFT at ``last``
    and ``tonight`` times its level."""
    for night, level in enumerate([1.0] * 5 + [last, tonight]):
        _process_night(root, DATES[night], level, 0.001 * night)
    return root


def _drift_rows(root, date):
    return [r for r in _verdict(root, date)["rows"] if r["backend"] == DRIFT]


def test_a_slowdown_two_nights_running_is_judged_on_both_together(tmp_path):
    """DRIFT 4% slower last night and tonight: tonight alone is not
    significant, the two nights pooled against the five before are; the
    row is slower and says why.  ``--no-two-nights`` judges tonight alone."""
    root = _two_slow_nights(tmp_path, 1.04, 1.04)
    alone = compare.compare(list(history.choose_baseline(root, DATES[6], 7).runs), root / DATES[6] / "performance.csv")
    assert {r.mark for r in alone.rows if r.backend == DRIFT} == {compare.NO_CHANGE}
    assert all(r.change >= compare.flag_at(0.05, compare.UNIT_PROCESS) for r in alone.rows if r.backend == DRIFT)
    assert _gate(root, DATES[6], "--no-confirm") == 1
    rows = _drift_rows(root, DATES[6])
    assert {r["mark"] for r in rows} == {compare.SLOWER}
    assert all(f"slower two nights running: {DATES[5]} and this night together +" in r["note"]
               and f"against the 5 night(s) before {DATES[5]}" in r["note"] for r in rows)
    assert {r["mark"] for r in _verdict(root, DATES[6])["rows"] if r["backend"] == STEADY} == {compare.NO_CHANGE}
    assert _gate(root, DATES[6], "--no-confirm", "--no-two-nights") == 0
    assert {r["mark"] for r in _drift_rows(root, DATES[6])} == {compare.NO_CHANGE}


@pytest.mark.parametrize("last, tonight", [(1.08, 1.0), (1.0, 1.04)])  # one-off; only tonight
def test_one_slow_night_is_not_two(tmp_path, last, tonight):
    """Last night slow and tonight back (tonight's own change under the
    floor), or only tonight slower (the two pooled are not past the floor):
    no two-night slowdown."""
    root = _two_slow_nights(tmp_path, last, tonight)
    _gate(root, DATES[6], "--no-confirm")
    assert all("two nights running" not in r["note"] for r in _drift_rows(root, DATES[6]))
    if tonight == 1.0:  # last night's slowdown does not fail tonight
        assert {r["mark"] for r in _drift_rows(root, DATES[6])} <= {compare.NO_CHANGE, compare.FASTER}


@pytest.mark.parametrize("flags", [["--pin", DATES[4]], ["--previous", f"{DATES[5]}/performance.csv"]])
def test_a_pinned_or_given_baseline_judges_tonight_alone(tmp_path, flags):
    root = _two_slow_nights(tmp_path, 1.04, 1.04)
    flags = [str(root / f) if f.endswith(".csv") else f for f in flags]
    _gate(root, DATES[6], "--no-confirm", *flags)
    assert _drift_rows(root, DATES[6]) and all("two nights running" not in r["note"] for r in _drift_rows(root, DATES[6]))


def test_last_night_without_the_row_is_no_second_night(tmp_path):
    """Last night kept no samples of DRIFT (its records lost): tonight is
    judged on its own (against the steady nights: slower, p 0.04), and
    nothing says two nights."""
    root = _two_slow_nights(tmp_path, 1.04, 1.04)
    samples = store.samples_path(root / DATES[5] / "performance.csv")
    kept = [r for r in store.read_samples(samples) if r["backend"] != DRIFT]
    samples.unlink()
    store.append_samples(samples, kept)
    _gate(root, DATES[6], "--no-confirm")
    rows = _drift_rows(root, DATES[6])
    assert {r["mark"] for r in rows} == {compare.SLOWER}
    assert all("two nights running" not in r["note"] for r in rows)


def _rerun_at(level):
    """The gate's re-run, stood in by a night with DRIFT at ``level``."""
    def remeasure(night, keys, out):
        assert {key.backend for key in keys} == {DRIFT}
        _process_night(out.parent.parent, out.parent.name, level, 0.0005)
        return ""
    return remeasure


@pytest.mark.parametrize("level, with_night, mark", [
    (1.04, False, compare.SLOWER), (1.0, False, compare.UNCONFIRMED),
    (1.04, True, compare.SLOWER), (1.0, True, compare.UNCONFIRMED)])
def test_a_two_night_slowdown_is_re_run_against_the_nights_before_last(tmp_path, level, with_night, mark):
    """The row the two-night rule made slower is re-run, and the re-run is
    judged as the rule judged the row: in tonight's place, pooled with last
    night, against the five nights before last night (not tonight's
    window, which holds last night's slowdown; alone, one night's
    processes would clear it), and with ``--confirm-with-night`` pooled
    with both nights.  A re-run as slow as the two nights confirms it; one
    back at the steady level clears it."""
    root = _two_slow_nights(tmp_path, 1.04, 1.04)
    baseline = history.choose_baseline(root, DATES[6], 7)
    policy = gate.Policy(confirm_with_night=with_night)
    judged = gate.judge(root, DATES[6], baseline, policy, _rerun_at(level))
    assert {r.mark for r in judged.rows if r.backend == DRIFT} == {mark}
    assert {r.mark for r in judged.rows if r.backend == STEADY} == {compare.NO_CHANGE}
    rerun_csv = root / DATES[6] / "confirm" / "performance.csv"
    slower = frozenset(r.key for r in judged.rows if r.backend == DRIFT)
    alone, pooled = gate.rerun_comparisons(baseline, root / DATES[6] / "performance.csv", rerun_csv, gate.Policy(),
                                           slower, with_night=True)
    assert alone.alternative == pooled.alternative == compare.SLOWER_ONLY  # a re-run asks: slower again?
    units = len(PROCESS_LEVELS)
    assert {(r.n_old, r.n_new) for r in alone.rows if r.backend == DRIFT} == {(5 * units * 3, 2 * units * 3)}
    assert {(r.n_old, r.n_new) for r in pooled.rows if r.backend == DRIFT} == {(5 * units * 3, 3 * units * 3)}
    # The rows the rule did not touch are judged against tonight's window.
    assert {(r.n_old, r.n_new) for r in pooled.rows if r.backend == STEADY} == {(6 * units * 3, 2 * units * 3)}


@pytest.mark.parametrize("policy, mark", [(gate.Policy(), compare.SLOWER),
                                          (gate.Policy(confirm_one_sided=False), compare.UNCONFIRMED)])
def test_a_rerun_is_tested_one_sided(tmp_path, policy, mark):
    """A re-run asks one question: is the slowdown the night found there
    again?  So its test is one-sided, at the same level: a re-run 4.1%
    slower (p 0.035 one-sided, 0.069 two-sided) confirms a row the night
    found 10% slower; judged as the night was (``--confirm-two-sided``)
    it would not."""
    for night in range(6):
        _process_night(tmp_path, DATES[night], 1.0, 0.001 * night)
    _process_night(tmp_path, DATES[6], 1.10, 0.0005)
    baseline = history.choose_baseline(tmp_path, DATES[6], 7)
    judged = gate.judge(tmp_path, DATES[6], baseline, policy, _rerun_at(1.043))
    (row,) = [r for r in judged.rows if r.backend == DRIFT]
    assert row.mark == mark and "+4.1%, p 0." in row.note
    assert ("one-sided" in row.note) == policy.confirm_one_sided
    assert judged.confirmation.alternative == (compare.SLOWER_ONLY if policy.confirm_one_sided else compare.TWO_SIDED)
    assert ("a one-sided test" in compare.rule(judged)) == policy.confirm_one_sided


def test_the_cli_tests_a_rerun_one_sided_unless_told(tmp_path, monkeypatch):
    """``nightly gate`` as the nightly runs it (the re-run stood in), and
    with ``--confirm-two-sided``: compare.json says how the re-run was
    tested; the night's own test stays two-sided either way."""
    for night in range(6):
        _process_night(tmp_path, DATES[night], 1.0, 0.001 * night)
    _process_night(tmp_path, DATES[6], 1.10, 0.0005)
    monkeypatch.setattr(gate, "remeasure", lambda night, keys, out, **budget: _rerun_at(1.043)(night, keys, out))
    for flags, code, sided in (((), 1, compare.SLOWER_ONLY), (("--confirm-two-sided",), 0, compare.TWO_SIDED)):
        shutil.rmtree(tmp_path / DATES[6] / "confirm", ignore_errors=True)
        assert _gate(tmp_path, DATES[6], *flags) == code
        verdict = _verdict(tmp_path, DATES[6])
        assert verdict["confirmation"]["alternative"] == sided
        assert verdict["policy"]["alternative"] == compare.TWO_SIDED


@pytest.mark.parametrize("flags, message", [
    (["--pin", "2025-12-31"], "no night"),
    (["--baseline-nights", "0"], "whole number of nights"),
    (["--pin", "yesterday"], "not a date"),
])
def test_bad_baseline_flags_are_exit_2(drifting, capsys, flags, message):
    assert _gate(drifting, DATES[3], *flags) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err


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
    assert _gate(tmp_path, DATES[1], "--no-confirm") == 1  # a lost shard never passes silently
    verdict = _verdict(tmp_path, DATES[1])
    marks = {r["name"]: r["mark"] for r in verdict["rows"]}
    assert marks == {"a": compare.NO_CHANGE, "c": compare.NO_CHANGE, "b": compare.MISSING, "d": compare.MISSING}
    assert verdict["partial"] == "shard 1 of 2 lost" and verdict["verdict"] == "FAIL (2 missing)"
    assert "- PARTIAL RUN: shard 1 of 2 lost" in (night / "compare.md").read_text()


def test_a_partial_night_is_never_a_baseline(tmp_path, capsys):
    _shard_night(tmp_path, DATES[0], 0, [0, 1])
    _shard_night(tmp_path, DATES[1], 1, [0])
    _shard_night(tmp_path, DATES[2], 2, [0, 1])
    for flags in ([], ["--baseline-nights", "1"]):
        baseline = history.choose_baseline(tmp_path, DATES[2], *([1] if flags else []))
        assert baseline.dates == (DATES[0],)
        assert _gate(tmp_path, DATES[2], "--no-confirm", *flags) == 0
        verdict = _verdict(tmp_path, DATES[2])
        # The models the partial night lacked are not "added" the night after.
        assert {r["mark"] for r in verdict["rows"]} == {compare.NO_CHANGE}
        assert f"passed over: {DATES[1]} (partial: shard 1 of 2 lost)" in verdict["baseline"]
    assert _gate(tmp_path, DATES[2], "--pin", DATES[1]) == 2
    assert "cannot be a baseline (partial: shard 1 of 2 lost)" in capsys.readouterr().err


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
# The confirmation re-run


def _regressed(tmp_path):
    """Three steady nights, then one where DRIFT is 15% slower; the night
    records the runner settings a re-run would use."""
    for night in range(3):
        _write_night(tmp_path, DATES[night], {DRIFT: 0.8, STEADY: 0.9}, seed=night)
    _write_night(tmp_path, DATES[3], {DRIFT: 0.8 * 1.15, STEADY: 0.9}, seed=3)
    write_json(tmp_path / DATES[3] / NIGHT_FILE,
                       {"partial": "", "runner": {"flags": ["--performance", "--repeat", "8"]}})
    return tmp_path


def _remeasuring(ratio, calls, seed=99, **written):
    def remeasure(night, keys, out):
        calls.append(sorted((k.name, k.backend) for k in keys))
        _write_night(out.parent.parent / "_rerun", night.date, {DRIFT: ratio}, seed=seed, **written)
        out.parent.mkdir(parents=True, exist_ok=True)
        for path in (out.parent.parent / "_rerun" / night.date).iterdir():
            shutil.copy(path, out.parent / path.name)
        return ""
    return remeasure


def test_a_slower_row_the_rerun_does_not_confirm_passes(tmp_path):
    root, calls = _regressed(tmp_path), []
    code = gate.run(root, DATES[3], gate.Policy(), remeasure=_remeasuring(0.8, calls))
    assert code == 0
    assert calls == [[("m1", DRIFT), ("m2", DRIFT)]]  # only the regressed experiments, once
    verdict = _verdict(root, DATES[3])
    assert verdict["verdict"] == "PASS"
    assert verdict["confirmation"]["verdict_before"] == "FAIL (2 slower)"
    assert verdict["confirmation"]["exit_code_before"] == 1
    assert (verdict["confirmation"]["rerun"], verdict["confirmation"]["unconfirmed"]) == (2, 2)
    rows = [r for r in verdict["rows"] if r["backend"] == DRIFT]
    assert {r["mark"] for r in rows} == {compare.UNCONFIRMED}
    assert all("a re-run found no change" in r["note"] for r in rows)


def test_a_slower_row_the_rerun_confirms_fails(tmp_path):
    root = _regressed(tmp_path)
    assert gate.run(root, DATES[3], gate.Policy(), remeasure=_remeasuring(0.8 * 1.15, [])) == 1
    verdict = _verdict(root, DATES[3])
    assert verdict["verdict"] == "FAIL (2 slower)" and verdict["confirmation"]["confirmed"] == 2
    assert all("confirmed by a re-run" in r["note"] for r in verdict["rows"] if r["mark"] == "slower")


def test_a_slowdown_the_rerun_shows_but_cannot_prove_alone_is_confirmed_with_the_night(tmp_path):
    """A noisy re-run of a real slowdown: alone its test is not significant,
    though its change is past the floor.  By default the re-run alone
    decides: the row is unconfirmed and the night passes.  With
    ``--confirm-with-night`` the night and the re-run together are slower,
    so the row stays slower. (A re-run that shows no change clears the row
    however slow the night was: the test above.) Per-process units, as the
    nightly's; per repeat, the re-run alone decides."""
    root = tmp_path
    for night in range(3):
        _write_night(root, DATES[night], {DRIFT: 0.8, STEADY: 0.9}, seed=night, processes=4, process_spread=0.01)
    _write_night(root, DATES[3], {DRIFT: 0.8 * 1.15, STEADY: 0.9}, seed=3, processes=4, process_spread=0.01)
    write_json(root / DATES[3] / NIGHT_FILE, {"partial": "", "runner": {"flags": ["--performance"]}})
    remeasure = _remeasuring(0.8 * 1.06, [], seed=102, processes=4, process_spread=0.12)
    remeasure(Night(DATES[3], root / DATES[3]), [], tmp_path / "_alone" / "confirm" / "performance.csv")
    baseline = history.choose_baseline(root, DATES[3], history.DEFAULT_NIGHTS)
    alone = compare.compare(list(baseline.runs), tmp_path / "_alone" / "confirm" / "performance.csv")
    assert {(r.mark, r.unit) for r in alone.rows if r.backend == DRIFT} == {(compare.NO_CHANGE, compare.UNIT_PROCESS)}
    assert all(r.change >= compare.flag_at(0.05, compare.UNIT_PROCESS) for r in alone.rows if r.backend == DRIFT)

    assert gate.run(root, DATES[3], gate.Policy(), remeasure=remeasure) == 0
    verdict = _verdict(root, DATES[3])
    assert {r["mark"] for r in verdict["rows"] if r["backend"] == DRIFT} == {compare.UNCONFIRMED}
    assert verdict["confirmation"]["unconfirmed"] == 2
    assert _gate(root, DATES[3], "--confirm-with-night", "--no-confirm") == 1  # parsed; nothing re-run
    assert gate.run(root, DATES[3], gate.Policy(confirm_with_night=True), remeasure=remeasure) == 1
    verdict = _verdict(root, DATES[3])
    rows = [r for r in verdict["rows"] if r["backend"] == DRIFT]
    assert {r["mark"] for r in rows} == {compare.SLOWER} and verdict["confirmation"]["confirmed"] == 2
    assert all("with the night: together +" in r["note"] for r in rows)


def test_a_rerun_that_cannot_run_leaves_the_row_slower(tmp_path):
    root = _regressed(tmp_path)
    assert gate.run(root, DATES[3], gate.Policy(), remeasure=lambda night, keys, out: "it crashed") == 1
    assert _verdict(root, DATES[3])["confirmation"]["note"] == "it crashed"
    (root / DATES[3] / NIGHT_FILE).unlink()  # a night that did not record its settings
    assert gate.run(root, DATES[3], gate.Policy(), remeasure=gate.remeasure) == 1
    assert "does not record the runner's settings" in _verdict(root, DATES[3])["confirmation"]["note"]


@pytest.mark.parametrize("status, said", [(130, "interrupted (Ctrl-C)"), (143, "interrupted (SIGTERM)")])
def test_a_rerun_stopped_by_a_signal_stops_the_gate_without_a_verdict(tmp_path, monkeypatch, capsys, status, said):
    """Ctrl-C in a terminal, or Slurm's SIGTERM at its time limit, reaches
    every process of the step: the re-run stops and returns 130 or 143, and
    the gate must stop too, not judge the night on a re-run that never
    finished.  No verdict is written; the step's status says it was
    interrupted."""
    from benchmarks import cli

    root, calls = _regressed(tmp_path), []
    monkeypatch.setattr(cli, "run_benchmarks", lambda flags, backends, **job: calls.append(job["only"]) or status)
    assert _gate(root, DATES[3]) == status
    assert calls == [["m1"]]  # nothing re-measured after the interrupted model
    assert not (root / DATES[3] / "compare.json").exists() and not (root / DATES[3] / "compare.md").exists()
    err = capsys.readouterr().err
    assert f"python -m benchmarks.nightly gate: {said}" in err and "Traceback" not in err


def _timed_out(tmp_path):
    """Three steady nights, then one where m1 on DRIFT timed out."""
    root = _regressed(tmp_path)
    _write_night(tmp_path / "_night", DATES[3], {DRIFT: 0.8, STEADY: 0.9}, seed=3)
    csv_path = root / DATES[3] / "performance.csv"
    rows = pd.read_csv(tmp_path / "_night" / DATES[3] / "performance.csv")
    flaky = (rows["name"] == "m1") & (rows["backend"] == DRIFT)
    rows.loc[flaky, ["status", "speedup", "abs_latency"]] = ["timeout", np.nan, np.nan]
    rows.to_csv(csv_path, index=False)
    samples = store.samples_path(tmp_path / "_night" / DATES[3] / "performance.csv").read_text().splitlines()
    store.samples_path(csv_path).write_text("".join(
        line + "\n" for line in samples if not ('"m1"' in line and f'"{DRIFT}"' in line)))
    return root


def test_a_new_failure_the_rerun_does_not_reproduce_is_unconfirmed(tmp_path):
    calls = []
    root = _timed_out(tmp_path)
    assert compare.exit_code(compare.compare(root / DATES[2] / "performance.csv",
                                             root / DATES[3] / "performance.csv")) == 1  # before the re-run
    assert gate.run(root, DATES[3], gate.Policy(), remeasure=_remeasuring(0.8, calls)) == 0
    assert calls == [[("m1", DRIFT)]]
    verdict = _verdict(root, DATES[3])
    row = next(r for r in verdict["rows"] if (r["name"], r["backend"]) == ("m1", DRIFT))
    assert row["mark"] == compare.UNCONFIRMED and "a re-run ran it: no change" in row["note"]
    assert verdict["confirmation"]["verdict_before"].startswith("FAIL (1 new failure")


def test_a_new_failure_the_rerun_reproduces_fails(tmp_path):
    root = _timed_out(tmp_path)

    def failing_again(night, keys, out):
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(night.csv, out)
        return ""

    assert gate.run(root, DATES[3], gate.Policy(), remeasure=failing_again) == 1
    row = next(r for r in _verdict(root, DATES[3])["rows"] if (r["name"], r["backend"]) == ("m1", DRIFT))
    assert row["mark"] == compare.NEW_FAILURE and "confirmed by a re-run" in row["note"]


def test_the_reruns_keep_to_their_budget(tmp_path, monkeypatch):
    """A wide regression: the re-runs stop at the budget's models or
    minutes (a model takes 10 minutes here), and say how far they got."""
    from benchmarks import cli

    now, calls = [0.0], []

    def run_benchmarks(flags, backends, **job):
        calls.append(job["only"][0])
        now[0] += 600
        return 0

    monkeypatch.setattr(cli, "run_benchmarks", run_benchmarks)
    night = Night("2026-01-05", tmp_path, {"runner": {"flags": list(NIGHT_FLAGS)}})
    keys = [store.ExperimentKey("builtin", f"m{i}", "a", "xla", "cpu", 1, "inference", "float32", "static")
            for i in range(6)]
    clock = lambda: now[0]
    why = gate.remeasure(night, keys, tmp_path / "x.csv", models=2, minutes=60, clock=clock)
    assert calls == ["m0", "m1"] and "re-measured 2 of 6 model(s)" in why
    calls.clear()
    why = gate.remeasure(night, keys, tmp_path / "x.csv", models=10, minutes=25, clock=clock)
    assert calls == ["m0", "m1", "m2"] and "re-measured 3 of 6 model(s) in 30 min" in why
    assert gate.remeasure(night, keys[:2], tmp_path / "x.csv", models=10, minutes=60, clock=clock) == ""


@pytest.mark.parametrize("night_flags", [[], ["--only", "squeezenet1_1,resnet18,mobilenet_v2"],
                                         ["-k", "^(resnet|mobilenet)"]])
def test_a_rerun_measures_only_its_model_whatever_the_night_selected(night_flags):
    """The re-run of one model of a night run with ``--only`` (as the power
    benchmark's nights are) or ``-k`` measures that model alone, not the
    night's selection again."""
    from benchmarks import cli

    flags = ["--performance", "--use-xla-baseline", *night_flags]
    assert cli.planned_models(flags, ["openxla_eval"], only=["resnet18"]) == ["resnet18"]


def test_rows_past_the_budget_stay_slower_and_say_why(tmp_path):
    root = _regressed(tmp_path)
    budget = "confirmation budget spent (1 model(s), 25 min): re-measured 1 of 2 model(s) in 0 min"

    def one_model(night, keys, out):  # m1 re-measured (no change), m2 not
        rerun = _write_night(tmp_path / "_rerun", night.date, {DRIFT: 0.8}, seed=99, models=("m1",))
        out.parent.mkdir(parents=True, exist_ok=True)
        for path in rerun.parent.iterdir():
            shutil.copy(path, out.parent / path.name)
        return budget

    assert gate.run(root, DATES[3], gate.Policy(), remeasure=one_model) == 1
    verdict = _verdict(root, DATES[3])
    assert verdict["confirmation"]["note"] == budget
    marks = {r["name"]: r["mark"] for r in verdict["rows"] if r["backend"] == DRIFT}
    assert marks == {"m1": "unconfirmed", "m2": "slower"}


def test_the_rerun_repeats_the_nights_settings_a_model_at_a_time(tmp_path, monkeypatch):
    from benchmarks import cli

    calls = []
    monkeypatch.setattr(cli, "run_benchmarks", lambda flags, backends, **job: calls.append((flags, backends, job)) or 0)
    runner = {"flags": [*NIGHT_FLAGS, "--repeat", "8", "-k", "^s"], "backends": "a,b", "filter": ["^r"]}
    night = Night("2026-01-05", tmp_path, {"runner": runner})
    keys = [store.ExperimentKey("builtin", n, b, "xla", "cpu", 1, "inference", "float32", "static")
            for n, b in (("squeezenet1_1", "a"), ("resnet18", "b"), ("squeezenet1_1", "b"))]
    assert gate.remeasure(night, keys, tmp_path / "x.csv") == ""
    assert [(backends, job["only"], job["overwrite"], job["resume"]) for _, backends, job in calls] == [
        (["a", "b"], ["squeezenet1_1"], True, False), (["b"], ["resnet18"], False, True)]
    args = cli._job(*calls[0][:2], **calls[0][2])  # the night's settings; --only the model, not its filter ^r
    assert (args.repeat, args.filter, args.only, args.backend, args.output, args.overwrite) == (
        8, ["^s"], ["squeezenet1_1"], ["a,b"], str(tmp_path / "x.csv"), True)
    assert args.performance and args.use_xla_baseline and args.randomize_input


# --------------------------------------------------------------------------
# No baseline


def test_a_first_night_says_so_in_the_first_line_and_passes(tmp_path, monkeypatch):
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    _write_night(tmp_path, DATES[0], {DRIFT: 0.8})
    assert _gate(tmp_path, DATES[0]) == 0
    first = (tmp_path / DATES[0] / "compare.md").read_text().splitlines()[0]
    assert first == f"# NO BASELINE: night {DATES[0]} was not compared with anything (PASS)"
    assert summary.read_text().splitlines()[0] == first
    assert _verdict(tmp_path, DATES[0])["baseline"] is None
    assert _verdict(tmp_path, DATES[0])["verdict"] == f"PASS (no baseline: first night under {tmp_path})"


def test_no_baseline_fails_when_the_results_branch_could_not_be_read(tmp_path):
    _write_night(tmp_path, DATES[1], {DRIFT: 0.8})
    write_state(tmp_path, branch="nightly-results", exists=True, error="fatal: unable to access")
    assert _gate(tmp_path, DATES[1]) == 1
    text = (tmp_path / DATES[1] / "compare.md").read_text()
    assert text.startswith("# NO BASELINE") and "(FAIL)" in text.splitlines()[0]
    assert "exists but could not be read: fatal: unable to access" in text
    assert _verdict(tmp_path, DATES[1])["verdict"].startswith("FAIL (no baseline: the results branch")


def test_no_baseline_fails_when_no_earlier_night_can_be_read(tmp_path):
    broken = tmp_path / DATES[0] / "performance.csv"
    broken.parent.mkdir()
    broken.write_text("not,a,results,file\n1,2,3,4\n")
    _write_night(tmp_path, DATES[1], {DRIFT: 0.8})
    assert _gate(tmp_path, DATES[1]) == 1
    assert "no earlier night could be read" in (tmp_path / DATES[1] / "compare.md").read_text()


def test_only_partial_earlier_nights_pass_loudly(tmp_path):
    _write_night(tmp_path, DATES[0], {DRIFT: 0.8})
    write_json(tmp_path / DATES[0] / NIGHT_FILE, {"partial": "shard 3 of 4 lost"})
    _write_night(tmp_path, DATES[1], {DRIFT: 0.8})
    assert _gate(tmp_path, DATES[1]) == 0
    text = (tmp_path / DATES[1] / "compare.md").read_text()
    assert text.startswith("# NO BASELINE") and "partial: shard 3 of 4 lost" in text


def test_an_ad_hoc_night_is_never_a_baseline(tmp_path):
    """A dispatched night (one model, night.json kind ad-hoc) between two
    scheduled ones: the third is judged against the first alone, and m2
    is not "added"; pinning the ad-hoc night is refused."""
    _write_night(tmp_path, DATES[0], {DRIFT: 0.8})
    _write_night(tmp_path, DATES[1], {DRIFT: 0.8}, models=("m1",))
    write_json(tmp_path / DATES[1] / NIGHT_FILE, {"partial": "", "kind": "ad-hoc"})
    _write_night(tmp_path, DATES[2], {DRIFT: 0.8})
    assert _gate(tmp_path, DATES[2]) == 0
    verdict = _verdict(tmp_path, DATES[2])
    assert f"pooled, {DATES[0]} " in verdict["baseline"] and f"{DATES[1]} (ad-hoc" in verdict["baseline"]
    assert "added" not in {row["mark"] for row in verdict["rows"]}
    assert _gate(tmp_path, DATES[2], "--pin", DATES[1]) == 2


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
    assert _gate(tmp_path, DATES[4]) == 0
    assert _verdict(tmp_path, DATES[4])["missing_nights"] == [DATES[2], DATES[3]]
    report = (tmp_path / DATES[4] / "compare.md").read_text()
    assert f"## Missing nights\n\nNo scheduled night ran on {DATES[2]}, {DATES[3]}" in report
    assert _gate(tmp_path, DATES[1]) == 0
    assert _verdict(tmp_path, DATES[1])["missing_nights"] == []
    assert "Missing nights" not in (tmp_path / DATES[1] / "compare.md").read_text()


# --------------------------------------------------------------------------
# The A/A script's bookkeeping (the nights themselves are real runs: see
# benchmarks/tools/aa_nights.py; here they are written from chosen ratios)


def test_aa_report_counts_false_alarms_before_and_after_the_rerun(tmp_path):
    from benchmarks.tools import aa_nights

    dates = aa_nights.dates(4)
    for i, date in enumerate(dates):
        # Night 3 is 8% off (the machine changed); its re-run is back to normal.
        _write_night(tmp_path, date, {DRIFT: 1.08 if i == 2 else 1.0}, seed=i)
        write_json(tmp_path / date / NIGHT_FILE, {"partial": "", "runner": {"flags": []}})
        gate.run(tmp_path, date, gate.Policy(), remeasure=_remeasuring(1.0, []))
    table, alarms, judged = aa_nights.tally(tmp_path, dates)
    assert judged == 3
    # Night to night, night 3 is slower and night 4 faster (a pass); against
    # the pooled nights night 3 is slower until its re-run says otherwise.
    assert alarms == {"night-to-night": 1, "before re-run": 1, "after re-run": 0}
    assert table[2][1:4] == ["FAIL (2 slower)", "FAIL (2 slower)", "PASS"]
    assert "false alarms over 3 judged night(s): night-to-night 1, before re-run 1, after re-run 0" in \
        aa_nights.report(tmp_path, dates)


@pytest.mark.parametrize("argv, message", [
    (["--nights", "1"], "--nights must be at least 2"),
    (["--nights", "x"], "invalid int value"),
    (["--bogus"], "unrecognized arguments"),
])
def test_aa_nights_bad_input_is_exit_2(tmp_path, capsys, argv, message):
    from benchmarks.tools import aa_nights

    assert aa_nights.main(["--root", str(tmp_path / "aa"), *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err
    assert not (tmp_path / "aa").exists()


def test_aa_nights_keeps_earlier_nights_unless_resumed(tmp_path, capsys):
    from benchmarks.tools import aa_nights

    (tmp_path / "2000-01-01").mkdir()
    assert aa_nights.main(["--root", str(tmp_path), "--nights", "2"]) == 2
    assert "pass --resume" in capsys.readouterr().err
    assert aa_nights.main(["--help"]) == 0
    assert "identical nights" in capsys.readouterr().out


# --------------------------------------------------------------------------
# The re-run for real (slow: two runs of the harness)


@pytest.mark.slow
def test_a_regression_made_up_on_paper_is_not_confirmed_by_a_real_rerun(tmp_path):
    """Night 1 runs for real; night 2 is night 1 with its backend samples
    made 30% slower on paper. The gate measures the row again with night 1's
    settings, finds no change, and passes the night."""
    import os
    import subprocess
    import sys

    root_dir = Path(__file__).resolve().parent.parent
    env = dict(os.environ, PYTHONPATH=str(root_dir / "tests" / "fault_models"), PJRT_DEVICE="CPU")
    first = subprocess.run(
        [sys.executable, "-m", "benchmarks.nightly", "--root", str(tmp_path), "--date", DATES[0],
         "--backends", "eager", "--", "--suite", "torchbench", "--only", "steady", "--repeat", "12",
         "--warmup", "1", "--no-cold-start"], cwd=root_dir, env=env, capture_output=True, text=True, timeout=600)
    assert first.returncode == 0, first.stderr
    night, copy = tmp_path / DATES[0], tmp_path / DATES[1]
    copy.mkdir()
    shutil.copy(night / "performance.csv", copy / "performance.csv")
    shutil.copy(night / NIGHT_FILE, copy / NIGHT_FILE)
    slowed = [{**r, "samples_s": [s * 1.3 for s in r["samples_s"]]} if r["role"] == "backend" else r
              for r in store.read_samples(night / "performance.jsonl")]
    store.append_samples(copy / "performance.jsonl", slowed)
    # The test suite's other workers share the cores: the rows record that
    # load, which the gate would call inconclusive; the rule judged here is the re-run's.
    gated = subprocess.run([sys.executable, "-m", "benchmarks.nightly", "gate", "--root", str(tmp_path),
                            "--date", DATES[1], "--max-other-cores", "inf"], cwd=root_dir, env=env,
                           capture_output=True, text=True, timeout=600)
    verdict = _verdict(tmp_path, DATES[1])
    assert verdict["confirmation"]["verdict_before"] == "FAIL (1 slower)", gated.stderr
    assert "measuring steady (eager) again" in gated.stderr
    assert store.read_rows(copy / "confirm" / "performance.csv")["name"].tolist() == ["steady"]
    assert gated.returncode == 0 and verdict["verdict"] == "PASS", gated.stdout + gated.stderr
    assert [r["mark"] for r in verdict["rows"]] == [compare.UNCONFIRMED]
