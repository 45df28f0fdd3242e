"""Step 3: the executable: where each HLO parameter comes from, the graph's
hash, and an XLA compile that does not run the graph.

Each HLO parameter is the buffer of a call argument (fed the caller's tensor
on each call), the device RNG seed (fed a fresh seed on each call), or a
constant the trace captured (fed as it is).

The compile may run on a thread of its own (``background=True``): XLA
releases the GIL while it compiles, so the caller goes on (dynamo building
its guards) and the first run waits for it (``Executable.compiling``).
"""
from __future__ import annotations

import threading
from concurrent.futures import Future
from dataclasses import dataclass

import torch

from . import _xlac


@dataclass(frozen=True)
class Executable:
    graph_hash: bytes
    gather: tuple  # per HLO parameter: index into args + consts (+ the seed, last)
    consts: tuple  # parameters captured by the trace, fed as they are
    uses_seed: bool
    n_results: int
    compiling: Future | None = None  # a compile still running on another thread


def compile_results(results: list, arg_handles: dict, n_args: int,
                    background: bool = False) -> Executable:
    """Hash and compile the graph computing ``results`` (trace tensors); with
    ``background``, the compile runs on another thread."""
    if not results:
        return Executable(b"", (), (), False, 0)
    arg_of_handle = {h: i for i, h in arg_handles.items()}
    ids, values = _xlac.graph_parameters(results)
    seed_id = _xlac.seed_parameter_id()
    gather, consts, uses_seed = [], [], False
    for tid, value, handle in zip(ids, values, _xlac.data_handles(values)):
        if handle in arg_of_handle:
            gather.append(arg_of_handle[handle])
        elif tid == seed_id and value.dim() == 0 and value.dtype == torch.int64:
            gather.append(None)  # the seed: its slot comes after the constants
            uses_seed = True
        else:
            gather.append(n_args + len(consts))
            consts.append(value)
    seed_slot = n_args + len(consts)
    gather = tuple(seed_slot if g is None else g for g in gather)
    graph_hash = _xlac.graph_hash(results)
    compiling = None
    if background:
        compiling = _in_background(_xlac.compile_graph, results)
    else:
        _xlac.compile_graph(results)
    return Executable(graph_hash, gather, tuple(consts), uses_seed, len(results), compiling)


def _in_background(fn, *args) -> Future:
    """``fn(*args)`` on a new thread; the future holds its error, if any. The
    thread is not a daemon: an interpreter exiting mid-compile waits for it
    rather than tearing XLA down under it. A thread per compile rather than
    a pool: a process forked after a compile would inherit a pool whose
    thread it lacks, and queue its compiles forever."""
    future: Future = Future()

    def work():
        try:
            fn(*args)
        except BaseException as err:  # handed to whoever waits for the future
            future.set_exception(err)
        else:
            future.set_result(None)

    threading.Thread(target=work, name="torchxla_trace_once compile").start()
    return future
