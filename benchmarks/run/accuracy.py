"""Comparing a run's outputs with the baseline's.

``compare(reference, output, tolerance, cosine)`` walks both nested outputs
and checks every tensor: ``allclose`` with ``tolerance`` as both relative and
absolute tolerance, or, for numerically loose models that opt in, cosine
similarity of at least ``COSINE_THRESHOLD``. It reports the largest absolute
error it saw, so a failing row says by how much it failed.

With ``fp64_ref`` (the same step run in float64 on the host), a tensor that
misses the tolerance still passes when it is not much further from the fp64
result than the baseline is: RMSE(output, fp64) <= ``RMSE_MULTIPLIER`` x
RMSE(baseline, fp64) + tolerance / 10, as PyTorch's harness judges (its
``same(..., fp64_ref=...)``). In bf16 or fp16 the baseline itself is off by
the rounding of its dtype; this asks the backend to be no worse than that.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch.utils import _pytree as pytree

COSINE_THRESHOLD = 0.99
RMSE_MULTIPLIER = {torch.bfloat16: 3.0, torch.float16: 3.0}  # others: 2.0, as PyTorch's harness


@dataclass(frozen=True)
class Check:
    ok: bool
    max_error: float
    reason: str | None = None


def to_cpu(tree):
    """``tree`` with every tensor detached and copied to the host."""
    return pytree.tree_map_only(torch.Tensor, lambda t: t.detach().to("cpu"), tree)


def compare(reference, output, tolerance: float, cosine: bool = False, fp64_ref=None) -> Check:
    ref_leaves, ref_spec = pytree.tree_flatten(reference)
    out_leaves, out_spec = pytree.tree_flatten(output)
    if ref_spec != out_spec:
        reason = " ".join(f"output structure differs: {out_spec} vs {ref_spec}".split())
        return Check(False, float("inf"), reason)
    fp64_leaves = pytree.tree_leaves(fp64_ref) if fp64_ref is not None else []
    if len(fp64_leaves) != len(ref_leaves):
        fp64_leaves = [None] * len(ref_leaves)  # no usable fp64 result: tolerance alone
    worst, reasons = 0.0, []
    for i, (ref, out, ref64) in enumerate(zip(ref_leaves, out_leaves, fp64_leaves)):
        ok, error, reason = _compare_leaf(ref, out, tolerance, cosine)
        if not ok and not cosine and isinstance(ref64, torch.Tensor) and math.isfinite(error):
            ok, reason = _within_fp64_error(ref, out, ref64, tolerance, reason)
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
    # Elements equal in both, infinities of one sign and NaNs included, agree
    # (as allclose(equal_nan=True) and PyTorch's harness judge): they count
    # no error, and only the others are measured.
    same = (out64 == ref64) | (out64.isnan() & ref64.isnan())
    error = torch.where(same, 0.0, (out64 - ref64).abs()).max().item()
    if cosine:
        finite = ref64.isfinite() & out64.isfinite()
        if not torch.equal(finite | same, torch.ones_like(same)):
            return False, error, "non-finite values at other positions"
        similarity = torch.nn.functional.cosine_similarity(
            out64[finite].flatten(), ref64[finite].flatten(), dim=0).item() if finite.any() else 1.0
        ok = similarity >= COSINE_THRESHOLD
        return ok, error, None if ok else f"cosine similarity {similarity:.4f} < {COSINE_THRESHOLD}"
    ok = torch.allclose(out64, ref64, rtol=tolerance, atol=tolerance, equal_nan=True)
    return ok, error, None if ok else f"max abs error {error:.3g} > tolerance {tolerance:g}"


def _rmse(a: torch.Tensor, b: torch.Tensor) -> float:
    return torch.sqrt(torch.mean(torch.square(a.to(torch.float64) - b.to(torch.float64)))).item()


def _within_fp64_error(ref, out, ref64, tolerance, reason):
    """PyTorch's fp64 rule for a tensor that missed the tolerance."""
    if ref64.shape != ref.shape or not ref.is_floating_point():
        return False, reason
    multiplier = RMSE_MULTIPLIER.get(ref.dtype, 2.0)
    ref_error, out_error = _rmse(ref64, ref), _rmse(ref64, out)
    if out_error <= multiplier * ref_error + tolerance / 10:
        return True, None
    return False, (f"{reason}, and RMSE vs fp64 {out_error:.3g} > {multiplier:g} x the baseline's "
                   f"{ref_error:.3g} + {tolerance / 10:g}")


def _describe(value) -> str:
    if isinstance(value, torch.Tensor):
        return f"tensor{tuple(value.shape)} {value.dtype}"
    return repr(value)
