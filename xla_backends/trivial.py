"""``torchxla_trivial``: run the FX graph lazily on the XLA device, every call.

The control experiment: each call re-traces the graph into XLA IR, so its cost
is the lazy tensor baseline's, and its speedup over it is expected near 1.0x.

Called with host tensors only (a CPU module on CPU inputs), it runs on the XLA
device and returns host results; with tensors on both, it runs the graph as
eager code would.
"""
from ._device import all_on_host, host_positions, run_on_xla
from .strides import fix_as_strided


def torchxla_trivial(gm, example_inputs):
    return LazyGraph(fix_as_strided(gm))


class LazyGraph:
    """Runs ``gm`` on the XLA device as plain lazy tensor code."""

    def __init__(self, gm):
        self.gm = gm

    def __call__(self, *args):
        if all_on_host(args):
            return run_on_xla(self._run, args, host_positions(args))
        return self.gm(*args)

    def _run(self, args):
        return self.gm(*args)
