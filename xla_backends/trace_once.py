"""``torchxla_trace_once``: trace an FX graph into XLA once, then replay it.

dynamo's guards already decide when a graph must be captured again, so the
XLA side need not re-trace it on every call. On the first call with real
tensors this backend

1. traces the graph once on *shadows* of the inputs (new XLA tensors over the
   same device buffers), so the caller's tensors are never touched;
2. classifies what the trace produced: outputs computed by the graph, outputs
   that are inputs, copies of inputs or constants, inputs updated in place
   (``_Plan``);
3. finds where each HLO parameter comes from (a call argument, the RNG seed,
   a constant captured by the trace), hashes the graph and compiles it
   without running it;

and on every call (the first included) feeds the arguments straight to the
cached executable with ``_run_cached_graph``, then rebuilds the outputs and
copies in-place updates back into the caller's tensors.

A graph whose trace falls back to the CPU for some op cannot be replayed: the
fallback's result would be frozen into the executable as a constant. Such a
graph runs lazily on every call instead, with one warning naming the ops.
"""
from __future__ import annotations

import operator
import warnings
from dataclasses import dataclass

import torch
from torch.utils import _pytree as pytree

from ._device import fallback_counts, host_positions, run_on_xla, tensor_uid

# mark_step's recurrence for the device RNG seed: replaying advances the seed
# the same way a lazy step does, so random ops draw fresh numbers every call.
_SEED_MUL = 7012063
_SEED_ADD = 1012031


def torchxla_trace_once(gm, example_inputs):
    return TraceOnce(gm)


class TraceOnce:
    """What dynamo calls in place of one FX graph.

    One runner (``Replay``, or ``Lazy`` for a graph that cannot be replayed)
    is kept per value of the non-tensor arguments (symbolic sizes specialise
    the XLA graph); a graph without such arguments has exactly one, called
    without building a key.
    """

    def __init__(self, gm: torch.fx.GraphModule):
        self.gm = gm
        self._scalars: tuple | None = None  # positions of non-tensor arguments
        self._graphs: dict = {}
        self._only = None

    def __call__(self, *args):
        only = self._only
        if only is not None:
            return only(args)
        return self._dispatch(args)

    def _dispatch(self, args):
        if self._scalars is None:
            self._scalars = tuple(i for i, a in enumerate(args) if not isinstance(a, torch.Tensor))
        key = tuple(args[i] for i in self._scalars)
        runner = self._graphs.get(key)
        if runner is None:
            runner = self._graphs[key] = _runner(self.gm, args)
            if not self._scalars:
                self._only = runner
        return runner(args)

    @property
    def runners(self) -> list:
        """The runners built so far: ``Replay``, ``Lazy`` or ``OnHost``."""
        return list(self._graphs.values())


def _runner(gm, args):
    host = host_positions(args)
    if host:
        return OnHost(gm, host)
    return _build(gm, args)


class OnHost:
    """A graph called with host (non-XLA) tensors: runs on the XLA device on
    copies of them, copies their in-place updates back, returns host results."""

    def __init__(self, gm, host):
        self.gm = gm
        self.host = host
        self.runner = None  # Replay or Lazy, built on the first call's XLA copies

    def __call__(self, args):
        return run_on_xla(self._run, args, self.host)

    def _run(self, xla_args):
        if self.runner is None:
            self.runner = _build(self.gm, xla_args)
        return self.runner(xla_args)


def _build(gm, args):
    """Trace ``gm`` on ``args`` (all XLA-resident) and return a replayer, or a
    lazy runner if the trace cannot be replayed."""
    import torch_xla

    X = torch_xla._XLAC
    device = next((str(a.device) for a in args if isinstance(a, torch.Tensor)), str(torch_xla.device()))
    # Building must not move the device RNG: the first call then draws the
    # same numbers as a replay from the same seed (``xm.set_rng_state``).
    rng_seed = X._xla_get_rng_seed(device)
    # Start from plain device data: pending work of the caller's would
    # otherwise be traced into our graph. Wait for it before reading handles.
    torch_xla.sync()
    X._xla_wait_device_ops([])
    fallbacks = _FallbackCounter()
    try:
        trace = _Trace.run(gm, args)
        fell_back = fallbacks.new_ops()
        runner = _runner_for(trace, gm, args, fell_back)
    finally:
        X._xla_set_rng_seed(rng_seed, device)
    return runner


def _runner_for(trace, gm, args, fell_back):
    if fell_back:
        return _split(gm, args, fell_back)
    off_device = trace.off_device_outputs()
    if off_device:
        # A host tensor computed by the graph (``x.cpu()``) is produced
        # during the trace, not by the executable: replaying would freeze it.
        return Lazy(gm, [], reason=f"returns {off_device} tensor(s) off the XLA device")
    return Replay(trace.plan(), gm)


def _split(gm, args, fell_back):
    """A graph with ops that fall back to the CPU: traced-once partitions
    around the nodes that ran them, those nodes run eagerly in between."""
    from .partition import fallback_nodes, split

    # A second trace, node by node, on fresh shadows: the caller's tensors
    # stay untouched.
    nodes = _Trace.run(lambda *shadows: fallback_nodes(gm, shadows), args).out
    if not nodes:  # not attributable to a node: run the whole graph lazily
        warnings.warn(f"torchxla_trace_once: graph runs ops with no XLA lowering "
                      f"({', '.join(fell_back)}); it is re-traced on every call", stacklevel=4)
        return Lazy(gm, fell_back)
    fused, n_graphs = split(gm, nodes, lambda region: TraceOnce(region))
    ops = sorted({op for found in nodes.values() for op in found})
    warnings.warn(f"torchxla_trace_once: graph runs ops with no XLA lowering ({', '.join(ops)}); "
                  f"they run eagerly between {n_graphs} traced-once graph(s)", stacklevel=4)
    return Partitioned(fused, ops, n_graphs)


class Partitioned:
    """A graph split around its CPU-fallback nodes (``partition.split``)."""

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
        return self.gm(*args)


class _FallbackCounter:
    """Counts CPU fallbacks (torch_xla's ``aten::*`` counters) from now on."""

    def __init__(self):
        self.before = self._counts()

    @staticmethod
    def _counts() -> dict:
        return fallback_counts()

    def new_ops(self) -> list[str]:
        after = self._counts()
        return sorted(n for n, v in after.items() if v > self.before.get(n, 0))


# Where a value comes from on each call:
_RESULT = "result"  # payload: index into the executable's results
_ARG = "arg"  # the caller's argument itself (the graph returned its input)
_ALIAS = "alias"  # a new tensor aliasing an argument (``x.detach()``)
_COPY = "copy"  # the argument's value before the call (``x.clone()``, ``buf.copy_(x)``)
_CONST = "const"  # a constant: a Python value, or a tensor cloned each call
_SAME = "same"  # the same object as an earlier output leaf (payload: its index)
_FRESH = "fresh"  # a new tensor holding an earlier output leaf's value (its index)


@dataclass
class _Plan:
    """Everything a replay needs, computed once from the trace."""

    graph_hash: bytes
    device: str
    gather: list  # per HLO parameter: index into args + consts (+ seed last)
    consts: tuple  # parameters captured by the trace, fed as they are
    uses_seed: bool
    n_results: int
    outputs: list  # per output leaf: (kind, payload)
    out_spec: object
    copy_backs: list  # (arg index, (kind, payload)) for inputs updated in place


class _Trace:
    """One lazy trace of the graph on shadows of its arguments."""

    def __init__(self, args, shadows, arg_handles, out):
        self.args = args
        self.shadows = shadows
        self.arg_handles = arg_handles  # arg index -> handle of the data its shadow started from
        self.out = out

    @classmethod
    def run(cls, gm, args):
        import torch_xla

        X = torch_xla._XLAC
        pos = [i for i, a in enumerate(args) if isinstance(a, torch.Tensor)]
        handles = X._get_tensors_handle([args[i] for i in pos])
        shadows = list(args)
        arg_handles = {}
        taken = set()
        for i, h in zip(pos, handles):
            if h in taken:
                # Two arguments over one buffer (after ``b.copy_(a)``) would
                # become one HLO parameter, tying them forever: trace this one
                # on a private copy of its data.
                shadows[i] = _shadow(_own_copy(args[i]))
                h = X._get_tensors_handle([shadows[i]])[0]
            else:
                shadows[i] = _shadow(args[i])
            arg_handles[i] = h
            taken.add(h)
        return cls(args, shadows, arg_handles, gm(*shadows))

    def off_device_outputs(self) -> int:
        leaves = pytree.tree_leaves(self.out)
        return sum(1 for t in leaves if isinstance(t, torch.Tensor) and t.device.type != "xla")

    def updated_in_place(self, X) -> list[int]:
        """Arguments the graph updated in place: their shadow now holds IR,
        or the data of another tensor (``copy_`` from an input)."""
        pos = list(self.arg_handles)
        shadows = [self.shadows[i] for i in pos]
        pending = X._check_tensor_need_materialization(shadows)
        updated = [i for i, p in zip(pos, pending) if p]
        data = [i for i, p in zip(pos, pending) if not p]
        handles = X._get_tensors_handle([self.shadows[i] for i in data])
        updated += [i for i, h in zip(data, handles) if h != self.arg_handles[i]]
        return sorted(updated)

    def plan(self) -> _Plan:
        import torch_xla

        X = torch_xla._XLAC
        arg_of_shadow = {id(self.shadows[i]): i for i in self.arg_handles}
        arg_of_handle = {h: i for i, h in self.arg_handles.items()}

        results: list[torch.Tensor] = []
        result_of_uid: dict[str, int] = {}

        def value_source(t):
            """Where the value of trace tensor ``t`` comes from on each call."""
            if X._check_tensor_need_materialization([t])[0]:
                # XLA returns identical outputs once: dedupe as it does.
                uid = tensor_uid(t)
                if uid not in result_of_uid:
                    result_of_uid[uid] = len(results)
                    results.append(t)
                return (_RESULT, result_of_uid[uid])
            # Plain device data: never returned by XLA. It is an argument's
            # value before the call, or a constant.
            handle = X._get_tensors_handle([t])[0]
            if handle in arg_of_handle:
                i = arg_of_handle[handle]
                if torch._C._is_alias_of(t, self.shadows[i]):
                    return (_ALIAS, i)
                return (_COPY, i)
            return (_CONST, t)

        leaves, spec = pytree.tree_flatten(self.out)
        outputs = []
        first_of_object: dict[int, int] = {}
        first_of_source: dict[tuple, int] = {}
        for n, t in enumerate(leaves):
            if not isinstance(t, torch.Tensor):
                outputs.append((_CONST, t))
            elif id(t) in first_of_object:  # ``return y, y``: one object twice
                outputs.append((_SAME, first_of_object[id(t)]))
            else:
                first_of_object[id(t)] = n
                src = (_ARG, arg_of_shadow[id(t)]) if id(t) in arg_of_shadow else value_source(t)
                if src[0] in (_RESULT, _COPY) and src in first_of_source:
                    # Distinct tensors with one value (``return x.clone(), x.clone()``,
                    # which XLA computes once): eager gives distinct objects, so a
                    # caller's edit of one must not show in the other.
                    src = (_FRESH, first_of_source[src])
                elif src[0] in (_RESULT, _COPY):
                    first_of_source[src] = n
                outputs.append(src)
        copy_backs = [(i, value_source(self.shadows[i])) for i in self.updated_in_place(X)]
        device = str(self.shadows[next(iter(self.arg_handles))].device) if self.arg_handles \
            else str(torch_xla.device())
        return _compile(results, device, arg_of_handle, outputs, spec, copy_backs, len(self.args))


def _shadow(t: torch.Tensor) -> torch.Tensor:
    """A new XLA tensor over ``t``'s device buffer: tracing in-place ops on it
    leaves ``t`` untouched, so nothing needs restoring after the trace."""
    import torch_xla

    return torch_xla._XLAC._get_tensors_xla_device_data_node([t])[1][0]


def _own_copy(t: torch.Tensor) -> torch.Tensor:
    """``t``'s value in a new device buffer of its own."""
    return t.cpu().to(t.device)


def _compile(results, device, arg_of_handle, outputs, spec, copy_backs, n_args) -> _Plan:
    import torch_xla

    X = torch_xla._XLAC
    gather, consts, uses_seed = [], [], False
    if results:
        ids, values = X._get_tensors_xla_device_data_node(results)
        seed_id = X._get_seed_info_id()
        for tid, value, handle in zip(ids, values, X._get_tensors_handle(values)):
            if handle in arg_of_handle:
                gather.append(arg_of_handle[handle])
            elif tid == seed_id and value.dim() == 0 and value.dtype == torch.int64:
                gather.append(None)  # filled in below, once consts are counted
                uses_seed = True
            else:
                gather.append(n_args + len(consts))
                consts.append(value)
        seed_slot = n_args + len(consts)
        gather = [seed_slot if g is None else g for g in gather]
        graph_hash = X._get_graph_hash(results)
        X._xla_warm_up_cache(results, [])
    else:
        graph_hash = b""
    return _Plan(graph_hash, device, gather, tuple(consts), uses_seed, len(results),
                 outputs, spec, copy_backs)


class Replay:
    """Feeds each call's arguments to the compiled executable by hash."""

    fallback_ops: list = []

    def __init__(self, plan: _Plan, gm=None):
        import torch_xla

        self._X = torch_xla._XLAC
        self._run = self._X._run_cached_graph
        self.gm = gm  # to re-trace if the executable is evicted from XLA's cache
        self._install(plan)

    def _install(self, plan: _Plan) -> None:
        self.plan = plan
        n = len(plan.gather)
        if n == 1:
            only = plan.gather[0]
            self._gather = lambda full: (full[only],)
        else:
            self._gather = operator.itemgetter(*plan.gather) if n else (lambda full: ())
        self._hash = plan.graph_hash
        self._consts = plan.consts
        self._seeded = plan.uses_seed
        self._device = plan.device
        self._extra = bool(plan.consts) or plan.uses_seed
        self._runs = plan.n_results > 0
        # The common case: the outputs are exactly the results, in order,
        # usually as a flat tuple (what dynamo's graphs return).
        direct = (
            plan.outputs == [(_RESULT, i) for i in range(plan.n_results)] and not plan.copy_backs
        )
        spec = plan.out_spec
        flat_tuple = spec.type is tuple and all(c.is_leaf() for c in spec.children_specs)
        self._flat_tuple = flat_tuple
        self._tuple_out = direct and flat_tuple
        self._direct = direct
        sources = plan.outputs + [src for _, src in plan.copy_backs]
        self._pre = sorted({payload for kind, payload in sources if kind == _COPY})

    def graph_inputs(self, args) -> tuple:
        """The inputs one call with ``args`` feeds ``_run_cached_graph``
        (advances the RNG seed if the graph uses it)."""
        full = args + self._consts
        if self._seeded:
            full += (self._next_seed(),)
        return self._gather(full)

    def __call__(self, args):
        if self._extra:
            full = args + self._consts
            if self._seeded:
                full += (self._next_seed(),)
        else:
            full = args
        if self._runs:
            inputs = self._gather(full)
            try:
                results = self._run(self._hash, inputs)
            except RuntimeError as err:
                return self._retry(err, args, inputs)
        else:
            results = ()
        if self._tuple_out:
            return tuple(results)
        return self._outputs(args, results)

    def _retry(self, err, args, inputs):
        X = self._X
        msg = str(err)
        if "pending ir" in msg:
            # Some input still carries lazy work from before the call:
            # compute it (only that work, not the caller's other pending
            # tensors) and retry. Checking up front would cost every call;
            # failing is cheap and rare.
            inputs = list(inputs)
            pending = [t for t, p in zip(inputs, X._check_tensor_need_materialization(inputs)) if p]
            X._xla_sync_multi(pending, devices=[], wait=True, sync_xla_data=True)
            return self._outputs(args, self._run(self._hash, inputs))
        if "Failed to get computation by hash" in msg and self.gm is not None:
            # XLA's cache (XLA_COMPILATION_CACHE_SIZE entries) dropped our
            # executable: trace and compile again, then run (once: a second
            # failure is raised).
            self._retrace(args)
            return self._outputs(args, self._run(self._hash, self.graph_inputs(args)))
        raise err

    def _retrace(self, args) -> None:
        X = self._X
        tensors = [a for a in args if isinstance(a, torch.Tensor)]
        pending = [t for t, p in zip(tensors, X._check_tensor_need_materialization(tensors)) if p]
        if pending:
            X._xla_sync_multi(pending, devices=[], wait=True, sync_xla_data=True)
        X._xla_wait_device_ops([])
        rng_seed = X._xla_get_rng_seed(self._device)
        try:
            self._install(_Trace.run(self.gm, args).plan())
        finally:
            X._xla_set_rng_seed(rng_seed, self._device)

    def _outputs(self, args, results):
        plan = self.plan
        if self._direct:
            if self._tuple_out:
                return tuple(results)
            return pytree.tree_unflatten(list(results), plan.out_spec)
        # Values of arguments before the call, read before any copy-back.
        pre = {j: args[j].clone() for j in self._pre}
        if plan.copy_backs:
            values = [_value(kind, p, args, results, pre, None) for _, (kind, p) in plan.copy_backs]
            with torch.no_grad():
                for (i, _), value in zip(plan.copy_backs, values):
                    args[i].copy_(value)
        leaves: list = []
        for kind, payload in plan.outputs:
            leaves.append(_value(kind, payload, args, results, pre, leaves))
        if self._flat_tuple:
            return tuple(leaves)
        return pytree.tree_unflatten(leaves, plan.out_spec)

    def _next_seed(self) -> torch.Tensor:
        X, device = self._X, self._device
        seed = X._xla_get_rng_seed(device)
        X._xla_set_rng_seed((_SEED_ADD + seed * _SEED_MUL) % (1 << 64), device)
        return X._get_base_seed_as_tensor(device)


def _value(kind, payload, args, results, pre, leaves):
    if kind == _RESULT:
        return results[payload]
    if kind == _ARG:
        return args[payload]
    if kind == _COPY:
        return pre[payload]
    if kind == _ALIAS:
        return args[payload].detach()
    if kind == _SAME:
        return leaves[payload]
    if kind == _FRESH:
        return leaves[payload].clone()
    if isinstance(payload, torch.Tensor):
        # A fresh tensor each call: a caller editing it must not change the
        # next call's result.
        return payload.clone()
    return payload
