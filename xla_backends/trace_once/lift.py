"""Before the trace: the graph module's own tensors as arguments.

By default dynamo passes parameters and buffers to the graph as arguments.
With ``inline_inbuilt_nn_modules = False`` it keeps them on the graph module
instead: read with ``get_attr``, or inside submodules run with
``call_module``. Traced as they are, their device buffers would be frozen
into the executable as constants: an in-place edit between calls (under
``no_grad``) would go unseen, and once torch_xla donates the old buffer to
the edit the next run would read freed data; an update the graph makes
(BatchNorm's running statistics) would never reach the module.

``lift_state(gm)`` returns a graph that takes those tensors as arguments
after its own, and where they live, so that each call passes the current
ones (``read_state``): a lifted graph is then traced, planned and replayed
like any other, its in-place updates copied back into the module's tensors.

``flatten_structured`` does the same for arguments that are structured
values holding tensors (``torch.return_types``, tuples, lists, dicts): the
graph takes their leaves instead and builds them again inside, so a runner
is never keyed by (and never keeps) a call's tensors. A graph cut around
host nodes hands its parts the pieces already (``partition.on_host``).
"""
from __future__ import annotations

import copy

import torch
from torch.func import functional_call
from torch.utils import _pytree as pytree


class _Stateless(torch.nn.Module):
    """Runs ``module`` with its parameters and buffers passed in first,
    under ``names``. The module is held out of sight (not a submodule), so
    this wrapper has no state of its own to lift again."""

    def __init__(self, module: torch.nn.Module, names: list):
        super().__init__()
        self._held = (module,)
        self.names = names

    def forward(self, *args, **kwargs):
        n = len(self.names)
        state = dict(zip(self.names, args[:n]))
        return functional_call(self._held[0], state, args[n:], kwargs)


def _owner(root: torch.nn.Module, target: str) -> tuple:
    """(object, attribute name) that ``target`` (``"a.b.c"``) names on ``root``."""
    path, _, name = target.rpartition(".")
    return (root.get_submodule(path) if path else root), name


def _tensors_of(module: torch.nn.Module) -> list:
    """(name, owner, attribute) per parameter and buffer of ``module``."""
    found = []
    for kind in (module.named_parameters, module.named_buffers):
        for name, _ in kind(remove_duplicate=False):
            found.append((name, *_owner(module, name)))
    return found


def lift_state(gm: torch.fx.GraphModule) -> tuple[torch.fx.GraphModule, tuple]:
    """``gm`` with its tensors as trailing arguments, and where each of
    those lives ((owner, attribute) per argument); ``gm`` itself and ``()``
    when it holds none."""
    graph = copy.deepcopy(gm.graph)
    nodes = list(graph.nodes)
    reads = [n for n in nodes if n.op == "get_attr" and isinstance(_fetch(gm, n.target), torch.Tensor)]
    runs = [n for n in nodes if n.op == "call_module" and _tensors_of(gm.get_submodule(n.target))]
    if not reads and not runs:
        return gm, ()
    state: list = []
    last = [n for n in nodes if n.op == "placeholder"][-1:]  # the new ones go after it, in order

    def argument(owner, name) -> torch.fx.Node:
        with graph.inserting_after(last[0]) if last else graph.inserting_before(nodes[0]):
            node = graph.placeholder(f"state_{len(state)}")
        last[:] = [node]
        state.append((owner, name))
        return node

    root: dict = {}
    for node in reads:
        node.replace_all_uses_with(argument(*_owner(gm, node.target)))
        graph.erase_node(node)
    for k, node in enumerate(runs):
        module = gm.get_submodule(node.target)
        tensors = _tensors_of(module)
        inputs = tuple(argument(owner, name) for _, owner, name in tensors)
        node.target = f"_stateless_{k}"
        node.args = inputs + tuple(node.args)
        root[node.target] = _Stateless(module, [name for name, _, _ in tensors])
    for node in graph.nodes:
        if node.op in ("get_attr", "call_module") and node.target not in root:
            root[node.target] = _fetch(gm, node.target)
    return torch.fx.GraphModule(root, graph), tuple(state)


def read_state(state: tuple) -> tuple:
    """The tensors ``state`` names, as they are now."""
    return tuple(getattr(owner, name) for owner, name in state)


def _fetch(root: torch.nn.Module, target: str):
    owner, name = _owner(root, target)
    return getattr(owner, name)


class _Rebuild(torch.nn.Module):
    """A structured argument (a named tuple, a list, a dict of tensors)
    built again, inside the graph, from its leaves."""

    def __init__(self, spec):
        super().__init__()
        self.spec = spec

    def forward(self, *leaves):
        return pytree.tree_unflatten(list(leaves), self.spec)


def structured_specs(args) -> tuple:
    """Per argument: the tree spec of a structured value that holds tensors
    (a container), else None."""
    specs = []
    for a in args:
        leaves, spec = pytree.tree_flatten(a) if isinstance(a, (tuple, list, dict)) else ((), None)
        specs.append(spec if any(isinstance(t, torch.Tensor) for t in leaves) else None)
    return tuple(specs)


def flatten_structured(gm: torch.fx.GraphModule, specs: tuple) -> torch.fx.GraphModule:
    """``gm`` taking, in place of each structured argument (``specs``, from
    ``structured_specs``), its leaves, one argument each: a runner keyed by
    such an argument's value would hold its tensors and never find it again."""
    graph = torch.fx.Graph()
    mapped: dict = {}
    root: dict = {}
    old = [n for n in gm.graph.nodes if n.op == "placeholder"]
    for k, (node, spec) in enumerate(zip(old, specs)):
        if spec is None:
            mapped[node] = graph.placeholder(node.name)
            continue
        leaves = tuple(graph.placeholder(f"{node.name}_{i}") for i in range(spec.num_leaves))
        root[f"_rebuild_{k}"] = _Rebuild(spec)
        mapped[node] = graph.call_module(f"_rebuild_{k}", leaves)
    graph.output(graph.graph_copy(gm.graph, mapped))
    for node in graph.nodes:
        if node.op in ("get_attr", "call_module") and node.target not in root:
            root[node.target] = _fetch(gm, node.target)
    return torch.fx.GraphModule(root, graph)


def flat_args(args, specs: tuple) -> tuple:
    """``args`` with each structured one (``specs``) replaced by its leaves."""
    flat: list = []
    for a, spec in zip(args, specs):
        if spec is None:
            flat.append(a)
            continue
        leaves, got = pytree.tree_flatten(a)
        if got != spec:
            raise RuntimeError(f"torchxla_trace_once: a structured argument changed its structure "
                               f"between calls ({got} after {spec})")
        flat.extend(leaves)
    return tuple(flat)
