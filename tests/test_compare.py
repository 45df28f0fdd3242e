"""Tests of benchmarks.compare: marks, geomean, exit code, golden markdown, A/A, CLI.

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
from pathlib import Path

import numpy as np
import pytest

from benchmarks import compare, results

FIXTURES = Path(__file__).parent / "fixtures" / "compare"
OLD = FIXTURES / "old.csv"
NEW = FIXTURES / "new.csv"
GOLDEN = Path(__file__).parent / "golden"
TRACE = "torchxla_trace_once"

EXPECTED_MARKS = {
    ("alexnet", TRACE): compare.SLOWER,
    ("alexnet", "torchxla_trivial"): compare.NO_CHANGE,
    ("bert", TRACE): compare.NO_CHANGE,
    ("densenet121", TRACE): compare.FIXED,
    ("googlenet", TRACE): compare.REMOVED,
    ("mobilenet_v2", TRACE): compare.NEW_FAILURE,
    ("resnet18", TRACE): compare.FASTER,
    ("squeezenet1_1", TRACE): compare.STILL_FAILING,
    ("vgg16", TRACE): compare.NOT_COMPARABLE,
    ("vit_b_16", TRACE): compare.ADDED,
}


@pytest.fixture(scope="module")
def fixture_comparison():
    return compare.compare(OLD, NEW)


def _by_key(comparison):
    return {(row.name, row.backend): row for row in comparison.rows}


# --------------------------------------------------------------------------
# Helpers that build runs in tmp_path


def _write_run(path, rows, records):
    results.append_rows(path, rows)
    if records:
        results.append_samples(results.samples_path(path), records)
    return path


def _passing_row(name, samples_s, backend="b", batch_size=8):
    ms = float(np.median(samples_s)) * 1e3
    return dict(dev="cpu", name=name, batch_size=batch_size, backend=backend, baseline="xla",
                speedup=1.0, abs_latency=ms, baseline_latency=ms, status="pass")


def _run(path, samples_by_name, backend="b"):
    """A run where every model passed with the given backend samples."""
    rows = [_passing_row(name, s, backend) for name, s in samples_by_name.items()]
    records = [results.sample_record(name, backend, "backend", s) for name, s in samples_by_name.items()]
    return _write_run(path, rows, records)


def _copy_without(src_csv, dst_csv, drop):
    """Copy a run (CSV + JSONL) leaving out the (name, backend) pairs in ``drop``."""
    reader = csv.DictReader(io.StringIO(src_csv.read_text()))
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=reader.fieldnames, lineterminator="\n")
    writer.writeheader()
    writer.writerows(r for r in reader if (r["name"], r["backend"]) not in drop)
    dst_csv.write_text(out.getvalue())
    lines = results.samples_path(src_csv).read_text().splitlines()
    kept = [line for line in lines if (json.loads(line)["name"], json.loads(line)["backend"]) not in drop]
    results.samples_path(dst_csv).write_text("".join(line + "\n" for line in kept))
    return dst_csv


# --------------------------------------------------------------------------
# The fixture runs


def test_marks(fixture_comparison):
    assert {key: row.mark for key, row in _by_key(fixture_comparison).items()} == EXPECTED_MARKS


def test_rows_sorted_by_name_and_backend(fixture_comparison):
    keys = [(row.name, row.backend) for row in fixture_comparison.rows]
    assert keys == sorted(EXPECTED_MARKS)


def test_changes_from_sample_medians(fixture_comparison):
    rows = _by_key(fixture_comparison)
    regression, improvement, noise = rows[("alexnet", TRACE)], rows[("resnet18", TRACE)], rows[("alexnet", "torchxla_trivial")]
    assert regression.change == pytest.approx(0.20)
    assert (regression.old_latency_ms, regression.new_latency_ms) == (pytest.approx(10.0), pytest.approx(12.0))
    assert improvement.change == pytest.approx(-0.25)
    assert noise.change == pytest.approx(0.01)
    assert regression.p_value < 0.001 and improvement.p_value < 0.001
    assert noise.p_value > 0.05
    assert (regression.n_old, regression.n_new) == (20, 20)


def test_no_samples_falls_back_to_abs_latency_untested(fixture_comparison):
    bert = _by_key(fixture_comparison)[("bert", TRACE)]
    assert bert.change == pytest.approx(0.10)  # 5.0 -> 5.5 ms from the CSV
    assert np.isnan(bert.p_value)
    assert bert.mark == compare.NO_CHANGE  # +10% but untested: never flagged
    assert bert.note.startswith("untested")


def test_geomean_over_rows_passing_in_both(fixture_comparison):
    # alexnet/trace_once 1.2, alexnet/trivial 1.01, bert 1.1, resnet18 0.75;
    # vgg16 passed in both but at another batch size, so it is left out.
    assert fixture_comparison.geomean_n == 4
    assert fixture_comparison.geomean_ratio == pytest.approx((1.2 * 1.01 * 1.1 * 0.75) ** 0.25)


def test_speedups_are_informational(fixture_comparison):
    rows = _by_key(fixture_comparison)
    assert (rows[("alexnet", TRACE)].old_speedup, rows[("alexnet", TRACE)].new_speedup) == (
        pytest.approx(1.5), pytest.approx(1.25))
    assert np.isnan(rows[("vit_b_16", TRACE)].old_speedup)


def test_not_comparable_says_which_setting(fixture_comparison):
    vgg = _by_key(fixture_comparison)[("vgg16", TRACE)]
    assert vgg.note == "batch_size 8 -> 16"
    assert np.isnan(vgg.change)


def test_counts_and_frame(fixture_comparison):
    counts = fixture_comparison.counts()
    assert counts[compare.NO_CHANGE] == 2 and sum(counts.values()) == len(EXPECTED_MARKS)
    assert list(counts) == [m for m in compare.MARKS if m in counts]
    frame = fixture_comparison.frame()
    assert len(frame) == len(EXPECTED_MARKS) and {"mark", "change", "p_value"} <= set(frame.columns)


def test_exit_code_gates_on_slower_and_new_failure(fixture_comparison, tmp_path):
    assert compare.exit_code(fixture_comparison) == 1
    regression, new_failure = ("alexnet", TRACE), ("mobilenet_v2", TRACE)

    def exit_without(drop, stem):
        old = _copy_without(OLD, tmp_path / f"{stem}_old.csv", drop)
        new = _copy_without(NEW, tmp_path / f"{stem}_new.csv", drop)
        return compare.exit_code(compare.compare(old, new))

    assert exit_without({regression, new_failure}, "clean") == 0
    assert exit_without({regression}, "failure_only") == 1
    assert exit_without({new_failure}, "slower_only") == 1


def test_markdown_matches_golden(fixture_comparison):
    text = compare.render_markdown(fixture_comparison)
    path = GOLDEN / "compare.md"
    if os.environ.get("UPDATE_GOLDEN") == "1":
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8"), f"{path} differs; UPDATE_GOLDEN=1 regenerates it"


def test_markdown_states_rule_and_summary(fixture_comparison):
    text = compare.render_markdown(fixture_comparison)
    assert "p<0.05" in text and "≥5 samples per side" in text and "|change| ≥ 5%" in text
    assert "1 slower, 1 new failure, 1 faster, 1 fixed, 2 no change" in text
    assert "geomean new/old latency 1.000x (n=4" in text


def test_console_render(fixture_comparison):
    text = compare.render_console(fixture_comparison)
    assert text.startswith("old.csv -> new.csv: FAIL (1 slower, 1 new failure)\n")
    assert "+20.0%" in text and "-25.0%" in text and "batch_size 8 -> 16" in text
    assert "**" not in text and "→" not in text  # plain ASCII markup for terminals


# --------------------------------------------------------------------------
# The statistics


def test_aa_same_distribution_is_not_flagged(tmp_path):
    """Two runs of the same code: 20 lognormal draws per side, same distribution."""
    rng = np.random.default_rng(1234)
    medians = {f"model{i:02d}": m for i, m in enumerate([0.5e-3, 2e-3, 5e-3, 10e-3, 20e-3, 50e-3, 0.1, 0.3])}

    def draws():
        return {name: rng.lognormal(np.log(m), 0.05, 20) for name, m in medians.items()}

    comparison = compare.compare(_run(tmp_path / "a.csv", draws()), _run(tmp_path / "b.csv", draws()))
    assert {row.mark for row in comparison.rows} == {compare.NO_CHANGE}
    assert compare.exit_code(comparison) == 0
    assert comparison.geomean_ratio == pytest.approx(1.0, abs=0.02)


def test_aa_false_alarm_rate_below_alpha(tmp_path):
    """Many very noisy A/A pairs (15% spread): at most alpha of them flagged.

    The test alone flags about alpha of A/A pairs; the threshold removes
    those whose change is small, so the rate cannot exceed alpha."""
    rng = np.random.default_rng(99)
    n = 200
    old = {f"m{i:03d}": rng.lognormal(np.log(0.01), 0.15, 20) for i in range(n)}
    new = {f"m{i:03d}": rng.lognormal(np.log(0.01), 0.15, 20) for i in range(n)}
    comparison = compare.compare(_run(tmp_path / "a.csv", old), _run(tmp_path / "b.csv", new))
    flagged = sum(row.mark in (compare.SLOWER, compare.FASTER) for row in comparison.rows)
    assert flagged <= 0.05 * n


def test_significant_but_below_threshold_is_no_change(tmp_path):
    base = np.linspace(0.99, 1.01, 20) * 0.01
    comparison = compare.compare(
        _run(tmp_path / "a.csv", {"m": base}), _run(tmp_path / "b.csv", {"m": base * 1.03}))
    (row,) = comparison.rows
    assert row.p_value < 0.05 and row.change == pytest.approx(0.03)
    assert row.mark == compare.NO_CHANGE
    loose = compare.compare(tmp_path / "a.csv", tmp_path / "b.csv", threshold=0.02)
    assert loose.rows[0].mark == compare.SLOWER


def test_too_few_samples_are_not_tested(tmp_path):
    samples = np.array([0.0100, 0.0101, 0.0102, 0.0103])  # distinct: exact test, no ties
    old = _run(tmp_path / "a.csv", {"m": samples})
    new = _run(tmp_path / "b.csv", {"m": 2 * samples})  # 2x slower
    (row,) = compare.compare(old, new).rows
    assert row.mark == compare.NO_CHANGE and np.isnan(row.p_value)
    assert row.change == pytest.approx(1.0)
    assert row.note == "untested: 4 vs 4 samples (< 5 per side)"
    # 4 vs 4 fully separated: exact two-sided p = 2/70 < 0.05.
    (tested,) = compare.compare(old, new, min_samples=4).rows
    assert tested.mark == compare.SLOWER and tested.p_value == pytest.approx(2 / 70)


def test_missing_jsonl_falls_back_to_abs_latency(tmp_path):
    old = _write_run(tmp_path / "a.csv", [_passing_row("m", [0.010])], [])
    new = _write_run(tmp_path / "b.csv", [_passing_row("m", [0.020])], [])
    (row,) = compare.compare(old, new).rows
    assert row.change == pytest.approx(1.0) and row.mark == compare.NO_CHANGE
    assert "abs_latency" in row.note


def test_last_row_and_last_samples_win(tmp_path):
    slow, fast = np.full(10, 0.02) * np.linspace(0.99, 1.01, 10), np.full(10, 0.01) * np.linspace(0.99, 1.01, 10)
    old = _run(tmp_path / "a.csv", {"m": fast})
    new = _write_run(
        tmp_path / "b.csv",
        [{**_passing_row("m", fast), "status": "timeout"}, _passing_row("m", slow)],
        [results.sample_record("m", "b", "backend", fast), results.sample_record("m", "b", "backend", slow)],
    )
    (row,) = compare.compare(old, new).rows
    assert row.new_status == "pass" and row.mark == compare.SLOWER


def test_failure_note_shows_error_and_markdown_escapes_pipes(tmp_path):
    samples = np.linspace(0.99, 1.01, 10) * 0.01
    old = _run(tmp_path / "a.csv", {"m": samples})
    broken = {**_passing_row("m", samples), "status": "fail_to_run", "error": "RuntimeError: a | b"}
    new = _write_run(tmp_path / "b.csv", [broken], [])
    comparison = compare.compare(old, new)
    assert comparison.rows[0].note == "RuntimeError: a | b"
    assert "RuntimeError: a \\| b" in compare.render_markdown(comparison)
    assert "RuntimeError: a | b" in compare.render_console(comparison)


def test_empty_runs(tmp_path):
    empty = tmp_path / "e.csv"
    empty.write_text(",".join(results.CSV_COLUMNS) + "\n")
    comparison = compare.compare(empty, empty)
    assert comparison.rows == [] and compare.exit_code(comparison) == 0
    assert "no rows" in compare.render_markdown(comparison)


# --------------------------------------------------------------------------
# Command line


def test_cli_prints_table_and_returns_exit_code(capsys, tmp_path):
    md, png = tmp_path / "cmp.md", tmp_path / "cmp.png"
    assert compare.main([str(OLD), str(NEW), "--markdown", str(md), "--plot", str(png)]) == 1
    out = capsys.readouterr().out
    assert out == compare.render_console(compare.compare(OLD, NEW))
    assert md.read_text(encoding="utf-8") == (GOLDEN / "compare.md").read_text(encoding="utf-8")
    assert png.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")


def test_cli_options_reach_compare(capsys):
    # A threshold above every change leaves only the new failure to gate on.
    assert compare.main([str(OLD), str(NEW), "--threshold", "0.5", "--alpha", "0.01", "--min-samples", "3"]) == 1
    out = capsys.readouterr().out
    assert "p<0.01" in out and ">=3 samples" in out and "|change| >= 50%" in out
    assert out.startswith("old.csv -> new.csv: FAIL (1 new failure)\n")


def test_cli_missing_file_is_exit_2(capsys, tmp_path):
    assert compare.main([str(tmp_path / "nope.csv"), str(NEW)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1 and "nope.csv" in captured.err


def test_cli_unreadable_csv_is_exit_2(capsys, tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("this,is,not\na,results,file\n")
    assert compare.main([str(OLD), str(bad)]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_cli_usage_error_returns_2(capsys):
    assert compare.main([str(OLD)]) == 2
    assert "usage" in capsys.readouterr().err
