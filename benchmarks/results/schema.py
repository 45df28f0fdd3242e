"""The schema of a run's result files: what each column is, its history, and
what identifies an experiment.

Offers ``SCHEMA_VERSION`` (and its history below), ``COLUMNS`` /
``CSV_COLUMNS``, the status constants, ``migrate`` (rows of older versions in
today's terms), ``experiment_key`` (what identifies an experiment: resume,
merge, compare and the report all use it), the reading rules every reader
shares (``passed``, ``measures``, ``groups``, ``latest``) and
``GRAPH_BREAK_COLUMNS``. Where the files are and how they are written and read
is ``benchmarks.results.store``, which re-exports these names.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from collections import namedtuple
from typing import Any, Callable, Iterable, Mapping

import pandas as pd

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
#      A new mode value, no new column: training_step_graphs, the training
#      step compiled as written (--compile-step=graphs: dynamo breaks it at
#      backward()), while training_step rows are now the step compiled as one
#      graph; training_step rows written before are the step as written.
# 6 -- a cold first call is the median of several fresh processes
#      (--cold-start-repeat): compilation_latency_low and _high (their range)
#      and cold_starts (how many). Cold rows of versions 3-5 came from one
#      process each: read with the three empty, not as a range of one.
#      Samples records keep each process's seconds (cold_first_calls_s).
# 7 -- rows say which inputs were timed: inputs (fixed: the same inputs every
#      repeat; random: fresh ones drawn before each, --randomize-input), part
#      of the experiment's key.  Rows and samples records of versions 1-6 did
#      not record it: read as the run's recorded flags imply (a night's
#      night.json keeps its runner flags), else empty (unknown), never
#      paired with a row that says which inputs it timed.
# 8 -- timed repeats spread over worker processes: processes (the fresh
#      worker processes a model's repeats ran in; repeat is then the repeats
#      in each).  Samples records: process_repeats, the samples each process
#      gave, in order.  Rows of versions 1-7 ran in one process: read with
#      processes empty, their samples one process.
# 9 -- PyTorch's dynamo harness's names where the meaning is the same, so
#      that a script written for its CSVs reads ours: unique_graphs (our
#      dynamo_graphs), eager_peak_mem and dynamo_peak_mem (the reference's
#      and the backend's peak memory in PyTorch's unit, GB of 10**9 bytes)
#      and compression_ratio (eager_peak_mem / dynamo_peak_mem), all made
#      from columns a row holds (``pytorch_columns``).  Rows of versions 1-8
#      are read with them made the same way from the columns they recorded
#      (empty where those are: version 1 recorded no memory).  --resume on
#      an older file gives it today's header first (store.upgrade_header).
# 10 -- rows say how busy other processes kept the machine while they were
#      timed: other_cores (``benchmarks.run.machine_load``; the mean over the
#      row's processes).  Rows of versions 1-9 did not record it: read empty
#      (unknown), not as a quiet machine.
# 11 -- samples records of a row spread over processes say each process's
#      load: process_other_cores (in the order of process_repeats; null
#      where a process did not record it), so the gate leaves a loaded
#      process out of the units it tests.  Records of version 10 are read
#      with each process at the row's other_cores (their mean).
# 12 -- PyTorch's suites and the rest of its columns: profile (--profile
#      small; empty for the device's profile, as on every older row, part of
#      the experiment's key), and what PyTorch's common.py writes under these
#      names: calls_captured, unique_graph_breaks, fallbacks_to_eager,
#      autograd_captures, autograd_compiles, cache_lookup_latency; and
#      iterations_per_run (--iterations-per-run; empty for 1, as every older
#      row timed, part of the key).  Rows of versions 1-11 did not record
#      the statistics: read empty (unknown), never 0.
SCHEMA_VERSION = 12

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
    # Compiler metrics (benchmarks.run.probes); XLA ones are empty for host runs.
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
    Column("mode", "str", required=False),  # inference | training | training_step (whole step compiled as one graph) | training_step_graphs (as written)
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
    # Version 6: cold first calls over several processes.
    Column("compilation_latency_low", "float64", required=False),  # s; fastest of the cold processes
    Column("compilation_latency_high", "float64", required=False),  # s; slowest of them
    Column("cold_starts", "Int64", required=False),  # fresh processes behind a cold compilation_latency
    # Version 7: the inputs.
    Column("inputs", "str", required=False),  # fixed | random (--randomize-input)
    # Version 8: processes.
    Column("processes", "Int64", required=False),  # worker processes the repeats ran in
    # Version 9: PyTorch's names (``pytorch_columns``).
    Column("unique_graphs", "Int64", required=False),  # dynamo_graphs, as PyTorch names it
    Column("eager_peak_mem", "float64", required=False),  # the reference's peak memory, GB (10**9 bytes)
    Column("dynamo_peak_mem", "float64", required=False),  # the backend's, GB
    Column("compression_ratio", "float64", required=False),  # eager_peak_mem / dynamo_peak_mem
    # Version 10: the machine's load.
    Column("other_cores", "float64", required=False),  # cores other processes kept busy while timed (mean)
    # Version 12: the profile, and PyTorch's dynamo statistics (``probes``).
    Column("profile", "str", required=False),  # small (--profile small); empty: the device's profile
    Column("calls_captured", "Int64", required=False),  # ops dynamo put in graphs (its calls_captured)
    Column("unique_graph_breaks", "Int64", required=False),  # distinct graph-break reasons
    Column("fallbacks_to_eager", "Int64", required=False),  # ops run on the host: no XLA lowering
    Column("autograd_captures", "Int64", required=False),  # compiled autograd's captures
    Column("autograd_compiles", "Int64", required=False),  # compiled autograd's compiles
    Column("cache_lookup_latency", "float64", required=False),  # us of dynamo's cache lookup, two calls
    Column("iterations_per_run", "Int64", required=False),  # --iterations-per-run; empty: 1
]

CSV_COLUMNS: list[str] = [c.name for c in COLUMNS]

# --------------------------------------------------------------------------
# The experiment: every setting that changes what is measured, declared once


@dataclass(frozen=True)
class Setting:
    """One setting of an experiment: the row's ``column`` that holds it, the
    command-line ``flags`` that set it, whether it is part of the experiment's
    key (``key``: two rows that differ in it measured different things), how
    a run's value is read from its ``RunConfig`` (``of``; None: it varies
    within a run, per model or runner), how a caption names a value
    (``caption``, a format string, and ``unknown`` for a row that did not
    record it) and the default output name's part for a value (``label``;
    None: the name leaves it out).  ``quiet``: the value a short caption
    leaves out."""

    column: str
    flags: tuple[str, ...]
    key: bool = True
    of: Callable[[Any], Any] | None = None
    caption: str | None = None
    unknown: str = "unknown"
    label: Callable[[Any], str | None] | None = None
    quiet: str | None = None

    def value(self, config: Any) -> Any:
        return self.of(config) if self.of else None


# The rows' ``mode`` of a training run, by its ``RunConfig.compile_step``:
# the model compiled (training), or the whole step (``--compile-step``), as
# one graph (training_step) or as written (training_step_graphs).
TRAINING_MODES = {None: "training", "whole": "training_step", "graphs": "training_step_graphs"}


def _mode(config) -> str:
    """The rows' ``mode``: inference, or one of ``TRAINING_MODES``."""
    return TRAINING_MODES[config.compile_step] if config.training else "inference"


# The settings, in the experiment key's order.  A new setting is one line
# here (and its Column above); tests/test_experiment.py holds every flag of
# runner.py to be declared here or in cli/flags.py's NOT_MEASURED.
SETTINGS: tuple[Setting, ...] = (
    Setting("suite", ("--suite",), of=lambda c: c.suite, caption="{} suite",
            label=lambda v: None if v == "builtin" else v),
    Setting("name", ("--only", "--filter", "--exclude", "--exclude-exact")),
    Setting("backend", ("--backend",)),
    Setting("baseline", ("--use-xla-baseline",), of=lambda c: "xla" if c.use_xla_baseline else "eager",
            caption="{} baseline", unknown="unknown baseline",
            label=lambda v: "xla_baseline" if v == "xla" else None),
    Setting("dev", ("--device",), of=lambda c: c.device, caption="on {}", unknown="on unknown device",
            label=lambda v: v),
    Setting("batch_size", ("--batch-size", "--batch-sizes")),
    Setting("mode", ("--training", "--inference", "--compile-step"), of=_mode, caption="{}",
            unknown="mode not recorded", label=lambda v: v),
    Setting("dtype", ("--float32", "--bfloat16", "--float16", "--amp", "--amp-dtype"),
            of=lambda c: c.precision, caption="{}", unknown="fp32",
            label=lambda v: None if v == "fp32" else v),
    Setting("dynamic", ("--dynamic-shapes",), of=lambda c: "dynamic" if c.dynamic_shapes else "static",
            caption="{} shapes", unknown="static shapes", quiet="static",
            label=lambda v: "dynamic" if v == "dynamic" else None),
    Setting("inputs", ("--randomize-input",), of=lambda c: "random" if c.randomize_input else "fixed",
            caption="{} inputs", unknown="inputs not recorded", quiet="fixed",
            label=lambda v: "random_inputs" if v == "random" else None),
    # Empty unless --profile names one: rows of the device's profile pair
    # with the rows written before the column existed.
    Setting("profile", ("--profile",), of=lambda c: c.size_profile, caption="{} profile",
            unknown="device's profile", quiet="device's profile",
            label=lambda v: v or None),
    # Empty for 1 (one iteration per sample, as every older row timed).
    Setting("iterations_per_run", ("--iterations-per-run",),
            of=lambda c: c.iterations_per_run if c.iterations_per_run != 1 else None,
            caption="{} iterations per run", unknown="1 iteration per run",
            label=lambda v: f"{v}_iterations" if v else None),
    # On the row, not in the key: how precisely, not what, was measured.
    Setting("repeat", ("--repeat",), key=False, of=lambda c: c.repeat),
    Setting("warmup", ("--warmup",), key=False, of=lambda c: c.warmup),
    Setting("seed", ("--seed",), key=False, of=lambda c: c.seed),
)
SETTING_BY_COLUMN = {s.column: s for s in SETTINGS}
# What a run measures (``Experiment.measure``): speedups or outputs; rows of
# the two never share a file (``measures``), and their names differ.
MEASURE_FLAGS = ("--performance", "--accuracy")

# What identifies an experiment: two rows with the same values measured the
# same thing.  --resume skips them, merge refuses them twice, compare pairs
# them and calls a pair whose settings differ ``not comparable``.
KEY_COLUMNS = tuple(s.column for s in SETTINGS if s.key)
# The key less the pair it names: a (name, backend) measured with other
# settings is another experiment.
SETTING_COLUMNS = tuple(c for c in KEY_COLUMNS if c not in ("name", "backend"))
# What a version-1 row could only have been (see the history above).
_V1_DEFAULTS = {"dtype": "fp32", "dynamic": "static"}
# The caption's order: what ran, then where and against what.
CAPTION_ORDER = ("mode", "dtype", "dynamic", "inputs", "dev", "baseline")


def settings_of(df: pd.DataFrame) -> dict[str, str | None]:
    """The caption's settings (``CAPTION_ORDER``) of rows: each column's
    distinct values, /-joined in order of appearance; None where none was
    recorded."""
    return {c: "/".join(map(str, pd.unique(df[c].dropna()))) or None if c in df else None
            for c in CAPTION_ORDER}


@dataclass(frozen=True)
class Experiment:
    """A run's experiment: the value of every run-wide setting (those with
    ``of``), read once from its ``RunConfig``.  The row, the default output
    name and the caption are made from it; resume, merge and compare pair rows
    by the key these values are part of."""

    measure: str  # performance | accuracy: never in one file (``measures``)
    values: tuple[tuple[str, Any], ...]

    @classmethod
    def of(cls, config: Any) -> "Experiment":
        return cls(config.measure, tuple((s.column, s.value(config)) for s in SETTINGS if s.of))

    def __getitem__(self, column: str) -> Any:
        return dict(self.values)[column]

    def row(self) -> dict:
        """The columns every row of the run shares."""
        return dict(self.values)

    def file_name(self) -> str:
        """The CSV a run writes without --output: one name per experiment
        (what it measures, mode, device, then each setting that differs from
        the default), so that runs of different experiments, such as
        ``make bench``'s and a one-model check, never meet in one file."""
        order = ("mode", "dev", "suite", "baseline", "dtype", "dynamic", "inputs", "profile",
                 "iterations_per_run")
        labels = [SETTING_BY_COLUMN[c].label(self[c]) for c in order]
        return "_".join([self.measure, *(label for label in labels if label)]) + ".csv"

    def caption(self, brief: bool = False) -> str:
        return caption({c: self[c] for c in CAPTION_ORDER}, brief=brief)


def caption(values: Mapping[str, Any], brief: bool = False, phrases: Mapping[str, str] | None = None) -> str:
    """``"inference, bf16, static shapes, random inputs, on cpu, xla
    baseline"``: the settings of ``CAPTION_ORDER`` as ``values`` gives them
    (a missing or empty value is its setting's ``unknown``); ``brief``
    leaves out values that are the usual (static shapes, fixed inputs);
    ``phrases`` replaces a setting's phrase (the report explains baselines)."""
    parts = []
    for column in CAPTION_ORDER:
        setting = SETTING_BY_COLUMN[column]
        value = values.get(column)
        unknown = value is None or value == "" or is_missing(value)
        if phrases and column in phrases:
            parts.append(phrases[column])
        elif brief and setting.quiet is not None and (unknown or value == setting.quiet):
            continue
        elif unknown:
            parts.append(setting.unknown)
        else:
            parts.append(setting.caption.format(value))
    return ", ".join(parts)


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


class ExperimentKey(namedtuple("ExperimentKey", KEY_COLUMNS, defaults=(None, None, None))):
    """The ``KEY_COLUMNS`` of a row, normalised: ``None`` where a value is
    missing (unknown), ``batch_size`` an int, everything else a string; the
    last (inputs, of schema version 6) unknown unless given."""

    __slots__ = ()

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
    if is_missing(value) or (isinstance(value, str) and not value.strip()):
        return None
    if column == "suite":
        return SAME_CODE_SUITE.get(str(value), str(value))
    if column in ("batch_size", "iterations_per_run"):
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


def is_missing(value: Any) -> bool:
    """None, NaN or pandas' NA: a cell with no value."""
    if value is None:
        return True
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):  # lists and other non-scalars
        return False


# --------------------------------------------------------------------------
# PyTorch's names (version 9)

PYTORCH_COLUMNS = ("unique_graphs", "eager_peak_mem", "dynamo_peak_mem", "compression_ratio")
# Our peaks are MB of 2**20 bytes; PyTorch's harness divides bytes by 10**9.
_MB_IN_GB = 2 ** 20 / 10 ** 9


def pytorch_columns(row: Mapping[str, Any]) -> dict:
    """The columns PyTorch's dynamo harness writes under these names, made
    from ``row``'s own: ``unique_graphs`` is ``dynamo_graphs`` (both read
    dynamo's ``unique_graphs`` counter); ``eager_peak_mem`` and
    ``dynamo_peak_mem`` the reference's and the backend's peak in GB, of the
    device where it reports one for both (PyTorch's harness reads the CUDA
    device's), else of the host (on PJRT CPU the device's memory is the
    host's: ``peak_host_mb``); ``compression_ratio`` the first over the
    second (above 1: the backend needs less).  Each is None where the
    columns it is made from are empty."""
    graphs = row.get("dynamo_graphs")
    on_device = is_finite(row.get("baseline_peak_device_mb")) and is_finite(row.get("peak_device_mb"))
    where = "device" if on_device else "host"
    eager, dynamo = (row.get(f"baseline_peak_{where}_mb"), row.get(f"peak_{where}_mb"))
    eager, dynamo = (mb if is_finite(mb) and mb > 0 else None for mb in (eager, dynamo))
    return {"unique_graphs": None if is_missing(graphs) else int(graphs),
            "eager_peak_mem": eager * _MB_IN_GB if eager else None,
            "dynamo_peak_mem": dynamo * _MB_IN_GB if dynamo else None,
            "compression_ratio": eager / dynamo if eager and dynamo else None}


def _with_pytorch_columns(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows of versions 1-8 with ``PYTORCH_COLUMNS`` made from the columns
    they recorded, as a version-9 writer makes them."""
    older = (frame["schema_version"] < 9).fillna(True).astype(bool)
    if not older.any():
        return frame
    frame = frame.copy()
    made = pd.DataFrame([pytorch_columns(r) for r in frame.loc[older].to_dict("records")],
                        index=frame.index[older], columns=list(PYTORCH_COLUMNS))
    for column in COLUMNS:
        if column.name in PYTORCH_COLUMNS:
            empty = older & frame[column.name].isna()
            frame.loc[empty, column.name] = made.loc[empty[empty].index, column.name].astype(column.dtype)
    return frame


def migrate(frame: pd.DataFrame, inputs: str | None = None) -> pd.DataFrame:
    """Rows of older schema versions in today's terms (see the history).
    ``inputs``: fixed or random, as the run's recorded flags imply, for rows
    of versions 1-6 (which did not record it); None leaves them unknown."""
    v1 = (frame["schema_version"] == 1).fillna(False).astype(bool)
    if v1.any():
        frame = frame.copy()
        for column, value in _V1_DEFAULTS.items():
            frame.loc[v1 & frame[column].isna(), column] = value
    frame = _with_pytorch_columns(frame)
    if inputs is not None:
        older = (frame["schema_version"] < 7).fillna(True).astype(bool) & frame["inputs"].isna()
        if older.any():
            frame = frame.copy()
            frame.loc[older, "inputs"] = inputs
    return frame


def migrate_record(record: dict, inputs: str | None = None) -> dict:
    """A samples record (or a row as a dict) of an older version in today's
    terms: ``inputs`` as for ``migrate``."""
    missing = is_missing(record.get("inputs")) or not str(record.get("inputs")).strip()
    if inputs is not None and missing and (_version(record) or 0) < 7:
        return {**record, "inputs": inputs}
    return record


# A night's record beside its merged CSV, and a shard's beside its CSV
# (``<stem>.json``), keep the runner flags the rows were run with
# (``{"runner": {"flags": [...]}}``): what older rows did not record is read
# from them (``implied_inputs``).
NIGHT_FILE = "night.json"


def implied_inputs(flags: Iterable[str] | None) -> str | None:
    """The inputs a run of runner.py ``flags`` timed (None: flags unknown)."""
    if flags is None:
        return None
    flags = list(flags)
    return "random" if "--randomize-input" in flags else "fixed"


# One line per distinct break a runner met: the experiment it belongs to, the
# reason dynamo gave (on one line) and the user frame it broke in.
GRAPH_BREAK_COLUMNS = ["name", "backend", "mode", "dtype", "dynamic", "reason", "user_frame"]
