"""Test-only dynamo backends, registered on import (by ``torchbenchmark``).

``fault_wrong_output``: runs the graph, then scales every floating-point
output by 1.5, so ``--accuracy`` must report ``fail_accuracy``.
"""
import torch
from torch._dynamo.backends.registry import list_backends, register_backend
from torch.utils import _pytree as pytree

WRONG_BACKEND = "fault_wrong_output"
SCALE = 1.5


def fault_wrong_output(gm: torch.fx.GraphModule, example_inputs):
    def run(*args):
        out = gm(*args)
        return pytree.tree_map_only(
            torch.Tensor, lambda t: t * SCALE if t.is_floating_point() else t, out)

    return run


# Importing twice (a test that forgets torchbenchmark from sys.modules) must not
# register twice: the registry asserts on a name it already has.
if WRONG_BACKEND not in list_backends(exclude_tags=()):
    register_backend(fault_wrong_output, name=WRONG_BACKEND)
