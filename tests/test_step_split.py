"""``python -m benchmarks.tools.step_split``: a training step timed lazily, cut
into the pieces AOT autograd makes, and compiled, side by side."""
from types import SimpleNamespace

import pytest
import torch
from torch import nn

from benchmarks.tools import step_split


def _tiny(monkeypatch, module, x):
    bench = SimpleNamespace(module=module, example_inputs=lambda: SimpleNamespace(args=(x,)))
    monkeypatch.setattr("benchmarks.run.suite.load", lambda name, batch_size: bench)


def test_every_variant_trains_and_runs_the_graphs_its_cuts_make(monkeypatch, xla):
    torch.manual_seed(0)
    module = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
    _tiny(monkeypatch, module, torch.randn(1, 8))
    rows = {r["variant"]: r for r in step_split.measure("tiny", repeat=2, warmup=1)}
    assert list(rows) == list(step_split.VARIANTS)
    assert all(r["step ms"] > 0 for r in rows.values())
    graphs = {v: r["graphs run/step"] for v, r in rows.items()}
    # A lazy step is one executable, each cut adds one; the whole step
    # compiled is one; the model alone compiled is a forward and a backward
    # with the loss's gradient and the update run lazily around them.
    assert graphs["lazy"] == 1
    assert graphs["lazy, sync after backward"] == 2
    assert graphs["lazy, sync after forward and backward"] == 3
    assert graphs["ours, whole step"] == graphs["openxla, whole step"] == 1
    assert graphs["ours"] >= 3 and graphs["openxla"] >= 3
    for r in rows.values():  # the call's share of the step, and XLA's running time
        assert 0 < r["call returns ms"] <= r["step ms"]
        assert r["XLA runs ms"] > 0
    # Each variant trains its own copy: the module itself is left as it was.
    torch.manual_seed(0)
    assert torch.equal(module[0].weight, nn.Linear(8, 16).weight)


def test_ratios_and_intervals_are_those_of_the_samples(monkeypatch):
    # Steps that take known times on a clock of their own: each variant k
    # takes (k + 1) ms, but for one slow step of the lazy one.
    clock = SimpleNamespace(now=0.0)
    durations = {v: [(k + 1) * 1e-3] * 5 for k, v in enumerate(step_split.VARIANTS)}
    durations["lazy"][2] = 0.5

    def make_step(module, inputs, variant):
        times = iter(durations[variant])

        def step():
            clock.now += next(times)

        return step

    _tiny(monkeypatch, None, torch.zeros(1))
    monkeypatch.setattr(step_split, "make_step", make_step)
    rows = step_split.measure("tiny", repeat=5, warmup=0, clock=lambda: clock.now)
    for k, row in enumerate(rows):
        assert row["step ms"] == pytest.approx(k + 1)
        assert row["lazy/variant"] == pytest.approx(1 / (k + 1))
        assert row["95% CI low"] <= row["lazy/variant"] <= row["95% CI high"]
        assert row["graphs run/step"] == 0  # nothing ran on XLA
    assert rows[0]["95% CI high"] > 1  # the slow lazy step widens the lazy step's own interval


def test_every_lazy_and_whole_step_variant_updates_the_weights_as_a_plain_step_does(xla):
    torch.manual_seed(0)
    module = nn.Sequential(nn.Linear(4, 3), nn.Tanh(), nn.Linear(3, 1))
    x = torch.randn(2, 4)
    finals = []
    for variant in (*step_split.SYNC_AFTER, *step_split.WHOLE):
        step = step_split.make_step(module, (x,), variant)
        step()
        step()
        finals.append([p.detach().cpu() for p in step.model.parameters()])
    assert not torch.equal(finals[0][0], module[0].weight)  # the steps did update
    for other in finals[1:]:
        for a, b in zip(finals[0], other):
            torch.testing.assert_close(a, b)


def test_the_calls_share_of_a_step_is_timed_apart_from_the_sync(monkeypatch):
    # Each variant k's call takes (k + 1) ms and its sync 10 ms more.
    clock = SimpleNamespace(now=0.0)

    def make_step(module, inputs, variant):
        k = step_split.VARIANTS.index(variant)

        def call():
            clock.now += (k + 1) * 1e-3

        def finish():
            clock.now += 10e-3

        step = lambda: (call(), finish())  # noqa: E731
        step.call, step.finish = call, finish
        return step

    _tiny(monkeypatch, None, torch.zeros(1))
    monkeypatch.setattr(step_split, "make_step", make_step)
    rows = step_split.measure("tiny", repeat=3, warmup=1, clock=lambda: clock.now)
    for k, row in enumerate(rows):
        assert row["call returns ms"] == pytest.approx(k + 1)
        assert row["step ms"] == pytest.approx(k + 11)
        assert row["XLA runs ms"] is None  # nothing ran on XLA


@pytest.mark.parametrize("argv, message", [
    (["--models", "no_such_model"], "unknown model(s) no_such_model"),
    (["--models", ","], "--models names no model"),
    (["--repeat", "0"], "--repeat must be at least 1"),
    (["--bogus"], "unrecognized arguments: --bogus"),
])
def test_bad_input_is_one_line_and_2(capsys, argv, message):
    assert step_split.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err
