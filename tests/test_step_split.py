"""``python -m benchmarks.step_split``: a training step timed lazily, cut
into the pieces AOT autograd makes, and compiled, side by side."""
from types import SimpleNamespace

import pytest
import torch
from torch import nn

from benchmarks import step_split


def test_every_variant_trains_and_is_timed(monkeypatch, xla):
    torch.manual_seed(0)
    module = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
    bench = SimpleNamespace(module=module,
                            example_inputs=lambda: SimpleNamespace(args=(torch.randn(1, 8),)))
    monkeypatch.setattr("benchmarks.suite.load", lambda name, batch_size: bench)
    rows = step_split.measure("tiny", repeat=2, warmup=1)
    assert [r["variant"] for r in rows] == list(step_split.VARIANTS)
    assert all(r["step ms"] > 0 for r in rows)
    assert rows[0]["lazy/variant"] == 1.0
    # Each variant trains its own copy: the module itself is left as it was.
    torch.manual_seed(0)
    assert torch.equal(module[0].weight, nn.Linear(8, 16).weight)


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
