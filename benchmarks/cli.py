"""The command line: ``python runner.py [flags]``, plus ``compare`` and ``merge``.

Flags keep the names users know from PyTorch's ``benchmarks/dynamo`` harness.
Everything is validated before any model runs; a bad value is reported as one
line on stderr with exit code 2, never a traceback.
"""
from __future__ import annotations

import argparse
import csv
import difflib
import os
import re
import shutil
import sys
from pathlib import Path

from .config import RunConfig

PROG = "runner.py"
DEFAULT_BACKENDS = ("torchxla_trivial", "torchxla_trace_once")
SUITES = ("seed", "builtin", "torchbench")  # benchmarks.suite.SUITES, without importing torch
DEVICES = {"cpu": "CPU", "tpu": "TPU"}  # --device -> PJRT_DEVICE
DEFAULT_REPEAT = 30
ADAPTIVE_MAX_REPEAT = 1000  # --max-time without --repeat: time and precision decide
DEFAULT_MIN_REPEAT = 5
DEFAULT_TARGET_CI = 0.03


class UsageError(Exception):
    """A bad command line or input file: one line, exit code 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse would print usage and exit itself
        raise UsageError(message)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog=PROG, description="Benchmark torch._dynamo backends on TorchBench-named models.",
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
    sel.add_argument("--only", metavar="NAME", help="run just this model")
    sel.add_argument("-k", "--filter", action="append", default=[], metavar="REGEX",
                     help="run models whose name matches (repeatable)")
    sel.add_argument("-x", "--exclude", action="append", default=[], metavar="REGEX",
                     help="skip models whose name matches (repeatable)")
    sel.add_argument("--suite", choices=SUITES, default="builtin",
                     help="seed: the ten models of the first experiment; builtin: all our "
                          "models (default); torchbench: a pytorch/benchmark checkout's")
    sel.add_argument("--torchbench-dir", metavar="DIR",
                     help="the pytorch/benchmark checkout for --suite torchbench "
                          "(default: torchbenchmark from PYTHONPATH)")
    sel.add_argument("--list-models", action="store_true", help="print the models and exit")
    sel.add_argument("--total-partitions", type=int, default=1, metavar="N",
                     help="split the selected models into N shards (for CI)")
    sel.add_argument("--partition-id", type=int, default=0, metavar="I", help="run shard I (0-based)")

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
    m.add_argument("--device", choices=sorted(DEVICES), default="cpu", help="XLA device (PJRT_DEVICE)")
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
    m.add_argument("--dynamic-shapes", action="store_true",
                   help="mark the batch dimension dynamic (torch._dynamo.mark_dynamic)")
    m.add_argument("--batch-sizes", metavar="N,N,...",
                   help="cycle these batch sizes across repeats; one row per batch size")

    d = p.add_argument_group("diagnostics")
    d.add_argument("--export-profiler-trace", metavar="DIR",
                   help="after timing, profile one step of each runner into DIR/<model>_<runner>.json")
    d.add_argument("--dump-hlo", metavar="DIR",
                   help="write the HLO of each graph of the XLA runners into DIR")

    f = p.add_argument_group("first calls")
    f.add_argument("--no-cold-start", dest="cold_start", action="store_false",
                   help="time each runner's first call in the measuring process instead of a fresh "
                        "process of its own (faster; another runner's executable may then serve it: "
                        "compilation_kind in_process)")
    f.add_argument("--warm-start", action="store_true",
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

    o = p.add_argument_group("output")
    o.add_argument("--output", metavar="PATH", help="CSV path; markdown beside it with .md")
    o.add_argument("--output-directory", default="results", metavar="DIR",
                   help="folder of the default output (default results/)")
    return p


def main(argv: list[str]) -> int:
    try:
        if argv and argv[0] in SUBCOMMANDS:
            return SUBCOMMANDS[argv[0]](argv[1:])
        return _run(build_parser().parse_args(argv))
    except UsageError as err:
        print(f"{PROG}: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted; rows written so far are kept (rerun with --resume)",
              file=sys.stderr)
        return 130


def _run(args: argparse.Namespace) -> int:
    _check_numbers(args)  # before the slow imports: a typo should fail at once
    use_torchbench_dir(args)
    from . import settings as settings_mod
    from . import suite

    try:
        settings = settings_mod.load_settings(Path(args.configs) if args.configs else None)
    except settings_mod.ConfigError as err:
        raise UsageError(str(err)) from None
    if args.list_models:
        try:
            names = suite.list_models(args.suite)
        except ValueError as err:  # e.g. --suite torchbench without the package
            raise UsageError(str(err)) from None
        print(_model_listing(names, settings, args))
        return 0
    config = make_config(args)
    from . import orchestrate

    os.environ["PJRT_DEVICE"] = DEVICES[config.device]
    print(f"{PROG}: {len(config.models)} model(s) x {', '.join(config.backends)} "
          f"vs {config.baseline} baseline ({config.phase}, {config.precision}, {config.dynamic} shapes) "
          f"-> {config.csv_path}", file=sys.stderr)
    csv_path = orchestrate.run(config)
    print(orchestrate.finish(csv_path))
    if config.compile_cache:
        from . import report, results

        warning = report.persistent_cache_warning(results.read_rows(csv_path))
        if warning:
            print(f"warning: {warning}", file=sys.stderr)
    print(f"\nwrote {csv_path} and {csv_path.with_suffix('.md')}", file=sys.stderr)
    return 0


def make_config(args: argparse.Namespace) -> RunConfig:
    """Validate ``args`` and turn them into a RunConfig (or raise UsageError)."""
    _check_numbers(args)
    use_torchbench_dir(args)
    models = select_models(args)
    backends = parse_backends(args.backend)
    mode = "accuracy" if args.accuracy else "performance"
    phase = "training" if args.training else "inference"
    output = Path(args.output) if args.output else Path(
        args.output_directory, f"{mode}_{phase}_{args.device}.csv")
    check_output(output, resume=args.resume, overwrite=args.overwrite)
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
        output=str(output), configs=args.configs, timeout=args.timeout,
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
    if not 0 <= args.partition_id < args.total_partitions:
        raise UsageError(f"--partition-id must be in [0, {args.total_partitions - 1}], "
                         f"got {args.partition_id}")
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
    cpus: set[int] = set()
    try:
        for part in text.split(","):
            low, _, high = part.strip().partition("-")
            first, last = int(low), int(high or low)
            if first < 0 or last < first:
                raise ValueError
            cpus.update(range(first, last + 1))
    except ValueError:
        raise UsageError(f"--cpu-affinity takes CPU numbers and ranges such as 0-3,6, got {text!r}") from None
    allowed = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else set(range(os.cpu_count() or 1))
    outside = sorted(cpus - set(allowed))
    if outside:
        raise UsageError(f"--cpu-affinity: CPU(s) {', '.join(map(str, outside))} not available here "
                         f"(allowed: {', '.join(map(str, sorted(allowed)))})")
    return tuple(sorted(cpus))


def select_models(args) -> list[str]:
    """The models to run, in a stable order, for this partition."""
    from . import suite

    try:
        known = suite.list_models(args.suite)
    except ValueError as err:
        raise UsageError(str(err)) from None
    if args.only:
        matches = [n for n in known if n == args.only] or [
            n for n in known if n.lower() == args.only.lower()]  # as TorchBench matches names
        if len(matches) != 1:
            raise UsageError(str(suite.UnknownModelError(args.only, known)))
        names = matches
    else:
        include = [_regex(r, "-k/--filter") for r in args.filter]
        exclude = [_regex(r, "-x/--exclude") for r in args.exclude]
        names = [n for n in known
                 if (not include or any(r.search(n) for r in include))
                 and not any(r.search(n) for r in exclude)]
    if not names:
        raise UsageError("no model matches the selection; see --list-models")
    # Round-robin keeps shards balanced and deterministic for a given selection.
    return names[args.partition_id::args.total_partitions]


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
        return re.compile(pattern)
    except re.error as err:
        raise UsageError(f"{flag}: bad regular expression {pattern!r}: {err}") from None


def parse_backends(values: list[str] | None) -> tuple[str, ...]:
    names = [n.strip() for v in (values or [",".join(DEFAULT_BACKENDS)]) for n in v.split(",")]
    names = list(dict.fromkeys(n for n in names if n))
    if not names:
        raise UsageError("--backend needs at least one name")
    available = available_backends()
    for name in names:
        if name not in available:
            close = difflib.get_close_matches(name, available, n=3)
            hint = f"did you mean: {', '.join(close)}? " if close else ""
            raise UsageError(f"unknown backend {name!r}; {hint}available: {', '.join(available)}")
    return tuple(names)


def available_backends() -> list[str]:
    """Every registered dynamo backend, experimental ones (openxla_eval) included."""
    import torch._dynamo

    import xla_backends  # noqa: F401 - registers our backend names

    return sorted(set(torch._dynamo.list_backends(exclude_tags=())))


def check_output(csv_path: Path, *, resume: bool, overwrite: bool) -> None:
    """Refuse an output that cannot be written, or one that would be lost."""
    if csv_path.suffix != ".csv":
        raise UsageError(f"--output must name a .csv file, got {csv_path}")
    if csv_path.is_dir():
        raise UsageError(f"output {csv_path} is a directory")
    folder = csv_path.parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise UsageError(f"cannot create output folder {folder}: {err.strerror}") from None
    if not os.access(folder, os.W_OK) or (csv_path.exists() and not os.access(csv_path, os.W_OK)):
        raise UsageError(f"output {csv_path} is not writable")
    if csv_path.exists() and csv_path.stat().st_size > 0 and not (resume or overwrite):
        raise UsageError(f"{csv_path} exists; pass --resume to complete it or --overwrite to replace it")
    if resume and csv_path.exists() and csv_path.stat().st_size > 0:
        _check_resumable(csv_path)
    if overwrite:
        from .results import files_beside

        # Everything an earlier run wrote beside the CSV, so nothing stale stays.
        for path in files_beside(csv_path):
            path.unlink(missing_ok=True)
        shutil.rmtree(csv_path.with_suffix(".logs"), ignore_errors=True)


def _check_resumable(csv_path: Path) -> None:
    """--resume appends rows: the file must have exactly the columns we write."""
    from .results import CSV_COLUMNS

    try:
        with open(csv_path, newline="", encoding="utf-8") as f:
            header = next(csv.reader(f), [])
    except (OSError, UnicodeDecodeError, csv.Error) as err:
        raise UsageError(f"cannot --resume {csv_path}: {err}") from None
    if header != CSV_COLUMNS:
        raise UsageError(f"cannot --resume {csv_path}: its columns differ from the ones this harness "
                         "writes (an older version's file?); pass a new --output, or --overwrite")


def _model_listing(names, settings, args) -> str:
    from tabulate import tabulate

    profile = "cpu" if args.device == "cpu" else "accelerator"

    def size(name: str, training: bool):
        if args.suite == "torchbench" and not settings.lists(name):
            return "TorchBench's default"
        return settings.for_model(name).batch_size(profile, training)

    rows = [(n, size(n, False), size(n, True)) for n in names]
    return tabulate(rows, headers=("model", f"batch size ({profile})", "training batch size"))


def _compare(argv: list[str]) -> int:
    from . import compare

    return compare.main(argv, prog=f"{PROG} compare")


def _merge(argv: list[str]) -> int:
    from . import merge

    return merge.main(argv)


def _dashboard(argv: list[str]) -> int:
    from . import dashboard

    return dashboard.main(argv)


SUBCOMMANDS = {"compare": _compare, "merge": _merge, "dashboard": _dashboard}
