"""Files of schema version 4 (tests/fixtures/v4/, a performance run written
by the version-4 harness) are still read and compared: the CPU model and
count version 4 did not record stay empty, never made up, and compare claims
no change of CPU against them."""
import shutil
from pathlib import Path

import pytest

from benchmarks.results import compare, merge, store
from conftest import copy_fixture_run

V4 = Path(__file__).parent / "fixtures" / "v4"


@pytest.fixture
def v4_run(tmp_path):
    return copy_fixture_run(V4, tmp_path)


def test_the_fixture_is_version_4():
    header = (V4 / "run.csv").read_text().splitlines()[0].split(",")
    assert "tolerance" in header and "cpu_model" not in header
    assert set(store.read_rows(V4 / "run.csv")["schema_version"]) == {4}


def test_version_4_rows_read_with_the_cpu_empty():
    df = store.read_rows(V4 / "run.csv")
    assert list(df.columns) == store.CSV_COLUMNS
    assert df["cpu_model"].isna().all() and df["cpu_count"].isna().all()
    assert set(df["status"]) == {"pass"}


def test_version_4_run_compares_with_a_version_5_copy_without_a_cpu_note(v4_run, tmp_path):
    rows = store.read_rows(v4_run).drop(columns=["schema_version"]).to_dict("records")
    new = tmp_path / "new" / "run.csv"
    store.append_rows(new, [{**row, "cpu_model": "Some CPU", "cpu_count": 4} for row in rows])
    shutil.copy(v4_run.with_suffix(".jsonl"), new.with_suffix(".jsonl"))
    comparison = compare.compare(v4_run, new)
    assert {row.mark for row in comparison.rows} == {compare.NO_CHANGE}
    assert comparison.cpu_change == ""  # unknown is not a change
    assert "CPU" not in compare.render_console(comparison)


def test_version_4_merges(v4_run, tmp_path):
    out = tmp_path / "merged.csv"
    n_rows, n_samples, _ = merge.run(out, [v4_run])
    assert (n_rows, n_samples) == (4, 8)
    assert set(store.read_rows(out)["schema_version"]) == {4}
