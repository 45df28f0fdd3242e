"""The command line: ``python runner.py [flags]`` runs benchmarks; ``compare``,
``merge`` and ``dashboard`` are its subcommands.

* ``flags``: the run command's parser, built from its argument groups;
* ``run``: validation, selection and the run (``make_config`` -> RunConfig);
* ``compare``: the gate's command line; ``merge`` and ``dashboard`` keep
  theirs in ``benchmarks.results.merge`` and ``benchmarks.results.dashboard``.

Everything is validated before any model runs; a bad value is reported as one
line on stderr with exit code 2, never a traceback.
"""
from __future__ import annotations

import sys

from benchmarks.run.affinity import parse_cpus
from benchmarks.usage import UsageError, guarded
from benchmarks.cli.compare import compare_main
from benchmarks.cli.flags import (ADAPTIVE_MAX_REPEAT, DEFAULT_BACKENDS, DEFAULT_MIN_REPEAT, DEFAULT_TARGET_CI,
                    PROFILER_TRACE_FOLDER, PROG, build_parser)
from benchmarks.cli.run import make_config, run_command, select_models, suggested_backends

__all__ = ["ADAPTIVE_MAX_REPEAT", "DEFAULT_BACKENDS", "DEFAULT_MIN_REPEAT", "DEFAULT_TARGET_CI",
           "PROFILER_TRACE_FOLDER", "PROG", "SUBCOMMANDS", "UsageError", "build_parser", "compare_main",
           "main", "make_config", "parse_cpus", "select_models", "suggested_backends"]


def main(argv: list[str]) -> int:
    if argv and argv[0] in SUBCOMMANDS:
        name, rest = argv[0], argv[1:]
        return guarded(f"{PROG} {name}", lambda: SUBCOMMANDS[name](rest))
    try:
        return guarded(PROG, lambda: run_command(build_parser().parse_args(argv)))
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted; rows written so far are kept (rerun with --resume)",
              file=sys.stderr)
        return 130


def _merge(argv: list[str]) -> int:
    from benchmarks.results import merge

    return merge.main(argv)


def _dashboard(argv: list[str]) -> int:
    from benchmarks.results import dashboard

    return dashboard.main(argv)


SUBCOMMANDS = {"compare": compare_main, "merge": _merge, "dashboard": _dashboard}
