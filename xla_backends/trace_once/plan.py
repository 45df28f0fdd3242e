"""Step 2: where each output and each in-place update comes from on a call.

XLA returns only values it computed, once each: never an input unchanged,
never the same value twice, never a view of an input. So each output leaf of
the traced graph gets a ``Source``: computed by the executable, the caller's
argument itself, a view rebuilt on each call (of an argument, of another
output, or of an intermediate the executable returns for it), an argument's
value from before the call, a constant, or a repeat of an earlier leaf.
Arguments the graph updated in place get one too, for the copy back into the
caller's tensor. Outputs that alias each other in the trace alias each other
on every call, as in eager.

The executable's results come in the order torch_xla's bridge gives the same
graph (``_bridge_order``), so the two compile one HLO module: XLA's buffer
assignment follows the order of a module's outputs, and another order of the
same values can need megabytes more scratch memory.
"""
from __future__ import annotations

import dataclasses
import enum
import operator
from dataclasses import dataclass
from typing import Union

import torch
from torch.fx.passes.operator_support import OperatorSupport
from torch.utils import _pytree as pytree

from . import _xlac
from .trace import Trace


class Source(enum.Enum):
    RESULT = "result"  # payload: index into the executable's results
    ARG = "arg"  # payload: arg index; the caller's argument itself
    VIEW = "view"  # payload: View; an alias rebuilt from an argument, an output or a result
    COPY = "copy"  # payload: arg index; the argument's value before the call
    CONST = "const"  # payload: the value (a tensor is cloned on every call)
    SAME = "same"  # payload: leaf index; the very object of an earlier output leaf
    FRESH = "fresh"  # payload: leaf index; a new tensor holding an earlier leaf's value


@dataclass(frozen=True)
class View:
    """``steps`` (view ops, in order) applied to ``base``: an argument
    (``of="arg"``), another output leaf (``"leaf"``), or a value the
    executable computes that no output is (``"result"``: two outputs that
    view one intermediate, as eager's alias each other)."""

    base: int
    steps: tuple
    of: str = "arg"

    def rebuild(self, args, leaves, results=()):
        if self.of == "arg":
            t = args[self.base]
        elif self.of == "leaf":
            t = leaves[self.base]
        else:
            t = results[self.base]
        for step in self.steps:
            t = step(t)
        return t


# A constant output leaf: a tensor (cloned on every call) or a Python value
# a graph returns (a size, a flag, None).
Constant = Union[torch.Tensor, int, float, bool, None]


@dataclass(frozen=True)
class Value:
    """Where one output leaf (or an argument's update) comes from: ``payload``
    is an index (``RESULT``, ``ARG``, ``COPY``, ``SAME``, ``FRESH``), a
    ``View`` (``VIEW``) or the value itself (``CONST``)."""

    source: Source
    payload: Union[int, View, Constant] = None


@dataclass
class Plan:
    n_results: int  # values the executable computes, deduplicated
    outputs: list[Value]  # one per output leaf
    out_spec: pytree.TreeSpec
    copy_backs: list[tuple[int, Value]]  # (arg index, Value) per argument updated in place
    device: str
    tensor_args: list[int]  # positions of the tensor arguments
    order: list[int] | None = None  # the order to build output leaves in (a view after its base); None: as they come
    # Values the graph made in another inference mode than the one it was
    # called in (``inference_mode`` inside the graph): (result index, is
    # inference) per result, {leaf: is inference} per output made by a copy
    # (``FRESH``, ``CONST``, ``COPY``). Views follow their bases.
    result_modes: tuple = ()
    leaf_modes: dict = dataclasses.field(default_factory=dict)

    @property
    def modal(self) -> bool:
        """Are some outputs to be made in another inference mode than the call's?"""
        return bool(self.result_modes or self.leaf_modes)

    @property
    def direct(self) -> bool:
        """The outputs are exactly the results, in order, and nothing is copied back."""
        return not self.copy_backs and self.outputs == [
            Value(Source.RESULT, i) for i in range(self.n_results)]

    def picks(self) -> list[int] | None:
        """The results each output is, when the outputs are results only (in
        any order) and nothing is copied back; else None."""
        if self.copy_backs or any(v.source is not Source.RESULT for v in self.outputs):
            return None
        return [v.payload for v in self.outputs]

    def read_after_run(self) -> frozenset:
        """Arguments a call reads after the executable ran: returned or
        viewed by an output (unless updated in place, when the copy back
        gives them their new value first), or read from before the call.
        Their buffers must outlive the run: they are never donated."""
        updated = {i for i, _ in self.copy_backs}
        values = self.outputs + [v for _, v in self.copy_backs]
        read = {v.payload for v in values if v.source is Source.COPY}
        for v in self.outputs:
            if v.source is Source.ARG and v.payload not in updated:
                read.add(v.payload)
            elif v.source is Source.VIEW and v.payload.of == "arg" and v.payload.base not in updated:
                read.add(v.payload.base)
        return frozenset(read)

    def before_call(self) -> list[int]:
        """Arguments whose value from before the call some output or copy-back needs."""
        values = self.outputs + [v for _, v in self.copy_backs]
        return sorted({v.payload for v in values if v.source is Source.COPY})


def make_plan(trace: Trace) -> tuple[Plan, list]:
    """The plan, and the trace tensors the executable must compute (to be
    compiled, then dropped: kept alive, their pending IR would be run by the
    caller's next ``sync`` and would pin buffers XLA may donate)."""
    shadows = trace.shadows
    arg_of_shadow = {id(shadows[i]): i for i in trace.arg_handles}
    arg_of_handle = {h: i for i, h in trace.arg_handles.items()}
    results: list = []
    result_of: dict[str, int] = {}
    made_by: list = []  # per result: the node the trace computed it at (None: made here)
    results_made: list = []  # per result: the traced tensor (before ``_kept_as_dtype``)
    node_of = _last_nodes(trace)

    def value_source(t) -> Value:
        """Where the value of trace tensor ``t`` comes from on each call."""
        if _xlac.pending([t])[0]:
            uid = _xlac.value_id(t)  # XLA returns identical outputs once: dedupe as it does
            if uid not in result_of:
                result_of[uid] = len(results)
                results.append(_kept_as_dtype(t))
                made_by.append(node_of.get(id(t)))
                results_made.append(t)
            return Value(Source.RESULT, result_of[uid])
        # Plain device data: never computed by XLA. An argument's value
        # before the call, or a constant.
        handle = _xlac.data_handles([t])[0]
        if handle in arg_of_handle:
            return Value(Source.COPY, arg_of_handle[handle])
        return Value(Source.CONST, t)

    leaves, spec = _leaves(trace.out)
    copy_backs = [(i, value_source(shadows[i])) for i in trace.updated_in_place()]
    returned = {id(t) for t in leaves}
    first = {v.payload for i, v in copy_backs
             if v.source is Source.RESULT and id(shadows[i]) not in returned}
    nodes = trace.output_nodes()
    if len(nodes) != len(leaves):
        nodes = [None] * len(leaves)
    # Each tensor leaf's node (its first leaf): a view output is rebuilt from
    # the leaf its chain of view ops reaches, whichever comes first.
    leaf_of_node: dict = {}
    for n, (t, node) in enumerate(zip(leaves, nodes)):
        if isinstance(t, torch.Tensor) and isinstance(node, torch.fx.Node):
            leaf_of_node.setdefault(node, n)
    outputs: list[Value] = []
    first_object: dict[int, int] = {}
    first_source: dict[Value, int] = {}
    computed_bases: dict = {}  # node -> the result views of it are rebuilt from

    def of_result(view: View, t) -> View | None:
        """A view of an intermediate no output is, rebuilt from it (made a
        result) only when another output aliases it: otherwise no one can
        tell, and the executable computing the view saves a step."""
        if not any(isinstance(o, torch.Tensor) and o is not t and torch._C._is_alias_of(o, t)
                   for o in leaves):
            return None
        if view.base not in computed_bases:
            base = value_source(trace.values[view.base])
            if base.source in (Source.COPY, Source.CONST):
                # Not computed by XLA (a clone made before an update, a
                # constant): an op of it is, each call, for the views to share.
                base = value_source(_computed(trace.values[view.base]))
            computed_bases[view.base] = base
        base = computed_bases[view.base]
        return View(base.payload, view.steps, "result") if base.source is Source.RESULT else None

    for n, (t, node) in enumerate(zip(leaves, nodes)):
        if not isinstance(t, torch.Tensor):
            outputs.append(Value(Source.CONST, t))
            continue
        if id(t) in first_object:  # ``return y, y``: one object twice
            outputs.append(Value(Source.SAME, first_object[id(t)]))
            continue
        first_object[id(t)] = n
        if id(t) in arg_of_shadow:
            outputs.append(Value(Source.ARG, arg_of_shadow[id(t)]))
            continue
        view = _view_of(trace, node, leaf_of_node, n)
        if view is not None and view.of == "node":
            view = of_result(view, t)
        if view is not None and not _fits(view, trace, leaves, results, node):
            view = None
        if view is not None:
            outputs.append(Value(Source.VIEW, view))
            continue
        src = value_source(t)
        if src.source in (Source.RESULT, Source.COPY):
            if src in first_source:
                # Distinct tensors with one value (``return x.clone(), x.clone()``,
                # computed once by XLA): a caller's edit of one must not show
                # in the other.
                src = Value(Source.FRESH, first_source[src])
            else:
                first_source[src] = n
        outputs.append(src)
    order = _bridge_order(trace.gm, made_by, first)
    inference = [results_made[i] for i in order]  # the results' traced tensors, reordered
    if order != sorted(order):
        results, outputs, copy_backs = _renumbered(order, results, outputs, copy_backs)
    result_modes, leaf_modes = _modes(inference, leaves, outputs)
    plan = Plan(len(results), outputs, spec, copy_backs, trace.device, sorted(trace.arg_handles),
                _build_order(outputs), result_modes, leaf_modes)
    return plan, results


def _modes(made: list, leaves: list, outputs: list) -> tuple[tuple, dict]:
    """``Plan.result_modes`` and ``leaf_modes``: the results (their traced
    tensors ``made``) and the copied output leaves whose inference mode is
    not the one the graph was called in (the trace's)."""
    ambient = torch.is_inference_mode_enabled()
    result_modes = tuple((r, t.is_inference()) for r, t in enumerate(made) if t.is_inference() != ambient)
    copied = (Source.FRESH, Source.CONST, Source.COPY)
    leaf_modes = {k: t.is_inference() for k, (t, v) in enumerate(zip(leaves, outputs))
                  if v.source in copied and isinstance(t, torch.Tensor) and t.is_inference() != ambient}
    return result_modes, leaf_modes


def _last_nodes(trace: Trace) -> dict:
    """``id(tensor)`` -> the last node whose value (or one of whose values)
    that tensor was in the trace: for an argument updated in place, the
    last update."""
    node_of = {}
    for node, value in trace.values.items():
        if node.op == "output":
            continue
        for leaf in pytree.tree_leaves(value):
            if isinstance(leaf, torch.Tensor):
                node_of[id(leaf)] = node
    return node_of


def _bridge_order(gm: torch.fx.GraphModule, made_by: list, first: set) -> list[int]:
    """The results' indices in the order torch_xla's bridge makes the outputs
    of the same graph: arguments updated in place and not returned first (in
    argument order), then the values in the order the topological sort of
    its partition of the graph computes them (``_topological_rank``); values
    of no node last. The same values in the same order make the same HLO
    module: without it, resnet50's whole training step needed 3 MB (alexnet's
    15.6 MB) more of XLA's scratch memory than under ``openxla``."""
    rank = _topological_rank(gm)
    late = len(rank)

    def key(i):
        if i in first:
            return (0, i)
        return (1, rank.get(made_by[i], late), i)

    return sorted(range(len(made_by)), key=key)


_RANK = "torchxla_trace_once_rank"


class _EveryOp(OperatorSupport):
    def is_node_supported(self, submodules, node) -> bool:
        return node.op in ("call_function", "call_module", "call_method")


def _topological_rank(gm: torch.fx.GraphModule) -> dict:
    """node -> its place in the order torch_xla's bridge fuses the graph in:
    the partitions of torch.fx's ``CapabilityBasedPartitioner`` (every op
    supported), each sorted by ``topo_sort``. Kept in ``gm.meta``: a graph
    traced twice (``fed_by_floats``) ranks its nodes once."""
    rank = gm.meta.get(_RANK)
    if rank is None:
        from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
        from torch.fx.passes.utils.fuser_utils import topo_sort

        parts = CapabilityBasedPartitioner(gm, _EveryOp(), allows_single_node_partition=True).propose_partitions()
        nodes = [n for part in parts for n in topo_sort(list(part.nodes))]
        rank = gm.meta[_RANK] = {n: k for k, n in enumerate(nodes)}
    return rank


def _renumbered(order: list[int], results: list, outputs: list, copy_backs: list):
    """``results`` in ``order``, and the values that index them renumbered."""
    new = {old: k for k, old in enumerate(order)}

    def moved(v: Value) -> Value:
        if v.source is Source.RESULT:
            return Value(Source.RESULT, new[v.payload])
        if v.source is Source.VIEW and v.payload.of == "result":
            return Value(Source.VIEW, dataclasses.replace(v.payload, base=new[v.payload.base]))
        return v

    return ([results[i] for i in order], [moved(v) for v in outputs],
            [(i, moved(v)) for i, v in copy_backs])


def _build_order(outputs: list[Value]) -> list[int] | None:
    """Leaf indices with each leaf after the leaf it is rebuilt from; None
    when that is the order they come in."""
    def base(v: Value):
        if v.source is Source.VIEW and v.payload.of == "leaf":
            return v.payload.base
        return v.payload if v.source in (Source.SAME, Source.FRESH) else None

    order: list = []
    placed: set = set()

    def place(k):
        if k in placed:
            return
        placed.add(k)
        if base(outputs[k]) is not None:
            place(base(outputs[k]))
        order.append(k)

    for k in range(len(outputs)):
        place(k)
    return None if order == list(range(len(outputs))) else order


def _computed(t: torch.Tensor) -> torch.Tensor:
    """An op of ``t`` with its value and dtype (``!= 0`` is a mask's, ``* 1``
    keeps -0.0 and NaN)."""
    return t.ne(0) if t.dtype == torch.bool else t * 1


def _kept_as_dtype(t: torch.Tensor) -> torch.Tensor:
    """``t``, or an op of it that XLA keeps in the element type of ``t``'s
    dtype. A tensor made from an executable's buffer takes the buffer's type,
    and torch_xla keeps some values in another one (a dropout mask as f32
    holding 0 or 1/(1-p), max-pool indices as u32): returned as they are,
    the mask would be float and a backward would scale by 1/(1-p) twice."""
    wanted = _element_type_of(t.dtype, str(t.device))
    if _xlac.element_type(t) == wanted:
        return t
    # An op whose result XLA computes in the dtype's own type.
    converted = _computed(t)
    return converted if _xlac.element_type(converted) == wanted else t


_ELEMENT_TYPES: dict = {}


def _element_type_of(dtype: torch.dtype, device: str) -> str:
    """The element type torch_xla keeps a tensor of ``dtype`` in."""
    key = (dtype, device)
    if key not in _ELEMENT_TYPES:
        _ELEMENT_TYPES[key] = _xlac.element_type(torch.zeros((), dtype=dtype, device=device))
    return _ELEMENT_TYPES[key]


def _leaves(out):
    return pytree.tree_flatten(out)


def _view_of(trace: Trace, node, leaf_of_node: dict, leaf: int) -> View | None:
    """The output at ``node`` as a chain of view ops over an argument or
    another output leaf, if it is one (eager returns such outputs as aliases:
    a caller's edit of one shows in its base); or, ``of="node"`` with the
    node as ``base``, over a value the graph computed that is no output."""
    if not isinstance(node, torch.fx.Node):
        return None
    values = trace.values
    steps, cur = [], node
    while True:
        if cur is not node and cur in leaf_of_node and leaf_of_node[cur] != leaf:
            base, of = leaf_of_node[cur], "leaf"
            break
        if cur.op == "placeholder":
            base, of = trace.placeholders().index(cur), "arg"
            if base not in trace.arg_handles:
                return None
            break
        if cur.op not in ("call_function", "call_method"):
            return None
        prev, index, value, item = cur.args[0] if cur.args else None, None, values.get(cur), cur
        if not isinstance(prev, torch.fx.Node):
            if cur is node or not isinstance(value, torch.Tensor):
                return None
            base, of = cur, "node"  # made here from no tensor (torch.tensor, zeros): the root
            break
        if cur.target is operator.getitem and isinstance(values.get(prev), (tuple, list)):
            # One piece of a view op with several results (split, unbind, chunk).
            index, cur = cur.args[1], prev
            prev = cur.args[0] if cur.op in ("call_function", "call_method") and cur.args else None
            if not isinstance(index, int) or not isinstance(prev, torch.fx.Node):
                return None
        prev_value = values.get(prev)
        if not isinstance(value, torch.Tensor) or not isinstance(prev_value, torch.Tensor):
            return None
        if value is not prev_value:  # an in-place op returns its input: nothing to redo
            if not torch._C._is_alias_of(value, prev_value):
                # Computed here (or a piece of an op such as topk): the chain's root.
                base, of = item, "node"
                break
            step = _step(cur, values, index)
            if step is None:
                return None
            steps.append(step)
        cur = prev
    if not steps:
        return None
    return View(base, tuple(reversed(steps)), of)


def _fits(view: View, trace: Trace, leaves: list, results: list, node) -> bool:
    """Does ``view`` rebuild, from the traced values, a tensor shaped like the output?"""
    rebuilt = view.rebuild(trace.shadows, leaves, results)
    out = trace.values[node]
    return rebuilt.shape == out.shape and rebuilt.dtype == out.dtype


# ``x.view_as(y)`` is ``x.view(y.shape)``: a runner's shapes are fixed.
_AS_SHAPE_OF = {"view_as": "view", "reshape_as": "reshape", "expand_as": "expand"}


def _step(node, values: dict, index: int | None = None):
    """The view op at ``node`` as a function of its first argument (and the
    result's piece ``index`` of an op with several), or None when another of
    its arguments is a tensor the graph made. Other graph values among the
    arguments are sizes (``x.reshape(s0, -1)``): fixed for the runner (it is
    keyed by them), so their traced values are used."""
    name = node.target
    if node.op == "call_method" and name in _AS_SHAPE_OF and len(node.args) == 2 and not node.kwargs:
        other = values.get(node.args[1])
        if not isinstance(other, torch.Tensor):
            return None
        name, rest, kwargs = _AS_SHAPE_OF[name], (tuple(other.shape),), {}
    else:
        found = []
        rest, kwargs = torch.fx.node.map_arg((node.args[1:], dict(node.kwargs)),
                                             lambda n: found.append(n) or values.get(n))
        if any(isinstance(values.get(n), torch.Tensor) or n not in values for n in found):
            return None
    if node.op == "call_method":
        call = lambda t: getattr(t, name)(*rest, **kwargs)  # noqa: E731
    else:
        call = lambda t: name(t, *rest, **kwargs)  # noqa: E731
    if index is None:
        return call
    return lambda t: call(t)[index]
