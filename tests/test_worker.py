"""One model in-process (``worker.run_model``): skips, accuracy in training,
failures while building a runner, one-line error cells."""

import pytest
import torch

from benchmarks.run import accuracy, placement, worker
from benchmarks.run.config import RunConfig
from conftest import FAULT_MODELS, TINY_CONFIGS

CONFIGS = TINY_CONFIGS + """models:
  ok_mlp:
    skip: {training: "no optimizer for this one"}
"""


@pytest.fixture
def config(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(FAULT_MODELS))
    path = tmp_path / "models.yaml"
    path.write_text(CONFIGS)
    return RunConfig(suite="torchbench", backends=("eager",), repeat=2, warmup=1,
                     configs=str(path), output=str(tmp_path / "out.csv"))


def test_skip_reason_from_configs(config):
    result = worker.run_model(config.replace(training=True), "ok_mlp")
    (row,) = result.rows
    assert row["status"] == "skipped" and row["error"] == "no optimizer for this one"
    (row,) = worker.run_model(config, "ok_mlp").rows  # inference is not skipped
    assert row["status"] == "pass"


def test_accuracy_in_training_compares_first_steps(config):
    result = worker.run_model(config.replace(measure="accuracy", training=True), "ok_tiny")
    (row,) = result.rows
    assert row["accuracy"] == "pass", row


def test_a_backend_that_cannot_be_built_gets_its_row(config, monkeypatch):
    real = placement.backend_contender

    def broken(module, backend, *args, **kwargs):
        if backend == "aot_eager":
            raise RuntimeError("cannot place\nthis module")
        return real(module, backend, *args, **kwargs)

    monkeypatch.setattr(placement, "backend_contender", broken)
    rows = {r["backend"]: r for r in worker.run_model(
        config.replace(backends=("eager", "aot_eager")), "ok_mlp").rows}
    assert rows["eager"]["status"] == "pass"
    assert rows["aot_eager"]["status"] == "fail_to_run"
    assert rows["aot_eager"]["error"] == "RuntimeError: cannot place"


def test_accuracy_reasons_fit_on_one_line():
    check = accuracy.compare((torch.ones(2), {"a": torch.ones(2)}), (torch.ones(2), [torch.ones(2)]), 1e-4)
    assert not check.ok and "\n" not in check.reason
    nan = accuracy.compare(torch.ones(2), torch.tensor([1.0, float("nan")]), 1e-4)
    assert not nan.ok and nan.max_error != nan.max_error  # the NaN is reported, not hidden


@pytest.mark.parametrize("cosine", [False, True])
def test_infinities_and_nans_at_the_same_places_agree(cosine):
    """Two identical runs whose outputs hold inf (an attention mask's -inf,
    an overflow) or NaN at the same positions are equal; elsewhere, or of
    another sign, they are not."""
    inf, nan = float("inf"), float("nan")
    ref = torch.tensor([1.0, -inf, inf, nan, 2.0])
    check = accuracy.compare(ref, ref.clone(), 1e-4, cosine=cosine)
    assert check.ok and check.max_error == 0.0, check
    for other in (torch.tensor([1.0, inf, inf, nan, 2.0]), torch.tensor([1.0, -inf, 3.0, nan, 2.0]),
                  torch.tensor([1.0, -inf, inf, 0.0, 2.0])):
        assert not accuracy.compare(ref, other, 1e-4, cosine=cosine).ok, other
    near = torch.tensor([1.0, -inf, inf, nan, 2.00001])
    assert accuracy.compare(ref, near, 1e-4, cosine=cosine).ok
