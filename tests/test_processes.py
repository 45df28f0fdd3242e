"""Timed repeats spread over worker processes: the runner's flags and
defaults, the join of a model's processes (benchmarks.run.processes), runs
read back per process (pairing), and the gate's test on per-process medians
with the smallest slowdown each row could have caught (compare)."""
import numpy as np
import pytest

from benchmarks import cli
from benchmarks.cli import flags
from benchmarks.results import compare, pairing, store
from benchmarks.run import processes
from benchmarks.run.config import RunConfig
from benchmarks.run.rows import ModelResult


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)


def config(*argv: str) -> RunConfig:
    return cli.make_config(cli.build_parser().parse_args(["--only", "resnet18", *argv]))


# --------------------------------------------------------------------------
# Flags


def test_performance_without_repeat_spreads_over_processes():
    c = config()
    assert (c.processes, c.repeat) == (flags.DEFAULT_PROCESSES, flags.DEFAULT_PROCESS_REPEAT)
    assert c.processes > 1


@pytest.mark.parametrize("argv, expected", [
    (["--repeat", "30"], (1, 30)),  # as before: one process
    (["--processes", "3"], (3, flags.DEFAULT_PROCESS_REPEAT)),
    (["--processes", "3", "--repeat", "5"], (3, 5)),
    (["--processes", "1"], (1, flags.DEFAULT_REPEAT)),
    (["--accuracy"], (1, flags.DEFAULT_REPEAT)),
    (["--no-isolate"], (1, flags.DEFAULT_REPEAT)),
    (["--max-time", "10"], (1, cli.ADAPTIVE_MAX_REPEAT)),
])
def test_processes_and_repeats(argv, expected):
    c = config(*argv)
    assert (c.processes, c.repeat) == expected


@pytest.mark.parametrize("argv, message", [
    (["--processes", "0"], "--processes must be at least 1"),
    (["--processes", "2", "--no-isolate"], "drop --no-isolate"),
    (["--processes", "2", "--accuracy"], "it applies to --performance"),
])
def test_bad_processes_are_one_line_and_exit_2(argv, message, capsys):
    assert cli.main(["--only", "resnet18", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1, err


def test_run_config_round_trips_processes():
    c = RunConfig(processes=4, repeat=8)
    assert RunConfig.from_json(c.to_json()) == c


# --------------------------------------------------------------------------
# Joining a model's processes


KEY = dict(dev="cpu", name="m", batch_size=4, baseline="xla", suite="builtin", mode="inference",
           dtype="fp32", dynamic="static", inputs="random", profile="", iterations_per_run=None)


def _part(baseline_s, backend_s, status="pass", backend="b", error="", other_cores=None):
    row = {**KEY, "backend": backend, "status": status, "compilation_latency": 1.5, "other_cores": other_cores}
    if status != "pass":
        return ModelResult(rows=[{**row, "error": error}])
    settings = {c: KEY[c] for c in store.SETTING_COLUMNS}
    return ModelResult(rows=[row], samples=[
        store.sample_record("m", backend, "baseline", baseline_s, 0.5, **settings),
        store.sample_record("m", backend, "backend", backend_s, 1.5, **settings)])


def test_join_concatenates_samples_and_records_each_process():
    parts = [_part([1.0, 1.0, 1.0], [2.0, 2.0, 2.0]), _part([1.0, 1.0, 1.0], [1.0, 1.0, 1.0]),
             _part([2.0, 2.0, 2.0], [1.0, 1.0, 1.0])]
    joined = processes.join(parts, 3)
    (row,) = joined.rows
    baseline, backend = joined.samples
    assert backend["samples_s"] == [2.0] * 3 + [1.0] * 6 and baseline["process_repeats"] == [3, 3, 3]
    assert backend["process_repeats"] == [3, 3, 3]
    # The speedup is the median of the processes' speedups (0.5, 1, 2), not of all samples.
    assert row["speedup"] == 1.0 and row["processes"] == 3 and row["repeats_used"] == 9
    assert row["speedup_ci_low"] <= 0.5 + 1e-9 and row["speedup_ci_high"] >= 2.0 - 1e-9
    assert row["compilation_latency"] == 1.5  # the first process's other columns


def test_the_load_of_other_processes_is_the_mean_over_the_processes_that_recorded_it():
    parts = [_part([1.0] * 3, [1.0] * 3, other_cores=c) for c in (0.1, 1.3, None)]
    joined = processes.join(parts, 3)
    (row,) = joined.rows
    assert row["other_cores"] == pytest.approx(0.7)
    assert [r["process_other_cores"] for r in joined.samples] == [[0.1, 1.3, None]] * 2
    quiet = processes.join([_part([1.0] * 3, [1.0] * 3) for _ in range(2)], 2)
    assert all("process_other_cores" not in r for r in quiet.samples)
    (row,) = processes.join([_part([1.0] * 3, [1.0] * 3)], 1).rows
    assert row["other_cores"] is None  # not recorded: unknown, not quiet


def test_a_failure_in_any_process_is_the_row():
    parts = [_part([1.0] * 3, [1.0] * 3), _part([], [], status="crashed", error="killed by SIGSEGV")]
    (row,) = processes.join(parts, 3).rows
    assert row["status"] == "crashed" and row["error"] == "killed by SIGSEGV; in process 2 of 3"
    assert not processes.join(parts, 3).samples


def test_spread_runs_each_process_and_stops_once_nothing_passes():
    seen = []

    def run_once(config, name):
        seen.append(config)
        return _part([], [], status="model_fail_to_load", error="no such model")

    c = RunConfig(measure="performance", processes=4, repeat=5, cold_start=True, hlo_dir="h")
    result = processes.spread(c, "m", run_once)
    assert len(seen) == 1 and result.rows[0]["status"] == "model_fail_to_load"

    seen.clear()
    processes.spread(c, "m", lambda config, name: seen.append(config) or _part([1.0] * 5, [1.0] * 5))
    assert len(seen) == 4 and all(s.processes == 1 and s.repeat == 5 for s in seen)
    # Only the first process times cold starts and writes diagnostics.
    assert seen[0].cold_start and seen[0].hlo_dir == "h"
    assert not any(s.cold_start or s.hlo_dir for s in seen[1:])


# --------------------------------------------------------------------------
# Reading runs per process, and the gate's test


def _write(path, chunks, backend="b", other_cores=None):
    """A run of one model whose samples came from processes: ``chunks`` is
    a list of per-process backend/baseline ratios over a steady baseline;
    ``other_cores``: the load its row recorded (None: not recorded)."""
    baseline = [0.01 * (1 + 0.001 * i) for i, _ in enumerate(r for c in chunks for r in c)]
    backend_s = [b * r for b, r in zip(baseline, (r for c in chunks for r in c))]
    sizes = [len(c) for c in chunks]
    row = {**KEY, "backend": backend, "status": "pass", "speedup": 1.0, "abs_latency": 10.0,
           "other_cores": other_cores}
    store.append_rows(path, [row])
    settings = {c: KEY[c] for c in store.SETTING_COLUMNS}
    store.append_samples(store.samples_path(path), [
        {**store.sample_record("m", backend, "baseline", baseline, **settings), "process_repeats": sizes},
        {**store.sample_record("m", backend, "backend", backend_s, **settings), "process_repeats": sizes}])
    return path


def _processes(rng, count, repeats, level, between=0.04, within=0.002):
    """Per-process ratios: each process shifted by its own draw (``between``),
    its repeats close together (``within``)."""
    return [list(level * (1 + rng.normal(0, between)) * (1 + rng.normal(0, within, repeats)))
            for _ in range(count)]


def test_pairing_reads_processes_and_pools_them(tmp_path):
    a = _write(tmp_path / "a.csv", [[1.0, 1.0], [2.0, 2.0, 2.0]])
    b = _write(tmp_path / "b.csv", [[3.0], [4.0]])
    side = pairing.load_run(a)[0][next(iter(pairing.load_run(a)[0]))]
    assert side.process_repeats == (2, 3) and side.process_ratios == pytest.approx((1.0, 2.0))
    pooled, _ = pairing.load_baseline([a, b])
    (side,) = pooled.values()
    assert side.process_repeats == (2, 3, 1, 1)
    assert side.process_ratios == pytest.approx((1.0, 2.0, 3.0, 4.0))


def test_a_run_read_again_is_its_files_as_they_are_now(tmp_path):
    """Loading a run twice (the gate does, once per comparison a night is
    in) gives what its files hold then: a rewrite of the same size and what
    a caller did to the first result are not carried over."""
    a = tmp_path / "a.csv"
    _write(a, [[1.5, 1.5]])
    first, df = pairing.load_run(a)
    (key,) = first
    first.clear()
    df.loc[:, "speedup"] = 9.0
    again, df_again = pairing.load_run(a)
    assert again[key].ratios == pytest.approx((1.5, 1.5)) and df_again["speedup"].tolist() == [1.0]
    jsonl = store.samples_path(a)
    text = jsonl.read_text()
    jsonl.write_text(text.replace("0.015", "0.016", 1))  # the same size: one sample changed
    assert len(jsonl.read_text()) == len(text)
    assert pairing.load_run(a)[0][key].ratios[0] == pytest.approx(1.6)
    rows = a.read_text()
    a.write_text(rows.replace(",pass,", ",fail,", 1))
    assert pairing.load_run(a)[0][key].status == "fail"


def test_a_run_without_processes_leaves_the_pool_per_repeat(tmp_path):
    a = _write(tmp_path / "a.csv", [[1.0, 1.0], [2.0, 2.0]])
    old = tmp_path / "old.csv"  # schema version 5: no process_repeats
    store.append_rows(old, [{**KEY, "backend": "b", "status": "pass", "speedup": 1.0}])
    settings = {c: KEY[c] for c in store.SETTING_COLUMNS}
    store.append_samples(store.samples_path(old), [
        store.sample_record("m", "b", "baseline", [1.0, 1.0], **settings),
        store.sample_record("m", "b", "backend", [1.0, 1.0], **settings)])
    (side,) = pairing.load_baseline([old, a])[0].values()
    assert side.process_repeats == () and side.process_ratios == () and len(side.ratios) == 6


def test_the_test_sees_the_spread_between_processes(tmp_path):
    """Identical code, each process shifted by its own state: per repeat, the
    nights' samples look like two populations (a false alarm); per process,
    the gate sees that a second night moves this much."""
    rng = np.random.default_rng(3)
    alarms = {compare.UNIT_PROCESS: 0, compare.UNIT_REPEAT: 0}
    for trial in range(20):
        old = _write(tmp_path / f"old{trial}.csv", _processes(rng, 12, 8, 1.0))
        new = _write(tmp_path / f"new{trial}.csv", _processes(rng, 4, 8, 1.0))
        for unit in alarms:  # a low threshold: what the significance test alone says
            (row,) = compare.compare(old, new, threshold=0.005, units=unit).rows
            assert row.unit == unit
            alarms[unit] += row.mark != compare.NO_CHANGE
    assert alarms[compare.UNIT_REPEAT] >= 5, alarms
    assert alarms[compare.UNIT_PROCESS] <= 2, alarms


def test_process_units_still_catch_a_large_slowdown(tmp_path):
    rng = np.random.default_rng(5)
    old = _write(tmp_path / "old.csv", _processes(rng, 12, 8, 1.0, between=0.01))
    new = _write(tmp_path / "new.csv", _processes(rng, 4, 8, 1.2, between=0.01))
    (row,) = compare.compare(old, new).rows
    assert row.mark == compare.SLOWER and row.unit == compare.UNIT_PROCESS


def test_too_few_processes_to_reach_alpha_fall_back_to_repeats(tmp_path):
    rng = np.random.default_rng(7)
    old = _write(tmp_path / "old.csv", _processes(rng, 2, 8, 1.0))
    new = _write(tmp_path / "new.csv", _processes(rng, 2, 8, 1.0))
    (row,) = compare.compare(old, new).rows  # 2 vs 2 processes: p >= 1/3 whatever the data
    assert row.unit == compare.UNIT_REPEAT


def test_each_tested_row_says_the_smallest_slowdown_it_could_catch(tmp_path):
    rng = np.random.default_rng(11)
    quiet_old = _write(tmp_path / "qo.csv", _processes(rng, 12, 8, 1.0, between=0.002))
    quiet_new = _write(tmp_path / "qn.csv", _processes(rng, 4, 8, 1.0, between=0.002))
    noisy_old = _write(tmp_path / "no.csv", _processes(rng, 12, 8, 1.0, between=0.15))
    noisy_new = _write(tmp_path / "nn.csv", _processes(rng, 4, 8, 1.0, between=0.15))
    (quiet,) = compare.compare(quiet_old, quiet_new).rows
    (noisy,) = compare.compare(noisy_old, noisy_new).rows
    assert quiet.mark == noisy.mark == compare.NO_CHANGE
    assert quiet.detectable == pytest.approx(0.025)  # the change its process units flag is the floor
    assert noisy.detectable > 0.08 and noisy.detectable == pytest.approx(noisy.change - noisy.change_low)
    comparison = compare.compare(noisy_old, noisy_new)
    cell = f"{noisy.detectable:.1%}"
    assert cell in compare.render_markdown(comparison) and cell in compare.render_console(comparison)
    assert f"no better than: m/b {cell}" in compare.sensitivity(comparison)
    assert '"detectable"' in compare.render_json(comparison)


def test_the_summary_line_names_the_floor_the_rows_were_judged_at(tmp_path):
    """Per-process rows flag from half the threshold: the summary line says
    2.5%, as their cells do, not the 5% per-repeat rows keep."""
    rng = np.random.default_rng(11)
    old = _write(tmp_path / "old.csv", _processes(rng, 12, 8, 1.0, between=0.002))
    new = _write(tmp_path / "new.csv", _processes(rng, 4, 8, 1.0, between=0.002))
    comparison = compare.compare(old, new)
    (row,) = comparison.rows
    assert row.unit == compare.UNIT_PROCESS and row.detectable == pytest.approx(0.025)
    line = compare.sensitivity(comparison)
    assert line.startswith("smallest slowdown detectable: 2.5% (") and "on 1 of 1 tested rows" in line
    assert "5.0%" not in line and "no better than" not in line
    old = _write(tmp_path / "old1.csv", _processes(rng, 1, 16, 1.0, between=0.002))
    new = _write(tmp_path / "new1.csv", _processes(rng, 1, 16, 1.0, between=0.002))
    per_repeat = compare.compare(old, new)
    assert per_repeat.rows[0].unit == compare.UNIT_REPEAT
    assert compare.sensitivity(per_repeat).startswith("smallest slowdown detectable: 5.0% (the threshold)")


def test_detectable_is_the_interval_below_the_estimate_and_at_least_the_threshold():
    assert compare.detectable(0.01, -0.11, 0.05) == pytest.approx(0.12)
    assert compare.detectable(0.0, -0.01, 0.05) == 0.05
    assert np.isnan(compare.detectable(float("nan"), -0.1, 0.05))


def test_a_slowdown_as_large_as_the_threshold_is_caught_per_process_nine_nights_in_ten(tmp_path):
    """A true +5% on a model whose processes spread by 1%: its estimate lands
    below 5% about half the nights, so the whole threshold catches it about
    half the time; per-process units flag from half the threshold and catch
    it nearly always, while identical nights stay unflagged."""
    rng = np.random.default_rng(13)
    caught = {"threshold": 0, "half": 0}
    alarms = 0
    for trial in range(20):
        old = _write(tmp_path / f"old{trial}.csv", _processes(rng, 28, 8, 1.0, between=0.01))
        slow = _write(tmp_path / f"slow{trial}.csv", _processes(rng, 4, 8, 1.05, between=0.01))
        same = _write(tmp_path / f"same{trial}.csv", _processes(rng, 4, 8, 1.0, between=0.01))
        (row,) = compare.compare(old, slow).rows
        assert row.unit == compare.UNIT_PROCESS
        caught["half"] += row.mark == compare.SLOWER
        caught["threshold"] += row.p_value < 0.05 and row.change >= 0.05
        alarms += compare.compare(old, same).rows[0].mark != compare.NO_CHANGE
    assert caught["half"] >= 18 and 4 <= caught["threshold"] <= 16, caught
    assert alarms <= 1


def test_per_repeat_units_keep_the_whole_threshold(tmp_path):
    ratios = list(np.linspace(0.99, 1.01, 20))
    old = _write(tmp_path / "old.csv", [ratios])
    new = _write(tmp_path / "new.csv", [[r * 1.04 for r in ratios]])
    (row,) = compare.compare(old, new).rows  # one process a side: tested per repeat
    assert row.unit == compare.UNIT_REPEAT and row.p_value < 0.05 and row.change == pytest.approx(0.04)
    assert row.mark == compare.NO_CHANGE and row.detectable >= 0.05
    assert compare.flag_at(0.05, compare.UNIT_REPEAT) == 0.05
    assert compare.flag_at(0.05, compare.UNIT_PROCESS) == 0.025


# --------------------------------------------------------------------------
# A pooled baseline leaves out a night far from the others


def _nights(tmp_path, levels, rng, processes=7, loads=None):
    """One run per night (folder ``2000-01-0N``), each night's processes
    around its own ``level``; ``loads``: each night's ``other_cores``."""
    paths = []
    for number, level in enumerate(levels, start=1):
        folder = tmp_path / f"2000-01-0{number}"
        folder.mkdir()
        paths.append(_write(folder / "performance.csv", _processes(rng, processes, 4, level, between=0.01),
                            other_cores=loads[number - 1] if loads else None))
    return paths


def test_a_baseline_night_far_from_the_others_leaves_the_row_pool(tmp_path):
    """A night measured on a loaded machine (its ratio 18% up) among six
    quiet ones: the row's pool is the quiet nights' processes, the note names
    the night left out, and a 5% slowdown is judged against the quiet nights
    alone (a smaller p-value than with that night's processes above it)."""
    rng = np.random.default_rng(11)
    olds = _nights(tmp_path, [1.0, 0.99, 1.18, 1.01, 1.0, 0.98, 1.0], rng)
    new = _write(tmp_path / "new.csv", _processes(rng, 7, 4, 1.05, between=0.01))
    (side,) = pairing.load_baseline(olds, leave_out=0.10)[0].values()
    assert side.left_out == ("2000-01-03 (+18%)",)
    assert len(side.process_ratios) == 6 * 7 and max(side.process_ratios) < 1.1
    (left,) = compare.compare(olds, new).rows
    (kept,) = compare.compare(olds, new, leave_out=False).rows
    assert "left out of the pool: 2000-01-03 (+18%)" in left.note
    assert "left out" not in kept.note
    assert left.mark == compare.SLOWER and left.p_value < kept.p_value


@pytest.mark.parametrize("levels, left_out", [
    ([1.0, 1.3], ()),  # two nights: which one is far cannot be told
    ([1.0, 1.0, 1.2, 1.2], ()),  # half of them: no majority to judge by
    ([1.0, 1.0, 1.09, 1.0], ()),  # within twice the threshold: kept
    ([1.0, 1.0, 1.0, 1.15, 1.15, 1.15, 1.15], ("2000-01-01", "2000-01-02", "2000-01-03")),
])
def test_only_a_minority_beyond_twice_the_threshold_leaves_the_pool(tmp_path, levels, left_out):
    rng = np.random.default_rng(13)
    olds = _nights(tmp_path, levels, rng)
    (side,) = pairing.load_baseline(olds, leave_out=2 * 0.05)[0].values()
    assert tuple(found.split()[0] for found in side.left_out) == left_out  # "DATE (-13%)"
    assert len(side.process_ratios) == 7 * (len(levels) - len(left_out))


def test_other_metrics_keep_every_night(tmp_path):
    """Leaving a night out is the steady ratio's rule: a metric judged by
    the baseline nights' range (the cold first call) keeps them all."""
    from benchmarks.results import policies

    rng = np.random.default_rng(17)
    olds = _nights(tmp_path, [1.0, 1.0, 1.3, 1.0], rng)
    new = _write(tmp_path / "new.csv", _processes(rng, 7, 4, 1.0, between=0.01))
    speedup = policies.judge_metric(policies.Policy("speedup", 0.05), olds, [new])
    assert "left out of the pool: 2000-01-03" in speedup.rows[0].note
    for name in sorted(set(policies.METRICS) - {"speedup"}):
        comparison = policies.judge_metric(policies.Policy(name, 0.05), olds, [new])
        assert all("left out" not in row.note for row in comparison.rows), name


# --------------------------------------------------------------------------
# Rows and processes timed on a loaded machine


def _loaded_run(path, chunks, loads):
    """``_write`` with each process's load on its samples records (schema version 11)."""
    _write(path, chunks, other_cores=float(np.mean([x for x in loads if x is not None])))
    records = store.read_samples(store.samples_path(path))
    store.samples_path(path).unlink()
    store.append_samples(store.samples_path(path), [{**r, "process_other_cores": list(loads)} for r in records])
    return path


def _one_process(path, ratios, other_cores=None):
    """A run of one process (no ``process_repeats``), as ``--processes 1`` writes it."""
    _write(path, [ratios], other_cores=other_cores)
    records = store.read_samples(store.samples_path(path))
    store.samples_path(path).unlink()
    store.append_samples(store.samples_path(path), [{k: v for k, v in r.items() if k != "process_repeats"}
                                                    for r in records])
    return path


@pytest.mark.parametrize("level", [1.10, 1.0])
def test_a_row_of_one_process_timed_on_a_loaded_machine_is_inconclusive(tmp_path, level):
    """Other processes busy beside a run (a test suite: 0.68 cores) move its
    ratio by a few percent: neither a 10% slowdown nor no change can be told
    from it.  The same run quiet (0.02), or read with the load not judged,
    is tested as before; a run that recorded no load is judged."""
    rng = np.random.default_rng(19)
    olds = [_one_process(tmp_path / f"old{i}.csv", list(1 + rng.normal(0, 0.005, 12)), 0.01) for i in range(3)]
    ratios = list(level * (1 + rng.normal(0, 0.005, 12)))
    expected = compare.SLOWER if level > 1 else compare.NO_CHANGE
    for name, cores, mark in (("loaded", 0.68, compare.INCONCLUSIVE), ("quiet", 0.02, expected),
                              ("unknown", None, expected)):
        new = _one_process(tmp_path / f"{name}.csv", ratios, cores)
        (row,) = compare.compare(olds, new).rows
        assert row.mark == mark and row.unit == compare.UNIT_REPEAT, name
        assert ("timed on a loaded machine: other processes kept NEW 0.68 cores busy" in row.note) == (name == "loaded")
        assert np.isfinite(row.detectable) == (name != "loaded") and row.loaded == (name == "loaded")
        assert np.isfinite(row.change)  # the change stays as information
    loaded = compare.compare(olds, tmp_path / "loaded.csv")
    assert compare.verdict(loaded) == "INCONCLUSIVE (1 inconclusive, 1 timed on a loaded machine)"
    assert compare.exit_code(loaded) == 0
    assert any(line.startswith("LOADED: 1 row(s)") and "m/b" in line for line in compare.context(loaded))
    (unjudged,) = compare.compare(olds, tmp_path / "loaded.csv", loaded=None).rows
    assert unjudged.mark == expected and not unjudged.loaded


def test_processes_timed_on_a_loaded_machine_leave_the_units(tmp_path):
    """Three of tonight's six processes ran beside other work (0.45-0.61
    cores) and read 20% slower: the row is judged on its three quiet
    processes (no change), the note says how many were left out; with them
    the change is past the floor.  Every process loaded: inconclusive."""
    rng = np.random.default_rng(31)
    olds = [_loaded_run(tmp_path / f"old{i}.csv", _processes(rng, 6, 4, 1.0, between=0.01), [0.01] * 6)
            for i in range(4)]
    chunks = _processes(rng, 3, 4, 1.0, between=0.01) + _processes(rng, 3, 4, 1.2, between=0.01)
    new = _loaded_run(tmp_path / "new.csv", chunks, [0.02, None, 0.0, 0.45, 0.61, 0.5])
    (side,) = pairing.load_run(new)[0].values()
    assert side.process_loads[3:] == (0.45, 0.61, 0.5) and np.isnan(side.process_loads[1])
    (row,) = compare.compare(olds, new).rows
    assert row.mark == compare.NO_CHANGE and row.unit == compare.UNIT_PROCESS and not row.loaded
    assert "processes timed on a loaded machine left out (above 0.1 cores): NEW 3 (up to 0.61 cores)" in row.note
    (every,) = compare.compare(olds, new, loaded=None).rows
    assert every.change > 0.05 and abs(row.change) < 0.02  # the loaded processes moved the estimate
    busy = _loaded_run(tmp_path / "busy.csv", chunks, [0.3] * 6)
    judged = compare.compare(olds, busy)
    assert judged.rows[0].mark == compare.INCONCLUSIVE and judged.rows[0].loaded
    assert judged.rows[0].note.startswith("every process of NEW was timed on a loaded machine: nothing quiet")
    assert "no raw samples" not in judged.rows[0].note
    assert compare.verdict(judged).startswith("INCONCLUSIVE") and "1 timed on a loaded machine" in compare.verdict(judged)


def test_a_version_10_night_reads_each_process_at_the_rows_load(tmp_path):
    """Nights that kept only the row's mean: a loaded baseline night's
    processes leave the pool's units (each read at its mean) while the
    quiet nights' stay; a one-process run that is loaded leaves the pool
    as a whole, as long as a quiet run stays."""
    rng = np.random.default_rng(23)
    olds = _nights(tmp_path, [1.0, 1.03, 1.0, 1.03, 1.0], rng, loads=[0.01, 0.5, 0.02, 0.3, None])
    (side,) = pairing.load_baseline(olds, loaded_cores=0.1)[0].values()
    assert side.left_out == () and side.process_loads[7:14] == (0.5,) * 7
    new = _write(tmp_path / "new.csv", _processes(rng, 6, 4, 1.0, between=0.01), other_cores=0.0)
    (row,) = compare.compare(olds, new).rows
    assert row.mark == compare.NO_CHANGE and row.n_old == 3 * 7 * 4
    assert "left out (above 0.1 cores): OLD 14 (up to 0.50 cores)" in row.note
    singles = [_one_process(tmp_path / f"one{i}.csv", [1.0] * 8, cores) for i, cores in enumerate((0.01, 0.7, 0.02))]
    (pooled,) = pairing.load_baseline(singles, loaded_cores=0.1)[0].values()
    assert pooled.left_out == ("one1.csv (loaded: 0.70 cores)",) and len(pooled.ratios) == 16
    (tmp_path / "busy").mkdir()
    busy = _nights(tmp_path / "busy", [1.0, 1.0, 1.0], rng, loads=[0.4, 0.5, 0.6])
    (row,) = compare.compare(busy, new).rows
    assert row.mark == compare.INCONCLUSIVE and row.loaded


def test_a_re_run_timed_on_a_loaded_machine_does_not_settle_a_slower_row(tmp_path):
    """A quiet night 8% slower, its re-run beside other work: the re-run can
    neither confirm nor clear it (never waved through unmeasured)."""
    rng = np.random.default_rng(29)
    olds = _nights(tmp_path, [1.0] * 4, rng, loads=[0.01] * 4)
    night = _write(tmp_path / "night.csv", _processes(rng, 6, 4, 1.08, between=0.01), other_cores=0.01)
    rerun = _write(tmp_path / "rerun.csv", _processes(rng, 6, 4, 1.0, between=0.01), other_cores=0.9)
    comparison = compare.compare(olds, night)
    assert comparison.rows[0].mark == compare.SLOWER
    settled = compare.confirm(comparison, compare.compare(olds, rerun), pooled=compare.compare(olds, [night, rerun]))
    (row,) = settled.rows
    assert row.mark == compare.SLOWER and "not settled (the re-run: inconclusive)" in row.note
    assert compare.exit_code(settled) == 1


def test_one_quiet_process_left_is_too_few_to_test(tmp_path):
    """Five of six processes loaded: the one left would be judged per
    repeat, its repeats sharing its own offset (a process 6% high would be
    "slower", p < 1e-10); the row is inconclusive for the load instead."""
    rng = np.random.default_rng(37)
    olds = [_loaded_run(tmp_path / f"old{i}.csv", _processes(rng, 6, 4, 1.0, between=0.01), [0.01] * 6)
            for i in range(3)]
    chunks = [list(1.06 * (1 + rng.normal(0, 0.002, 4)))] + _processes(rng, 5, 4, 1.0, between=0.01)
    new = _loaded_run(tmp_path / "new.csv", chunks, [0.0, 0.5, 0.6, 0.7, 0.8, 0.9])
    (row,) = compare.compare(olds, new).rows
    assert row.mark == compare.INCONCLUSIVE and row.loaded
    assert row.note.startswith("too few processes timed quiet to test (NEW 1 left")
    assert compare.verdict(compare.compare(olds, new)).startswith("INCONCLUSIVE")


def test_a_pool_that_cannot_keep_processes_leaves_out_a_run_with_a_loaded_one(tmp_path):
    """A one-process run in the pool: the pooled side no longer says which
    process each sample came from, so a run with one loaded process (its
    mean under the bound) leaves the pool whole, named."""
    rng = np.random.default_rng(41)
    single = _one_process(tmp_path / "2000-01-01.csv", list(1 + rng.normal(0, 0.002, 8)), 0.01)
    mixed = _loaded_run(tmp_path / "2000-01-02.csv", _processes(rng, 6, 4, 1.0, between=0.01),
                        [0.48, 0.0, 0.0, 0.0, 0.0, 0.0])
    quiet = _loaded_run(tmp_path / "2000-01-03.csv", _processes(rng, 6, 4, 1.0, between=0.01), [0.01] * 6)
    (side,) = pairing.load_baseline([single, mixed, quiet], loaded_cores=0.1)[0].values()
    assert side.left_out == ("2000-01-02.csv (loaded: 0.48 cores)",)
    assert len(side.ratios) == 8 + 24 and not side.by_process


def test_a_night_is_near_or_far_by_the_processes_the_comparison_keeps(tmp_path):
    """A baseline night whose three loaded processes read 25% high: its
    median over all six (+12%) would put it far and take its quiet
    processes out with it; by its quiet ones it sits with the others and
    stays (the loaded ones leave the units where it is judged).  A night
    whose every process was loaded is not weighed, and does not stop the
    rule for the others: a quiet night 20% off still leaves."""
    rng = np.random.default_rng(43)
    quiet = [_loaded_run(tmp_path / f"2000-01-0{i}.csv", _processes(rng, 6, 4, 1.0, between=0.01), [0.01] * 6)
             for i in (1, 2, 3)]
    chunks = _processes(rng, 3, 4, 1.0, between=0.01) + _processes(rng, 3, 4, 1.25, between=0.01)
    mixed = _loaded_run(tmp_path / "2000-01-04.csv", chunks, [0.0] * 3 + [0.5] * 3)
    (every,) = pairing.load_baseline([*quiet, mixed], leave_out=0.10)[0].values()
    assert len(every.left_out) == 1 and every.left_out[0].startswith("2000-01-04.csv (+1")
    (side,) = pairing.load_baseline([*quiet, mixed], leave_out=0.10, loaded_cores=0.1)[0].values()
    assert side.left_out == () and len(side.process_ratios) == 4 * 6
    assert len(side.quiet(0.1)[0].process_ratios) == 3 * 6 + 3
    busy = _loaded_run(tmp_path / "2000-01-05.csv", _processes(rng, 6, 4, 1.0, between=0.01), [0.5] * 6)
    far = _loaded_run(tmp_path / "2000-01-06.csv", _processes(rng, 6, 4, 1.2, between=0.01), [0.01] * 6)
    (side,) = pairing.load_baseline([*quiet, busy, far], leave_out=0.10, loaded_cores=0.1)[0].values()
    assert len(side.left_out) == 1 and side.left_out[0].startswith("2000-01-06.csv (+")


# --------------------------------------------------------------------------
# A night's own state: the nights' spread beyond their processes


def _shifted_nights(tmp_path, shifts, rng, processes=6, between=0.005):
    """One run per night, each night's processes around 1 + its shift."""
    return [_write(_night_folder(tmp_path, number) / "performance.csv",
                   _processes(rng, processes, 4, 1 + shift, between=between))
            for number, shift in enumerate(shifts, start=1)]


def _night_folder(tmp_path, number):
    folder = tmp_path / f"2000-01-{number:02d}"
    folder.mkdir()
    return folder


def test_a_pooled_side_knows_which_night_each_process_came_from(tmp_path):
    """Per run, its processes' ratios, also once the loaded ones left."""
    rng = np.random.default_rng(47)
    olds = [_loaded_run(tmp_path / f"old{i}.csv", _processes(rng, count, 4, 1.0 + i, between=0.001), loads)
            for i, (count, loads) in enumerate([(3, [0.0] * 3), (4, [0.0, 0.5, 0.0, 0.5])])]
    (side,) = pairing.load_baseline(olds)[0].values()
    assert side.run_processes == (3, 4)
    assert [len(g) for g in side.process_ratios_by_run] == [3, 4]
    assert all(abs(r - 1.0) < 0.01 for r in side.process_ratios_by_run[0])
    assert all(abs(r - 2.0) < 0.02 for r in side.process_ratios_by_run[1])
    quiet, _ = side.quiet(0.1)
    assert quiet.run_processes == (3, 2) and [len(g) for g in quiet.process_ratios_by_run] == [3, 2]
    (one,) = pairing.load_run(olds[0])[0].values()
    assert one.run_processes == () and [len(g) for g in one.process_ratios_by_run] == [3]


def test_the_nights_spread_is_added_only_when_there_is_one():
    """Nights whose means sit as their processes predict add nothing (the
    Mann-Whitney test stands); nights that move together by 2% widen the
    change's error, so a +3% night is within it."""
    rng = np.random.default_rng(53)
    alike = [list(1 + rng.normal(0, 0.01, 6)) for _ in range(7)]
    assert compare.night_spread([[1.0, 1.01, 0.99]] * 7, [[1.03] * 6]) is None  # identical nights
    apart = [list((1 + shift) * (1 + rng.normal(0, 0.01, 6))) for shift in (-0.03, 0.0, 0.02, -0.02, 0.03, 0.0, -0.01)]
    spread = compare.night_spread(apart, [list(1.03 * (1 + rng.normal(0, 0.01, 6)))])
    assert spread is not None and 0.01 < spread.between < 0.04 and spread.p_value > 0.05
    far = compare.night_spread(apart, [list(1.12 * (1 + rng.normal(0, 0.01, 6)))])
    assert far.p_value < 0.01
    assert compare.night_spread(apart[:2], [[1.1] * 6]) is None  # two nights cannot say
    found = compare.night_spread(alike, [list(1.03 * (1 + rng.normal(0, 0.01, 6)))])
    assert found is None or found.between < 0.005


def test_a_night_that_moved_as_a_whole_is_no_change_beyond_the_nights_spread(tmp_path):
    """Seven baseline nights that each moved as a whole (-3% .. +3%, their
    processes within 0.5%): tonight's processes all +3.5% are significant
    by themselves, but a night moves that much: no change, the note says
    why, and its detectable slowdown says how large a change would have
    been seen.  +15% is slower all the same."""
    rng = np.random.default_rng(59)
    olds = _shifted_nights(tmp_path, [-0.03, 0.0, 0.02, -0.02, 0.03, 0.0, -0.01], rng)
    new = _write(tmp_path / "new.csv", _processes(rng, 6, 4, 1.035, between=0.005))
    (row,) = compare.compare(olds, new, leave_out=False).rows
    assert row.mark == compare.NO_CHANGE and row.p_value < 0.05 and row.change > 0.025
    assert "not beyond the baseline nights' own spread" in row.note
    assert row.detectable > 0.035
    far = _write(tmp_path / "far.csv", _processes(rng, 6, 4, 1.15, between=0.005))
    (row,) = compare.compare(olds, far, leave_out=False).rows
    assert row.mark == compare.SLOWER and "spread" not in row.note


def test_a_one_sided_test_asks_only_whether_the_new_side_is_slower():
    """``alternative="slower"`` (what a re-run asks): a slower change's
    p-value is half the two-sided one, so it finds a +3.5% (p 0.046) the
    two-sided test does not (p 0.091); a faster change, however clear, is no change;
    and one unit fewer can reach the level (4 against 3: 1/35, where
    two-sided 2/35 cannot reach 0.05)."""
    old = [0.99, 1.0, 1.01, 1.0, 0.995, 1.005, 0.98, 1.02]
    new = [0.99, 1.0, 1.03, 1.04, 1.05, 1.06]
    two = compare.judge_units(old, new)
    one = compare.judge_units(old, new, alternative=compare.SLOWER_ONLY)
    assert (two[0], one[0]) == (compare.NO_CHANGE, compare.SLOWER)
    assert one[1] == two[1] and one[2] == pytest.approx(two[2] / 2) and 0.05 < two[2] < 0.1
    faster = [r * 0.8 for r in old[:6]]
    assert compare.judge_units(old, faster)[0] == compare.FASTER
    mark, _, p_value = compare.judge_units(old, faster, alternative=compare.SLOWER_ONLY)
    assert mark == compare.NO_CHANGE and p_value > 0.99
    assert compare._attainable_p(3, 4) >= 0.05 > compare._attainable_p(3, 4, compare.SLOWER_ONLY)
    rng = np.random.default_rng(61)
    apart = [list((1 + shift) * (1 + rng.normal(0, 0.01, 6))) for shift in (-0.03, 0.0, 0.02, -0.02, 0.03, 0.0, -0.01)]
    tonight = [list(1.05 * (1 + rng.normal(0, 0.01, 6)))]
    both = compare.night_spread(apart, tonight)
    slower = compare.night_spread(apart, tonight, compare.SLOWER_ONLY)
    assert slower.p_value == pytest.approx(both.p_value / 2) and slower.std_error == both.std_error
    assert compare.night_spread(apart, [[0.95] * 6], compare.SLOWER_ONLY).p_value > 0.9
