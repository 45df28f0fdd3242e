"""A whole training step compiled as one graph (``xla_backends.step``),
checked against the same step run eagerly on the CPU, step after step:
loss, parameters, gradients, optimizer state and BatchNorm statistics; one
executable per step; updated values donated; dropout; the fall-back to the
step as written, with its warning."""
import copy
import warnings

import pytest
import torch
import torch_xla
import torch_xla.core.xla_model as xm
from torch import nn

from xla_backends.step import compile_step

X = torch_xla._XLAC
BACKEND = "aot_torchxla_trace_once"


class BNNet(nn.Module):
    def __init__(self, p=0.0):
        super().__init__()
        self.fc1, self.bn, self.drop, self.fc2 = nn.Linear(6, 16), nn.BatchNorm1d(16), nn.Dropout(p), nn.Linear(16, 2)

    def forward(self, x, scale=1.0):
        return self.fc2(self.drop(torch.relu(self.bn(self.fc1(x))))) * scale


def loss_fn(out):
    return out.pow(2).mean()


def sgd(model):
    return torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-2)


def eager_step(model, optimizer, *args, **kwargs):
    optimizer.zero_grad(set_to_none=True)
    loss = loss_fn(model(*args, **kwargs))
    loss.backward()
    optimizer.step()
    return loss


def close(actual, expected, what, atol=1e-5):
    torch.testing.assert_close(actual.detach().cpu(), expected.detach().cpu(), atol=atol, rtol=1e-4,
                               msg=lambda m: f"{what}: {m}")


def buffer_of(t):
    return X._get_tensors_xla_device_data_node([t])[1][0]


def deleted(t) -> bool:
    xm.wait_device_ops()
    return "Data Handle: Deleted" in X._get_xla_tensor_debug_info(t)


def trio(model, xla, make_optimizer=sgd, **step_kwargs):
    """(eager model, its optimizer), (lazy XLA model, its optimizer),
    (the XLA model compiled whole, its optimizer, its step)."""
    eager = copy.deepcopy(model).train()
    lazy = copy.deepcopy(model).to(xla).train()
    ours = copy.deepcopy(model).to(xla).train()
    optimizer = make_optimizer(ours)
    step = compile_step(ours, optimizer, loss_fn, BACKEND, **step_kwargs)
    return (eager, make_optimizer(eager)), (lazy, make_optimizer(lazy)), (ours, optimizer, step)


@pytest.mark.parametrize("as_written", [False, True], ids=["one_graph", "as_written"])
def test_steps_match_eager(xla, as_written):
    torch.manual_seed(0)
    (eager, e_opt), (lazy, l_opt), (ours, opt, step) = trio(BNNet(), xla, as_written=as_written)
    for n in range(4):
        x = torch.randn(8, 6)
        expected = eager_step(eager, e_opt, x, scale=2.0)
        eager_step(lazy, l_opt, x.to(xla), scale=2.0)
        loss = step(x.to(xla), scale=2.0)
        torch_xla.sync()
        close(loss, expected, f"step {n}: loss")
        for (name, p), q in zip(ours.named_parameters(), eager.parameters()):
            close(p, q, f"step {n}: {name}")
            close(p.grad, q.grad, f"step {n}: {name}.grad")
            close(opt.state[p]["momentum_buffer"], e_opt.state[q]["momentum_buffer"],
                  f"step {n}: {name} momentum")
        close(ours.bn.running_mean, eager.bn.running_mean, f"step {n}: running_mean")
        # torch_xla updates running_var with the biased variance, lazily too.
        close(ours.bn.running_var, lazy.bn.running_var, f"step {n}: running_var")
        assert ours.bn.num_batches_tracked.item() == n + 1
    assert step.one_graph is not as_written


class PoolNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv, self.bn, self.fc = nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.Linear(4 * 3 * 3, 2)

    def forward(self, x):
        h = nn.functional.max_pool2d(torch.relu(self.bn(self.conv(x))), 3, 2, ceil_mode=True)
        return self.fc(h.flatten(1))


def test_max_pooling_steps_match_eager(xla):
    # torch_xla's max_pool2d is a C++ autograd function torch.func cannot
    # differentiate: the step pools through max_pool2d_with_indices instead.
    torch.manual_seed(0)
    (eager, e_opt), _, (ours, _, step) = trio(PoolNet(), xla)
    for n in range(3):
        x = torch.randn(2, 3, 8, 8)
        close(step(x.to(xla)), eager_step(eager, e_opt, x), f"step {n}: loss")
        torch_xla.sync()
        for (name, p), q in zip(ours.named_parameters(), eager.parameters()):
            close(p, q, f"step {n}: {name}")
            close(p.grad, q.grad, f"step {n}: {name}.grad")
    assert step.one_graph


def test_one_executable_per_step(xla, metrics):
    torch.manual_seed(0)
    *_, (ours, _, step) = trio(BNNet(), xla)
    for _ in range(3):  # the first step makes the momentum buffers: a graph of its own
        step(torch.randn(8, 6).to(xla))
        torch_xla.sync()
    xm.wait_device_ops()
    metrics.clear()
    for _ in range(3):
        step(torch.randn(8, 6).to(xla))
        torch_xla.sync()
    xm.wait_device_ops()
    assert metrics.executions() == 3
    assert metrics.compiles() == 0


def test_updated_values_are_donated(xla):
    torch.manual_seed(0)
    *_, (ours, opt, step) = trio(BNNet(), xla)
    step(torch.randn(8, 6).to(xla))  # makes the gradients and momentum buffers
    for n in range(2):  # the first step's graph, then the steady one's
        x = torch.randn(8, 6).to(xla)
        torch_xla.sync()
        weight = ours.fc1.weight
        # The gradients too: the step holds no second copy of them.
        old = [buffer_of(t) for t in (weight, weight.grad, ours.bn.running_mean,
                                      opt.state[weight]["momentum_buffer"])]
        # A 0-dim buffer is not: torch_xla may share it with every scalar
        # of its value (see docs/backends.md, "Buffer donation").
        count = buffer_of(ours.bn.num_batches_tracked)
        step(x)
        torch_xla.sync()
        assert [deleted(t) for t in old] == [True] * 4, n
        assert not deleted(x) and not deleted(count)


def test_dropout_draws_a_fresh_mask_every_step_and_its_gradient_follows_it(xla):
    # loss = sum(dropout(w)): the gradient is the mask scaled by 1/(1-p), and
    # the loss is that gradient times w, if forward and backward share the mask.
    class Dropped(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.rand(256) + 0.5)
            self.drop = nn.Dropout(0.5)

        def forward(self, x):
            return self.drop(self.w) * x

    model = Dropped().to(xla)
    step = compile_step(model, torch.optim.SGD(model.parameters(), lr=0.0), lambda out: out.sum(), BACKEND)
    masks = []
    for _ in range(3):
        loss = step(torch.ones(256).to(xla))
        torch_xla.sync()
        grad = model.w.grad.cpu()
        assert set(grad.unique().tolist()) <= {0.0, 2.0}
        close(loss, (grad * model.w.detach().cpu()).sum(), "loss against the gradient's mask")
        masks.append(grad)
    assert not torch.equal(masks[0], masks[1]) and not torch.equal(masks[1], masks[2])
    assert 0.3 < (masks[0] > 0).float().mean() < 0.7


def test_frozen_parameters_stay_and_get_no_gradient(xla):
    torch.manual_seed(0)
    model = BNNet()
    model.fc1.weight.requires_grad_(False)
    (eager, e_opt), _, (ours, _, step) = trio(model, xla)
    for _ in range(2):
        x = torch.randn(8, 6)
        eager_step(eager, e_opt, x)
        step(x.to(xla))
        torch_xla.sync()
    assert ours.fc1.weight.grad is None
    close(ours.fc1.weight, eager.fc1.weight, "frozen weight")
    close(ours.fc2.weight, eager.fc2.weight, "trained weight")


def test_a_graph_break_falls_back_to_the_step_as_written_with_one_warning(xla):
    class Broken(BNNet):
        def forward(self, x):
            h = self.fc1(x)
            torch._dynamo.graph_break()
            return self.fc2(torch.relu(self.bn(h)))

    torch.manual_seed(0)
    (eager, e_opt), _, (ours, _, step) = trio(Broken(), xla)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for n in range(3):
            x = torch.randn(8, 6)
            expected = eager_step(eager, e_opt, x)
            close(step(x.to(xla)), expected, f"step {n}: loss")
            torch_xla.sync()
    assert not step.one_graph and "graph break" in step.fallback_reason
    mine = [w for w in caught if "does not compile into one graph" in str(w.message)]
    assert len(mine) == 1, [str(w.message) for w in caught]
    close(ours.fc2.weight, eager.fc2.weight, "weight after the fall-back")


class OldStyleDouble(torch.autograd.Function):
    """An autograd.Function without ``setup_context``: torch.func refuses it."""

    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad * 2


def test_a_step_dynamo_cannot_capture_falls_back(xla):
    class Doubling(BNNet):
        def forward(self, x):
            return self.fc2(OldStyleDouble.apply(torch.relu(self.bn(self.fc1(x)))))

    torch.manual_seed(0)
    (eager, e_opt), _, (ours, _, step) = trio(Doubling(), xla)
    with pytest.warns(UserWarning, match="could not capture"):
        for n in range(2):
            x = torch.randn(8, 6)
            close(step(x.to(xla)), eager_step(eager, e_opt, x), f"step {n}: loss")
            torch_xla.sync()
    assert not step.one_graph
    close(ours.fc1.weight, eager.fc1.weight, "weight after the fall-back")


def test_optimizer_hooks_fall_back(xla):
    model = BNNet().to(xla)
    optimizer = sgd(model)
    seen = []
    optimizer.register_step_post_hook(lambda *a: seen.append(1))
    with pytest.warns(UserWarning, match="step hooks"):
        step = compile_step(model, optimizer, loss_fn, BACKEND)
    step(torch.randn(8, 6).to(xla))
    assert seen == [1] and not step.one_graph


def test_the_step_compiles_the_program_torch_xlas_bridge_compiles(xla, monkeypatch):
    """The same graph compiles to the same HLO module as under ``openxla``:
    its parameters and its results in the same order. XLA's buffer
    assignment follows that order: with the updated arguments in argument
    order and then the outputs (BatchNorm's statistics before the
    gradients), resnet50's step needed 3 MB more scratch memory than
    ``openxla``'s, and alexnet's 15.6 MB with the outputs first."""
    programs = []
    warm_up = X._xla_warm_up_cache

    def compiling(tensors, devices):
        # As compiled: a value several tensors hold is one result, where it first comes.
        values: dict = {}
        for t in tensors:
            values.setdefault(X._unique_id_for_ir_and_data(t), t)
        programs.append(X._get_xla_tensors_hlo(list(values.values())))
        return warm_up(tensors, devices)

    monkeypatch.setattr(X, "_xla_warm_up_cache", compiling)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.ReLU(), nn.Flatten(), nn.Linear(8 * 6 * 6, 4))
    signatures, bodies = {}, {}
    for backend in (BACKEND, "openxla"):
        copied = copy.deepcopy(model).to(xla).train()
        step = compile_step(copied, torch.optim.SGD(copied.parameters(), lr=0.1), lambda out: out.sum(), backend)
        programs.clear()
        for _ in range(3):
            step(torch.randn(2, 3, 8, 8).to(xla))
            torch_xla.sync()
        assert programs, backend
        hlo = programs[-1]  # the steady step's
        signatures[backend] = _entry_signature(hlo)
        bodies[backend] = [line for line in hlo.splitlines() if not line.startswith("HloModule")]
    parameters, results = signatures[BACKEND]
    assert "f32[]" in parameters and "s64[]" in results  # the learning rate; BatchNorm's step count
    assert signatures[BACKEND] == signatures["openxla"]
    assert bodies[BACKEND] == bodies["openxla"]


def _entry_signature(hlo: str) -> tuple[list[str], list[str]]:
    """The shapes of the entry computation's parameters and of its results, in order."""
    import re

    entry = next(line for line in hlo.splitlines() if line.startswith("ENTRY"))
    parameters, results = entry.split("->")
    shape = r"(\w+\[[\d,]*\])"
    return re.findall(r"p\d+\.\d+: " + shape, parameters), re.findall(shape, results)
