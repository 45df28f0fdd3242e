"""A script written for the CSVs of PyTorch's dynamo harness
(benchmarks/dynamo/common.py) reads ours: its columns are there under its
names, in its units, on rows written now (schema version 9) and on older
files read through the store."""
import csv
import shutil
from pathlib import Path

import pytest

from benchmarks.results import schema, store

FIXTURES = Path(__file__).parent / "fixtures"
# The columns common.py writes for a performance run, in its order.
PYTORCH_PERFORMANCE = ["dev", "name", "batch_size", "speedup", "abs_latency", "compilation_latency",
                       "compression_ratio", "eager_peak_mem", "dynamo_peak_mem", "unique_graphs",
                       "graph_breaks"]


def pytorch_summary(path: Path) -> dict:
    """What a script of PyTorch's kind reads from a result CSV, by name."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    return {row["name"]: {c: float(row[c]) for c in PYTORCH_PERFORMANCE[2:]} for row in rows}


def _row(**memory):
    return dict(dev="cpu", name="ok_mlp", batch_size=2, backend="torchxla_trace_once", baseline="xla",
                speedup=1.5, abs_latency=2.0, baseline_latency=3.0, compilation_latency=4.0, status="pass",
                dynamo_graphs=2, graph_breaks=1, **memory)


def test_a_row_holds_pytorchs_columns_in_its_units():
    host = _row(peak_host_mb=1000.0, baseline_peak_host_mb=1500.0)
    made = schema.pytorch_columns(host)
    assert made == {"unique_graphs": 2, "eager_peak_mem": pytest.approx(1500 * 2 ** 20 / 1e9),
                    "dynamo_peak_mem": pytest.approx(1000 * 2 ** 20 / 1e9), "compression_ratio": 1.5}
    # Where the device reports its peak on both sides, PyTorch's columns are the device's.
    device = _row(peak_host_mb=1000.0, baseline_peak_host_mb=1500.0, peak_device_mb=300.0,
                  baseline_peak_device_mb=200.0)
    made = schema.pytorch_columns(device)
    assert made["eager_peak_mem"] == pytest.approx(200 * 2 ** 20 / 1e9)
    assert made["compression_ratio"] == pytest.approx(2 / 3)
    # Nothing measured: nothing made up.
    assert schema.pytorch_columns({"status": "fail_to_run"}) == dict.fromkeys(schema.PYTORCH_COLUMNS)


def test_a_pytorch_script_reads_a_file_written_now(tmp_path):
    path = tmp_path / "run.csv"
    row = _row(peak_host_mb=1000.0, baseline_peak_host_mb=1500.0)
    store.append_rows(path, [{**row, **schema.pytorch_columns(row)}])
    header = path.read_text().splitlines()[0].split(",")
    assert set(PYTORCH_PERFORMANCE) <= set(header)
    assert pytorch_summary(path)["ok_mlp"] == {
        "batch_size": 2, "speedup": 1.5, "abs_latency": 2.0, "compilation_latency": 4.0,
        "compression_ratio": 1.5, "eager_peak_mem": pytest.approx(1.572864),
        "dynamo_peak_mem": pytest.approx(1.048576), "unique_graphs": 2, "graph_breaks": 1}


def test_older_files_read_with_pytorchs_columns_made_from_what_they_recorded(tmp_path):
    df = store.read_rows(FIXTURES / "v4" / "run.csv")
    assert set(df["schema_version"]) == {4}
    assert list(df["unique_graphs"]) == list(df["dynamo_graphs"])
    assert list(df["compression_ratio"]) == pytest.approx(list(df["host_compression_ratio"]))
    assert list(df["eager_peak_mem"]) == pytest.approx(list(df["baseline_peak_host_mb"] * 2 ** 20 / 1e9))
    # Version 1 recorded no memory: empty, never made up.
    v1 = store.read_rows(FIXTURES / "v1" / "run.csv")
    assert v1["eager_peak_mem"].isna().all() and v1["compression_ratio"].isna().all()
    assert list(v1["unique_graphs"]) == list(v1["dynamo_graphs"])
    # A version-9 row keeps what it wrote, empty or not.
    path = tmp_path / "run.csv"
    store.append_rows(path, [_row(peak_host_mb=1000.0, baseline_peak_host_mb=1500.0)])
    assert store.read_rows(path)["compression_ratio"].isna().all()


def test_an_older_file_is_resumed_under_todays_header_its_rows_as_they_were(tmp_path, fault_models, capsys):
    from benchmarks import cli
    from benchmarks.run import orchestrate

    for name in ("run.csv", "run.jsonl", "run_graph_breaks.csv"):
        shutil.copy(FIXTURES / "v8" / name, tmp_path / name)
    path = tmp_path / "run.csv"
    before = store.read_rows(path)
    assert "unique_graphs" not in path.read_text().splitlines()[0]
    flags = ["--performance", "--suite", "torchbench", "-k", "^ok_mlp$", "--backend",
             "torchxla_trace_once,eager", "--use-xla-baseline", "--randomize-input", "--processes", "4",
             "--repeat", "5", "--warmup", "1", "--no-cold-start", "--output", str(path), "--resume"]
    orchestrate.run(cli.make_config(cli.build_parser().parse_args(flags)))
    assert "older version's file" in capsys.readouterr().err
    assert path.read_text().splitlines()[0].split(",") == store.CSV_COLUMNS
    after = store.read_rows(path)
    assert set(after["schema_version"]) == {8}
    assert after.equals(before)  # version 9's columns made as before, from what the rows recorded
    store.append_rows(path, [_row()])  # and today's rows go after them
    assert list(store.read_rows(path)["schema_version"]) == [8, 8, store.SCHEMA_VERSION]
    # Anything but an older version's header is still refused.
    other = tmp_path / "other.csv"
    other.write_text("name,speedup\nm,1.0\n")
    assert store.older_header(other) is None and not store.upgrade_header(other)
