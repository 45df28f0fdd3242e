"""Step 5: splitting a graph around the nodes that cannot be replayed.

Two kinds of node cannot be part of a replayed executable, because their
values are made during the trace and would be frozen into it:

* ops with no XLA lowering, which torch_xla runs on the CPU (a "fallback");
* nodes that read or make tensors off the XLA device (``x.cpu()``, a host
  argument, ``t.to("xla")`` of a host tensor).

Two more kinds run on the host beside them (``on_host``), so that what a
part receives is a tensor or a number it takes as an input:

* Python arithmetic on numbers known only at run time (a float argument the
  executable is fed, the number an ``.item()`` read): traced, it would be
  done once on the trace's value and kept as a constant;
* the pieces of a structured value (``torch.return_types.cummin``, a tuple)
  that a host node made, taken out with ``getitem``: a part handed the whole
  value would take it for a constant of its key.

They have no side effects and are moved up to just after their inputs
(``hoisted``), to join the host run that made those. And in a graph that is
cut, the nodes that set grad, inference or autocast mode run on the host
too (``mode_nodes``), in their place: a replayed part sets no mode, and the
host runs between the parts must run under the mode the program sets.

``split`` cuts the graph, in program order, into runs of consecutive nodes:
each run of replayable nodes becomes a submodule handed to a compiler
(traced once), each run of the others a submodule run eagerly on every call.
Program order matters: an in-place update and a later reader of the same
tensor have no data dependency an FX partitioner could see, so regrouping
nodes by dependencies alone can run the reader first.
"""
from __future__ import annotations

import operator

import torch
from torch.utils import _pytree as pytree
from torch.fx.passes.split_module import split_module

from ..metrics import fallback_counts, grown

PREFIX = "submod_"


def fallback_nodes(gm: torch.fx.GraphModule, args) -> dict[torch.fx.Node, list[str]]:
    """The nodes of ``gm`` that ran CPU fallbacks on ``args``, with the ops."""
    found: dict[torch.fx.Node, list[str]] = {}

    class Detector(torch.fx.Interpreter):
        def run_node(self, node):
            before = fallback_counts()
            result = super().run_node(node)
            ops = grown(before, fallback_counts())
            if ops:
                found[node] = ops
            return result

    Detector(gm).run(*args)
    return found


def _is_number(value) -> bool:
    return isinstance(value, (int, float, torch.SymInt, torch.SymFloat, torch.SymBool))


def _holds_tensor(value) -> bool:
    return any(isinstance(v, torch.Tensor) for v in pytree.tree_leaves(value))


def on_host(gm: torch.fx.GraphModule, values: dict, eager: set, numbers=()) -> set:
    """The nodes to run on the host beside ``eager`` (see the module's
    docstring): pieces of structured values eager nodes make, and nodes that
    compute no tensor from a number known only at run time: the number an
    eager node makes, or a placeholder at a position in ``numbers``.
    ``values`` are the nodes' values in a trace."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    runtime = {placeholders[i] for i in numbers}
    runtime |= {n for n in eager if _is_number(values.get(n))}
    structured = {n for n in eager if isinstance(values.get(n), (tuple, list, dict))}
    found = set()
    for node in gm.graph.nodes:
        if node.op not in ("call_function", "call_method") or node in eager:
            continue
        value = values.get(node)
        if node.target is operator.getitem and node.args[0] in structured:
            pass
        elif _holds_tensor(value) or not any(i in runtime for i in node.all_input_nodes):
            continue
        found.add(node)
        if _is_number(value):
            runtime.add(node)
        elif isinstance(value, (tuple, list, dict)):
            structured.add(node)
    return found


def _mode_setters() -> tuple:
    names = [("torch._C", "_set_grad_enabled"), ("torch.autograd.grad_mode", "_enter_inference_mode"),
             ("torch.autograd.grad_mode", "_exit_inference_mode"), ("torch.amp", "_enter_autocast"),
             ("torch.amp", "_exit_autocast")]
    import importlib

    return tuple(getattr(importlib.import_module(m), n) for m, n in names
                 if hasattr(importlib.import_module(m), n))


def mode_nodes(gm: torch.fx.GraphModule) -> set:
    """The nodes that set grad, inference or autocast mode."""
    setters = _mode_setters()
    return {n for n in gm.graph.nodes if n.op == "call_function" and n.target in setters}


def hoisted(gm: torch.fx.GraphModule, nodes: set) -> tuple[torch.fx.GraphModule, dict]:
    """A copy of ``gm`` with each of ``nodes`` (free of side effects) moved
    up to just after the last of its inputs (the last placeholder for one
    with none), and the map of ``gm``'s nodes to the copy's."""
    graph = torch.fx.Graph()
    new: dict = {}
    graph.output(graph.graph_copy(gm.graph, new))
    copy = torch.fx.GraphModule(gm, graph)
    moved = {new[n] for n in nodes}
    order = list(copy.graph.nodes)
    last_placeholder = max((n for n in order if n.op == "placeholder"), key=order.index, default=None)
    for node in order:
        if node not in moved:
            continue
        position = {n: k for k, n in enumerate(copy.graph.nodes)}
        after = max(node.all_input_nodes, key=position.__getitem__, default=last_placeholder)
        if after is None or after.op == "placeholder":
            after = last_placeholder
        if after is not None and after is not node.prev:
            after.append(node)
    copy.recompile()
    return copy, new


def _computes(node: torch.fx.Node) -> bool:
    """Anything but unpacking a tuple is worth an XLA graph."""
    return not (node.op == "call_function" and node.target is operator.getitem)


class _Compiled(torch.nn.Module):
    """A compiled region, callable where its submodule was."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


def split(gm: torch.fx.GraphModule, eager: set, compile_fn) -> tuple[torch.fx.GraphModule, int]:
    """``gm`` cut into runs of consecutive nodes, in program order; each run
    without ``eager`` nodes that computes something is replaced by
    ``compile_fn(submodule)``. Returns the new module and the number of
    compiled regions."""
    region_of, replayable = {}, {}
    region, last = -1, None
    for node in gm.graph.nodes:
        if node.op in ("placeholder", "get_attr", "output"):
            continue
        kind = node not in eager
        if kind != last:
            region, last = region + 1, kind
            replayable[region] = kind
        region_of[node] = region
    parts = split_module(gm, gm, lambda node: region_of[node], keep_original_order=True)
    compiled = 0
    for region, kind in replayable.items():
        name = f"{PREFIX}{region}"
        sub = getattr(parts, name, None)
        if sub is None or not kind or not any(map(_computes, _calls(sub))):
            continue
        setattr(parts, name, _Compiled(compile_fn(sub)))
        compiled += 1
    return parts, compiled


def _calls(gm: torch.fx.GraphModule) -> list:
    return [n for n in gm.graph.nodes if n.op in ("call_function", "call_method", "call_module")]
