"""Files of schema version 3 (tests/fixtures/v3/, an accuracy run written by
the version-3 harness) are still read, reported as verdicts and merged; the
tolerance version 3 did not record stays empty, never made up."""
from pathlib import Path

from benchmarks.results import merge, report, store

V3 = Path(__file__).parent / "fixtures" / "v3"


def test_the_fixture_is_version_3():
    header = (V3 / "run.csv").read_text().splitlines()[0].split(",")
    assert "compilation_kind" in header and "tolerance" not in header
    assert set(store.read_rows(V3 / "run.csv")["schema_version"]) == {3}


def test_version_3_accuracy_rows_read_with_the_tolerance_empty():
    df = store.read_rows(V3 / "run.csv")
    assert list(df.columns) == store.CSV_COLUMNS
    assert set(df["accuracy"]) == {"pass"} and df["max_error"].notna().all()
    assert df["tolerance"].isna().all()


def test_version_3_accuracy_run_renders_as_verdicts():
    df = store.read_rows(V3 / "run.csv")
    assert report.is_accuracy(df)
    headers, body = report.accuracy_table(df)
    assert [row[3] for row in body] == ["pass"] * 4
    assert {row[headers.index("tolerance")] for row in body} == {""}
    assert "geomean" not in report.render_markdown(df)


def test_version_3_merges(tmp_path):
    out = tmp_path / "merged.csv"
    n_rows, _, _ = merge.run(out, [V3 / "run.csv"])
    assert n_rows == 4 and set(store.read_rows(out)["schema_version"]) == {3}
    assert not store.plot_path(out).exists()  # an accuracy run: verdicts, no bars
