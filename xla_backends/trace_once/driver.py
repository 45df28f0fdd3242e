"""The driver: what dynamo calls in place of a graph, and the runner kinds.

``torchxla_trace_once`` wraps a graph in a ``TraceOnce``, which keeps a
runner per value of the graph's non-tensor arguments; ``build`` makes one by
going through the steps (``trace`` -> ``plan`` -> ``compile``) and picks its
kind:

* ``Replay`` (``replay``): the executable, replayed by hash on every call;
* ``Partitioned``: a graph cut around nodes that cannot be replayed, its
  replayable runs each a ``TraceOnce`` of their own (``partition``);
* ``Lazy``: a graph that can be neither, run lazily on every call;
* ``PerValue``: a graph whose float arguments must be constants of it, a
  runner per value;
* ``OnHost``: a graph called with host tensors only, run on XLA copies.
"""
from __future__ import annotations

import os
import sys
import warnings

import torch
from torch._dynamo.utils import counters
from torch.utils import _pytree as pytree

from .. import fake_kernels
from .._device import (all_on_host, arg_views, copying_transfers, host_positions, output_devices, run_on_xla,
                       with_arg_views)
from ..strides import fix_as_strided
from . import _xlac
from .compile import NO_DONATION, Donors, compile_results, overlap_pays
from .lift import flat_args, flatten_structured, lift_state, read_state, structured_specs
from .partition import fallback_nodes, hoisted, mode_nodes, on_host, split
from .plan import Source, make_plan
from .replay import Replay
from .scalars import fed_by_floats, float_positions, stand_ins
from .trace import run, shadows_of, tracing

TRAINING_BACKEND = "aot_torchxla_trace_once"
# Runners kept per graph, one per value of its keys (``TraceOnce``,
# ``PerValue``): past this, the least recently used is dropped (and traced
# again should its value come back). A number read at run time (an int from
# ``.item()``) can take a new value on every call; each runner holds its plan
# and constants, and XLA's cache its executable.
MAX_RUNNERS = 16


def torchxla_trace_once(gm: torch.fx.GraphModule, example_inputs):
    fake_kernels.ensure()
    _warn_if_gradients_are_wanted(example_inputs)
    compiled = TraceOnce(gm)
    compiled.prepare(example_inputs)
    return compiled


class TraceOnce:
    """What dynamo calls in place of one FX graph.

    One runner (``Replay``, ``Partitioned``, ``Lazy``, ``OnHost`` or
    ``PerValue``) is kept per value of the non-tensor arguments other than
    floats (symbolic sizes specialise the XLA graph; floats are fed to it);
    a graph without such arguments has exactly one, called without building
    a key. ``donors`` says which arguments marked as buffer donors may be
    donated (see ``compile``).
    """

    def __init__(self, gm: torch.fx.GraphModule, donors: Donors = Donors()):
        # Tensors the graph module holds itself become trailing arguments,
        # read afresh on each call (see ``lift``).
        self.gm, self._state = lift_state(fix_as_strided(gm))
        self.donors = donors
        self._scalars: tuple | None = None  # positions of non-tensor arguments
        self._graphs: dict = {}
        self._only = None
        self._structured = None  # per argument, a structured one's tree spec (``lift``)

    def __call__(self, *args):
        if self._state:
            args += read_state(self._state)
        only = self._only
        if only is not None:
            return only(args)
        return self._dispatch(args)

    def prepare(self, example_inputs) -> None:
        """Build the runner for dynamo's example inputs now, with XLA's
        compile on another thread.

        dynamo calls its backend with the very tensors its first call will
        pass, then spends a while on guards and bytecode before making that
        call; the compile overlaps that while where a second CPU can run it
        (``compile.overlap_pays``; on one CPU it runs here, in line). The
        first run waits for it.
        Example inputs that are not plain tensors (fake tensors under AOT
        autograd, subclasses) or do not match the graph's placeholders are
        left for the first call, and so is a build that fails here: the
        first call builds again and raises where the caller sees it.
        """
        args = tuple(example_inputs) + read_state(self._state)
        if not _preparable(self.gm, args):
            return
        try:
            self._runner_for(args, background=overlap_pays())
        except Exception:
            self._scalars, self._graphs, self._only = None, {}, None

    def _dispatch(self, args):
        if self._scalars is None and any(structured_specs(args)):
            # Structured arguments (seen on the first call) become their leaves.
            self._structured = structured_specs(args)
            self.gm = flatten_structured(self.gm, self._structured)
        if self._structured is not None:
            args = flat_args(args, self._structured)
        return self._runner_for(args)(args)

    def _runner_for(self, args, background: bool = False):
        if self._scalars is None:
            self._scalars = tuple(i for i, a in enumerate(args)
                                  if not isinstance(a, torch.Tensor) and type(a) is not float)
        key = tuple(args[i] for i in self._scalars)
        runner = _recent(self._graphs, key)
        if runner is None:
            runner = _keep(self._graphs, key, _runner(self.gm, args, background, self.donors))
            if not self._scalars and self._structured is None:
                self._only = runner
        return runner

    @property
    def runners(self) -> list:
        """The runners kept (the most recently used, at most ``MAX_RUNNERS``)."""
        return list(self._graphs.values())


def _runner(gm, args, background: bool = False, donors: Donors = Donors()):
    if all_on_host(args):
        return OnHost(gm)
    return build(gm, args, background, donors)


def _preparable(gm, args) -> bool:
    """Can the graph be built ahead of its first call on these example
    inputs: one per placeholder, every tensor a plain one, some on XLA?"""
    if len(args) != sum(n.op == "placeholder" for n in gm.graph.nodes):
        return False
    if any(structured_specs(args)):
        return False
    tensors = [a for a in args if isinstance(a, torch.Tensor)]
    return (all(type(t) in (torch.Tensor, torch.nn.Parameter) for t in tensors)
            and any(t.device.type == "xla" for t in tensors))


class OnHost:
    """A graph called with host tensors only: runs on the XLA device on
    copies of them, copies their in-place updates back, returns host results
    (but for those the graph itself makes on the XLA device, which stay
    there, as in eager). Outputs the plan rebuilds as views (of an argument,
    an earlier output, or an intermediate the executable computes) or
    repeats are rebuilt on the host results, so they alias as in eager: an
    intermediate that outputs view comes to the host once, and its views are
    made there. A graph with no plan of the whole (cut around ops with no
    XLA lowering, or run lazily) has its views of the arguments made on the
    caller's tensors, in the layout dynamo saw them have."""

    def __init__(self, gm):
        self.gm = copying_transfers(gm)
        self.devices = output_devices(gm)
        self.arg_views = arg_views(gm)
        self.runner = None  # built on the first call's XLA copies
        self._aliases_of, self._alias_list = None, []  # the plan they were worked out for
        self._views_results = False  # do some of them view an intermediate the executable computes?
        self._results = None  # this call's XLA results, while it runs

    def __call__(self, args):
        out = run_on_xla(self._run, args, host_positions(args), self.devices)
        results, self._results = self._results, None
        if not isinstance(self.runner, Replay):
            return with_arg_views(out, args, self.arg_views, self.devices)
        aliases = self._aliases()
        if not aliases:
            return out
        leaves, spec = pytree.tree_flatten(out)
        bases = {}
        for k, value in aliases:  # in build order: a view after its base
            if value.source is not Source.VIEW:
                leaves[k] = leaves[value.payload]
                continue
            view = value.payload
            if view.of == "result":
                if results is None:  # the call ran lazily: its outputs are copies
                    continue
                if view.base not in bases:
                    bases[view.base] = results[view.base].cpu()
            leaves[k] = view.rebuild(args, leaves, bases)
        return pytree.tree_unflatten(leaves, spec)

    def _aliases(self) -> list:
        """(leaf, Value) of the outputs to rebuild on the host, worked out
        once per plan."""
        if not isinstance(self.runner, Replay):
            return []
        plan = self.runner.plan
        if self._aliases_of is not plan:
            order = plan.order or range(len(plan.outputs))
            self._aliases_of, self._alias_list = plan, [
                (k, plan.outputs[k]) for k in order
                if plan.outputs[k].source in (Source.SAME, Source.VIEW) and not self._on_device(k)]
            self._views_results = any(v.source is Source.VIEW and v.payload.of == "result"
                                      for _, v in self._alias_list)
        return self._alias_list

    def _on_device(self, leaf: int) -> bool:
        return leaf < len(self.devices) and self.devices[leaf] == "xla"

    def _run(self, xla_args):
        if self.runner is None:
            self.runner = build(self.gm, xla_args)
        self._aliases()
        if self._views_results:
            out, self._results = self.runner.with_results(xla_args)
            return out
        return self.runner(xla_args)


class Partitioned:
    """A graph cut around nodes that cannot be replayed (``partition.split``)."""

    def __init__(self, fused, fallback_ops, n_graphs):
        self.fused = fused
        self.fallback_ops = fallback_ops
        self.n_graphs = n_graphs

    def __call__(self, args):
        return self.fused(*args)


class Lazy:
    """A graph that cannot be replayed, run lazily on every call; keeps the
    ops (or the reason) that prevented replaying it."""

    def __init__(self, gm, fallback_ops, reason: str = ""):
        self.gm = gm
        self.fallback_ops = fallback_ops
        self.reason = reason or f"ops with no XLA lowering: {', '.join(fallback_ops)}"

    def __call__(self, args):
        counters["trace_once"]["lazy_calls"] += 1
        return self.gm(*args)


def build(gm, args, background: bool = False, donors: Donors = Donors(), feed_floats: bool = True):
    """Trace ``gm`` on ``args`` and return the runner for later calls (with
    ``background``, XLA compiles on another thread). Float arguments are
    fed to the executable on each call (``scalars``) where they can be, and
    with ``feed_floats`` off are constants of it."""
    device = next((str(a.device) for a in args if _on_xla(a)), None) or str(_xla_device())
    floats = float_positions(args) if feed_floats else ()
    with tracing(device, args) as pending_args:
        seed = _xlac.rng_seed(device)
        try:
            trace = run(gm, stand_ins(args, floats, 0), device)
        except Exception:
            if not floats:
                raise
            return PerValue(gm, floats, donors)  # the stand-ins are no values the graph takes
        host = set(trace.host_nodes)
        fallbacks: dict = {}
        if trace.fell_back:
            # A second pass, node by node, on fresh shadows finds where.
            fallbacks = fallback_nodes(gm, shadows_of(args)[0])
            if not fallbacks:
                warn_caller(f"torchxla_trace_once: graph runs ops with no XLA lowering "
                      f"({', '.join(trace.fell_back)}); it is re-traced on every call")
                return Lazy(gm, trace.fell_back)
        eager = host | set(fallbacks)
        moved = on_host(gm, trace.values, eager, floats)
        if eager or moved:
            return _split(gm, eager | moved | mode_nodes(gm), fallbacks, len(host), moved)
        plan, results = make_plan(trace)
        fed = fed_by_floats(gm, args, device, floats, seed, (plan, results)) if floats else {}
        if fed is None:
            return PerValue(gm, floats, donors)
        executable = compile_results(results, trace.arg_handles, len(args), background,
                                     keep=donors.kept(plan, len(args)), fed=fed)
        return Replay(gm, plan, executable, pending_args, donors, floats)


class PerValue:
    """A graph whose float arguments change more than the executable's
    inputs (``scalars``): a runner per value of them."""

    def __init__(self, gm, positions, donors):
        self.gm, self.positions, self.donors = gm, positions, donors
        self.runners: dict = {}

    def __call__(self, args):
        key = tuple(args[i] for i in self.positions)
        runner = _recent(self.runners, key)
        if runner is None:
            runner = _keep(self.runners, key, build(self.gm, args, donors=self.donors, feed_floats=False))
        return runner(args)


def _recent(runners: dict, key):
    """The runner kept for ``key``, moved to the end: the most recently used
    (dicts keep their insertion order)."""
    runner = runners.pop(key, None)
    if runner is not None:
        runners[key] = runner
    return runner


def _keep(runners: dict, key, runner):
    """``runner`` kept for ``key``; the least recently used dropped past ``MAX_RUNNERS``."""
    runners[key] = runner
    while len(runners) > MAX_RUNNERS:
        del runners[next(iter(runners))]
        counters["trace_once"]["dropped_runners"] += 1
    return runner


def _split(gm, eager: set, fallbacks: dict, transfers: int, moved: set = frozenset()):
    """``gm`` cut around the ``eager`` nodes (``moved``, among them, free of
    side effects and moved up to just after their inputs first); ``transfers``
    of them read or make host tensors."""
    ops = sorted({op for found in fallbacks.values() for op in found})
    try:
        if moved:
            gm, new = hoisted(gm, moved)
            eager = {new[n] for n in eager}
        # Parts donate nothing: a later part may read an earlier one's argument.
        fused, n_graphs = split(gm, eager, lambda part: TraceOnce(part, NO_DONATION))
    except RuntimeError as err:
        # FX cannot cut some graphs in program order (a size computed after
        # the cut that an earlier part needs: unbacked sizes of ops with
        # data-dependent shapes). Such a graph runs lazily, as it would
        # without this backend.
        reason = f"graph cannot be cut around nodes that must run eagerly ({err})"
        warn_caller(f"torchxla_trace_once: {reason}; it is re-traced on every call")
        return Lazy(gm, ops, reason)
    counters["trace_once"]["partitioned_graphs"] += 1
    reasons = []
    if ops:
        reasons.append(f"ops with no XLA lowering ({', '.join(ops)})")
    if transfers:
        reasons.append(f"{transfers} node(s) reading or making tensors off the XLA device")
    if not reasons:  # Python arithmetic on numbers only: nothing the caller could change
        return Partitioned(fused, ops, n_graphs)
    warn_caller(f"torchxla_trace_once: graph has {' and '.join(reasons)}; they run eagerly "
          f"between {n_graphs} traced-once graph(s)")
    return Partitioned(fused, ops, n_graphs)


def _on_xla(value) -> bool:
    return isinstance(value, torch.Tensor) and value.device.type == "xla"


def _xla_device():
    import torch_xla

    return torch_xla.device()


def _warn_if_gradients_are_wanted(example_inputs) -> None:
    if not torch.is_grad_enabled():
        return
    if any(isinstance(t, torch.Tensor) and t.requires_grad for t in example_inputs):
        warn_caller("torchxla_trace_once is an inference backend: its outputs carry no autograd "
              f"graph, so backward() will not reach the inputs; use backend='{TRAINING_BACKEND}' "
              "to train, or call under torch.no_grad()")


# Frames of this package, of torch, and of FX's generated ``forward`` code.
_OWN = (os.path.dirname(os.path.dirname(__file__)), os.path.dirname(torch.__file__), "<eval_with_key")


def warn_caller(message: str) -> None:
    """``warnings.warn`` attributed to the first frame outside this package
    and torch: the user's code that called the compiled function."""
    frame, level = sys._getframe(1), 2
    while frame is not None and frame.f_code.co_filename.startswith(_OWN):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, stacklevel=level)

