"""Files of schema version 2 (tests/fixtures/v2/, written by the version-2
harness) are still read, reported, compared with a version-3 run's rows and
merged; what version 2 did not record stays empty, never made up."""
import shutil
from pathlib import Path

import pytest

from benchmarks.results import compare, merge, report, store
from conftest import copy_fixture_run

V2 = Path(__file__).parent / "fixtures" / "v2"
NEW_IN_V3 = ("compilation_kind", "first_call_cache_hits", "warm_start_latency", "repeats_used",
             "repeat_stop", "threads", "cpu_affinity", "zero_overhead_speedup", "headroom_captured",
             "persistent_cache_hits")


@pytest.fixture
def v2_run(tmp_path):
    return copy_fixture_run(V2, tmp_path)


def test_the_fixture_is_version_2():
    header = (V2 / "run.csv").read_text().splitlines()[0].split(",")
    assert "mode" in header and "compilation_kind" not in header
    assert set(store.read_rows(V2 / "run.csv")["schema_version"]) == {2}


def test_version_2_rows_read_with_the_new_columns_empty():
    df = store.read_rows(V2 / "run.csv")
    assert list(df.columns) == store.CSV_COLUMNS
    assert set(df["mode"]) == {"inference"} and set(df["dtype"]) == {"fp32"}
    for column in NEW_IN_V3:
        assert df[column].isna().all(), column
    assert df["compilation_latency"].notna().all()  # measured in-process, kind not recorded


def test_version_2_run_renders_without_headroom_or_first_call_kind(v2_run):
    text = report.write_markdown(v2_run).read_text()
    assert "ok_mlp" in text and "## Compiler metrics" in text
    assert "## Headroom" not in text and "First call: cold" not in text


def test_version_2_run_compares_with_a_copy_of_itself_rewritten_at_version_3(v2_run, tmp_path):
    """The same experiments, written by today's writer: every pair matches."""
    rows = store.read_rows(v2_run).drop(columns=["schema_version"]).to_dict("records")
    new = tmp_path / "new" / "run.csv"
    store.append_rows(new, rows)
    shutil.copy(v2_run.with_suffix(".jsonl"), new.with_suffix(".jsonl"))
    assert set(store.read_rows(new)["schema_version"]) == {store.SCHEMA_VERSION}
    comparison = compare.compare(v2_run, new)
    assert len(comparison.rows) == 4
    assert {row.mark for row in comparison.rows} == {compare.NO_CHANGE}


def test_version_2_merges(v2_run, tmp_path):
    out = tmp_path / "merged.csv"
    n_rows, n_samples, _ = merge.run(out, [v2_run])
    assert (n_rows, n_samples) == (4, 8)
    assert set(store.read_rows(out)["schema_version"]) == {2}
