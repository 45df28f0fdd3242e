"""Tests of benchmarks.results.store: schema, round trips and crash safety."""
import json
import math
import re
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from benchmarks.results import store, schema

HEADER = ",".join(store.CSV_COLUMNS)


def _row(name="alexnet", backend="torchxla_trivial", **overrides):
    row = dict(
        dev="cpu",
        name=name,
        batch_size=8,
        speedup=1.25,
        abs_latency=4.0,
        compilation_latency=12.5,
        backend=backend,
        baseline="xla",
        baseline_latency=5.0,
        speedup_ci_low=1.2,
        speedup_ci_high=1.3,
        status="pass",
    )
    row.update(overrides)
    return row


def test_column_order_starts_with_dynamo_harness_columns():
    required = [c.name for c in store.COLUMNS if c.required]
    assert required == [
        "dev", "name", "batch_size", "speedup", "abs_latency", "compilation_latency",
        "backend", "baseline", "baseline_latency", "speedup_ci_low", "speedup_ci_high",
        "status", "schema_version",
    ]
    # Optional columns all come after the required ones.
    assert store.CSV_COLUMNS[:len(required)] == required
    assert store.SCHEMA_VERSION >= 2


def test_every_schema_version_has_a_line_in_the_history():
    source = Path(schema.__file__).read_text()
    documented = [int(n) for n in re.findall(r"^# (\d+) -- ", source, flags=re.MULTILINE)]
    assert documented == list(range(1, store.SCHEMA_VERSION + 1))


def test_round_trip_keeps_values_and_types(tmp_path):
    path = tmp_path / "run.csv"
    rows = [_row(), _row("resnet18", speedup=1 / 3, batch_size=16)]
    store.append_rows(path, rows)
    df = store.read_rows(path)
    assert list(df.columns) == store.CSV_COLUMNS
    assert df["name"].tolist() == ["alexnet", "resnet18"]
    assert df["batch_size"].tolist() == [8, 16]
    assert df["speedup"].tolist() == [1.25, 1 / 3]  # exact: floats written with repr
    assert df["schema_version"].tolist() == [store.SCHEMA_VERSION] * 2  # filled in by the writer
    assert str(df["batch_size"].dtype) == "Int64"
    assert df["speedup"].dtype == np.float64


def test_header_written_once_across_calls(tmp_path):
    path = tmp_path / "run.csv"
    store.append_rows(path, [_row("a")])
    store.append_rows(path, [_row("b"), _row("c")])
    store.append_rows(path, [])
    lines = path.read_text().splitlines()
    assert lines[0] == HEADER
    assert lines.count(HEADER) == 1
    assert store.read_rows(path)["name"].tolist() == ["a", "b", "c"]


def test_header_written_into_existing_empty_file(tmp_path):
    path = tmp_path / "run.csv"
    path.touch()
    store.append_rows(path, [_row()])
    assert path.read_text().splitlines()[0] == HEADER


def test_missing_keys_are_empty_cells(tmp_path):
    path = tmp_path / "run.csv"
    store.append_rows(path, [dict(dev="cpu", name="m", backend="b", status="fail_to_run")])
    assert path.read_text().splitlines()[1] == f"cpu,m,,,,,b,,,,,fail_to_run,{store.SCHEMA_VERSION}" + "," * (len(store.CSV_COLUMNS) - 13)
    row = store.read_rows(path).iloc[0]
    assert math.isnan(row["speedup"]) and pd.isna(row["batch_size"]) and pd.isna(row["baseline"])


def test_nan_and_none_are_empty_cells(tmp_path):
    path = tmp_path / "run.csv"
    store.append_rows(path, [_row(speedup=float("nan"), speedup_ci_low=None, baseline=np.nan)])
    row = store.read_rows(path).iloc[0]
    assert math.isnan(row["speedup"]) and math.isnan(row["speedup_ci_low"]) and pd.isna(row["baseline"])


def test_names_that_look_like_nan_or_contain_commas_survive(tmp_path):
    path = tmp_path / "run.csv"
    store.append_rows(path, [_row("NA"), _row("a,b")])
    assert store.read_rows(path)["name"].tolist() == ["NA", "a,b"]


def test_unknown_key_rejected_before_writing(tmp_path):
    path = tmp_path / "run.csv"
    with pytest.raises(ValueError, match="bogus"):
        store.append_rows(path, [_row(), _row(bogus=1)])
    assert not path.exists()


def test_newline_in_value_rejected(tmp_path):
    with pytest.raises(ValueError, match="newline"):
        store.append_rows(tmp_path / "run.csv", [_row(status="fail\nx")])


def test_append_to_file_with_other_header_rejected(tmp_path):
    path = tmp_path / "old.csv"
    path.write_text("dev,name,batch_size,speedup,abs_latency,compilation_latency\n")
    with pytest.raises(ValueError, match="header"):
        store.append_rows(path, [_row()])


def test_read_empty_file_gives_typed_empty_frame(tmp_path):
    path = tmp_path / "run.csv"
    path.touch()
    df = store.read_rows(path)
    assert df.empty and list(df.columns) == store.CSV_COLUMNS
    assert str(df["batch_size"].dtype) == "Int64"


def test_read_header_only_file(tmp_path):
    path = tmp_path / "run.csv"
    path.write_text(HEADER + "\n")
    assert store.read_rows(path).empty


def test_missing_required_column_rejected(tmp_path):
    path = tmp_path / "run.csv"
    path.write_text("dev,name\ncpu,m\n")
    with pytest.raises(ValueError, match="missing required"):
        store.read_rows(path)


def test_reader_accepts_file_without_newer_optional_column(tmp_path, monkeypatch):
    path = tmp_path / "run.csv"
    store.append_rows(path, [_row()])  # a file of today's schema
    newer = store.COLUMNS + [store.Column("peak_mem_mb", "float64", required=False)]
    monkeypatch.setattr(store, "COLUMNS", newer)
    monkeypatch.setattr(store, "CSV_COLUMNS", [c.name for c in newer])
    df = store.read_rows(path)
    assert df.columns[-1] == "peak_mem_mb" and df["peak_mem_mb"].isna().all()
    assert df["speedup"].tolist() == [1.25]


def test_reader_keeps_columns_it_does_not_know(tmp_path):
    path = tmp_path / "run.csv"
    values = ",".join(["cpu", "m", "8", "1.5", "", "", "b", "xla", "", "", "", "pass", "2"]
                      + [""] * (len(store.CSV_COLUMNS) - 13) + ["7"])
    path.write_text(HEADER + ",from_the_future\n" + values + "\n")
    df = store.read_rows(path)
    assert list(df.columns) == store.CSV_COLUMNS + ["from_the_future"]
    assert df["from_the_future"].tolist() == [7]


def test_truncated_last_csv_line_is_ignored_then_cut_on_append(tmp_path):
    # Simulates a crash mid-append: a partial line without its newline.
    path = tmp_path / "run.csv"
    store.append_rows(path, [_row("a")])
    with open(path, "a") as f:
        f.write("cpu,b,8,1.")
    with pytest.warns(RuntimeWarning, match="truncated"):
        assert store.read_rows(path)["name"].tolist() == ["a"]
    store.append_rows(path, [_row("c")])
    lines = path.read_text().splitlines()
    assert [line.split(",")[1] for line in lines[1:]] == ["a", "c"]
    assert store.read_rows(path)["name"].tolist() == ["a", "c"]


def test_truncated_header_only_file_reads_empty(tmp_path):
    path = tmp_path / "run.csv"
    path.write_text(HEADER[:20])
    with pytest.warns(RuntimeWarning):
        assert store.read_rows(path).empty
    store.append_rows(path, [_row()])
    assert path.read_text().splitlines()[0] == HEADER


_WRITER = """
import sys
from benchmarks.results import store
i = 0
while True:
    store.append_rows(sys.argv[1], [dict(dev="cpu", name=f"m{i}", backend="b", speedup=1.0 + i, status="pass")])
    store.append_samples(sys.argv[2], [store.sample_record(f"m{i}", "b", "backend", [0.001] * 500)])
    i += 1
"""


def test_kill_during_appends_leaves_only_whole_lines(tmp_path):
    csv_path, jsonl_path = tmp_path / "run.csv", tmp_path / "run.jsonl"
    proc = subprocess.Popen([sys.executable, "-c", _WRITER, str(csv_path), str(jsonl_path)])
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not (jsonl_path.exists() and jsonl_path.stat().st_size > 20_000):
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    # Linux may stop a killed process's write between pages (a 5 KB record
    # spans two): the readers skip such a torn last line, with a warning.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        df = store.read_rows(csv_path)
        samples = store.read_samples(jsonl_path)
    assert len(df) > 0 and df["speedup"].tolist() == [1.0 + i for i in range(len(df))]
    assert samples and all(len(r["samples_s"]) == 500 for r in samples)
    # The next append cuts the torn tail: the files are whole lines again.
    store.append_rows(csv_path, [dict(dev="cpu", name="next", backend="b", speedup=0.5, status="pass")])
    store.append_samples(jsonl_path, [store.sample_record("next", "b", "backend", [0.001])])
    assert csv_path.read_bytes().endswith(b"\n") and jsonl_path.read_bytes().endswith(b"\n")
    assert store.read_rows(csv_path)["name"].tolist() == df["name"].tolist() + ["next"]
    assert [r["name"] for r in store.read_samples(jsonl_path)] == [r["name"] for r in samples] + ["next"]


def test_samples_round_trip(tmp_path):
    path = tmp_path / "run.jsonl"
    first = store.sample_record("alexnet", "torchxla_trivial", "baseline", [0.01, 0.02], first_call_s=1.5)
    second = {"name": "resnet18", "backend": "b", "role": "backend", "samples_s": [0.3]}
    store.append_samples(path, [first])
    store.append_samples(path, [second])
    got = store.read_samples(path)
    assert got[0] == {
        "name": "alexnet", "backend": "torchxla_trivial", "role": "baseline",
        "first_call_s": 1.5, "samples_s": [0.01, 0.02], "schema_version": store.SCHEMA_VERSION,
    }
    assert got[1] == {**second, "schema_version": store.SCHEMA_VERSION}
    assert len(path.read_text().splitlines()) == 2


def test_samples_numpy_and_nonfinite_become_plain_json(tmp_path):
    path = tmp_path / "run.jsonl"
    record = {"name": "m", "samples_s": np.array([0.5, np.nan]), "first_call_s": np.float32(2.0), "n": np.int64(3)}
    store.append_samples(path, [record])
    json.loads(path.read_text())  # strict JSON: no NaN token
    assert store.read_samples(path)[0] == {
        "name": "m", "samples_s": [0.5, None], "first_call_s": 2.0, "n": 3, "schema_version": store.SCHEMA_VERSION,
    }


def test_truncated_last_jsonl_line_is_skipped(tmp_path):
    path = tmp_path / "run.jsonl"
    store.append_samples(path, [store.sample_record("a", "b", "backend", [1.0])])
    with open(path, "a") as f:
        f.write('{"name": "b", "samples_s": [1.0, 2.')
    with pytest.warns(RuntimeWarning, match="truncated"):
        assert [r["name"] for r in store.read_samples(path)] == ["a"]
    store.append_samples(path, [store.sample_record("c", "b", "backend", [1.0])])
    assert [r["name"] for r in store.read_samples(path)] == ["a", "c"]


def test_corrupt_middle_jsonl_line_raises(tmp_path):
    path = tmp_path / "run.jsonl"
    path.write_text('{"name": "a"}\nnot json\n{"name": "c"}\n')
    with pytest.raises(ValueError, match=":2:"):
        store.read_samples(path)


def test_sample_record_rejects_unknown_role():
    with pytest.raises(ValueError, match="role"):
        store.sample_record("m", "b", "eager", [1.0])


def test_paths_beside_the_csv():
    assert store.samples_path("results/run_1.csv") == Path("results/run_1.jsonl")
    assert store.markdown_path(Path("/x/run.csv")) == Path("/x/run.md")


def test_row_reading_rules():
    assert store.is_finite(1.5) and not store.is_finite(float("nan")) and not store.is_finite(None)
    assert store.passed({"status": "pass", "speedup": float("nan")})
    assert store.passed({"status": np.nan, "speedup": 1.2})  # a PyTorch-harness row
    assert not store.passed({"status": np.nan, "speedup": np.nan})
    assert not store.passed({"status": "timeout", "speedup": 1.2})
    df = pd.DataFrame([_row(speedup=1.0), _row(speedup=2.0), _row(backend="other")])
    assert store.latest(df)["speedup"].tolist() == [2.0, 1.25]


# --------------------------------------------------------------------------
# Experiment keys


def test_experiment_key_normalises_every_kind_of_row():
    as_written = dict(_row(), suite="builtin", mode="training", dtype="bf16", dynamic="static")
    key = store.experiment_key(as_written)
    assert key == store.ExperimentKey("builtin", "alexnet", "torchxla_trivial", "xla", "cpu", 8,
                                        "training", "bf16", "static")
    text_cells = {k: str(v) for k, v in as_written.items()}  # merge reads cells as text
    assert store.experiment_key(text_cells) == key
    assert store.experiment_key({**text_cells, "batch_size": "8.0"}) == key
    missing = store.experiment_key({**as_written, "mode": "", "suite": np.nan, "batch_size": pd.NA})
    assert (missing.mode, missing.suite, missing.batch_size) == (None, None, None)
    assert key.settings == ("builtin", "xla", "cpu", 8, "training", "bf16", "static", None, None, None)


def test_experiment_key_of_version_1_rows_and_records():
    v1_row = dict(_row(), schema_version=1)
    key = store.experiment_key(v1_row)
    assert (key.dtype, key.dynamic, key.mode, key.suite) == ("fp32", "static", None, None)
    v1_record = {"name": "alexnet", "backend": "b", "role": "backend", "samples_s": [], "schema_version": 1}
    assert store.experiment_key(v1_record) == store.ExperimentKey(None, "alexnet", "b", *[None] * 6)
    assert store.experiment_key(v1_record) == key._replace(backend="b").pair_only()


def test_latest_keeps_one_row_per_experiment():
    df = pd.DataFrame([
        dict(_row(speedup=1.0), mode="inference"),
        dict(_row(speedup=2.0), mode="training"),
        dict(_row(speedup=3.0), mode="inference"),  # a re-run of the first
        dict(_row(speedup=4.0, batch_size=16), mode="inference"),
    ])
    assert store.latest(df)["speedup"].tolist() == [2.0, 3.0, 4.0]


def _key(name="m", backend="b", **settings):
    fields = dict(suite="builtin", baseline="xla", dev="cpu", batch_size=1, mode="inference",
                  dtype="fp32", dynamic="static")
    fields.update(settings)
    return store.ExperimentKey(fields["suite"], name, backend, fields["baseline"], fields["dev"],
                                 fields["batch_size"], fields["mode"], fields["dtype"], fields["dynamic"])


def test_pair_experiments():
    same = _key("a")
    infer, train = _key("b", mode="inference"), _key("b", mode="training")
    bs1, bs2, bs4 = (_key("c", batch_size=n) for n in (1, 2, 4))
    gone, new = _key("d"), _key("e")
    pairs = store.pair_experiments([same, infer, bs1, bs2, gone], [same, train, bs2, bs4, new])
    assert pairs == [(same, same), (infer, train), (bs1, bs4), (bs2, bs2), (gone, None), (None, new)]


def test_pair_experiments_with_none_values_sorts():
    v1 = store.ExperimentKey(None, "m", "b", "xla", "cpu", 1, None, "fp32", "static")
    assert store.pair_experiments([v1], [_key("m")]) == [(v1, _key("m"))]


# --------------------------------------------------------------------------
# Graph breaks and the files beside a CSV


def test_graph_breaks_round_trip(tmp_path):
    csv_path = tmp_path / "run.csv"
    store.append_graph_breaks(csv_path, [])
    assert store.graph_breaks_path(csv_path) == tmp_path / "run_graph_breaks.csv"
    assert store.read_graph_breaks(csv_path).empty  # header only: a run without breaks
    record = dict(name="m", backend="eager", mode="inference", dtype="fp32", dynamic="static",
                  reason="Failed to trace builtin operator: print, with a comma",
                  user_frame="model.py:12 in forward: print(x)")
    store.append_graph_breaks(csv_path, [record])
    assert store.read_graph_breaks(csv_path).to_dict("records") == [record]
    with pytest.raises(ValueError, match="bogus"):
        store.append_graph_breaks(csv_path, [dict(record, bogus=1)])


def test_read_graph_breaks_without_a_file(tmp_path):
    assert list(store.read_graph_breaks(tmp_path / "old.csv").columns) == store.GRAPH_BREAK_COLUMNS


def test_files_beside_a_csv():
    assert [p.name for p in store.files_beside("out/run.csv")] == [
        "run.csv", "run.jsonl", "run.md", "run.png", "run_graph_breaks.csv", "run_compilation_metrics.csv"]
    assert [p.name for p in store.folders_beside("out/run.csv")] == ["run.logs", "run.pytorch"]
