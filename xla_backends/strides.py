"""``as_strided`` with the strides dynamo saw, on tensors that have XLA's.

Dynamo records a graph on fake tensors, whose strides are PyTorch's: the
reshape of a transposed tensor can be a view, e.g. strides (64, 768, 1) for
shape (12, 256, 64). A real XLA tensor holding the same values reports
contiguous strides, and torch_xla reads ``as_strided`` against those, so the
strides the graph carries as constants pick other elements: hf_Longformer's
overlapping attention chunks come out wrong on the XLA device, under
``torch.compile`` with any backend, while lazy XLA (which never sees fake
strides) is right.

``fix_as_strided(gm)`` rewrites each ``as_strided`` whose input dynamo saw
non-contiguous into the gather it means: each output element is the input's
element at the storage position the fake layout puts there, found on the
device (the index is a constant of the traced graph). The input's logical
elements are the same on every device, so the gather is right wherever it
runs. Left alone (with the graph as it was): an input dynamo saw contiguous
(the strides then agree), symbolic sizes, an output that reads storage the
input does not cover, and a result that is updated in place or returned
(a view there would alias the input; a gather does not).
"""
from __future__ import annotations

import torch

_AS_STRIDED = {torch.as_strided, torch.ops.aten.as_strided.default, "as_strided"}


def fix_as_strided(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """``gm`` with its fixable ``as_strided`` nodes rewritten (in place)."""
    changed = False
    for node in list(gm.graph.nodes):
        call = _strided_call(node)
        if call is None:
            continue
        with gm.graph.inserting_before(node):
            gather = gm.graph.call_function(gather_as_strided, call)
        gather.meta = dict(node.meta)
        node.replace_all_uses_with(gather)
        gm.graph.erase_node(node)
        changed = True
    if changed:
        gm.recompile()
    return gm


def _strided_call(node: torch.fx.Node):
    """``gather_as_strided``'s arguments for ``node``, or None to leave it."""
    if node.op not in ("call_function", "call_method") or node.target not in _AS_STRIDED:
        return None
    names = ("input", "size", "stride", "storage_offset")
    given = dict(zip(names, node.args)) | {("input" if k == "self" else k): v for k, v in node.kwargs.items()}
    source = given.get("input")
    seen = _fake(source)
    if seen is None or seen.is_contiguous():
        return None
    size, stride = given.get("size"), given.get("stride")
    offset = given.get("storage_offset")
    offset = seen.storage_offset() if offset is None else offset
    numbers = [*size, *stride, offset, *seen.shape, *seen.stride(), seen.storage_offset()] \
        if isinstance(size, (list, tuple)) and isinstance(stride, (list, tuple)) else [None]
    if not all(type(n) is int for n in numbers):
        return None
    if not _covered(tuple(size), tuple(stride), offset, tuple(seen.shape), seen.stride(),
                    seen.storage_offset()):
        return None
    if _aliased_by_users(node):
        return None
    return (source, tuple(size), tuple(stride), offset, tuple(seen.stride()), seen.storage_offset())


def _fake(value):
    if not isinstance(value, torch.fx.Node):
        return None
    seen = value.meta.get("example_value", value.meta.get("val"))
    return seen if isinstance(seen, torch.Tensor) else None


def _aliased_by_users(node: torch.fx.Node) -> bool:
    """Whether a user could see that the result is a view: it updates the
    result in place, or takes it out of the graph."""
    for user in node.users:
        if user.op == "output":
            return True
        name = getattr(user.target, "__name__", str(user.target)).split(".")[0]
        if name.endswith("_") and not name.endswith("__"):  # add_, copy_, ...
            return True
    return False


def _positions(shape, strides, offset, device=None) -> torch.Tensor:
    """The storage position of every element of a (shape, strides, offset)
    layout, in row-major order of its elements."""
    where = torch.tensor(offset, dtype=torch.int64, device=device)
    for n, s in zip(shape, strides):
        where = where.unsqueeze(-1) + torch.arange(n, dtype=torch.int64, device=device) * s
    return where


def _covered(size, stride, offset, shape, strides, storage_offset) -> bool:
    """Whether every position the output reads holds an element of the input
    (checked once, on the host, when the graph is rewritten)."""
    wanted = _positions(size, stride, offset).reshape(-1)
    held = _positions(shape, strides, storage_offset).reshape(-1)
    return bool(torch.isin(wanted, held).all()) and held.unique().numel() == held.numel()


def gather_as_strided(x: torch.Tensor, size, stride, offset, x_strides, x_offset) -> torch.Tensor:
    """``x.as_strided(size, stride, offset)`` as it reads on a tensor laid out
    with strides ``x_strides`` at ``x_offset``, whatever ``x``'s own layout."""
    held = _positions(x.shape, x_strides, x_offset, x.device).reshape(-1)
    span = max(held.numel(), 1 + x_offset + sum((n - 1) * s for n, s in zip(x.shape, x_strides)),
               1 + offset + sum((n - 1) * s for n, s in zip(size, stride)))
    # Storage position -> the input's element there (row-major index).
    element = torch.zeros(span, dtype=torch.int64, device=x.device)
    element = element.index_put((held,), torch.arange(held.numel(), dtype=torch.int64, device=x.device))
    return x.reshape(-1)[element[_positions(size, stride, offset, x.device)]]
