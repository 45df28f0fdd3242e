"""A model that raises NotImplementedError on any device but CUDA."""
from torchbenchmark.faults import make_model

_Base = make_model("cuda_only")


class Model(_Base):
    def __init__(self, test, device, batch_size=None, extra_args=[]):
        if device != "cuda":
            raise NotImplementedError("cuda_only requires CUDA")
        super().__init__(test, device, batch_size, extra_args)
