"""The bridge on programs written to break it, each checked against eager
(or lazy XLA) call after call.

The first group are regressions found by others' programs and torch_xla's own
dynamo tests; the second are adversarial cases of our own: views, aliases,
dtypes, sizes, modes and state a user's code can throw at a graph.

``BACKEND`` can be pointed at another backend to compare
(``TRACE_ONCE_EDGES_BACKEND=openxla_eval pytest tests/test_trace_once_edges.py``);
docs/backends.md's known-limits list says where torch_xla's own bridge differs.
"""
import copy
import math
import os
import warnings

import pytest
import torch
import torch.nn.functional as F
import torch_xla
from torch import nn

import xla_backends  # noqa: F401 - registers the backends

BACKEND = os.environ.get("TRACE_ONCE_EDGES_BACKEND", "torchxla_trace_once")
XLA = torch.device("xla", 0)


def _randn(*shape, seed, dtype=torch.float32):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)).to(dtype)


def _compile(fn, **kwargs):
    return torch.compile(fn, backend=BACKEND, **kwargs)


# --- regressions ------------------------------------------------------------------


def test_next_lazy_random_op_does_not_repeat_the_graphs_numbers(xla):
    compiled = _compile(lambda x: torch.rand_like(x))
    x = torch.ones(64, device=xla)
    compiled(x)
    ours = compiled(x).cpu()
    lazy = torch.rand_like(x).cpu()
    assert not torch.equal(ours, lazy)


def test_compiled_random_numbers_equal_lazy_ones_from_the_same_seed(xla):
    import torch_xla
    import torch_xla.core.xla_model as xm

    f = lambda x: x + torch.rand_like(x)  # noqa: E731
    compiled = _compile(f)
    x = torch.zeros(32, device=xla)
    torch.rand_like(x).cpu()  # a lazy random op earlier in the step leaves its IR chain behind
    compiled(x)  # build
    draws = []
    for seed in (77, 78, 77):
        xm.set_rng_state(seed)
        ours = compiled(x).cpu()
        xm.set_rng_state(seed)
        lazy = f(x)
        torch_xla.sync()
        torch.testing.assert_close(ours, lazy.cpu())
        draws.append(ours)
    assert not torch.equal(draws[0], draws[1])


def test_building_a_graph_without_random_ops_leaves_the_random_numbers_alone(xla):
    """Built (traced, compiled) with a lazy random op pending in the step, a
    graph that draws nothing must not move the numbers of the next step."""
    import torch_xla
    import torch_xla.core.xla_model as xm

    f = lambda x: x * 2 + 1  # noqa: E731

    def step(fn):
        x = torch.ones(3, device=xla)
        xm.set_rng_state(123)
        a = torch.rand(3, device=xla)
        out = fn(x)
        torch_xla.sync()
        b = torch.rand(3, device=xla)
        torch_xla.sync()
        return a.cpu(), out.cpu(), b.cpu()

    lazy = step(f)
    compiled = _compile(f)
    for call in range(2):  # the build, then a replay
        for got, want in zip(step(compiled), lazy):
            assert torch.equal(got, want), call


def test_random_graph_after_pending_lazy_random_ops_draws_new_numbers(xla):
    compiled = _compile(lambda x: torch.rand_like(x))
    x = torch.ones(64, device=xla)
    compiled(x)
    pending = torch.rand_like(x)  # lazy, not yet run
    ours = compiled(x)
    assert not torch.equal(pending.cpu(), ours.cpu())


def test_training_backend_does_not_repeat_dropout_masks_in_lazy_code(xla):
    import torch_xla

    model = nn.Sequential(nn.Linear(16, 16), nn.Dropout(0.5)).to(xla).train()
    compiled = torch.compile(model, backend="aot_torchxla_trace_once")
    x = torch.ones(8, 16, device=xla)
    compiled(x).sum().backward()
    torch_xla.sync()
    ours = compiled(x)
    lazy = F.dropout(torch.ones_like(ours), 0.5, training=True)
    torch_xla.sync()
    assert not torch.equal(ours.cpu() == 0, lazy.cpu() == 0)


def test_host_scalar_argument_gives_a_device_result_that_follows_it(xla):
    compiled = _compile(lambda x, s: x * s)
    x = torch.ones(2, device=xla)
    for s in (3.0, 5.0, -1.0):
        out = compiled(x, torch.tensor(s))
        assert out.device.type == "xla"
        torch.testing.assert_close(out.cpu(), torch.full((2,), s))


@pytest.mark.parametrize("make", [lambda v, xla: torch.full((), v, device=xla),
                                  lambda v, xla: torch.tensor(v).to(xla)], ids=["full", "moved"])
def test_scalar_argument_equal_to_a_constant_of_the_graph(xla, make):
    """torch_xla keeps one device buffer per scalar value: the argument's
    first value and the graph's 2.5 share it, and must not be tied."""
    compiled = _compile(lambda x, s: x * 2.5 + s)
    x = torch.ones(3, device=xla)
    for v in (2.5, 4.0, 2.5, -1.0):
        torch.testing.assert_close(compiled(x, make(v, xla)).cpu(), torch.full((3,), 2.5 + v), msg=f"s = {v}")


class MovesItsInput(nn.Module):
    """An XLA model that receives a CPU batch and moves it in ``forward``."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        x = x.to(self.fc.weight.device)
        x.mul_(2)  # on the device copy: the caller's CPU batch stays as it was
        return self.fc(x).relu()


def test_cpu_batch_moved_inside_forward(xla, quiet):
    eager = MovesItsInput()
    compiled = _compile(MovesItsInput().to(xla))
    with torch.no_grad():
        for call in range(3):
            x = _randn(2, 4, seed=call)
            kept = x.clone()
            out = compiled(x)
            assert out.device.type == "xla"
            torch.testing.assert_close(out.cpu(), eager(x.clone()), atol=1e-5, rtol=1e-5)
            torch.testing.assert_close(x, kept)


def test_host_round_trip_inside_the_graph_is_not_frozen(against_eager, xla, quiet):
    against_eager(BACKEND, lambda x: (x.cpu() * 2).to(x.device) + 1,
                  lambda call: (torch.full((3,), float(call)),), calls=4)


def test_round_trip_with_in_place_update_and_random_op(xla, quiet):
    def f(x, buf):
        buf.add_(1)
        host = (x * 2).cpu()
        noise = torch.rand_like(x)
        return host.to(x.device) + buf.sum() + noise * 0

    compiled = _compile(f)
    buf = torch.zeros(2, device=xla)
    for call in range(3):
        x = torch.full((2,), float(call), device=xla)
        torch.testing.assert_close(compiled(x, buf).cpu(), torch.full((2,), 2.0 * call + 2 * (call + 1)))
        torch.testing.assert_close(buf.cpu(), torch.full((2,), call + 1.0))


def _mul_then_read_other(a, b):
    a.mul_(2)
    return b + 1


@pytest.mark.parametrize("alias", ["detach", "view", "none"])
def test_arguments_that_alias_each_other(xla, alias):
    """dynamo does not guard on aliasing: calls alternate between aliased and
    separate arguments, and each must see eager's result."""
    compiled = _compile(_mul_then_read_other)
    make = {"detach": lambda a: a.detach(), "view": lambda a: a.view(3), "none": lambda a: a.clone()}
    for call in range(4):
        aliased = call % 2 == (0 if alias != "none" else 1)
        a_cpu, a = torch.full((3,), 1.0 + call), torch.full((3,), 1.0 + call, device=xla)
        b_cpu = make[alias](a_cpu) if aliased else a_cpu.clone()
        b = make[alias](a) if aliased else a.clone()
        want = _mul_then_read_other(a_cpu, b_cpu)
        torch.testing.assert_close(compiled(a, b).cpu(), want, msg=f"call {call}")
        torch.testing.assert_close(a.cpu(), a_cpu)
        torch.testing.assert_close(b.cpu(), b_cpu)


@pytest.mark.slow
def test_eviction_does_not_change_seeded_random_numbers():
    """Four graphs alternated through a cache with room for two: every call
    re-compiles, and a seeded random graph still draws lazy XLA's numbers."""
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent("""
        import torch, torch_xla, xla_backends
        import torch_xla.core.xla_model as xm
        from torch._dynamo.utils import counters
        dev = torch_xla.device()
        x = torch.zeros(16, device=dev)
        noisy = lambda x: x + torch.rand_like(x)
        fns = [torch.compile(noisy, backend="torchxla_trace_once")]
        fns += [torch.compile(lambda x, k=k: (x + k).sin() * k, backend="torchxla_trace_once")
                for k in (1, 2, 3)]
        bad = 0
        for step in range(3):
            for n, fn in enumerate(fns):
                if n == 0:
                    xm.set_rng_state(100 + step)
                    ours = fn(x).cpu()
                    xm.set_rng_state(100 + step)
                    lazy = noisy(x)
                    torch_xla.sync()
                    bad += not torch.equal(ours, lazy.cpu())
                else:
                    fn(x).cpu()
        print("retraces", counters["trace_once"]["retraces"], "mismatches", bad)
    """)
    env = dict(os.environ, PJRT_DEVICE="CPU", XLA_COMPILATION_CACHE_SIZE="2")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    words = done.stdout.split()
    assert words[-1] == "0", done.stdout
    assert int(words[-3]) > 0, f"no eviction happened: {done.stdout}"


def test_in_place_update_before_an_op_without_lowering(against_eager, quiet):
    def f(x):
        x.add_(1)
        return x.median()

    against_eager(BACKEND, f, lambda call: (_randn(7, seed=call),))


def test_reader_before_and_after_an_update_across_a_partition(against_eager, quiet):
    def f(x, y):
        before = x.median()
        x.mul_(y)
        after = x.median()
        y.add_(x.sum())
        return before, after, x * 2, torch.histc(y, bins=3, min=-10, max=10)

    against_eager(BACKEND, f, lambda call: (_randn(5, seed=call), _randn(5, seed=call + 9)))


def _edit_and_compare(compiled, fn, make, xla, calls=3):
    """Call both, then edit every output in place: eager's inputs and ours
    must change (or not) alike."""
    for call in range(calls):
        eager_in = make(call)
        ours_in = tuple(t.to(xla) for t in eager_in)
        want, got = fn(*eager_in), compiled(*ours_in)
        want = want if isinstance(want, tuple) else (want,)
        got = got if isinstance(got, tuple) else (got,)
        for w, g in zip(want, got):
            torch.testing.assert_close(g.cpu(), w, msg=f"call {call}: output")
        with torch.no_grad():
            for t in (*want, *got):
                t.add_(100)
        for w, g in zip(want, got):
            torch.testing.assert_close(g.cpu(), w, msg=f"call {call}: output after the edit")
        for e, o in zip(eager_in, ours_in):
            torch.testing.assert_close(o.cpu(), e, msg=f"call {call}: input after the edit")


def test_alias_of_an_input_updated_in_place(xla):
    def f(x):
        x.add_(1)
        return x.detach()

    _edit_and_compare(_compile(f), f, lambda call: (_randn(3, seed=call),), xla)


def test_view_outputs_edited_by_the_caller(xla):
    def f(x, y):
        x.mul_(2)
        z = y * 3
        return x[0], y.t(), z, z[1:], x.view(-1)[2:]

    _edit_and_compare(_compile(f), f, lambda call: (_randn(2, 3, seed=call), _randn(3, 3, seed=call + 1)),
                      xla)


@pytest.mark.parametrize("view", [
    lambda x, y: (x.split(2)[1], x.unbind(0)[0], y.chunk(2, dim=1)[1]),
    lambda x, y: (x.view_as(y), y.reshape_as(x).t()),
    lambda x, y: tuple((x * 2).split([1, 3])) + (x.t().unbind(1)[3],),
], ids=["pieces of split, unbind, chunk", "view_as, reshape_as", "pieces of a result"])
def test_pieces_and_views_shaped_like_another_tensor_are_aliases(xla, view):
    _edit_and_compare(_compile(view), view, lambda call: (_randn(4, 3, seed=call), _randn(3, 4, seed=call + 1)),
                      xla)


def test_a_view_sized_by_the_graphs_own_sizes_is_an_alias(xla):
    """With dynamic shapes the sizes are graph arguments (``x.reshape(s0, -1)``)."""
    f = lambda x: (x.reshape(x.shape[0], -1), x[: x.shape[0] // 2])  # noqa: E731
    compiled = _compile(f, dynamic=True)
    for size in (4, 6, 4):
        _edit_and_compare(compiled, f, lambda call: (_randn(size, 2, 3, seed=call),), xla, calls=1)


@pytest.mark.parametrize("outputs", [
    lambda x: (lambda y: (y[0], y))(x * 2),
    lambda x: (lambda t: (t.view(-1), t[1], t.t()))(x + 1),
    lambda x: (lambda y: (y.t()[1:], y[0], y, y.split(1)[1]))(x.sin()),
    lambda x: (lambda v: (v.view(-1), v[0]))(torch.topk(x, 2, 1)[0]),
    lambda x: (lambda y: (x.add_(1), y[0], y.view(-1))[1:])(x.clone()),
    lambda x: (lambda c: (c[0:2], c[1:], x + 1))(torch.tensor([1.0, 2.0, 3.0], device=x.device)),
], ids=["view before its base", "views of an intermediate", "views on both sides of their base",
        "views of a piece of topk", "views of a clone made before an update", "views of a constant"])
def test_outputs_that_view_one_value_alias_each_other(xla, outputs):
    _edit_and_compare(_compile(outputs), outputs, lambda call: (_randn(2, 3, seed=call),), xla)


def _cut_by_median(x, w):
    t = x @ w
    v = t[0]
    v.add_(torch.median(x))  # no XLA lowering: the graph is cut here
    return t * 1


def _cut_by_host_transfer(x, w):
    t = x @ w
    v = t[0]
    v.add_(x.cpu().sum().to(x.device))
    return t * 1


def _two_views_across_a_cut(x, w):
    t = x @ w
    a, b = t.view(-1), t[1]
    b.add_(torch.median(x))
    return a


def _attention_pieces_across_a_cut(x, w):
    qkv = x @ w
    q, k = qkv.chunk(2, -1)
    q.mul_(torch.median(x))
    return k, qkv


@pytest.mark.parametrize("f", [_cut_by_median, _cut_by_host_transfer, _two_views_across_a_cut,
                               _attention_pieces_across_a_cut])
def test_update_through_a_view_across_a_cut(against_eager, quiet, f):
    """The graph is cut between a view's making and its in-place update: the
    first part returns the view and its base, which must stay aliases."""
    against_eager(BACKEND, f, lambda call: (_randn(2, 4, seed=call), _randn(4, 4, seed=call + 5)))


def test_host_views_of_host_inputs_are_aliases(xla):
    """With host tensors only the graph runs on the XLA device; its views of
    the inputs, or of another output, still alias them on the host."""
    def f(x, y):
        x.add_(1)
        z = y * 3
        return x[1:], y.t(), z, z[0], z, x.split(1)[0]

    compiled = _compile(f)
    for call in range(3):
        eager_in = (_randn(2, 3, seed=call), _randn(3, 3, seed=call + 1))
        ours_in = tuple(t.clone() for t in eager_in)
        want, got = f(*eager_in), compiled(*ours_in)
        assert [t.device.type for t in got] == ["cpu"] * len(want)
        assert got[2] is got[4]
        for w, g in zip(want, got):
            torch.testing.assert_close(g, w)
        for t in (*want[:3], *got[:3], want[5], got[5]):  # z once (it is returned twice)
            t.add_(100)
        for w, g in zip(want, got):
            torch.testing.assert_close(g, w, msg=f"call {call}: output after the edit")
        for e, o in zip(eager_in, ours_in):
            torch.testing.assert_close(o, e, msg=f"call {call}: input after the edit")


@pytest.mark.parametrize("backend", [BACKEND, "torchxla_trivial"])
def test_host_views_of_host_inputs_from_a_cut_graph_are_aliases(backend, xla, recwarn):
    """With host tensors only, a graph cut around an op torch_xla cannot
    lower (median), and the lazy control, still return their views of the
    inputs as views: the caller's edit of one shows in the input and in the
    others, as in eager."""
    def f(x, y):
        x.mul_(2)
        return x.view(-1), x[1], y.t()[0], (x + y).median(0).values + 1, x[:, 1:]

    compiled = torch.compile(f, backend=backend)
    for call in range(3):
        eager_in = (_randn(3, 4, seed=call), _randn(3, 4, seed=call + 7))
        ours_in = tuple(t.clone() for t in eager_in)
        want, got = f(*eager_in), compiled(*ours_in)
        assert [t.device.type for t in got] == ["cpu"] * len(want)
        for w, g in zip(want, got):
            torch.testing.assert_close(g, w)
        for w, g in zip(want, got):
            assert g.stride() == w.stride(), f"call {call}"
        want[1].mul_(10)
        got[1].mul_(10)
        want[2].add_(5)
        got[2].add_(5)
        for w, g in zip(want, got):
            torch.testing.assert_close(g, w, msg=f"call {call}: output after the edit")
        for e, o in zip(eager_in, ours_in):
            torch.testing.assert_close(o, e, msg=f"call {call}: input after the edit")


def test_host_views_of_one_intermediate_alias_each_other(xla):
    """With host tensors only, two outputs viewing one value no output is
    (and a view of one of them) alias each other on the host, as in eager:
    a caller's edit of one shows in the others."""
    def f(x, y):
        t = x @ y
        return t.view(-1), t[1], t.t()[0], x + 1

    compiled = _compile(f)
    for call in range(3):
        eager_in = (_randn(2, 3, seed=call), _randn(3, 2, seed=call + 1))
        ours_in = tuple(t.clone() for t in eager_in)
        want, got = f(*eager_in), compiled(*ours_in)
        assert [t.device.type for t in got] == ["cpu"] * len(want)
        for w, g in zip(want, got):
            torch.testing.assert_close(g, w)
        want[1].mul_(10)
        got[1].mul_(10)
        for w, g in zip(want, got):
            torch.testing.assert_close(g, w, msg=f"call {call}: output after the edit")


def _makes_device_tensors(x, y):
    d = x.to(XLA)
    d.mul_(2)  # the device copy: the caller's x stays as it was
    return x + 1, d, d.view(-1)[1:], torch.ones(2, device=XLA) * y.sum(), y.t()


@pytest.mark.parametrize("backend", [BACKEND, "torchxla_trivial"])
def test_host_inputs_and_tensors_the_graph_makes_on_the_device(xla, backend):
    """With host tensors only, what the graph itself makes on the XLA device
    (``.to(xla)``, ``device=xla``) stays there, as in eager; a moved input is
    a copy of the caller's tensor, and views of it alias it (host views of
    the inputs alias them too, but not with the control backend)."""
    compiled = torch.compile(_makes_device_tensors, backend=backend)
    for call in range(3):
        eager_in = (_randn(3, seed=call), _randn(2, 2, seed=call + 1))
        ours_in = tuple(t.clone() for t in eager_in)
        want, got = _makes_device_tensors(*eager_in), compiled(*ours_in)
        assert [t.device.type for t in got] == [t.device.type for t in want] == \
            ["cpu", "xla", "xla", "xla", "cpu"], f"call {call}"
        for w, g in zip(want, got):
            torch.testing.assert_close(g.cpu(), w.cpu(), msg=f"call {call}")
        for e, o in zip(eager_in, ours_in):
            torch.testing.assert_close(o, e, msg=f"call {call}: input after the call")
        edited = (1, 4) if backend == BACKEND else (1,)
        with torch.no_grad():
            for k in edited:
                want[k].add_(100)
                got[k].add_(100)
        torch.testing.assert_close(got[2].cpu(), want[2].cpu(), msg=f"call {call}: view after the edit")
        torch.testing.assert_close(ours_in, eager_in, msg=f"call {call}: inputs after the edit")


def test_inference_backend_warns_when_gradients_are_wanted(xla):
    model = nn.Linear(3, 2).to(xla)
    compiled = _compile(model)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = compiled(torch.ones(1, 3, device=xla))
    ours = [w for w in caught if "aot_torchxla_trace_once" in str(w.message)]
    assert len(ours) == 1, [str(w.message) for w in caught]
    assert ours[0].filename == __file__, "the warning should point at the caller's code"
    assert out.grad_fn is None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with torch.no_grad():
            _compile(nn.Linear(3, 2).to(xla))(torch.ones(1, 3, device=xla))
    assert not [w for w in caught if "aot_torchxla_trace_once" in str(w.message)]


def test_first_call_inside_a_profiler_scope(xla):
    import torch_xla.debug.profiler as xp

    compiled = _compile(lambda a: torch.sin(a) + a)
    t = torch.randn(2, 3, device=xla)
    want = t.cpu()
    for _ in range(3):
        with xp.Trace("build_graph"):
            t = compiled(t)
        want = torch.sin(want) + want
    torch.testing.assert_close(t.cpu(), want)


def test_training_steps_replay_without_retries(xla, bridge):
    """Parameters updated lazily by the optimizer between steps are pending
    inputs of the forward graph: they are computed up front once learned,
    so steady state is one run per graph per step and no failed attempt."""
    import torch_xla
    import torch_xla.debug.metrics as met

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2)).to(xla)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    compiled = torch.compile(model, backend="aot_torchxla_trace_once")
    x = torch.randn(4, 8, device=xla)

    def step():
        opt.zero_grad()
        compiled(x).pow(2).mean().backward()
        opt.step()

    for _ in range(3):
        step()
    torch_xla.sync()
    retries = bridge["pending_input_retries"]
    met.clear_all()
    for _ in range(5):
        step()
    torch_xla.sync()
    assert bridge["pending_input_retries"] == retries
    assert met.metric_data("RunCachedGraphInputData")[0] == 5 * 2


# --- adversarial cases of our own ---------------------------------------------------


def test_strided_and_transposed_inputs(against_eager):
    against_eager(BACKEND, lambda x, y: (x @ y, x.t().contiguous() * 2),
                  lambda call: (_randn(4, 3, seed=call).t(), _randn(4, 2, seed=call + 1)))


def test_input_that_is_a_view_of_another_input(xla):
    def f(x, row):
        x.add_(1)
        return row * 2, x.sum()

    compiled = _compile(f)
    for call in range(3):
        base_cpu = _randn(3, 4, seed=call)
        base = base_cpu.to(xla)
        want = f(base_cpu, base_cpu[1])
        got = compiled(base, base[1])
        for g, w in zip(got, want):
            torch.testing.assert_close(g.cpu(), w)
        torch.testing.assert_close(base.cpu(), base_cpu)


def test_zero_size_and_zero_dim_tensors(against_eager):
    against_eager(BACKEND, lambda x, s, e: (x * s, e.sum() + s, e * 2),
                  lambda call: (_randn(3, seed=call), torch.tensor(float(call)), torch.zeros(0, 4)))


@pytest.mark.parametrize("dtype", [torch.int64, torch.bool, torch.bfloat16])
def test_integer_bool_and_bf16_inputs(against_eager, dtype):
    def make(call):
        if dtype is torch.bool:
            return (_randn(6, seed=call) > 0, _randn(6, seed=call + 1) > 0)
        if dtype is torch.int64:
            return (torch.arange(6) * (call + 1), torch.arange(6) - call)
        return (_randn(6, seed=call, dtype=dtype), _randn(6, seed=call + 1, dtype=dtype))

    def f(a, b):
        if dtype is torch.bool:
            return a & b, (a | b).sum()
        return a * b + 1, a.max()

    against_eager(BACKEND, f, make, atol=1e-2, rtol=1e-2)


SCALE = 2.0


def test_global_rebound_between_calls(xla):
    global SCALE

    compiled = _compile(lambda x: x * SCALE)
    x = torch.ones(2, device=xla)
    for value in (2.0, 3.0, 2.0):
        SCALE = value
        torch.testing.assert_close(compiled(x).cpu(), torch.full((2,), value))
    SCALE = 2.0


def test_module_attribute_and_parameter_data_replaced(xla):
    torch.manual_seed(0)
    model = nn.Linear(3, 3).to(xla)
    model.scale = 1.0
    compiled = _compile(lambda x: model(x) * model.scale)
    x = torch.ones(1, 3, device=xla)
    with torch.no_grad():
        for call in range(4):
            model.scale = float(call % 2 + 1)
            model.weight.data = torch.full((3, 3), float(call), device=xla)
            want = (x.cpu() @ torch.full((3, 3), float(call)).t() + model.bias.cpu()) * model.scale
            torch.testing.assert_close(compiled(x).cpu(), want)


class NormedLinear(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.fc, self.bn, self.scale = nn.Linear(3, 3), nn.BatchNorm1d(3), nn.Parameter(torch.ones(3))

    def forward(self, x):
        return self.bn(self.fc(x)) * self.scale


def test_state_held_by_the_graph_module_edited_between_calls(xla):
    """Without inlining, parameters and buffers stay on the graph module
    (``get_attr``, ``call_module``): edits between calls must be seen (their
    old buffers are donated to the edit), BatchNorm's running statistics
    updated."""
    eager = NormedLinear()
    ours = copy.deepcopy(eager).to(xla)
    with torch._dynamo.config.patch(inline_inbuilt_nn_modules=False), torch.no_grad():
        compiled = _compile(ours)
        for call in range(4):
            x = _randn(4, 3, seed=call)
            torch.testing.assert_close(compiled(x.to(xla)).cpu(), eager(x), msg=f"call {call}")
            torch.testing.assert_close(ours.bn.running_mean.cpu(), eager.bn.running_mean, msg=f"call {call}")
            assert ours.bn.num_batches_tracked.item() == call + 1
            for model in (eager, ours):
                model.fc.weight.mul_(0.5)
                model.scale.add_(1)
            torch_xla.sync()


def test_inference_mode_and_no_grad(xla):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 4), nn.Tanh()).to(xla)
    eager = nn.Sequential(nn.Linear(4, 4), nn.Tanh())
    eager.load_state_dict({k: v.cpu() for k, v in model.state_dict().items()})
    compiled = _compile(model)
    for call in range(3):
        x = _randn(2, 4, seed=call)
        with torch.inference_mode():
            got = compiled(x.to(xla))
        with torch.no_grad():
            want = eager(x)
        torch.testing.assert_close(got.cpu(), want, atol=1e-5, rtol=1e-5)


def test_autocast_on_the_device(xla):
    torch.manual_seed(0)
    model = nn.Linear(8, 4).to(xla)
    compiled = _compile(model)
    with torch.no_grad():
        for call in range(3):
            x = _randn(2, 8, seed=call).to(xla)
            with torch.autocast("xla", dtype=torch.bfloat16):
                got = compiled(x)
                want = model(x)
            assert got.dtype == want.dtype == torch.bfloat16
            torch.testing.assert_close(got.cpu(), want.cpu(), atol=1e-2, rtol=1e-2)


def test_graph_breaks_with_state_across_them(against_eager):
    def f(x, buf):
        buf.add_(x.sum())
        y = x * buf[0]
        print(end="")  # a graph break
        buf.mul_(0.5)
        return y + buf.sum()

    against_eager(BACKEND, f, lambda call: (_randn(3, seed=call), torch.ones(2)), calls=4)


def _branch_and_item(x):
    y = x * 2
    print(end="")  # a graph break
    if y.sum() > 0:  # a data-dependent branch: another
        z = y + 1
    else:
        z = y - 1
    return z * z.mean().item()  # and the float feeds the next graph


def _per_call_work(xla, bridge, metrics, calls=6):
    """(traces, XLA compiles) of each call of ``_branch_and_item`` compiled,
    called with signs alternating and new values each call, each result
    checked against eager."""
    compiled = _compile(_branch_and_item)
    work = []
    for call in range(calls):
        x_cpu = (_randn(4, seed=call).abs() + 0.5) * (1 if call % 2 else -1)
        x = x_cpu.to(xla)
        torch_xla.sync()
        traces, compiles = bridge["traces"], metrics.compiles()
        out = compiled(x)
        torch.testing.assert_close(out.cpu(), _branch_and_item(x_cpu), msg=f"call {call}")
        work.append((bridge["traces"] - traces, metrics.compiles() - compiles))
    return work


def test_a_float_read_with_item_and_used_by_the_next_graph_is_an_input(xla, bridge, metrics, quiet):
    """With floats left unspecialised, dynamo hands the next graph a host
    scalar and reads it with ``.item()``: the float is fed to the executable
    on each call, so once both branches are seen nothing is traced or compiled."""
    with torch._dynamo.config.patch(specialize_float=False, automatic_dynamic_shapes=True):
        work = _per_call_work(xla, bridge, metrics)
    assert work[2:] == [(0, 0)] * 4, work


@pytest.mark.xfail(strict=True, reason="torch_xla sets specialize_float=True and automatic_dynamic_shapes="
                   "False on import: dynamo makes the float a constant of the next graph and compiles "
                   "that graph again for every new value")
def test_a_float_read_with_item_under_torch_xlas_settings(xla, bridge, metrics, quiet):
    work = _per_call_work(xla, bridge, metrics)
    assert work[2:] == [(0, 0)] * 4, work


def test_many_dynamic_sizes(xla):
    compiled = _compile(lambda x: (x.sin() * x.shape[0]).sum(0))
    for n in (2, 3, 5, 8, 13, 2, 5):
        x = _randn(n, 3, seed=n)
        xx = x.to(xla)
        torch._dynamo.mark_dynamic(xx, 0)
        torch.testing.assert_close(compiled(xx).cpu(), (x.sin() * n).sum(0), atol=1e-5, rtol=1e-5)


def test_chained_calls_on_pending_outputs(xla):
    compiled = _compile(lambda x: x * 2 + 1)
    x_cpu = _randn(4, seed=0)
    x = x_cpu.to(xla)
    for _ in range(5):  # each call's input is the previous output, still pending
        x = compiled(x) - 1
        x_cpu = x_cpu * 2 + 1 - 1
    torch.testing.assert_close(x.cpu(), x_cpu)


@pytest.mark.parametrize("count", [200, pytest.param(2000, marks=pytest.mark.slow)])
def test_thousands_of_parameters(xla, count):
    class Wide(nn.Module):
        def __init__(self):
            super().__init__()
            self.ps = nn.ParameterList(nn.Parameter(torch.full((2,), i / 1000)) for i in range(count))

        def forward(self, x):
            total = x
            for p in self.ps:
                total = total + p
            return total

    model = Wide().to(xla)
    compiled = _compile(model)
    with torch.no_grad():
        x = torch.zeros(2, device=xla)
        want = sum(i / 1000 for i in range(count))
        for call in range(2):
            torch.testing.assert_close(compiled(x + call).cpu(), torch.full((2,), want + call),
                                       atol=1e-3, rtol=1e-4)
            model.ps[0].add_(1)
            want += 1


# --- as_strided with the strides dynamo saw ------------------------------------------


def _overlapping_chunks(q, window=4):
    """hf_Longformer's ``_chunk``: a head-major reshape (a view at batch 1),
    then overlapping windows cut with ``as_strided`` from its strides."""
    b, s, h, d = q.shape
    x = q.transpose(1, 2).reshape(b * h, s, d)
    x = x.view(x.size(0), x.size(1) // (window * 2), window * 2, x.size(2))
    size, stride = list(x.size()), list(x.stride())
    size[1], stride[1] = size[1] * 2 - 1, stride[1] // 2
    return x.as_strided(size=size, stride=stride) * 2


@pytest.mark.parametrize("backend", [BACKEND, "torchxla_trivial"])
@pytest.mark.parametrize("batch", [1, 2])
def test_as_strided_reads_the_elements_eager_reads(against_eager, backend, batch):
    """At batch 1 dynamo sees the reshape as a view with strides (d, h*d, 1);
    the XLA tensor has contiguous ones. Taken as they are, the graph's strides
    pick other elements (any backend, dynamo's own eager on XLA too)."""
    against_eager(backend, _overlapping_chunks, lambda call: (_randn(batch, 16, 3, 5, seed=call),))


def test_as_strided_on_an_updated_result_is_left_as_it_is(xla):
    """A result updated in place must stay a view of its input: the rewrite
    keeps out (and such a graph reads the strides as dynamo gives them)."""
    from xla_backends.strides import fix_as_strided

    def update_a_chunk(q):
        chunks = _overlapping_chunks(q) / 2
        x = q.transpose(1, 2).reshape(3, 16, 5)
        view = x.as_strided((3, 2, 5), (5, 15, 1))
        view.add_(1)
        return chunks, view

    graphs = []
    torch.compile(update_a_chunk, backend=lambda g, _: graphs.append(g) or g)(_randn(1, 16, 3, 5, seed=0))
    (gm,) = graphs
    before = [n.target for n in gm.graph.nodes]
    after = [getattr(n.target, "__name__", n.target) for n in fix_as_strided(gm).graph.nodes]
    assert before.count("as_strided") == 2 and after.count("as_strided") == 1
    assert after.count("gather_as_strided") == 1


# --- dtypes XLA stores otherwise ---------------------------------------------------
# torch_xla keeps some results in another element type than their dtype says
# (a dropout mask as f32 holding 0 or 1/(1-p), max-pool indices as u32); a
# tensor made from the executable's buffer takes the stored type.


def test_dropout_mask_comes_back_as_a_mask(xla):
    def f(h):
        return torch.ops.aten.native_dropout(h, 0.5, True)

    compiled = _compile(f)
    for call in range(3):
        out, mask = compiled(_randn(64, seed=call).to(xla))
        assert mask.dtype == torch.bool
        assert torch.equal(mask.cpu(), out.cpu() != 0)  # kept where the output is not zero


def test_max_pool_indices_stay_int64(xla):
    def f(x):
        return F.max_pool2d(x, 2, return_indices=True)

    compiled = _compile(f)
    for call in range(3):
        x = _randn(1, 2, 4, 4, seed=call).to(xla)
        (y, idx), (want_y, want_idx) = compiled(x), f(x)
        assert idx.dtype == torch.int64
        assert torch.equal(idx.cpu(), want_idx.cpu()) and torch.equal(y.cpu(), want_y.cpu())
        torch.testing.assert_close(F.max_unpool2d(y, idx, 2).cpu(), F.max_unpool2d(want_y, want_idx, 2).cpu())


def test_dropout_gradient_is_scaled_once(xla):
    """AOT autograd saves the mask for the backward, which scales by 1/(1-p):
    a mask that came back holding 1/(1-p) scaled the gradient twice."""
    w = torch.nn.Parameter(_randn(8, 8, seed=1).to(xla))
    b = torch.nn.Parameter(torch.zeros(8, device=xla))

    def f(x):
        return F.dropout(F.linear(x, w, b), 0.5, training=True)

    compiled = torch.compile(f, backend="aot_torchxla_trace_once")
    for call in range(3):
        b.grad = None
        y = compiled(_randn(4, 8, seed=10 + call).to(xla))
        y.sum().backward()
        kept = (y.detach().cpu() != 0).float()
        torch.testing.assert_close(b.grad.cpu(), kept.sum(0) * 2.0)


def test_a_graph_that_cannot_be_cut_runs_lazily(xla):
    """With data-dependent output shapes captured, a size made after the cut
    is needed before it: FX refuses the cut, and the graph runs lazily."""
    def masked(x):
        return x[x > 0] * 2

    with torch._dynamo.config.patch(capture_dynamic_output_shape_ops=True):
        compiled = _compile(masked)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for call in range(3):
                x = _randn(8, seed=call).to(xla)
                torch.testing.assert_close(compiled(x).cpu(), masked(x).cpu())
    ours = [str(w.message) for w in caught if BACKEND in str(w.message)]
    assert any("re-traced on every call" in m for m in ours), ours


# --- numbers read at run time ------------------------------------------------------
# With ``capture_scalar_outputs`` the ``.item()`` is a node of the graph: it runs
# on the host between two traced parts, and Python arithmetic on its value
# must follow each call's value, never be kept from the trace.


def _item_then_python_arithmetic(x, w, y):
    s = (x * w).sum().item()
    return y * s, x / (abs(s) + 10)


def _sqrt_of_an_item(x):
    s = x.abs().sum().item()
    return x * math.sqrt(s) - s / 3


def _int_item(x):
    n = (x > 0).sum().item()
    torch._check(n >= 0)  # a check on the number: run on the host too
    return x * n, x + (n * 2 - 1)


def _two_items_in_two_parts(x):
    a = x.max().item()
    y = (x - a).exp()
    b = y.sum().item()
    return y / b, x * (a + b)


def _item_fills_a_tensor(x):
    s = x.mean().item()
    return x.new_full((3,), s * 2) + x[:3], x * s


def _tolist(x):
    a, b = x[:2].tolist()
    return x * a + b


@pytest.mark.parametrize("f, make", [
    (_item_then_python_arithmetic, lambda call: (_randn(4, seed=call), _randn(4, seed=call + 1),
                                                 _randn(4, seed=call + 2))),
    (_sqrt_of_an_item, lambda call: (_randn(5, seed=call),)),
    (_int_item, lambda call: (_randn(6, seed=call),)),
    (_two_items_in_two_parts, lambda call: (_randn(5, seed=call),)),
    (_item_fills_a_tensor, lambda call: (_randn(5, seed=call),)),
    (_tolist, lambda call: (_randn(4, seed=call),)),
], ids=["abs(s) + 10", "math.sqrt", "an int", "two items, two parts", "new_full", "tolist"])
def test_a_number_read_with_item_in_the_graph_follows_each_call(against_eager, quiet, f, make):
    with torch._dynamo.config.patch(capture_scalar_outputs=True):
        against_eager(BACKEND, f, make, calls=4)


def test_a_float_read_with_item_in_the_graph_is_traced_once(xla, bridge, quiet):
    """The number and the arithmetic on it run on the host each call; the
    part after them takes the result as an input: nothing traced again."""
    compiled = _compile(_item_then_python_arithmetic)
    traces = []
    with torch._dynamo.config.patch(capture_scalar_outputs=True):
        for call in range(5):
            args = [_randn(4, seed=call + k) for k in range(3)]
            got = compiled(*(a.to(xla) for a in args))
            for g, w in zip(got, _item_then_python_arithmetic(*args)):
                torch.testing.assert_close(g.cpu(), w, msg=f"call {call}")
            traces.append(bridge["traces"])
    assert traces[1:] == [traces[1]] * 4, traces


def test_python_arithmetic_on_a_float_argument_is_not_a_constant(xla, bridge, quiet):
    """Floats left unspecialised arrive as arguments: a number computed from
    one in the graph (``abs(s) + 10``) follows it, and is not traced again."""
    f = lambda x, s: (x / (abs(s) + 10), x * s)  # noqa: E731
    with torch._dynamo.config.patch(specialize_float=False, automatic_dynamic_shapes=True):
        compiled = _compile(f)
        x = _randn(4, seed=0)
        traces = []
        for s in (2.0, -3.0, 5.5, -0.25, 7.0):
            for g, w in zip(compiled(x.to(xla), s), f(x, s)):
                torch.testing.assert_close(g.cpu(), w, msg=f"s = {s}")
            traces.append(bridge["traces"])
    assert traces[2:] == [traces[2]] * 3, traces


# --- grad modes inside the graph -------------------------------------------------------
# Tensors made under ``inference_mode`` are inference tensors, in eager: the
# caller may not update them in place outside it.


def _check_modes(compiled, f, make, device, calls=3):
    """Call both on new values; each output as eager's (value, inference or
    not, requiring grad or not); then the caller edits each output in place:
    ours refuses where eager refuses, and inputs and outputs stay alike."""
    from torch.utils import _pytree as pytree

    for call in range(calls):
        eager_in = make(call)
        ours_in = tuple(t.clone().to(device) for t in eager_in)
        want = pytree.tree_leaves(f(*eager_in))
        got = pytree.tree_leaves(compiled(*ours_in))
        assert len(got) == len(want)
        for k, (g, w) in enumerate(zip(got, want)):
            where = f"call {call}, output {k}"
            torch.testing.assert_close(g.cpu(), w, msg=where)
            assert g.is_inference() == w.is_inference(), f"{where}: is_inference {g.is_inference()}"
            assert g.requires_grad == w.requires_grad, where
        for e, o in zip(eager_in, ours_in):
            torch.testing.assert_close(o.cpu(), e, msg=f"call {call}: input after the call")
        for k, (g, w) in enumerate(zip(got, want)):
            refused = []
            for t in (w, g):
                try:
                    t.add_(100)
                    refused.append(False)
                except RuntimeError:
                    refused.append(True)
            assert refused[0] == refused[1], f"call {call}, output {k}: eager refused {refused[0]}"
        for k, (g, w) in enumerate(zip(got, want)):
            torch.testing.assert_close(g.cpu(), w, msg=f"call {call}, output {k} after the edits")
        for e, o in zip(eager_in, ours_in):
            torch.testing.assert_close(o.cpu(), e, msg=f"call {call}: input after the edits")


def _inference_region(x):
    a = x * 2
    with torch.inference_mode():
        b = x + 1
        c = b * a
    return a, b, c


def _nested_modes(x, y):
    with torch.inference_mode():
        a = x * y
        with torch.inference_mode(False):
            b = x - y
        c = a + 1
    with torch.no_grad():
        d = (x * 3).sin()
        with torch.inference_mode():
            e = d * 2
    return a, b, c, d, e


def _modes_around_in_place_ops(x, buf):
    with torch.set_grad_enabled(False):
        buf.add_(x.sum())
    with torch.inference_mode():
        buf.mul_(0.5)  # a normal tensor, updated inside: allowed
        made = buf * 2
        made.add_(1)
    return made, buf * 1


def _duplicates_and_constants_under_inference_mode(x):
    with torch.inference_mode():
        y = x.clone()
        z = x.clone()
        k = torch.ones(3, device=x.device)
        v = (x * 2)[1:]
    return y, z, k, v, x + 1


def _inference_region_around_a_host_op(x):
    a = x * 2
    with torch.inference_mode():
        m = torch.median(a, 0).values
        b = a - m
    return b, a + m


@pytest.mark.parametrize("f, make", [
    (_inference_region, lambda call: (_randn(4, seed=call),)),
    (_nested_modes, lambda call: (_randn(3, seed=call), _randn(3, seed=call + 1))),
    (_modes_around_in_place_ops, lambda call: (_randn(3, seed=call), _randn(2, seed=call + 5))),
    (_duplicates_and_constants_under_inference_mode, lambda call: (_randn(3, seed=call),)),
    (_inference_region_around_a_host_op, lambda call: (_randn(3, 2, seed=call),)),
], ids=["a region", "nested and mixed", "around in-place ops", "duplicates, constants and views",
        "around a host op"])
def test_tensors_made_under_inference_mode_are_inference_tensors(xla, quiet, f, make):
    _check_modes(_compile(f), f, make, xla)


def test_a_graph_called_under_inference_mode_returns_inference_tensors(xla):
    f = lambda x: (x * 2, x.sin())  # noqa: E731
    compiled = _compile(f)

    def under_inference_mode(fn):
        def call(*args):
            with torch.inference_mode():
                return fn(*args)
        return call

    _check_modes(under_inference_mode(compiled), under_inference_mode(f), lambda call: (_randn(3, seed=call),),
                 xla)
    _check_modes(compiled, f, lambda call: (_randn(3, seed=call),), xla)


def test_a_number_the_trace_computed_from_a_float_is_never_fed_as_a_constant(xla):
    """Traced as it is (no host run before it), ``abs(s) + 10`` is a
    parameter holding neither stand-in: the floats are not taken as inputs
    of one executable, and the graph is traced per value."""
    from xla_backends.trace_once import _xlac
    from xla_backends.trace_once.plan import make_plan
    from xla_backends.trace_once.scalars import fed_by_floats, stand_ins
    from xla_backends.trace_once.trace import run, tracing

    gm = torch.fx.symbolic_trace(lambda x, s: x / (abs(s) + 10) + x * s)
    args = (torch.ones(3, device=xla), 0.5)
    device = str(xla)
    with tracing(device, args):
        seed = _xlac.rng_seed(device)
        first = make_plan(run(gm, stand_ins(args, (1,), 0), device))
        assert fed_by_floats(gm, args, device, (1,), seed, first) is None


@pytest.mark.parametrize("backend", [BACKEND, "torchxla_trivial"])
def test_host_inputs_and_tensors_made_under_inference_mode(quiet, backend):
    """With host tensors only the graph runs on the XLA device: the host
    copies of what it made under ``inference_mode`` are inference tensors."""
    f = _nested_modes
    _check_modes(torch.compile(f, backend=backend), f,
                 lambda call: (_randn(3, seed=call), _randn(3, seed=call + 1)), "cpu")
