"""``torchxla_trivial``: run the FX graph lazily on the XLA device, every call.

The control experiment: each call re-traces the graph into XLA IR, so its cost
is the lazy tensor baseline's, and its speedup over it is expected near 1.0x.
"""
from ._device import host_positions, run_on_xla


def torchxla_trivial(gm, example_inputs):
    return LazyGraph(gm)


class LazyGraph:
    """Runs ``gm`` on the XLA device as plain lazy tensor code."""

    def __init__(self, gm):
        self.gm = gm

    def __call__(self, *args):
        positions = host_positions(args)
        if positions:
            return run_on_xla(self._run, args, positions)
        return self.gm(*args)

    def _run(self, args):
        return self.gm(*args)
