"""0-dim arguments beside arguments of other ranks, against eager, call
after call.

A 0-dim argument is traced on a private copy of its buffer (torch_xla
shares one buffer per scalar value with the graph's constants), so its
buffer is the trace's alone: an in-place update in the graph frees it while
the graph is still being traced, and a buffer the trace makes next (a
constant) may be handed the freed one's handle, by which the executable's
parameters are matched to the call's arguments. Each graph here updates
some of its arguments in place (a 0-dim one among them or not, in every
order), makes constants after the updates, and returns values computed from
them, the arguments themselves or views of them; with and without buffer
donation, on both backends, and for parameters and buffers of a module.

Each call is checked against eager: the outputs, which outputs are which
inputs, the inputs after the call, and an edit of every returned output
(it must show in the inputs exactly where it shows in eager). Calls
alternate between fresh inputs and the same tensors edited in between.
"""
import itertools

import pytest
import torch
from torch import nn

import xla_backends  # noqa: F401 - registers the backends
from conftest import assert_same, identity_pattern

BACKENDS = ["torchxla_trace_once", "aot_torchxla_trace_once"]
CALLS = 4

# What each argument becomes when the graph updates it, as the bug report
# had it (``set``) or from the other arguments (``computed``).
UPDATES = {
    "set": {"s": lambda t: t["s"].fill_(2.0),
            "x": lambda t: t["x"].zero_(),
            "m": lambda t: t["m"].copy_(t["z"])},
    "computed": {"s": lambda t: t["s"].mul_(t["x"].sum()),
                 "x": lambda t: t["x"].add_(t["s"]),
                 "m": lambda t: t["m"].mul_(t["s"] + 0.5)},
}
# Every order of every subset of the updated arguments (the empty one too).
ORDERS = [order for n in range(4) for order in itertools.permutations("sxm", n)]


def _graph(names, order, kind, returned, donate):
    """A graph over ``names`` (arguments, in that order; ``z`` the source of
    ``m.copy_``) that updates ``order`` in place in that order, then makes
    constants (a scalar and a vector) and returns values computed from the
    updated arguments (and, with ``returned``, the arguments, a view and
    clones)."""

    def graph(*args):
        t = dict(zip(names, args))
        if donate:
            for name in order:
                torch.ops.xla.dynamo_set_buffer_donor_(t[name], True)
        for name in order:
            UPDATES[kind][name](t)
        k = torch.tensor([1.5, -2.0, 3.0], device=t["x"].device)
        s, x, m = t["s"], t["x"], t["m"]
        out = (x * s + k, m.sum(0) * s - 7.25, s * 0.375 + 11.0)
        if returned:
            out += (s, x, m[1], s.clone(), m.clone())
        return out

    return graph


def _inputs(call: int, names) -> list:
    g = torch.Generator().manual_seed(call)
    values = {"s": torch.tensor(1.25 + call), "x": torch.randn(3, generator=g),
              "m": torch.randn(2, 3, generator=g), "z": torch.randn(2, 3, generator=g)}
    return [values[n] for n in names]


def _edit_between_calls(tensors, call: int) -> None:
    with torch.no_grad():
        for t in tensors:
            t.add_(0.5 * call + 0.25)


def check_against_eager(eager_fn, our_fn, names, backend, xla, calls=CALLS):
    """Call ``eager_fn`` on the CPU and ``our_fn`` compiled with ``backend``
    on the XLA device, ``calls`` times: fresh tensors, then the same ones
    again as the call left them, then again edited in place, and so on. After
    each call: outputs, identities, inputs, then every returned tensor
    edited in place on both sides and the inputs and outputs compared again."""
    compiled = torch.compile(our_fn, backend=backend)
    eager_in = our_in = None
    for call in range(calls):
        where = f"call {call}"
        if call % 3 == 0:
            values = _inputs(call, names)
            eager_in = [v.clone() for v in values]
            our_in = [v.clone().to(xla) for v in values]
        elif call % 3 == 2:
            _edit_between_calls(eager_in, call)
            _edit_between_calls(our_in, call)
        expected = eager_fn(*eager_in)
        actual = compiled(*our_in)
        assert_same(actual, expected, f"{where}: output")
        assert identity_pattern(actual, our_in) == identity_pattern(expected, eager_in), \
            f"{where}: outputs alias inputs/each other differently from eager"
        assert_same(our_in, eager_in, f"{where}: inputs after the call")
        with torch.no_grad():
            for n, (a, e) in enumerate(zip(actual, expected)):
                a.mul_(-3.0).add_(n)
                e.mul_(-3.0).add_(n)
        assert_same(actual, expected, f"{where}: outputs after editing them")
        assert_same(our_in, eager_in, f"{where}: inputs after editing the outputs")


def _id(order) -> str:
    return "".join(order) or "none"


# The orders of all three updates that ``make test`` runs on both backends:
# the others, and AOT autograd's shorter orders, run in ``make test-all``.
QUICK_FULL_ORDERS = {("s", "x", "m"), ("m", "x", "s")}


def _quick(order, backend) -> bool:
    """Whether ``make test`` runs the case: every order of fewer than three
    updates on the inference backend, and on both backends (under AOT
    autograd the in-place updates become its own copies back, after our
    executable) two orders of all three, the 0-dim update first and last."""
    if len(order) == 3:
        return order in QUICK_FULL_ORDERS
    return backend == BACKENDS[0]


def _cases(orders) -> list:
    """(order, backend) for every order on both backends, those ``_quick``
    leaves out marked slow."""
    return [pytest.param(order, backend, id=f"{_id(order)}-{backend}",
                         marks=() if _quick(order, backend) else pytest.mark.slow)
            for order in orders for backend in BACKENDS]


@pytest.mark.parametrize("returned", [False, True], ids=["computed", "returned"])
@pytest.mark.parametrize("kind", list(UPDATES))
@pytest.mark.parametrize("order, backend", _cases(ORDERS))
def test_zero_dim_argument_among_arguments_updated_in_place(xla, backend, order, kind, returned):
    names = ("x", "s", "m", "z")
    check_against_eager(_graph(names, order, kind, returned, donate=False),
                        _graph(names, order, kind, returned, donate=False), names, backend, xla)


# The argument order matters to the executable's parameter order: the 0-dim
# argument first and last.
@pytest.mark.parametrize("names", [("s", "x", "m", "z"), ("x", "m", "z", "s")], ids=["first", "last"])
@pytest.mark.parametrize("order", [("s", "x", "m"), ("m", "x", "s"), ("x",), ("s",)], ids=_id)
def test_zero_dim_argument_in_any_position(xla, names, order):
    check_against_eager(_graph(names, order, "set", True, donate=False),
                        _graph(names, order, "set", True, donate=False), names, "torchxla_trace_once", xla)


@pytest.mark.parametrize("returned", [False, True], ids=["computed", "returned"])
@pytest.mark.parametrize("kind", list(UPDATES))
@pytest.mark.parametrize("order, backend", _cases([o for o in ORDERS if len(o) >= 2]))
def test_zero_dim_argument_among_donated_arguments(xla, backend, order, kind, returned):
    names = ("x", "s", "m", "z")
    check_against_eager(_graph(names, order, kind, returned, donate=False),
                        _graph(names, order, kind, returned, donate=True), names, backend, xla)


class Counting(nn.Module):
    """State of several ranks updated in place by ``forward``: a 0-dim
    counter (as BatchNorm's ``num_batches_tracked``), a 0-dim running scale
    and a vector running mean; a 0-dim and a vector parameter read."""

    def __init__(self):
        super().__init__()
        self.gain = nn.Parameter(torch.tensor(0.75))
        self.bias = nn.Parameter(torch.tensor([0.5, -1.0, 2.0]))
        self.register_buffer("count", torch.tensor(0, dtype=torch.int64))
        self.register_buffer("scale", torch.tensor(1.0))
        self.register_buffer("mean", torch.zeros(3))

    def forward(self, x):
        self.count.add_(1)
        self.scale.fill_(2.0)
        self.mean.mul_(0.5).add_(x.mean(0))
        k = torch.tensor([3.0, 1.0, -0.5], device=x.device)
        return x * self.gain + self.bias * self.scale + k + self.count, self.mean.sum() * 0.125


@pytest.mark.parametrize("inline", [True, False], ids=["arguments", "held"])
@pytest.mark.parametrize("backend", BACKENDS)
def test_zero_dim_parameters_and_buffers_updated_in_place(against_eager, backend, inline):
    """Parameters and buffers as graph arguments (dynamo's default) or held
    by the graph module (``inline_inbuilt_nn_modules=False``)."""
    with torch._dynamo.config.patch(inline_inbuilt_nn_modules=inline), torch.no_grad():
        against_eager(backend, Counting(), lambda call: (torch.randn(2, 3, generator=torch.Generator().manual_seed(call)),),
                      calls=CALLS)
