"""Files of schema version 1 (tests/fixtures/v1/, written by the version-1
harness) are still read, compared and merged; rows of different experiments
are never matched."""
import shutil
from pathlib import Path

import pytest

from benchmarks.results import compare, merge, store

V1 = Path(__file__).parent / "fixtures" / "v1"


@pytest.fixture
def v1_run(tmp_path):
    """A copy of the version-1 run (CSV and samples)."""
    for name in ("run.csv", "run.jsonl"):
        shutil.copy(V1 / name, tmp_path / name)
    return tmp_path / "run.csv"


def test_the_fixture_is_version_1():
    header = (V1 / "run.csv").read_text().splitlines()[0].split(",")
    assert "dtype" not in header and "mode" not in header and header[12] == "schema_version"
    assert set(store.read_rows(V1 / "run.csv")["schema_version"]) == {1}
    assert {r["schema_version"] for r in store.read_samples(V1 / "run.jsonl")} == {1}


def test_version_1_rows_read_with_what_version_1_could_run():
    df = store.read_rows(V1 / "run.csv")
    assert list(df.columns) == store.CSV_COLUMNS
    assert set(df["dtype"]) == {"fp32"} and set(df["dynamic"]) == {"static"}
    assert df["mode"].isna().all() and df["suite"].isna().all()  # not recorded: unknown
    assert df["speedup"].notna().all() and set(df["status"]) == {"pass"}
    key = store.experiment_key(df.iloc[0])
    assert key == store.ExperimentKey(None, "ok_mlp", "torchxla_trace_once", "xla", "cpu", 1,
                                        None, "fp32", "static")


def test_version_1_run_compares_with_itself(v1_run, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    for name in ("run.csv", "run.jsonl"):
        shutil.copy(V1 / name, other / name)
    comparison = compare.compare(v1_run, other / "run.csv")
    assert len(comparison.rows) == 4
    assert all(row.mark == compare.NO_CHANGE for row in comparison.rows), comparison.rows
    # The samples were found (by name and backend) and tested.
    assert all(row.n_old == 6 and row.n_new == 6 for row in comparison.rows)


def _split(v1_run, tmp_path):
    """The version-1 run cut into two shards, one model each, as the
    version-1 harness would have written them."""
    lines = v1_run.read_text().splitlines(keepends=True)
    samples = v1_run.with_suffix(".jsonl").read_text().splitlines(keepends=True)
    shards = []
    for model in ("ok_mlp", "ok_tiny"):
        shard = tmp_path / f"shard_{model}.csv"
        shard.write_text(lines[0] + "".join(line for line in lines[1:] if f",{model}," in line))
        shard.with_suffix(".jsonl").write_text("".join(s for s in samples if f'"{model}"' in s))
        shards.append(shard)
    return shards


def test_version_1_shards_merge(v1_run, tmp_path):
    out = tmp_path / "merged.csv"
    n_rows, n_samples, _ = merge.run(out, _split(v1_run, tmp_path))
    assert (n_rows, n_samples) == (4, 8)
    merged = store.read_rows(out)
    assert set(merged["schema_version"]) == {1} and set(merged["dtype"]) == {"fp32"}
    # The merge compares with the original run as the same experiments.
    marks = {row.mark for row in compare.compare(v1_run, out).rows}
    assert marks == {compare.NO_CHANGE}


def test_version_1_shards_overlapping_are_refused(v1_run, tmp_path):
    shard = _split(v1_run, tmp_path)[0]
    with pytest.raises(merge.UsageError, match="ok_mlp/torchxla_trace_once"):
        merge.run(tmp_path / "out.csv", [shard, v1_run])


def _v2_run(path, **settings):
    """A version-2 run of one row, with samples, in ``settings``."""
    row = dict(dev="cpu", name="ok_mlp", batch_size=1, backend="eager", baseline="xla",
               speedup=2.0, abs_latency=1.0, baseline_latency=2.0, status="pass", suite="torchbench",
               mode="inference", dtype="fp32", dynamic="static")
    row.update(settings)
    store.append_rows(path, [row])
    key = {c: row.get(c) for c in store.SETTING_COLUMNS}
    store.append_samples(store.samples_path(path), [
        store.sample_record("ok_mlp", "eager", "baseline", [0.002] * 6, 0.1, **key),
        store.sample_record("ok_mlp", "eager", "backend", [0.001] * 6, 0.1, **key),
    ])
    return path


def test_inference_and_training_runs_are_not_comparable(tmp_path):
    old = _v2_run(tmp_path / "inference.csv")
    new = _v2_run(tmp_path / "training.csv", mode="training")
    (row,) = compare.compare(old, new).rows
    assert row.mark == compare.NOT_COMPARABLE
    assert "mode inference -> training" in row.note


def test_a_version_1_row_is_not_comparable_with_one_that_says_its_mode(v1_run, tmp_path):
    new = _v2_run(tmp_path / "new.csv")
    rows = {(r.name, r.backend): r for r in compare.compare(v1_run, new).rows}
    assert rows[("ok_mlp", "eager")].mark == compare.NOT_COMPARABLE
    assert "mode None -> inference" in rows[("ok_mlp", "eager")].note


def test_a_file_with_both_modes_compares_each_with_its_own(tmp_path):
    old, new = tmp_path / "old.csv", tmp_path / "new.csv"
    for path in (old, new):
        _v2_run(path, mode="inference")
        _v2_run(path, mode="training")
    comparison = compare.compare(old, new)
    assert len(comparison.rows) == 2
    assert {row.mark for row in comparison.rows} == {compare.NO_CHANGE}
