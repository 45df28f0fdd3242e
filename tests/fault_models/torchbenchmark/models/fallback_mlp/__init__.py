"""An MLP with ops that have no XLA lowering (median, histc): torch_xla runs
them on the CPU, so trace-once must partition the graph around them."""
import torch
from torch import nn

from torchbenchmark.util.model import BenchmarkModel

IN_FEATURES = 8


class FallbackMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(IN_FEATURES, 16)
        self.l2 = nn.Linear(16, 4)

    def forward(self, x):
        h = torch.relu(self.l1(x))
        h = h - h.median(dim=1, keepdim=True).values
        out = self.l2(h)
        hist = torch.histc(out, bins=4, min=-2.0, max=2.0)
        return out * 2, hist


class Model(BenchmarkModel):
    DEFAULT_TRAIN_BSIZE = DEFAULT_EVAL_BSIZE = 2

    def __init__(self, test, device, batch_size=None, extra_args=[]):
        super().__init__(test=test, device=device, batch_size=batch_size, extra_args=extra_args)
        self.model = FallbackMLP().to(device)
        self.example_inputs = (torch.randn(self.batch_size, IN_FEATURES),)

    def get_module(self):
        return self.model, self.example_inputs
