"""Draws random numbers in its forward, on the device it runs on (as the
hashing rotations of hf_Reformer do): two seeded runs must agree."""
import torch

from torchbenchmark.faults import TinyMLP, make_model


class NoisyMLP(TinyMLP):
    def forward(self, x):
        out = super().forward(x)
        return out + torch.randn_like(out)


_Base = make_model("random_noise")


class Model(_Base):
    def __init__(self, test, device, batch_size=None, extra_args=[]):
        super().__init__(test, device, batch_size, extra_args)
        self.model = NoisyMLP().to(device)
