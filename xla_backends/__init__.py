"""torch._dynamo backends that run FX graphs on an XLA device.

Importing this package registers, by name:

* ``torchxla_trivial``: the control. Runs the graph lazily on the XLA device on
  every call, so XLA re-traces it each time.
* ``torchxla_trace_once``: traces the graph once, compiles it, and replays the
  compiled executable by hash on every later call.
* ``aot_torchxla_trace_once``: the same through AOT autograd, for training:
  forward and backward graphs, each traced once and replayed.

The same names are also published through the ``torch_dynamo_backends`` entry
point, so ``torch.compile(model, backend="torchxla_trace_once")`` works in a
fresh interpreter without importing this package. torch_xla itself is imported
only when a backend first compiles a graph. torch_xla's max-pool ops get the
shape functions dynamo needs with symbolic sizes (``fake_kernels``) when this
package is imported after torch_xla, or when a backend first compiles.
"""
from importlib.metadata import EntryPoint

from torch._dynamo.backends import registry as _registry

from . import fake_kernels
from .aot import aot_torchxla_trace_once
from .trace_once import torchxla_trace_once
from .trivial import torchxla_trivial

BACKENDS = {
    "torchxla_trivial": torchxla_trivial,
    "torchxla_trace_once": torchxla_trace_once,
    "aot_torchxla_trace_once": aot_torchxla_trace_once,
}

__all__ = ["BACKENDS", "aot_torchxla_trace_once", "register", "torchxla_trace_once",
           "torchxla_trivial"]


def register() -> None:
    """Register every backend of this package with dynamo; safe to call twice.

    dynamo has no public "is this name taken" query and asserts on duplicates,
    so we look at its registry. A name that dynamo discovered through our entry
    point is left for dynamo: on lookup it loads the entry point (importing
    this package) and registers the name itself, and registering it here first
    would make that lookup fail with "duplicate name".
    """
    for name, fn in BACKENDS.items():
        if name in _registry._COMPILER_FNS:
            continue
        if isinstance(_registry._BACKENDS.get(name), EntryPoint):
            continue
        _registry.register_backend(fn, name=name)


fake_kernels.ensure()
register()
