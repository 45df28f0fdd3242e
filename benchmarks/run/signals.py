"""Ctrl-C and SIGTERM (what CI runners and Slurm send at a time limit) end
a run alike.

``stop_on_signals()`` is a context within which SIGINT raises
``KeyboardInterrupt`` and SIGTERM ``Terminated`` (a ``KeyboardInterrupt``):
whatever cleans up after Ctrl-C (the worker killed, its temporary folder
removed, the rows kept and reported) runs after SIGTERM too.
``exit_status`` gives the status a shell reports for each: 130 after
Ctrl-C, 143 after SIGTERM.

A handler's exception is lost where Python ignores exceptions: a signal
that lands while the process forks (a worker starting) would raise inside
an at-fork hook, which Python prints and drops. Around a fork, within
``deferred()``, the handler only remembers the signal, and ``check()``,
called where the run can stop cleanly, raises it. Nothing here imports
more than the standard library: the command line installs it before its
slow imports.
"""
from __future__ import annotations

import signal
import sys
from contextlib import contextmanager
from typing import Callable

EXIT_INTERRUPTED, EXIT_TERMINATED = 128 + signal.SIGINT, 128 + signal.SIGTERM
HANDLED = (signal.SIGINT, signal.SIGTERM)


class Terminated(KeyboardInterrupt):
    """SIGTERM received: the run stops as on Ctrl-C."""


def _stop(signum: int) -> KeyboardInterrupt:
    return Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()


class _Handler:
    """Raises the stop of the signal received (only remembers it, for
    ``check``, while ``deferring``)."""

    def __init__(self) -> None:
        self.received: int | None = None
        self.deferring = 0

    def __call__(self, signum, frame) -> None:
        self.received = signum
        if not self.deferring:
            raise _stop(signum)


def _handler() -> _Handler | None:
    handler = signal.getsignal(signal.SIGTERM)
    return handler if isinstance(handler, _Handler) else None


def exit_status(stop: KeyboardInterrupt) -> int:
    """130 after Ctrl-C, 143 after SIGTERM, as a shell reports them."""
    return EXIT_TERMINATED if isinstance(stop, Terminated) else EXIT_INTERRUPTED


def reraise(status: int) -> None:
    """Raise the stop an exit status reports (130: Ctrl-C, 143: SIGTERM):
    the signal that stopped a run called in-process stops its caller too;
    any other status, nothing."""
    if status in (EXIT_INTERRUPTED, EXIT_TERMINATED):
        raise Terminated() if status == EXIT_TERMINATED else KeyboardInterrupt()


def describe(stop: BaseException) -> str:
    """``"interrupted (SIGTERM)"``: what stopped a run, in a few words."""
    if isinstance(stop, Terminated):
        return "interrupted (SIGTERM)"
    if isinstance(stop, KeyboardInterrupt):
        return "interrupted (Ctrl-C)"
    return f"stopped by {type(stop).__name__}"


def check() -> None:
    """Raise the stop of a signal received within ``stop_on_signals``
    (one ``deferred`` kept back, or any since); else nothing."""
    handler = _handler()
    if handler is not None and handler.received is not None:
        raise _stop(handler.received)


@contextmanager
def deferred():
    """Within (a fork): a signal is only remembered; ``check()`` after it
    raises its stop where the caller can clean up."""
    handler = _handler()
    if handler is None:
        yield
        return
    handler.deferring += 1
    try:
        yield
    finally:
        handler.deferring -= 1


@contextmanager
def stop_on_signals():
    """Within: SIGINT and SIGTERM stop the process as ``KeyboardInterrupt``
    and ``Terminated`` (in the main thread; elsewhere Python cannot install
    handlers and the signals keep theirs)."""
    handler = _Handler()
    try:
        previous = {signum: signal.signal(signum, handler) for signum in HANDLED}
    except ValueError:  # not the main thread
        previous = {}
    try:
        yield
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old if old is not None else signal.SIG_DFL)


def stoppable(prog: str, body: Callable[[], int], unfinished: str) -> int:
    """``body()``'s exit status, run within ``stop_on_signals``; a stop that
    reaches here becomes one line (``prog: interrupted (SIGTERM) ...``,
    ending with ``unfinished``) and 130 or 143, not a traceback."""
    try:
        with stop_on_signals():
            return body()
    except KeyboardInterrupt as stop:
        print(f"{prog}: {describe(stop)}{unfinished}", file=sys.stderr)
        return exit_status(stop)
