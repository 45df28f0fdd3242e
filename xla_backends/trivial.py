"""``torchxla_trivial``: run the FX graph lazily on the XLA device, every call.

The control experiment: each call re-traces the graph into XLA IR, so its cost
is the lazy tensor baseline's, and its speedup over it is expected near 1.0x.

Called with host tensors only (a CPU module on CPU inputs), it runs on the XLA
device and returns results where eager puts them (the host, unless the graph
makes them on the XLA device), its views of the arguments made on the
caller's tensors; with tensors on both, it runs the graph as
eager code would.
"""
from . import fake_kernels
from ._device import (all_on_host, arg_views, copying_transfers, host_positions, output_devices, run_on_xla,
                      with_arg_views)
from .strides import fix_as_strided


def torchxla_trivial(gm, example_inputs):
    fake_kernels.ensure()
    return LazyGraph(fix_as_strided(gm))


class LazyGraph:
    """Runs ``gm`` on the XLA device as plain lazy tensor code."""

    def __init__(self, gm):
        self.gm = gm
        self.devices = output_devices(gm)
        self.arg_views = arg_views(gm)
        self._on_host = None  # the graph for calls with host tensors only

    def __call__(self, *args):
        if all_on_host(args):
            out = run_on_xla(self._run, args, host_positions(args), self.devices)
            return with_arg_views(out, args, self.arg_views, self.devices)
        return self.gm(*args)

    def _run(self, args):
        if self._on_host is None:
            self._on_host = copying_transfers(self.gm)
        return self._on_host(*args)
