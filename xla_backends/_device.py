"""Moving a call's arguments to the XLA device and its results back.

Both backends accept a call with host (CPU) tensors only: they run it on the
XLA device and return each result on the device eager gives it (the host,
unless the graph itself makes it on the XLA device), copying in-place
updates back into the caller's host tensors. A call with tensors on both
devices runs as eager code would: that is the graph's own business.
"""
import copy

import torch
from torch.utils import _pytree as pytree


def xla_device() -> torch.device:
    """The default XLA device; imports torch_xla on first use."""
    import torch_xla

    return torch_xla.device()


def is_xla(value) -> bool:
    return isinstance(value, torch.Tensor) and value.device.type == "xla"


def host_positions(args) -> tuple:
    """Positions of the tensor arguments that live off the XLA device."""
    return tuple(
        i for i, a in enumerate(args) if isinstance(a, torch.Tensor) and a.device.type != "xla"
    )


def all_on_host(args) -> bool:
    """Are there tensor arguments, and are they all off the XLA device?"""
    tensors = [a for a in args if isinstance(a, torch.Tensor)]
    return bool(tensors) and all(t.device.type != "xla" for t in tensors)


def to_xla(args, positions, device) -> tuple:
    """A copy of ``args`` with the tensors at ``positions`` moved to ``device``."""
    moved = list(args)
    for i in positions:
        moved[i] = args[i].to(device)
    return tuple(moved)


def output_devices(gm: torch.fx.GraphModule) -> list:
    """Per output leaf of ``gm``, the device type eager gives it (from the
    example values dynamo or AOT autograd recorded), or None where unknown."""
    outputs = [n for n in gm.graph.nodes if n.op == "output"]
    if len(outputs) != 1:
        return []
    return [_seen_device(leaf) for leaf in pytree.tree_leaves(outputs[0].args[0])]


def arg_views(gm: torch.fx.GraphModule) -> list:
    """``(leaf, arg, size, stride, offset)`` per output leaf that dynamo saw
    as a view of argument ``arg`` (not the argument itself): its layout, the
    offset counted from the argument's own. From the fake tensors dynamo
    recorded, which alias as eager's do; leaves with symbolic sizes, or a
    graph without such records, give none."""
    from torch.multiprocessing.reductions import StorageWeakRef

    outputs = [n for n in gm.graph.nodes if n.op == "output"]
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    if len(outputs) != 1:
        return []
    seen_args = {}
    for i, node in enumerate(placeholders):
        seen = node.meta.get("example_value")
        if isinstance(seen, torch.Tensor):
            seen_args.setdefault(StorageWeakRef(seen.untyped_storage()), (i, seen))
    views = []
    for k, leaf in enumerate(pytree.tree_leaves(outputs[0].args[0])):
        if not isinstance(leaf, torch.fx.Node) or leaf.op == "placeholder":
            continue
        seen = leaf.meta.get("example_value")
        if not isinstance(seen, torch.Tensor) or seen.device.type == "xla":
            continue
        arg = seen_args.get(StorageWeakRef(seen.untyped_storage()))
        if arg is None:
            continue
        i, base = arg
        layout = (*seen.size(), *seen.stride(), seen.storage_offset(), base.storage_offset())
        if all(type(v) is int for v in layout):
            views.append((k, i, tuple(seen.size()), seen.stride(), seen.storage_offset() - base.storage_offset()))
    return views


def with_arg_views(out, args, views, devices=()):
    """``out`` with each leaf of ``views`` (``arg_views``) made, on the
    caller's tensor, the view eager returns; leaves eager makes on the XLA
    device stay as they are."""
    if not views:
        return out
    leaves, spec = pytree.tree_flatten(out)
    for k, i, size, stride, offset in views:
        if k < len(leaves) and not (k < len(devices) and devices[k] == "xla"):
            leaves[k] = args[i].as_strided(size, stride, args[i].storage_offset() + offset)
    return pytree.tree_unflatten(leaves, spec)


def _seen_device(node):
    meta = node.meta if isinstance(node, torch.fx.Node) else {}
    seen = meta.get("example_value", meta.get("val"))
    return seen.device.type if isinstance(seen, torch.Tensor) else None


def copying_transfers(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """``gm``, or a copy of it sharing its attributes in which each node that
    moves a host tensor to the XLA device (``x.to(xla)``) is followed by a
    ``clone``. Run on XLA copies of host arguments, such a move is a no-op
    that returns the argument itself, and an in-place update of the "moved"
    tensor would reach the caller's host tensor; in eager it is a new tensor."""
    moves = [n for n in gm.graph.nodes
             if n.op in ("call_function", "call_method") and _seen_device(n) == "xla"
             and n.args and _seen_device(n.args[0]) not in (None, "xla")]
    if not moves:
        return gm
    graph = copy.deepcopy(gm.graph)
    copies = {n.name: n for n in graph.nodes}
    for node in (copies[n.name] for n in moves):
        with graph.inserting_after(node):
            copied = graph.call_method("clone", (node,))
        node.replace_all_uses_with(copied, delete_user_cb=lambda user: user is not copied)
        copied.meta = dict(node.meta)
    return torch.fx.GraphModule(gm, graph)


def copy_back(host_args, xla_args, positions) -> None:
    """Copy the XLA copies at ``positions`` into the caller's host tensors."""
    with torch.no_grad():
        for i in positions:
            host_args[i].copy_(xla_args[i].cpu())


def tensor_uid(tensor: torch.Tensor) -> str:
    """Identity of an XLA tensor's current value: the address of its IR node
    or of its data.

    It changes whenever the tensor is updated in place, including by a copy
    from another tensor's data, which the need-materialization flag misses;
    it may also change when a value moves from IR to data. Being an address,
    it can be reused once the old node or data is freed: compare only ids of
    values kept alive.
    """
    import torch_xla

    return torch_xla._XLAC._unique_id_for_ir_and_data(tensor)


def run_on_xla(fn, args, positions, devices=()):
    """Call ``fn`` on ``args`` with the host tensors at ``positions`` moved to
    the XLA device; copy their in-place updates back and return the results
    on the host, but for output leaves whose entry in ``devices`` (see
    ``output_devices``) says eager makes them on the XLA device. An output
    that is a moved argument itself (the graph returned its input) comes back
    as the caller's tensor, as in eager."""
    import torch_xla

    host = args[positions[0]].device
    xla_args = to_xla(args, positions, xla_device())
    # The ids are addresses of IR nodes or buffers: keep the old ones alive
    # (clones share them) so that a new value cannot reuse an old address.
    alive = [xla_args[i].clone() for i in positions]
    before = [tensor_uid(t) for t in alive]
    out = fn(xla_args)
    changed = [i for i, uid in zip(positions, before) if tensor_uid(xla_args[i]) != uid]
    del alive
    # Compute everything that goes back to the host in one graph, rather than
    # one execution per tensor transferred.
    leaves = [t for t in pytree.tree_leaves(out) if is_xla(t)]
    leaves += [xla_args[i] for i in changed]
    pending = [t for t, p in zip(leaves, torch_xla._XLAC._check_tensor_need_materialization(leaves)) if p]
    if pending:
        torch_xla._XLAC._xla_sync_multi(pending, devices=[], wait=False, sync_xla_data=True)
    copy_back(args, xla_args, changed)
    caller_of = {id(xla_args[i]): args[i] for i in positions}

    def back(t, device):
        if not isinstance(t, torch.Tensor) or device == "xla":
            return t
        if id(t) in caller_of:
            return caller_of[id(t)]
        if not is_xla(t):
            return t
        if t.is_inference() != torch.is_inference_mode_enabled():
            # Made under another mode in the graph (``inference_mode``): its copy too.
            with torch.inference_mode(t.is_inference()):
                return t.to(host)
        return t.to(host)

    leaves, spec = pytree.tree_flatten(out)
    devices = devices if len(devices) == len(leaves) else [None] * len(leaves)
    return pytree.tree_unflatten([back(t, d) for t, d in zip(leaves, devices)], spec)
