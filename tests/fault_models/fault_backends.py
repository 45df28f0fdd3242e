"""Test-only dynamo backends, registered on import (by ``torchbenchmark``).

``fault_wrong_output``: runs the graph, then scales every floating-point
output by 1.5, so ``--accuracy`` must report ``fail_accuracy``.

``fault_passthrough``: runs the graph eagerly, after sleeping
``PASSTHROUGH_DELAY_S`` per call, and scales its floating-point outputs by
``PASSTHROUGH_SCALE``: a commit that changes either constant makes it slower
or wrong (the bisect tests build such histories).
"""
import time

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


PASSTHROUGH_BACKEND = "fault_passthrough"
PASSTHROUGH_DELAY_S = 0.0
PASSTHROUGH_SCALE = 1.0


def fault_passthrough(gm: torch.fx.GraphModule, example_inputs):
    def run(*args):
        if PASSTHROUGH_DELAY_S:
            time.sleep(PASSTHROUGH_DELAY_S)
        out = gm(*args)
        if PASSTHROUGH_SCALE == 1.0:
            return out
        return pytree.tree_map_only(
            torch.Tensor, lambda t: t * PASSTHROUGH_SCALE if t.is_floating_point() else t, out)

    return run


# Importing twice (a test that forgets torchbenchmark from sys.modules) must not
# register twice: the registry asserts on a name it already has.
for _name, _fn in ((WRONG_BACKEND, fault_wrong_output), (PASSTHROUGH_BACKEND, fault_passthrough)):
    if _name not in list_backends(exclude_tags=()):
        register_backend(_fn, name=_name)
