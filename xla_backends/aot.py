"""``aot_torchxla_trace_once``: training through AOT autograd.

AOT autograd splits each dynamo graph into a forward and a backward FX graph
(functionalized: in-place updates become outputs it copies back itself); each
of them is handed to the trace-once bridge, so both are traced once and
replayed by hash on every later step. Inference graphs (no gradient needed)
take the same path.

AOT autograd returns outputs that are inputs, or views of them, itself,
rebuilding them from the inputs after the graph ran: such inputs are never
donated (see ``trace_once.compile``), since their buffers must outlive the run.
A backward graph donates nothing: its inputs are tensors the forward saved,
among them the caller's own inputs, which eager leaves readable.

torch_xla 2.9's ``native_dropout`` keeps elements with probability 1 - p
but scales them by 1/p, not 1/(1 - p) (right only at p = 0.5); AOT autograd
turns every dropout it traces into ``native_dropout`` (the attention dropout
of ``scaled_dot_product_attention`` among them), so it is decomposed here,
with PyTorch's own decomposition, into a random mask and a scale.

Views of inputs the backward reads (a linear layer's ``t(weight)``) are made
inside the backward's executable from the input itself (``saved_views``),
not copied out by a lazy execution between the two on every step.

A graph whose first call passes arguments that share storage (``a`` and
``a.detach()``, two views of one tensor) runs lazily instead, with autograd,
on every call: when one of them is updated in place, AOT autograd merges them
into a "synthetic base" built from their storage, which XLA tensors lack (it
fails, or, for views with a base, gives another result than eager).
"""
import torch
from functorch.compile import make_boxed_func
from torch._decomp import get_decompositions
from torch._dynamo.backends.common import aot_autograd

from . import fake_kernels
from .saved_views import partition
from .trace_once import Donors, TraceOnce, warn_caller
from .trace_once.compile import NO_DONATION


def _boxed_trace_once(gm, example_inputs):
    # AOT autograd calls compiled graphs with one list argument ("boxed").
    return make_boxed_func(TraceOnce(gm, _donors(gm)))


def _boxed_backward(gm, example_inputs):
    return make_boxed_func(TraceOnce(gm, NO_DONATION))


def _donors(gm) -> Donors:
    """The inputs of ``gm`` that AOT autograd rebuilds outputs from after the
    run are kept; with no metadata, or inputs that are not the user's one
    for one (synthetic bases), nothing is donated."""
    from torch._functorch._aot_autograd.schemas import OutputType
    from torch._guards import TracingContext

    context = TracingContext.try_get()
    meta = getattr(context, "fw_metadata", None)
    n_inputs = sum(n.op == "placeholder" for n in gm.graph.nodes)
    if meta is None or len(meta.input_info) != n_inputs:
        return NO_DONATION
    aliased = (OutputType.alias_of_input, OutputType.is_input)
    return Donors(keep=frozenset(o.base_idx for o in meta.output_info if o.output_type in aliased))


aot_torchxla_trace_once = aot_autograd(
    fw_compiler=_boxed_trace_once, bw_compiler=_boxed_backward, partition_fn=partition,
    decompositions=get_decompositions([torch.ops.aten.native_dropout]))


def _lazy_when_aliased(backend):
    def compile_graph(gm, example_inputs, **kwargs):
        fake_kernels.ensure()
        storages = [t.untyped_storage()._cdata for t in example_inputs if isinstance(t, torch.Tensor)]
        if len(set(storages)) == len(storages):
            return backend(gm, example_inputs, **kwargs)
        warn_caller("aot_torchxla_trace_once: arguments share storage (views of one tensor, "
                    "detach()); AOT autograd's merging of them needs host storage, which XLA "
                    "tensors lack: this graph runs lazily on every call")
        return gm

    return compile_graph


aot_torchxla_trace_once = _lazy_when_aliased(aot_torchxla_trace_once)
