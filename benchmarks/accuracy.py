"""Comparing a run's outputs with the baseline's.

``compare(reference, output, tolerance, cosine)`` walks both nested outputs
and checks every tensor: ``allclose`` with ``tolerance`` as both relative and
absolute tolerance, or, for numerically loose models that opt in, cosine
similarity of at least ``COSINE_THRESHOLD``. It reports the largest absolute
error it saw, so a failing row says by how much it failed.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch.utils import _pytree as pytree

COSINE_THRESHOLD = 0.99


@dataclass(frozen=True)
class Check:
    ok: bool
    max_error: float
    reason: str | None = None


def to_cpu(tree):
    """``tree`` with every tensor detached and copied to the host."""
    return pytree.tree_map_only(torch.Tensor, lambda t: t.detach().to("cpu"), tree)


def compare(reference, output, tolerance: float, cosine: bool = False) -> Check:
    ref_leaves, ref_spec = pytree.tree_flatten(reference)
    out_leaves, out_spec = pytree.tree_flatten(output)
    if ref_spec != out_spec:
        reason = " ".join(f"output structure differs: {out_spec} vs {ref_spec}".split())
        return Check(False, float("inf"), reason)
    worst, reasons = 0.0, []
    for i, (ref, out) in enumerate(zip(ref_leaves, out_leaves)):
        ok, error, reason = _compare_leaf(ref, out, tolerance, cosine)
        if math.isnan(error) or error > worst:  # max() would drop a NaN
            worst = error
        if not ok:
            reasons.append(f"output {i}: {reason}")
    # One line: the reason lands in a CSV cell (pytree specs print on several).
    return Check(not reasons, worst, " ".join("; ".join(reasons).split()) or None)


def _compare_leaf(ref, out, tolerance, cosine):
    if not isinstance(ref, torch.Tensor):
        same = ref == out
        return same, 0.0 if same else float("inf"), None if same else f"{out!r} != {ref!r}"
    if not isinstance(out, torch.Tensor) or out.shape != ref.shape or out.dtype != ref.dtype:
        return False, float("inf"), f"got {_describe(out)}, expected {_describe(ref)}"
    if ref.numel() == 0:
        return True, 0.0, None
    ref64, out64 = ref.to(torch.float64), out.to(torch.float64)
    error = (out64 - ref64).abs().max().item()
    if cosine:
        similarity = torch.nn.functional.cosine_similarity(out64.flatten(), ref64.flatten(), dim=0).item()
        ok = similarity >= COSINE_THRESHOLD
        return ok, error, None if ok else f"cosine similarity {similarity:.4f} < {COSINE_THRESHOLD}"
    ok = torch.allclose(out64, ref64, rtol=tolerance, atol=tolerance, equal_nan=True)
    return ok, error, None if ok else f"max abs error {error:.3g} > tolerance {tolerance:g}"


def _describe(value) -> str:
    if isinstance(value, torch.Tensor):
        return f"tensor{tuple(value.shape)} {value.dtype}"
    return repr(value)
