"""A policy per metric (``benchmarks.results.policies``, ``configs/gate.yaml``):
steady speedup, cold first call, peak memory and pass rate, each judged
against baseline nights and named in its verdict with its paired ratio and
interval."""
import re

import numpy as np
import pytest

from benchmarks.results import compare, policies, store

BACKEND = "torchxla_trace_once"


def _row_and_records(name, *, ratio=0.8, first_call=(1.5, 0.5), host_mb=(900.0, 800.0), status="pass",
                     seed=0, n=12, cold=None):
    """A row of ``name`` and its two samples records: steady ratio ``ratio``
    (1% noise), (backend, baseline) first call in s and peak host MB;
    ``cold``: (backend, baseline) seconds of each cold process, kept as the
    runner keeps them (the first call is then their medians)."""
    row = dict(dev="cpu", name=name, batch_size=2, backend=BACKEND, baseline="xla", status=status,
               suite="builtin", mode="inference", dtype="fp32", dynamic="static")
    if status != "pass":
        return row, []
    rng = np.random.default_rng(seed)
    base = list(0.010 * (1 + rng.uniform(-0.01, 0.01, n)))
    timed = [b * ratio * (1 + e) for b, e in zip(base, rng.uniform(-0.01, 0.01, n))]
    row.update(speedup=1 / ratio, abs_latency=1e3 * float(np.median(timed)), compilation_latency=first_call[0],
               peak_host_mb=host_mb[0], baseline_peak_host_mb=host_mb[1])
    keys = {k: row[k] for k in ("suite", "baseline", "dev", "batch_size", "mode", "dtype", "dynamic")}
    tries = [{}, {}]
    if cold is not None:
        first_call = tuple(float(np.median(c)) for c in cold)
        row["compilation_latency"] = first_call[0]
        tries = [{"cold_first_calls_s": list(c)} for c in cold]
    return row, [store.sample_record(name, BACKEND, "baseline", base, first_call_s=first_call[1], **keys,
                                     **tries[1]),
                 store.sample_record(name, BACKEND, "backend", timed, first_call_s=first_call[0], **keys,
                                     **tries[0])]


def _night(folder, entries, file="run.csv"):
    csv = folder / file
    folder.mkdir(parents=True)
    rows = [_row_and_records(name, seed=n, **kw) for n, (name, kw) in enumerate(entries)]
    store.append_rows(csv, [r for r, _ in rows])
    store.append_samples(store.samples_path(csv), [x for _, recs in rows for x in recs])
    return csv


def _baseline_nights(tmp_path, file="run.csv"):
    """Three steady nights: first calls 1.4-1.6 s against 0.5 s, 900 MB against 800."""
    nights = []
    for day, jitter in enumerate((1.4, 1.5, 1.6)):
        nights.append(_night(tmp_path / f"2026-01-0{day + 1}", [
            ("steady", dict(first_call=(jitter, 0.5))),
            ("compiles", dict(first_call=(jitter, 0.5))),
            ("grows", dict(host_mb=(900.0 + day, 800.0))),
            ("breaks", dict()),
            ("was_broken", dict(status="fail_to_run")),
        ], file))
    return nights


@pytest.fixture
def history(tmp_path):
    """Baseline nights, then a night where ``compiles`` takes 3 s to its first
    call, ``grows`` peaks at 1200 MB, ``breaks`` newly fails and
    ``was_broken`` newly passes."""
    olds = _baseline_nights(tmp_path)
    new = _night(tmp_path / "2026-01-04", [
        ("steady", dict(first_call=(1.55, 0.5))),
        ("compiles", dict(first_call=(3.0, 0.5))),
        ("grows", dict(host_mb=(1200.0, 800.0))),
        ("breaks", dict(status="fail_to_run")),
        ("was_broken", dict()),
    ])
    return olds, new


def _by_name(verdicts):
    return {v.policy.name: v for v in verdicts}


def test_each_policy_names_what_it_judged_with_its_ratio_and_interval(history):
    olds, new = history
    verdicts = _by_name(policies.judge(policies.load_policies(), olds, [new]))
    assert list(verdicts) == ["speedup", "first_call", "host_memory", "device_memory", "pass_rate"]

    first_call = verdicts["first_call"]
    assert not first_call.passed
    assert [(r.name, r.mark) for r in first_call.regressed] == [("compiles", compare.SLOWER)]
    row = first_call.regressed[0]
    # 3.0/0.5 against 1.4..1.6/0.5: the ratio of medians, and against the highest and lowest night.
    assert row.ratio == pytest.approx(3.0 / 1.5)
    assert (1 + row.change_low, 1 + row.change_high) == pytest.approx((3.0 / 1.6, 3.0 / 1.4))
    assert "first_call: FAIL: " in first_call.line() and "compiles/torchxla_trace_once 2.00x [1.88, 2.14]" \
        in first_call.line()
    steady = next(r for r in first_call.comparison.rows if r.name == "steady")
    assert steady.mark == compare.NO_CHANGE  # 1.55 s is inside the nights' range

    memory = verdicts["host_memory"]
    assert [(r.name, r.mark) for r in memory.regressed] == [("grows", compare.SLOWER)]
    assert "grows/torchxla_trace_once 1.33x" in memory.line()
    assert verdicts["device_memory"].passed  # nothing recorded on a device: nothing to fail

    speedup = verdicts["speedup"]
    assert [(r.name, r.mark) for r in speedup.regressed] == [("breaks", compare.NEW_FAILURE)]
    marks = {r.name: r.mark for r in speedup.comparison.rows}
    assert marks["was_broken"] == compare.FIXED and marks["steady"] == compare.NO_CHANGE

    pass_rate = verdicts["pass_rate"]
    assert pass_rate.passed  # 4 of 5 both nights: one broke, one was fixed
    assert "4/5 passed, was 4/5" in pass_rate.line() and "new failures: breaks/torchxla_trace_once" \
        in pass_rate.line()


def test_a_drop_of_the_pass_rate_fails_its_policy(tmp_path):
    olds = _baseline_nights(tmp_path)
    new = _night(tmp_path / "2026-01-04", [
        ("steady", {}), ("compiles", {}), ("grows", {}), ("breaks", dict(status="fail_to_run")),
        ("was_broken", dict(status="fail_to_run"))])
    verdict = _by_name(policies.judge(policies.load_policies(), olds, [new]))["pass_rate"]
    assert not verdict.passed
    assert verdict.ratio == pytest.approx(0.75)
    assert verdict.low < 0.75 < verdict.high
    assert "pass_rate: FAIL: 3/5 passed, was 4/5" in verdict.line()


def test_one_baseline_night_is_too_few_for_a_per_run_metric(history):
    olds, new = history
    verdict = _by_name(policies.judge(policies.load_policies(), olds[-1:], [new]))["first_call"]
    assert verdict.passed
    row = next(r for r in verdict.comparison.rows if r.name == "compiles")
    assert row.mark == compare.INCONCLUSIVE


def test_a_test_that_cannot_reach_alpha_leaves_a_per_run_metric_to_the_range(tmp_path):
    olds = _baseline_nights(tmp_path)
    news = [_night(tmp_path / f"new{n}", [("compiles", dict(first_call=(3.0 + n / 10, 0.5)))])
            for n in range(3)]
    policy = policies.Policy("first_call", threshold=0.25, min_samples=3)
    comparison = policies.judge_metric(policy, olds, news)
    row = next(r for r in comparison.rows if r.name == "compiles")
    # 3 vs 3 cannot give p < 0.05 (at best 0.1): not "no change", but every
    # new run above every old one by 2x, judged by the range.
    assert row.mark == compare.SLOWER and "range" in row.note


def _cold_nights(tmp_path, tonight_backend, tonight_baseline=(0.50, 0.52, 0.48)):
    """Three nights of three cold processes a side (1.4-1.6 s against about
    0.5 s), then tonight's."""
    olds = [_night(tmp_path / f"2026-01-0{day + 1}", [
        ("compiles", dict(cold=((1.4 + day / 20, 1.5, 1.6 - day / 20), (0.50, 0.49, 0.51))))])
        for day in range(3)]
    new = _night(tmp_path / "2026-01-04", [("compiles", dict(cold=(tonight_backend, tonight_baseline)))])
    return olds, new


def test_the_first_call_pairs_each_cold_process_with_the_baselines_of_its_round(tmp_path):
    olds, new = _cold_nights(tmp_path, (3.0, 1.5, 2.0), (1.0, 0.5, 0.8))
    side = next(iter(policies.load_first_calls(new)[0].values()))
    assert side.backend_s == (3.0, 1.5, 2.0) and side.baseline_s == (1.0, 0.5, 0.8)
    assert side.ratios == pytest.approx((3.0, 3.0, 2.5))
    # One pair a night, as judged before: the medians the row reports.
    one = next(iter(policies.load_first_calls(new, by_process=False)[0].values()))
    assert one.backend_s == (2.0,) and one.baseline_s == (0.8,)


def test_a_night_whose_cold_processes_are_all_slower_fails_the_first_call_by_the_u_test(tmp_path):
    olds, new = _cold_nights(tmp_path, (3.0, 3.1, 2.9))
    policy = next(p for p in policies.load_policies() if p.name == "first_call")
    row = policies.judge_metric(policy, olds, [new]).rows[0]
    assert row.mark == compare.SLOWER and "range" not in row.note
    # 3 processes against 9: the U test's p, and the change of the medians of the processes' ratios.
    assert row.p_value < policy.alpha
    assert row.ratio == pytest.approx(3.0 / 0.5 / (1.5 / 0.5), rel=0.05)


def test_one_slow_cold_process_is_no_first_call_regression(tmp_path):
    olds, new = _cold_nights(tmp_path, (1.5, 4.0, 1.45))
    policy = next(p for p in policies.load_policies() if p.name == "first_call")
    row = policies.judge_metric(policy, olds, [new]).rows[0]
    assert row.mark == compare.NO_CHANGE and row.change < 0.05


def test_the_checked_in_configuration_loads():
    names = [p.name for p in policies.load_policies()]
    assert names == ["speedup", "first_call", "host_memory", "device_memory", "pass_rate"]


@pytest.mark.parametrize("text, message", [
    ("policies: {speedup: {threshold: 0.05, colour: red}}", "policies.speedup.colour: unknown key"),
    ("policies: {latency: {threshold: 0.05}}", "'latency' is no metric"),
    ("policies: {first_call: {alpha: 0.05}}", "threshold is required"),
    ("policies: {first_call: {threshold: -1}}", "policies.first_call.threshold: bad value"),
    ("policies: {first_call: {threshold: 0.1, min_samples: 1}}", "min_samples: bad value"),
    ("speedup: {threshold: 0.05}", "one key, policies"),
    ("policies: [", "gate.yaml: "),
])
def test_a_bad_configuration_is_one_line_naming_the_key(tmp_path, text, message):
    path = tmp_path / "gate.yaml"
    path.write_text(text)
    with pytest.raises(policies.PolicyError) as err:
        policies.load_policies(path)
    assert message in str(err.value) and len(str(err.value).splitlines()) == 1


def test_compare_shows_every_policy_and_fails_on_any(history, tmp_path, capsys):
    from benchmarks.cli import main

    olds, new = history
    config = tmp_path / "gate.yaml"
    # One baseline run judged by its range: a configuration for two single runs.
    config.write_text("policies:\n  speedup: {threshold: 0.05}\n  first_call: {threshold: 0.25, min_baseline: 1}\n"
                      "  host_memory: {threshold: 0.1, min_baseline: 1}\n  pass_rate: {threshold: 0.5}\n")
    markdown = tmp_path / "out.md"
    code = main(["compare", str(olds[-1]), str(new), "--gate-config", str(config), "--allow-removed",
                 "--markdown", str(markdown)])
    out = capsys.readouterr().out
    lines = out[out.index("policies:"):].splitlines()[1:]
    assert [line.split(":")[0] for line in lines] == ["speedup", "first_call", "host_memory", "pass_rate"]
    assert lines[1].startswith("first_call: FAIL: ") and "compiles/torchxla_trace_once 1.88x" in lines[1]
    assert lines[2].startswith("host_memory: FAIL: ") and "grows/torchxla_trace_once 1.33x" in lines[2]
    assert lines[3].startswith("pass_rate: PASS: ")
    assert code == 1
    assert "## Policies\n\n- speedup: FAIL" in markdown.read_text()


def test_compare_passes_when_every_policy_does(tmp_path, capsys):
    from benchmarks.cli import main

    olds = _baseline_nights(tmp_path)
    assert main(["compare", str(olds[0]), str(olds[1])]) == 0
    out = capsys.readouterr().out
    # One baseline run is too few for a per-run metric here: inconclusive, which passes.
    assert "first_call: INCONCLUSIVE: 4 inconclusive" in out and "speedup: PASS: " in out
    assert "pass_rate: PASS: 4/5 passed, was 4/5" in out


def test_compare_refuses_a_bad_gate_configuration(history, tmp_path, capsys):
    from benchmarks.cli import main

    olds, new = history
    config = tmp_path / "gate.yaml"
    config.write_text("policies: {first_call: {threshold: 0.1, colour: red}}\n")
    assert main(["compare", str(olds[-1]), str(new), "--gate-config", str(config)]) == 2
    err = capsys.readouterr().err
    assert "policies.first_call.colour: unknown key" in err and len(err.strip().splitlines()) == 1


# --------------------------------------------------------------------------
# The nightly gate: the same metrics, judged by benchmarks.judge


TONIGHT = "2026-01-04"
# The gate's policy with three nights of history: every metric.
GATE = {"alpha": 0.05, "window": 4, "min_nights": 3, "max_age_days": 60, "loaded_cores": 0.1, "min_judged": 0.5,
        "metrics": {"speedup": {"threshold": 0.03, "fail_at_once": 0.2},
                    "first_call": {"threshold": 0.25, "fail_at_once": 0.5},
                    "host_memory": {"threshold": 0.10, "fail_at_once": 0.5},
                    "device_memory": {"threshold": 0.10, "fail_at_once": 0.5}}}


def gate_policy():
    from benchmarks.judge.verdict import Policy

    return Policy.from_mapping(GATE)


def _slow_first_call_night(root):
    """Baseline nights, then one where ``compiles`` takes 3 s to its first call
    and ``grows`` peaks at 1200 MB; every model passes."""
    _baseline_nights(root, "performance.csv")
    entries = [("steady", {}), ("compiles", dict(first_call=(3.0, 0.5))), ("grows", dict(host_mb=(1200.0, 800.0))),
               ("breaks", {}), ("was_broken", dict(status="fail_to_run"))]
    _night(root / TONIGHT, entries, "performance.csv")
    return entries


SIXTH = "2026-01-07"


def _six_nights_then_slow(root):
    """Six steady nights (first calls 1.4-1.6 s, 900-905 MB), then one where
    ``compiles`` takes 3 s to its first call and ``grows`` peaks at 1200 MB."""
    for day, jitter in enumerate((1.4, 1.5, 1.6, 1.45, 1.55, 1.5)):
        _night(root / f"2026-01-0{day + 1}", [("steady", dict(first_call=(jitter, 0.5))),
                                              ("compiles", dict(first_call=(jitter, 0.5))),
                                              ("grows", dict(host_mb=(900.0 + day, 800.0)))], "performance.csv")
    _night(root / SIXTH, [("steady", {}), ("compiles", dict(first_call=(3.0, 0.5))),
                          ("grows", dict(host_mb=(1200.0, 800.0)))], "performance.csv")


def test_the_gate_judges_first_calls_and_memory_as_it_judges_speed(tmp_path, capsys):
    import json

    from benchmarks.nightly import gate

    _six_nights_then_slow(tmp_path)
    assert gate.run(tmp_path, SIXTH, gate_policy()) == 1
    verdict = json.loads((tmp_path / SIXTH / "compare.json").read_text())
    assert verdict["state"] == "fail" and verdict["exit_code"] == 1
    flagged = {(r["metric"], r["key"]["name"]): (r["mark"], r["rule"]) for r in verdict["rows"]
               if r["mark"] in ("fail", "suspected")}
    # 2x the first call: past fail_at_once (50%); +33% peak memory: suspected until the next night.
    assert flagged == {("first_call", "compiles"): ("fail", "large"),
                       ("host_memory", "grows"): ("suspected", "suspected")}
    # Device memory is never measured on PJRT CPU: not shown at all.
    assert "device_memory" not in {r["metric"] for r in verdict["rows"]}
    out = capsys.readouterr().out
    assert out.startswith(f"night {SIXTH}: FAIL (1 row(s) failed; 1 row(s) suspected")


def test_the_dashboard_names_the_rows_that_flagged_a_night(tmp_path):
    from benchmarks.nightly import gate
    from benchmarks.nightly.night import Night
    from benchmarks.results.dashboard import pairs

    _six_nights_then_slow(tmp_path)
    assert gate.run(tmp_path, SIXTH, gate_policy()) == 1
    nights = [Night.read(tmp_path / f"2026-01-0{day}") for day in range(1, 8)]
    panel = pairs.gate_failures_html(nights, {})
    assert 'data-night="6"' in panel
    assert "compiles</a></td><td>torchxla_trace_once</td><td>first_call</td><td>fail</td><td>+96.9%</td><td>&lt;0.001</td>" in panel
    assert "grows</a></td><td>torchxla_trace_once</td><td>host_memory</td><td>suspected</td>" in panel
