"""Expected results, checked in (``benchmarks.results.expected``,
``configs/expected/``): each night's statuses and graph breaks against them,
``runner.py update-expected`` accepting a run, and the gate, the summary and
the issue telling known failures from new ones."""
import json

import pytest

from benchmarks.cli import main
from benchmarks.nightly import gate, notify
from benchmarks.nightly.night import Night
from benchmarks.results import expected, store
from test_policies import BACKEND, _row_and_records, gate_policy

TONIGHT = "2026-01-04"
GROUP = ("builtin", "inference", "fp32")


def _entry(status, breaks=None):
    return expected.Entry(status, breaks)


def _judge(now, was, flaky=None):
    run = {GROUP: {(name, "ours"): e for name, e in now.items()}}
    wanted = expected.Expected(folder=None, rows={GROUP: {(name, "ours"): e for name, e in was.items()}},
                               flaky=flaky or {})
    return expected.judge(run, wanted)


def test_each_row_is_named_by_how_it_differs_from_its_expected_row():
    judgement = _judge(
        now={"broke": _entry("fail_to_run"), "healed": _entry("pass", 0), "still": _entry("timeout"),
             "other": _entry("crashed"), "split": _entry("pass", 3), "joined": _entry("pass", 0),
             "same": _entry("pass", 1), "new": _entry("pass", 0), "wobbly": _entry("timeout")},
        was={"broke": _entry("pass", 0), "healed": _entry("fail_to_run"), "still": _entry("timeout"),
             "other": _entry("fail_to_run"), "split": _entry("pass", 1), "joined": _entry("pass", 2),
             "same": _entry("pass", 1), "wobbly": _entry("pass", 0), "gone": _entry("pass", 0)},
        flaky={("wobbly", ""): "times out on a busy machine"})
    marks = {c.name: c.mark for c in judgement.checks}
    assert marks == {"broke": "new failure", "healed": "newly passes", "still": "known failure",
                     "other": "fails differently", "split": "more graph breaks", "joined": "fewer graph breaks",
                     "same": "as expected", "new": "not expected", "wobbly": "flaky"}
    assert judgement.not_run == 1 and judgement.failed
    assert [c.name for c in judgement.failing] == ["broke", "split"]
    notes = {c.name: c.note for c in judgement.checks}
    assert notes["broke"] == "expected pass, got fail_to_run"
    assert notes["healed"] == "expected fail_to_run, got pass: update the expected file"
    assert notes["split"] == "expected 1 graph breaks, got 3"
    assert notes["wobbly"] == "expected pass, got timeout (flaky: times out on a busy machine)"
    line = judgement.line()
    assert line.startswith("FAIL: 1 new failure (broke/ours: expected pass, got fail_to_run), 1 more graph breaks")
    assert "1 known failure," in line and "1 expected row(s) not in this run" in line
    assert line.endswith("accept with runner.py update-expected")


def test_a_flaky_model_that_behaves_is_as_expected_and_nothing_fails():
    judgement = _judge(now={"wobbly": _entry("pass", 0)}, was={"wobbly": _entry("pass", 0)},
                       flaky={("wobbly", "ours"): ""})
    assert [c.mark for c in judgement.checks] == ["as expected"] and not judgement.failed


def test_a_group_without_its_file_is_named_and_fails_nothing():
    judgement = expected.judge({GROUP: {("m", "ours"): _entry("fail_to_run")}}, expected.Expected(None, {}))
    assert judgement.no_file == (GROUP,) and not judgement.failed
    assert "no expected file builtin_inference_fp32.csv" in judgement.line()


def test_a_runs_rows_of_several_batch_sizes_are_one_row(tmp_path):
    csv = tmp_path / "run.csv"
    store.append_rows(csv, [dict(dev="cpu", name="m", batch_size=b, backend="ours", baseline="xla", status=s,
                                 graph_breaks=g, suite="builtin", mode="inference", dtype="fp32")
                            for b, s, g in ((1, "pass", 1), (2, "pass", 2), (4, "timeout", None))])
    assert expected.run_rows(csv) == {GROUP: {("m", "ours"): _entry("timeout")}}


def test_a_run_without_rows_expects_nothing_of_it(tmp_path):
    csv = tmp_path / "run.csv"
    csv.write_text("name,backend,status\n")  # a run killed before its first model: the gate says so
    judgement = expected.judge(expected.run_rows(csv), expected.load())
    assert judgement.checks == () and not judgement.failed


def test_the_checked_in_files_read_and_cover_the_seed_suite_on_the_nightlys_backends():
    from benchmarks.models import SEED_MODELS
    from benchmarks.nightly.shard import NIGHTLY_BACKENDS

    found = expected.load()
    for group, rows in found.rows.items():
        assert rows and all(e.status for e in rows.values()), group
    seed = found.rows[("seed", "inference", "fp32")]
    assert set(seed) == {(m, b) for m in SEED_MODELS for b in NIGHTLY_BACKENDS}
    assert all(e.graph_breaks is not None for e in seed.values() if e.status == "pass")


# --------------------------------------------------------------------------
# update-expected


def _night(folder, entries, file="performance.csv"):
    """A night of ``entries`` (name, kw): ``breaks`` its graph breaks when it passes."""
    csv = folder / file
    folder.mkdir(parents=True)
    rows = []
    for n, (name, kw) in enumerate(entries):
        kw = dict(kw)
        breaks = kw.pop("breaks", 0)
        row, records = _row_and_records(name, seed=n, **kw)
        if row["status"] == "pass":
            row["graph_breaks"] = breaks
        rows.append((row, records))
    store.append_rows(csv, [r for r, _ in rows])
    store.append_samples(store.samples_path(csv), [x for _, recs in rows for x in recs])
    return csv


def test_update_expected_writes_the_files_from_a_night_and_prints_its_diff(tmp_path, capsys):
    night = tmp_path / "2026-01-01"
    _night(night, [("a", {}), ("b", dict(status="timeout")), ("c", dict(breaks=2))])
    folder = tmp_path / "expected"
    assert main(["update-expected", str(night), "--expected", str(folder)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("--- a/builtin_inference_fp32.csv\n+++ b/builtin_inference_fp32.csv\n")
    assert f"+a,{BACKEND},pass,0\n+b,{BACKEND},timeout,\n+c,{BACKEND},pass,2\n" in out
    assert (folder / "builtin_inference_fp32.csv").read_text() == (
        f"name,backend,status,graph_breaks\na,{BACKEND},pass,0\nb,{BACKEND},timeout,\nc,{BACKEND},pass,2\n")

    # A later run of some of them: its rows replace theirs, the rest are kept.
    later = tmp_path / "later.csv"
    store.append_rows(later, [dict(dev="cpu", name="b", batch_size=2, backend=BACKEND, baseline="xla",
                                   status="pass", graph_breaks=1, suite="builtin", mode="inference", dtype="fp32")])
    assert main(["update-expected", str(later), "--expected", str(folder)]) == 0
    out = capsys.readouterr().out
    assert f"-b,{BACKEND},timeout,\n+b,{BACKEND},pass,1\n" in out and "+a," not in out
    assert main(["update-expected", str(later), "--expected", str(folder)]) == 0
    assert capsys.readouterr().out == "update-expected: 0 file(s) changed: already expected\n"


@pytest.mark.parametrize("make, message", [
    (lambda tmp: tmp / "nothing", "not found: give a night's folder or a run's CSV"),
    (lambda tmp: _write(tmp / "x.csv", "name,backend\na,b\n"), "no status column"),
    (lambda tmp: _write(tmp / "x.csv", "name,backend,status\n"), "no rows"),
    (lambda tmp: _write(tmp / "x.csv", "name,backend,status,graph_breaks\na,b,pass,two\n"),
     "graph_breaks must be a whole number"),
])
def test_update_expected_refuses_bad_input_in_one_line(tmp_path, capsys, make, message):
    assert main(["update-expected", str(make(tmp_path)), "--expected", str(tmp_path / "e")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("runner.py update-expected: error: ") and message in err, err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "e").exists()


def _write(path, text):
    path.write_text(text)
    return path


# --------------------------------------------------------------------------
# The gate, a fixture history


NIGHT = [("steady", dict(breaks=2)), ("compiles", dict(first_call=(3.0, 0.5))), ("grows", {}),
         ("breaks", dict(status="fail_to_run")), ("was_broken", {}), ("wobbly", dict(status="timeout"))]


def _history(root, tonight=NIGHT):
    """Three baseline nights (first calls 1.4-1.6 s against 0.5 s; ``wobbly``
    passes), accepted as expected, ``wobbly`` on the flaky list; then a night
    where ``compiles`` takes 3 s to its first call, ``breaks`` newly fails,
    ``was_broken`` newly passes, ``wobbly`` times out and ``steady`` breaks
    into two graphs more."""
    for day, jitter in enumerate((1.4, 1.5, 1.6)):
        _night(root / f"2026-01-0{day + 1}", [
            ("steady", dict(first_call=(jitter, 0.5))), ("compiles", dict(first_call=(jitter, 0.5))),
            ("grows", dict(host_mb=(900.0 + day, 800.0))), ("breaks", {}),
            ("was_broken", dict(status="fail_to_run")), ("wobbly", {})])
    folder = root / "expected"
    assert main(["update-expected", str(root / "2026-01-03"), "--expected", str(folder)]) == 0
    (folder / "flaky.csv").write_text("name,backend,why\nwobbly,,times out on a busy machine\n")
    _night(root / TONIGHT, tonight)
    return tonight, folder


def _rows(verdict):
    return {(r["metric"], r["key"]["name"]): (r["mark"], r["rule"]) for r in verdict["rows"]}


def test_a_fixture_history_gets_each_verdict_and_update_expected_accepts_it(tmp_path, capsys):
    entries, folder = _history(tmp_path)
    assert gate.run(tmp_path, TONIGHT, gate_policy(), str(folder)) == 1
    verdict = json.loads((tmp_path / TONIGHT / "compare.json").read_text())
    assert verdict["state"] == "fail" and "the expected files failed" in verdict["reasons"]
    rows = _rows(verdict)
    assert rows[("speedup", "breaks")] == ("fail", "new failure")
    assert rows[("speedup", "wobbly")] == ("flaky", "flaky")  # on the flaky list: reported, never failing
    assert rows[("speedup", "steady")][0] == "pass"  # more graph breaks are the expected files' to judge
    marks = {r["name"]: r["mark"] for r in verdict["expected"]["rows"]}
    assert marks == {"breaks": "new failure", "steady": "more graph breaks", "was_broken": "newly passes",
                     "wobbly": "flaky"}
    assert verdict["expected"]["verdict"] == "FAIL"
    markdown = (tmp_path / TONIGHT / "compare.md").read_text()
    assert "**New failures** (2)" in markdown and "- breaks / torchxla_trace_once: expected pass, got fail_to_run" \
        in markdown
    assert "**Flaky** (1)" in markdown and "- was_broken / torchxla_trace_once: expected fail_to_run, got pass: " \
        "update the expected file" in markdown
    out = capsys.readouterr().out
    assert f"\nnight {TONIGHT}: FAIL (" in out and "the expected files failed" in out

    # update-expected accepts the night: judged again, nothing differs from the expected files.
    assert main(["update-expected", str(tmp_path / TONIGHT), "--expected", str(folder)]) == 0
    diff = capsys.readouterr().out
    for line in (f"-breaks,{BACKEND},pass,0", f"+breaks,{BACKEND},fail_to_run,", f"-steady,{BACKEND},pass,0",
                 f"+steady,{BACKEND},pass,2", f"-was_broken,{BACKEND},fail_to_run,",
                 f"+was_broken,{BACKEND},pass,0", f"+wobbly,{BACKEND},timeout,"):
        assert f"\n{line}\n" in diff, diff
    again = expected.judge(expected.run_rows(tmp_path / TONIGHT / "performance.csv"), expected.load(folder))
    assert {c.mark for c in again.checks} == {"as expected", "known failure"} and not again.failed


def test_a_flaky_models_new_failure_alone_passes_the_night(tmp_path):
    calm = [(n, {}) for n, _ in NIGHT if n not in ("was_broken", "wobbly")]
    calm += [("was_broken", dict(status="fail_to_run")), ("wobbly", dict(status="timeout"))]
    _, folder = _history(tmp_path, calm)
    assert gate.run(tmp_path, TONIGHT, gate_policy(), str(folder)) == 0
    verdict = json.loads((tmp_path / TONIGHT / "compare.json").read_text())
    assert verdict["state"] == "pass"
    rows = _rows(verdict)
    assert rows[("speedup", "wobbly")] == ("flaky", "flaky")
    assert rows[("speedup", "was_broken")] == ("known failure", "known failure")
    assert [(r["name"], r["mark"]) for r in verdict["expected"]["rows"]] == [
        ("was_broken", "known failure"), ("wobbly", "flaky")]


def test_a_first_night_with_no_history_is_held_to_the_expected_files(tmp_path, capsys):
    folder = tmp_path / "expected"
    _night(tmp_path / "seen", [("a", {}), ("b", {})])
    assert main(["update-expected", str(tmp_path / "seen"), "--expected", str(folder)]) == 0
    _night(tmp_path / "nights" / TONIGHT, [("a", {}), ("b", dict(status="timeout"))])
    assert gate.run(tmp_path / "nights", TONIGHT, gate_policy(), str(folder)) == 1
    verdict = json.loads((tmp_path / "nights" / TONIGHT / "compare.json").read_text())
    assert verdict["state"] == "fail" and "the expected files failed" in verdict["reasons"]
    assert [(r["name"], r["mark"]) for r in verdict["expected"]["rows"]] == [("b", "new failure")]
    # No earlier night: the row's own failure is not called "as before".
    [b] = [r for r in verdict["rows"] if r["key"]["name"] == "b"]
    assert b["mark"] == "known failure" and "no earlier night" in b["note"]
    assert "**New failures** (1)" in (tmp_path / "nights" / TONIGHT / "compare.md").read_text()

    # As expected, a first night is still unjudged: nothing to time it against, never green.
    _night(tmp_path / "calm" / TONIGHT, [("a", {}), ("b", {})])
    assert gate.run(tmp_path / "calm", TONIGHT, gate_policy(), str(folder)) == 3


def test_the_gate_refuses_an_unreadable_expected_file_in_one_line(tmp_path, capsys):
    from benchmarks import nightly

    _history(tmp_path)
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "builtin_inference_fp32.csv").write_text("name,backend,status,graph_breaks\na,b,,\n")
    assert nightly.main(["gate", "--root", str(tmp_path), "--date", TONIGHT,
                         "--expected", str(tmp_path / "bad")]) == 2
    err = capsys.readouterr().err
    assert "builtin_inference_fp32.csv:2: name, backend and status are required" in err
    assert len(err.strip().splitlines()) == 1


# --------------------------------------------------------------------------
# The summary and the issue


def test_a_night_not_judged_still_separates_known_failures_from_new_ones(tmp_path, capsys, monkeypatch):
    from benchmarks import nightly

    _, folder = _history(tmp_path)
    capsys.readouterr()
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    assert nightly.main(["summary", "--root", str(tmp_path), "--date", TONIGHT, "--expected", str(folder)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"# Nightly {TONIGHT}: not judged")
    new, known = out.index("**New failures** (2)"), out.index("**Known failures** (0)")
    assert new < out.index("- breaks / torchxla_trace_once: expected pass, got fail_to_run") < known


def test_the_issue_separates_known_failures_from_new_ones(tmp_path):
    entries, folder = _history(tmp_path)
    assert gate.run(tmp_path, TONIGHT, gate_policy(), str(folder)) == 1
    text = notify.body(Night.read(tmp_path / TONIGHT), "https://team.github.io/bench/")
    assert "| breaks | torchxla_trace_once | fail | - | speedup | new failure: failed (fail_to_run); passed on the last " \
        "night |" in text
    section = text[text.index("## Expected results: FAIL"):]
    assert section.index("**New failures** (2)") < section.index("**Known failures** (0)") < section.index(
        "**Flaky** (1)")
    # One bisect command per row, though two policies name it.
    assert text.count("--only breaks ") == 1
