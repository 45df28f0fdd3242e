"""The run command: flags -> one validated RunConfig -> the run, its report and files.

``validate(args)`` checks every flag before any model is loaded (a bad value
is one line and exit 2); ``make_config`` turns the flags into the frozen
``RunConfig`` the orchestrator and the workers share; ``select_models`` picks
the models of a selection and shard; ``run_command`` is what ``runner.py``
runs without a subcommand.
"""
from __future__ import annotations

import argparse
import csv
import difflib
import os
import sys
from pathlib import Path

from benchmarks.run.affinity import parse_cpus
from benchmarks.run.config import PYTORCH_SUITES, TORCH_XLA_BACKENDS, RunConfig
from benchmarks.usage import UsageError
from benchmarks.cli.flags import (ADAPTIVE_MAX_REPEAT, DEFAULT_BACKENDS, DEFAULT_MIN_REPEAT,
                    DEFAULT_PROCESS_REPEAT, DEFAULT_PROCESSES, DEFAULT_REPEAT,
                    DEFAULT_TARGET_CI, DEFAULT_TIMEOUT, DEFAULT_TRAINING_BACKENDS, FOR_TRAINING, DEVICES, PROFILER_TRACE_FOLDER, PROG)
from benchmarks.cli.selection import select_models, use_torchbench_dir


def run_command(args: argparse.Namespace) -> int:
    """``runner.py [flags]``: list, plan or run, and report; the exit status."""
    validate(args)  # before the slow imports: a typo should fail at once
    settings = _settings(args)
    if args.list_models:
        print(_model_listing(select_models(args), settings, args))
        return 0
    check_device(args.device)
    config = _config(args, settings)
    if args.dry_run:
        text, code = _plan(config, settings, overwrite=args.overwrite)
        print(text)
        return code
    from benchmarks.run import orchestrate
    from benchmarks.results import report, store

    output = orchestrate.Output.start(config.csv_path, overwrite=args.overwrite)
    os.environ["PJRT_DEVICE"] = DEVICES[config.device]
    beside = f" (written as {output.writing} until the run ends)" if output.staged else ""
    print(f"{PROG}: {len(config.models)} model(s) x {', '.join(config.backends)} "
          f"({config.experiment.caption()}) -> {config.csv_path}{beside}", file=sys.stderr)
    try:
        orchestrate.run(config.replace(output=str(output.writing)))
    except BaseException as stop:  # Ctrl-C, SIGTERM, a crash: the earlier run's files stay
        return _stopped(output, stop)
    output.commit()
    print(report.finish(config.csv_path))
    if args.explain:
        from benchmarks.results import explain

        print(explain.render(config.csv_path))
    if config.compile_cache:
        warning = report.persistent_cache_warning(store.read_rows(config.csv_path))
        if warning:
            print(f"warning: {warning}", file=sys.stderr)
    _print_written(config.csv_path)
    return 0


def _stopped(output, stop: BaseException) -> int:
    """A run stopped before its end: the rows kept so far get their report,
    as a finished run's do, and one line says what was kept where; the exit
    status of an interrupt (130, or 143 for SIGTERM), or the error again."""
    from benchmarks.results import report
    from benchmarks.run import signals

    try:
        if output.writing.exists():
            report.finish(output.writing)
            _print_written(output.writing)
    except KeyboardInterrupt:  # a second Ctrl-C: no report, the line still comes
        pass
    finally:
        print(f"{PROG}: {output.stopped(signals.describe(stop))}", file=sys.stderr)
    if isinstance(stop, KeyboardInterrupt):
        return signals.exit_status(stop)
    raise stop


def _print_written(csv_path: Path) -> None:
    from benchmarks.results.store import files_beside, folders_beside

    written = [p for p in files_beside(csv_path) if p.exists()]
    written += [p for p in folders_beside(csv_path) if p.is_dir()]
    print(f"\nwrote {', '.join(map(str, written))}", file=sys.stderr)


def check_device(device: str) -> None:
    """Refuse a device this machine lacks before any model runs (a worker
    would only find out after loading torch_xla, model after model)."""
    if device != "tpu":
        return
    import importlib.util

    if importlib.util.find_spec("libtpu") is None:
        raise UsageError("--device tpu: no TPU runtime here (the libtpu package is not installed; "
                         "pip install torch_xla[tpu] on a TPU VM)")
    if not (list(Path("/dev").glob("accel*")) or list(Path("/dev/vfio").glob("[0-9]*"))):
        raise UsageError("--device tpu: no TPU device on this machine (no /dev/accel* or /dev/vfio/*)")


def _plan(config: RunConfig, settings, overwrite: bool = False) -> tuple[str, int]:
    """What a run would do: models x backends with their batch sizes, and
    the files it would write."""
    from tabulate import tabulate

    from benchmarks.results.report import report_files
    from benchmarks.results.store import has_outputs, logs_path, partial_path

    profile = config.profile
    pending = _pending(config)
    rows = [(name, _batch_size_label(name, settings, config.suite, profile, config.training,
                                     config.batch_size, config.batch_sizes),
             ", ".join(config.backends) if pending is None else
             ", ".join(pending.get(name, ())) or "none: the output has its rows") for name in config.models]
    table = tabulate(rows, headers=("model", "batch size", f"backends vs {config.baseline} baseline"))
    if pending is not None:
        table += (f"\n\n--resume: {len(pending)} of {len(config.models)} model(s) with work left"
                  if pending else "\n\n--resume: nothing left to run, the output has a row of every "
                                  "experiment selected")
    # With --overwrite over an earlier run's files, the run writes beside
    # them (orchestrate.Output) and swaps its files in only once it ends.
    staged = overwrite and has_outputs(config.csv_path)
    writing = partial_path(config.csv_path) if staged else config.csv_path
    files = report_files(writing, accuracy=config.measure == "accuracy")
    outputs = "\n".join(f"  {p}" for p in [*files, logs_path(writing)])
    if staged:
        outputs += (f"\nthen, once the run has ended, under the earlier run's names ({config.csv_path} "
                    "and the files beside it), which it replaces; stopped early (Ctrl-C, SIGTERM, a crash), "
                    "it leaves the earlier run's files as they were and its own beside them")
    folders = [f for f in (config.profiler_trace_dir, config.hlo_dir, config.compile_cache) if f]
    outputs += "".join(f"\n  {f}/" for f in folders)
    code = 0
    try:
        _check_run_output(config.csv_path, resume=config.resume, overwrite=overwrite, measure=config.measure)
    except OutputExists as err:
        outputs += f"\nbut {err}; a run would stop here with exit code 2"
        code = 2
    repeats = (f"adaptive repeats: {config.min_repeat} to {config.repeat}, within {config.max_time:g} s "
               f"per model" if config.adaptive else f"{config.repeat} timed repeats")
    first = (f"each contender's first call timed in {config.cold_start_repeat} fresh process(es)"
             if config.cold_start else "first calls timed in the measuring process")
    measuring = (f"{repeats} after {config.warmup} warm-up call(s), in {config.processes} worker "
                 f"process(es) per model; {first}; timeout {config.timeout:g} s per model")
    return (f"{config.measure}: {config.experiment.caption()}: "
            f"{len(config.models)} model(s) x {len(config.backends)} backend(s)\n{measuring}\n\n{table}\n\n"
            f"would write (logs only for failed workers; nothing is created by --dry-run):\n{outputs}"), code


def _pending(config: RunConfig) -> dict[str, tuple[str, ...]] | None:
    """With --resume, the backends each model still has to run, as the run
    would find them in its output (None without --resume)."""
    if not config.resume:
        return None
    from benchmarks.run.orchestrate import pending_work

    return dict(pending_work(config))


def make_config(args: argparse.Namespace, settings=None) -> RunConfig:
    """Validate ``args`` and turn them into a RunConfig (or raise UsageError);
    ``settings``: configs/ as already read (else read here)."""
    validate(args)
    return _config(args, settings)


def validate(args: argparse.Namespace) -> None:
    """Every check of the flags alone (files aside): a UsageError for the first that fails."""
    _check_numbers(args)
    use_torchbench_dir(args)


def _config(args: argparse.Namespace, settings=None) -> RunConfig:
    """The RunConfig of validated ``args``: the models selected, the output checked."""
    models = select_models(args)
    backends = parse_backends(args.backend, training=args.training)
    repeat, processes = repeats_and_processes(args)
    config = RunConfig(
        measure="accuracy" if args.accuracy else "performance", training=args.training, backends=backends,
        use_xla_baseline=args.use_xla_baseline, randomize_input=args.randomize_input,
        models=tuple(models), suite=args.suite, batch_size=args.batch_size,
        repeat=repeat, processes=processes,
        warmup=args.warmup, device=args.device, seed=args.seed,
        configs=args.configs, configs_text=_settings(args, settings).text,
        timeout=DEFAULT_TIMEOUT if args.timeout is None else args.timeout,
        isolate=args.isolate, resume=args.resume,
        precision=args.precision or "fp32", dynamic_shapes=args.dynamic_shapes,
        batch_sizes=parse_batch_sizes(args.batch_sizes),
        cold_start=args.cold_start, cold_start_repeat=args.cold_start_repeat, warm_start=args.warm_start,
        max_time=args.max_time, min_repeat=args.min_repeat or DEFAULT_MIN_REPEAT,
        target_ci=args.target_ci or DEFAULT_TARGET_CI, threads=args.threads,
        cpu_affinity=parse_cpus(args.cpu_affinity), compile_step=args.compile_step,
        size_profile=args.profile, iterations_per_run=args.iterations_per_run,
    )
    output = Path(args.output) if args.output else Path(args.output_directory, config.experiment.file_name())
    try:
        _check_run_output(output, resume=args.resume, overwrite=args.overwrite, measure=config.measure,
                          repeat=config.repeat)  # removes nothing yet
    except OutputExists:
        if not args.dry_run:  # the plan says it instead
            raise
    if args.export_profiler_trace == PROFILER_TRACE_FOLDER:  # the flag with no folder: beside the CSV
        args.export_profiler_trace = str(output.parent / PROFILER_TRACE_FOLDER)
    folders = {flag: _output_folder(getattr(args, attr), flag, create=not args.dry_run) for flag, attr in
               (("--export-profiler-trace", "export_profiler_trace"), ("--dump-hlo", "dump_hlo"),
                ("--compile-cache", "compile_cache"))}
    return config.replace(
        output=str(output),
        profiler_trace_dir=folders["--export-profiler-trace"], hlo_dir=folders["--dump-hlo"],
        compile_cache=str(Path(folders["--compile-cache"]).resolve()) if args.compile_cache else None)


def repeats_and_processes(args: argparse.Namespace) -> tuple[int, int]:
    """(timed repeats in each worker process, worker processes per model).

    ``--performance`` with neither ``--repeat`` nor ``--processes`` (what the
    nightly runs) spreads its repeats over fresh processes; ``--repeat N``
    alone is N repeats in one process, as before; accuracy, adaptive repeats
    and ``--no-isolate`` run one process unless told otherwise."""
    if args.max_time is not None:
        return args.repeat or ADAPTIVE_MAX_REPEAT, args.processes or 1
    if args.processes is not None:
        return args.repeat or (DEFAULT_REPEAT if args.processes == 1 else DEFAULT_PROCESS_REPEAT), args.processes
    if args.repeat is not None or args.accuracy or not args.isolate:
        return args.repeat or DEFAULT_REPEAT, 1
    return DEFAULT_PROCESS_REPEAT, DEFAULT_PROCESSES


def _settings(args, settings=None):
    if settings is not None:
        return settings
    from benchmarks.run import settings as settings_mod

    try:
        return settings_mod.load_settings(Path(args.configs) if args.configs else None)
    except settings_mod.ConfigError as err:
        raise UsageError(str(err)) from None


def parse_batch_sizes(text: str | None) -> tuple[int, ...]:
    """``"1,2,4"`` -> ``(1, 2, 4)``: distinct positive ints, in the given order."""
    if text is None:
        return ()
    try:
        sizes = tuple(int(part) for part in text.split(","))
    except ValueError:
        raise UsageError(f"--batch-sizes takes positive integers separated by commas, got {text!r}") from None
    if not sizes or min(sizes) < 1:
        raise UsageError(f"--batch-sizes must all be at least 1, got {text!r}")
    if len(set(sizes)) != len(sizes):
        raise UsageError(f"--batch-sizes lists a batch size twice: {text!r}")
    return sizes


def _output_folder(path: str | None, flag: str, create: bool = True) -> str | None:
    """Create the folder a diagnostics flag writes into, or say why not
    (without ``create``, a dry run's: only name it)."""
    if path is None:
        return None
    folder = Path(path)
    if not create:
        return str(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise UsageError(f"{flag}: cannot create folder {folder}: {err.strerror or err}") from None
    if not os.access(folder, os.W_OK):
        raise UsageError(f"{flag}: folder {folder} is not writable")
    return str(folder)


def _check_numbers(args) -> None:
    if args.batch_size is not None and args.batch_size < 1:
        raise UsageError(f"--batch-size must be at least 1, got {args.batch_size}")
    if args.repeat is not None and args.repeat < 1:
        raise UsageError(f"--repeat must be at least 1, got {args.repeat}")
    if args.cold_start_repeat < 1:
        raise UsageError(f"--cold-start-repeat must be at least 1, got {args.cold_start_repeat}")
    _check_adaptive(args)
    if args.processes is not None:
        if args.processes < 1:
            raise UsageError(f"--processes must be at least 1, got {args.processes}")
        if args.processes > 1 and args.accuracy:
            raise UsageError("--processes spreads timed repeats over processes; it applies to --performance")
        if args.processes > 1 and not args.isolate:
            raise UsageError("--processes runs each model in fresh worker processes; drop --no-isolate")
    if args.threads is not None and args.threads < 1:
        raise UsageError(f"--threads must be at least 1, got {args.threads}")
    parse_cpus(args.cpu_affinity)
    if args.compile_step and not args.training:
        raise UsageError("--compile-step compiles a training step; add --training")
    if args.profile is not None and args.suite not in PYTORCH_SUITES:
        raise UsageError(f"--profile {args.profile} applies to --suite {' or '.join(PYTORCH_SUITES)} (the "
                         "built-in models' cpu profile already fits two cores)")
    if args.profile is not None and args.device != "cpu":
        raise UsageError(f"--profile {args.profile} sizes a cpu run; drop it with --device {args.device}")
    if args.iterations_per_run < 1:
        raise UsageError(f"--iterations-per-run must be at least 1, got {args.iterations_per_run}")
    if args.iterations_per_run > 1 and args.accuracy:
        raise UsageError("--iterations-per-run times several iterations per sample; it applies to --performance")
    if args.warmup < 1:
        raise UsageError(f"--warmup must be at least 1 (the first call is timed), got {args.warmup}")
    if args.timeout is not None and not args.timeout > 0:
        raise UsageError(f"--timeout must be positive, got {args.timeout:g}")
    if args.timeout is not None and not args.isolate:
        raise UsageError("--timeout applies to models in their own process; --no-isolate runs them "
                         "in this one, with no timeout: pick one")
    if args.output is not None and not args.output.strip():
        raise UsageError("--output needs a file name (leave it out for the default under --output-directory)")
    if args.total_partitions < 1:
        raise UsageError(f"--total-partitions must be at least 1, got {args.total_partitions}")
    if args.partition_id is not None:
        if args.total_partitions == 1 and args.partition_id != 0:
            raise UsageError("--partition-id needs --total-partitions N (the number of shards)")
        if not 0 <= args.partition_id < args.total_partitions:
            raise UsageError(f"--partition-id must be in [0, {args.total_partitions - 1}], "
                             f"got {args.partition_id}")
    if args.amp_dtype is not None and args.precision != "amp":
        raise UsageError("--amp-dtype applies to --amp; add --amp (or --bfloat16/--float16 to cast the model)")
    if args.resume and args.overwrite:
        raise UsageError("--resume and --overwrite contradict each other; pick one")
    if args.batch_sizes is not None:
        if args.batch_size is not None:
            raise UsageError("--batch-size and --batch-sizes contradict each other; pick one")
        parse_batch_sizes(args.batch_sizes)


def _check_adaptive(args) -> None:
    if args.max_time is None:
        for flag, value in (("--min-repeat", args.min_repeat), ("--target-ci", args.target_ci)):
            if value is not None:
                raise UsageError(f"{flag} applies to adaptive repeats; add --max-time S")
        return
    if not args.max_time > 0:
        raise UsageError(f"--max-time must be positive, got {args.max_time:g}")
    if args.min_repeat is not None and args.min_repeat < 2:
        raise UsageError(f"--min-repeat must be at least 2 (an interval needs two samples), "
                         f"got {args.min_repeat}")
    if args.target_ci is not None and not 0 < args.target_ci < 1:
        raise UsageError(f"--target-ci must be between 0 and 1 (0.03: +-3%), got {args.target_ci:g}")
    least = args.min_repeat or DEFAULT_MIN_REPEAT
    if args.repeat is not None and args.repeat < least:
        raise UsageError(f"--repeat {args.repeat} is below --min-repeat {least}")


# Besides ours (xla_backends.BACKENDS), the backends a user of this harness
# picks: torch_xla's, and torch's own for reference. Any other registered
# dynamo backend is accepted too.
OTHER_SUGGESTED_BACKENDS = {
    "torch_xla's": TORCH_XLA_BACKENDS,
    "torch's": ("inductor", "eager", "aot_eager"),
}


def suggested_backends() -> dict[str, tuple[str, ...]]:
    import xla_backends

    return {"ours": tuple(xla_backends.BACKENDS), **OTHER_SUGGESTED_BACKENDS}


def parse_backends(values: list[str] | None, training: bool = False) -> tuple[str, ...]:
    """The backends named (default: ``DEFAULT_BACKENDS``, or with
    ``training`` ``DEFAULT_TRAINING_BACKENDS``); an inference backend of ours
    named for training is refused with the one to name instead."""
    default = DEFAULT_TRAINING_BACKENDS if training else DEFAULT_BACKENDS
    names = [n.strip() for v in (values or [",".join(default)]) for n in v.split(",")]
    names = list(dict.fromkeys(n for n in names if n))
    if not names:
        raise UsageError("--backend needs at least one name")
    for name in names if training else ():
        if name in FOR_TRAINING:
            raise UsageError(f"--training: {name} is an inference backend (it gives no gradients); "
                             f"use {FOR_TRAINING[name]}")
    available = available_backends()
    for name in names:
        if name not in available:
            candidates = [b for b in available if not b.endswith("_TESTING_ONLY")]
            close = difflib.get_close_matches(name, candidates, n=3)
            hint = f"did you mean: {', '.join(close)}? " if close else ""
            picks = "; ".join(f"{who}: {', '.join(names)}" for who, names in suggested_backends().items())
            raise UsageError(f"unknown backend {name!r}; {hint}backends to pick: {picks} "
                             "(any registered dynamo backend works)")
    return tuple(names)


def available_backends() -> list[str]:
    """Every registered dynamo backend, experimental ones (openxla_eval) included."""
    import torch._dynamo

    import xla_backends  # noqa: F401 - registers our backend names

    return sorted(set(torch._dynamo.list_backends(exclude_tags=())))


class OutputExists(UsageError):
    """The output's files are an earlier run's: a run stops, a dry run says so."""


def _check_run_output(csv_path: Path, *, resume: bool, overwrite: bool, measure: str = "performance",
                      repeat: int | None = None) -> None:
    """Refuse an output that cannot be written, or one that would be lost
    (``OutputExists``, which a dry run reports instead), or a --resume of
    a file this run cannot complete."""
    from benchmarks.results import store

    try:
        store.check_output(csv_path, overwrite=overwrite, resume=resume)
    except store.OutputExists as err:
        raise OutputExists(str(err)) from None
    except store.OutputError as err:
        raise UsageError(str(err)) from None
    if resume and csv_path.exists() and csv_path.stat().st_size > 0:
        _check_resumable(csv_path, measure, repeat)


def _check_resumable(csv_path: Path, measure: str, repeat: int | None = None) -> None:
    """--resume appends rows: the file must have the columns we write, or
    an older version's (the run gives it today's header first:
    ``store.upgrade_header``), and rows that measured what this run
    measures (``measure``)."""
    from benchmarks.results import store

    try:
        with open(csv_path, newline="", encoding="utf-8") as f:
            header = next(csv.reader(f), [])
    except (OSError, UnicodeDecodeError, csv.Error) as err:
        raise UsageError(f"cannot --resume {csv_path}: {err}") from None
    if header != store.CSV_COLUMNS and store.older_header(csv_path) is None:
        raise UsageError(f"cannot --resume {csv_path}: its columns are not the ones this harness "
                         "writes, nor an earlier version's; pass a new --output, or --overwrite")
    try:
        rows = store.read_cells(csv_path)
        store.read_rows(csv_path)  # as resuming reads it: typed
    except ValueError as err:  # a cell that is no number, a row of the wrong length
        raise UsageError(f"cannot --resume {csv_path}: {str(err).strip().splitlines()[0]}") from None
    other = _measured_otherwise(rows, measure)
    resumed = sorted({int(float(r["repeat"])) for r in rows if r.get("repeat", "").strip()})
    if repeat is not None and resumed and resumed != [repeat]:
        raise UsageError(f"cannot --resume {csv_path} with --repeat {repeat}: its rows were timed with "
                         f"--repeat {'/'.join(map(str, resumed))}; pass that, or another --output")
    if other:
        raise UsageError(f"cannot --resume {csv_path} as a {measure} run: it holds {other} rows "
                         f"(--{other}); pass another --output, or run with --{other}")


def _measured_otherwise(rows, measure: str) -> str | None:
    """What rows of a file measured, if not ``measure``: accuracy if one holds a
    verdict, performance if one holds a speedup (a failed row holds
    neither and can belong to either)."""
    from benchmarks.results.store import measures

    if measure != "accuracy":
        return "accuracy" if any(measures(r) == "accuracy" for r in rows) else None
    return "performance" if any(r.get("speedup", "").strip() for r in rows) else None


def _batch_size_label(name: str, settings, suite: str, profile: str, training: bool,
                      override: int | None = None, cycle: tuple[int, ...] = ()) -> str:
    if cycle:
        return ",".join(map(str, cycle))
    if override is not None:
        return str(override)
    if suite == "torchbench" and not settings.lists(name):
        return "TorchBench's default"
    if suite in PYTORCH_SUITES and not settings.lists(name):
        from benchmarks.run.rows import pytorch_batch_size

        return str(pytorch_batch_size(suite, name, profile))
    return str(settings.for_model(name).batch_size(profile, training))


def _model_listing(names, settings, args) -> str:
    from tabulate import tabulate

    profile = args.profile or ("cpu" if args.device == "cpu" else "accelerator")
    rows = [(n, _batch_size_label(n, settings, args.suite, profile, False),
             _batch_size_label(n, settings, args.suite, profile, True)) for n in names]
    return tabulate(rows, headers=("model", f"batch size ({profile})", "training batch size"))
