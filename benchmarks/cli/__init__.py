"""The command line: ``python runner.py [flags]`` runs benchmarks; ``compare``,
``merge``, ``dashboard``, ``bisect``, ``update-expected`` and ``explain`` are its subcommands.

* ``flags``: the run command's parser, built from its argument groups;
* ``run``: validation, selection and the run (``make_config`` -> RunConfig);
* ``run_benchmarks`` and ``planned_models``: a run (or its selection) for
  callers that set backends, selection, shard and output themselves (the
  nightly job and its confirmation re-run), on top of ``runner.py`` flags;
* ``compare``: the gate's command line; ``bisect``: the first commit at
  which a measurement regressed; ``update_expected``: a run's statuses and
  graph breaks accepted as expected; ``merge`` and ``dashboard`` keep
  theirs in ``benchmarks.results.merge`` and ``benchmarks.results.dashboard``.

Everything is validated before any model runs; a bad value is reported as one
line on stderr with exit code 2, never a traceback.
"""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Sequence

from benchmarks.run import signals
from benchmarks.run.affinity import parse_cpus
from benchmarks.usage import UsageError, guarded
from benchmarks.cli.compare import compare_main
from benchmarks.cli.flags import (ADAPTIVE_MAX_REPEAT, DEFAULT_BACKENDS, DEFAULT_COLD_START_REPEAT, DEFAULT_MIN_REPEAT,
                    DEFAULT_TARGET_CI, PROFILER_TRACE_FOLDER, PROG, build_parser)
from benchmarks.cli.run import make_config, run_command, select_models, suggested_backends
from benchmarks.cli.selection import use_torchbench_dir

__all__ = ["ADAPTIVE_MAX_REPEAT", "DEFAULT_BACKENDS", "DEFAULT_COLD_START_REPEAT", "DEFAULT_MIN_REPEAT", "DEFAULT_TARGET_CI",
           "PROFILER_TRACE_FOLDER", "PROG", "SUBCOMMANDS", "UsageError", "build_parser", "compare_main",
           "main", "make_config", "parse_cpus", "planned_models", "run_benchmarks", "select_models",
           "suggested_backends"]


def main(argv: list[str]) -> int:
    if argv and argv[0] in SUBCOMMANDS:
        name, rest = argv[0], argv[1:]
        return guarded(f"{PROG} {name}", lambda: SUBCOMMANDS[name](rest))
    return _run(lambda: build_parser().parse_args(_no_mistyped_subcommand(argv)))


def _no_mistyped_subcommand(argv: list[str]) -> list[str]:
    """``argv``; a first word close to a subcommand's name (``comapre``)
    is refused with the name meant, before argparse calls it an unknown argument."""
    import difflib

    if argv and not argv[0].startswith("-"):
        close = difflib.get_close_matches(argv[0], list(SUBCOMMANDS), n=1, cutoff=0.6)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise UsageError(f"unknown subcommand {argv[0]!r}; {hint}subcommands: {', '.join(SUBCOMMANDS)} "
                         f"(a run takes flags only: {PROG} --help)")
    return argv


def _run(make_args) -> int:
    """A run, with SIGTERM (a CI runner's or Slurm's time limit) handled as
    Ctrl-C: the run says what it kept (``run_command``), the status is 143."""
    return signals.stoppable(PROG, lambda: guarded(PROG, lambda: run_command(make_args())),
                             " before any model ran")


def _job(flags: Sequence[str], backends: Sequence[str], *, output: Path | None = None,
         filters: Sequence[str] = (), only: Sequence[str] = (), partition: tuple[int, int] | None = None,
         resume: bool = False, overwrite: bool = False) -> argparse.Namespace:
    """``flags`` (runner.py's settings) parsed, with what the caller sets
    itself: ``filters`` narrow the flags' ``-k``; ``only`` replaces their
    ``--only`` (a re-run of one model of a night run with ``--only``)."""
    args = build_parser().parse_args(list(flags))
    args.backend = [",".join(backends)]
    args.filter = [*args.filter, *filters]
    if only:
        args.only = list(only)
    if output is not None:
        args.output = str(output)
    if partition is not None:
        args.partition_id, args.total_partitions = partition
    args.resume, args.overwrite = args.resume or resume, args.overwrite or overwrite
    args.judged_elsewhere = True  # a run whose rows all failed is the caller's to judge, not a status
    return args


def run_benchmarks(flags: Sequence[str], backends: Sequence[str], **job) -> int:
    """Run as ``runner.py flags`` would, with backends, selection (``filters``,
    ``only``), shard (``partition``: index, count), ``output`` and
    ``resume``/``overwrite`` given by the caller; the exit status."""
    return _run(lambda: _job(flags, backends, **job))


def planned_models(flags: Sequence[str], backends: Sequence[str], **job) -> list[str]:
    """The models ``run_benchmarks`` with these arguments would run (raises
    ``UsageError`` when they cannot be worked out, e.g. a bad flag)."""
    args = _job(flags, backends, **job)
    use_torchbench_dir(args)
    return select_models(args)


def _merge(argv: list[str]) -> int:
    from benchmarks.results import merge

    return merge.main(argv)


def _dashboard(argv: list[str]) -> int:
    from benchmarks.results import dashboard

    return dashboard.main(argv)


def _bisect(argv: list[str]) -> int:
    from benchmarks.cli.bisect import bisect_main

    return bisect_main(argv)


def _update_expected(argv: list[str]) -> int:
    from benchmarks.cli.update_expected import update_expected_main

    return update_expected_main(argv)


def _explain(argv: list[str]) -> int:
    from benchmarks.cli.explain import explain_main

    return explain_main(argv)


SUBCOMMANDS = {"compare": compare_main, "merge": _merge, "dashboard": _dashboard, "bisect": _bisect,
               "update-expected": _update_expected, "explain": _explain}
