"""Splitting an FX graph around the ops that have no XLA lowering.

torch_xla runs such ops on the CPU (a "fallback"): inside a trace this
materializes the op's inputs and turns its result into a constant, so a graph
containing one cannot be replayed as a whole. ``fallback_nodes`` runs the
graph node by node and names the nodes during which a fallback happened;
``split`` fuses every maximal run of other nodes into a submodule (with
``CapabilityBasedPartitioner``) and hands each to a compiler, leaving the
fallback nodes to run eagerly between the compiled parts.
"""
from __future__ import annotations

import operator

import torch
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
from torch.fx.passes.operator_support import OperatorSupportBase

from ._device import fallback_counts

PREFIX = "xla_partition_"


def fallback_nodes(gm: torch.fx.GraphModule, args) -> dict[torch.fx.Node, list[str]]:
    """The nodes of ``gm`` that ran CPU fallbacks on ``args``, with the ops."""
    found: dict[torch.fx.Node, list[str]] = {}

    class Detector(torch.fx.Interpreter):
        def run_node(self, node):
            before = fallback_counts()
            result = super().run_node(node)
            after = fallback_counts()
            ops = sorted(op for op, n in after.items() if n > before.get(op, 0))
            if ops:
                found[node] = ops
            return result

    Detector(gm).run(*args)
    return found


class _AllBut(OperatorSupportBase):
    def __init__(self, unsupported):
        self.unsupported = unsupported

    def is_node_supported(self, submodules, node) -> bool:
        return node.op in ("call_function", "call_method", "call_module") and node not in self.unsupported


def _computes(node: torch.fx.Node) -> bool:
    """Anything but unpacking a tuple is worth an XLA graph."""
    return not (node.op == "call_function" and node.target is operator.getitem)


class _Compiled(torch.nn.Module):
    """A compiled partition, callable where the fused submodule was."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


def split(gm: torch.fx.GraphModule, unsupported, compile_fn) -> tuple[torch.fx.GraphModule, int]:
    """``gm`` with each maximal supported region replaced by ``compile_fn(region)``;
    returns the new module and the number of compiled regions."""
    # The partitioner's own single-node filter counts only call_function
    # nodes as compute, and dynamo graphs are full of call_method ones
    # (``x.exp()``): keep every region that computes anything instead.
    partitioner = CapabilityBasedPartitioner(gm, _AllBut(set(unsupported)),
                                             allows_single_node_partition=True)
    regions = [p for p in partitioner.propose_partitions() if any(map(_computes, p.nodes))]
    fused = partitioner.fuse_partitions(regions, prefix=PREFIX)
    names = [name for name, _ in fused.named_children() if name.startswith(PREFIX)]
    for name in names:
        region = getattr(fused, name)
        setattr(fused, name, _Compiled(compile_fn(region)))
    return fused, len(names)
