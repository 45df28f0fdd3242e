"""The one usage error and argument parser of every command of the harness.

``runner.py`` and its subcommands (``compare``, ``merge``, ``dashboard``) and
``python -m benchmarks.nightly`` build their parsers from ``Parser`` and raise
``UsageError`` for bad input; ``guarded`` turns either into the promise the
docs/flags.md makes: one line on stderr, exit code 2, never a traceback.
"""
from __future__ import annotations

import argparse
import sys
from typing import Callable


class UsageError(Exception):
    """A bad command line or input file: one line on stderr, exit code 2."""


class Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse would print the usage block and exit itself
        raise UsageError(message)


def guarded(prog: str, body: Callable[[], int]) -> int:
    """``body()``'s exit code; a ``UsageError`` becomes one line and 2, and
    ``--help`` (argparse's ``SystemExit``) its own code."""
    try:
        return body()
    except UsageError as err:
        print(f"{prog}: error: {err}", file=sys.stderr)
        return 2
    except SystemExit as exc:  # --help, --version
        return exc.code if isinstance(exc.code, int) else 0
