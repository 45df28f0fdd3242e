"""The store of a run's result files: where they are, how they are written
and read back. What their columns mean, their versions and what identifies an
experiment is ``benchmarks.results.schema``; its names are re-exported here, so
``results.experiment_key`` and ``results.COLUMNS`` read as before.

A run writes six files that share a stem (``results/<stem>.*``,
``files_beside``), and two folders (``folders_beside``):

* ``<stem>.csv``   -- one row per (model, backend): ``CSV_COLUMNS``.
* ``<stem>.jsonl`` -- the raw timing samples behind each row, one JSON object
  per line (see :func:`sample_record`).
* ``<stem>.md``    -- the report rendered from the CSV (``benchmarks.results.report``).
* ``<stem>.png``   -- its speedup chart (``benchmarks.results.plots``).
* ``<stem>_graph_breaks.csv`` -- every dynamo graph break seen, with its
  reason and user frame (``GRAPH_BREAK_COLUMNS``).
* ``<stem>_compilation_metrics.csv`` -- PyTorch's file of first-call metrics
  (``benchmarks.results.pytorch_files``).
* ``<stem>.logs/`` -- the output of workers that failed (``logs_path``).
* ``<stem>.pytorch/`` -- PyTorch's per-backend files (``pytorch_folder``).

A run that replaces an earlier one's files (``--overwrite``) writes them as
``<stem>.partial.*`` (``partial_path``) until it has finished, then takes
their names (``replace_outputs``): stopped early, it leaves the earlier
files whole.

Offers the paths, ``check_output`` (an ``OutputError`` for an output that
cannot be written or would be lost), ``append_rows`` / ``read_rows`` /
``empty_frame``, ``sample_record`` / ``append_samples`` / ``read_samples``,
``append_graph_breaks`` / ``read_graph_breaks``. It stays one module
because every file shares its few low-level writers (one line per
``os.write``, headers checked under a lock) and its rules for torn lines.

Crash safety: every record is one complete line handed to a single
``os.write`` on an ``O_APPEND`` descriptor, followed by ``fsync``, so killing
the harness at any moment leaves whole lines only.  Should a file still end in
a torn line (power loss, a foreign writer), readers drop that unterminated
last line with a warning, and the next append cuts it off before writing;
``cuts(csv_path)`` says which of a run's files end so, and whose record the
cut lost.
"""
from __future__ import annotations

import csv
import fcntl
import functools
import io
import json
import math
import os
import re
import shutil
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

import numpy as np
import pandas as pd

from benchmarks.results.schema import (  # noqa: F401 - the schema, re-exported: store.X reads as schema.X
    COLUMNS, CSV_COLUMNS, Column, ExperimentKey, FAILURE_STATUSES, GRAPH_BREAK_COLUMNS,
    GROUP_COLUMNS, KEY_COLUMNS, SAME_CODE_SUITE, SAMPLE_ROLES, SCHEMA_VERSION, SETTING_COLUMNS,
    STATUS_PASS, is_missing, experiment_key, groups, is_finite, key_fields, latest,
    CAPTION_ORDER, NIGHT_FILE, SETTINGS, Experiment, Setting, caption, settings_of, measures, migrate, migrate_record, implied_inputs, pair_experiments, passed,
    PYTORCH_COLUMNS, pytorch_columns,
)

_NEWLINE = b"\n"


class OutputError(ValueError):
    """An output that cannot be written, or whose files a run would lose;
    the command lines turn it into their usage error (one line, exit 2)."""


class OutputExists(OutputError):
    """An output whose files an earlier run wrote: a run needs another
    output, --resume or --overwrite; a dry run only says so."""


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
    return [path, samples_path(path), markdown_path(path), plot_path(path), graph_breaks_path(path),
            compilation_metrics_path(path)]


def compilation_metrics_path(csv_path: str | os.PathLike) -> Path:
    """``NAME_compilation_metrics.csv``: every backend's first-call metrics, as PyTorch names the file."""
    path = Path(csv_path)
    return path.with_name(f"{path.stem}_compilation_metrics.csv")


def pytorch_folder(csv_path: str | os.PathLike) -> Path:
    """``NAME.pytorch/``: PyTorch's per-backend files of the run (``results.pytorch_files``)."""
    return Path(csv_path).with_suffix(".pytorch")


def folders_beside(csv_path: str | os.PathLike) -> list[Path]:
    """The folders a run may leave for ``csv_path``: the logs of failed workers, PyTorch's files."""
    return [logs_path(csv_path), pytorch_folder(csv_path)]


def check_output(csv_path: Path, *, overwrite: bool, resume: bool | None = None) -> None:
    """Refuse an output that cannot be written, or one whose files would be
    lost: any of ``files_beside`` it, or with ``resume`` (a command that can
    complete a run) a non-empty CSV, needs ``overwrite`` (or ``resume``)."""
    if csv_path.suffix != ".csv":
        raise OutputError(f"the output must name a .csv file, got {csv_path}")
    if csv_path.is_dir():
        raise OutputError(f"output {csv_path} is a directory")
    # The folder is made when the first file is written; here, only whether it can be.
    existing = next(p for p in [csv_path.parent, *csv_path.parent.parents] if p.exists() or p == p.parent)
    if not existing.is_dir():
        raise OutputError(f"cannot create output folder {csv_path.parent}: {existing} is not a folder")
    _check_writable(csv_path.parent, existing)
    if csv_path.exists() and not os.access(csv_path, os.W_OK):
        raise OutputError(f"output {csv_path} is not writable")
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
        raise OutputError(f"{folder} is a folder, where the run writes a file")
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
        raise OutputError(f"cannot write into {folder}: {err.strerror or err}") from None
    finally:
        for path in reversed(made):
            path.rmdir()


def clear_outputs(csv_path: str | os.PathLike) -> None:
    """Remove everything an earlier run wrote for ``csv_path``, so nothing
    stale stays beside the new files."""
    for path in files_beside(csv_path):
        path.unlink(missing_ok=True)
    for folder in folders_beside(csv_path):
        shutil.rmtree(folder, ignore_errors=True)


def partial_path(csv_path: str | os.PathLike) -> Path:
    """Where a run that replaces ``csv_path``'s files writes until it has
    finished (``results/x.csv`` -> ``results/x.partial.csv``): the earlier
    run's files stay whole until then, and an interrupted run's rows stay
    beside them under this name."""
    path = Path(csv_path)
    return path.with_name(f"{path.stem}.partial{path.suffix}")


def has_outputs(csv_path: str | os.PathLike) -> bool:
    """Whether an earlier run left any file for ``csv_path`` (its logs too)."""
    return any(p.exists() for p in [*files_beside(csv_path), *folders_beside(csv_path)])


def replace_outputs(csv_path: str | os.PathLike, new_csv: str | os.PathLike) -> None:
    """Give ``new_csv``'s files (``files_beside`` and the logs folder) the
    names of ``csv_path``'s, whose earlier files go: each by a rename, the
    CSV last, so its rows never stand beside another run's samples."""
    clear_outputs(csv_path)
    moves = [*zip(files_beside(new_csv)[1:], files_beside(csv_path)[1:]),
             *zip(folders_beside(new_csv), folders_beside(csv_path)), (Path(new_csv), Path(csv_path))]
    for source, target in moves:
        if source.exists():
            os.replace(source, target)


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
    # One write per record. A kill lands before or after it, except that
    # Linux may stop a killed process's write between pages: such a torn
    # last line is skipped by the readers and cut by the next append.
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


@dataclass(frozen=True)
class Cut:
    """A file whose last line a write cut short (a writer killed mid-write):
    which file, what kind of record was lost, and whose, as far as the
    fragment tells (``name``, ``backend``: None when cut before them)."""

    path: Path
    record: str  # "row", "samples record", "header"
    name: str | None = None
    backend: str | None = None

    def lost(self) -> str:
        """``"the row of resnet18 / eager"``: what the cut lost, in words."""
        if self.record == "header":
            return "its header, so every row"
        whose = " / ".join(x for x in (self.name, self.backend) if x)
        return f"the {self.record} of {whose}" if whose else f"one {self.record}"

    def describe(self) -> str:
        """One line: the file, that it is cut, and what that lost."""
        return f"{self.path} is cut mid-{self.record.split()[-1]}: {self.lost()} lost"


def _torn_fragment(path: Path) -> tuple[str, str] | None:
    """(the file's first line, its unterminated last line), or None when
    the file is absent or ends with a newline."""
    if not path.exists():
        return None
    text = path.read_bytes().decode("utf-8", errors="replace")
    if not text or text.endswith("\n"):
        return None
    return text.partition("\n")[0], text.rpartition("\n")[2]


def _csv_cut(path: Path) -> Cut | None:
    found = _torn_fragment(path)
    if found is None:
        return None
    header_line, fragment = found
    if fragment == header_line:  # no newline at all
        return Cut(path, "header")
    header = next(csv.reader([header_line]))
    fields = next(csv.reader([fragment]), [])
    whole = fields[:-1]  # the last field may itself be cut
    known = dict(zip(header, whole))
    return Cut(path, "row", known.get("name") or None, known.get("backend") or None)


def _json_string(key: str, fragment: str) -> str | None:
    match = re.search(rf'"{key}": "((?:[^"\\]|\\.)*)"', fragment)
    return json.loads(f'"{match.group(1)}"') if match else None


def cuts(csv_path: str | os.PathLike) -> list[Cut]:
    """The files of the run at ``csv_path`` (its CSV and samples) whose last
    line is cut short; readers drop such a line (``read_text``), this says
    what it held."""
    found = [_csv_cut(Path(csv_path))]
    torn = _torn_fragment(samples_path(csv_path))
    if torn is not None:
        fragment = torn[1]
        found.append(Cut(samples_path(csv_path), "samples record", _json_string("name", fragment),
                         _json_string("backend", fragment)))
    return [cut for cut in found if cut is not None]


# --------------------------------------------------------------------------
# CSV rows


def _cell(value: Any) -> str:
    if is_missing(value):
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


def older_header(csv_path: str | os.PathLike) -> list[str] | None:
    """The header of an older version's CSV at ``csv_path``: a proper prefix
    of ``CSV_COLUMNS`` (columns are only ever added at the end); None for
    any other file, today's included."""
    try:
        with open(csv_path, newline="", encoding="utf-8") as f:
            header = next(csv.reader(f), [])
    except (OSError, UnicodeDecodeError, csv.Error):
        return None
    if header and len(header) < len(CSV_COLUMNS) and header == CSV_COLUMNS[:len(header)]:
        return header
    return None


def upgrade_header(csv_path: str | os.PathLike) -> bool:
    """Give an older version's CSV (``older_header``) today's header, its
    rows the added columns as empty cells, so that rows can be appended
    (``--resume``); its rows keep their ``schema_version``, and ``migrate``
    reads them as before. The file is replaced whole, by a rename. Whether
    it was older."""
    header = older_header(csv_path)
    if header is None:
        return False
    path = Path(csv_path)
    lines = read_text(path).splitlines(keepends=True)[1:]
    pad = "," * (len(CSV_COLUMNS) - len(header))
    text = csv_line(CSV_COLUMNS) + "".join(line[:-1] + pad + "\n" for line in lines)
    with tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=path.parent, delete=False,
                                     prefix=f".{path.name}.", suffix=".tmp") as f:
        f.write(text)
    os.replace(f.name, path)
    return True


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
    return _parsed_rows(str(csv_path), text, recorded_inputs(csv_path)).copy()


@functools.lru_cache(maxsize=128)
def _parsed_rows(csv_path: str, text: str, inputs: str | None) -> pd.DataFrame:
    """``read_rows``'s frame of ``text``, kept by the text itself: the gate
    and the power benchmark read each night's CSV again for every comparison
    the night is in (the caller gets a copy)."""
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
    return migrate(frame[CSV_COLUMNS + extra], inputs)


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


def read_sample_lines(jsonl_path: str | os.PathLike, text: str | None = None) -> list[tuple[dict, str]]:
    """Each record of ``jsonl_path`` in file order with its line as written
    (``text``: the file's text, when the caller has read it already).

    A truncated (unterminated) last line is skipped with a warning; a broken
    line anywhere else, or one that is not a record of a model, is real
    corruption and raises ``ValueError``.
    """
    records = []
    text = read_text(jsonl_path) if text is None else text
    for number, line in enumerate(text.splitlines(), start=1):
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


def read_samples(jsonl_path: str | os.PathLike, text: str | None = None) -> list[dict]:
    """All records of ``jsonl_path`` in file order (see ``read_sample_lines``),
    those of older versions in today's terms (``migrate_record``)."""
    inputs = recorded_inputs(jsonl_path)
    return [migrate_record(record, inputs) for record, _ in read_sample_lines(jsonl_path, text)]


def recorded_inputs(path: str | os.PathLike) -> str | None:
    """The inputs (fixed or random) the run behind a result file timed, as
    the runner flags recorded beside it imply: a shard's ``<stem>.json``, a
    night's ``night.json``; None when none records them (rows of schema
    version 6 and later say it themselves)."""
    path = Path(path)
    for record in (path.with_suffix(".json"), path.parent / NIGHT_FILE):
        try:
            meta = json.loads(record.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        runner = meta.get("runner") if isinstance(meta, dict) else None
        flags = runner.get("flags") if isinstance(runner, dict) else None
        if isinstance(flags, list):
            return implied_inputs(flags)
    return None


# --------------------------------------------------------------------------
# Graph breaks




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
