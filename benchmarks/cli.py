"""The command line: ``python runner.py [flags]``, plus ``compare`` and ``merge``.

Flags keep the names users know from PyTorch's ``benchmarks/dynamo`` harness.
Everything is validated before any model runs; a bad value is reported as one
line on stderr with exit code 2, never a traceback.
"""
from __future__ import annotations

import argparse
import csv
import difflib
import math
import os
import re
import sys
from pathlib import Path

from .config import RunConfig
from .usage import OutputExists, Parser, UsageError, guarded

PROG = "runner.py"
DEFAULT_BACKENDS = ("torchxla_trivial", "torchxla_trace_once")
SUITES = ("seed", "builtin", "torchbench")  # benchmarks.suite.SUITES, without importing torch
DEVICES = {"cpu": "CPU", "tpu": "TPU"}  # --device -> PJRT_DEVICE
DEFAULT_REPEAT = 30
ADAPTIVE_MAX_REPEAT = 1000  # --max-time without --repeat: time and precision decide
DEFAULT_MIN_REPEAT = 5
DEFAULT_TARGET_CI = 0.03


def build_parser() -> argparse.ArgumentParser:
    p = Parser(prog=PROG, description="Benchmark torch._dynamo backends on TorchBench-named models.",
                epilog="Subcommands: `runner.py compare OLD.csv NEW.csv`, "
                       "`runner.py merge OUT.csv IN.csv...`, "
                       "`runner.py dashboard ROOT -o SITE`; each takes --help.")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--performance", action="store_true", help="measure speedups (default)")
    mode.add_argument("--accuracy", action="store_true", help="compare outputs with the baseline")
    phase = p.add_mutually_exclusive_group()
    phase.add_argument("--inference", action="store_true", help="run inference (default)")
    phase.add_argument("--training", action="store_true", help="run a training step")
    p.add_argument("--compile-step", action="store_true",
                   help="with --training: compile the whole step (forward, loss, backward, SGD step) "
                        "as one function, not only the model (rows of mode training_step)")
    p.add_argument("--backend", action="append", metavar="NAME",
                   help="dynamo backend to measure; repeat it or separate names with commas "
                        f"(default: {','.join(DEFAULT_BACKENDS)})")
    p.add_argument("--use-xla-baseline", action="store_true",
                   help="baseline: the model run lazily on the XLA device instead of eager on the host")
    p.add_argument("--randomize-input", action="store_true", help="draw fresh inputs every repeat")

    sel = p.add_argument_group("model selection")
    sel.add_argument("--only", action="append", metavar="NAME",
                     help="run just these models: repeat it or separate names with commas "
                          "(names match case-insensitively)")
    sel.add_argument("-k", "--filter", action="append", default=[], metavar="REGEX",
                     help="run models whose name matches, ignoring case (repeatable)")
    sel.add_argument("-x", "--exclude", action="append", default=[], metavar="REGEX",
                     help="skip models whose name matches, ignoring case (repeatable)")
    sel.add_argument("--exclude-exact", action="append", default=[], metavar="NAME",
                     help="skip these models, named exactly (case-insensitively; repeatable, commas)")
    sel.add_argument("--suite", choices=SUITES, default="builtin",
                     help="seed: the ten models of the first experiment; builtin: all our "
                          "models (default); torchbench: a pytorch/benchmark checkout's")
    sel.add_argument("--torchbench-dir", metavar="DIR",
                     help="the pytorch/benchmark checkout for --suite torchbench "
                          "(default: torchbenchmark from PYTHONPATH)")
    sel.add_argument("--list-models", action="store_true",
                     help="print the selected models (after --only/-k/-x and the shard flags) and exit")
    sel.add_argument("--dry-run", action="store_true",
                     help="print what would run (models x backends, batch sizes, output files) and exit")
    sel.add_argument("--total-partitions", type=int, default=1, metavar="N",
                     help="split the selected models into N shards (for CI)")
    sel.add_argument("--partition-id", type=int, default=None, metavar="I",
                     help="with --total-partitions: run shard I (0-based)")

    m = p.add_argument_group("measurement")
    m.add_argument("--batch-size", type=int, help="override the batch size of configs/")
    m.add_argument("--repeat", type=int, default=None,
                   help=f"timed repeats (default {DEFAULT_REPEAT}); with --max-time, the most "
                        f"(default {ADAPTIVE_MAX_REPEAT})")
    m.add_argument("--max-time", type=float, metavar="S",
                   help="adaptive repeats: keep interleaving repeats until every speedup's 95%% "
                        "interval is within --target-ci, or S seconds of repeats per model are spent")
    m.add_argument("--min-repeat", type=int, metavar="N",
                   help=f"with --max-time: at least N repeats (default {DEFAULT_MIN_REPEAT})")
    m.add_argument("--target-ci", type=float, metavar="F",
                   help="with --max-time: the 95%% interval's half-width sought, relative to the "
                        f"speedup (default {DEFAULT_TARGET_CI}: +-{DEFAULT_TARGET_CI * 100:g}%%)")
    m.add_argument("--threads", type=int, metavar="N",
                   help="threads of torch's intra-op pool and of XLA's CPU client, the same for every "
                        "runner (default: one per CPU the worker may use)")
    m.add_argument("--cpu-affinity", metavar="CPUS",
                   help="pin each worker to these CPUs, as taskset -c takes them (e.g. 0-3,6)")
    m.add_argument("--warmup", type=int, default=3, help="warm-up calls; the first is timed alone")
    m.add_argument("--device", "--devices", "-d", type=_device, default="cpu",
                   help=f"XLA device (PJRT_DEVICE): {', '.join(sorted(DEVICES))} (default cpu)")
    m.add_argument("--seed", type=int, default=0, help="seed of weights and inputs")
    m.add_argument("--configs", metavar="YAML", help="per-model settings (default configs/models.yaml)")
    prec = m.add_mutually_exclusive_group()
    prec.add_argument("--float32", dest="precision", action="store_const", const="fp32",
                      help="run in float32 (default)")
    prec.add_argument("--bfloat16", dest="precision", action="store_const", const="bf16",
                      help="cast the model and its floating inputs to bfloat16")
    prec.add_argument("--float16", dest="precision", action="store_const", const="fp16",
                      help="cast the model and its floating inputs to float16")
    prec.add_argument("--amp", dest="precision", action="store_const", const="amp",
                      help="float32 model under autocast (bfloat16) on the device that runs the step")
    m.add_argument("--amp-dtype", choices=("bfloat16", "float16"),
                   help="with --amp: the autocast dtype (bfloat16 only here)")
    m.add_argument("--dynamic-shapes", action="store_true",
                   help="mark the batch dimension dynamic (torch._dynamo.mark_dynamic)")
    m.add_argument("--batch-sizes", metavar="N,N,...",
                   help="cycle these batch sizes across repeats; one row per batch size")

    d = p.add_argument_group("diagnostics")
    d.add_argument("--export-profiler-trace", metavar="DIR", nargs="?", const=PROFILER_TRACE_FOLDER,
                   help="after timing, profile one step of each runner into DIR/<model>_<runner>.json "
                        f"(DIR: default <output-directory>/{PROFILER_TRACE_FOLDER})")
    d.add_argument("--explain", "--print-graph-breaks", action="store_true",
                   help="after the run, print per model and backend its graph breaks with reasons, "
                        "the ops run on the host, recompiles with the guard that failed, and the "
                        "host's share of a step")
    d.add_argument("--dump-hlo", metavar="DIR",
                   help="write the HLO of each graph of the XLA runners into DIR")

    f = p.add_argument_group("first calls")
    f.add_argument("--no-cold-start", dest="cold_start", action="store_false",
                   help="time each runner's first call in the measuring process instead of a fresh "
                        "process of its own (faster; another runner's executable may then serve it: "
                        "compilation_kind in_process)")
    f.add_argument("--cold-start-latency", dest="cold_start", action="store_true",
                   help="time each runner's first call in a fresh process (the default here)")
    f.add_argument("--warm-start", "--warm-start-latency", action="store_true",
                   help="also time each backend's first call with its executable already cached "
                        "(warm_start_latency)")
    f.add_argument("--compile-cache", metavar="DIR",
                   help="torch_xla's persistent compilation cache in DIR: later runs load unchanged "
                        "graphs' executables instead of compiling (TPU; not PJRT CPU in torch_xla 2.9)")

    r = p.add_argument_group("running")
    r.add_argument("--timeout", type=float, default=900.0, help="seconds per model (default 900)")
    r.add_argument("--no-isolate", dest="isolate", action="store_false",
                   help="run models in this process (for debugging)")
    r.add_argument("--resume", action="store_true", help="complete an existing output, skipping done rows")
    r.add_argument("--overwrite", action="store_true", help="replace an existing output")

    p.add_argument("--version", action=_Version, help="print the versions of this harness, torch and "
                                                      "torch_xla, and exit")
    for flag, instead in FLAGS_ELSEWHERE.items():
        p.add_argument(flag, nargs="?", action=_Refused, instead=instead, help=argparse.SUPPRESS)

    o = p.add_argument_group("output")
    o.add_argument("--output", metavar="PATH", help="CSV path; markdown beside it with .md")
    o.add_argument("--output-directory", default="results", metavar="DIR",
                   help="folder of the default output (default results/)")
    return p


# PyTorch's benchmarks/dynamo flags that mean something else here: what to use instead.
FLAGS_ELSEWHERE = {
    "--iterations": "--repeat N (timed repeats, each one step) and --warmup N",
    "--tolerance": "the per-model `tolerance:` of configs/models.yaml (--configs YAML for your own)",
}
PROFILER_TRACE_FOLDER = "profiler_traces"


class _Refused(argparse.Action):
    """A flag of PyTorch's harness with no twin here: one line naming ours."""

    def __init__(self, option_strings, dest, instead, **kwargs):
        super().__init__(option_strings, dest, **kwargs)
        self.instead = instead

    def __call__(self, parser, namespace, values, option_string=None):
        raise UsageError(f"{option_string} is PyTorch's harness's flag; here use {self.instead}")


class _Version(argparse.Action):
    """--version, printed as one unwrapped line (argparse's own wraps it)."""

    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=0, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        print(_version())
        parser.exit()


def _device(name: str) -> str:
    if name.lower() in DEVICES:
        return name.lower()
    raise argparse.ArgumentTypeError(
        f"{name!r}: this harness runs XLA on {' or '.join(sorted(DEVICES))} (torch_xla 2.9 has no "
        "CUDA device; --device cpu runs the XLA CPU client)")


def _version() -> str:
    """This package's version and the ones it measures with, read from the
    installed metadata (no torch import: --version answers at once)."""
    from importlib import metadata

    def version(name):
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return "not installed"

    return (f"{PROG} (xla-dynamo-bench) {version('xla-dynamo-bench')}; torch {version('torch')}, "
            f"torch_xla {version('torch_xla')}, torchvision {version('torchvision')}")


def main(argv: list[str]) -> int:
    if argv and argv[0] in SUBCOMMANDS:
        name, rest = argv[0], argv[1:]
        return guarded(f"{PROG} {name}", lambda: SUBCOMMANDS[name](rest))
    try:
        return guarded(PROG, lambda: _run(build_parser().parse_args(argv)))
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted; rows written so far are kept (rerun with --resume)",
              file=sys.stderr)
        return 130


def _run(args: argparse.Namespace) -> int:
    _check_numbers(args)  # before the slow imports: a typo should fail at once
    use_torchbench_dir(args)
    settings = _settings(args)
    if args.list_models:
        print(_model_listing(select_models(args), settings, args))
        return 0
    check_device(args.device)
    config = make_config(args, settings)
    if args.dry_run:
        print(_plan(config, settings))
        return 0
    from . import orchestrate, report, results

    if args.overwrite:
        results.clear_outputs(config.csv_path)
    os.environ["PJRT_DEVICE"] = DEVICES[config.device]
    print(f"{PROG}: {len(config.models)} model(s) x {', '.join(config.backends)} "
          f"vs {config.baseline} baseline ({config.phase}, {config.precision}, {config.dynamic} shapes) "
          f"-> {config.csv_path}", file=sys.stderr)
    try:
        orchestrate.run(config)
    except KeyboardInterrupt:
        # The rows kept so far get their report, as a finished run's do.
        report.finish(config.csv_path)
        _print_written(config.csv_path)
        raise
    print(report.finish(config.csv_path))
    if args.explain:
        from . import explain

        print(explain.render(config.csv_path))
    if config.compile_cache:
        warning = report.persistent_cache_warning(results.read_rows(config.csv_path))
        if warning:
            print(f"warning: {warning}", file=sys.stderr)
    _print_written(config.csv_path)
    return 0


def _print_written(csv_path: Path) -> None:
    from .results import files_beside, logs_path

    written = [p for p in files_beside(csv_path) if p.exists()]
    if logs_path(csv_path).is_dir():
        written.append(logs_path(csv_path))
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


def _plan(config: RunConfig, settings) -> str:
    """What a run would do: models x backends with their batch sizes, and
    the files it would write."""
    from tabulate import tabulate

    from .results import files_beside, logs_path

    profile = "cpu" if config.device == "cpu" else "accelerator"
    rows = [(name, _batch_size_label(name, settings, config.suite, profile, config.training,
                                     config.batch_size, config.batch_sizes),
             ", ".join(config.backends)) for name in config.models]
    table = tabulate(rows, headers=("model", "batch size", f"backends vs {config.baseline} baseline"))
    outputs = "\n".join(f"  {p}" for p in [*files_beside(config.csv_path), logs_path(config.csv_path)])
    try:
        check_output(config.csv_path, resume=config.resume, overwrite=False, mode=config.mode)
    except OutputExists as err:
        outputs += f"\nbut {err}" if not config.resume else ""
    return (f"{config.mode} {config.phase}, {config.precision}, {config.dynamic} shapes, on {config.device}: "
            f"{len(config.models)} model(s) x {len(config.backends)} backend(s)\n\n{table}\n\n"
            f"would write (logs only for failed workers):\n{outputs}")


def make_config(args: argparse.Namespace, settings=None) -> RunConfig:
    """Validate ``args`` and turn them into a RunConfig (or raise UsageError);
    ``settings``: configs/ as already read (else read here)."""
    _check_numbers(args)
    use_torchbench_dir(args)
    models = select_models(args)
    backends = parse_backends(args.backend)
    mode = "accuracy" if args.accuracy else "performance"
    output = Path(args.output) if args.output else Path(args.output_directory, default_output_name(args))
    try:
        check_output(output, resume=args.resume, overwrite=args.overwrite, mode=mode)  # removes nothing yet
    except OutputExists:
        if not args.dry_run:  # the plan says it instead
            raise
    if args.export_profiler_trace == PROFILER_TRACE_FOLDER:  # the flag with no folder
        args.export_profiler_trace = str(Path(args.output_directory, PROFILER_TRACE_FOLDER))
    folders = {flag: _output_folder(getattr(args, attr), flag) for flag, attr in
               (("--export-profiler-trace", "export_profiler_trace"), ("--dump-hlo", "dump_hlo"),
                ("--compile-cache", "compile_cache"))}
    adaptive = args.max_time is not None
    return RunConfig(
        mode=mode, training=args.training, backends=backends,
        use_xla_baseline=args.use_xla_baseline, randomize_input=args.randomize_input,
        models=tuple(models), suite=args.suite, batch_size=args.batch_size,
        repeat=args.repeat or (ADAPTIVE_MAX_REPEAT if adaptive else DEFAULT_REPEAT),
        warmup=args.warmup, device=args.device, seed=args.seed,
        output=str(output), configs=args.configs, configs_text=_settings(args, settings).text,
        timeout=args.timeout,
        isolate=args.isolate, resume=args.resume,
        precision=args.precision or "fp32", dynamic_shapes=args.dynamic_shapes,
        batch_sizes=parse_batch_sizes(args.batch_sizes),
        profiler_trace_dir=folders["--export-profiler-trace"], hlo_dir=folders["--dump-hlo"],
        cold_start=args.cold_start, warm_start=args.warm_start,
        compile_cache=str(Path(folders["--compile-cache"]).resolve()) if args.compile_cache else None,
        max_time=args.max_time, min_repeat=args.min_repeat or DEFAULT_MIN_REPEAT,
        target_ci=args.target_ci or DEFAULT_TARGET_CI, threads=args.threads,
        cpu_affinity=parse_cpus(args.cpu_affinity), compile_step=args.compile_step,
    )


def default_output_name(args) -> str:
    """The CSV a run writes without --output: one name per kind of experiment
    (mode, phase, device, then whatever differs from the defaults: suite,
    baseline, dtype, dynamic shapes), so that runs of different kinds, such
    as ``make bench``'s and a one-model check, never meet in one file."""
    phase = "training" if args.training else "inference"
    if args.compile_step:
        phase = "training_step"
    parts = ["accuracy" if args.accuracy else "performance", phase, args.device]
    if args.suite != "builtin":
        parts.append(args.suite)
    if args.use_xla_baseline:
        parts.append("xla_baseline")
    if args.precision not in (None, "fp32"):
        parts.append(args.precision)
    if args.dynamic_shapes:
        parts.append("dynamic")
    return "_".join(parts) + ".csv"


def _settings(args, settings=None):
    if settings is not None:
        return settings
    from . import settings as settings_mod

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


def _output_folder(path: str | None, flag: str) -> str | None:
    """Create the folder a diagnostics flag writes into, or say why not."""
    if path is None:
        return None
    folder = Path(path)
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
    _check_adaptive(args)
    if args.threads is not None and args.threads < 1:
        raise UsageError(f"--threads must be at least 1, got {args.threads}")
    parse_cpus(args.cpu_affinity)
    if args.compile_step and not args.training:
        raise UsageError("--compile-step compiles a training step; add --training")
    if args.warmup < 1:
        raise UsageError(f"--warmup must be at least 1 (the first call is timed), got {args.warmup}")
    if not args.timeout > 0:
        raise UsageError(f"--timeout must be positive, got {args.timeout:g}")
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
    if args.amp_dtype == "float16":
        raise UsageError("--amp-dtype float16: --amp autocasts to bfloat16 only here "
                         "(--float16 casts the model and its inputs instead)")
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


def parse_cpus(text: str | None) -> tuple[int, ...]:
    """``"0-2,5"`` -> ``(0, 1, 2, 5)``: CPUs this process may run on."""
    if text is None:
        return ()
    allowed = set(os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else range(os.cpu_count() or 1))
    cpus: set[int] = set()
    try:
        for part in text.split(","):
            low, _, high = part.strip().partition("-")
            first, last = int(low), int(high or low)
            if first < 0 or last < first:
                raise ValueError
            if last > max(allowed):  # named before the range is built: it may be huge
                raise UsageError(f"--cpu-affinity: CPU {last} not available here (allowed: {_ranges(allowed)})")
            cpus.update(range(first, last + 1))
    except ValueError:
        raise UsageError(f"--cpu-affinity takes CPU numbers and ranges such as 0-3,6, got {text!r}") from None
    outside = cpus - allowed
    if outside:
        raise UsageError(f"--cpu-affinity: CPU(s) {_ranges(outside)} not available here "
                         f"(allowed: {_ranges(allowed)})")
    return tuple(sorted(cpus))


def _ranges(cpus) -> str:
    """``{0, 1, 2, 5}`` -> ``"0-2,5"``."""
    runs: list[list[int]] = []
    for cpu in sorted(cpus):
        if runs and cpu == runs[-1][1] + 1:
            runs[-1][1] = cpu
        else:
            runs.append([cpu, cpu])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def _names(values: list[str] | None) -> list[str]:
    """Model names from a repeatable flag that also takes comma lists."""
    return [n.strip() for v in values or () for n in v.split(",") if n.strip()]


def select_models(args) -> list[str]:
    """The models to run, in a stable order, for this partition."""
    from . import suite

    try:
        known = suite.list_models(args.suite)
    except ValueError as err:
        raise UsageError(str(err)) from None
    if args.only is not None and not _names(args.only):
        raise UsageError("--only names no model")
    if args.only:
        names = [_known_name(name, known, args) for name in dict.fromkeys(_names(args.only))]
        names = sorted(set(names), key=known.index)  # the suite's order, as without --only
    else:
        include = [_regex(r, "-k/--filter") for r in args.filter]
        exclude = [_regex(r, "-x/--exclude") for r in args.exclude]
        names = [n for n in known
                 if (not include or any(r.search(n) for r in include))
                 and not any(r.search(n) for r in exclude)]
    excluded = {_known_name(name, known, args) for name in _names(args.exclude_exact)}
    names = [n for n in names if n not in excluded]
    if not names:
        raise UsageError("no model matches the selection; see --list-models")
    # Round-robin keeps shards balanced and deterministic for a given selection.
    return names[args.partition_id or 0::args.total_partitions]


def _known_name(name: str, known: list[str], args) -> str:
    """``name`` as the suite spells it: exact, else ignoring case (as TorchBench matches)."""
    matches = [n for n in known if n == name] or [n for n in known if n.lower() == name.lower()]
    if len(matches) != 1:
        from . import suite

        raise UsageError(str(suite.UnknownModelError(name, known)) + _torchbench_hint(name, args))
    return matches[0]


def _torchbench_hint(name: str, args) -> str:
    """Where a model outside our suites may be found."""
    if args.suite == "torchbench":
        return ""
    try:
        from . import suite

        if name.lower() in {n.lower() for n in suite.list_models("torchbench")}:
            return f" ({name} is a TorchBench model: add --suite torchbench)"
    except ValueError:  # no torchbenchmark importable here
        pass
    return (" (TorchBench's other models run with --suite torchbench and a pytorch/benchmark "
            "checkout: --torchbench-dir DIR)")


def use_torchbench_dir(args) -> None:
    """With --torchbench-dir, import torchbenchmark from that checkout, here and
    in the worker processes (which inherit PYTHONPATH)."""
    if args.torchbench_dir is None:
        return
    if args.suite != "torchbench":
        raise UsageError("--torchbench-dir applies to --suite torchbench only")
    folder = Path(args.torchbench_dir).resolve()
    if not (folder / "torchbenchmark" / "__init__.py").is_file():
        raise UsageError(f"--torchbench-dir: {args.torchbench_dir} holds no torchbenchmark/__init__.py; "
                         "pass the root of a pytorch/benchmark checkout")
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
    paths = os.environ.get("PYTHONPATH", "").split(os.pathsep)
    if str(folder) not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join([str(folder), *filter(None, paths)])


def _regex(pattern: str, flag: str) -> re.Pattern:
    try:
        return re.compile(pattern, re.IGNORECASE)  # as --only matches names
    except re.error as err:
        raise UsageError(f"{flag}: bad regular expression {pattern!r}: {err}") from None


# Besides ours (xla_backends.BACKENDS), the backends a user of this harness
# picks: torch_xla's, and torch's own for reference. Any other registered
# dynamo backend is accepted too.
OTHER_SUGGESTED_BACKENDS = {
    "torch_xla's": ("openxla_eval", "openxla"),
    "torch's": ("inductor", "eager", "aot_eager"),
}


def suggested_backends() -> dict[str, tuple[str, ...]]:
    import xla_backends

    return {"ours": tuple(xla_backends.BACKENDS), **OTHER_SUGGESTED_BACKENDS}


def parse_backends(values: list[str] | None) -> tuple[str, ...]:
    names = [n.strip() for v in (values or [",".join(DEFAULT_BACKENDS)]) for n in v.split(",")]
    names = list(dict.fromkeys(n for n in names if n))
    if not names:
        raise UsageError("--backend needs at least one name")
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


def check_output(csv_path: Path, *, resume: bool, overwrite: bool, mode: str = "performance") -> None:
    """Refuse an output that cannot be written, or one that would be lost
    (``OutputExists``, which a dry run reports instead)."""
    from .results import check_output as check

    check(csv_path, overwrite=overwrite, resume=resume)
    if resume and csv_path.exists() and csv_path.stat().st_size > 0:
        _check_resumable(csv_path, mode)


def _check_resumable(csv_path: Path, mode: str) -> None:
    """--resume appends rows: the file must have exactly the columns we write,
    and rows that measured what this run measures (``mode``)."""
    from . import results

    try:
        with open(csv_path, newline="", encoding="utf-8") as f:
            header = next(csv.reader(f), [])
    except (OSError, UnicodeDecodeError, csv.Error) as err:
        raise UsageError(f"cannot --resume {csv_path}: {err}") from None
    if header != results.CSV_COLUMNS:
        raise UsageError(f"cannot --resume {csv_path}: its columns differ from the ones this harness "
                         "writes (an older version's file?); pass a new --output, or --overwrite")
    try:
        rows = results.read_cells(csv_path)
        results.read_rows(csv_path)  # as resuming reads it: typed
    except ValueError as err:  # a cell that is no number, a row of the wrong length
        raise UsageError(f"cannot --resume {csv_path}: {str(err).strip().splitlines()[0]}") from None
    other = _measured_otherwise(rows, mode)
    if other:
        raise UsageError(f"cannot --resume {csv_path} in {mode} mode: it holds {other} rows "
                         f"(--{other}); pass another --output, or run with --{other}")


def _measured_otherwise(rows, mode: str) -> str | None:
    """What rows of a file measured, if not ``mode``: accuracy if one holds a
    verdict, performance if one holds a speedup (a failed row holds
    neither and can belong to either)."""
    from .results import measures

    if mode != "accuracy":
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
    return str(settings.for_model(name).batch_size(profile, training))


def _model_listing(names, settings, args) -> str:
    from tabulate import tabulate

    profile = "cpu" if args.device == "cpu" else "accelerator"
    rows = [(n, _batch_size_label(n, settings, args.suite, profile, False),
             _batch_size_label(n, settings, args.suite, profile, True)) for n in names]
    return tabulate(rows, headers=("model", f"batch size ({profile})", "training batch size"))


def _compare_parser(prog: str | None) -> argparse.ArgumentParser:
    parser = Parser(
        prog=prog,
        description="Compare two benchmark runs (result CSVs with their .jsonl samples beside them) "
        "on the per-repeat backend/baseline ratio. Exit status: 0 pass, 1 a row got slower, newly "
        "failed or was removed (or is inconclusive, with --fail-on-inconclusive), 2 bad input or "
        "an output that cannot be written.",
    )
    parser.add_argument("old", metavar="OLD", help="results CSV of the reference run")
    parser.add_argument("new", metavar="NEW", help="results CSV of the run to judge")
    parser.add_argument("--threshold", type=float, default=0.05,
                        help="smallest relative change of the ratio that counts (default 0.05 = 5%%)")
    parser.add_argument("--alpha", type=float, default=0.05,
                        help="significance level of the Mann-Whitney U test (default 0.05)")
    parser.add_argument("--min-samples", type=int, default=5,
                        help="paired samples per side needed to test; fewer: inconclusive (default 5)")
    parser.add_argument("--latency-criterion", action="store_true",
                        help="also mark a row slower when its absolute latency alone got slower")
    parser.add_argument("--allow-removed", action="store_true",
                        help="pass even if rows of OLD are missing from NEW")
    parser.add_argument("--fail-on-inconclusive", action="store_true",
                        help="fail when a row has too few samples to test")
    parser.add_argument("--markdown", metavar="PATH", help="also write the markdown comparison here")
    parser.add_argument("--json", metavar="PATH", help="also write the comparison as JSON here")
    parser.add_argument("--plot", metavar="PATH", help="also write the comparison chart (PNG) here")
    return parser


def _check_compare_args(args: argparse.Namespace) -> None:
    if not (math.isfinite(args.threshold) and args.threshold >= 0):
        raise UsageError(f"--threshold must be a number >= 0, got {args.threshold:g}")
    if not 0 < args.alpha < 1:
        raise UsageError(f"--alpha must be between 0 and 1, got {args.alpha:g}")
    if args.min_samples < 2:
        raise UsageError(f"--min-samples must be at least 2, got {args.min_samples}")
    from .results import files_beside

    if Path(args.old).resolve() == Path(args.new).resolve():
        raise UsageError(f"OLD and NEW are the same file ({args.new}); compare two runs")
    # The inputs and the files of their runs (samples, report, plot) are kept.
    inputs = {p.resolve() for run in (args.old, args.new) for p in files_beside(run)}
    named: dict = {}
    for flag in ("markdown", "json", "plot"):
        path = getattr(args, flag)
        if not path:
            continue
        if Path(path).resolve() in inputs:
            raise UsageError(f"--{flag} {path} is an input or a file of its run; choose another path")
        if Path(path).resolve() in named:
            raise UsageError(f"--{flag} and --{named[Path(path).resolve()]} name the same file {path}")
        named[Path(path).resolve()] = flag


def _check_same_measure(old: str, new: str) -> None:
    """Speedups compare with speedups: an accuracy run's verdicts are refused."""
    from . import results

    kinds = {}
    for path in (old, new):
        rows = results.read_rows(path).to_dict("records")
        kinds[path] = "accuracy" if any(results.measures(r) == "accuracy" for r in rows) else "performance"
    if "accuracy" in kinds.values():
        which = next(p for p, k in kinds.items() if k == "accuracy")
        raise UsageError(f"{which} holds --accuracy verdicts, no speedups to compare")


def _write_comparison(comparison, args: argparse.Namespace) -> None:
    """Write the requested files, creating their folders; OSError on failure."""
    from . import compare, plots  # matplotlib is slow to import: only for compare

    texts = {args.markdown: compare.render_markdown, args.json: compare.render_json}
    for path, render in texts.items():
        if path:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            Path(path).write_text(render(comparison), encoding="utf-8")
    if args.plot:
        plots.plot_comparison(comparison, args.plot)


def _error_line(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.filename:
        return f"{exc.filename}: {exc.strerror or exc}"
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def compare_main(argv: list[str], prog: str = f"{PROG} compare") -> int:
    """``runner.py compare OLD NEW``: print the comparison; 0 pass, 1 fail,
    2 bad input or an output that cannot be written."""
    from . import compare

    args = _compare_parser(prog).parse_args(argv)
    _check_compare_args(args)
    try:
        _check_same_measure(args.old, args.new)
        comparison = compare.compare(args.old, args.new, args.threshold, args.alpha, args.min_samples,
                                     latency_criterion=args.latency_criterion,
                                     allow_removed=args.allow_removed,
                                     fail_on_inconclusive=args.fail_on_inconclusive)
        print(compare.render_console(comparison), end="")
        _write_comparison(comparison, args)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        # Bad input or an unwritable output, not a regression: exit status 2,
        # never 1, which CI reads as "slower".
        raise UsageError(_error_line(exc)) from None
    return compare.exit_code(comparison)


def _merge(argv: list[str]) -> int:
    from . import merge

    return merge.main(argv)


def _dashboard(argv: list[str]) -> int:
    from . import dashboard

    return dashboard.main(argv)


SUBCOMMANDS = {"compare": compare_main, "merge": _merge, "dashboard": _dashboard}
