"""The shared tiny model and the faults the model packages inject.

A module, not a package, so ``_list_model_paths()`` does not take it for a
model. ``make_model(name, ...)`` returns a TorchBench-style ``Model`` class
(a ``BenchmarkModel``) around ``TinyMLP``; the fault hooks run at load (``on_load``) or inside
``forward`` (``on_forward``), never at import, so listing models is safe.

With ``FAULT_MODELS_PID_LOG`` set, every load appends ``"<name> <pid>"`` to
that file: tests use it to tell where a model ran (worker or parent).
"""
import os
import signal
import sys
import time

import torch
from torch import nn

from torchbenchmark.util.model import BenchmarkModel

IN_FEATURES = 8
FLOOD_BYTES = 20 * 1024 * 1024
HANG_SECONDS = 3600
SLOW_SECONDS = 0.1


class TinyMLP(nn.Module):
    def __init__(self, on_forward=None):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(IN_FEATURES, 16), nn.ReLU(), nn.Linear(16, 4))
        self.on_forward = on_forward

    def forward(self, x):
        if self.on_forward is not None:
            self.on_forward()
        return self.mlp(x)


def make_model(name, on_load=None, on_forward=None):
    class Model(BenchmarkModel):
        """TorchBench's interface: Model(test, device, batch_size, extra_args).get_module()."""

        DEFAULT_TRAIN_BSIZE = DEFAULT_EVAL_BSIZE = 2

        def __init__(self, test, device, batch_size=None, extra_args=[]):
            _log_pid(name)
            if on_load is not None:
                on_load()
            super().__init__(test=test, device=device, batch_size=batch_size,
                             extra_args=extra_args)
            self.model = TinyMLP(on_forward).to(device)
            self.example_inputs = (torch.randn(self.batch_size, IN_FEATURES),)

        def get_module(self):
            return self.model, self.example_inputs

    Model.__name__ = Model.__qualname__ = f"Model_{name}"
    return Model


def _log_pid(name):
    path = os.environ.get("FAULT_MODELS_PID_LOG")
    if path:
        with open(path, "a") as f:
            f.write(f"{name} {os.getpid()}\n")


# The faults. Each is a plain function the forward calls; torch.compiler.disable
# keeps dynamo from tracing into them, so they run (and fail) for real under a
# compiled backend too.

def raise_on_load():
    raise RuntimeError("raise_on_load: cannot build this model (injected fault)")


@torch.compiler.disable
def boom():
    raise RuntimeError("boom from raise_on_run (injected fault)\nsecond line of the message")


@torch.compiler.disable
def _boom_compiled():
    raise RuntimeError("boom from raise_in_backend (injected fault, compiled only)")


def boom_when_compiled():
    # Dynamo folds is_compiling() to True while tracing: eager passes, the backend raises.
    if torch.compiler.is_compiling():
        _boom_compiled()


@torch.compiler.disable
def segfault():
    os.kill(os.getpid(), signal.SIGSEGV)


@torch.compiler.disable
def hang():
    time.sleep(HANG_SECONDS)


@torch.compiler.disable
def out_of_memory():
    # A real allocator failure (2**60 bytes), raised at once without using memory.
    torch.empty(2**60, dtype=torch.uint8)


_flooded = []


@torch.compiler.disable
def flood():
    # ~20 MB on stdout, once per process: enough to fill any pipe many times over.
    if not _flooded:
        _flooded.append(True)
        line = "flood " * 16 + "\n"
        sys.stdout.write(line * (FLOOD_BYTES // len(line)))
        sys.stdout.flush()


@torch.compiler.disable
def slow():
    time.sleep(SLOW_SECONDS)
