"""Where each runner runs: host or XLA device, and what ends a timed step.

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

Every runner gets its own copy of the module, so no runner sees another's
parameter or buffer updates.
"""
from __future__ import annotations

import copy

import torch

from .measure import Runner

# Backends whose graphs run on the XLA device; any other runs on the host.
XLA_BACKENDS = frozenset(
    {"torchxla_trivial", "torchxla_trace_once", "aot_torchxla_trace_once", "openxla", "openxla_eval"}
)


def runs_on_xla(backend: str) -> bool:
    return backend in XLA_BACKENDS


def baseline_name(use_xla: bool) -> str:
    return "xla" if use_xla else "eager"


def baseline_runner(module: torch.nn.Module, use_xla: bool) -> Runner:
    name = baseline_name(use_xla)
    if use_xla:
        return _xla_runner(name, module, compile_with=None)
    return _host_runner(name, module, compile_with=None)


def backend_runner(module: torch.nn.Module, backend: str) -> Runner:
    if runs_on_xla(backend):
        return _xla_runner(backend, module, compile_with=backend)
    return _host_runner(backend, module, compile_with=backend)


def _host_runner(name, module, compile_with) -> Runner:
    model = copy.deepcopy(module)
    fn = torch.compile(model, backend=compile_with) if compile_with else model

    def step(inputs):
        with torch.no_grad():
            return fn(*inputs)

    return Runner(name, step)


def _xla_runner(name, module, compile_with) -> Runner:
    import torch_xla

    device = torch_xla.device()
    model = copy.deepcopy(module).to(device)
    fn = torch.compile(model, backend=compile_with) if compile_with else model

    def prepare(inputs):
        placed = tuple(t.to(device) for t in inputs)
        sync_device()  # the transfer is not part of the step
        return placed

    def step(inputs):
        with torch.no_grad():
            out = fn(*inputs)
        # ``out`` stays referenced until the sync: an unreferenced lazy
        # result would never be computed.
        sync_device()
        return out

    return Runner(name, step, prepare)


def sync_device() -> None:
    """Compute everything pending on the XLA device and wait for it."""
    import torch_xla
    import torch_xla.core.xla_model as xm

    torch_xla.sync()
    xm.wait_device_ops()
