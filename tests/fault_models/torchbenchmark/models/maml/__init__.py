"""Adapts its weights to the batch with ``torch.autograd.grad`` inside its
forward, as TorchBench's maml does (one inner step of MAML, then the adapted
weights on the same inputs): under ``torch.no_grad`` the forward fails with
"element 0 of tensors does not require grad"."""
import torch
from torch.nn import functional as F

from torchbenchmark.faults import TinyMLP, make_model

INNER_LR = 0.1


class AdaptingMLP(TinyMLP):
    def forward(self, x):
        weights = [self.mlp[0].weight, self.mlp[0].bias, self.mlp[2].weight, self.mlp[2].bias]
        loss = self._with(x, weights).pow(2).mean()
        grads = torch.autograd.grad(loss, weights)
        return self._with(x, [w - INNER_LR * g for w, g in zip(weights, grads)])

    @staticmethod
    def _with(x, weights):
        w1, b1, w2, b2 = weights
        return F.linear(F.relu(F.linear(x, w1, b1)), w2, b2)


_Base = make_model("maml")


class Model(_Base):
    def __init__(self, test, device, batch_size=None, extra_args=[]):
        super().__init__(test, device, batch_size, extra_args)
        self.model = AdaptingMLP().to(device)
