"""Where each runner runs: host or XLA device, and what one timed step is.

``baseline_runner`` and ``backend_runner`` turn a loaded model into
``measure.Runner``s:

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
training step: forward, a scalar loss, backward and an SGD step. Every runner
gets its own copy of the module (and optimizer), so no runner sees another's
parameter or buffer updates.
"""
from __future__ import annotations

import copy

import torch
from torch.utils import _pytree as pytree

from .measure import Runner
from .probes import Probe

# Backends whose graphs run on the XLA device; any other runs on the host.
XLA_BACKENDS = frozenset(
    {"torchxla_trivial", "torchxla_trace_once", "aot_torchxla_trace_once", "openxla", "openxla_eval"}
)
LEARNING_RATE = 0.01


def runs_on_xla(backend: str) -> bool:
    return backend in XLA_BACKENDS


def baseline_runner(module: torch.nn.Module, use_xla: bool, training: bool = False) -> Runner:
    name = "xla" if use_xla else "eager"
    return _runner(name, module, use_xla, None, training)


def backend_runner(module: torch.nn.Module, backend: str, training: bool = False) -> Runner:
    return _runner(backend, module, runs_on_xla(backend), backend, training)


def _runner(name, module, on_xla, compile_with, training) -> Runner:
    device = _xla_device() if on_xla else torch.device("cpu")
    model = copy.deepcopy(module).to(device).train(training)
    fn = torch.compile(model, backend=compile_with) if compile_with else model
    step = _training_step(fn, model) if training else _inference_step(fn)
    probe = Probe(xla=on_xla)
    if not on_xla:
        return Runner(name, step, probe=probe)

    def prepare(inputs):
        placed = tuple(t.to(device) if isinstance(t, torch.Tensor) else t for t in inputs)
        sync_device()  # the transfer is not part of the step
        return placed

    def xla_step(inputs):
        probe.host_started()
        # ``out`` stays referenced until the sync: an unreferenced lazy
        # result would never be computed.
        out = step(inputs)
        probe.host_done()  # lazy tracing, or a compiled call's host overhead
        sync_device()
        return out

    return Runner(name, xla_step, prepare, probe)


def _inference_step(fn):
    def step(inputs):
        with torch.no_grad():
            return fn(*inputs)

    return step


def _training_step(fn, model):
    optimizer = torch.optim.SGD(model.parameters(), lr=LEARNING_RATE)

    def step(inputs):
        optimizer.zero_grad(set_to_none=True)
        loss = scalar_loss(fn(*inputs))
        loss.backward()
        optimizer.step()
        return loss

    return step


def scalar_loss(out) -> torch.Tensor:
    """A loss from any model output: the sum of the means of its float tensors
    (what TorchBench's ``reduce_to_scalar_loss`` does)."""
    leaves = [t for t in pytree.tree_leaves(out)
              if isinstance(t, torch.Tensor) and t.is_floating_point()]
    return sum(t.mean() for t in leaves)


def _xla_device() -> torch.device:
    import torch_xla

    return torch_xla.device()


def sync_device() -> None:
    """Compute everything pending on the XLA device and wait for it."""
    import torch_xla
    import torch_xla.core.xla_model as xm

    torch_xla.sync()
    xm.wait_device_ops()
