"""A first call compiles its graph once.

The trace-once backends compile a graph built ahead of its first call on a
thread of their own (``compile``). The trace's lazy results must be gone by
the time the first call goes on: while one is alive, the
``torch_xla.sync()`` a user (and the harness) makes after the call compiles
and runs the whole traced graph a second time, under torch_xla's own key.
"""
import threading

import pytest
import torch

import xla_backends
from xla_backends.trace_once import _xlac
from xla_backends.trace_once import compile as compile_step


def _graph(x):
    return (x @ x.T).relu().sum(0)


@pytest.fixture
def held_compile(monkeypatch):
    """A background compile that waits for ``start`` before compiling, and
    whose thread, once the compile is done and the first call free to go
    on, is kept from running further until ``release``: what a busy
    machine's scheduler may do to it at that point."""
    monkeypatch.setattr(compile_step, "usable_cpus", lambda: 2)
    start, held, release = threading.Event(), threading.Event(), threading.Event()
    real = _xlac.compile_graph

    def compile_graph(outputs):
        start.wait(30)
        real(outputs)

    monkeypatch.setattr(_xlac, "compile_graph", compile_graph)

    def hold(future):
        future.add_done_callback(lambda _: (held.set(), release.wait(30)))
        start.set()

    yield hold, held
    release.set()
    start.set()


def test_a_sync_after_the_first_call_compiles_and_runs_nothing_more(xla, metrics, bridge, held_compile):
    hold, held = held_compile
    x = torch.randn(16, 16, generator=torch.Generator().manual_seed(0))
    runner = xla_backends.torchxla_trace_once(torch.fx.symbolic_trace(_graph), [x.to(xla)])
    (replay,) = runner.runners
    assert replay.executable.compiling is not None  # compiling on its thread
    hold(replay.executable.compiling)
    compiles = metrics.compiles()
    out = runner(x.to(xla))
    assert held.is_set()  # the compile thread is still there, held
    torch.testing.assert_close(out.cpu(), _graph(x))
    assert metrics.compiles() == compiles + 1  # the warm-up's
    executions = metrics.executions()
    import torch_xla

    torch_xla.sync()
    assert (metrics.compiles(), metrics.executions()) == (compiles + 1, executions)
    y = torch.randn(16, 16, generator=torch.Generator().manual_seed(1))
    torch.testing.assert_close(runner(y.to(xla)).cpu(), _graph(y))
    assert bridge["traces"] == 1 and bridge["replays"] == 2


def test_a_failed_background_compile_keeps_no_argument_alive(xla):
    """The error the future holds keeps its traceback's lines, not the
    frames' locals (the arguments, the trace's lazy results)."""
    import gc
    import weakref

    t = torch.ones(3, device=xla) * 2  # lazy, as a trace's result is
    ref = weakref.ref(t)

    def fails(value):
        raise RuntimeError("no room for this executable")

    future = compile_step._in_background(fails, t)
    del t
    with pytest.raises(RuntimeError, match="no room"):
        future.result(30)
    gc.collect()
    assert ref() is None
    assert future.exception().__traceback__ is not None
