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
DEVICES = {"cpu": "CPU", "tpu": "TPU"}  # --device -> PJRT_DEVICE


class UsageError(Exception):
    """A bad command line or input file: one line, exit code 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse would print usage and exit itself
        raise UsageError(message)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog=PROG, description="Benchmark torch._dynamo backends on TorchBench-named models.",
                epilog="Subcommands: `runner.py compare OLD.csv NEW.csv`, "
                       "`runner.py merge OUT.csv IN.csv...`; each takes --help.")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--performance", action="store_true", help="measure speedups (default)")
    mode.add_argument("--accuracy", action="store_true", help="compare outputs with the baseline")
    phase = p.add_mutually_exclusive_group()
    phase.add_argument("--inference", action="store_true", help="run inference (default)")
    phase.add_argument("--training", action="store_true", help="run a training step")
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
    sel.add_argument("--suite", choices=("builtin", "torchbench"), default="builtin",
                     help="builtin models, or an installed torchbenchmark package")
    sel.add_argument("--list-models", action="store_true", help="print the models and exit")
    sel.add_argument("--total-partitions", type=int, default=1, metavar="N",
                     help="split the selected models into N shards (for CI)")
    sel.add_argument("--partition-id", type=int, default=0, metavar="I", help="run shard I (0-based)")

    m = p.add_argument_group("measurement")
    m.add_argument("--batch-size", type=int, help="override the batch size of configs/")
    m.add_argument("--repeat", type=int, default=30, help="timed repeats (default 30)")
    m.add_argument("--warmup", type=int, default=3, help="warm-up calls; the first is timed alone")
    m.add_argument("--device", choices=sorted(DEVICES), default="cpu", help="XLA device (PJRT_DEVICE)")
    m.add_argument("--seed", type=int, default=0, help="seed of weights and inputs")
    m.add_argument("--configs", metavar="YAML", help="per-model settings (default configs/models.yaml)")

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
          f"vs {config.baseline} baseline -> {config.csv_path}", file=sys.stderr)
    csv_path = orchestrate.run(config)
    print(orchestrate.finish(csv_path))
    print(f"\nwrote {csv_path} and {csv_path.with_suffix('.md')}", file=sys.stderr)
    return 0


def make_config(args: argparse.Namespace) -> RunConfig:
    """Validate ``args`` and turn them into a RunConfig (or raise UsageError)."""
    _check_numbers(args)
    models = select_models(args)
    backends = parse_backends(args.backend)
    mode = "accuracy" if args.accuracy else "performance"
    phase = "training" if args.training else "inference"
    output = Path(args.output) if args.output else Path(
        args.output_directory, f"{mode}_{phase}_{args.device}.csv")
    check_output(output, resume=args.resume, overwrite=args.overwrite)
    return RunConfig(
        mode=mode, training=args.training, backends=backends,
        use_xla_baseline=args.use_xla_baseline, randomize_input=args.randomize_input,
        models=tuple(models), suite=args.suite, batch_size=args.batch_size,
        repeat=args.repeat, warmup=args.warmup, device=args.device, seed=args.seed,
        output=str(output), configs=args.configs, timeout=args.timeout,
        isolate=args.isolate, resume=args.resume,
    )


def _check_numbers(args) -> None:
    if args.batch_size is not None and args.batch_size < 1:
        raise UsageError(f"--batch-size must be at least 1, got {args.batch_size}")
    if args.repeat < 1:
        raise UsageError(f"--repeat must be at least 1, got {args.repeat}")
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


def select_models(args) -> list[str]:
    """The models to run, in a stable order, for this partition."""
    from . import suite

    try:
        known = suite.list_models(args.suite)
    except ValueError as err:
        raise UsageError(str(err)) from None
    if args.only:
        if args.only not in known:
            raise UsageError(str(suite.UnknownModelError(args.only, known)))
        names = [args.only]
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
        from .results import markdown_path, samples_path

        # Everything an earlier run wrote beside the CSV, so nothing stale stays.
        for path in (csv_path, samples_path(csv_path), markdown_path(csv_path),
                     csv_path.with_suffix(".png")):
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
    rows = [(n, settings.for_model(n).batch_size(profile, False),
             settings.for_model(n).batch_size(profile, True)) for n in names]
    return tabulate(rows, headers=("model", f"batch size ({profile})", "training batch size"))


def _compare(argv: list[str]) -> int:
    from . import compare

    return compare.main(argv, prog=f"{PROG} compare")


def _merge(argv: list[str]) -> int:
    from . import merge

    return merge.main(argv)


SUBCOMMANDS = {"compare": _compare, "merge": _merge}
