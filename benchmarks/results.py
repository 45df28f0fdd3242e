"""The result files of a run and their versioned schema.

A run writes three files that share a stem (``results/<stem>.*``):

* ``<stem>.csv``   -- one row per (model, backend): ``CSV_COLUMNS``.
* ``<stem>.jsonl`` -- the raw timing samples behind each row, one JSON object
  per line (see :func:`sample_record`).
* ``<stem>.md``    -- the report rendered from the CSV (``benchmarks.report``).

* ``<stem>_graph_breaks.csv`` -- every dynamo graph break seen, with its
  reason and user frame (``GRAPH_BREAK_COLUMNS``).

Offers ``SCHEMA_VERSION`` (and its history below), ``COLUMNS`` /
``CSV_COLUMNS``, the status constants, ``experiment_key`` (what identifies an
experiment: resume, merge, compare and the report all use it), ``groups``
(rows split by their settings, a table or chart each), ``append_rows``
/ ``read_rows`` / ``empty_frame``, ``sample_record`` / ``append_samples`` /
``read_samples``, ``append_graph_breaks`` / ``read_graph_breaks`` and the
paths of the files beside a CSV.

Crash safety: every record is one complete line handed to a single
``os.write`` on an ``O_APPEND`` descriptor, followed by ``fsync``, so killing
the harness at any moment leaves whole lines only.  Should a file still end in
a torn line (power loss, a foreign writer), readers drop that unterminated
last line with a warning, and the next append cuts it off before writing.
"""
from __future__ import annotations

import csv
import fcntl
import io
import json
import math
import os
import shutil
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, NamedTuple

import numpy as np
import pandas as pd

from benchmarks.usage import OutputExists, UsageError

# The schema's history (as pyperf's ``_bench.py`` keeps its JSON format's).
# A change of columns bumps SCHEMA_VERSION and adds a line here; readers keep
# reading every older version (``_migrate``), and a committed file of each
# old version is read by the tests (tests/fixtures/v1/).
#
# 1 -- the first release: PyTorch's six columns, backend, baseline, the
#      speedup's CI, status, error, accuracy, compiler metrics (first call,
#      compiles and execution per iteration, host time, dynamo graphs, graph
#      breaks, recompiles, fallback ops), unstable.  Samples records: name,
#      backend, role, first_call_s, samples_s (+ baseline on baseline records).
# 2 -- rows say what was run: suite, mode (inference/training), dtype
#      (fp32/bf16/fp16/amp), dynamic (static/dynamic), repeat, warmup, seed,
#      timestamp (UTC ISO-8601), torch/torch_xla/python versions and the
#      project's commit; per-shape compiles of the lazy baseline
#      (baseline_first_call_compiles); memory (peak_host_mb, peak_device_mb,
#      the baseline's, and the baseline/backend ratios as PyTorch's
#      compression_ratio).  Samples records carry the experiment's key
#      columns too.  Version-1 rows are read with dtype fp32 and dynamic
#      static, the only ones version 1 could run; their suite and mode were
#      not recorded and stay empty (unknown), so they never match a version-2
#      row that says what it ran.
# 3 -- first calls and how the numbers were made: compilation_kind (cold: the
#      first call timed in a fresh process of the runner's own; in_process:
#      in the measuring process, where another runner's executable may serve
#      it; the only kind versions 1 and 2 measured, left empty on their rows),
#      first_call_cache_hits, warm_start_latency and
#      warm_start_fresh_compiles (--warm-start), the persistent compilation
#      cache's hits, misses and load failures (--compile-cache); adaptive
#      repeats (repeats_used, repeat_stop, min_repeat, max_time_s, target_ci);
#      threads and cpu_affinity; headroom (zero_overhead_speedup,
#      headroom_captured).  A new mode value, training_step: the whole
#      training step compiled (--compile-step), an experiment apart from
#      training (forward and backward compiled).
# 4 -- accuracy rows say what they were judged against: tolerance (the
#      largest error allowed, beside max_error).
# 5 -- rows say which machine ran them: cpu_model (the kernel's model name)
#      and cpu_count (logical CPUs of the machine). Rows of versions 1-4
#      did not record them: read with both empty (unknown), never guessed,
#      so compare reports no change of CPU against them.
SCHEMA_VERSION = 5

STATUS_PASS = "pass"
# Known failure statuses; a row may carry another string (the report shows
# whatever it finds), these are listed so callers spell them consistently.
FAILURE_STATUSES = (
    "fail_to_run",
    "model_fail_to_load",
    "eager_fail_to_run",
    "timeout",
    "crashed",
    "OOM",
    "fail_accuracy",
    "eager_two_runs_differ",
    "skipped",  # configs/ says why: the row's error
    "not_installed",  # a TorchBench model's dependency, data or download is missing: the error says which
    "unsupported",  # a TorchBench model refuses this device, mode or batch size (NotImplementedError)
)

SAMPLE_ROLES = ("baseline", "backend")


@dataclass(frozen=True)
class Column:
    """One CSV column: its name, its pandas dtype when read back, and whether
    a file must have it.  Columns added after v1 must be ``required=False`` so
    that older files stay readable."""

    name: str
    dtype: str
    required: bool = True


# The single place that defines the CSV.  To add a column: append a
# Column(..., required=False) at the END (old files then read with it as NaN)
# and bump SCHEMA_VERSION.  The first six are PyTorch's dynamo-harness columns.
COLUMNS: list[Column] = [
    Column("dev", "str"),
    Column("name", "str"),
    Column("batch_size", "Int64"),
    Column("speedup", "float64"),
    Column("abs_latency", "float64"),  # median ms / iteration, backend
    Column("compilation_latency", "float64"),  # first backend call, seconds
    Column("backend", "str"),
    Column("baseline", "str"),
    Column("baseline_latency", "float64"),  # median ms / iteration, baseline
    Column("speedup_ci_low", "float64"),
    Column("speedup_ci_high", "float64"),
    Column("status", "str"),
    Column("schema_version", "Int64"),
    # Optional columns: empty when they don't apply to the row.
    Column("error", "str", required=False),  # first line of the error of a failed row
    Column("accuracy", "str", required=False),  # --accuracy: pass, fail_accuracy or a failure
    Column("max_error", "float64", required=False),  # --accuracy: largest abs error seen
    Column("tolerance", "float64", required=False),  # --accuracy: the max_error allowed
    # Compiler metrics (benchmarks.probes); XLA ones are empty for host runs.
    Column("first_call_compiles", "Int64", required=False),  # XLA compiles in the first call
    Column("first_call_compile_s", "float64", required=False),  # XLA compile time in it
    Column("first_call_execute_s", "float64", required=False),  # XLA execution time in it
    Column("compiles_per_iter", "float64", required=False),  # XLA compiles per timed iteration
    Column("execute_ms", "float64", required=False),  # XLA execution per timed iteration
    Column("host_ms", "float64", required=False),  # median time until the call returns, pre-sync
    Column("baseline_host_ms", "float64", required=False),  # ditto for the baseline (lazy tracing)
    Column("baseline_compiles_per_iter", "float64", required=False),
    Column("dynamo_graphs", "Int64", required=False),  # graphs dynamo captured
    Column("graph_breaks", "Int64", required=False),
    Column("recompiles", "Int64", required=False),  # graphs captured after the first call
    Column("fallback_ops", "str", required=False),  # ops run on CPU by torch_xla, space-separated
    Column("unstable", "str", required=False),  # why the measurement may be unreliable
    Column("executes_per_iter", "float64", required=False),  # XLA graphs run per iteration
    # Version 2: what was run (the experiment's settings, then the run's metadata).
    Column("suite", "str", required=False),  # builtin | torchbench
    Column("mode", "str", required=False),  # inference | training | training_step (whole step compiled)
    Column("dtype", "str", required=False),  # fp32 | bf16 | fp16 | amp
    Column("dynamic", "str", required=False),  # static | dynamic (batch dimension marked dynamic)
    Column("repeat", "Int64", required=False),
    Column("warmup", "Int64", required=False),
    Column("seed", "Int64", required=False),
    Column("timestamp", "str", required=False),  # UTC ISO-8601, when the model's run started
    Column("torch_version", "str", required=False),
    Column("torch_xla_version", "str", required=False),
    Column("python_version", "str", required=False),
    Column("commit", "str", required=False),  # the project's git commit, or "unknown"
    Column("baseline_first_call_compiles", "Int64", required=False),  # lazy baseline, first call
    Column("peak_host_mb", "float64", required=False),  # RSS high-water mark in the backend's steps
    Column("peak_device_mb", "float64", required=False),  # XLA device peak, where it reports one
    Column("baseline_peak_host_mb", "float64", required=False),
    Column("baseline_peak_device_mb", "float64", required=False),
    Column("host_compression_ratio", "float64", required=False),  # baseline / backend peak host
    Column("device_compression_ratio", "float64", required=False),  # baseline / backend peak device
    # Version 3: first calls, repeats, threads, headroom.
    Column("compilation_kind", "str", required=False),  # cold | in_process: where compilation_latency was timed
    Column("first_call_cache_hits", "Int64", required=False),  # first-call compiles XLA's cache served
    Column("warm_start_latency", "float64", required=False),  # s; first call with the executable cached
    Column("warm_start_fresh_compiles", "Int64", required=False),  # compiles the cache did not serve in it
    Column("persistent_cache_hits", "Int64", required=False),  # executables loaded from --compile-cache
    Column("persistent_cache_misses", "Int64", required=False),  # graphs not found there
    Column("persistent_cache_load_failures", "Int64", required=False),  # found but not loadable
    Column("repeats_used", "Int64", required=False),  # timed samples behind the row
    Column("repeat_stop", "str", required=False),  # fixed | target | time | max: why repeats ended
    Column("min_repeat", "Int64", required=False),  # adaptive repeats: the least
    Column("max_time_s", "float64", required=False),  # adaptive repeats: the time budget per model
    Column("target_ci", "float64", required=False),  # adaptive repeats: the 95% interval's half-width sought
    Column("threads", "Int64", required=False),  # torch intra-op and XLA CPU client threads
    Column("cpu_affinity", "str", required=False),  # the CPUs the worker ran on, e.g. 0-1
    Column("zero_overhead_speedup", "float64", required=False),  # lazy baseline step / (step - tracing)
    Column("headroom_captured", "float64", required=False),  # (speedup - 1) / (limit - 1)
    # Version 5: the machine.
    Column("cpu_model", "str", required=False),  # e.g. "AMD EPYC 7763 64-Core Processor"
    Column("cpu_count", "Int64", required=False),  # logical CPUs of the machine (os.cpu_count)
]

CSV_COLUMNS: list[str] = [c.name for c in COLUMNS]

# What identifies an experiment: two rows with the same values measured the
# same thing.  --resume skips them, merge refuses them twice, compare pairs
# them and calls a pair whose settings differ ``not comparable``.
KEY_COLUMNS = ("suite", "name", "backend", "baseline", "dev", "batch_size", "mode", "dtype", "dynamic")
# The key less the pair it names: a (name, backend) measured with other
# settings is another experiment.
SETTING_COLUMNS = tuple(c for c in KEY_COLUMNS if c not in ("name", "backend"))
# What a version-1 row could only have been (see the history above).
_V1_DEFAULTS = {"dtype": "fp32", "dynamic": "static"}

_NEWLINE = b"\n"


# --------------------------------------------------------------------------
# Reading rows: the rules every reader of a result file shares


def is_finite(value: Any) -> bool:
    """A real number: not None, NaN, NA or infinite."""
    return value is not None and not pd.isna(value) and math.isfinite(value)


def passed(row: Mapping[str, Any]) -> bool:
    """Whether a row passed. An empty status with a speedup is an older or
    foreign file (PyTorch's harness writes passing rows only): a pass."""
    status = row.get("status")
    if pd.isna(status):
        return is_finite(row.get("speedup"))
    return status == STATUS_PASS


def measures(row: Mapping[str, Any]) -> str:
    """What a row measured: ``"accuracy"`` (it holds a verdict: every row of
    an ``--accuracy`` run does) or ``"performance"``. The two never share a
    file: --resume and merge refuse to mix them."""
    verdict = row.get("accuracy")
    return "accuracy" if isinstance(verdict, str) and verdict.strip() else "performance"


# The settings a table or chart is drawn for: the experiment's key less the
# model, the backend and the batch size (a cycle of batch sizes is one table).
GROUP_COLUMNS = tuple(c for c in SETTING_COLUMNS if c != "batch_size")


def groups(df: pd.DataFrame) -> list[pd.DataFrame]:
    """The rows split by ``GROUP_COLUMNS``, in order of first appearance: a
    file a training run was resumed on holds an inference and a training
    group, each its own table and chart."""
    columns = [c for c in GROUP_COLUMNS if c in df]
    if not columns or df.empty:
        return [df]
    labels = [tuple(None if pd.isna(v) else v for v in values)
              for values in df[columns].itertuples(index=False)]
    return [df[[label == wanted for label in labels]] for wanted in dict.fromkeys(labels)]


def latest(df: pd.DataFrame) -> pd.DataFrame:
    """One row per experiment (``experiment_key``): the last, as a re-run
    appended to a file replaces the earlier attempt."""
    return df.drop_duplicates(subset=[c for c in KEY_COLUMNS if c in df.columns], keep="last")


# --------------------------------------------------------------------------
# What identifies an experiment


class ExperimentKey(NamedTuple):
    """The ``KEY_COLUMNS`` of a row, normalised: ``None`` where a value is
    missing (unknown), ``batch_size`` an int, everything else a string."""

    suite: str | None
    name: str | None
    backend: str | None
    baseline: str | None
    dev: str | None
    batch_size: int | None
    mode: str | None
    dtype: str | None
    dynamic: str | None

    @property
    def settings(self) -> tuple:
        """The values of ``SETTING_COLUMNS``."""
        return tuple(getattr(self, c) for c in SETTING_COLUMNS)

    def pair_only(self) -> "ExperimentKey":
        """This key with every setting unknown: what a version-1 samples
        record, which names only its (name, backend), is keyed by."""
        return self._replace(**dict.fromkeys(SETTING_COLUMNS))

    def sort_key(self) -> tuple:
        # None sorts first; batch sizes numerically.
        return tuple((v is not None, v if isinstance(v, int) else str(v or "")) for v in self)


# Suites whose models are another suite's, the same code: one experiment.
# The seed suite is ten of the built-in models, so a seed run and a built-in
# run of resnet18 pair in compare, and one completes the other on --resume;
# TorchBench's models are other code under the same names, never matched.
SAME_CODE_SUITE = {"seed": "builtin"}


def _key_value(column: str, value: Any) -> Any:
    if _is_missing(value) or (isinstance(value, str) and not value.strip()):
        return None
    if column == "suite":
        return SAME_CODE_SUITE.get(str(value), str(value))
    if column == "batch_size":
        try:
            return int(float(value))
        except (TypeError, ValueError):
            return str(value)
    return str(value)


def _version(row: Mapping[str, Any]) -> int | None:
    try:
        return int(float(row.get("schema_version")))
    except (TypeError, ValueError):
        return None


def experiment_key(row: Mapping[str, Any]) -> ExperimentKey:
    """The experiment a CSV row (a dict, a pandas row, or merge's text cells)
    or a samples record belongs to.

    Version-1 rows get the settings version 1 could only have had (fp32,
    static); a version-1 samples record recorded no settings at all, so its
    key is ``pair_only()``: match it by (name, backend).
    """
    values = {c: _key_value(c, row.get(c)) for c in KEY_COLUMNS}
    key = ExperimentKey(**values)
    if _version(row) == 1:
        if "role" in row:
            return key.pair_only()
        key = key._replace(**{c: v for c, v in _V1_DEFAULTS.items() if values[c] is None})
    return key


def key_fields(row: Mapping[str, Any]) -> dict:
    """The ``KEY_COLUMNS`` of ``row`` as a dict (to stamp samples records)."""
    return {c: row.get(c) for c in KEY_COLUMNS}


def pair_experiments(old: Iterable[ExperimentKey], new: Iterable[ExperimentKey]
                     ) -> list[tuple[ExperimentKey | None, ExperimentKey | None]]:
    """Pairs of keys to compare, sorted: each experiment found in both runs
    with itself; then, for each (name, backend), the experiments left on
    either side paired in order (same pair, other settings: not comparable);
    whatever is left has no counterpart (``None`` on the other side)."""
    old_set, new_set = set(old), set(new)
    pairs = [(k, k) for k in old_set & new_set]
    left: dict[tuple, tuple[list, list]] = {}
    for side, keys in ((0, old_set - new_set), (1, new_set - old_set)):
        for key in sorted(keys, key=ExperimentKey.sort_key):
            left.setdefault((key.name, key.backend), ([], []))[side].append(key)
    for olds, news in left.values():
        n = max(len(olds), len(news))
        olds, news = olds + [None] * (n - len(olds)), news + [None] * (n - len(news))
        pairs += list(zip(olds, news))
    return sorted(pairs, key=lambda pair: (pair[0] or pair[1]).sort_key())


# --------------------------------------------------------------------------
# Paths


def samples_path(csv_path: str | os.PathLike) -> Path:
    """The raw-samples file beside ``csv_path`` (same stem, ``.jsonl``)."""
    return Path(csv_path).with_suffix(".jsonl")


def markdown_path(csv_path: str | os.PathLike) -> Path:
    """The markdown report beside ``csv_path`` (same stem, ``.md``)."""
    return Path(csv_path).with_suffix(".md")


def graph_breaks_path(csv_path: str | os.PathLike) -> Path:
    """The graph-break report beside ``csv_path`` (``<stem>_graph_breaks.csv``)."""
    path = Path(csv_path)
    return path.with_name(f"{path.stem}_graph_breaks.csv")


def plot_path(csv_path: str | os.PathLike) -> Path:
    """The chart beside ``csv_path`` (same stem, ``.png``)."""
    return Path(csv_path).with_suffix(".png")


def logs_path(csv_path: str | os.PathLike) -> Path:
    """The folder of kept worker logs beside ``csv_path`` (``<stem>.logs``)."""
    return Path(csv_path).with_suffix(".logs")


def files_beside(csv_path: str | os.PathLike) -> list[Path]:
    """Every file a run writes for ``csv_path``, the CSV first (the ``.logs``
    folder of failed workers aside)."""
    path = Path(csv_path)
    return [path, samples_path(path), markdown_path(path), plot_path(path), graph_breaks_path(path)]


def check_output(csv_path: Path, *, overwrite: bool, resume: bool | None = None) -> None:
    """Refuse an output that cannot be written, or one whose files would be
    lost: any of ``files_beside`` it, or with ``resume`` (a command that can
    complete a run) a non-empty CSV, needs ``overwrite`` (or ``resume``)."""
    if csv_path.suffix != ".csv":
        raise UsageError(f"the output must name a .csv file, got {csv_path}")
    if csv_path.is_dir():
        raise UsageError(f"output {csv_path} is a directory")
    # The folder is made when the first file is written; here, only whether it can be.
    existing = next(p for p in [csv_path.parent, *csv_path.parent.parents] if p.exists() or p == p.parent)
    if not existing.is_dir():
        raise UsageError(f"cannot create output folder {csv_path.parent}: {existing} is not a folder")
    _check_writable(csv_path.parent, existing)
    if csv_path.exists() and not os.access(csv_path, os.W_OK):
        raise UsageError(f"output {csv_path} is not writable")
    if resume is None:
        kept = [p for p in files_beside(csv_path) if p.exists()]
        hint = "pass --overwrite to replace it"
    else:
        kept = [csv_path] if csv_path.exists() and csv_path.stat().st_size > 0 else []
        if not resume:  # a new run writes every file beside the CSV
            kept += [p for p in files_beside(csv_path)[1:] if p.exists()]
        hint = ("an earlier run's; pass --output NEW.csv to keep it, --resume to complete it "
                "or --overwrite to replace it")
    folder = next((p for p in files_beside(csv_path) if p.is_dir()), None)
    if folder is not None:
        raise UsageError(f"{folder} is a folder, where the run writes a file")
    if kept and not (overwrite or resume):
        raise OutputExists(f"{kept[0]} exists ({hint})" if resume is not None else f"{kept[0]} exists; {hint}")


def _check_writable(folder: Path, existing: Path) -> None:
    """Whether files can be made in ``folder`` (whose nearest existing
    ancestor is ``existing``), found by trying, as root's access() says yes
    to /proc and read-only mounts: the missing folders are made, a file is
    made and removed in the last, and the folders made are removed again
    (the run makes them when it writes)."""
    made = []
    try:
        for missing in reversed([folder, *folder.parents][:len(folder.parents) - len(existing.parents)]):
            missing.mkdir()
            made.append(missing)
        tempfile.TemporaryFile(dir=folder).close()
    except OSError as err:
        raise UsageError(f"cannot write into {folder}: {err.strerror or err}") from None
    finally:
        for path in reversed(made):
            path.rmdir()


def clear_outputs(csv_path: str | os.PathLike) -> None:
    """Remove everything an earlier run wrote for ``csv_path``, so nothing
    stale stays beside the new files."""
    for path in files_beside(csv_path):
        path.unlink(missing_ok=True)
    shutil.rmtree(logs_path(csv_path), ignore_errors=True)


# --------------------------------------------------------------------------
# Low-level line appends


def _drop_torn_tail(fd: int) -> None:
    """Truncate ``fd`` back to its last newline if it ends mid-line.

    Without this, the next record would be glued onto the torn fragment and
    both would be lost (or worse, misparsed).
    """
    size = os.fstat(fd).st_size
    if size == 0 or os.pread(fd, 1, size - 1) == _NEWLINE:
        return
    end = size
    while end > 0:
        start = max(0, end - 4096)
        chunk = os.pread(fd, end - start, start)
        cut = chunk.rfind(_NEWLINE)
        if cut >= 0:
            os.ftruncate(fd, start + cut + 1)
            return
        end = start
    os.ftruncate(fd, 0)


def _write_line(fd: int, line: bytes) -> None:
    # One write per record: a kill lands before or after it, never inside.
    written = os.write(fd, line)
    if written != len(line):  # regular files do not short-write; be loud if one does
        raise OSError(f"short write: {written} of {len(line)} bytes")
    os.fsync(fd)


def _append_lines(path: str | os.PathLike, lines: Iterable[bytes], header: bytes | None = None) -> None:
    """Append complete lines to ``path``, preceded by ``header`` if it is empty.

    An exclusive ``flock`` keeps two processes from both deciding the file is
    new and writing the header twice.
    """
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        _drop_torn_tail(fd)
        if header is not None:
            _write_or_check_header(fd, header, path)
        for line in lines:
            _write_line(fd, line)
    finally:
        os.close(fd)  # also releases the lock


def _write_or_check_header(fd: int, header: bytes, path: str | os.PathLike) -> None:
    if os.fstat(fd).st_size == 0:
        _write_line(fd, header)
        return
    existing = os.pread(fd, len(header), 0)
    if existing != header:
        # Appending rows in one column order under a header in another would
        # silently shift every value; a file from another schema needs a new file.
        raise ValueError(f"{path}: header differs from CSV_COLUMNS; write to a new file")


def read_text(path: str | os.PathLike) -> str:
    """The file's text without a torn (unterminated) last line, which is
    dropped with a ``RuntimeWarning``."""
    text = Path(path).read_text(encoding="utf-8")
    if text and not text.endswith("\n"):
        kept, _, torn = text.rpartition("\n")
        warnings.warn(f"{path}: ignoring truncated last line {torn[:60]!r}", RuntimeWarning, stacklevel=3)
        text = kept + "\n" if kept else ""
    return text


# --------------------------------------------------------------------------
# CSV rows


def _is_missing(value: Any) -> bool:
    if value is None:
        return True
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):  # lists and other non-scalars
        return False


def _cell(value: Any) -> str:
    if _is_missing(value):
        return ""
    if isinstance(value, (float, np.floating)):
        return repr(float(value))  # repr: shortest string that round-trips exactly
    text = str(value)
    if "\n" in text or "\r" in text:
        # One record per physical line is what makes torn-line detection work.
        raise ValueError(f"newline in CSV value {text!r}")
    return text


def csv_line(values: Iterable[str]) -> str:
    """One CSV record, as every result file of this harness writes it."""
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow(list(values))
    return buf.getvalue()


def _row_line(row: Mapping[str, Any]) -> bytes:
    unknown = sorted(set(row) - set(CSV_COLUMNS))
    if unknown:
        raise ValueError(f"unknown result columns {unknown}; known: {CSV_COLUMNS}")
    full = {"schema_version": SCHEMA_VERSION, **row}
    return csv_line(_cell(full.get(name)) for name in CSV_COLUMNS).encode("utf-8")


def append_rows(csv_path: str | os.PathLike, rows: list[Mapping[str, Any]]) -> None:
    """Append ``rows`` (dicts keyed by ``CSV_COLUMNS``) to the CSV at ``csv_path``.

    Writes the header first if the file is new or empty.  Missing keys become
    empty cells, except ``schema_version`` which defaults to ``SCHEMA_VERSION``.
    Unknown keys raise ``ValueError`` before anything is written.
    """
    lines = [_row_line(row) for row in rows]  # validate all before writing any
    _append_lines(csv_path, lines, header=csv_line(CSV_COLUMNS).encode("utf-8"))


def empty_frame() -> pd.DataFrame:
    """A results DataFrame with no rows and the typed ``CSV_COLUMNS``."""
    return pd.DataFrame({c.name: pd.Series(dtype=c.dtype) for c in COLUMNS})


def read_rows(csv_path: str | os.PathLike, text: str | None = None) -> pd.DataFrame:
    """Read a results CSV into a DataFrame with typed columns.

    Known columns come first in ``CSV_COLUMNS`` order, typed per ``COLUMNS``
    (empty cells are NaN / <NA>); optional columns the file lacks are added as
    all-missing; columns this code does not know (a newer writer) are kept
    after them as read.  A missing required column raises ``ValueError``.
    ``text``: the file's text, when the caller has read it already.
    """
    text = read_text(csv_path) if text is None else text
    if not text.strip():
        return empty_frame()
    header = next(csv.reader(io.StringIO(text)))
    missing = [c.name for c in COLUMNS if c.required and c.name not in header]
    if missing:
        raise ValueError(f"{csv_path}: missing required columns {missing}")
    dtypes = {c.name: c.dtype for c in COLUMNS if c.name in header}
    frame = pd.read_csv(io.StringIO(text), dtype=dtypes, keep_default_na=False, na_values=[""])
    for column in COLUMNS:
        if column.name not in frame:
            frame[column.name] = pd.Series(index=frame.index, dtype=column.dtype)
    extra = [name for name in frame.columns if name not in CSV_COLUMNS]
    return _migrate(frame[CSV_COLUMNS + extra])


def _migrate(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows of older schema versions in today's terms (see the history)."""
    v1 = (frame["schema_version"] == 1).fillna(False).astype(bool)
    if v1.any():
        frame = frame.copy()
        for column, value in _V1_DEFAULTS.items():
            frame.loc[v1 & frame[column].isna(), column] = value
    return frame


def read_cells(csv_path: str | os.PathLike) -> list[dict[str, str]]:
    """The rows of a results CSV as their text cells keyed by ``CSV_COLUMNS``
    (empty for a column the file lacks), for copying numbers exactly as
    written. The file must be one ``read_rows`` accepts, with no column this
    harness does not know; else ``ValueError`` naming the file."""
    text = read_text(csv_path)
    read_rows(csv_path, text)  # the same checks and types as every reader's
    records = csv.reader(io.StringIO(text))
    header = next(records, None)
    if header is None:
        return []
    unknown = [c for c in header if c not in CSV_COLUMNS]
    if unknown:
        raise ValueError(f"{csv_path}: columns this harness doesn't know: {', '.join(unknown)}")
    cells = []
    for record in records:
        if not record:
            continue
        if len(record) != len(header):
            raise ValueError(f"{csv_path}:{records.line_num}: {len(record)} fields, "
                             f"the header has {len(header)}")
        row = dict(zip(header, record))
        cells.append({c: row.get(c, "") for c in CSV_COLUMNS})
    return cells


# --------------------------------------------------------------------------
# JSONL raw samples


def sample_record(
    name: str,
    backend: str,
    role: str,
    samples_s: Iterable[float],
    first_call_s: float | None = None,
    **extra: Any,
) -> dict:
    """One raw-samples record: the timings of ``name`` run as ``role``.

    ``role`` is ``"baseline"`` or ``"backend"``; ``backend`` names the backend
    the measurement belongs to (a baseline record carries the backend it was
    paired with).  ``first_call_s`` is the warm-up call, ``samples_s`` the
    timed iterations, both in seconds.  ``extra`` keys are stored as given.
    """
    if role not in SAMPLE_ROLES:
        raise ValueError(f"role must be one of {SAMPLE_ROLES}, got {role!r}")
    return {
        "name": name,
        "backend": backend,
        "role": role,
        "first_call_s": first_call_s,
        "samples_s": [float(s) for s in samples_s],
        **extra,
        "schema_version": SCHEMA_VERSION,
    }


def plain(value: Any) -> Any:
    """JSON-ready copy of ``value``: numpy to Python, nan/inf to null.

    Strict JSON has no NaN; null keeps the file readable by jq and friends.
    """
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [plain(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _json_line(record: Mapping[str, Any]) -> bytes:
    if not isinstance(record, Mapping):
        raise TypeError(f"sample records are dicts, got {type(record).__name__}")
    full = {**record, "schema_version": record.get("schema_version", SCHEMA_VERSION)}
    # json.dumps escapes newlines inside strings, so a record is always one line.
    return (json.dumps(plain(full), allow_nan=False) + "\n").encode("utf-8")


def append_samples(jsonl_path: str | os.PathLike, records: list[Mapping[str, Any]]) -> None:
    """Append ``records`` to ``jsonl_path``, one JSON object per line.

    ``schema_version`` is added when absent.  Same one-write-per-line and
    fsync guarantee as :func:`append_rows`.
    """
    lines = [_json_line(record) for record in records]
    _append_lines(jsonl_path, lines)


def read_sample_lines(jsonl_path: str | os.PathLike) -> list[tuple[dict, str]]:
    """Each record of ``jsonl_path`` in file order with its line as written.

    A truncated (unterminated) last line is skipped with a warning; a broken
    line anywhere else, or one that is not a record of a model, is real
    corruption and raises ``ValueError``.
    """
    records = []
    for number, line in enumerate(read_text(jsonl_path).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{jsonl_path}:{number}: invalid JSON: {exc.msg}") from None
        if not isinstance(record, dict) or not isinstance(record.get("name"), str):
            raise ValueError(f"{jsonl_path}:{number}: not a samples record (no model name)")
        records.append((record, line))
    return records


def read_samples(jsonl_path: str | os.PathLike) -> list[dict]:
    """All records of ``jsonl_path`` in file order (see ``read_sample_lines``)."""
    return [record for record, _ in read_sample_lines(jsonl_path)]


# --------------------------------------------------------------------------
# Graph breaks


# One line per distinct break a runner met: the experiment it belongs to, the
# reason dynamo gave (on one line) and the user frame it broke in.
GRAPH_BREAK_COLUMNS = ["name", "backend", "mode", "dtype", "dynamic", "reason", "user_frame"]


def append_graph_breaks(csv_path: str | os.PathLike, records: list[Mapping[str, Any]]) -> None:
    """Append graph-break ``records`` (dicts keyed by ``GRAPH_BREAK_COLUMNS``)
    to the graph-break CSV beside the results CSV ``csv_path``; writes its
    header when it is new, so a run without breaks leaves a file that says so."""
    lines = []
    for record in records:
        unknown = sorted(set(record) - set(GRAPH_BREAK_COLUMNS))
        if unknown:
            raise ValueError(f"unknown graph-break columns {unknown}; known: {GRAPH_BREAK_COLUMNS}")
        lines.append(csv_line(_cell(record.get(c)) for c in GRAPH_BREAK_COLUMNS).encode("utf-8"))
    _append_lines(graph_breaks_path(csv_path), lines,
                  header=csv_line(GRAPH_BREAK_COLUMNS).encode("utf-8"))


def read_graph_break_records(csv_path: str | os.PathLike) -> list[list[str]] | None:
    """The graph-break records beside the results CSV ``csv_path`` as text
    cells (``GRAPH_BREAK_COLUMNS``); None when the file is absent (runs
    before schema version 2 wrote none); ``ValueError`` for another CSV."""
    path = graph_breaks_path(csv_path)
    if not path.exists():
        return None
    records = list(csv.reader(io.StringIO(read_text(path))))
    if records and records[0] != GRAPH_BREAK_COLUMNS:
        raise ValueError(f"{path}: not a graph-break CSV (columns {', '.join(records[0])})")
    return [r for r in records[1:] if r]


def read_graph_breaks(csv_path: str | os.PathLike) -> pd.DataFrame:
    """The graph breaks recorded beside the results CSV ``csv_path`` (no rows
    when the file is absent)."""
    records = read_graph_break_records(csv_path) or []
    return pd.DataFrame(records, columns=GRAPH_BREAK_COLUMNS, dtype=str).replace("", np.nan)
