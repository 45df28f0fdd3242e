"""``aot_torchxla_trace_once``: training through AOT autograd.

AOT autograd splits each dynamo graph into a forward and a backward FX graph
(functionalized: in-place updates become outputs it copies back itself); each
of them is handed to the trace-once bridge, so both are traced once and
replayed by hash on every later step. Inference graphs (no gradient needed)
take the same path.
"""
from functorch.compile import make_boxed_func
from torch._dynamo.backends.common import aot_autograd

from .trace_once import TraceOnce


def _boxed_trace_once(gm, example_inputs):
    # AOT autograd calls compiled graphs with one list argument ("boxed").
    return make_boxed_func(TraceOnce(gm))


aot_torchxla_trace_once = aot_autograd(fw_compiler=_boxed_trace_once)
