"""Step 3: the executable: where each HLO parameter comes from, the graph's
hash, and an XLA compile that does not run the graph.

Each HLO parameter is the buffer of a call argument (fed the caller's tensor
on each call), a float argument's value (fed the call's value, see
``scalars``), the device RNG seed (fed a fresh seed on each call), or a
constant the trace captured (fed as it is).

Buffers the caller marked as donors (``torch.ops.xla.dynamo_set_buffer_donor_``
in the graph, or ``_set_buffer_donation`` on an argument before the first
call) are honoured: XLA may reuse such an argument's buffer for an output,
and the argument's data is deleted by the run. Which parameters are donated
is fixed when the graph is compiled, as in torch_xla's own bridge: later
calls donate the same positions whatever their flags say, so flipping a
flag never compiles again. Arguments the call still reads after the run
(returned, viewed or read before an update), captured constants and 0-dim
arguments (see ``_donors``) are never donated.

The compile may run on a thread of its own (``background=True``): XLA
releases the GIL while it compiles, so the caller goes on (dynamo building
its guards) and the first run waits for it (``Executable.compiling``). That
pays only with a second CPU to run the thread on (``overlap_pays``): on one,
the two take turns and the first call is no sooner. Other processes' load is
no reason to give it up: the scheduler shares a busy CPU per thread, so a
second runnable thread gets this process a larger share of a contended
machine (measured: docs/methodology.md, "First calls").
"""
from __future__ import annotations

import math
import os
import threading
import traceback
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass

import torch

from . import _xlac


@dataclass(frozen=True)
class Executable:
    graph_hash: bytes
    gather: tuple  # per HLO parameter: index into args + consts + scalars (+ the seed, last)
    consts: tuple  # parameters captured by the trace, fed as they are
    uses_seed: bool
    n_results: int
    compiling: Future | None = None  # a compile still running on another thread
    donated: tuple = ()  # arg indices whose buffers the executable may reuse
    scalars: tuple = ()  # (float argument's position, dtype) per parameter it feeds


@dataclass(frozen=True)
class Donors:
    """Which arguments marked as donors a graph may donate: none
    (``allowed=False``: a part of a cut graph, whose arguments a later part
    may read), or all but ``keep`` and those its plan reads after the run."""

    allowed: bool = True
    keep: frozenset = frozenset()

    def kept(self, plan, n_args: int):
        """The argument positions never to donate."""
        if not self.allowed:
            return range(n_args)
        return plan.read_after_run() | self.keep


NO_DONATION = Donors(allowed=False)


def compile_results(results: list, arg_handles: dict, n_args: int,
                    background: bool = False, keep=frozenset(), fed: dict | None = None) -> Executable:
    """Hash and compile the graph computing ``results`` (trace tensors); with
    ``background``, the compile runs on another thread. Arguments marked as
    donors are donated, but for those in ``keep`` (read after the run).
    ``fed`` maps the buffers of parameters that float arguments feed to
    their positions."""
    if not results:
        return Executable(b"", (), (), False, 0)
    arg_of_handle = {h: i for i, h in arg_handles.items()}
    fed = fed or {}
    ids, values = _xlac.graph_parameters(results)
    seed_id = _xlac.seed_parameter_id()
    gather, consts, scalars, uses_seed = [], [], [], False
    for tid, value, handle in zip(ids, values, _xlac.data_handles(values)):
        if handle in arg_of_handle:
            gather.append(arg_of_handle[handle])
        elif tid == seed_id and value.dim() == 0 and value.dtype == torch.int64:
            gather.append(None)  # the seed: its slot comes last
            uses_seed = True
        elif handle in fed:
            gather.append(("scalar", len(scalars)))
            scalars.append((fed[handle], value.dtype))
        else:
            gather.append(n_args + len(consts))
            consts.append(value)
    first_scalar = n_args + len(consts)
    seed_slot = first_scalar + len(scalars)
    gather = tuple(seed_slot if g is None else first_scalar + g[1] if isinstance(g, tuple) else g
                   for g in gather)
    made = dict(consts=tuple(consts), uses_seed=uses_seed, n_results=len(results), scalars=tuple(scalars))
    donated, blocked = _donors(values, gather, n_args, keep)
    if donated:
        # In the foreground: the setting that honours donors is process-wide.
        with _xlac.honouring_donors(), _unmarked(blocked):
            graph_hash = _xlac.graph_hash(results)
            _xlac.compile_graph(results)
        return Executable(graph_hash, gather, donated=tuple(donated), **made)
    graph_hash = _xlac.graph_hash(results)
    compiling = None
    if background:
        compiling = _in_background(_xlac.compile_graph, results)
    else:
        _xlac.compile_graph(results)
    return Executable(graph_hash, gather, compiling=compiling, **made)


def _donors(values, gather, n_args: int, keep) -> tuple[list, list]:
    """(arg indices to donate, marked parameters not to donate: constants,
    arguments in ``keep`` and 0-dim arguments).

    torch_xla keeps one device buffer per scalar value and hands it to every
    0-dim tensor of that value it moves or fills (``torch.tensor(2.0).to(xla)``,
    ``s.fill_(2.0)``, the 2.0 of ``x * 2.0``): donated, it would be deleted
    under all of them. And a scalar's buffer is too small for its donation
    to save memory."""
    donated, blocked = [], []
    for value, g in zip(values, gather):
        if _xlac.donated(value):
            if g < n_args and g not in keep and value.dim() != 0:
                donated.append(g)
            else:
                blocked.append(value)
    return donated, blocked


@contextmanager
def _unmarked(tensors):
    """``tensors``' donor marks cleared for the compile, then put back."""
    for t in tensors:
        _xlac.set_donated(t, False)
    try:
        yield
    finally:
        for t in tensors:
            _xlac.set_donated(t, True)


CGROUP_CPU_MAX = "/sys/fs/cgroup/cpu.max"  # cgroup v2: "quota period", or "max period"


def usable_cpus(cgroup_cpu_max: str = CGROUP_CPU_MAX) -> int:
    """The CPUs this process can keep busy at once: those it may run on,
    capped by a cgroup CPU quota (a container limited to 1.5 CPUs: 1)."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    try:
        quota, period = open(cgroup_cpu_max).read().split()
        if quota != "max":
            cpus = min(cpus, max(1, math.floor(int(quota) / int(period))))
    except (OSError, ValueError):
        pass  # no cgroup v2 CPU controller here: no quota
    return cpus


def overlap_pays(cpus: int | None = None) -> bool:
    """Should a graph built ahead of its first call compile on a thread of
    its own? Only when the process can run two threads at once."""
    return (usable_cpus() if cpus is None else cpus) >= 2


def _in_background(fn, *args) -> Future:
    """``fn(*args)`` on a new thread; the future holds its error, if any. The
    thread is not a daemon: an interpreter exiting mid-compile waits for it
    rather than tearing XLA down under it. A thread per compile rather than
    a pool: a process forked after a compile would inherit a pool whose
    thread it lacks, and queue its compiles forever."""
    future: Future = Future()
    # The arguments (the trace's lazy results) go to the thread in a box it
    # empties before it resolves the future: the waiter may go on at once,
    # and while a lazy result is still alive a ``torch_xla.sync()`` after
    # the first call compiles and runs the whole traced graph once more.
    job = [fn, args]

    def work():
        try:
            _call_once(job)
        except BaseException as err:  # handed to whoever waits for the future
            traceback.clear_frames(err.__traceback__)  # their locals: the arguments
            future.set_exception(err)
        else:
            future.set_result(None)

    threading.Thread(target=work, name="torchxla_trace_once compile").start()
    return future


def _call_once(job: list) -> None:
    """``fn(*args)`` of ``job`` = ``[fn, args]``, emptying ``job`` first, so
    that no reference to the arguments outlives the call."""
    fn, args = job
    job.clear()
    fn(*args)
