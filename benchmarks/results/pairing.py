"""Each run's view of its experiments, read from its files: what the gate
compares (``benchmarks.results.compare``).

``load_run(csv)`` gives, per (model, backend), a ``Side``: the row's status,
settings, latency and speedup, and the raw backend and baseline samples of the
same repeats (whose ratios the gate judges); ``load_baseline`` pools several
complete runs into one reference; ``paired_ratios``, ``cpu_label`` /
``cpu_change`` and ``run_labels`` / ``run_tag`` name what was run and where.
"""
from __future__ import annotations

import functools
import os
import warnings
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from benchmarks.results import store

SETTINGS = store.SETTING_COLUMNS
COMMIT_CHARS = 7  # a commit as a header shows it
NAN = float("nan")


@dataclass(frozen=True)
class Side:
    """One run's view of a (name, backend) pair: its row and raw samples."""

    status: str
    settings: tuple
    abs_latency_ms: float
    speedup: float
    backend_s: tuple[float, ...] = ()
    baseline_s: tuple[float, ...] = ()
    error: str = ""
    cpu: str = ""  # "" when the row did not record it (schema version < 5)
    # The samples each worker process gave, in order (schema version 6); ()
    # when not recorded: the samples of one process, or of runs pooled
    # without it.
    process_repeats: tuple[int, ...] = ()
    # A pooled side: the runs left out of the pool (``load_baseline``'s
    # ``leave_out`` and ``loaded_cores``), each as "name (+18%)", its median ratio
    # against the pool's, or "name (loaded: 0.68 cores)".
    left_out: tuple[str, ...] = ()
    # How many cores other processes kept busy while the row was timed
    # (schema version 10; nan: not recorded); a pooled side's, the most of
    # its runs'.
    other_cores: float = NAN
    # Each process's ``other_cores``, in the order of ``process_repeats``
    # (schema version 11; a version-10 row's mean for each; () unknown).
    process_loads: tuple[float, ...] = ()
    # A pooled side none of whose runs ran on the CPU asked for
    # (``load_baseline``'s ``cpus``): theirs, and no samples.
    other_cpu: str = ""
    # A pooled side: how many of ``process_repeats`` each run gave, in order
    # (() for one run: all of them).
    run_processes: tuple[int, ...] = ()

    @property
    def passed(self) -> bool:
        return self.status == store.STATUS_PASS

    @property
    def latencies_s(self) -> tuple[float, ...]:
        return tuple(s for s in self.backend_s if store.is_finite(s) and s > 0)

    @property
    def paired(self) -> bool:
        """Baseline and backend samples come from the same repeats."""
        return bool(self.backend_s) and len(self.backend_s) == len(self.baseline_s)

    @property
    def ratios(self) -> tuple[float, ...]:
        """backend_i / baseline_i for each repeat where both are usable."""
        if not self.paired:
            return ()
        return _ratios(self.backend_s, self.baseline_s)

    @property
    def by_process(self) -> bool:
        """The paired samples say which process each came from."""
        return self.paired and bool(self.process_repeats) and sum(self.process_repeats) == len(self.backend_s)

    @property
    def process_ratios(self) -> tuple[float, ...]:
        """The median backend/baseline ratio of each worker process (those
        with a usable pair); ``()`` when the samples do not say which
        process they came from (``by_process``)."""
        return tuple(m for m in self._process_medians() if m is not None)

    def _process_medians(self) -> list[float | None]:
        """Each process's median ratio, None for one with no usable pair
        (``[]`` when the samples do not say their processes)."""
        if not self.by_process:
            return []
        ends = np.cumsum(self.process_repeats)
        return [float(np.median(r)) if (r := _ratios(self.backend_s[end - n:end], self.baseline_s[end - n:end]))
                else None for n, end in zip(self.process_repeats, ends)]

    @property
    def process_ratios_by_run(self) -> tuple[tuple[float, ...], ...]:
        """``process_ratios`` grouped by the run they came from (one group
        for one run); ``()`` when unknown."""
        counts = self.run_processes or (len(self.process_repeats),)
        if not self.by_process or sum(counts) != len(self.process_repeats):
            return ()
        medians, ends = self._process_medians(), np.cumsum(counts)
        return tuple(tuple(m for m in medians[end - count:end] if m is not None) for count, end in zip(counts, ends))

    @property
    def median_ratio(self) -> float:
        """The median of what the test compares: per-process medians when
        known, else per-repeat ratios (nan without paired samples)."""
        units = self.process_ratios or self.ratios
        return float(np.median(units)) if units else NAN

    def quiet(self, loaded_cores: float) -> tuple["Side", tuple[float, ...]]:
        """This side without its processes timed while other processes kept
        more than ``loaded_cores`` busy, and their loads (``()``: none left
        out, or the side does not say each process's load)."""
        if not (self.by_process and len(self.process_loads) == len(self.process_repeats)):
            return self, ()
        busy = tuple(x for x in self.process_loads if x > loaded_cores)
        if not busy:
            return self, ()
        keep = [not x > loaded_cores for x in self.process_loads]
        starts = np.cumsum((0, *self.process_repeats[:-1]))
        chosen = [(start, n) for start, n, k in zip(starts, self.process_repeats, keep) if k]
        runs = self.run_processes
        if runs and sum(runs) == len(keep):  # how many of each run's processes stay
            runs = tuple(int(n) for n in np.bincount(np.repeat(np.arange(len(runs)), runs), weights=keep,
                                                      minlength=len(runs)))
        return replace(self, backend_s=tuple(x for s, n in chosen for x in self.backend_s[s:s + n]),
                       baseline_s=tuple(x for s, n in chosen for x in self.baseline_s[s:s + n]),
                       process_repeats=tuple(n for _, n in chosen), run_processes=runs,
                       process_loads=tuple(x for x, k in zip(self.process_loads, keep) if k)), busy


def _ratios(backend_s, baseline_s) -> tuple[float, ...]:
    return tuple(b / a for b, a in zip(backend_s, baseline_s)
                 if store.is_finite(b) and store.is_finite(a) and a > 0 and b > 0)


# --------------------------------------------------------------------------
# Loading


def experiment_key(row: Mapping[str, Any]) -> store.ExperimentKey:
    """The experiment a CSV row or a samples record belongs to: rows pair
    across runs by ``store.KEY_COLUMNS`` (where the key is defined); the
    settings that make a pair ``not comparable`` are ``SETTINGS``."""
    return store.experiment_key(row)


def _status(row: pd.Series) -> str:
    if store.passed(row):
        return store.STATUS_PASS
    return "unknown" if pd.isna(row["status"]) else str(row["status"])


def _number(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return NAN


def _samples(jsonl_path: Path, text: str | None
             ) -> dict[tuple, tuple[tuple[float, ...], tuple[int, ...], tuple[float, ...]]]:
    """(samples, samples per process, each process's load) per (experiment
    key, role) of the samples file's ``text``; the last record of each
    wins; ``()`` per process when the record does not say (schema version
    < 6), and ``()`` loads when it does not say them (version < 11; nan for
    a process that did not record its own).

    A missing file (``text`` None) is not an error: older runs had none;
    their rows are ``inconclusive``.  Non-numbers stay in place as nan so
    that baseline and backend samples keep their pairing by position.
    """
    if text is None:
        return {}
    found = {}
    for number, record in enumerate(store.read_samples(jsonl_path, text), start=1):
        if not isinstance(record, dict) or not {"name", "backend"} <= set(record):
            raise ValueError(f"{jsonl_path}: record {number} is not a samples record (no name/backend)")
        role = record.get("role")
        if role not in store.SAMPLE_ROLES:
            continue
        values = record.get("samples_s") or ()
        if not isinstance(values, list):
            raise ValueError(f"{jsonl_path}: record {number}: samples_s is not a list")
        sizes = record.get("process_repeats") or ()
        sizes = tuple(int(n) for n in sizes) if isinstance(sizes, list) and all(
            isinstance(n, int) and n >= 0 for n in sizes) else ()
        loads = record.get("process_other_cores") or ()
        loads = tuple(_number(x) for x in loads) if isinstance(loads, list) and len(loads) == len(sizes) else ()
        found[(*experiment_key(record), role)] = (tuple(_number(s) for s in values), sizes, loads)
    return found


def cpu_label(row: Mapping[str, Any]) -> str:
    """``"Intel(R) Xeon(R) Processor, 2 CPUs"``: the machine a row ran on;
    ``""`` for a row that did not record it (schema version < 5)."""
    model = row.get("cpu_model")
    count = row.get("cpu_count")
    model = model.strip() if isinstance(model, str) else ""
    count = f"{int(count)} CPUs" if store.is_finite(count) else ""
    if not (model or count):
        return ""
    return ", ".join([model or "unknown CPU"] + ([count] if count else []))


@contextmanager
def cut_lines_said_elsewhere():
    """Readers' warnings of a torn last line silenced: ``store.cuts`` names
    the lost record in the comparison's own words instead."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*truncated last line", category=RuntimeWarning)
        yield


def load_run(csv_path: str | os.PathLike) -> tuple[dict[tuple[str, str], Side], pd.DataFrame]:
    """A run's ``Side`` per experiment, and its latest rows."""
    path = Path(csv_path)
    jsonl = store.samples_path(path)
    with cut_lines_said_elsewhere():
        text = store.read_text(path)
        samples_text = store.read_text(jsonl) if jsonl.exists() else None
    run, df = _run_of(str(path), text, samples_text, store.recorded_inputs(path))
    return dict(run), df.copy()


@functools.lru_cache(maxsize=128)
def _run_of(csv_path: str, text: str, samples_text: str | None, inputs: str | None
            ) -> tuple[dict[tuple[str, str], Side], pd.DataFrame]:
    """``load_run`` of the files' texts, kept by the texts themselves (and
    the inputs their recorded flags imply): the gate and the power benchmark
    load each night again for every comparison the night is in."""
    del inputs  # part of the key only: read_rows and read_samples read it themselves
    with cut_lines_said_elsewhere():
        df = store.latest(store.read_rows(csv_path, text))
        samples = _samples(store.samples_path(csv_path), samples_text)
    run = {}
    for _, row in df.iterrows():
        key = experiment_key(row)
        # A version-1 samples record names only its (name, backend).
        backend_s, backend_n, loads = samples.get((*key, "backend"),
                                                  samples.get((*key.pair_only(), "backend"), ((), (), ())))
        baseline_s, baseline_n, _ = samples.get((*key, "baseline"),
                                                samples.get((*key.pair_only(), "baseline"), ((), (), ())))
        other_cores = _number(row["other_cores"]) if "other_cores" in row else NAN
        if not loads and store.is_finite(other_cores):
            loads = (other_cores,) * len(backend_n)  # version 10: the row's mean, each process at it
        run[key] = Side(
            status=_status(row),
            settings=key.settings,
            abs_latency_ms=float(row["abs_latency"]) if store.is_finite(row["abs_latency"]) else NAN,
            speedup=float(row["speedup"]) if store.is_finite(row["speedup"]) else NAN,
            backend_s=backend_s,
            baseline_s=baseline_s,
            process_repeats=backend_n if backend_n == baseline_n else (),
            # Optional column (schema v1 files lack it): the first line of a failure.
            error=str(row["error"]) if "error" in row and not pd.isna(row["error"]) else "",
            cpu=cpu_label(row),
            other_cores=other_cores,
            process_loads=loads if backend_n == baseline_n else (),
        )
    return run, df


def paired_ratios(csv_path: str | os.PathLike) -> dict[store.ExperimentKey, tuple[float, ...]]:
    """The per-repeat backend/baseline ratios of each experiment of a run."""
    return {key: side.ratios for key, side in load_run(csv_path)[0].items()}


def _parted(pairs: list[tuple[Side, str]], out: Callable[[Side], Any]
            ) -> tuple[list[tuple[Side, str]], list[tuple[Side, str]]]:
    """(the (side, name) pairs ``out`` keeps, those it leaves out), in order."""
    return [p for p in pairs if not out(p[0])], [p for p in pairs if out(p[0])]


def _pool(sides: Sequence[Side], names: Sequence[str], leave_out: float | None = None,
          loaded_cores: float | None = None, cpu: str = "") -> Side:
    """One experiment over several runs, oldest first: the newest run's row
    (status, settings, CSV numbers) with the paired samples of every run in
    which it passed with those settings, concatenated -- pairing stays within
    each run, so the ratios are exactly the union of the runs' ratios.

    ``leave_out`` (a fraction): of three or more such runs, one whose median
    ratio lies further than that from the median of the runs' medians is
    left out (a night measured on a loaded machine, or before a change since
    accepted), as long as more than half of them stay; ``names`` (the
    runs', one per side) name them in ``Side.left_out``.

    ``loaded_cores``: a run timed while other processes kept more cores
    than that busy (``Side.other_cores``) is left out first, as long as one
    run measured quiet stays -- a run that says each process's load
    (``process_loads``) stays, its loaded processes left out where it is
    judged (``Side.quiet``); the pooled side's ``other_cores`` is the most
    of the runs it kept (a loaded one only when no quiet one was left).

    ``cpu``: the CPU of the run judged against this pool: of two runs or
    more, those that ran on another CPU (both known) are left out first --
    a paired ratio moves between machines -- and when none ran on
    it, the side has no samples and says whose CPU it has (``other_cpu``)."""
    newest = sides[-1]
    usable = [(s, n) for s, n in zip(sides, names) if s.passed and s.paired and s.settings == newest.settings]
    if not newest.passed or not usable:
        return newest
    left_out: list[str] = []
    if cpu and len(usable) > 1:
        usable, other = _parted(usable, lambda s: s.cpu and s.cpu != cpu)
        if not usable:
            return replace(newest, backend_s=(), baseline_s=(), process_repeats=(), process_loads=(),
                           other_cpu="; ".join(sorted({s.cpu for s, _ in other})))
        left_out = [f"{n} (CPU {s.cpu})" for s, n in other]
    quiet_only = False  # runs weighed by the processes the comparison keeps
    if loaded_cores is not None:
        # A run that says each process's load keeps its quiet processes (the
        # comparison leaves the others out: ``Side.quiet``), as long as the
        # pool keeps which process each sample came from; else it is loaded
        # when any of its processes was.
        keeps = all(s.by_process for s, _ in usable)
        quiet, busy = _parted(usable, lambda s: (any(x > loaded_cores for x in s.process_loads) and not keeps
                                                 if s.process_loads else s.other_cores > loaded_cores))
        if busy and quiet:
            left_out += [f"{n} (loaded: {max(s.process_loads or (s.other_cores,)):.2f} cores)" for s, n in busy]
            usable = quiet
        quiet_only = keeps
    if leave_out is not None:
        # Far from the others by its processes the comparison keeps: a run
        # with none left (every process loaded) is not weighed.
        medians = {i: (s.quiet(loaded_cores)[0] if quiet_only else s).median_ratio
                   for i, (s, _) in enumerate(usable)}
        medians = {i: m for i, m in medians.items() if store.is_finite(m)}
        middle = float(np.median(list(medians.values()))) if len(medians) >= 3 else NAN
        far = {i for i, m in medians.items() if abs(m / middle - 1) > leave_out}
        if 2 * len(far) < len(medians):
            left_out += [f"{n} ({medians[i] / middle - 1:+.0%})" for i, (s, n) in enumerate(usable) if i in far]
            usable = [pair for i, pair in enumerate(usable) if i not in far]
    kept = [s for s, _ in usable]
    # Each run is its processes' samples; a run that did not record its
    # processes leaves the pool without them (then judged per repeat).
    processes = (tuple(n for s in kept for n in s.process_repeats)
                 if all(s.by_process for s in kept) else ())
    loads = [s.other_cores for s in kept if store.is_finite(s.other_cores)]
    # Each process's load; nan (not left out) for a run that did not record it.
    each = tuple(x for s in kept for x in (s.process_loads if len(s.process_loads) == len(s.process_repeats)
                                           else (NAN,) * len(s.process_repeats))) if processes else ()
    each = each if any(store.is_finite(x) for x in each) else ()
    return replace(newest, backend_s=tuple(x for s in kept for x in s.backend_s),
                   baseline_s=tuple(x for s in kept for x in s.baseline_s),
                   cpu="; ".join(sorted({s.cpu for s in kept if s.cpu})), process_repeats=processes,
                   run_processes=tuple(len(s.process_repeats) for s in kept) if processes else (),
                   left_out=tuple(left_out), other_cores=max(loads) if loads else NAN, process_loads=each)


# How a run is read: ``load_run`` (latencies per repeat), or a view of one
# metric (``benchmarks.results.policies``: first calls, peak memory).
Loader = Callable[[str | os.PathLike], tuple[dict[store.ExperimentKey, Side], pd.DataFrame]]


def load_baseline(csv_paths: Sequence[str | os.PathLike], load: Loader = load_run,
                  leave_out: float | None = None, loaded_cores: float | None = None,
                  cpus: Mapping[Any, str] | None = None
                  ) -> tuple[dict[store.ExperimentKey, Side], list[pd.DataFrame]]:
    """The old side: one run, or several pooled (``_pool``; ``leave_out``:
    its rule for a run far from the others; ``cpus``: per experiment, the CPU
    of the run judged against it; ``loaded_cores``: for a run timed on a
    loaded machine).  Its experiments are the
    newest run's, so an experiment dropped on purpose is judged ``removed``
    once, against the run that last had it, not again for as long as an
    older run in the pool still holds it.  ``load`` reads one run (default
    ``load_run``)."""
    loaded = [load(path) for path in csv_paths]
    names = _short_names(csv_paths)
    newest = loaded[-1][0]
    pooled = {}
    for key in newest:
        having = [(run, name) for (run, _), name in zip(loaded, names) if key in run]
        pooled[key] = _pool([run[key] for run, _ in having], [name for _, name in having], leave_out,
                            loaded_cores, (cpus or {}).get(key, ""))
    return pooled, [df for _, df in loaded]


def _short_names(paths: Sequence[str | os.PathLike]) -> list[str]:
    """Each run by its folder (a night's date) when the folders differ,
    else by its file name."""
    paths = [Path(p) for p in paths]
    folders = [p.parent.name for p in paths]
    return folders if len(set(folders)) == len(folders) and all(folders) else [p.name for p in paths]


def cpus_of(run: Mapping[Any, Side]) -> set[str]:
    return {cpu for side in run.values() for cpu in side.cpu.split("; ") if cpu}


def cpu_change(old: Mapping[Any, Side], new: Mapping[Any, Side]) -> str:
    """``"A, 2 CPUs -> B, 4 CPUs"`` when the machines of the two sides differ;
    ``""`` when they match or a side did not record its CPU."""
    old_cpus, new_cpus = cpus_of(old), cpus_of(new)
    if not (old_cpus and new_cpus) or old_cpus == new_cpus:
        return ""
    return f"{'; '.join(sorted(old_cpus))} -> {'; '.join(sorted(new_cpus))}"


# --------------------------------------------------------------------------
# Naming the runs


def run_tag(df: pd.DataFrame) -> str:
    """``"2026-01-02, commit 1a2b3c4"``: the day the run started (its rows'
    ``timestamp``) and the commit it ran, when the rows carry them."""
    parts = []
    if "timestamp" in df:
        days = df["timestamp"].dropna().astype(str).str[:10]
        if not days.empty:
            parts.append(days.min())
    if "commit" in df:
        commits = sorted({str(c)[:COMMIT_CHARS] for c in df["commit"].dropna() if str(c) != "unknown"})
        if commits:
            # Shards merged from different checkouts: worth seeing in a header.
            parts.append(("commit " if len(commits) == 1 else "commits ") + ", ".join(commits))
    return ", ".join(parts)


def run_labels(old_csv: str | os.PathLike | Sequence[str | os.PathLike], new_csv: str | os.PathLike,
               old_tag: str = "", new_tag: str = "") -> tuple[str, str]:
    """Names for the two runs that tell them apart: each path relative to
    the folder both are in (``2026-01-01/performance.csv``), plus the
    run's tag (date, commit) when its rows carry one.  Several old runs
    (a pooled baseline) are named together: ``pooled 2 runs: a.csv, b.csv``."""
    olds = [old_csv] if isinstance(old_csv, (str, os.PathLike)) else list(old_csv)
    paths = [Path(p).resolve() for p in [*olds, new_csv]]
    if len(set(paths)) == 1:
        labels = [p.name for p in paths]
    else:
        parent = Path(os.path.commonpath(paths))
        labels = [str(p.relative_to(parent)) for p in paths]
    old_label = labels[0] if len(olds) == 1 else f"pooled {len(olds)} runs: " + ", ".join(labels[:-1])
    return tuple(f"{label} ({tag})" if tag else label for label, tag in zip((old_label, labels[-1]),
                                                                             (old_tag, new_tag)))
