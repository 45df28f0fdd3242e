"""Step 1: one lazy trace of the FX graph, on shadows of the caller's tensors.

A *shadow* is a new XLA tensor over an argument's device buffer
(``_xlac.data_view``): the graph's in-place updates change the shadow, never
the caller's tensor, so nothing needs restoring after the trace. The trace
runs node by node (an ``fx.Interpreter``) and notes the nodes that touch
tensors off the XLA device (``x.cpu()``, a host argument, a host constant):
their values are made during the trace, not by the executable, so they must
run eagerly on every call. It also notes the ops that fell back to the CPU.

``tracing(device, args)`` is the set-up shared by the first build and a
re-trace after an eviction: the arguments as plain device data first (their
pending work would otherwise be traced into our graph; the caller's other
pending work is left alone), and the device RNG left where it was, so that
the first call draws the same numbers as a replay would. A graph that draws
no random numbers leaves the RNG untouched.
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field

import torch
from torch._dynamo.utils import counters
from torch.utils import _pytree as pytree

from . import _xlac
from ..metrics import fallback_counts, grown


@contextmanager
def tracing(device: str, args):
    """Yields the positions of the arguments that arrived with pending IR:
    they will likely arrive so on later calls too."""
    seed = _xlac.rng_seed(device)
    pos = [i for i, a in enumerate(args) if isinstance(a, torch.Tensor) and a.device.type == "xla"]
    flags = _xlac.pending([args[i] for i in pos])
    pending = [i for i, p in zip(pos, flags) if p]
    _xlac.compute([args[i] for i in pending])
    _xlac.wait_device()
    try:
        yield pending
    finally:
        if _xlac.rng_seed(device) != seed:  # the trace drew random numbers
            _xlac.set_rng_seed(seed, device)


def off_device(value) -> bool:
    """Does ``value`` (a node's result, maybe a container) hold a tensor that
    is not on an XLA device?"""
    if isinstance(value, torch.Tensor):
        return value.device.type != "xla"
    if isinstance(value, (tuple, list, dict)):
        return any(off_device(v) for v in pytree.tree_leaves(value))
    return False


@dataclass
class Trace:
    gm: torch.fx.GraphModule
    args: tuple  # the caller's arguments
    shadows: list  # what the graph ran on
    arg_handles: dict  # arg index -> handle of the data its shadow started from
    # The private copies some shadows started from (see ``shadows_of``),
    # held while the trace is in use: a handle is the buffer's address, so
    # a copy freed by an in-place update in the graph would hand its handle
    # to the next buffer made (a constant of the graph), which would then
    # pass for the argument.
    private: list = field(default_factory=list)
    out: object = None  # the graph's output, computed on the shadows
    values: dict = field(default_factory=dict)  # node -> its value in the trace
    host_nodes: set = field(default_factory=set)  # nodes reading or making off-device tensors
    fell_back: list = field(default_factory=list)  # ops that ran on the CPU during the trace

    @property
    def device(self) -> str:
        first = next(iter(self.arg_handles), None)
        if first is not None:
            return str(self.shadows[first].device)
        return str(_xla_device())

    def placeholders(self) -> list:
        return [n for n in self.gm.graph.nodes if n.op == "placeholder"]

    def output_nodes(self) -> list:
        """The FX node (or constant) behind each leaf of ``out``, in order."""
        (node,) = [n for n in self.gm.graph.nodes if n.op == "output"]
        return pytree.tree_leaves(node.args[0])

    def updated_in_place(self) -> list[int]:
        """Arguments the graph updated in place: their shadow now holds IR,
        or the data of another tensor (``copy_`` from an input)."""
        pos = list(self.arg_handles)
        shadows = [self.shadows[i] for i in pos]
        flags = _xlac.pending(shadows)
        updated = [i for i, p in zip(pos, flags) if p]
        data = [i for i, p in zip(pos, flags) if not p]
        handles = _xlac.data_handles([self.shadows[i] for i in data])
        updated += [i for i, h in zip(data, handles) if h != self.arg_handles[i]]
        return sorted(updated)


def _xla_device():
    import torch_xla

    return torch_xla.device()


def shadows_of(args) -> tuple[list, dict, list]:
    """Shadows of the XLA tensor arguments (plain device data), the buffer
    handle each started from, and the private copies some started from
    (the handles name buffers only while these are alive: keep them); other
    arguments are passed as they are."""
    pos = [i for i, a in enumerate(args) if isinstance(a, torch.Tensor) and a.device.type == "xla"]
    handles = _xlac.data_handles([args[i] for i in pos])
    shadows, arg_handles, taken, private = list(args), {}, set(), []
    for i, h in zip(pos, handles):
        if h in taken or args[i].dim() == 0:
            # Two arguments over one buffer (``b.copy_(a)``, or aliases)
            # would become one HLO parameter, tying them forever: trace this
            # one on a private copy of its data. So would a scalar and a
            # constant of the graph: torch_xla keeps one device buffer per
            # scalar value (``torch.full((), 2.5)`` and the 2.5 of
            # ``x * 2.5`` share it), and the constant would follow the
            # argument's later values.
            private.append(_xlac.private_copy(args[i]))
            shadows[i] = _xlac.data_view(private[-1])
            h = _xlac.data_handles([shadows[i]])[0]
        else:
            shadows[i] = _xlac.data_view(args[i])
        arg_handles[i] = h
        taken.add(h)
    return shadows, arg_handles, private


class _Recorder(torch.fx.Interpreter):
    """Runs the graph node by node, keeping every value and noting the nodes
    whose results are off the XLA device."""

    def __init__(self, gm, trace: Trace):
        super().__init__(gm, garbage_collect_values=False)
        self.trace = trace
        self.host_valued: set = set()

    def run_node(self, node):
        result = super().run_node(node)
        self.trace.values[node] = result
        if off_device(result):
            self.host_valued.add(node)
        return result

    def host_nodes(self) -> set:
        """Computing nodes that make an off-device value or read one."""
        found = set()
        for node in self.module.graph.nodes:
            if node.op in ("placeholder", "get_attr", "output"):
                continue
            if node in self.host_valued or any(i in self.host_valued for i in node.all_input_nodes):
                found.add(node)
        return found


def _plain(value):
    """The interpreter's output with FX's immutable containers made plain, as
    the graph's generated code returns them."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if type(value) is tuple:
        return tuple(_plain(v) for v in value)
    return value


def run(gm: torch.fx.GraphModule, args, device: str) -> Trace:
    """Trace ``gm`` once on shadows of ``args`` (inside ``tracing``).

    A graph that draws random numbers is traced again with the RNG's in-step
    chain restarted at the running seed: a lazy random op earlier in the step
    would otherwise chain the graph's seed onto its IR. Restarting moves the
    step's base seed, so it is done only for such graphs."""
    counters["trace_once"]["traces"] += 1
    seed = _xlac.rng_seed(device)
    trace = _run(gm, args)
    if _xlac.rng_seed(device) != seed:
        _xlac.set_rng_seed(seed, device)
        trace = _run(gm, args)
    return trace


def _run(gm: torch.fx.GraphModule, args) -> Trace:
    shadows, arg_handles, private = shadows_of(args)
    trace = Trace(gm, tuple(args), shadows, arg_handles, private)
    before = fallback_counts()
    recorder = _Recorder(gm, trace)
    trace.out = _plain(recorder.run(*shadows))
    trace.fell_back = grown(before, fallback_counts())
    trace.host_nodes = recorder.host_nodes()
    return trace
