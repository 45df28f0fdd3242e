"""Training through ``aot_torchxla_trace_once``: forward and backward graphs
traced once, compared with eager training step after step."""
import copy

import pytest
import torch
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.debug.metrics as met
from torch import nn

import xla_backends  # noqa: F401 - registers the backends

DEVICE = torch_xla.device()


def _mlp():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 12), nn.Tanh(), nn.Linear(12, 3))


def _pair(model, lr=0.1, momentum=0.0):
    """(eager model, eager optimizer), (compiled XLA model, its optimizer, the module)."""
    eager = copy.deepcopy(model).train()
    on_xla = copy.deepcopy(model).to(DEVICE).train()
    compiled = torch.compile(on_xla, backend="aot_torchxla_trace_once")
    return ((eager, torch.optim.SGD(eager.parameters(), lr=lr, momentum=momentum)),
            (compiled, torch.optim.SGD(on_xla.parameters(), lr=lr, momentum=momentum), on_xla))


def _step(model, opt, x):
    opt.zero_grad()
    loss = model(x).pow(2).mean()
    loss.backward()
    opt.step()
    return loss


def _assert_params_close(eager, on_xla, atol=1e-5):
    for (name, a), b in zip(eager.named_parameters(), on_xla.parameters()):
        torch.testing.assert_close(b.detach().cpu(), a.detach(), atol=atol, rtol=1e-4, msg=name)


def test_gradients_equal_eager():
    (eager, _), (compiled, _, on_xla) = _pair(_mlp())
    x = torch.randn(5, 6)
    eager(x).pow(2).mean().backward()
    compiled(x.to(DEVICE)).pow(2).mean().backward()
    for (name, a), b in zip(eager.named_parameters(), on_xla.parameters()):
        torch.testing.assert_close(b.grad.cpu(), a.grad, atol=1e-5, rtol=1e-4, msg=name)


def test_optimizer_steps_keep_matching_eager():
    # Momentum keeps optimizer state: stale parameters or state would drift.
    (eager, e_opt), (compiled, x_opt, on_xla) = _pair(_mlp(), momentum=0.9)
    for _ in range(5):
        x = torch.randn(5, 6)
        e_loss = _step(eager, e_opt, x)
        x_loss = _step(compiled, x_opt, x.to(DEVICE))
        torch_xla.sync()
        torch.testing.assert_close(x_loss.cpu(), e_loss.detach(), atol=1e-5, rtol=1e-4)
        _assert_params_close(eager, on_xla)


def test_forward_and_backward_are_traced_once():
    (_, _), (compiled, opt, _) = _pair(_mlp())
    for _ in range(2):
        _step(compiled, opt, torch.randn(5, 6).to(DEVICE))
        torch_xla.sync()
    # Executions end asynchronously: let the warm-up's finish before counting.
    xm.wait_device_ops()
    met.clear_all()
    for _ in range(3):
        _step(compiled, opt, torch.randn(5, 6).to(DEVICE))
        torch_xla.sync()
    # ExecuteTime is recorded when an execution ends, asynchronously.
    xm.wait_device_ops()
    assert not met.counter_value("UncachedCompile")
    # Per step, two replayed executables (forward, backward) and two lazy
    # graphs whose compiles are cache hits: the loss gradient, computed
    # lazily outside the compiled region and synced by the bridge as a
    # pending input of the backward, and the (uncompiled) optimizer update.
    assert met.metric_data("ExecuteTime")[0] == 3 * 4
    assert met.counter_value("CachedCompile") == 3 * 2


class DropoutBN(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.bn, self.drop, self.fc2 = nn.Linear(6, 16), nn.BatchNorm1d(16), nn.Dropout(0.5), nn.Linear(16, 2)

    def forward(self, x):
        return self.fc2(self.drop(torch.relu(self.bn(self.fc1(x)))))


def test_dropout_and_batchnorm_in_train_mode():
    torch.manual_seed(0)
    model = DropoutBN()
    (eager, e_opt), (compiled, x_opt, on_xla) = _pair(model, lr=0.0)  # lr 0: weights fixed
    # torch_xla's batch norm updates running_var with the biased variance
    # (eager uses the unbiased one), so running_var is checked against the
    # same model run lazily on XLA, running_mean against eager as well.
    lazy = copy.deepcopy(model).to(DEVICE).train()
    x = torch.randn(8, 6)
    losses = []
    for step in range(4):
        _step(eager, e_opt, x)
        lazy(x.to(DEVICE))
        losses.append(_step(compiled, x_opt, x.to(DEVICE)).item())
        torch_xla.sync()
        # BatchNorm's statistics come before the dropout: they are deterministic.
        torch.testing.assert_close(on_xla.bn.running_mean.cpu(), eager.bn.running_mean, atol=1e-5, rtol=1e-4)
        torch.testing.assert_close(on_xla.bn.running_var.cpu(), lazy.bn.running_var.cpu(), atol=1e-6, rtol=1e-5)
        assert on_xla.bn.num_batches_tracked.item() == step + 1
    # Same weights, same input: only the dropout mask changes the loss.
    assert len(set(losses)) > 1


def test_weights_saved_for_the_backward_are_not_copied_every_step():
    # The backward of a linear layer reads t(weight): made inside the
    # backward's executable, not copied out lazily between the two.
    (eager, e_opt), (compiled, x_opt, on_xla) = _pair(_mlp())
    for n in range(5):
        if n == 2:
            xm.wait_device_ops()
            met.clear_all()
        x = torch.randn(5, 6)
        _step(eager, e_opt, x)
        _step(compiled, x_opt, x.to(DEVICE))
        torch_xla.sync()
    assert not met.counter_value("xla::t_copy")
    assert not met.counter_value("UncachedCompile")
    for (name, a), b in zip(eager.named_parameters(), on_xla.parameters()):
        torch.testing.assert_close(b.grad.cpu(), a.grad, atol=1e-5, rtol=1e-4, msg=name)


def test_attention_dropout_keeps_its_expectation():
    # torch_xla's native_dropout, which AOT autograd makes of every dropout,
    # scales kept elements by 1/p instead of 1/(1-p): at p=0.1, nine times
    # too large. Attention rows of uniform weights over v of ones: every
    # output element and every gradient element of v averages 1.
    def attend(q, v):
        return torch.nn.functional.scaled_dot_product_attention(q, q, v, dropout_p=0.1)

    q = torch.zeros(1, 1, 256, 8, device=DEVICE)
    v = torch.ones(1, 1, 256, 8, device=DEVICE, requires_grad=True)
    out = torch.compile(attend, backend="aot_torchxla_trace_once")(q, v)
    out.sum().backward()
    torch.testing.assert_close(out.mean().item(), 1.0, atol=0.05, rtol=0)
    torch.testing.assert_close(v.grad.mean().item(), 1.0, atol=0.05, rtol=0)


def _write_one_read_the_other(u, v, w):
    u.mul_(2)
    return (v * w).sum() + u.sum()


def _aliases(kind):
    def make(device):
        base = torch.arange(9.0, device=device).reshape(3, 3)
        return (base[0], base[:, 0], base) if kind == "views" else (base[0], base[0].detach(), base)
    return make


@pytest.mark.parametrize("kind", ["views", "detach"])
def test_arguments_that_share_storage(kind):
    """Two views of one base (which AOT autograd merges into a synthetic
    base) or a tensor and its ``detach()``, one updated in place and the
    other read: outputs, the base and the gradient as in eager, call after call."""
    make = _aliases(kind)
    w_eager = torch.nn.Parameter(torch.tensor([1.0, -2.0, 3.0]))
    w_ours = torch.nn.Parameter(w_eager.detach().to(DEVICE))
    compiled = torch.compile(_write_one_read_the_other, backend="aot_torchxla_trace_once")
    for call in range(3):
        (u, v, base), (u_x, v_x, base_x) = make("cpu"), make(DEVICE)
        want = _write_one_read_the_other(u, v, w_eager)
        got = compiled(u_x, v_x, w_ours)
        want.backward()
        got.backward()
        torch.testing.assert_close(got.detach().cpu(), want.detach(), msg=f"call {call}: output")
        torch.testing.assert_close(base_x.cpu(), base, msg=f"call {call}: base")
        torch.testing.assert_close(w_ours.grad.cpu(), w_eager.grad, msg=f"call {call}: gradient")
