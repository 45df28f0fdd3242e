"""``torchxla_trace_once`` against eager PyTorch, one semantic edge per test.

Each test drives the backend through several calls: the first traces and
compiles, the later ones replay the cached executable, which is where a
trace-once bridge goes wrong (stale parameters, lost in-place updates,
repeated random masks, aliased outputs).
"""
import copy
import warnings

import pytest
import torch
import torch.nn.functional as F
import torch_xla
from torch import nn

import xla_backends
from xla_backends import trace_once

BACKEND = "torchxla_trace_once"


def _sync():
    import torch_xla

    torch_xla.sync()


def _randn(*shape, seed):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


class MLP(nn.Module):
    def __init__(self, d=8):
        super().__init__()
        torch.manual_seed(0)
        self.net = nn.Sequential(nn.Linear(d, 16), nn.ReLU(), nn.Linear(16, 4))

    def forward(self, x):
        return self.net(x)


def mlp_inputs(batch=2):
    return lambda call: (_randn(batch, 8, seed=call),)


# --- inputs and parameters -------------------------------------------------


def test_outputs_follow_changing_inputs(against_eager):
    against_eager(BACKEND, MLP(), mlp_inputs(), calls=4)


def test_new_shape_compiles_and_old_shape_compiles_nothing(against_eager, metrics, xla):
    shapes = [2, 2, 3, 2, 3]
    compiled, _ = against_eager(BACKEND, MLP(), lambda call: (_randn(shapes[call], 8, seed=call),),
                                calls=1)
    eager = MLP()
    new_compiles = []
    for call, batch in enumerate(shapes[1:], start=1):
        x = _randn(batch, 8, seed=call)
        before = metrics.compiles()
        out = compiled(x.to(xla))
        new_compiles.append(metrics.compiles() - before)
        torch.testing.assert_close(out.cpu(), eager(x).detach(), atol=1e-4, rtol=1e-4)
    assert new_compiles[0] == 0, "same shape again compiled"
    assert new_compiles[1] > 0, "a new shape must compile a new graph"
    assert new_compiles[2:] == [0, 0], f"an earlier shape compiled again: {new_compiles}"


def test_dynamic_sizes_are_keyed(against_eager, metrics, xla):
    """With dynamic=True the sizes are graph arguments: one replay per size."""
    sizes = [2, 3, 2, 3]
    compiled, _ = against_eager(BACKEND, lambda x: x.sin() * x.shape[0],
                                lambda call: (_randn(sizes[call], seed=call),),
                                calls=4, compile_kwargs={"dynamic": True})
    before = metrics.compiles()
    for size in sizes:
        x = _randn(size, seed=9)
        torch.testing.assert_close(compiled(x.to(xla)).cpu(), x.sin() * size)
    assert metrics.compiles() == before


def test_max_pool_with_a_dynamic_batch_is_one_graph(xla, metrics):
    """torch_xla's max-pool ops get shape functions for symbolic sizes: no
    graph break around the pool (which then ran lazily on every call), one
    graph for every batch size, and nothing compiled once each size is seen."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(36, 2))
    graphs = []
    backend = torch._dynamo.lookup_backend(BACKEND)
    compiled = torch.compile(copy.deepcopy(model).to(xla), backend=lambda gm, ex: graphs.append(gm) or backend(gm, ex))
    compiles = []
    with torch.no_grad():
        for call, batch in enumerate((2, 3, 2, 3, 2)):
            x = _randn(batch, 3, 8, 8, seed=call)
            x_xla = x.to(xla)
            torch._dynamo.mark_dynamic(x_xla, 0)
            torch_xla.sync()
            before = metrics.compiles()
            out = compiled(x_xla)
            compiles.append(metrics.compiles() - before)
            torch.testing.assert_close(out.cpu(), model(x), atol=1e-5, rtol=1e-5)
    assert len(graphs) == 1
    assert compiles[2:] == [0, 0, 0], compiles


def test_parameters_edited_in_place_between_calls(against_eager):
    def edit(module):
        with torch.no_grad():
            for p in module.parameters():
                p.add_(0.5)

    against_eager(BACKEND, MLP(), mlp_inputs(), calls=4, between=edit)


def test_sgd_step_between_calls(against_eager):
    """An optimizer step updates the parameters lazily (pending IR on XLA)."""
    optimizers = {}

    def step(module):
        opt = optimizers.setdefault(id(module), torch.optim.SGD(module.parameters(), lr=0.1, momentum=0.9))
        for n, p in enumerate(module.parameters()):
            p.grad = torch.full_like(p, 0.1 * (n + 1))
        opt.step()

    against_eager(BACKEND, MLP(), mlp_inputs(), calls=4, between=step)


def _batchnorm_model():
    torch.manual_seed(0)
    # (momentum=None would read num_batches_tracked with .item(): dynamo then
    # compiles no graph at all and the model runs eagerly.)
    model = nn.Sequential(nn.Linear(8, 6), nn.BatchNorm1d(6), nn.ReLU(), nn.Linear(6, 3),
                          nn.BatchNorm1d(3, momentum=0.3))
    return model.train()


def test_batchnorm_buffers_in_train_mode(against_eager, xla):
    """Running stats and num_batches_tracked end up exactly as lazy XLA's.

    (torch_xla 2.9 itself updates running_var with the biased batch variance,
    where the CPU uses the unbiased one, so the exact reference is the same
    model run lazily on the XLA device.)"""
    _, ours = against_eager(BACKEND, _batchnorm_model(), lambda call: (_randn(5, 8, seed=call) + call,),
                            calls=4, reference_device=xla, atol=1e-6, rtol=1e-6)
    assert int(ours[1].num_batches_tracked.cpu()) == 4
    assert int(ours[4].num_batches_tracked.cpu()) == 4


def test_inputs_that_share_a_buffer_at_trace_time(xla):
    """``b.copy_(a)`` leaves ``b`` over ``a``'s buffer; the trace must not tie
    them into one HLO parameter, or later calls with distinct tensors see
    ``a`` twice."""
    compiled = torch.compile(lambda a, b: a * 3 + b * 2, backend=BACKEND)
    a = torch.full((3,), 1.0, device=xla)
    b = torch.zeros(3, device=xla)
    _sync()
    b.copy_(a)
    _sync()
    torch.testing.assert_close(compiled(a, b).cpu(), torch.full((3,), 5.0))
    other = torch.full((3,), 5.0, device=xla)
    torch.testing.assert_close(compiled(a, other).cpu(), torch.full((3,), 13.0))
    torch.testing.assert_close(compiled(other, a).cpu(), torch.full((3,), 17.0))


# --- in-place updates of inputs ----------------------------------------------


def test_results_in_the_order_torch_xlas_bridge_compiles_them(against_eager, xla, monkeypatch):
    """A graph computing its outputs in another order than it returns them:
    the executable is the HLO module ``openxla_eval`` compiles (its results
    in the order torch_xla's bridge makes them, see ``plan._bridge_order``),
    and each output is still the right one, call after call, a caller's
    edit of one showing in neither the others nor the next call."""
    import re

    X = torch_xla._XLAC
    programs = []
    warm_up = X._xla_warm_up_cache

    def compiling(tensors, devices):
        programs.append(X._get_xla_tensors_hlo(list(tensors)))
        return warm_up(tensors, devices)

    monkeypatch.setattr(X, "_xla_warm_up_cache", compiling)

    def f(x, y):
        a = x + y
        b = (x * y).sum(0)
        return a.relu(), b, a * 2

    inputs = lambda call: (_randn(3, 5, seed=call), _randn(3, 5, seed=10 + call))
    compiled, _ = against_eager(BACKEND, f, inputs)
    ours = programs[-1]
    torch._dynamo.reset()
    programs.clear()
    torch.compile(f, backend="openxla_eval")(*(t.to(xla) for t in inputs(0)))
    theirs = programs[-1]
    body = lambda hlo: [line for line in hlo.splitlines() if not line.startswith("HloModule")]
    assert body(ours) == body(theirs)
    results = re.findall(r"\w+\[[\d,]*\]", next(l for l in ours.splitlines() if l.startswith("ENTRY")).split("->")[1])
    assert results != ["f32[3,5]", "f32[5]", "f32[3,5]"]  # not the order f returns them in

    x, y = (t.to(xla) for t in inputs(5))
    first = compiled(x, y)
    first[1].add_(100.0)
    again = compiled(x, y)
    expected = f(*inputs(5))
    for got, want in zip(again, expected):
        torch.testing.assert_close(got.cpu(), want)
    torch.testing.assert_close(first[0].cpu(), expected[0])
    torch.testing.assert_close(first[2].cpu(), expected[2])


def test_inplace_input_mutation_is_visible(against_eager):
    def f(x):
        x.add_(1)
        return x * 2

    against_eager(BACKEND, f, lambda call: (_randn(4, seed=call),))


def test_inplace_mutation_of_a_view_of_an_input(against_eager):
    def f(x):
        x[0].mul_(3)
        return x.sum()

    against_eager(BACKEND, f, lambda call: (_randn(2, 3, seed=call),))


def test_copy_of_one_input_into_another(against_eager):
    def f(x, buf):
        buf.copy_(x)
        return x + 1

    against_eager(BACKEND, f, lambda call: (_randn(4, seed=call), torch.zeros(4)))


@pytest.mark.parametrize("order", ["x_into_y", "y_into_x"])
def test_copy_backs_use_values_from_before_the_call(against_eager, order):
    """One input copied into another that is then updated itself: the
    copy must get the old value whatever order the updates are applied in."""

    def f(x, y):
        # dynamo numbers the graph's inputs in the order it first meets them:
        # meeting the source first puts its own update first among the copy-backs.
        if order == "x_into_y":
            s = x.sum() + y.sum()
            y.copy_(x)
            x.add_(1)
        else:
            s = y.sum() + x.sum()
            x.copy_(y)
            y.add_(1)
        return x + y + s

    against_eager(BACKEND, f, lambda call: (_randn(3, seed=call), _randn(3, seed=call + 10)))


# --- outputs -------------------------------------------------------------------


def test_output_that_is_an_input(against_eager):
    against_eager(BACKEND, lambda x, y: (x, y * 2), lambda call: (_randn(3, seed=call), _randn(3, seed=7)))


def test_input_updated_in_place_and_returned(against_eager):
    def f(x):
        x.mul_(2)
        return x

    against_eager(BACKEND, f, lambda call: (_randn(3, seed=call),))


def test_duplicate_outputs(against_eager):
    def f(x):
        y = x * 2
        return y, y, x.clone(), x.clone(), x + 1, x + 1

    against_eager(BACKEND, f, lambda call: (_randn(3, seed=call),))


def test_copy_of_an_input_keeps_the_value_before_an_update(against_eager):
    def f(x):
        y = x.clone()
        x.add_(1)
        return y, x.detach()

    against_eager(BACKEND, f, lambda call: (_randn(3, seed=call),))


def test_none_constants_and_nested_containers(against_eager):
    def f(x, y):
        z = x * y
        return {"z": z, "pair": (x, [z + 1, None]), "n": 3, "f": 2.5, "s": "ok", "t": (y,)}

    against_eager(BACKEND, f, lambda call: (_randn(3, seed=call), _randn(3, seed=call + 1)))


class Nested(nn.Module):
    def forward(self, x, y):
        z = x + y
        return {"a": (x, z, z), "b": [None, 7, y * 2], "c": {"d": x.clone(), "e": 1.5}}


def test_backend_called_directly_on_a_traced_graph_module(xla, same, identities):
    gm = torch.fx.symbolic_trace(Nested())
    inputs = [(_randn(3, seed=c), _randn(3, seed=c + 5)) for c in range(3)]
    runner = xla_backends.torchxla_trace_once(gm, [t.to(xla) for t in inputs[0]])
    for call, (x, y) in enumerate(inputs):
        ours_in = (x.to(xla), y.to(xla))
        expected = gm(x, y)
        actual = runner(*ours_in)
        same(actual, expected, f"call {call}", devices="xla")
        assert identities(actual, ours_in) == identities(expected, (x, y))


def test_mutating_a_returned_tensor_does_not_change_the_next_call(xla):
    def f(x):
        y = x * 2
        return y, y + 1, x.clone()

    compiled = torch.compile(f, backend=BACKEND)
    x = _randn(4, seed=0)
    x_xla = x.to(xla)
    for _ in range(3):
        outs = compiled(x_xla)
        for got, want in zip(outs, f(x)):
            torch.testing.assert_close(got.cpu(), want)
        for out in outs:
            out.add_(100)
        torch.testing.assert_close(x_xla.cpu(), x)


def test_returned_alias_and_constant_behave_as_in_eager(xla):
    """``x.detach()`` comes back as an alias of ``x`` (editing it edits
    ``x``); a tensor constant comes back fresh every call."""

    def f(x):
        return x.detach(), x + 1, torch.tensor([1.0, 2.0], device=x.device)

    compiled = torch.compile(f, backend=BACKEND)
    for call in range(3):
        x = _randn(2, seed=call)
        x_xla = x.to(xla)
        want, got = f(x), compiled(x_xla)
        for w, g in zip(want, got):
            torch.testing.assert_close(g.cpu(), w)
        for t in (*want, *got):
            t.add_(10)
        torch.testing.assert_close(x_xla.cpu(), x)
        torch.testing.assert_close(got[2].cpu(), want[2])


# --- random numbers ------------------------------------------------------------


def test_dropout_draws_a_fresh_mask_every_call(xla):
    model = nn.Sequential(nn.Linear(256, 256), nn.Dropout(0.5)).to(xla).train()
    compiled = torch.compile(model, backend=BACKEND)
    x = torch.ones(4, 256, device=xla)
    masks = [(compiled(x) == 0).cpu() for _ in range(4)]
    for mask in masks:
        assert 0.35 < mask.float().mean().item() < 0.65
    for i in range(len(masks)):
        for j in range(i):
            assert not torch.equal(masks[i], masks[j]), f"calls {j} and {i} share a dropout mask"


def test_two_dropouts_in_one_graph_differ(xla):
    compiled = torch.compile(lambda x: (F.dropout(x, 0.5, True), F.dropout(x, 0.5, True)),
                             backend=BACKEND)
    x = torch.ones(1024, device=xla)
    for _ in range(2):
        a, b = (t.cpu() for t in compiled(x))
        assert set(a.unique().tolist()) <= {0.0, 2.0}
        assert not torch.equal(a == 0, b == 0)


def test_random_numbers_follow_the_device_seed(xla):
    import torch_xla.core.xla_model as xm

    compiled = torch.compile(lambda x: x + torch.rand_like(x), backend=BACKEND)
    x = torch.zeros(16, device=xla)
    runs = []
    for _ in range(2):
        xm.set_rng_state(1234)
        runs.append([compiled(x).cpu() for _ in range(3)])
    for a, b in zip(*runs):
        torch.testing.assert_close(a, b)
    assert not torch.equal(runs[0][0], runs[0][1])


# --- graphs, lazy state, devices -------------------------------------------------


def test_graph_breaks_trace_each_graph_once(xla, metrics, bridge):
    def f(x):
        y = torch.sin(x) + 1
        torch._dynamo.graph_break()
        return torch.cos(y) * 2

    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return xla_backends.torchxla_trace_once(gm, example_inputs)

    compiled = torch.compile(f, backend=backend)
    x = _randn(5, seed=0)
    torch.testing.assert_close(compiled(x.to(xla)).cpu(), f(x))
    compiles = metrics.compiles()
    for call in range(1, 4):
        x = _randn(5, seed=call)
        torch.testing.assert_close(compiled(x.to(xla)).cpu(), f(x))
    assert len(graphs) == 2
    assert bridge["traces"] == 2, f"{bridge} for 2 graphs"
    assert bridge["replays"] == 8
    assert metrics.compiles() == compiles


def test_inputs_with_pending_lazy_work(xla):
    compiled = torch.compile(MLP().to(xla), backend=BACKEND)
    eager = MLP()
    a = _randn(2, 8, seed=0)
    a_xla = a.to(xla)
    _sync()
    for call in range(4):
        x = a_xla * (call + 2)  # pending IR, first call included
        unrelated = a_xla + call  # pending, held by the caller across the call
        out = compiled(x)
        torch.testing.assert_close(out.cpu(), eager(a * (call + 2)).detach(), atol=1e-4, rtol=1e-4)
        torch.testing.assert_close(unrelated.cpu(), a + call)


def test_host_tensors(against_eager, metrics, xla):
    """A CPU module on CPU inputs runs on the XLA device: CPU outputs, its
    BatchNorm buffers updated (as lazy XLA updates them)."""
    import torch_xla

    before = metrics.executions()
    against_eager(BACKEND, _batchnorm_model(), lambda call: (_randn(5, 8, seed=call) + call,),
                  device="cpu", reference_device=xla, atol=1e-6, rtol=1e-6)
    torch_xla._XLAC._xla_wait_device_ops([])
    assert metrics.executions() >= before + 3


def test_host_input_updated_in_place_is_copied_back(against_eager):
    def f(x, y):
        x.add_(y)
        return x, y * 3

    against_eager(BACKEND, f, lambda call: (_randn(3, seed=call), _randn(3, seed=call + 3)), device="cpu")


class UpdateAndReturn(nn.Module):
    def forward(self, x, y):
        x.add_(y)
        return x, y * 3, [x]


def test_host_output_that_is_an_input_is_the_callers_tensor(same, identities):
    gm = torch.fx.symbolic_trace(UpdateAndReturn())
    runner = xla_backends.torchxla_trace_once(gm, [])
    for call in range(3):
        inputs = (_randn(3, seed=call), _randn(3, seed=call + 3))
        eager_in = tuple(t.clone() for t in inputs)
        expected, actual = gm(*eager_in), runner(*inputs)
        same(actual, expected, f"call {call}", devices="cpu")
        same(inputs, eager_in, f"call {call}: inputs")
        assert identities(actual, inputs) == identities(expected, eager_in)


def test_op_without_xla_lowering(against_eager):
    def f(x):
        return torch.histc(x, bins=4, min=-2, max=2) + 1, x.median(), x * 2

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        against_eager(BACKEND, f, lambda call: (_randn(16, seed=call),), calls=3)
    ours = [str(w.message) for w in caught if BACKEND in str(w.message)]
    assert len(ours) == 1, ours
    assert "histc" in ours[0] and "median" in ours[0]


def test_output_moved_off_the_device_is_recomputed(against_eager, xla):
    """A graph that copies a result to the host cannot be replayed (the copy
    happens during the trace): it must still be right on every call."""

    def f(x):
        return (x * 2).cpu() + 1, x + 1

    against_eager(BACKEND, f, lambda call: (_randn(3, seed=call),), reference_device=xla)


def test_executable_dropped_from_the_cache_is_recompiled(xla, bridge):
    runners = []

    def backend(gm, example_inputs):
        runners.append(xla_backends.torchxla_trace_once(gm, example_inputs))
        return runners[-1]

    compiled = torch.compile(lambda x: x.sin() * 3, backend=backend)
    x = _randn(3, seed=0)
    compiled(x.to(xla))
    (replay,) = runners[0].runners
    replay._hash = bytes(len(replay._hash))  # what an evicted hash looks like to XLA
    torch.testing.assert_close(compiled(x.to(xla)).cpu(), x.sin() * 3)
    torch.testing.assert_close(compiled(x.to(xla)).cpu(), x.sin() * 3)
    assert bridge["retraces"] == 1


def test_executable_evicted_from_a_small_cache_is_recompiled():
    """With room for one executable in XLA's cache, other lazy work evicts
    ours; the next call compiles it again instead of failing."""
    import os
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent("""
        import torch, torch_xla, xla_backends
        import torch_xla.debug.metrics as met
        compiles = lambda: sum(met.counter_value(n) or 0 for n in ("UncachedCompile", "CachedCompile"))
        compiled = torch.compile(lambda x: x.sin() * 3, backend="torchxla_trace_once")
        x = torch.arange(3.0, device=torch_xla.device())
        first = compiled(x).cpu()
        for k in range(2):  # other graphs take the cache's only place
            ((x + k).cos() * 2).cpu()
        before = compiles()
        again = compiled(x).cpu()
        torch.testing.assert_close(again, first)
        torch.testing.assert_close(again, torch.arange(3.0).sin() * 3)
        print("recompiled", compiles() - before)
    """)
    env = dict(os.environ, PJRT_DEVICE="CPU", XLA_COMPILATION_CACHE_SIZE="1")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split()[-2:] == ["recompiled", "1"], done.stdout


def test_steady_state_runs_one_execution_per_call(xla, metrics):
    """After the first call: no compile, no lazy step, one execution per call,
    with in-place buffer updates and a random op in the graph."""
    import torch_xla

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 8), nn.BatchNorm1d(8), nn.Dropout(0.2), nn.Linear(8, 2))
    compiled = torch.compile(model.to(xla).train(), backend=BACKEND)
    x = _randn(4, 8, seed=0).to(xla)
    _sync()
    compiled(x)
    torch_xla._XLAC._xla_wait_device_ops([])
    metrics.clear()
    calls = 5
    outs = [compiled(x) for _ in range(calls)]
    torch_xla._XLAC._xla_wait_device_ops([])  # ExecuteTime is recorded when a run ends
    for name in ("UncachedCompile", "CachedCompile", "MarkStep"):
        assert metrics.counter(name) == 0, f"{name} counted {metrics.counter(name)}"
    assert metrics.executions() == calls
    assert all(torch.isfinite(o.cpu()).all() for o in outs)
    assert int(model[1].num_batches_tracked.cpu()) == calls + 1


# --- the compile on another thread ----------------------------------------------


@pytest.fixture
def slow_compile(monkeypatch):
    """XLA's compile, made 0.3 s slower; notes the thread it ran on and when
    it ended."""
    import threading
    import time

    from xla_backends.trace_once import _xlac

    real, seen = _xlac.compile_graph, []

    def compile_graph(outputs):
        time.sleep(0.3)
        real(outputs)
        seen.append((threading.current_thread(), time.perf_counter()))

    monkeypatch.setattr(_xlac, "compile_graph", compile_graph)
    return seen


def _usable_cpus(monkeypatch, n: int) -> None:
    from xla_backends.trace_once import compile as compile_step

    monkeypatch.setattr(compile_step, "usable_cpus", lambda: n)


def test_dynamo_goes_on_while_xla_compiles(xla, slow_compile, bridge, monkeypatch):
    """With two CPUs, the backend traces on dynamo's example inputs and
    returns before the compile ends; the first call waits for it; every call
    equals eager."""
    import threading
    import time

    _usable_cpus(monkeypatch, 2)
    returned = []

    def backend(gm, example_inputs):
        compiled = xla_backends.torchxla_trace_once(gm, example_inputs)
        returned.append(time.perf_counter())
        return compiled

    import copy

    model = MLP()
    compiled = torch.compile(copy.deepcopy(model).to(xla), backend=backend)
    with torch.no_grad():
        for call in range(3):
            x = _randn(2, 8, seed=call)
            torch.testing.assert_close(compiled(x.to(xla)).cpu(), model(x))
    ((thread, ended),) = slow_compile
    assert thread is not threading.main_thread()
    assert returned[0] < ended, "the backend waited for XLA's compile"
    assert bridge["traces"] == 1 and bridge["replays"] == 3


def test_with_one_cpu_the_compile_runs_before_the_backend_returns(xla, slow_compile, bridge, monkeypatch):
    """On one CPU a compile thread would only take turns with dynamo: the
    graph compiles in line, before the backend returns, and is replayed."""
    import threading
    import time

    _usable_cpus(monkeypatch, 1)
    gm = torch.fx.symbolic_trace(lambda x: (x @ x.T).relu().sum(0))
    x = _randn(16, 16, seed=3)
    runner = xla_backends.torchxla_trace_once(gm, [x.to(xla)])
    returned = time.perf_counter()
    ((thread, ended),) = slow_compile
    assert thread is threading.main_thread() and ended < returned
    for call in range(2):
        x = _randn(16, 16, seed=call)
        torch.testing.assert_close(runner(x.to(xla)).cpu(), (x @ x.T).relu().sum(0))
    assert bridge["traces"] == 1 and bridge["replays"] == 2


@pytest.mark.parametrize("cpu_max, affinity, usable", [
    (None, 2, 2),  # no cgroup v2 CPU controller: the CPUs it may run on
    ("max 100000", 2, 2),  # no quota
    ("150000 100000", 2, 1),  # 1.5 CPUs' worth of time: one thread at a time, in all
    ("400000 100000", 2, 2),  # more quota than CPUs
    ("200000 100000", 1, 1),  # pinned to one CPU
    ("50000 100000", 4, 1),  # half a CPU: still one
    ("garbled", 3, 3),
])
def test_usable_cpus_are_the_affinity_capped_by_the_cgroup_quota(cpu_max, affinity, usable, tmp_path,
                                                                 monkeypatch):
    from xla_backends.trace_once import compile as compile_step

    path = tmp_path / "cpu.max"
    if cpu_max is not None:
        path.write_text(cpu_max + "\n")
    monkeypatch.setattr(compile_step.os, "sched_getaffinity", lambda pid: set(range(affinity)))
    assert compile_step.usable_cpus(str(path)) == usable
    assert compile_step.overlap_pays(usable) is (usable >= 2)


def test_failed_background_compile_raises_at_each_call(xla, monkeypatch):
    from xla_backends.trace_once import _xlac

    def compile_graph(outputs):
        raise RuntimeError("no room for this executable")

    monkeypatch.setattr(_xlac, "compile_graph", compile_graph)
    compiled = torch.compile(lambda x: x.cos() + 1, backend=BACKEND)
    x = _randn(4, seed=0).to(xla)
    for _ in range(2):
        with pytest.raises(RuntimeError, match="no room for this executable"):
            compiled(x)


def test_fake_example_inputs_wait_for_the_first_call(xla, bridge):
    """Under AOT autograd a backend gets fake tensors: nothing to trace on
    until real ones come."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    gm = torch.fx.symbolic_trace(lambda x, y: x * y + 1)
    with FakeTensorMode() as mode:
        fakes = [mode.from_tensor(torch.ones(3, device=xla)) for _ in range(2)]
    runner = xla_backends.torchxla_trace_once(gm, fakes)
    assert bridge["traces"] == 0
    x, y = _randn(3, seed=1), _randn(3, seed=2)
    torch.testing.assert_close(runner(x.to(xla), y.to(xla)).cpu(), x * y + 1)
    assert bridge["traces"] == 1


def test_interpreter_exits_cleanly_with_a_compile_never_waited_for():
    """A graph compiled in the background and never called: the interpreter
    waits for the compile and exits with status 0."""
    import os
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent("""
        import torch, torch_xla, xla_backends
        gm = torch.fx.symbolic_trace(lambda x: (x @ x.T).relu().sum(0))
        xla_backends.torchxla_trace_once(gm, [torch.ones(64, 64, device=torch_xla.device())])
        print("left")
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=dict(os.environ, PJRT_DEVICE="CPU"), timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["left"]


def test_launching_replaces_the_executables_launch_for_the_block_only(xla, bridge):
    """The measuring tools' seam: a launch given to ``Replay.launching``
    runs the calls in the block (after the background compile), and XLA's
    own launch runs them again after it."""
    gm = torch.fx.symbolic_trace(lambda x: (x @ x.T).relu().sum(0))
    x = _randn(16, 16, seed=3)
    runner = xla_backends.torchxla_trace_once(gm, [x.to(xla)])
    (replay,) = runner.runners
    assert isinstance(replay, trace_once.Replay)
    ready = torch.full((16,), 7.0, device=xla)
    launched = []

    def stub(graph_hash, inputs):
        launched.append((graph_hash, len(inputs)))
        return [ready]

    with replay.launching(stub):
        assert runner(x.to(xla)) is ready
    assert launched == [(replay.executable.graph_hash, 1)]
    torch.testing.assert_close(runner(x.to(xla)).cpu(), (x @ x.T).relu().sum(0))
    assert len(launched) == 1 and bridge["replays"] == 2


# --- the overhead benchmark -------------------------------------------------------


def _check_overhead_report(text: str, first_calls: bool) -> None:
    from benchmarks.tools import overhead

    lines = text.splitlines()
    for columns in (overhead.LATENCY_COLUMNS, overhead.OVERHEAD_COLUMNS):
        header = next((line for line in lines if line.startswith("graph ") and columns[2] in line), None)
        assert header is not None, f"no table with column {columns[2]!r}:\n{text}"
        for column in columns:
            assert column in header, f"column {column!r} missing:\n{header}"
        row = lines[lines.index(header) + 2]
        assert row.startswith("tiny_mlp"), row
        cells = row.split()
        assert len(cells) == len(columns), f"{len(cells)} cells for {len(columns)} columns: {row}"
        if not first_calls:
            continue
        for cell in cells[1:]:
            float(cell)  # every cell a number, first calls included
    assert "tiny_mlp: host overhead <= 50% of openxla_eval's:" in text
    assert "tiny_mlp: host overhead within 100 µs of raw:" in text


def test_overhead_benchmark_smoke(capsys):
    from benchmarks.tools import overhead

    assert overhead.main(["--graphs", "tiny_mlp", "--quick", "--first-calls", "same-process"]) == 0
    _check_overhead_report(capsys.readouterr().out, first_calls=True)


@pytest.mark.slow
def test_overhead_benchmark_first_calls_in_fresh_interpreters():
    import os
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "benchmarks.tools.overhead", "--graphs", "tiny_mlp", "--quick"],
                          capture_output=True, text=True, timeout=600,
                          env=dict(os.environ, PJRT_DEVICE="CPU"))
    assert done.returncode == 0, done.stderr[-3000:]
    _check_overhead_report(done.stdout, first_calls=True)
