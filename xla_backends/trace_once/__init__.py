"""``torchxla_trace_once``: trace an FX graph into XLA once, then replay it.

dynamo's guards already decide when a graph must be captured again, so the
XLA side need not re-trace it on every call. When dynamo hands a graph over
with real example inputs (the tensors of its first call), or else on the
first call, the driver (``driver``: ``TraceOnce``, ``build`` and the runner
kinds) goes through one file per step:

0. ``lift``: parameters and buffers the graph module holds itself (dynamo
   without inlining nn modules) become arguments, read afresh on each call,
   and structured arguments (named tuples, lists, dicts of tensors) their
   tensors;
1. ``trace``: run the graph lazily, once, on shadows of the arguments (the
   caller's tensors are never touched), noting nodes that touch host tensors
   and ops that fell back to the CPU;
2. ``plan``: where each output and each in-place update of an argument comes
   from on a call (a typed ``Source``);
3. ``compile``: where each HLO parameter comes from, the graph's hash, and an
   XLA compile that does not run it, on another thread when built ahead of
   the first call (it overlaps dynamo's guards; the first run waits for it);
4. ``replay``: on every call (the first included), the arguments straight to
   the cached executable by hash, then outputs rebuilt and updates copied back;
5. ``partition``: a graph with nodes that cannot be replayed (CPU fallbacks,
   host transfers) is cut in program order; the replayable runs are traced
   once each, the others run eagerly in between (with the Python arithmetic
   on numbers read at run time, the pieces of structured host results and
   the setters of grad modes).

What happened is counted in ``torch._dynamo.utils.counters["trace_once"]``:
``traces``, ``replays``, ``retraces`` (after an eviction),
``pending_input_retries``, ``partitioned_graphs``, ``lazy_calls``,
``dropped_runners`` (past ``driver.MAX_RUNNERS`` per graph).
"""
from .compile import Donors
from .driver import Lazy, OnHost, Partitioned, PerValue, TraceOnce, torchxla_trace_once, warn_caller
from .replay import Replay

__all__ = ["Donors", "Lazy", "OnHost", "Partitioned", "PerValue", "Replay", "TraceOnce",
           "torchxla_trace_once", "warn_caller"]
