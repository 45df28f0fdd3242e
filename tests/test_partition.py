"""Graphs with ops that have no XLA lowering: split around them, traced once.

Each test compiles a small function with ``torchxla_trace_once``, calls it
several times with changing inputs and compares with eager on the host.
"""
import gc
import warnings

import pandas as pd
import pytest
import torch
import torch_xla
import torch_xla.debug.metrics as met

import xla_backends  # noqa: F401 - registers the backends
from xla_backends.trace_once import partition
from xla_backends.trace_once.partition import fallback_nodes
from xla_backends.trace_once import Partitioned, TraceOnce

DEVICE = torch_xla.device()


def _median(x):
    return x.median(dim=-1, keepdim=True).values


def at_start(x):
    return torch.relu(_median(x) * 2 + x).sum(dim=0)


def in_middle(x):
    h = torch.tanh(x @ x.T)
    return torch.sigmoid(h - _median(h)) * 3


def at_end(x):
    h = (x * 2).exp()
    return torch.histc(h, bins=5, min=0.0, max=4.0)


def several(x):
    a = _median(x)  # start
    h = torch.relu(x - a) * 1.5
    b = torch.histc(h, bins=4, min=0.0, max=2.0)  # middle
    h = h + b.sum()
    return h, torch.bucketize(h, torch.tensor([0.5, 1.0], device=h.device))  # end


def feeds_several(x):
    m = _median(x)  # its output feeds two XLA regions
    left = torch.sin(x) + m
    right = torch.histc(left, bins=3, min=-1.0, max=1.0)
    return left * 2, right + m.sum()


def _graphs(fn):
    """The partitioned runners dynamo built for ``fn`` (one FX graph here)."""
    backends = []

    def capture(gm, example_inputs):
        compiled = TraceOnce(gm)
        backends.append(compiled)
        return compiled

    return torch.compile(fn, backend=capture), backends


def _check_against_eager(fn, shapes=((4, 6),) * 3 + ((5, 6),), calls=None):
    compiled, backends = _graphs(fn)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for shape in shapes:
            x = torch.rand(*shape) * 2
            out = compiled(x.to(DEVICE))
            expected = fn(x)
            got = out if isinstance(out, tuple) else (out,)
            want = expected if isinstance(expected, tuple) else (expected,)
            for g, w in zip(got, want):
                assert g.device.type == "xla"
                torch.testing.assert_close(g.cpu(), w, rtol=1e-5, atol=1e-5)
    runners = [r for b in backends for r in b.runners]
    return runners, [str(w.message) for w in caught if "no XLA lowering" in str(w.message)]


@pytest.mark.parametrize("fn,ops,graphs", [
    (at_start, ["aten::median.dim_values"], 1),
    (in_middle, ["aten::median.dim_values"], 2),
    (at_end, ["aten::histc"], 1),
    (several, ["aten::bucketize.Tensor", "aten::histc", "aten::median.dim_values"], 2),
    (feeds_several, ["aten::histc", "aten::median.dim_values"], 2),
])
def test_split_around_fallbacks_matches_eager(fn, ops, graphs):
    runners, messages = _check_against_eager(fn)
    split = [r for r in runners if isinstance(r, Partitioned)]
    # One split graph per input shape (a new shape is a new dynamo graph).
    assert len(split) == 2
    assert all(r.fallback_ops == ops for r in split)
    assert all(r.n_graphs == graphs for r in split)
    # One warning per split graph, naming the ops.
    assert len(messages) == 2 and all(op in messages[0] for op in ops)


def test_partitions_are_traced_once():
    compiled, _ = _graphs(in_middle)
    x = torch.rand(4, 6).to(DEVICE)
    compiled(x)  # builds: detection, partitions, compiles
    compiled(x)
    met.clear_all()
    for _ in range(3):
        out = compiled(torch.rand(4, 6).to(DEVICE))
    out.cpu()
    torch_xla._XLAC._xla_wait_device_ops([])  # ExecuteTime is recorded asynchronously
    assert met.counter_value("UncachedCompile") in (None, 0)
    # Two XLA partitions, each one execution per call.
    assert met.metric_data("ExecuteTime")[0] >= 6


def test_fallback_nodes_found_by_name():
    gm = torch.fx.symbolic_trace(in_middle)
    x = torch.rand(4, 6).to(DEVICE)
    found = fallback_nodes(gm, (x,))
    assert [n.target for n in found] == ["median"]
    assert list(found.values()) == [["aten::median.dim_values"]]


def test_in_place_update_and_rng_across_a_split():
    def fn(x, buf):
        buf.add_(1)
        h = torch.nn.functional.dropout(x, 0.5, training=True) + _median(x)
        return h * buf.sum()

    compiled = torch.compile(fn, backend="torchxla_trace_once")
    x = torch.ones(4, 8)
    buf = torch.zeros(3).to(DEVICE)
    outs = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i in range(3):
            out = compiled(x.to(DEVICE), buf).cpu()
            h = out / (3 * (i + 1))  # buf.sum() after i + 1 updates
            outs.append(h > 2)  # x is all ones: dropout keeps 2 or drops to 0, median adds 1
            assert buf.cpu().tolist() == [i + 1.0] * 3  # the update reaches the caller
    assert not all(torch.equal(outs[0], o) for o in outs[1:])  # fresh dropout masks


def test_split_module_runs_regions_in_program_order():
    compiled, backends = _graphs(several)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compiled(torch.rand(4, 6).to(DEVICE))
    (runner,) = backends[0].runners
    calls = [n.target for n in runner.fused.graph.nodes if n.op == "call_module"]
    assert calls == sorted(calls, key=lambda name: int(name.rsplit("_", 1)[1]))
    replayed = [n for n, m in runner.fused.named_children() if isinstance(m, partition._Compiled)]
    assert len(replayed) == runner.n_graphs


def test_harness_reports_fallback_ops_and_accuracy(tmp_path, fault_models, capsys):
    """The harness on a model with CPU-fallback ops: accuracy equal to eager,
    fallback ops in the row and in the report."""
    from benchmarks import cli

    out = tmp_path / "acc.csv"
    code = cli.main(["--accuracy", "--suite", "torchbench", "--only", "fallback_mlp", "--no-isolate",
                     "--backend", "torchxla_trace_once", "--output", str(out)])
    assert code == 0, capsys.readouterr().err
    row = pd.read_csv(out).iloc[0]
    assert row["accuracy"] == "pass" and row["status"] == "pass"
    assert set(row["fallback_ops"].split()) == {"histc", "median.dim_values"}
    assert "median.dim_values" in out.with_suffix(".md").read_text()


# --- structured values between parts ------------------------------------------------
# An op with no XLA lowering that returns a named tuple (cummin, median(dim),
# mode, ...) runs on the host; the part after it must take its tensors as
# inputs, be traced once, and keep no call's tensors.


def _cummin(x):
    c = torch.cummin(x, 0)
    y = x * 2
    return c.values + y, c.indices * 2, torch.cumprod((x * 3).long(), 0) + 1


def _median_and_mode(x):
    m = torch.median(x, 1)
    o = torch.mode(x.round(), 1)
    return m.values * o.values + 1, m.indices + o.indices


def _host_and_lowered_pieces(x):
    s, i = torch.sort(x, 1)
    t = torch.topk(x, 2, 1)
    mx = torch.max(x, 1)
    nm = torch.nanmedian(x, 1)
    lo, hi = torch.aminmax(x, dim=1)
    return s[:, 0] + t.values[:, 1] + mx.values + nm.values + hi - lo, i * t.indices[:, :1], nm.indices


def _frexp(x):
    mantissa, exponent = torch.frexp(x * 3)
    return mantissa * 2, exponent + 1


def _live_tensors() -> int:
    gc.collect()
    return sum(isinstance(o, torch.Tensor) for o in gc.get_objects())


@pytest.mark.parametrize("fn", [_host_and_lowered_pieces, *(pytest.param(f, marks=pytest.mark.slow)
                                                          for f in (_cummin, _median_and_mode, _frexp))])
def test_a_structured_host_result_between_parts_is_traced_once(fn):
    """Many calls on new values of one shape: each checked against eager, no
    trace after the first call, and no tensors left behind by any call."""
    from torch._dynamo.utils import counters

    compiled, _ = _graphs(fn)
    traces, live = [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for call in range(12):
            x = torch.randn(4, 5, generator=torch.Generator().manual_seed(call))
            got = compiled(x.to(DEVICE))
            for k, (g, w) in enumerate(zip(got, fn(x))):
                assert g.device.type == "xla"
                torch.testing.assert_close(g.cpu(), w, msg=f"call {call}, output {k}")
            del got
            traces.append(counters["trace_once"]["traces"])
            live.append(_live_tensors())
    assert traces[1:] == [traces[1]] * 11, f"traces so far, call by call: {traces}"
    assert live[-1] <= live[2], f"live tensors, call by call: {live}"


def test_runners_per_value_are_bounded():
    """A graph keyed by a number (an int it is handed) keeps at most
    ``MAX_RUNNERS`` runners, the least recently used dropped first."""
    from xla_backends.trace_once.driver import MAX_RUNNERS

    compiled = TraceOnce(torch.fx.symbolic_trace(lambda x, n: x * n + n))
    x = torch.arange(3.0).to(DEVICE)
    for n in list(range(MAX_RUNNERS + 5)) + [0, 1]:
        torch.testing.assert_close(compiled(x, n).cpu(), torch.arange(3.0) * n + n)
        assert len(compiled.runners) <= MAX_RUNNERS
    assert len(compiled.runners) == MAX_RUNNERS


def _takes_structured(c, pair, named, y):
    return c[0] * y + c.indices, pair[0] - pair[1] * named["k"], named["v"] + 1


def test_structured_arguments_become_inputs():
    """A graph handed structured values (a ``torch.return_types`` tuple, a
    list, a dict of tensors) takes their tensors as inputs: one runner, one
    trace, no call's tensors kept."""
    from torch._dynamo.utils import counters

    compiled = TraceOnce(torch.fx.symbolic_trace(_takes_structured))
    counters["trace_once"].clear()
    live = []
    for call in range(8):
        x, y = (torch.randn(5, generator=torch.Generator().manual_seed(call + k)) for k in (0, 9))
        host = (torch.cummin(x, 0), [x, y], {"k": y * 2, "v": x.abs()}, y)
        ours = (torch.cummin(x.to(DEVICE), 0), [x.to(DEVICE), y.to(DEVICE)],
                {"k": (y * 2).to(DEVICE), "v": x.abs().to(DEVICE)}, y.to(DEVICE))
        for k, (g, w) in enumerate(zip(compiled(*ours), _takes_structured(*host))):
            torch.testing.assert_close(g.cpu(), w, msg=f"call {call}, output {k}")
        del ours
        live.append(_live_tensors())
    assert counters["trace_once"]["traces"] == 1, dict(counters["trace_once"])
    assert len(compiled.runners) == 1
    assert live[-1] <= live[1], f"live tensors, call by call: {live}"
