"""AOT autograd's partition of forward and backward, with the views of inputs
the backward reads made in the backward.

AOT autograd's default partition saves, for the backward, whatever forward
value the backward reads: for a linear layer, ``t(weight)``. On XLA a view
is no buffer of its own: the forward's executable cannot return it, the
bridge rebuilds it lazily as a view of the weight after every forward, and
the backward's executable, which needs plain device data, gets it computed
by a lazy execution of its own first (a transposed copy of every weight, a
step: ``xla::t_copy``). ``partition`` has the backward read the input itself
and make the view inside its own executable instead: each chain of view ops
from a forward input that the backward uses is cloned for the backward's
users before the default partition runs, which then saves the input.
"""
from __future__ import annotations

import torch
from torch.utils import _pytree as pytree

__all__ = ["partition"]


def partition(joint_module: torch.fx.GraphModule, joint_inputs, *, num_fwd_outputs, **kwargs):
    """``default_partition``, with views of forward inputs made in the backward."""
    from torch._functorch.partitioners import default_partition

    if views_to_backward(joint_module.graph, num_fwd_outputs):
        joint_module.recompile()
    return default_partition(joint_module, joint_inputs, num_fwd_outputs=num_fwd_outputs, **kwargs)


def views_to_backward(graph: torch.fx.Graph, num_fwd_outputs: int) -> int:
    """Give the backward's users of every view of a forward input (a primal)
    their own copy of the chain of view ops; returns how many were copied."""
    (output,) = graph.find_nodes(op="output")
    forward = _ancestors(n for n in pytree.arg_tree_leaves(*output.args)[:num_fwd_outputs]
                         if isinstance(n, torch.fx.Node))
    copied = 0
    for node in list(graph.nodes):
        chain = _view_chain(node)
        later = [u for u in node.users if u not in forward]
        if node not in forward or chain is None or not later:
            continue
        with graph.inserting_after(node):
            copy = _copy_chain(graph, chain)
        for user in later:
            user.replace_input_with(node, copy)
        copied += 1
    return copied


def _ancestors(nodes) -> set:
    seen, todo = set(), list(nodes)
    while todo:
        node = todo.pop()
        if node not in seen:
            seen.add(node)
            todo.extend(node.all_input_nodes)
    return seen


def _is_view(node: torch.fx.Node) -> bool:
    return (node.op == "call_function" and isinstance(node.target, torch._ops.OpOverload)
            and node.target.is_view and bool(node.args) and isinstance(node.args[0], torch.fx.Node))


def _view_chain(node: torch.fx.Node) -> list | None:
    """The view ops from a primal to ``node``, in order; None if ``node`` is
    not a view of a primal."""
    chain = []
    while _is_view(node):
        chain.append(node)
        node = node.args[0]
    if not chain or node.op != "placeholder" or "tangents" in str(node.target):
        return None
    return chain[::-1]


def _copy_chain(graph: torch.fx.Graph, chain: list) -> torch.fx.Node:
    base = chain[0].args[0]
    for view in chain:
        base = graph.call_function(view.target, (base, *view.args[1:]), dict(view.kwargs))
        base.meta = dict(view.meta)
    return base
