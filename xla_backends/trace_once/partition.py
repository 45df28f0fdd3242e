"""Step 5: splitting a graph around the nodes that cannot be replayed.

Two kinds of node cannot be part of a replayed executable, because their
values are made during the trace and would be frozen into it:

* ops with no XLA lowering, which torch_xla runs on the CPU (a "fallback");
* nodes that read or make tensors off the XLA device (``x.cpu()``, a host
  argument, ``t.to("xla")`` of a host tensor).

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
