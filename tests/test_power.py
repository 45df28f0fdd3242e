"""benchmarks.tools.power on nights written here with known effects: no
measurement, the real gate (benchmarks.results.gate) judging them."""
import json
import re
import tempfile
from pathlib import Path

import numpy as np
import pytest

from benchmarks.nightly import gate
from benchmarks.nightly.night import RESULT
from benchmarks.results import compare, store
from benchmarks.tools import aa_nights, power

KEY = dict(dev="cpu", batch_size=4, baseline="xla", suite="builtin", mode="inference", dtype="fp32",
           dynamic="static", inputs="random")
# Per model: the spread of a process's median ratio around the model's level.
MODELS = {"quiet": 0.003, "noisy": 0.12}


def _night(folder, rng, processes=4, repeats=6, slowdown=0.0, cold=0):
    """A night of both MODELS; ``cold``: that many cold processes a side
    (their first calls 1.3x the baseline's, the model's spread between processes)."""
    folder.mkdir(parents=True)
    rows, records = [], []
    settings = {c: KEY[c] for c in store.SETTING_COLUMNS}
    for name, between in MODELS.items():
        ratios = np.concatenate([0.8 * (1 + slowdown) * (1 + rng.normal(0, between))
                                 * (1 + rng.normal(0, 0.002, repeats)) for _ in range(processes)])
        baseline = 0.01 * (1 + rng.normal(0, 0.01, ratios.size))
        backend = baseline * ratios
        rows.append({**KEY, "name": name, "backend": "b", "status": "pass", "speedup": 1.25,
                     "abs_latency": float(np.median(backend)) * 1e3, "processes": processes})
        sizes = [repeats] * processes
        first = [{}, {}]
        if cold:
            base_first = 2.0 * (1 + rng.normal(0, 0.05, cold))
            back_first = base_first * 1.3 * (1 + rng.normal(0, between, cold))
            first = [{"first_call_s": float(np.median(c)), "cold_first_calls_s": c.tolist()}
                     for c in (base_first, back_first)]
            rows[-1]["compilation_latency"] = first[1]["first_call_s"]
        records += [{**store.sample_record(name, "b", "baseline", baseline, **settings), "process_repeats": sizes,
                     **first[0]},
                    {**store.sample_record(name, "b", "backend", backend, **settings), "process_repeats": sizes,
                     **first[1]}]
    store.append_rows(folder / RESULT, rows)
    store.append_samples(store.samples_path(folder / RESULT), records)


@pytest.fixture(scope="module")
def nights(tmp_path_factory):
    """Six identical nights, each judged by the gate as the nightly does
    (without re-runs: nothing here can measure)."""
    root = tmp_path_factory.mktemp("nights")
    rng = np.random.default_rng(0)
    dates = aa_nights.dates(6)
    for date in dates:
        _night(root / date, rng)
        gate.run(root, date, gate.Policy())
    return root, dates


@pytest.fixture(scope="module")
def cold_nights(tmp_path_factory):
    """Eight identical nights with three cold processes a side."""
    root = tmp_path_factory.mktemp("cold")
    rng = np.random.default_rng(1)
    dates = aa_nights.dates(8)
    for date in dates:
        _night(root / date, rng, cold=3)
    return root, dates


def test_a_slowed_night_scales_the_backends_first_calls_by_their_own_factor(tmp_path, cold_nights):
    root, dates = cold_nights
    slowed = power.slowed_night(root / dates[0], tmp_path / dates[0], 1.0, 1.5)
    read = lambda folder: {(r["name"], r["role"]): r  # noqa: E731
                           for r in store.read_samples(store.samples_path(folder / RESULT))}
    before, after = read(root / dates[0]), read(slowed)
    for key in (("quiet", "backend"), ("noisy", "backend")):
        assert after[key]["cold_first_calls_s"] == pytest.approx([t * 1.5 for t in before[key]["cold_first_calls_s"]])
        assert after[key]["first_call_s"] == pytest.approx(before[key]["first_call_s"] * 1.5)
        assert after[key]["samples_s"] == pytest.approx(before[key]["samples_s"])
    assert after[("quiet", "baseline")] == before[("quiet", "baseline")]
    assert store.read_rows(slowed / RESULT)["compilation_latency"].tolist() == pytest.approx(
        (store.read_rows(root / dates[0] / RESULT)["compilation_latency"] * 1.5).tolist())


def test_the_first_call_table_counts_both_rules_on_the_same_nights(tmp_path, cold_nights):
    root, dates = cold_nights
    tally = power.Tally()
    power.first_calls(root, dates, 7, (0.25, 1.0), tally, tmp_path)
    # Per process, the U test needs two baseline nights (3 vs 6 can reach
    # p < 0.05; 3 vs 3 falls to the range); one pair a night, three.
    assert tally.judged[power.FIRST_CALL] == 7 and tally.judged[power.FIRST_CALL_ONE] == 7
    assert tally.alarms[power.FIRST_CALL] == tally.alarms[power.FIRST_CALL_ONE] == 0
    # Doubled first calls are caught on every row by both rules; at the
    # threshold (+25%) on some.
    assert tally.caught[(power.FIRST_CALL, 1.0)] == [14, 14]
    assert tally.caught[(power.FIRST_CALL_ONE, 1.0)] == [10, 10]  # nights 4-8 have three baseline nights
    assert 0 < tally.caught[(power.FIRST_CALL, 0.25)][0] < 14
    text = power.report(tally, (0.05,), {"judging": 1.0}, (0.25, 1.0))
    assert "first call, per process" in text and "first call, one pair a night" in text
    assert "+100% caught (rows)" in text


def test_the_cpus_line_says_which_nights_ran_on_which_machine():
    cpus = {"2000-01-01": "A, 2 CPUs", "2000-01-02": "A, 2 CPUs", "2000-01-03": "", "2000-01-04": "B, 2 CPUs"}
    assert power.cpus_line(cpus) == ("CPUs: A, 2 CPUs: 2000-01-01 .. 2000-01-02; not recorded: 2000-01-03; "
                                     "B, 2 CPUs: 2000-01-04\n")
    assert power.cpus_line({}) == ""


def test_loaded_nights_are_named_and_excluded_above_the_cores_given(tmp_path, nights, capsys):
    import shutil

    root, dates = nights
    shutil.copytree(root, tmp_path / "nights")
    root = tmp_path / "nights"
    for date, load in ((dates[2], 1.4), (dates[3], 0.05)):
        rows = store.read_rows(root / date / RESULT)
        rows["other_cores"] = load
        rows.to_csv(root / date / RESULT, index=False)
    assert power.night_loads(root, dates) == {**dict.fromkeys(dates), dates[2]: 1.4, dates[3]: 0.05}
    assert power.main(["--judge-only", "--nights", "6", "--root", str(root), "--slowdowns", "0.2",
                       "--exclude-loaded", "0.5"]) == 0
    out = capsys.readouterr().out
    assert f"not judged, loaded (--exclude-loaded 0.5): {dates[2]}\n" in out
    assert f"while a row was timed): {dates[2]} 1.40, {dates[3]} 0.05" in out
    # Five nights have a baseline; the loaded one is not judged.
    assert re.search(r"^gate, before re-run +0/4 \(0%\)", out, re.M)


def test_a_slowed_night_scales_only_the_backend(tmp_path, nights):
    root, dates = nights
    slowed = power.slowed_night(root / dates[0], tmp_path / dates[0], 1.1)
    before = {(r["name"], r["role"]): r["samples_s"] for r in store.read_samples(store.samples_path(root / dates[0] / RESULT))}
    after = {(r["name"], r["role"]): r for r in store.read_samples(store.samples_path(slowed / RESULT))}
    assert after[("quiet", "backend")]["samples_s"] == pytest.approx([s * 1.1 for s in before[("quiet", "backend")]])
    assert after[("quiet", "baseline")]["samples_s"] == before[("quiet", "baseline")]
    assert after[("quiet", "backend")]["process_repeats"] == [6] * 4
    rows = store.read_rows(slowed / RESULT)
    assert rows["speedup"].tolist() == pytest.approx([1.25 / 1.1] * 2)


def test_a_night_stored_as_failing_before_its_rerun_is_judged_again_by_todays_rules(tmp_path, nights):
    """The night's status before its re-run is judged again from its files
    by today's rules: a stored status before the re-run
    (``exit_code_before``) keeps the rules of its day, so a night stored
    as failing whose files pass today is no false alarm, before its re-run
    or after it."""
    import shutil

    root, dates = nights
    shutil.copytree(root, tmp_path / "nights")
    root = tmp_path / "nights"
    stored = root / dates[3] / "compare.json"
    verdict = json.loads(stored.read_text())
    assert verdict["exit_code"] == verdict["exit_code_before"] == 0
    verdict["exit_code_before"] = verdict["exit_code"] = 1  # failed by the rules of its day, no re-run kept
    stored.write_text(json.dumps(verdict))
    tally = power.Tally()
    power.false_alarms(root, dates, 7, gate.Policy(), tally)
    assert (tally.alarms[power.BEFORE_ANY], tally.judged[power.BEFORE_ANY]) == (0, 5)
    assert (tally.alarms[power.AFTER], tally.judged[power.AFTER]) == (0, 5)  # passing before: after too



@pytest.mark.slow  # eight nights judged twice over: make test-all
def test_a_first_call_slower_before_the_rerun_is_a_false_alarm_before_it(tmp_path, cold_nights):
    """A first-call row slower tonight (its re-run would settle it): the
    speedup's test passed, the night's status before its re-run did not."""
    import shutil

    root, dates = cold_nights
    shutil.copytree(root, tmp_path / "nights")
    root = tmp_path / "nights"
    for date in dates:
        gate.run(root, date, gate.Policy())

    def alarms():
        tally = power.Tally()
        power.false_alarms(root, dates, 7, gate.Policy(), tally)
        return {mode: (tally.alarms[mode], tally.judged[mode]) for mode in (power.BEFORE, power.BEFORE_ANY)}

    before = alarms()
    slowed = power.slowed_night(root / dates[-1], tmp_path / "slowed", 1.0, first_call_factor=3.0)
    for path in (RESULT, store.samples_path(Path(RESULT)).name):
        shutil.copy(slowed / path, root / dates[-1] / path)
    after = alarms()
    assert after[power.BEFORE_ANY] == (before[power.BEFORE_ANY][0] + 1, 7)
    assert after[power.BEFORE] == before[power.BEFORE]  # the speedup's test: as before


def test_a_verdict_stored_without_its_before_code_is_judged_again_without_the_rerun(tmp_path, nights):
    """Verdicts written before ``exit_code_before`` was stored: the night is
    judged again with nothing re-run, every policy, against its baseline."""
    import shutil

    root, dates = nights
    shutil.copytree(root, tmp_path / "nights")
    root = tmp_path / "nights"
    slowed = power.slowed_night(root / dates[3], tmp_path / "slowed", 1.3)
    for path in (RESULT, store.samples_path(Path(RESULT)).name):
        shutil.copy(slowed / path, root / dates[3] / path)
    stored = root / dates[3] / "compare.json"
    verdict = json.loads(stored.read_text())
    assert gate.exit_code_before(root, dates[3], verdict) == 0  # as stored
    del verdict["exit_code_before"]  # as the gate wrote it before it stored that
    assert gate.exit_code_before(root, dates[3], verdict) == 1  # the slower rows, no re-run to settle them
    stored.write_text(json.dumps(verdict))
    tally = power.Tally()
    power.false_alarms(root, dates, 7, gate.Policy(), tally)
    assert (tally.alarms[power.BEFORE_ANY], tally.alarms[power.BEFORE], tally.alarms[power.AFTER]) == (1, 1, 0)


@pytest.mark.parametrize("rerun_factor, alarm", [(1.3, 1), (1.0, 0)])
def test_a_night_that_kept_its_rerun_is_settled_again_by_it(tmp_path, nights, rerun_factor, alarm):
    """A night slower before its re-run, whose re-run is kept in
    ``confirm/``: the false alarm after the re-run is the gate's verdict
    settled by that re-run under today's rule (both rules), not the
    verdict stored -- a re-run as slow confirms it, one as the nights
    before clears it."""
    import shutil

    root, dates = nights
    shutil.copytree(root, tmp_path / "nights")
    root = tmp_path / "nights"
    original = tmp_path / "original"
    shutil.copytree(root / dates[3], original)
    slowed = power.slowed_night(original, tmp_path / "slowed", 1.3)
    for path in (RESULT, store.samples_path(Path(RESULT)).name):
        shutil.copy(slowed / path, root / dates[3] / path)
    rerun = power.slowed_night(original, tmp_path / "rerun", rerun_factor)
    shutil.copytree(rerun, root / dates[3] / "confirm")
    assert json.loads((root / dates[3] / "compare.json").read_text())["exit_code"] == 0  # as stored
    tally = power.Tally()
    power.false_alarms(root, dates, 7, gate.Policy(), tally)
    assert tally.alarms[power.BEFORE] == 1
    assert tally.alarms[power.AFTER] == tally.alarms[power.AFTER_WITH_NIGHT] == alarm


def test_excluded_nights_are_not_judged_but_stay_in_the_baselines(tmp_path, nights):
    root, dates = nights
    everything, without = power.Tally(), power.Tally()
    power.false_alarms(root, dates, 7, gate.Policy(), everything)
    power.false_alarms(root, dates, 7, gate.Policy(), without, exclude={dates[2]})
    assert everything.judged[power.PER_PROCESS] == 5 and without.judged[power.PER_PROCESS] == 4
    # Two nights: (1, 2) and (2, 3) are not paired without night 2.
    assert everything.judged[power.TWO_NIGHTS] == 4 and without.judged[power.TWO_NIGHTS] == 2
    # Night 3 is judged against a baseline that still pools night 2.
    assert [len(b.runs) for d, b in power.judged_nights(root, dates, 7, {dates[2]}) if d == dates[3]] == [3]
    caught = power.Tally()
    with tempfile.TemporaryDirectory() as scratch:
        power.detections(root, dates, 7, gate.Policy(), (0.2,), caught, Path(scratch), exclude={dates[2]})
    assert caught.caught[(power.BEFORE, 0.2)][1] == 8  # 4 nights x 2 rows
    assert caught.caught[(power.AFTER, 0.2)][1] == 6  # the last has no later night
    assert caught.caught[(power.TWO_NIGHTS, 0.2)][1] == 4


def test_cli_names_the_excluded_nights(nights, capsys):
    root, dates = nights
    assert power.main(["--judge-only", "--nights", "6", "--root", str(root), "--slowdowns", "0.2",
                       "--exclude", dates[2]]) == 0
    assert f"6 identical night(s) under {root}; not judged (--exclude): {dates[2]}" in capsys.readouterr().out
    assert power.main(["--judge-only", "--nights", "6", "--root", str(root), "--exclude", "2000-02-30"]) == 2
    err = capsys.readouterr().err
    assert "--exclude 2000-02-30: no such night under" in err and len(err.strip().splitlines()) == 1


@pytest.mark.slow
def test_power_counts_false_alarms_and_catches_by_size_and_model(nights):
    root, dates = nights
    tally = power.measure_power(root, dates, (0.03, 0.08, 0.2))
    # Five nights had a baseline; the gate's stored verdicts are counted too.
    assert tally.judged[power.PER_PROCESS] == tally.judged[power.BEFORE] == 5
    assert tally.alarms[power.PER_PROCESS] == tally.alarms[power.BEFORE] == 0
    quiet = lambda s: tally.caught[("quiet", "b", s)]  # noqa: E731
    noisy = lambda s: tally.caught[("noisy", "b", s)]  # noqa: E731
    # A quiet model's +8% is caught every night, and so is its +3%: per
    # process the gate flags from half the threshold.
    assert quiet(0.08) == [5, 5] and quiet(0.03) == [5, 5] and quiet(0.2) == [5, 5]
    # Between-process spread of 12% hides +8% and even +20% some nights.
    assert noisy(0.08)[0] <= 2 and noisy(0.2)[0] < 5
    assert tally.caught[(power.BEFORE, 0.08)] == [quiet(0.08)[0] + noisy(0.08)[0], 10]
    # The stand-in re-run: the next night slowed alike; the last night has none.
    assert tally.caught[(power.AFTER, 0.2)][1] == tally.caught[(power.AFTER_WITH_NIGHT, 0.2)][1] == 8
    # Judged with the night, a re-run confirms all that it confirms alone, and more.
    for size in (0.03, 0.08, 0.2):
        alone, pooled = tally.caught[(power.AFTER, size)][0], tally.caught[(power.AFTER_WITH_NIGHT, size)][0]
        assert alone <= pooled <= tally.caught[(power.BEFORE, size)][0]
    assert tally.caught[(power.AFTER_WITH_NIGHT, 0.08)][0] > tally.caught[(power.AFTER, 0.08)][0]
    assert tally.caught[(power.TWO_NIGHTS, 0.2)][1] == 8
    # By the second night: the nights with a next night and a stand-in re-run
    # for it (nights 2-4 of 2-6), both models; the quiet model's every night.
    for size in (0.03, 0.08, 0.2):
        second = tally.caught[(power.SECOND_NIGHT, size)]
        assert second[1] == 6 and second[0] >= 3


def test_the_second_night_is_judged_with_the_first_in_its_window(tmp_path, nights):
    """The history the second night is judged in: the night the slowdown
    landed and the second night slowed, every other night as measured."""
    root, dates = nights
    slowed = tmp_path / "slowed"
    for date in dates:
        power.slowed_night(root / date, slowed / date, 1.2)
    found = power._second_night(root, dates, dates[3], dates[4], dates[2], slowed, 7, gate.Policy(),
                                tmp_path / "history")
    assert {key.name for key, hit in found.items() if hit} >= {"quiet"}
    # Settled by the gate itself, the night after standing in for its re-run.
    assert (slowed / dates[3] / "confirm" / RESULT).read_bytes() == (slowed / dates[4] / RESULT).read_bytes()
    for date in dates:
        expected = (slowed if date in (dates[2], dates[3]) else root) / date
        assert (tmp_path / "history" / date).resolve() == expected.resolve()


def test_report_prints_every_mode_and_model(nights):
    root, dates = nights
    tally = power.measure_power(root, dates, (0.05,))
    text = power.report(tally, (0.05,), {"judging": 1.0})
    for mode in power.MODES:
        assert mode in text
    assert "noisy" in text and "quiet" in text and "wall time: judging 1 s" in text


def test_cli_judges_nights_already_there(nights, capsys):
    root, _ = nights
    assert power.main(["--judge-only", "--nights", "6", "--root", str(root), "--slowdowns", "0.2"]) == 0
    out = capsys.readouterr().out
    assert "6 identical night(s)" in out and "+20% caught (rows)" in out


@pytest.mark.parametrize("argv, message", [
    (["--slowdowns", "x"], "--slowdowns takes fractions"),
    (["--slowdowns", "-0.1"], "--slowdowns takes positive fractions"),
    (["--nights", "2"], "--nights must be at least 3"),
    (["--exclude-loaded", "-1"], "--exclude-loaded takes a number of cores >= 0"),
    (["--resample", "-1"], "--resample takes a number of nights >= 0"),
    (["--resample-repeats", "0"], "--resample-repeats numbers >= 1"),
    (["--judge-only", "--root", "/nonexistent/power"], "--judge-only: no nights under"),
])
def test_bad_input_is_one_line_and_exit_2(argv, message, capsys):
    assert power.main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1, err


def test_compare_pools_several_new_runs(nights):
    root, dates = nights
    one = compare.compare(root / dates[0] / RESULT, root / dates[2] / RESULT)
    two = compare.compare(root / dates[0] / RESULT,
                          [root / d / RESULT for d in dates[1:3]])
    assert {r.n_new for r in two.rows} == {2 * r.n_new for r in one.rows}
    json.loads(compare.render_json(two))


def test_resampled_nights_replay_the_gate_rule_on_the_nights_processes(nights):
    root, dates = nights
    tally = power.resampled(root, dates, processes=4, repeats=6, trials=40, slowdowns=(0.08, 0.3))
    assert tally.judged[power.RESAMPLED] == tally.judged[power.RESAMPLED_AFTER] == 40
    # Two models a trial: the quiet one's +8% caught every time, the noisy one's rarely.
    assert tally.caught[(power.RESAMPLED, 0.08)][1] == 80
    assert 40 <= tally.caught[(power.RESAMPLED, 0.08)][0] < 60
    after = tally.caught[(power.RESAMPLED_AFTER_WITH_NIGHT, 0.3)][0]
    assert tally.caught[(power.RESAMPLED_AFTER, 0.3)][0] <= after <= tally.caught[(power.RESAMPLED, 0.3)][0]
    assert tally.caught[(power.RESAMPLED_AFTER, 0.08)][0] < tally.caught[(power.RESAMPLED_AFTER_WITH_NIGHT, 0.08)][0]
    # Identical nights: false alarms as rare as the test's level allows.
    assert tally.alarms[power.RESAMPLED] <= 6
    # Fewer repeats per process: each process's median is its first repeats'.
    assert power.resampled(root, dates, 2, 1, 5, (0.08,)).judged[power.RESAMPLED] == 5
    assert [len(p) for p in power.stored_processes(root, dates)[("quiet", "b")][0]] == [6] * 4


def test_cli_resamples_the_nights_alone(nights, capsys):
    root, _ = nights
    assert power.main(["--judge-only", "--no-real-nights", "--nights", "6", "--root", str(root),
                       "--slowdowns", "0.2", "--resample", "10", "--resample-processes", "3",
                       "--resample-repeats", "8"]) == 0
    out = capsys.readouterr().out
    assert power.RESAMPLED in out and power.PER_PROCESS not in out and "10 resampled nights of 3 x 8" in out
    # Six nights of four processes: 24 a model, too few to deal four nights of seven.
    assert power.main(["--judge-only", "--no-real-nights", "--nights", "6", "--root", str(root),
                       "--resample", "1", "--resample-processes", "7"]) == 2
    err = capsys.readouterr().err
    assert "too few stored processes to deal 4 x 7" in err and "quiet/b (24)" in err
