"""torch_xla's CPU-fallback counters, read one way by the bridge and the harness.

torch_xla counts every op it runs on the CPU for want of an XLA lowering in
an ``aten::<op>`` counter; ``fallback_counts()`` reads them all and
``grown(before, after)`` names those that rose between two readings.
torch_xla is imported on the first call, not with this package.
"""
from __future__ import annotations

PREFIX = "aten::"


def fallback_counts() -> dict[str, int]:
    """How often each op has fallen back to the CPU so far, by counter name."""
    import torch_xla.debug.metrics as met

    return {n: met.counter_value(n) for n in met.counter_names() if n.startswith(PREFIX)}


def grown(before: dict[str, int], after: dict[str, int]) -> list[str]:
    """The counters of ``after`` above their value in ``before``, sorted."""
    return sorted(op for op, n in after.items() if n > before.get(op, 0))
