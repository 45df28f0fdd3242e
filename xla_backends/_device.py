"""Moving a call's arguments to the XLA device and its results back.

Both backends accept a call with host (CPU) tensors only: they run it on the
XLA device and return results on the caller's device, copying in-place
updates back into the caller's host tensors. A call with tensors on both
devices runs as eager code would: that is the graph's own business.
"""
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


def run_on_xla(fn, args, positions):
    """Call ``fn`` on ``args`` with the host tensors at ``positions`` moved to
    the XLA device; copy their in-place updates back and return the results
    on the host. An output that is a moved argument itself (the graph returned
    its input) comes back as the caller's tensor, as in eager."""
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

    def back(t):
        if id(t) in caller_of:
            return caller_of[id(t)]
        return t.to(host) if is_xla(t) else t

    return pytree.tree_map_only(torch.Tensor, back, out)
