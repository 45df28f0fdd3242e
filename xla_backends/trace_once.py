"""``torchxla_trace_once``: trace an FX graph into XLA once, then replay it.

dynamo's guards already decide when a graph must be captured again, so the
XLA side need not re-trace it on every call. On the first call with real
tensors this backend

1. traces the graph once on *shadows* of the inputs (new XLA tensors over the
   same device buffers), so the caller's tensors are never touched;
2. classifies what the trace produced: outputs computed by the graph, outputs
   that are inputs or constants, inputs updated in place (``_Plan``);
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

from ._device import host_positions, run_on_xla, tensor_uid

# mark_step's recurrence for the device RNG seed: replaying advances the seed
# the same way a lazy step does, so random ops draw fresh numbers every call.
_SEED_MUL = 7012063
_SEED_ADD = 1012031


def torchxla_trace_once(gm, example_inputs):
    return TraceOnce(gm)


class TraceOnce:
    """What dynamo calls in place of one FX graph.

    One replayable graph is kept per value of the non-tensor arguments
    (symbolic sizes specialise the XLA graph); a graph without such arguments
    has exactly one, looked up without building a key.
    """

    def __init__(self, gm: torch.fx.GraphModule):
        self.gm = gm
        self._scalars: tuple | None = None  # positions of non-tensor arguments
        self._graphs: dict = {}
        self._only = None

    def __call__(self, *args):
        if self._only is not None:
            return self._only(args)
        if self._scalars is None:
            self._scalars = tuple(i for i, a in enumerate(args) if not isinstance(a, torch.Tensor))
        key = tuple(args[i] for i in self._scalars)
        graph = self._graphs.get(key)
        if graph is None:
            graph = self._graphs[key] = _HostAware(self.gm, args)
            if not self._scalars:
                self._only = graph
        return graph(args)


class _HostAware:
    """Runs one graph on the XLA device whatever device the arguments are on."""

    def __init__(self, gm, args):
        self.host = host_positions(args)
        self.graph = None
        self.gm = gm

    def __call__(self, args):
        if self.host:
            return run_on_xla(self._run, args, self.host)
        return self._run(args)

    def _run(self, args):
        if self.graph is None:
            self.graph = _build(self.gm, args)
        return self.graph(args)


def _build(gm, args):
    """Trace ``gm`` on ``args`` (all XLA-resident) and return a replayer, or a
    lazy runner if the trace fell back to the CPU."""
    import torch_xla

    # Start from plain device data: pending work of the caller's would
    # otherwise be traced into our graph.
    torch_xla.sync()
    fallbacks = _FallbackCounter()
    trace = _Trace.run(gm, args)
    fell_back = fallbacks.new_ops()
    if fell_back:
        warnings.warn(
            f"torchxla_trace_once: graph runs ops with no XLA lowering ({', '.join(fell_back)}); "
            "it is re-traced on every call instead of replayed",
            stacklevel=2,
        )
        return _Lazy(gm, fell_back)
    return Replay(trace.plan())


class _Lazy:
    """A graph that cannot be replayed, run lazily; keeps the ops that
    prevented replaying it."""

    def __init__(self, gm, fallback_ops):
        self.gm = gm
        self.fallback_ops = fallback_ops

    def __call__(self, args):
        return self.gm(*args)


class _FallbackCounter:
    """Counts CPU fallbacks (torch_xla's ``aten::*`` counters) from now on."""

    def __init__(self):
        self.before = self._counts()

    @staticmethod
    def _counts() -> dict:
        import torch_xla.debug.metrics as met

        return {n: met.counter_value(n) for n in met.counter_names() if n.startswith("aten::")}

    def new_ops(self) -> list[str]:
        after = self._counts()
        return sorted(n for n, v in after.items() if v > self.before.get(n, 0))


# Where a value comes from on each call.
_ARG, _RESULT, _CONST = "arg", "result", "const"


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

    def __init__(self, args, shadows, out):
        self.args = args
        self.shadows = shadows
        self.out = out

    @classmethod
    def run(cls, gm, args):
        shadows = [_shadow(a) if isinstance(a, torch.Tensor) else a for a in args]
        return cls(args, shadows, gm(*shadows))

    def updated_in_place(self, X, arg_handles) -> list[int]:
        """Arguments the graph updated in place: their shadow now holds IR,
        or the data of another tensor (``copy_`` from an input)."""
        pos = [i for i, s in enumerate(self.shadows) if isinstance(s, torch.Tensor)]
        shadows = [self.shadows[i] for i in pos]
        pending = X._check_tensor_need_materialization(shadows)
        updated = [i for i, p in zip(pos, pending) if p]
        data = [i for i, p in zip(pos, pending) if not p]
        handles = X._get_tensors_handle([self.shadows[i] for i in data])
        updated += [i for i, h in zip(data, handles) if h != arg_handles[i]]
        return sorted(updated)

    def plan(self) -> _Plan:
        import torch_xla

        X = torch_xla._XLAC
        arg_of_shadow = {id(s): i for i, s in enumerate(self.shadows) if isinstance(s, torch.Tensor)}
        tensor_args = [(i, a) for i, a in enumerate(self.args) if isinstance(a, torch.Tensor)]
        arg_handles = dict(zip((i for i, _ in tensor_args),
                               X._get_tensors_handle([a for _, a in tensor_args])))
        arg_of_handle = {}
        for i, h in arg_handles.items():
            arg_of_handle.setdefault(h, i)

        results: list[torch.Tensor] = []
        result_of_uid: dict[str, int] = {}
        consts: list[torch.Tensor] = []

        def source(t):
            """Where output ``t`` of the trace comes from on each call."""
            if id(t) in arg_of_shadow:
                return (_ARG, arg_of_shadow[id(t)])
            return value_source(t)

        def value_source(t):
            if X._check_tensor_need_materialization([t])[0]:
                # XLA returns identical outputs once: dedupe as it does.
                uid = tensor_uid(t)
                if uid not in result_of_uid:
                    result_of_uid[uid] = len(results)
                    results.append(t)
                return (_RESULT, result_of_uid[uid])
            # Plain device data: never returned by XLA, so map it back to
            # the argument that holds it, or keep it as a constant.
            handle = X._get_tensors_handle([t])[0]
            if handle in arg_of_handle:
                return (_ARG, arg_of_handle[handle])
            return (_CONST, t)

        leaves, spec = pytree.tree_flatten(self.out)
        outputs = [source(t) if isinstance(t, torch.Tensor) else (_CONST, t) for t in leaves]
        copy_backs = [(i, value_source(self.shadows[i]))
                      for i in self.updated_in_place(X, arg_handles)]
        device = str(self.args[tensor_args[0][0]].device) if tensor_args else str(torch_xla.device())
        return _compile(results, device, arg_of_handle, outputs, spec, copy_backs, len(self.args))


def _shadow(t: torch.Tensor) -> torch.Tensor:
    """A new XLA tensor over ``t``'s device buffer: tracing in-place ops on it
    leaves ``t`` untouched, so nothing needs restoring after the trace."""
    import torch_xla

    return torch_xla._XLAC._get_tensors_xla_device_data_node([t])[1][0]


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

    def __init__(self, plan: _Plan):
        import torch_xla

        self._X = torch_xla._XLAC
        self.plan = plan
        n = len(plan.gather)
        if n == 1:
            only = plan.gather[0]
            self._gather = lambda full: (full[only],)
        else:
            self._gather = operator.itemgetter(*plan.gather) if n else (lambda full: ())
        self._consts = plan.consts
        # The common case: the outputs are exactly the results, in order.
        self._direct = (
            plan.outputs == [(_RESULT, i) for i in range(plan.n_results)] and not plan.copy_backs
        )

    @property
    def fallback_ops(self) -> list:
        return []

    def __call__(self, args):
        plan = self.plan
        full = args + self._consts
        if plan.uses_seed:
            full = full + (self._next_seed(),)
        results = self._execute(self._gather(full)) if plan.n_results else []
        if self._direct:
            return pytree.tree_unflatten(results, plan.out_spec)
        if plan.copy_backs:
            with torch.no_grad():
                for i, (kind, payload) in plan.copy_backs:
                    args[i].copy_(_value(kind, payload, args, results))
        leaves = [_value(kind, payload, args, results) for kind, payload in plan.outputs]
        return pytree.tree_unflatten(leaves, plan.out_spec)

    def _execute(self, inputs):
        try:
            return self._X._run_cached_graph(self.plan.graph_hash, inputs)
        except RuntimeError as err:
            if "pending ir" not in str(err):
                raise
        # Some input still carries lazy work from before the call: compute it
        # (only that work, not the caller's other pending tensors) and retry.
        # Checking up front would cost every call; failing is cheap and rare.
        pending = [t for t, p in zip(inputs, self._X._check_tensor_need_materialization(inputs)) if p]
        self._X._xla_sync_multi(pending, devices=[], wait=True, sync_xla_data=True)
        return self._X._run_cached_graph(self.plan.graph_hash, inputs)

    def _next_seed(self) -> torch.Tensor:
        device = self.plan.device
        seed = self._X._xla_get_rng_seed(device)
        self._X._xla_set_rng_seed((_SEED_ADD + seed * _SEED_MUL) % (1 << 64), device)
        return self._X._get_base_seed_as_tensor(device)


def _value(kind, payload, args, results):
    if kind == _RESULT:
        return results[payload]
    if kind == _ARG:
        return args[payload]
    if isinstance(payload, torch.Tensor):
        # A fresh tensor each call: a caller editing it must not change the
        # next call's result.
        return payload.clone()
    return payload
