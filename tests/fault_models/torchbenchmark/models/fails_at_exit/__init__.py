"""Runs fine, but its process exits with status 1 after everything is done, as
torch_xla's exit handler does when work left pending on the device fails."""
import atexit
import os

from torchbenchmark.faults import make_model

_Base = make_model("fails_at_exit")


class Model(_Base):
    def __init__(self, test, device, batch_size=None, extra_args=[]):
        super().__init__(test, device, batch_size, extra_args)
        atexit.register(os._exit, 1)
