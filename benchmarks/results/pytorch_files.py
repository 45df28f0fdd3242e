"""The files PyTorch's ``benchmarks/dynamo`` harness writes, made from a
run's rows, so that PyTorch's own tools read ours.

Offers:

- ``write(csv_path)``: beside ``NAME.csv``, ``NAME_compilation_metrics.csv``
  (every backend's first-call metrics), and in ``NAME.pytorch/`` one CSV per
  backend in PyTorch's shape and name (``<backend>_<suite>_<dtype>_<mode>_
  <dev>_<accuracy|performance>.csv``: an accuracy file is
  ``dev,name,batch_size,accuracy,...`` with PyTorch's status words, which
  its ``check_accuracy.py`` and ``check_graph_breaks.py`` read), with its
  ``_compilation_metrics.csv`` and its records for PyTorch's benchmark
  database (``.json``, one JSON object per line, as its ``output_json``);
- ``expected_files(df)`` and ``update_expected(df, folder)``: the expected
  files of PyTorch's ``ci_expected_accuracy/`` (``name,accuracy,graph_breaks,
  calls_captured,fallbacks_to_eager``), one per device, backend, suite and mode;
- ``records(...)``, ``read_records(path)``; ``STATUS_WORDS``.

Everything here is derived from the stored rows: rewritten whenever the
report is (``report.finish``).
"""
from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any, Mapping

import pandas as pd

from benchmarks.results import store

# PyTorch's accuracy CSV: its record_status writes these, then its dynamo
# statistics, then the compilation time; we add fallbacks_to_eager, which
# its check_graph_breaks.py reads.
ACCURACY_COLUMNS = ("dev", "name", "batch_size", "accuracy", "calls_captured", "unique_graphs",
                    "graph_breaks", "unique_graph_breaks", "autograd_captures", "autograd_compiles",
                    "fallbacks_to_eager", "compilation_latency")
# PyTorch's performance CSV (speedup_experiment's headers, then its dynamo statistics).
PERFORMANCE_COLUMNS = ("dev", "name", "batch_size", "speedup", "abs_latency", "compilation_latency",
                       "compression_ratio", "eager_peak_mem", "dynamo_peak_mem", "cache_lookup_latency",
                       "calls_captured", "unique_graphs", "graph_breaks", "unique_graph_breaks",
                       "autograd_captures", "autograd_compiles", "fallbacks_to_eager")
# What we know of a first call; PyTorch's file has dynamo's own timers here.
COMPILATION_COLUMNS = ("dev", "name", "batch_size", "backend", "compilation_latency",
                       "compilation_latency_low", "compilation_latency_high", "compilation_kind",
                       "cold_starts", "first_call_compiles", "first_call_cache_hits",
                       "first_call_compile_s", "first_call_execute_s", "warm_start_latency")
# PyTorch's ci_expected_accuracy files.
EXPECTED_COLUMNS = ("name", "accuracy", "graph_breaks", "calls_captured", "fallbacks_to_eager")
_COUNTS = ("calls_captured", "unique_graphs", "graph_breaks", "unique_graph_breaks", "autograd_captures",
           "autograd_compiles", "fallbacks_to_eager")
# Our statuses in PyTorch's words (its harness has none for the others):
# a model that was never run is model_fail_to_load, a worker that crashed fail_to_run.
STATUS_WORDS = {"crashed": "fail_to_run", "skipped": "model_fail_to_load",
                "not_installed": "model_fail_to_load", "unsupported": "model_fail_to_load"}
PYTORCH_STATUSES = ("pass", "pass_due_to_skip", "fail_accuracy", "eager_two_runs_differ", "fail_to_run",
                    "eager_fail_to_run", "model_fail_to_load", "OOM", "timeout")
DTYPES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16", "amp": "amp"}
BENCHMARK_NAME = "xla-dynamo-bench"  # PyTorch's own records say "TorchInductor"
_NOT_METRICS = ("dev", "name", "batch_size")


def accuracy_word(row: Mapping[str, Any]) -> str:
    """A row's verdict in PyTorch's words."""
    verdict = row.get("accuracy")
    if store.is_missing(verdict) or not str(verdict).strip():
        verdict = row.get("status")
    return STATUS_WORDS.get(str(verdict), str(verdict))


compilation_metrics_path = store.compilation_metrics_path
folder = store.pytorch_folder


def _value(value: Any, column: str) -> Any:
    """A cell as PyTorch writes it: counts as ints, 0 where nothing was
    recorded (its output_csv pads short rows with "0")."""
    if store.is_missing(value):
        return 0
    if column in _COUNTS or column == "batch_size":
        return int(value)
    return value


def _frame(rows: pd.DataFrame, columns: tuple[str, ...], accuracy: bool) -> pd.DataFrame:
    out = []
    for row in rows.to_dict("records"):
        cells = {c: _value(row.get(c), c) for c in columns}
        if accuracy:
            cells["accuracy"] = accuracy_word(row)
        elif not store.passed(row):  # PyTorch's speedup of a model that did not run
            cells["speedup"] = cells["abs_latency"] = 0.0
        out.append(cells)
    return pd.DataFrame(out, columns=list(columns))


def _part(rows: pd.DataFrame, column: str, default: str) -> str:
    values = [str(v) for v in pd.unique(rows[column].dropna())] if column in rows else []
    return "-".join(values) or default


def file_stem(rows: pd.DataFrame, backend: str, measure: str) -> str:
    """PyTorch's name for a backend's file: ``inductor_huggingface_float32_inference_cpu_accuracy``."""
    dtype = DTYPES.get(_part(rows, "dtype", "fp32"), _part(rows, "dtype", "fp32"))
    return "_".join([backend, _part(rows, "suite", "builtin"), dtype, _part(rows, "mode", "inference"),
                     _part(rows, "dev", "cpu"), measure])


def backend_groups(df: pd.DataFrame) -> list[tuple[str, pd.DataFrame, bool]]:
    """(file stem, rows, accuracy?) of each backend's rows, the latest of each experiment."""
    groups = []
    for backend, rows in store.latest(df).groupby("backend", sort=True):
        accuracy = any(store.measures(r) == "accuracy" for r in rows.to_dict("records"))
        groups.append((file_stem(rows, str(backend), "accuracy" if accuracy else "performance"), rows, accuracy))
    return groups


def pytorch_frames(df: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Per backend, PyTorch's CSV of its rows, by file stem."""
    return {stem: _frame(rows, ACCURACY_COLUMNS if accuracy else PERFORMANCE_COLUMNS, accuracy)
            for stem, rows, accuracy in backend_groups(df)}


def records(frame: pd.DataFrame, rows: pd.DataFrame, origin: str) -> list[dict]:
    """PyTorch's benchmark-database records of a backend's CSV (its
    ``output_json``): one per metric of each row, a string metric (the
    accuracy verdict) under ``metric.extra_info``, as ClickHouse wants."""
    found = []
    for cells, row in zip(frame.to_dict("records"), rows.to_dict("records")):
        extra = {"device": row.get("dev"), "quantization": "", "batch_size": cells["batch_size"],
                 "suite": origin, "baseline": row.get("baseline"), "profile": row.get("profile")}
        extra = {k: v for k, v in extra.items() if not store.is_missing(v)}
        for header, value in cells.items():
            if header in _NOT_METRICS:
                continue
            record = {"benchmark": {"name": BENCHMARK_NAME, "mode": row.get("mode"),
                                    "dtype": DTYPES.get(row.get("dtype"), row.get("dtype")),
                                    "extra_info": extra},
                      "model": {"name": cells["name"], "type": "OSS model", "backend": row.get("backend"),
                                "origins": [origin]}}
            if isinstance(value, str):
                record["metric"] = {"name": header, "extra_info": {"benchmark_values": [value]}}
            else:
                record["metric"] = {"name": header, "benchmark_values": [_number(value)]}
            found.append(record)
    return found


def _number(value: Any) -> Any:
    value = value.item() if hasattr(value, "item") else value
    return None if isinstance(value, float) and not math.isfinite(value) else value


def read_records(path: str | os.PathLike) -> list[dict]:
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


def _to_csv(frame: pd.DataFrame, path: Path) -> None:
    frame.to_csv(path, index=False, float_format="%.6f", lineterminator="\n")


def write(csv_path: str | os.PathLike) -> list[Path]:
    """PyTorch's files for the run at ``csv_path``; the paths written."""
    df = store.read_rows(csv_path)
    if df.empty:
        return []
    target = folder(csv_path)
    target.mkdir(parents=True, exist_ok=True)
    written = [compilation_metrics_path(csv_path)]
    _to_csv(_compilation_frame(store.latest(df)), written[0])
    for stem, rows, accuracy in backend_groups(df):
        frame = _frame(rows, ACCURACY_COLUMNS if accuracy else PERFORMANCE_COLUMNS, accuracy)
        paths = [target / f"{stem}.csv", target / f"{stem}_compilation_metrics.csv", target / f"{stem}.json"]
        _to_csv(frame, paths[0])
        _to_csv(_compilation_frame(rows).drop(columns=["backend"]), paths[1])
        lines = records(frame, rows, _part(rows, "suite", "builtin"))
        paths[2].write_text("".join(json.dumps(store.plain(r)) + "\n" for r in lines))
        written += paths
    return written


def _compilation_frame(rows: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame([{c: row.get(c) for c in COMPILATION_COLUMNS} for row in rows.to_dict("records")],
                        columns=list(COMPILATION_COLUMNS))


# --------------------------------------------------------------------------
# Expected files, in ci_expected_accuracy's shape


def expected_files(df: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Per device, backend, suite (and profile) and mode: PyTorch's expected
    file of an accuracy run's rows, by file name."""
    df = store.latest(df)
    files = {}
    keys = ["dev", "backend", "suite", "profile", "mode"]
    for values, rows in df.groupby([k for k in keys if k in df], dropna=False, sort=True):
        parts = [str(v) for v in (values if isinstance(values, tuple) else (values,)) if not store.is_missing(v)]
        frame = _frame(rows, ACCURACY_COLUMNS, accuracy=True)
        files["_".join(parts) + ".csv"] = frame[list(EXPECTED_COLUMNS)].sort_values("name", ignore_index=True)
    return files


def update_expected(df: pd.DataFrame, target: str | os.PathLike) -> list[Path]:
    """Write ``expected_files(df)`` into ``target``: the run's models replace
    a file's rows of them, the others are kept. The files changed."""
    target = Path(target)
    target.mkdir(parents=True, exist_ok=True)
    changed = []
    for name, frame in expected_files(df).items():
        path = target / name
        if path.exists():
            old = pd.read_csv(path)
            frame = pd.concat([old[~old["name"].isin(frame["name"])], frame], ignore_index=True)
            frame = frame.sort_values("name", ignore_index=True)
        text = frame.to_csv(index=False, lineterminator="\n")
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
            changed.append(path)
    return changed
