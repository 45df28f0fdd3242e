"""Combine the result files of several runs (CI shards) into one run's files.

``python runner.py merge OUT.csv IN1.csv IN2.csv ... [--overwrite]`` reads
each input CSV and the raw samples beside it (``IN.jsonl``), and writes
``OUT.csv``, ``OUT.jsonl`` and ``OUT.md`` in the form one run over all their
models writes them: the same header (``store.CSV_COLUMNS``), rows in model
order (a stable sort by name, as a single run runs its models sorted, each
model's rows keeping their order), the samples in the same order, and the
report and plot a run renders at its end (``report.finish``: ``OUT.md``
and ``OUT.png``). Cells are copied as text, so numbers come out exactly as
the shards wrote them.

Rules:

* Duplicates are an error. An experiment (``store.experiment_key``: suite,
  name, backend, baseline, dev, batch_size, mode, dtype, dynamic) found
  in more than one input means the shards overlapped, or a file was given
  twice: which measurement to keep can't be decided here, so nothing is
  written and the exit code is 2, with the duplicates named. (Rows repeated
  *within* one input, a re-run appended to it, are kept as they are; the
  report reads the last, as it does for a single run.)
* Inputs of an ``--accuracy`` run and of a performance run are not merged
  (``store.measures``): one file holds verdicts or speedups, not both.
* OUT (or the ``.jsonl`` / ``.md`` beside it) is not replaced without
  ``--overwrite``, and OUT can never be one of the inputs.
* An input without its ``.jsonl`` is merged with a warning: its rows then
  have no raw samples, and ``compare`` falls back to their ``abs_latency``.
* The graph-break CSVs beside the inputs (``IN_graph_breaks.csv``) are
  joined into OUT's, in model order; inputs from before them have none.
* A torn last line (a file cut short) is dropped with a warning, as
  ``benchmarks.results.store`` does when reading.
* Bad input (a missing file, one that isn't a results CSV, a broken samples
  line, an output that can't be written): one line on stderr, exit code 2,
  nothing written.

The data files are written to temporary names and renamed into place,
samples before the CSV before the report, so no reader sees half a file.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from benchmarks.results import store
from benchmarks.usage import Parser, UsageError, guarded

PROG = "runner.py merge"
# What makes two rows the same measurement: store.experiment_key.
MAX_LISTED = 5  # duplicates named in the error; the rest are counted


def build_parser() -> argparse.ArgumentParser:
    p = Parser(
        prog=PROG,
        description="Merge the CSVs (and the .jsonl samples beside them) of several runs, "
                    "e.g. --total-partitions shards, into one CSV + JSONL + markdown report.",
        epilog="An experiment (name, backend and settings: suite, baseline, dev, batch_size, mode, "
               "dtype, dynamic) found in more than one input is "
               "an error (exit code 2, nothing written): re-run or drop the overlapping shard.")
    p.add_argument("output", metavar="OUT.csv", help="the merged CSV; .jsonl and .md beside it")
    p.add_argument("inputs", nargs="+", metavar="IN.csv", help="the CSVs to merge, in any order")
    p.add_argument("--overwrite", action="store_true", help="replace an existing OUT")
    return p


@dataclass
class Shard:
    """One input: its rows as text cells keyed by ``CSV_COLUMNS``, and its
    samples as (model name, raw JSON line)."""

    path: Path
    rows: list[dict[str, str]] = field(default_factory=list)
    samples: list[tuple[str, str]] = field(default_factory=list)
    has_samples: bool = True
    graph_breaks: list[list[str]] | None = None  # its graph-break CSV's records, if it has one


# --------------------------------------------------------------------------
# Reading


def _warn(message: str) -> None:
    print(f"{PROG}: warning: {message}", file=sys.stderr)


@contextmanager
def _reading(path: Path):
    """Read through ``benchmarks.results.store``: its errors become one usage error."""
    if not path.exists():
        raise UsageError(f"{path}: no such file")
    if not path.is_file():
        raise UsageError(f"{path}: not a file")
    try:
        yield
    except OSError as err:
        raise UsageError(f"{err.filename or path}: cannot read it: {err.strerror or err}") from None
    except UnicodeDecodeError:
        raise UsageError(f"{path}: not a text file (invalid UTF-8)") from None
    except (ValueError, TypeError) as err:  # pandas' parse errors are ValueErrors
        detail = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        if not detail.startswith(str(path)):
            detail = f"{path}: not a results CSV: {detail}"
        raise UsageError(detail) from None


def read_shard(path: Path) -> Shard:
    """Read and check one input CSV and the files beside it."""
    shard = Shard(Path(path))
    with _reading(shard.path):
        found = store.damage(shard.path)  # the one report of damage, as every command gives it
    worst = store.unreadable(found)
    if worst is not None:
        raise UsageError(worst.describe())
    for damage in found:  # a cut last line, an empty file: what it lost is said, the rest merged
        _warn(damage.describe())
    with _reading(shard.path):
        shard.rows = store.read_cells(shard.path)
    samples = store.samples_path(shard.path)
    if samples.exists():
        with _reading(samples):
            shard.samples = [(record["name"], line) for record, line in store.read_sample_lines(samples)]
    else:
        shard.has_samples = False
    breaks = store.graph_breaks_path(shard.path)
    if breaks.exists():
        with _reading(breaks):
            shard.graph_breaks = store.read_graph_break_records(shard.path)
    return shard


# --------------------------------------------------------------------------
# Merging


def duplicates(shards: Sequence[Shard]) -> dict[store.ExperimentKey, list[Path]]:
    """Each experiment found in more than one input, with the inputs it is in."""
    where: dict[store.ExperimentKey, list[Path]] = {}
    for shard in shards:
        for key in dict.fromkeys(store.experiment_key(row) for row in shard.rows):
            where.setdefault(key, []).append(shard.path)
    return {key: paths for key, paths in where.items() if len(paths) > 1}


def _describe_duplicates(found: dict[store.ExperimentKey, list[Path]]) -> str:
    listed = []
    for key, paths in list(found.items())[:MAX_LISTED]:
        settings = ", ".join(f"{c} {v}" for c, v in zip(store.SETTING_COLUMNS, key.settings)
                             if v is not None)
        listed.append(f"{key.name}/{key.backend} ({settings}) in {', '.join(map(str, paths))}")
    more = f"; and {len(found) - MAX_LISTED} more" if len(found) > MAX_LISTED else ""
    return (f"{len(found)} result(s) in more than one input, nothing written: "
            f"{'; '.join(listed)}{more}")


def _check_one_measure(shards: Sequence[Shard]) -> None:
    """Accuracy verdicts and speedups do not share a file (``store.measures``)."""
    accuracy = [s.path for s in shards if any(store.measures(r) == "accuracy" for r in s.rows)]
    speedups = [s.path for s in shards if any(r.get("speedup", "").strip() for r in s.rows)]
    if accuracy and speedups:
        raise UsageError(f"{accuracy[0]} holds --accuracy rows and {speedups[0]} --performance rows; "
                         "merge the runs of each measure apart, nothing written")


def merge(shards: Sequence[Shard]) -> tuple[list[dict[str, str]], list[str]]:
    """The merged rows and sample lines, in model order (stable by name)."""
    _check_one_measure(shards)  # first: runs of two modes overlap by their keys too
    found = duplicates(shards)
    if found:
        raise UsageError(_describe_duplicates(found))
    rows = sorted((row for shard in shards for row in shard.rows), key=lambda row: row["name"])
    samples = sorted((s for shard in shards for s in shard.samples), key=lambda s: s[0])
    return rows, [line for _, line in samples]


# --------------------------------------------------------------------------
# Writing


def check_output(out: Path, inputs: Sequence[Path], overwrite: bool) -> None:
    if any(out.resolve() == p.resolve() for p in inputs):
        raise UsageError(f"OUT {out} is also an input; merge into a new file")
    try:
        store.check_output(out, overwrite=overwrite)
    except store.OutputError as err:
        raise UsageError(str(err)) from None


def write(out: Path, rows: Sequence[dict[str, str]], sample_lines: Sequence[str],
          graph_breaks: Sequence[list[str]] | None = None,
          logs: Sequence[Path] = ()) -> str:
    """Write OUT.jsonl, the graph-break CSV (when an input had one), then
    OUT.csv, each renamed into place, the inputs' kept logs (``logs``, their
    folders) into OUT's, then the report and plot as a run does; returns the
    console report."""
    # Imported only once the input is good: it loads matplotlib.
    from benchmarks.results import report

    csv_text = store.csv_line(store.CSV_COLUMNS) + "".join(
        store.csv_line([row[c] for c in store.CSV_COLUMNS]) for row in rows)
    samples_text = "".join(line + "\n" for line in sample_lines)
    store.clear_outputs(out)  # nothing stale of an overwritten run stays beside it
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise UsageError(f"cannot create output folder {out.parent}: {err.strerror or err}") from None
    pending = [(store.samples_path(out), samples_text), (out, csv_text)]
    if graph_breaks is not None:
        breaks_text = "".join(store.csv_line(r) for r in [store.GRAPH_BREAK_COLUMNS, *graph_breaks])
        pending.insert(1, (store.graph_breaks_path(out), breaks_text))
    temporary = [path.with_name(f".{path.name}.merge-tmp") for path, _ in pending]
    try:
        for tmp, (_, text) in zip(temporary, pending):
            with open(tmp, "w", encoding="utf-8", newline="") as f:
                f.write(text)
                f.flush()
                os.fsync(f.fileno())
        for tmp, (path, _) in zip(temporary, pending):
            os.replace(tmp, path)
        _copy_logs(logs, store.logs_path(out))
        return report.finish(out)
    except OSError as err:
        raise UsageError(f"cannot write {err.filename or out}: {err.strerror or err}") from None
    finally:
        for tmp in temporary:
            tmp.unlink(missing_ok=True)


def _copy_logs(folders: Sequence[Path], into: Path) -> None:
    """The shards' kept logs beside the merged file, so its report names
    each failed row's log as the shard's did (a model is in one shard)."""
    for folder in folders:
        for log in sorted(folder.glob("*.log")) if folder.is_dir() else ():
            into.mkdir(parents=True, exist_ok=True)
            shutil.copy2(log, into / log.name)


# --------------------------------------------------------------------------
# Command line


def run(out: Path, inputs: Sequence[Path], overwrite: bool = False) -> tuple[int, int, str]:
    """Merge ``inputs`` into ``out``; returns the number of rows and of
    sample records written, and the console report.

    Raises ``UsageError`` on bad input, before anything is written.
    """
    seen: dict[Path, Path] = {}
    for path in inputs:
        if path.resolve() in seen:
            raise UsageError(f"{path} is given twice")
        seen[path.resolve()] = path
    check_output(out, inputs, overwrite)  # cheap checks first: nothing read yet
    # Then every input is read and checked before anything is written.
    shards = [read_shard(path) for path in inputs]
    for shard in shards:
        if not shard.has_samples:
            _warn(f"{store.samples_path(shard.path)} not found; "
                  f"the rows of {shard.path} are merged without raw samples")
    rows, sample_lines = merge(shards)
    with_breaks = [s for s in shards if s.graph_breaks is not None]
    # Graph breaks in model order, as the rows (their first cell is the model).
    breaks = sorted((r for s in with_breaks for r in s.graph_breaks), key=lambda r: r[0])
    console = write(out, rows, sample_lines, breaks if with_breaks else None,
                    [store.logs_path(s.path) for s in shards])
    return len(rows), len(sample_lines), console


def main(argv: Sequence[str] | None = None) -> int:
    """``runner.py merge OUT.csv IN.csv...``: 0 when merged, 2 on bad input."""
    def body() -> int:
        args = build_parser().parse_args(argv)
        out, inputs = Path(args.output), [Path(p) for p in args.inputs]
        n_rows, n_samples, console = run(out, inputs, overwrite=args.overwrite)
        print(console, end="")
        print(f"\nmerged {n_rows} row(s) and {n_samples} sample record(s) from {len(inputs)} input(s) "
              f"into {out}; wrote {', '.join(str(p) for p in store.files_beside(out) if p.exists())}",
              file=sys.stderr)
        return 0

    return guarded(PROG, body)

if __name__ == "__main__":
    sys.exit(main())
