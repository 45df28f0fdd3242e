"""``torchxla_trivial`` (lazy XLA on every call) against eager PyTorch."""
import torch
from torch import nn

BACKEND = "torchxla_trivial"


def _randn(*shape, seed):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def _model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))


def test_matches_eager_call_after_call(against_eager):
    against_eager(BACKEND, _model(), lambda call: (_randn(3, 8, seed=call),), calls=3)


def test_parameters_edited_between_calls(against_eager):
    def edit(module):
        with torch.no_grad():
            for p in module.parameters():
                p.mul_(0.5)

    against_eager(BACKEND, _model(), lambda call: (_randn(3, 8, seed=call),), calls=3, between=edit)


def test_batchnorm_buffers_in_train_mode(against_eager, xla):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 6), nn.BatchNorm1d(6)).train()
    against_eager(BACKEND, model, lambda call: (_randn(5, 8, seed=call),), calls=3,
                  reference_device=xla, atol=1e-6, rtol=1e-6)


def test_host_tensors(against_eager, metrics):
    """A CPU module on CPU inputs runs on the XLA device, returns CPU tensors."""
    import torch_xla

    before = metrics.executions()
    against_eager(BACKEND, _model(), lambda call: (_randn(3, 8, seed=call),), calls=2, device="cpu")
    torch_xla._XLAC._xla_wait_device_ops([])
    assert metrics.executions() >= before + 2


def test_inplace_input_mutation(against_eager):
    def f(x, buf):
        x.add_(1)
        buf.copy_(x * 2)
        return x, buf.sum()

    against_eager(BACKEND, f, lambda call: (_randn(4, seed=call), torch.zeros(4)))


def test_host_input_updated_in_place(against_eager):
    def f(x):
        x.mul_(3)
        return x

    against_eager(BACKEND, f, lambda call: (_randn(4, seed=call),), device="cpu")
