"""Calls in fresh processes: ``in_fresh_process(fn, *args, timeout=...)``;
``taking_turns`` (several fresh processes per contender, the contenders
taking turns) and ``summary`` (their median, range and count).

XLA keeps every executable it compiles in a cache of the process, keyed by
the graph's hash; the lazy baseline and ``torchxla_trivial`` compile the same
graph, trace-once backends may share one, so a runner whose first call comes
after another's in one process may find its executable ready. A cold start,
what a user pays on a model's first call, needs a process of its own.

Starting a Python that imports torch and torch_xla takes seconds (tens on a
loaded machine), so the fresh processes are forked from a server process
(``multiprocessing``'s forkserver) that has imported them once, and the
harness with them, but never touched the XLA device: its children start
without a PJRT client and without a compilation cache, as cold as a new
interpreter, at the cost of a fork. The server lives as long as the process
that started it, and serves every call it makes.

A process that is itself still that fresh (a worker that has imported the
harness and done nothing else: no XLA device touched, no parallel torch op
run) may instead fork itself (``fork=True``) and spare starting a server. Not
later: a child forked after OpenMP ran in the parent hangs in its first
parallel op, and one forked after XLA started inherits its compilation cache.

``fn`` must be a module-level function (it is sent by reference) whose
arguments and result pickle; the child takes the caller's ``sys.path``
before it unpickles them, so ``fn`` may live wherever the caller imported it
from. Its temporary files go in a folder the caller makes and removes
(``xdb-fresh-*``), so a process killed (a timeout, Ctrl-C) leaves none
behind. An exception ``fn`` raises comes back as a ``FreshProcessError`` with
its first line, as do a crash and a timeout. As with every start method of
``multiprocessing`` but fork, a script calling this must guard its entry
point (``if __name__ == "__main__":``).
"""
from __future__ import annotations

import multiprocessing
import os
import pickle
import statistics
import sys
import tempfile
import traceback
from typing import Any, Callable, Hashable

from benchmarks.run import signals
from benchmarks.run.measure import turn_order

# What the server imports before forking: the expensive imports every child
# needs (a module missing here is skipped by the server, not an error).
PRELOAD = ["torch", "torch._dynamo", "torch_xla", "torch_xla.core.xla_model",
           "torch_xla.debug.metrics", "torchvision", "xla_backends", "benchmarks.run.worker"]


class FreshProcessError(RuntimeError):
    """The call failed in its process: raised, crashed or timed out."""


def _context():
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(PRELOAD)
    return ctx


def _child(conn, sys_path, payload: bytes, tmp: str) -> None:
    # Plain pickle, by value, both ways: torch's multiprocessing reducers
    # would send tensors as file descriptors that die with this process.
    try:
        # The caller's folder: what this process leaves goes when the caller
        # removes it, even if this process is killed (a timeout, Ctrl-C).
        os.environ["TMPDIR"] = tempfile.tempdir = tmp
        sys.path[:] = sys_path
        fn, args = pickle.loads(payload)
        data = pickle.dumps(("ok", fn(*args)))
    except BaseException as err:  # noqa: BLE001 - every failure goes back to the parent
        text = str(err).strip().splitlines()
        line = f"{type(err).__name__}: {text[0] if text else ''}".strip().rstrip(":")
        data = pickle.dumps(("error", line, traceback.format_exc(limit=20)))
    conn.send_bytes(data)
    conn.close()


def in_fresh_process(fn: Callable, *args, timeout: float = 900.0, fork: bool = False) -> Any:
    """``fn(*args)`` in a fresh process (see the module's docstring)."""
    with tempfile.TemporaryDirectory(prefix="xdb-fresh-") as tmp:
        return _in_fresh_process(fn, args, timeout, fork, tmp)


def _in_fresh_process(fn: Callable, args: tuple, timeout: float, fork: bool, tmp: str) -> Any:
    ctx = multiprocessing.get_context("fork") if fork else _context()
    receive, send = ctx.Pipe(duplex=False)
    payload = pickle.dumps((fn, args))
    process = ctx.Process(target=_child, args=(send, list(sys.path), payload, tmp))
    with signals.deferred():  # a Ctrl-C raised in the fork's hooks would be dropped
        process.start()
    send.close()
    try:
        signals.check()  # one that came during the fork: the process is killed below
        if not receive.poll(timeout):
            raise FreshProcessError(f"no result after {timeout:g} s")
        try:
            result = pickle.loads(receive.recv_bytes())
        except EOFError:
            process.join(5)
            raise FreshProcessError(f"the process died (exit code {process.exitcode})") from None
    finally:
        receive.close()
        if process.is_alive():
            process.kill()
        process.join()
    if result[0] == "error":
        raise FreshProcessError(result[1])
    return result[1]


def taking_turns(fn: Callable, calls: dict[Hashable, tuple], repeat: int, *, timeout: float = 900.0,
                 fork: bool = False, on_error: Callable[[Hashable, FreshProcessError], None] | None = None
                 ) -> dict[Hashable, list]:
    """``fn(*calls[key])`` for every key, ``repeat`` times, each in a fresh
    process, as pyperf spreads a benchmark over several worker processes:
    one process is one draw of what the process's start, the machine's load
    and the scheduler do to a first call, and a cold first call on a shared
    machine varies by tens of percent between processes. The keys take
    turns in ``measure.turn_order``'s order (AB BA..., ABC BCA CAB CBA ACB
    BAC...), so load drifting during the rounds favours none. Per key, its
    results in order; a key whose process fails is told to ``on_error`` and not tried again
    (a failure in a fresh process is seldom luck, and each try costs a model
    load)."""
    keys, found = list(calls), {key: [] for key in calls}
    for i in range(repeat):
        for key in turn_order(keys, i):
            try:
                found[key].append(in_fresh_process(fn, *calls[key], timeout=timeout, fork=fork))
            except FreshProcessError as err:
                if on_error is not None:
                    on_error(key, err)
                keys.remove(key)
    return found


def summary(tries: list[dict]) -> dict:
    """One first call from several processes' (dicts of numbers, each with
    ``seconds``): the median of each number (of a count, the lower median,
    so it stays a count), ``low``/``high``, the range of the seconds,
    ``n``, how many processes, and ``tries``, each one's seconds."""
    seconds = [t["seconds"] for t in tries]
    medians = {}
    for key in dict.fromkeys(k for t in tries for k in t):
        values = [t[key] for t in tries if t.get(key) is not None]
        if values:
            counts = all(isinstance(v, int) for v in values)
            medians[key] = statistics.median_low(values) if counts else statistics.median(values)
    return {**medians, "low": min(seconds), "high": max(seconds), "n": len(tries), "tries": seconds}
