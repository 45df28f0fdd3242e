"""Buffer donation: an argument whose buffer is marked as a donor
(``torch.ops.xla.dynamo_set_buffer_donor_`` in the graph, or
``_set_buffer_donation`` before the call) gives its buffer to the executable,
so the argument's data is deleted by the run; the results stay eager's. The
donated positions are fixed when the graph is compiled, so later calls (whose
buffers carry no mark) donate too and compile nothing new. Arguments a call
still reads after the run are never donated."""
import pytest
import torch
import torch_xla
import torch_xla.core.xla_model as xm

import xla_backends  # noqa: F401 - registers the backends

X = torch_xla._XLAC
BACKENDS = ["torchxla_trace_once", "aot_torchxla_trace_once"]


def deleted(t: torch.Tensor) -> bool:
    """Has an execution taken ``t``'s device buffer?"""
    xm.wait_device_ops()
    return "Data Handle: Deleted" in X._get_xla_tensor_debug_info(t)


def buffer_of(t: torch.Tensor) -> torch.Tensor:
    """A tensor over ``t``'s current device buffer (it stays on the buffer
    when ``t`` is updated in place and gets another)."""
    return X._get_tensors_xla_device_data_node([t])[1][0]


def donate_and_scale(x):
    torch.ops.xla.dynamo_set_buffer_donor_(x, True)
    return x * 1.1


def donate_and_scale_in_place(x):
    torch.ops.xla.dynamo_set_buffer_donor_(x, True)
    x.mul_(1.1)


@pytest.mark.parametrize("backend", BACKENDS)
def test_donor_marked_in_the_graph_gives_its_buffer(backend, xla):
    x = torch.randn(5, 5)
    on_xla = x.to(xla)
    out = torch.compile(donate_and_scale, backend=backend)(on_xla)
    assert deleted(on_xla)
    torch.testing.assert_close(out.cpu(), x * 1.1)


@pytest.mark.parametrize("backend", BACKENDS)
def test_donor_marked_before_the_call_gives_its_buffer(backend, xla):
    x = torch.randn(5, 5)
    on_xla = x.to(xla)
    assert X._set_buffer_donation(on_xla, True)
    out = torch.compile(lambda t: t.sin() + 1, backend=backend)(on_xla)
    assert deleted(on_xla)
    torch.testing.assert_close(out.cpu(), x.sin() + 1)


@pytest.mark.parametrize("backend", BACKENDS)
def test_unmarked_arguments_keep_their_buffers(backend, xla):
    on_xla = torch.randn(5, 5).to(xla)
    torch.compile(lambda t: t.sin() + 1, backend=backend)(on_xla)
    assert not deleted(on_xla)


@pytest.mark.parametrize("backend", BACKENDS)
def test_in_place_updates_donate_every_call_without_compiling_again(backend, xla, metrics):
    x = torch.randn(5, 5)
    on_xla = x.to(xla)
    step = torch.compile(donate_and_scale_in_place, backend=backend)
    step(on_xla)
    torch_xla.sync()
    xm.wait_device_ops()
    compiles = metrics.compiles()
    for _ in range(4):
        # The buffer the update left carries no mark: the executable donates
        # its argument's position all the same, and is not compiled again.
        assert not X._get_buffer_donation(on_xla)
        before = buffer_of(on_xla)
        step(on_xla)
        assert deleted(before)
    assert metrics.compiles() == compiles
    torch.testing.assert_close(on_xla.cpu(), x * 1.1 ** 5)


@pytest.mark.parametrize("backend", BACKENDS)
def test_arguments_returned_or_viewed_are_not_donated(backend, xla):
    def returns_it(t):
        torch.ops.xla.dynamo_set_buffer_donor_(t, True)
        return t, t[0], t * 2

    x = torch.randn(5, 5)
    on_xla = x.to(xla)
    same, row, twice = torch.compile(returns_it, backend=backend)(on_xla)
    assert same is on_xla and not deleted(on_xla)
    torch.testing.assert_close(row.cpu(), x[0])
    torch.testing.assert_close(twice.cpu(), x * 2)


@pytest.mark.parametrize("backend", BACKENDS)
def test_value_from_before_an_update_survives_a_donation(backend, xla):
    def clone_then_update(t):
        torch.ops.xla.dynamo_set_buffer_donor_(t, True)
        before = t.clone()
        t.add_(1)
        return before

    x = torch.randn(5, 5)
    on_xla = x.to(xla)
    before = torch.compile(clone_then_update, backend=backend)(on_xla)
    torch.testing.assert_close(before.cpu(), x)
    torch.testing.assert_close(on_xla.cpu(), x + 1)


def test_donated_saved_input_survives_the_backward(xla):
    # The forward saves the input for the backward; neither graph may donate it.
    w = torch.randn(4, 4, requires_grad=True)
    x = torch.randn(3, 4)

    def f(t, weight):
        torch.ops.xla.dynamo_set_buffer_donor_(t, True)
        return (t @ weight).sum()

    w_xla = w.detach().to(xla).requires_grad_()
    x_xla = x.to(xla)
    torch.compile(f, backend="aot_torchxla_trace_once")(x_xla, w_xla).backward()
    f(x, w).backward()
    torch.testing.assert_close(w_xla.grad.cpu(), w.grad)
    torch.testing.assert_close(x_xla.cpu(), x)


@pytest.mark.parametrize("backend", BACKENDS)
def test_zero_dim_arguments_are_not_donated(backend, xla):
    """torch_xla hands one device buffer to every 0-dim tensor of a value it
    moves or fills: donating one would delete it under all the others."""
    def count_up(s, x):
        torch.ops.xla.dynamo_set_buffer_donor_(s, True)
        s.add_(1.0)
        return x * s

    compiled = torch.compile(count_up, backend=backend)
    other = torch.full((), 3.25, device=xla)
    for call in range(3):
        s = torch.tensor(3.25).to(xla)  # over the same buffer as ``other``
        out = compiled(s, torch.ones(2, device=xla))
        torch.testing.assert_close(out.cpu(), torch.full((2,), 4.25), msg=f"call {call}")
        torch.testing.assert_close(s.cpu(), torch.tensor(4.25), msg=f"call {call}")
        assert not deleted(other), f"call {call}"
        assert other.item() == 3.25
