"""Tests of benchmarks.results.compare: marks, the gate's rules, geomean, golden markdown, A/A, CLI.

The fixture runs under tests/fixtures/compare/ come from make_fixtures.py
there (its docstring tabulates every pair and the expected mark).  Regenerate
the golden markdown after an intended change with
``UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/test_compare.py`` and review
the diff; without it a mismatch fails.
"""
import csv
import io
import json
import os
import shutil
import warnings
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from benchmarks import cli
from benchmarks.cli import compare as compare_cli
from benchmarks.results import compare, policies, store

FIXTURES = Path(__file__).parent / "fixtures" / "compare"
OLD = FIXTURES / "old.csv"
NEW = FIXTURES / "new.csv"
GOLDEN = Path(__file__).parent / "golden"
TRACE = "torchxla_trace_once"

EXPECTED_MARKS = {
    ("alexnet", TRACE): compare.SLOWER,
    ("alexnet", "torchxla_trivial"): compare.NO_CHANGE,
    ("bert", TRACE): compare.INCONCLUSIVE,
    ("densenet121", TRACE): compare.FIXED,
    ("googlenet", TRACE): compare.REMOVED,
    ("mnasnet1_0", TRACE): compare.INCONCLUSIVE,
    ("mobilenet_v2", TRACE): compare.NEW_FAILURE,
    ("resnet18", TRACE): compare.FASTER,
    ("resnext50_32x4d", TRACE): compare.NO_CHANGE,
    ("squeezenet1_1", TRACE): compare.STILL_FAILING,
    ("vgg16", TRACE): compare.NOT_COMPARABLE,
    ("vit_b_16", TRACE): compare.ADDED,
}
REGRESSION, NEW_FAILURE, REMOVED = ("alexnet", TRACE), ("mobilenet_v2", TRACE), ("googlenet", TRACE)
INCONCLUSIVE = ("mnasnet1_0", TRACE)
DRIFT = ("resnext50_32x4d", TRACE)


@pytest.fixture(scope="module")
def fixture_comparison():
    return compare.compare(OLD, NEW)


def _by_key(comparison):
    return {(row.name, row.backend): row for row in comparison.rows}


# --------------------------------------------------------------------------
# Helpers that build runs in tmp_path


def _write_run(path, rows, records):
    store.append_rows(path, rows)
    if records:
        store.append_samples(store.samples_path(path), records)
    return path


def _passing_row(name, backend_s, baseline_s, backend="b", batch_size=8):
    ms, base_ms = float(np.median(backend_s)) * 1e3, float(np.median(baseline_s)) * 1e3
    return dict(dev="cpu", name=name, batch_size=batch_size, backend=backend, baseline="xla",
                speedup=base_ms / ms, abs_latency=ms, baseline_latency=base_ms, status="pass")


def _records(name, backend_s, baseline_s, backend="b"):
    return [store.sample_record(name, backend, "baseline", baseline_s),
            store.sample_record(name, backend, "backend", backend_s)]


def _run(path, pairs, backend="b"):
    """A run where every model passed: ``pairs`` maps a name to its
    (baseline samples, backend samples), paired by position."""
    rows = [_passing_row(name, bk, bl, backend) for name, (bl, bk) in pairs.items()]
    records = [r for name, (bl, bk) in pairs.items() for r in _records(name, bk, bl, backend)]
    return _write_run(path, rows, records)


def _ratio_run(path, ratios, baseline_s=0.01):
    """A run whose per-repeat ratios are ``ratios[name]`` over a steady baseline."""
    pairs = {}
    for name, r in ratios.items():
        base = np.full(len(r), baseline_s) * np.linspace(0.99, 1.01, len(r))
        pairs[name] = (base, base * np.asarray(r))
    return _run(path, pairs)


def _copy_without(src_csv, dst_csv, drop):
    """Copy a run (CSV + JSONL) leaving out the (name, backend) pairs in ``drop``."""
    reader = csv.DictReader(io.StringIO(src_csv.read_text()))
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=reader.fieldnames, lineterminator="\n")
    writer.writeheader()
    writer.writerows(r for r in reader if (r["name"], r["backend"]) not in drop)
    dst_csv.write_text(out.getvalue())
    lines = store.samples_path(src_csv).read_text().splitlines()
    kept = [line for line in lines if (json.loads(line)["name"], json.loads(line)["backend"]) not in drop]
    store.samples_path(dst_csv).write_text("".join(line + "\n" for line in kept))
    return dst_csv


def _gate_without(tmp_path, drop, stem, **policy):
    old = _copy_without(OLD, tmp_path / f"{stem}_old.csv", drop)
    new = _copy_without(NEW, tmp_path / f"{stem}_new.csv", drop)
    return compare.exit_code(compare.compare(old, new, **policy))


# --------------------------------------------------------------------------
# The fixture runs


def test_marks(fixture_comparison):
    assert {key: row.mark for key, row in _by_key(fixture_comparison).items()} == EXPECTED_MARKS


def test_rows_sorted_by_name_and_backend(fixture_comparison):
    keys = [(row.name, row.backend) for row in fixture_comparison.rows]
    assert keys == sorted(EXPECTED_MARKS)


def test_change_is_the_paired_ratio(fixture_comparison):
    rows = _by_key(fixture_comparison)
    regression, improvement, noise = rows[REGRESSION], rows[("resnet18", TRACE)], rows[("alexnet", "torchxla_trivial")]
    assert (regression.old_ratio, regression.new_ratio) == (pytest.approx(10 / 15), pytest.approx(12 / 15))
    assert regression.change == pytest.approx(0.20)
    assert improvement.change == pytest.approx(-0.25)
    assert noise.change == pytest.approx(0.01)
    assert regression.p_value < 0.001 and improvement.p_value < 0.001
    assert noise.p_value > 0.05
    assert (regression.n_old, regression.n_new) == (20, 20)


def test_drift_that_moves_baseline_and_backend_alike_is_no_change(fixture_comparison):
    """The machine got 10% slower between the runs: the backend's latency rose
    significantly, but so did the baseline measured beside it."""
    drift = _by_key(fixture_comparison)[DRIFT]
    assert drift.latency_change == pytest.approx(0.10, abs=0.01) and drift.latency_p < 0.001
    assert drift.change == pytest.approx(0.0)
    assert drift.mark == compare.NO_CHANGE


def test_latency_criterion_is_opt_in(tmp_path):
    drop = {REGRESSION, NEW_FAILURE, REMOVED}
    assert _gate_without(tmp_path, drop, "ratio_only") == 0
    assert _gate_without(tmp_path, drop, "with_latency", latency_criterion=True) == 1
    row = _by_key(compare.compare(OLD, NEW, latency_criterion=True))[DRIFT]
    assert row.mark == compare.SLOWER and "latency" in row.note


def test_too_few_samples_is_inconclusive_not_no_change(fixture_comparison):
    row = _by_key(fixture_comparison)[INCONCLUSIVE]
    assert row.change == pytest.approx(2.0)  # +200%, shown but untested
    assert np.isnan(row.p_value)
    assert row.note == "inconclusive: 3 vs 3 paired samples (< 5 per side)"
    assert "2 inconclusive" in compare.summary(fixture_comparison)


def test_no_samples_is_inconclusive_with_change_from_csv(fixture_comparison):
    bert = _by_key(fixture_comparison)[("bert", TRACE)]
    assert bert.change == pytest.approx(0.10)  # speedups 1.2 -> 6/5.5 in the CSV
    assert bert.mark == compare.INCONCLUSIVE and "no raw samples" in bert.note


def test_inconclusive_fails_only_when_asked(tmp_path):
    drop = {REGRESSION, NEW_FAILURE, REMOVED}
    assert _gate_without(tmp_path, drop, "lenient") == 0
    assert _gate_without(tmp_path, drop, "strict", fail_on_inconclusive=True) == 1
    assert _gate_without(tmp_path, drop | {INCONCLUSIVE, ("bert", TRACE)}, "none_left",
                         fail_on_inconclusive=True) == 0


def test_removed_fails_unless_allowed(tmp_path):
    drop = {REGRESSION, NEW_FAILURE}
    assert _gate_without(tmp_path, drop, "removed") == 1
    assert _gate_without(tmp_path, drop, "allowed", allow_removed=True) == 0


def test_exit_code_gates_on_slower_and_new_failure(fixture_comparison, tmp_path):
    assert compare.exit_code(fixture_comparison) == 1
    assert _gate_without(tmp_path, {REGRESSION, NEW_FAILURE, REMOVED}, "clean") == 0
    assert _gate_without(tmp_path, {REGRESSION, REMOVED}, "failure_only") == 1
    assert _gate_without(tmp_path, {NEW_FAILURE, REMOVED}, "slower_only") == 1


def test_geomean_over_tested_rows(fixture_comparison):
    # alexnet/trace_once 1.2, alexnet/trivial 1.01, resnet18 0.75, resnext50 1.0;
    # inconclusive rows and vgg16 (another batch size) are left out.
    assert fixture_comparison.geomean_n == 4
    assert fixture_comparison.geomean_ratio == pytest.approx((1.2 * 1.01 * 0.75 * 1.0) ** 0.25)


def test_speedups_are_informational(fixture_comparison):
    rows = _by_key(fixture_comparison)
    assert rows[REGRESSION].old_speedup == pytest.approx(1.5, rel=0.01)
    assert rows[REGRESSION].new_speedup == pytest.approx(1.25, rel=0.01)
    assert np.isnan(rows[("vit_b_16", TRACE)].old_speedup)


def test_not_comparable_says_which_setting(fixture_comparison):
    vgg = _by_key(fixture_comparison)[("vgg16", TRACE)]
    assert vgg.note == "batch_size 8 -> 16"
    assert np.isnan(vgg.change)


def test_counts_and_frame(fixture_comparison):
    counts = fixture_comparison.counts()
    assert counts[compare.NO_CHANGE] == 2 and counts[compare.INCONCLUSIVE] == 2
    assert sum(counts.values()) == len(EXPECTED_MARKS)
    assert list(counts) == [m for m in compare.MARKS if m in counts]
    frame = fixture_comparison.frame()
    assert len(frame) == len(EXPECTED_MARKS) and {"mark", "change", "p_value", "latency_change"} <= set(frame.columns)


def test_markdown_matches_golden(fixture_comparison):
    text = compare.render_markdown(fixture_comparison)
    path = GOLDEN / "compare.md"
    if os.environ.get("UPDATE_GOLDEN") == "1":
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8"), f"{path} differs; UPDATE_GOLDEN=1 regenerates it"


def test_markdown_states_rules_verdict_and_summary(fixture_comparison):
    text = compare.render_markdown(fixture_comparison)
    assert "**FAIL (1 slower, 1 new failure, 1 removed)**" in text
    assert "p<0.05" in text and "fewer than 5 paired samples on a side, or too few units to reach p<0.05: inconclusive" in text
    assert "|change| ≥ 5%" in text and "fails (exit status 1) on any slower, new failure, removed" in text
    assert "1 slower, 1 new failure, 1 removed, 2 inconclusive, 1 faster, 1 fixed, 2 no change" in text
    assert "**removed**" in text and "**inconclusive**" not in text


def test_console_render(fixture_comparison):
    text = compare.render_console(fixture_comparison)
    assert text.startswith("old.csv -> new.csv: FAIL (1 slower, 1 new failure, 1 removed)\n")
    assert "+20.0%" in text and "-25.0%" in text and "batch_size 8 -> 16" in text
    assert "**" not in text and "→" not in text  # plain ASCII markup for terminals


def test_verdict_names_inconclusive_rows_on_a_pass(tmp_path):
    old = _ratio_run(tmp_path / "a.csv", {"m": [1.0, 1.0, 1.0]})
    new = _ratio_run(tmp_path / "b.csv", {"m": [3.0, 3.0, 3.0]})
    comparison = compare.compare(old, new)
    assert compare.verdict(comparison) == "PASS (1 inconclusive)"
    strict = compare.compare(old, new, fail_on_inconclusive=True)
    assert compare.verdict(strict) == "FAIL (1 inconclusive)" and compare.exit_code(strict) == 1


def test_json_render(fixture_comparison):
    document = json.loads(compare.render_json(fixture_comparison))
    assert document["verdict"] == compare.verdict(fixture_comparison) and document["exit_code"] == 1
    assert document["counts"] == fixture_comparison.counts()
    assert len(document["rows"]) == len(EXPECTED_MARKS)
    bert = next(r for r in document["rows"] if r["name"] == "bert")
    assert bert["p_value"] is None and bert["mark"] == "inconclusive"


# --------------------------------------------------------------------------
# Naming the runs


def test_same_named_files_are_told_apart(tmp_path):
    for night in ("2026-01-01", "2026-01-02"):
        (tmp_path / night).mkdir()
        shutil.copy(OLD, tmp_path / night / "sq.csv")
        shutil.copy(store.samples_path(OLD), tmp_path / night / "sq.jsonl")
    comparison = compare.compare(tmp_path / "2026-01-01" / "sq.csv", tmp_path / "2026-01-02" / "sq.csv")
    assert (comparison.old_label, comparison.new_label) == ("2026-01-01/sq.csv", "2026-01-02/sq.csv")
    assert compare.render_console(comparison).startswith("2026-01-01/sq.csv -> 2026-01-02/sq.csv: PASS")
    assert "`2026-01-01/sq.csv`" in compare.render_markdown(comparison)


def test_labels_carry_date_and_commit_when_rows_do(tmp_path):
    def tagged(path, timestamps, commits):
        df = store.read_rows(OLD)
        df["timestamp"] = [timestamps[i % len(timestamps)] for i in range(len(df))]
        df["commit"] = [commits[i % len(commits)] for i in range(len(df))]
        df.to_csv(path, index=False)
        shutil.copy(store.samples_path(OLD), store.samples_path(path))
        return path

    night = ["2026-01-01T23:59:00+00:00", "2026-01-02T00:10:00+00:00"]  # a run across midnight
    comparison = compare.compare(tagged(tmp_path / "a.csv", night, ["abc1234ffff", "unknown"]),
                                 tagged(tmp_path / "b.csv", ["2026-01-02T01:00:00+00:00"], ["def5678", "0123456"]))
    assert comparison.old_label == "a.csv (2026-01-01, commit abc1234)"
    assert comparison.new_label == "b.csv (2026-01-02, commits 0123456, def5678)"


# --------------------------------------------------------------------------
# The statistics


def test_ratio_gate_ignores_drift_that_latency_gate_flags(tmp_path):
    """A/A with drift between the runs: the second machine is 10% slower for
    everything.  The latency test flags every model; the ratio test none."""
    rng = np.random.default_rng(7)
    true_ratio = {f"m{i}": r for i, r in enumerate([0.8, 0.9, 1.0, 1.1, 1.2, 0.7])}

    def night(path, machine):
        pairs = {}
        for name, r in true_ratio.items():
            base = 0.01 * machine * rng.lognormal(0, 0.03, 10)
            pairs[name] = (base, base * r * rng.lognormal(0, 0.01, 10))
        return _run(path, pairs)

    old, new = night(tmp_path / "a.csv", 1.0), night(tmp_path / "b.csv", 1.1)
    assert compare.exit_code(compare.compare(old, new)) == 0
    by_latency = compare.compare(old, new, latency_criterion=True)
    assert {row.mark for row in by_latency.rows} == {compare.SLOWER}


def test_aa_false_alarm_rate_below_alpha(tmp_path):
    """Many very noisy A/A pairs (15% spread, 10 repeats): at most alpha flagged.

    The test alone flags about alpha of A/A pairs; the threshold removes
    those whose change is small, so the rate cannot exceed alpha."""
    rng = np.random.default_rng(99)
    n = 200

    def run(path):
        return _ratio_run(path, {f"m{i:03d}": rng.lognormal(np.log(0.9), 0.15, 10) for i in range(n)})

    comparison = compare.compare(run(tmp_path / "a.csv"), run(tmp_path / "b.csv"))
    flagged = sum(row.mark in (compare.SLOWER, compare.FASTER) for row in comparison.rows)
    assert flagged <= 0.05 * n


def test_significant_but_below_threshold_is_no_change(tmp_path):
    ratios = np.linspace(0.99, 1.01, 20)
    a = _ratio_run(tmp_path / "a.csv", {"m": ratios})
    b = _ratio_run(tmp_path / "b.csv", {"m": ratios * 1.03})
    (row,) = compare.compare(a, b).rows
    assert row.p_value < 0.05 and row.change == pytest.approx(0.03)
    assert row.mark == compare.NO_CHANGE
    loose = compare.compare(a, b, threshold=0.02)
    assert loose.rows[0].mark == compare.SLOWER


def test_min_samples_decides_when_the_test_runs(tmp_path):
    ratios = np.array([1.00, 1.01, 1.02, 1.03])  # distinct: exact test, no ties
    old = _ratio_run(tmp_path / "a.csv", {"m": ratios})
    new = _ratio_run(tmp_path / "b.csv", {"m": 2 * ratios})  # 2x slower
    (row,) = compare.compare(old, new).rows
    assert row.mark == compare.INCONCLUSIVE and np.isnan(row.p_value)
    assert row.change == pytest.approx(1.0)
    # 4 vs 4 fully separated: exact two-sided p = 2/70 < 0.05.
    (tested,) = compare.compare(old, new, min_samples=4).rows
    assert tested.mark == compare.SLOWER and tested.p_value == pytest.approx(2 / 70)


def test_unpaired_samples_are_inconclusive(tmp_path):
    base = np.linspace(0.99, 1.01, 10) * 0.01
    old = _ratio_run(tmp_path / "a.csv", {"m": np.ones(10)})
    new = _write_run(tmp_path / "b.csv", [_passing_row("m", base[:8], base)],
                     _records("m", base[:8], base))
    (row,) = compare.compare(old, new).rows
    assert row.mark == compare.INCONCLUSIVE
    assert row.note == "inconclusive: not paired: new has 8 backend vs 10 baseline samples"


def test_missing_jsonl_is_inconclusive(tmp_path):
    base = [0.010]
    old = _write_run(tmp_path / "a.csv", [_passing_row("m", [0.010], base)], [])
    new = _write_run(tmp_path / "b.csv", [_passing_row("m", [0.020], base)], [])
    (row,) = compare.compare(old, new).rows
    assert row.change == pytest.approx(1.0) and row.mark == compare.INCONCLUSIVE
    assert row.latency_change == pytest.approx(1.0)


def test_last_row_and_last_samples_win(tmp_path):
    slow, fast = np.full(10, 2.0), np.full(10, 1.0)
    base = np.linspace(0.99, 1.01, 10) * 0.01
    old = _ratio_run(tmp_path / "a.csv", {"m": fast * np.linspace(0.99, 1.01, 10)})
    new = _write_run(
        tmp_path / "b.csv",
        [{**_passing_row("m", base, base), "status": "timeout"}, _passing_row("m", base * slow, base)],
        _records("m", base * fast, base) + _records("m", base * slow, base),
    )
    (row,) = compare.compare(old, new).rows
    assert row.new_status == "pass" and row.mark == compare.SLOWER


def test_failure_note_shows_error_and_markdown_escapes_pipes(tmp_path):
    old = _ratio_run(tmp_path / "a.csv", {"m": np.ones(10)})
    base = np.full(10, 0.01)
    broken = {**_passing_row("m", base, base), "status": "fail_to_run", "error": "RuntimeError: a | b"}
    new = _write_run(tmp_path / "b.csv", [broken], [])
    comparison = compare.compare(old, new)
    assert comparison.rows[0].note == "RuntimeError: a | b"
    assert "RuntimeError: a \\| b" in compare.render_markdown(comparison)
    assert "RuntimeError: a | b" in compare.render_console(comparison)


def test_empty_runs(tmp_path):
    """Two header-only files: nothing to judge, which the gate never passes."""
    empty = tmp_path / "e.csv"
    empty.write_text(",".join(store.CSV_COLUMNS) + "\n")
    comparison = compare.compare(empty, empty)
    assert comparison.rows == [] and compare.exit_code(comparison) == 1
    assert "no rows" in compare.render_markdown(comparison)


def test_a_header_only_old_file_fails_the_gate(tmp_path, capsys):
    """An OLD run that wrote no rows (killed before its first model) leaves
    nothing to judge NEW against: FAIL, exit status 1, never INCONCLUSIVE
    with 0."""
    empty = tmp_path / "old.csv"
    empty.write_text(",".join(store.CSV_COLUMNS) + "\n")
    new = _ratio_run(tmp_path / "new.csv", {"alexnet": [0.5] * 10})
    comparison = compare.compare(empty, new)
    assert comparison.old_empty
    assert compare.verdict(comparison) == "FAIL (OLD has no rows to judge against)"
    assert compare.exit_code(comparison) == 1
    assert cli.main(["compare", str(empty), str(new)]) == 1
    out = capsys.readouterr().out
    assert "FAIL" in out and "EMPTY: OLD has no rows" in out and "PASS" not in out
    assert json.loads(compare.render_json(comparison))["old_empty"] is True


def _cut_last_line(path, keep_fields):
    """Cut ``path``'s last line after its first ``keep_fields`` CSV fields
    and a few characters of the next (a writer killed mid-row)."""
    text = path.read_text()
    head, _, last = text[:-1].rpartition("\n")
    fields = last.split(",")
    path.write_text(head + "\n" + ",".join(fields[:keep_fields]) + "," + fields[keep_fields][:2])


def test_an_old_file_cut_mid_row_is_named_and_never_a_pass(tmp_path, capsys):
    """A shard killed mid-write: the row it lost is not "added" in NEW, the
    cut is one line naming the file and the row, no raw Python warning."""
    ratios = {"alexnet": [0.5] * 10, "resnet18": [0.5] * 10}
    old, new = _ratio_run(tmp_path / "old.csv", ratios), _ratio_run(tmp_path / "new.csv", ratios)
    _cut_last_line(old, store.CSV_COLUMNS.index("backend") + 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a RuntimeWarning from the readers fails the test
        comparison = compare.compare(old, new)
        code = cli.main(["compare", str(old), str(new)])
    marks = {row.name: row.mark for row in comparison.rows}
    assert marks == {"alexnet": compare.NO_CHANGE, "resnet18": compare.INCONCLUSIVE}
    verdict = compare.verdict(comparison)
    assert verdict == "INCONCLUSIVE (1 inconclusive, OLD damaged)", verdict
    out, err = capsys.readouterr()
    assert code == 0 and err == ""
    damaged = [line for line in out.splitlines() if "cut mid-row" in line and line.startswith("DAMAGED")]
    assert damaged == [f"DAMAGED: OLD {old}:3: cut mid-row: the row of resnet18 / b lost"]
    # With --fail-on-inconclusive the row the cut lost fails the gate.
    assert compare.exit_code(compare.compare(old, new, fail_on_inconclusive=True)) == 1


def test_a_cut_before_the_backend_field_still_names_the_model(tmp_path):
    ratios = {"alexnet": [0.5] * 10, "resnet18": [0.5] * 10}
    old, new = _ratio_run(tmp_path / "old.csv", ratios), _ratio_run(tmp_path / "new.csv", ratios)
    _cut_last_line(old, 3)
    comparison = compare.compare(old, new)
    assert _by_key(comparison)[("resnet18", "b")].mark == compare.INCONCLUSIVE
    assert comparison.damaged == (f"OLD {old}:3: cut mid-row: the row of resnet18 lost",)


def test_a_new_file_cut_mid_row_loses_its_row_to_the_gate(tmp_path):
    ratios = {"alexnet": [0.5] * 10, "resnet18": [0.5] * 10}
    old, new = _ratio_run(tmp_path / "old.csv", ratios), _ratio_run(tmp_path / "new.csv", ratios)
    samples = store.samples_path(new)
    samples.write_text(samples.read_text()[:-30])  # the last samples record too
    _cut_last_line(new, 5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        comparison = compare.compare(old, new)
    assert _by_key(comparison)[("resnet18", "b")].mark == compare.REMOVED
    assert compare.exit_code(comparison) == 1
    assert comparison.damaged == (f"NEW {new}:3: cut mid-row: the row of resnet18 lost",
                                  f"NEW {samples}:4: cut mid-record: the samples record of resnet18 / b lost")
    assert [(side, d.path, d.line, d.readable) for side, d in comparison.damage] == [
        ("NEW", new, 3, True), ("NEW", samples, 4, True)]
    document = json.loads(compare.render_json(comparison))
    assert document["damage"][0] == {"side": "NEW", "file": str(new), "line": 3,
                                     "what": "cut mid-row: the row of resnet18 lost", "readable": True}


def test_a_lost_shard_fails_the_gate(tmp_path):
    """Every row of the old run missing from the new one: all removed."""
    empty = tmp_path / "e.csv"
    empty.write_text(",".join(store.CSV_COLUMNS) + "\n")
    comparison = compare.compare(OLD, empty)
    assert compare.exit_code(comparison) == 1
    assert compare.verdict(comparison).startswith("FAIL (")


# --------------------------------------------------------------------------
# Command line


def test_cli_prints_table_writes_files_and_returns_exit_code(capsys, tmp_path):
    md, png, js = tmp_path / "cmp.md", tmp_path / "cmp.png", tmp_path / "cmp.json"
    assert cli.main(["compare", str(OLD), str(NEW), "--markdown", str(md), "--plot", str(png), "--json", str(js)]) == 1
    out = capsys.readouterr().out
    comparison = compare.compare(OLD, NEW)
    verdicts = compare_cli.policy_verdicts(comparison, [OLD], [NEW], None)
    assert out == compare.render_console(comparison) + "policies:\n" + policies.render(verdicts)
    assert md.read_text(encoding="utf-8") == (GOLDEN / "compare.md").read_text(encoding="utf-8") + (
        "\n## Policies\n\n" + policies.render(verdicts, markdown=True))
    assert png.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    assert json.loads(js.read_text())["exit_code"] == 1


def test_cli_creates_output_folders(capsys, tmp_path):
    md, png = tmp_path / "missing" / "dir" / "cmp.md", tmp_path / "other" / "cmp.png"
    assert cli.main(["compare", str(OLD), str(NEW), "--markdown", str(md), "--plot", str(png)]) == 1
    assert md.exists() and png.exists()
    assert capsys.readouterr().err == ""


def test_cli_unwritable_output_is_exit_2(capsys, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    assert cli.main(["compare", str(OLD), str(NEW), "--markdown", str(blocker / "cmp.md")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "error" in err and "Traceback" not in err


def test_cli_refuses_to_write_over_an_input(capsys, tmp_path):
    old = shutil.copy(OLD, tmp_path / "old.csv")
    before = Path(old).read_text()
    assert cli.main(["compare", str(old), str(NEW), "--markdown", str(old)]) == 2
    assert Path(old).read_text() == before
    assert "is an input" in capsys.readouterr().err


def test_cli_options_reach_compare(capsys):
    # A threshold above every change leaves the new failure and the removed row to gate on.
    assert cli.main(["compare", str(OLD), str(NEW), "--threshold", "0.5", "--alpha", "0.01", "--min-samples", "3"]) == 1
    out = capsys.readouterr().out
    assert "p<0.01" in out and "fewer than 3 paired samples" in out and "|change| >= 50%" in out
    assert out.startswith("old.csv -> new.csv: FAIL (1 new failure, 1 removed)\n")


def test_cli_gate_flags(capsys, tmp_path):
    drop = {REGRESSION, NEW_FAILURE}
    old = _copy_without(OLD, tmp_path / "o.csv", drop)
    new = _copy_without(NEW, tmp_path / "n.csv", drop)
    assert cli.main(["compare", str(old), str(new)]) == 1  # googlenet removed
    assert cli.main(["compare", str(old), str(new), "--allow-removed"]) == 0
    assert cli.main(["compare", str(old), str(new), "--allow-removed", "--fail-on-inconclusive"]) == 1
    assert cli.main(["compare", str(old), str(new), "--allow-removed", "--latency-criterion"]) == 1
    capsys.readouterr()


@pytest.mark.parametrize("flags, message", [
    (["--alpha", "2"], "--alpha must be between 0 and 1"),
    (["--min-samples", "1"], "--min-samples must be at least 2"),
    (["--threshold", "-0.1"], "--threshold must be a number >= 0"),
    (["--threshold", "nan"], "--threshold must be a number >= 0"),
    (["--threshold", "x"], "invalid float value"),
    (["--max-other-cores", "-1"], "--max-other-cores must be a number of cores >= 0"),
    (["--max-other-cores", "nan"], "--max-other-cores must be a number of cores >= 0"),
])
def test_cli_bad_values_are_exit_2(capsys, flags, message):
    assert cli.main(["compare", str(OLD), str(NEW), *flags]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1 and message in captured.err


def test_cli_missing_file_is_exit_2(capsys, tmp_path):
    assert cli.main(["compare", str(tmp_path / "nope.csv"), str(NEW)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1 and "nope.csv" in captured.err


def test_cli_unreadable_csv_is_exit_2(capsys, tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("this,is,not\na,results,file\n")
    assert cli.main(["compare", str(OLD), str(bad)]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_cli_broken_samples_record_is_exit_2(capsys, tmp_path):
    csv_path = shutil.copy(NEW, tmp_path / "new.csv")
    store.samples_path(csv_path).write_text('{"role": "backend"}\n[1, 2]\n')
    assert cli.main(["compare", str(OLD), str(csv_path)]) == 2
    assert "not a samples record" in capsys.readouterr().err


def test_compare_refuses_to_overwrite_a_file_of_an_input_run(tmp_path, capsys):
    run = tmp_path / "run.csv"
    shutil.copy(OLD, run)
    shutil.copy(store.samples_path(OLD), store.samples_path(run))
    samples = store.samples_path(run).read_text()
    for flag, path in (("--json", store.samples_path(run)), ("--plot", store.plot_path(run))):
        assert cli.main(["compare", str(run), str(NEW), flag, str(path)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "is an input or a file of its run" in err, err
    assert store.samples_path(run).read_text() == samples and not store.plot_path(run).exists()
    out = tmp_path / "out.md"
    assert cli.main(["compare", str(run), str(NEW), "--markdown", str(out), "--json", str(out)]) == 2
    assert "name the same file" in capsys.readouterr().err and not out.exists()


def test_compare_refuses_one_run_twice_and_accuracy_verdicts(tmp_path, capsys):
    assert cli.main(["compare", str(OLD), str(OLD)]) == 2
    assert "OLD and NEW are the same file" in capsys.readouterr().err
    verdicts = tmp_path / "accuracy.csv"
    store.append_rows(verdicts, [{"dev": "cpu", "name": "m", "batch_size": 1, "backend": "eager",
                                    "baseline": "eager", "status": "pass", "accuracy": "pass",
                                    "schema_version": store.SCHEMA_VERSION}])
    for old, new in ((OLD, verdicts), (verdicts, OLD)):
        assert cli.main(["compare", str(old), str(new)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"{verdicts} holds --accuracy verdicts" in err, err


def test_cli_usage_error_returns_2(capsys):
    assert cli.main(["compare", str(OLD)]) == 2
    assert "error" in capsys.readouterr().err


def test_runner_compare_subcommand_exit_codes(tmp_path):
    """Through runner.py as CI calls it: a missing output folder is created,
    never a traceback; an error is 2, never 1."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parent.parent
    md = tmp_path / "missing" / "dir" / "cmp.md"
    ok = subprocess.run([sys.executable, "runner.py", "compare", str(OLD), str(NEW), "--markdown", str(md)],
                        cwd=root, capture_output=True, text=True, timeout=120)
    assert ok.returncode in (0, 1) and md.exists(), ok.stderr
    bad = subprocess.run([sys.executable, "runner.py", "compare", str(OLD), str(tmp_path / "none.csv")],
                         cwd=root, capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr and bad.stderr.count("\n") == 1


def test_nothing_compared_is_inconclusive_never_a_pass(tmp_path, capsys):
    """Two runs with no experiment in common (other settings, other models)
    say nothing about each other."""
    old = _write_run(tmp_path / "old.csv", [_passing_row("alexnet", [1.0], [2.0], batch_size=8),
                                            _passing_row("vgg16", [1.0], [2.0])], [])
    new = _write_run(tmp_path / "new.csv", [_passing_row("alexnet", [1.0], [2.0], batch_size=4),
                                            _passing_row("resnet18", [1.0], [2.0])], [])
    comparison = compare.compare(old, new, allow_removed=True)
    assert comparison.counts() == {compare.NOT_COMPARABLE: 1, compare.ADDED: 1, compare.REMOVED: 1}
    assert compare.verdict(comparison).startswith("INCONCLUSIVE"), compare.verdict(comparison)
    assert "PASS" not in compare.render_console(comparison)
    assert compare.exit_code(comparison) == 0
    strict = compare.compare(old, new, allow_removed=True, fail_on_inconclusive=True)
    assert compare.exit_code(strict) == 1
    assert cli.main(["compare", str(old), str(new), "--allow-removed", "--fail-on-inconclusive"]) == 1
    assert "INCONCLUSIVE" in capsys.readouterr().out


def test_a_seed_run_and_a_builtin_run_of_a_model_pair(tmp_path):
    """The seed suite is ten of the built-in models, the same code: their
    rows are one experiment; TorchBench's resnet18 is other code."""
    def run(path, suite):
        row = {**_passing_row("resnet18", [1.0] * 6, [2.0] * 6), "suite": suite}
        records = [{**r, **store.key_fields(row)} for r in _records("resnet18", [1.0] * 6, [2.0] * 6)]
        return _write_run(path, [row], records)

    seed, builtin, tb = (run(tmp_path / f"{s}.csv", s) for s in ("seed", "builtin", "torchbench"))
    assert compare.compare(seed, builtin).counts() == {compare.NO_CHANGE: 1}
    assert compare.compare(builtin, tb).counts() == {compare.NOT_COMPARABLE: 1}


# --------------------------------------------------------------------------
# The machine: a change of CPU between the two sides is noted


def _on_cpu(path, cpus):
    """Rewrite the run at ``path`` with rows on ``cpus[name]`` = (model, count)."""
    rows = store.read_rows(path).drop(columns=["schema_version"]).to_dict("records")
    path.unlink()
    store.append_rows(path, [{**r, "cpu_model": cpus[r["name"]][0], "cpu_count": cpus[r["name"]][1]}
                               for r in rows])
    return path


def test_compare_notes_a_change_of_cpu(tmp_path):
    steady = {"a": [1.0] * 8, "b": [0.5] * 8}
    old = _on_cpu(_ratio_run(tmp_path / "old.csv", steady), dict.fromkeys(steady, ("Xeon 8370C", 2)))
    same = _on_cpu(_ratio_run(tmp_path / "same.csv", steady), dict.fromkeys(steady, ("Xeon 8370C", 2)))
    other = _on_cpu(_ratio_run(tmp_path / "other.csv", steady), dict.fromkeys(steady, ("EPYC 7763", 4)))
    assert compare.compare(old, same).cpu_change == ""
    assert "CPU" not in compare.render_console(compare.compare(old, same))
    changed = compare.compare(old, other)
    assert changed.cpu_change == "Xeon 8370C, 2 CPUs -> EPYC 7763, 4 CPUs"
    assert "CPU changed: Xeon 8370C, 2 CPUs -> EPYC 7763, 4 CPUs" in compare.render_console(changed)
    assert "- CPU changed: Xeon 8370C, 2 CPUs → EPYC 7763, 4 CPUs" in compare.render_markdown(changed)
    assert json.loads(compare.render_json(changed))["cpu_change"] == changed.cpu_change
    # The whole run moved: one line says so, the rows need no note each.
    assert {row.note for row in changed.rows} == {""}


def test_a_pooled_baseline_keeps_the_runs_on_the_new_runs_cpu(tmp_path):
    """Nights on two CPUs pooled: a row is judged against the nights on its
    own CPU (the others named in its note); a row whose CPU no night had is
    inconclusive, and the verdict is never a PASS.  One old run on another
    CPU is still judged, with its CPU changed line (above)."""
    steady = {"a": [1.0] * 8, "b": [0.5] * 8}
    xeon, epyc = dict.fromkeys(steady, ("Xeon 8370C", 2)), dict.fromkeys(steady, ("AMD EPYC (cpu family 25)", 2))
    olds = [_on_cpu(_ratio_run(tmp_path / f"2000-01-0{i}" / "performance.csv", steady), cpus)
            for i, cpus in enumerate((xeon, epyc, xeon), start=1)]
    new = _on_cpu(_ratio_run(tmp_path / "new.csv", steady), {"a": xeon["a"], "b": ("Xeon 8272CL", 2)})
    comparison = compare.compare(olds, new)
    rows = {row.name: row for row in comparison.rows}
    assert rows["a"].mark == compare.NO_CHANGE and rows["a"].n_old == 16
    assert "left out of the pool: 2000-01-02 (CPU AMD EPYC (cpu family 25), 2 CPUs)" in rows["a"].note
    assert rows["b"].mark == compare.INCONCLUSIVE and rows["b"].other_cpu
    assert rows["b"].note.startswith("no baseline run on this CPU (Xeon 8272CL, 2 CPUs; theirs: AMD EPYC")
    assert compare.verdict(comparison) == "INCONCLUSIVE (1 inconclusive, 1 on a CPU no baseline run had)"
    assert compare.exit_code(comparison) == 0


def test_rows_note_their_cpu_when_shards_ran_on_different_machines(tmp_path):
    steady = {"a": [1.0] * 8, "b": [0.5] * 8}
    old = _on_cpu(_ratio_run(tmp_path / "old.csv", steady), dict.fromkeys(steady, ("Xeon", 2)))
    new = _on_cpu(_ratio_run(tmp_path / "new.csv", steady), {"a": ("Xeon", 2), "b": ("EPYC", 4)})
    comparison = compare.compare(old, new)
    assert comparison.cpu_change == "Xeon, 2 CPUs -> EPYC, 4 CPUs; Xeon, 2 CPUs"
    notes = {row.name: row.note for row in comparison.rows}
    assert notes == {"a": "", "b": "CPU Xeon, 2 CPUs -> EPYC, 4 CPUs"}


NAN = float("nan")


def _confirm_case(rerun_mark, rerun_p, alternative):
    """A night with m's row a new failure, settled by a re-run that timed it
    (``rerun_mark`` +6%, p ``rerun_p``, tested ``alternative``)."""
    key = dict(name="m", backend="b", old_latency_ms=1.0, new_latency_ms=NAN, old_speedup=1.0,
               new_speedup=NAN, n_old=6, n_new=0)
    failed = compare.RowComparison(mark=compare.NEW_FAILURE, old_status="pass", new_status="timeout",
                                   change=NAN, p_value=NAN, **key)
    timed = compare.RowComparison(mark=rerun_mark, old_status="pass", new_status="pass", change=0.06,
                                  p_value=rerun_p, **{**key, "n_new": 6, "new_latency_ms": 1.06})
    night = compare.Comparison(rows=[failed], old_label="old", new_label="night", threshold=0.05, alpha=0.05,
                               min_samples=5, geomean_ratio=NAN, geomean_n=0)
    rerun = replace(night, rows=[timed], alternative=alternative)
    return compare.confirm(night, rerun).rows[0]


@pytest.mark.parametrize("alternative, p_value, mark", [
    (compare.TWO_SIDED, 0.04, compare.SLOWER), (compare.SLOWER_ONLY, 0.02, compare.SLOWER),
    (compare.SLOWER_ONLY, 0.04, compare.UNCONFIRMED)])
def test_a_new_failure_whose_rerun_is_slower_is_held_to_the_nights_two_sided_level(alternative, p_value, mark):
    """A new failure's re-run that passes and is slower is a first finding
    (the night never timed the row), not a confirmation: under a one-sided
    re-run it is slower only below half the level (what the night's
    two-sided test would need), else unconfirmed, and the note says why."""
    row = _confirm_case(compare.SLOWER, p_value, alternative)
    assert row.mark == mark
    if mark == compare.UNCONFIRMED:
        assert "no change at the night's two-sided level" in row.note and "one-sided" in row.note


def test_an_unknown_alternative_is_refused():
    with pytest.raises(ValueError, match="alternative"):
        compare.judge_units([1.0, 1.1, 1.2], [1.3, 1.4, 1.5], alternative="greater")
    with pytest.raises(ValueError, match="alternative"):
        compare.night_spread([[1.0, 1.1]] * 3, [[1.2, 1.3]], alternative="less")
