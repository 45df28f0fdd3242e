"""Shape functions (fake kernels) for torch_xla ops that lack them.

On the XLA device ``max_pool2d`` runs through torch_xla's own ops,
``xla::max_pool2d_forward`` and ``xla::max_pool2d_backward``, which have no
fake kernel. With static sizes dynamo's fake tensors run such an op for real
on zeros; with symbolic sizes (``mark_dynamic``, ``dynamic=True``) they
cannot, and dynamo breaks the graph at every max-pool: the pool then runs
lazily between two graphs on every call (an XLA compile, found in the cache,
and a run), and the graph after it is captured again for each batch size.

``ensure()`` gives both ops aten's shape rules once torch_xla is loaded
(an op must exist to get one), leaving alone an op that has a fake kernel
already. It must run before dynamo traces a frame with a max-pool: it runs
when this package is imported after torch_xla (as dynamo's lookup of a
backend by name does) and when one of its backends first compiles a graph;
code that imports this package first calls it once it has loaded torch_xla.
The kernels are torch_xla's ops' for the whole process, whatever backend
compiles.
"""
from __future__ import annotations

import functools
import sys

import torch


def ensure() -> None:
    """Register the fake kernels if torch_xla is loaded and they are not yet."""
    if "torch_xla" in sys.modules:
        _register()


@functools.cache
def _register() -> None:
    for name, fake in (("xla::max_pool2d_forward", _max_pool2d_forward),
                       ("xla::max_pool2d_backward", _max_pool2d_backward)):
        try:
            if not torch._C._dispatch_has_kernel_for_dispatch_key(name, "Meta"):
                torch.library.register_fake(name, fake)
        except RuntimeError:  # no such op in this torch_xla, or a fake kernel already
            continue


def _max_pool2d_forward(self, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return torch.ops.aten.max_pool2d_with_indices.default(
        self, kernel_size, stride, padding, dilation, ceil_mode)[0]


def _max_pool2d_backward(grad_output, self, kernel_size, stride=(), padding=0, ceil_mode=False):
    return torch.empty_like(self)
