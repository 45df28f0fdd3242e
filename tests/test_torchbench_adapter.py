"""The "torchbench" suite, against a tiny fake ``torchbenchmark`` package."""
import sys

import pytest
import torch

from benchmarks import suite

TINY_MLP = '''
import torch
from torch import nn


class TinyMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(10, 8)
        self.mlp = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))

    def forward(self, x, ids, scale):
        return self.mlp(x + self.embed(ids).mean(1)) * scale


class Model:
    """TorchBench's interface: Model(test, device, batch_size).get_module()."""

    def __init__(self, test="eval", device="cpu", batch_size=None):
        self.batch_size = FIXED_BATCH_SIZE or batch_size or 4
        self.model = TinyMLP().to(device).train()  # load() must switch it to eval
        self.example_inputs = (
            torch.randn(self.batch_size, 8),
            torch.randint(3, 8, (self.batch_size, 5)),  # ids in [3, 7]
            2.0,  # not a tensor: passed through as it is
        )

    def get_module(self):
        return self.model, self.example_inputs
'''


def _forget_torchbenchmark():
    for name in [n for n in sys.modules if n.split(".")[0] == "torchbenchmark"]:
        del sys.modules[name]


@pytest.fixture
def fake_torchbench(tmp_path, monkeypatch):
    models = tmp_path / "torchbenchmark" / "models"
    for name, fixed_batch_size in [("tiny_mlp", None), ("fixed_batch", 2)]:
        (models / name).mkdir(parents=True)
        source = f"FIXED_BATCH_SIZE = {fixed_batch_size}\n{TINY_MLP}"
        (models / name / "__init__.py").write_text(source)
    (models / "__init__.py").write_text("")
    (models / "helpers.py").write_text("# a module, not a model package\n")
    (tmp_path / "torchbenchmark" / "__init__.py").write_text("")
    _forget_torchbenchmark()
    monkeypatch.syspath_prepend(str(tmp_path))
    yield
    _forget_torchbenchmark()  # later tests must not find the fake one


def test_lists_the_model_packages(fake_torchbench):
    assert suite.list_models("torchbench") == ["fixed_batch", "tiny_mlp"]


def test_loads_a_model_with_its_inputs(fake_torchbench):
    benchmark = suite.load("tiny_mlp", 3, suite="torchbench")
    assert benchmark.name == "tiny_mlp" and benchmark.batch_size == 3
    assert not benchmark.module.training
    x, ids, scale = benchmark.example_inputs()
    assert x.shape == (3, 8) and ids.shape == (3, 5) and scale == 2.0
    with torch.no_grad():
        assert benchmark.module(*benchmark.example_inputs()).shape == (3, 4)


def test_keeps_the_batch_size_torchbench_chose(fake_torchbench):
    assert suite.load("fixed_batch", 16, suite="torchbench").batch_size == 2


def test_random_inputs_follow_the_examples(fake_torchbench):
    benchmark = suite.load("tiny_mlp", 64, suite="torchbench")
    x, ids, scale = benchmark.example_inputs()
    new_x, new_ids, new_scale = benchmark.random_inputs(torch.Generator().manual_seed(1))
    for new, old in [(new_x, x), (new_ids, ids)]:
        assert new.shape == old.shape and new.dtype == old.dtype and not torch.equal(new, old)
    # Integers stay within the examples' [min, max].
    assert int(ids.min()) <= int(new_ids.min()) and int(new_ids.max()) <= int(ids.max())
    assert new_scale == scale


def test_seed_makes_weights_and_inputs_reproducible(fake_torchbench):
    first, again = (suite.load("tiny_mlp", 2, seed=5, suite="torchbench") for _ in range(2))
    other = suite.load("tiny_mlp", 2, seed=6, suite="torchbench")
    assert torch.equal(first.module.mlp[0].weight, again.module.mlp[0].weight)
    assert not torch.equal(first.module.mlp[0].weight, other.module.mlp[0].weight)
    assert torch.equal(first.example_inputs()[0], again.example_inputs()[0])


def test_unknown_model_suggests_close_names(fake_torchbench):
    with pytest.raises(suite.UnknownModelError, match="did you mean: tiny_mlp"):
        suite.load("tiny_mpl", 1, suite="torchbench")
    with pytest.raises(suite.UnknownModelError):
        suite.load("helpers", 1, suite="torchbench")


def test_clear_error_without_torchbenchmark(monkeypatch):
    # None in sys.modules makes `import torchbenchmark` fail, installed or not.
    monkeypatch.setitem(sys.modules, "torchbenchmark", None)
    with pytest.raises(suite.TorchBenchUnavailableError, match="needs the TorchBench") as error:
        suite.load("resnet50", 1, suite="torchbench")
    assert isinstance(error.value, ValueError)
    assert "torchbenchmark" in str(error.value)
    with pytest.raises(suite.TorchBenchUnavailableError):
        suite.list_models("torchbench")
