"""Step 4: the hot path. Each call feeds the caller's tensors (and a fresh RNG
seed) straight to the cached executable by hash, then rebuilds the outputs and
copies in-place updates back, as the ``Plan`` says.

Three things can get in the way, each handled off the common path:

* an input still carrying lazy work (an optimizer step run lazily between
  calls): ``_run_cached_graph`` rejects it. The first time, the input's
  position is learned; from then on the positions that were pending are
  computed before the run, so the steady state never fails;
* XLA's compilation cache evicted the executable: trace and compile again
  (same seed for the retry, so evictions do not change random numbers);
* arguments that alias each other (``b = a.detach()``) in a graph that
  updates an argument in place: the trace, made on separate shadows, cannot
  show one argument's update through the other, so such a call runs lazily.
"""
from __future__ import annotations

import operator
from contextlib import contextmanager

import torch
from torch._dynamo.utils import counters

from . import _xlac
from .compile import Donors, Executable, compile_results
from .plan import Plan, Source, Value, make_plan
from .scalars import fed_by_floats, scalar_data, stand_ins
from .trace import run, tracing

# mark_step's recurrence for the device RNG seed: each call advances the seed
# as a lazy step does, so random ops draw fresh numbers every call.
SEED_MUL = 7012063
SEED_ADD = 1012031


class Replay:
    """Replays one traced graph (``fallback_ops`` is empty: see ``Partitioned``)."""

    fallback_ops: list = []

    def __init__(self, gm, plan: Plan, executable: Executable, pending_args=(),
                 donors: Donors = Donors(), floats=()):
        self.gm = gm  # to re-trace after an eviction, or run lazily
        self.donors = donors
        self._floats = floats  # positions of the float arguments fed to the executable
        self._run = _xlac.run_cached_graph()
        if executable.compiling is not None:
            self._run = self._run_when_compiled
        self._device = plan.device
        self._install(plan, executable)
        pending = set(pending_args)
        # Input positions seen carrying lazy work: first those whose argument
        # arrived so at the build, then any that fails a run.
        self._pending_at = [k for k, g in enumerate(executable.gather) if g in pending]

    def _install(self, plan: Plan, executable: Executable) -> None:
        self.plan, self.executable = plan, executable
        gather = executable.gather
        if len(gather) == 1:
            only = gather[0]
            self._gather = lambda full: (full[only],)
        else:
            self._gather = operator.itemgetter(*gather) if gather else (lambda full: ())
        self._hash = executable.graph_hash
        self._consts = executable.consts
        self._scalars = executable.scalars
        self._seeded = executable.uses_seed
        self._extra = bool(executable.consts) or executable.uses_seed or bool(executable.scalars)
        self._runs = executable.n_results > 0
        spec = plan.out_spec
        self._flat_tuple = spec.type is tuple and all(c.is_leaf() for c in spec.children_specs)
        # A graph that makes values under another inference mode than its
        # call's takes the slow road: every output made as the trace made it.
        self._modal = plan.modal
        self._direct = plan.direct and not self._modal
        self._tuple_out = self._direct and self._flat_tuple
        # Results in another order than the outputs (see ``plan._bridge_order``).
        picks = plan.picks() if self._flat_tuple and not plan.direct and not plan.modal else None
        self._picked = operator.itemgetter(*picks) if picks and len(picks) > 1 else None
        self._pre = plan.before_call()
        # Aliasing between arguments matters only if the graph updates one.
        self._updates = bool(plan.copy_backs)
        self._tensor_args = plan.tensor_args

    def graph_inputs(self, args, seed=None) -> tuple:
        """The inputs one call with ``args`` feeds ``_run_cached_graph``
        (draws a seed, advancing the device RNG, if the graph uses one)."""
        full = args + self._consts + self._scalar_data(args)
        if self._seeded:
            full += (self._next_seed() if seed is None else seed,)
        return self._gather(full)

    def __call__(self, args):
        if self._updates and _aliased(args, self._tensor_args):
            counters["trace_once"]["lazy_calls"] += 1
            return self.gm(*args)
        counters["trace_once"]["replays"] += 1
        if not self._runs:
            return self._outputs(args, ())
        results = self._results(args)
        if self._tuple_out:
            return tuple(results)
        if self._picked is not None:
            return self._picked(results)
        return self._outputs(args, results)

    def with_results(self, args) -> tuple:
        """``(outputs, results)``: one call, and the values the executable
        computed (``View``s with ``of="result"`` are rebuilt from them);
        ``results`` is None for a call that ran lazily."""
        if self._updates and _aliased(args, self._tensor_args):
            return self(args), None
        counters["trace_once"]["replays"] += 1
        results = self._results(args) if self._runs else ()
        return self._outputs(args, results), results

    def _results(self, args) -> list:
        if self._extra:
            full = args + self._consts
            if self._scalars:
                full += self._scalar_data(args)
            if self._seeded:
                full += (self._next_seed(),)
        else:
            full = args
        inputs = self._gather(full)
        if self._pending_at:
            self._compute_pending(inputs)
        try:
            return self._run(self._hash, inputs)
        except RuntimeError as err:
            return self._recover(err, args, full)

    def _scalar_data(self, args) -> tuple:
        """The call's float arguments as the buffers of their parameters."""
        device = self._device
        return tuple(scalar_data(args[i], dtype, device) for i, dtype in self._scalars)

    def _run_when_compiled(self, graph_hash, inputs):
        """The first run of a graph XLA is compiling on another thread: wait
        for the compile (raising its error, on this and every later call),
        then run as every later call does."""
        self.executable.compiling.result()
        self._run = _xlac.run_cached_graph()
        return self._run(graph_hash, inputs)

    @contextmanager
    def launching(self, launch):
        """Within the block, calls run the executable with ``launch(graph_hash,
        inputs) -> list[Tensor]`` in place of XLA's ``_run_cached_graph``
        (waiting first for a compile still running). The seam for measuring
        the host side of a call alone: ``launch`` a stub returning results
        computed beforehand."""
        if self._run == self._run_when_compiled:
            self.executable.compiling.result()
            self._run = _xlac.run_cached_graph()
        before, self._run = self._run, launch
        try:
            yield
        finally:
            self._run = before

    def _compute_pending(self, inputs) -> None:
        candidates = [inputs[k] for k in self._pending_at]
        _xlac.compute([t for t, p in zip(candidates, _xlac.pending(candidates)) if p])

    def _recover(self, err: RuntimeError, args, full):
        msg = str(err)
        if "pending ir" in msg.lower():
            counters["trace_once"]["pending_input_retries"] += 1
            inputs = self._gather(full)
            flags = _xlac.pending(inputs)
            self._pending_at = sorted(set(self._pending_at) | {k for k, p in enumerate(flags) if p})
            self._compute_pending(inputs)
            return self._run(self._hash, inputs)
        if "Failed to get computation by hash" in msg:
            # XLA's cache (XLA_COMPILATION_CACHE_SIZE entries) dropped our
            # executable: trace and compile again, then run once more with
            # the same seed (a second failure is raised).
            counters["trace_once"]["retraces"] += 1
            self._retrace(args)
            seed = full[-1] if self._seeded else None
            inputs = self.graph_inputs(args, seed=seed)
            if self._pending_at:
                self._compute_pending(inputs)
            return self._run(self._hash, inputs)
        raise err

    def _retrace(self, args) -> None:
        known = {self.executable.gather[k] for k in self._pending_at}
        device, floats = self._device, self._floats
        with tracing(device, args) as pending_args:
            seed = _xlac.rng_seed(device)
            trace = run(self.gm, stand_ins(args, floats, 0), device)
            plan, results = make_plan(trace)
            fed = fed_by_floats(self.gm, args, device, floats, seed, (plan, results)) if floats else {}
            if fed is None:
                raise RuntimeError("torchxla_trace_once: a graph traced again after an eviction "
                                   "no longer takes its floats as inputs")
            self._install(plan, compile_results(results, trace.arg_handles, len(args),
                                                keep=self.donors.kept(plan, len(args)), fed=fed))
        known |= set(pending_args)
        self._pending_at = [k for k, g in enumerate(self.executable.gather) if g in known]

    def _outputs(self, args, results):
        plan = self.plan
        if self._modal:
            return self._outputs_in_modes(args, results)
        if self._direct:
            if self._flat_tuple:
                return tuple(results)
            return _unflatten(list(results), plan.out_spec)
        # Values of arguments before the call, read before any copy-back.
        pre = {j: args[j].clone() for j in self._pre}
        if plan.copy_backs:
            values = [_value(v, args, results, pre, None) for _, v in plan.copy_backs]
            with torch.no_grad():
                for (i, _), value in zip(plan.copy_backs, values):
                    args[i].copy_(value)
        if plan.order is None:
            leaves: list = []
            for v in plan.outputs:
                leaves.append(_value(v, args, results, pre, leaves))
        else:  # a view before the leaf it is rebuilt from
            leaves = [None] * len(plan.outputs)
            for k in plan.order:
                leaves[k] = _value(plan.outputs[k], args, results, pre, leaves)
        if self._flat_tuple:
            return tuple(leaves)
        return _unflatten(leaves, plan.out_spec)

    def _outputs_in_modes(self, args, results):
        """``_outputs`` for a graph with ``inference_mode`` regions: each
        result, and each output made by a copy, in the mode the trace made
        it in (an inference tensor is one made under ``inference_mode``: the
        results are taken anew over their buffers in it, no copy); views
        follow their bases."""
        plan = self.plan
        results = list(results)
        for r, inference in plan.result_modes:
            with torch.inference_mode(inference):
                results[r] = _xlac.data_view(results[r])
        pre = {j: args[j].clone() for j in self._pre}
        if plan.copy_backs:
            values = [_value(v, args, results, pre, None) for _, v in plan.copy_backs]
            with torch.no_grad():
                for (i, _), value in zip(plan.copy_backs, values):
                    args[i].copy_(value)
        leaves = [None] * len(plan.outputs)
        for k in plan.order or range(len(plan.outputs)):
            v = plan.outputs[k]
            if k not in plan.leaf_modes:
                leaves[k] = _value(v, args, results, pre, leaves)
                continue
            with torch.inference_mode(plan.leaf_modes[k]):
                value = _value(v, args, results, pre, leaves)
                leaves[k] = value.clone() if v.source is Source.COPY else value
        if self._flat_tuple:
            return tuple(leaves)
        return _unflatten(leaves, plan.out_spec)

    def _next_seed(self) -> torch.Tensor:
        """The seed this call's random ops start from, then the RNG advanced
        as a lazy step advances it. The running seed (not the step's base)
        is taken, so a graph called after pending lazy random ops continues
        their sequence instead of repeating it."""
        device = self._device
        running = _xlac.rng_seed(device)
        _xlac.set_rng_seed(running, device)
        seed = _xlac.seed_tensor(device)
        _xlac.set_rng_seed((SEED_ADD + running * SEED_MUL) % (1 << 64), device)
        return seed


def _aliased(args, positions) -> bool:
    """Do two tensor arguments share storage (views, ``detach()``)?"""
    storages = {args[i].untyped_storage()._cdata for i in positions}
    return len(storages) != len(positions)


def _unflatten(leaves, spec):
    from torch.utils import _pytree as pytree

    return pytree.tree_unflatten(leaves, spec)


def _value(v: Value, args, results, pre, leaves):
    source, payload = v.source, v.payload
    if source is Source.RESULT:
        return results[payload]
    if source is Source.ARG:
        return args[payload]
    if source is Source.VIEW:
        return payload.rebuild(args, leaves, results)
    if source is Source.COPY:
        return pre[payload]
    if source is Source.SAME:
        return leaves[payload]
    if source is Source.FRESH:
        return leaves[payload].clone()
    if isinstance(payload, torch.Tensor):
        # A fresh tensor each call: a caller editing it must not change the
        # next call's result.
        return payload.clone()
    return payload

