"""Where each contender runs: host or XLA device, and what one timed step is.

``baseline_contender`` and ``backend_contender`` turn a loaded model into
``measure.Contender``s:

* the eager baseline runs the host module on host inputs;
* the XLA baseline (``--use-xla-baseline``) runs the module lazily on the XLA
  device, re-traced every step, and a step ends once ``torch_xla.sync()`` and
  the device wait return;
* an XLA backend (``XLA_BACKENDS``) compiles a device copy of the module with
  ``torch.compile`` and ends its step the same way, so both sides of a speedup
  stop the clock at the same point;
* any other registered dynamo backend (``inductor``, ``eager``...) compiles
  the host module: the table then shows what a user would pick instead.

A step is an inference call under ``torch.no_grad``, or with ``training`` a
training step: forward, a scalar loss, backward and an SGD step. Every contender
gets its own copy of the module (and optimizer), so no contender sees another's
parameter or buffer updates.

``precision`` (``config.PRECISIONS``) is applied alike by every contender: the
module copy and the floating inputs are cast to bf16/fp16 (integer inputs
stay integers), or, for ``amp``, the step runs under ``torch.autocast`` in
bf16 on the device that runs it (``xla`` or ``cpu``). Dynamic-shape marks
(``torch._dynamo.mark_dynamic``) on host inputs are carried over to the
placed copies.
"""
from __future__ import annotations

import copy
import sys

import torch
import torch._dynamo
from torch.utils import _pytree as pytree

import xla_backends

from benchmarks.run.config import PRECISIONS, TORCH_XLA_BACKENDS
from benchmarks.run.measure import Contender
from benchmarks.models.spec import call
from benchmarks.run.probes import Probe

# Backends whose graphs run on the XLA device: ours and torch_xla's; any
# other runs on the host.
XLA_BACKENDS = frozenset({*xla_backends.BACKENDS, *TORCH_XLA_BACKENDS})
LEARNING_RATE = 0.01


def runs_on_xla(backend: str) -> bool:
    return backend in XLA_BACKENDS


def baseline_contender(module: torch.nn.Module, use_xla: bool, training: bool = False,
                       precision: str = "fp32", grad: bool = False) -> Contender:
    """``grad``: an inference step with autograd on (a model whose forward
    takes gradients itself); without, under ``torch.no_grad``."""
    name = "xla" if use_xla else "eager"
    return _contender(name, module, use_xla, None, training, precision, grad=grad)


def backend_contender(module: torch.nn.Module, backend: str, training: bool = False,
                      precision: str = "fp32", on_graph=None, compile_step: str | None = None,
                      grad: bool = False) -> Contender:
    """``on_graph(gm, example_inputs)``, when given, sees every graph dynamo
    hands to the backend, before the backend compiles it. ``compile_step``
    (``RunConfig.compile_step``, with ``training``): ``whole``, the whole
    step is compiled, forward, loss, backward and optimizer step, not just
    the model, as one graph (``xla_backends.step``); ``graphs``, the step
    function as written, which dynamo breaks into graphs at ``backward()``.
    ``grad``: as for ``baseline_contender``."""
    compile_with = _observed(backend, on_graph) if on_graph else backend
    return _contender(backend, module, runs_on_xla(backend), compile_with, training, precision,
                      compile_step, grad)


def _observed(backend: str, on_graph):
    compiler = torch._dynamo.lookup_backend(backend)

    def observed(gm, example_inputs):
        on_graph(gm, example_inputs)
        return compiler(gm, example_inputs)

    return observed


def fp64_contender(module: torch.nn.Module, training: bool = False, grad: bool = False) -> Contender:
    """The model run eagerly on the host in float64, which accuracy checks
    weigh errors with (as PyTorch's harness does): not the *reference*, the
    baseline contender whose outputs they compare with."""
    return _contender("fp64", module, False, None, training, "fp64", grad=grad)


def torch_dtype(precision: str) -> torch.dtype | None:
    """The dtype the model and floating inputs are cast to (None: kept, for fp32 and amp)."""
    if precision not in PRECISIONS and precision != "fp64":
        raise ValueError(f"unknown precision {precision!r}; choose from: {', '.join(PRECISIONS)}")
    return {"bf16": torch.bfloat16, "fp16": torch.float16, "fp64": torch.float64}.get(precision)


def _contender(name, module, on_xla, compile_with, training, precision="fp32",
               compile_step=None, grad=False) -> Contender:
    device = _xla_device() if on_xla else torch.device("cpu")
    dtype = torch_dtype(precision)
    model = copy.deepcopy(module).to(device).train(training)
    if dtype is not None:
        model = model.to(dtype)  # floating parameters and buffers only
    if training and compile_step == "whole" and compile_with:
        step = _whole_step(model, compile_with)
    elif training and compile_step == "graphs" and compile_with:
        # One function as torch_xla's training tests compile it: dynamo
        # captures the loss and the SGD step too (backward() breaks the graph).
        step = torch.compile(_training_step(model, model), backend=compile_with)
    else:
        fn = torch.compile(model, backend=compile_with) if compile_with else model
        step = _training_step(fn, model) if training else _inference_step(fn, grad)
    if precision == "amp":
        step = _autocast(step, "xla" if on_xla else "cpu")
    probe = Probe(xla=on_xla)

    def prepare(inputs):
        placed = pytree.tree_map_only(torch.Tensor, lambda t: _place(t, device, dtype), inputs)
        if on_xla:
            sync_device()  # the transfer is not part of the step
        return placed

    if not on_xla:
        return Contender(name, step, prepare, probe)

    def xla_run(inputs, n):
        # As PyTorch's harness times n iterations: each one's graph sent to
        # the device (torch_xla.sync, which does not wait), one wait at the end.
        import torch_xla
        import torch_xla.core.xla_model as xm

        probe.host_started()
        for _ in range(n):
            out = step(inputs)
            torch_xla.sync()
        probe.host_done()
        xm.wait_device_ops()
        return out

    def xla_step(inputs):
        probe.host_started()
        # ``out`` stays referenced until the sync: an unreferenced lazy
        # result would never be computed.
        out = step(inputs)
        # Lazy tracing, or a compiled call's host overhead; the probe may read
        # the HLO of what is still pending (the lazy baseline's whole step).
        probe.host_done(pending=(out, list(model.parameters())) if training else out)
        sync_device()
        return out

    return Contender(name, xla_step, prepare, probe, run=xla_run)


def _place(t: torch.Tensor, device: torch.device, dtype: torch.dtype | None) -> torch.Tensor:
    """``t`` on ``device``; cast to ``dtype`` if floating; its dynamic marks kept."""
    placed = t.to(device, dtype) if dtype is not None and t.is_floating_point() else t.to(device)
    marks = getattr(t, "_dynamo_dynamic_indices", None)
    if marks and placed is not t:
        torch._dynamo.mark_dynamic(placed, sorted(marks))
    return placed


def _autocast(step, device_type: str):
    def step_under_autocast(inputs):
        with torch.autocast(device_type, dtype=torch.bfloat16):
            return step(inputs)

    return step_under_autocast


def _inference_step(fn, grad: bool = False):
    def step(inputs):
        with torch.enable_grad() if grad else torch.no_grad():
            return call(fn, inputs)

    return step


def _training_step(fn, model):
    optimizer = torch.optim.SGD(model.parameters(), lr=LEARNING_RATE)

    def step(inputs):
        optimizer.zero_grad(set_to_none=True)
        loss = scalar_loss(call(fn, inputs))
        loss.backward()
        optimizer.step()
        return loss

    return step


def _whole_step(model, backend):
    """The training step of ``_training_step``, compiled as one graph; it
    falls back to the step as written, with a warning, where it cannot be."""
    from xla_backends.step import compile_step

    whole = compile_step(model, torch.optim.SGD(model.parameters(), lr=LEARNING_RATE), scalar_loss,
                         backend)

    def step(inputs):
        return call(whole, inputs)

    return step


def scalar_loss(out) -> torch.Tensor:
    """A loss from any model output: the sum of the means of its float tensors
    (what TorchBench's ``reduce_to_scalar_loss`` does)."""
    leaves = [t for t in pytree.tree_leaves(out)
              if isinstance(t, torch.Tensor) and t.is_floating_point()]
    return sum(t.mean() for t in leaves)


def _xla_device() -> torch.device:
    import torch_xla

    # Before dynamo traces a model placed here: with symbolic sizes, a
    # max-pool would otherwise break every graph (see fake_kernels).
    xla_backends.fake_kernels.ensure()
    return torch_xla.device()


def seed_device(seed: int) -> None:
    """Seed the XLA device's generator as well: ``torch.manual_seed`` leaves it
    alone, so two runs of a model that draws random numbers on the device (the
    hashing rotations of hf_Reformer) would differ."""
    if "torch_xla" in sys.modules:
        import torch_xla.core.xla_model as xm

        xm.set_rng_state(seed)


def sync_device() -> None:
    """Compute everything pending on the XLA device and wait for it."""
    import torch_xla
    import torch_xla.core.xla_model as xm

    torch_xla.sync()
    xm.wait_device_ops()
