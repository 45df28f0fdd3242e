"""The "torchbench" suite against the fake ``torchbenchmark`` package of
tests/fault_models, which mirrors the traps of pytorch/benchmark's interface:
discovery without import, case-insensitive lookup, batch sizes a model refuses,
the process-wide seed override, dict and list inputs, ``test="train"``, a
missing dependency, missing data, and NotImplementedError for a device."""
import os
import sys

import pytest
import torch

from benchmarks import cli
from benchmarks.run import suite, worker
from benchmarks.run.config import RunConfig
from benchmarks.models.spec import Inputs
from conftest import FAULT_MODELS, TINY_CONFIGS


def _forget_torchbenchmark():
    for name in [n for n in sys.modules if n.split(".")[0] == "torchbenchmark"]:
        del sys.modules[name]


@pytest.fixture
def torchbench(monkeypatch):
    """The fake package on sys.path; torch.manual_seed checked and restored
    around each test, so no test leaks TorchBench's seed override."""
    _forget_torchbenchmark()
    monkeypatch.syspath_prepend(str(FAULT_MODELS))
    manual_seed = torch.manual_seed
    yield
    leaked = torch.manual_seed is not manual_seed
    torch.manual_seed = manual_seed
    _forget_torchbenchmark()  # later tests must not find the fake one
    assert not leaked, "torch.manual_seed was left replaced"


def test_lists_model_folders_without_importing_them(torchbench):
    names = suite.list_models("torchbench")
    # missing_dep would fail to import: listing must not import models.
    assert {"ok_mlp", "hf_tiny", "BERT_tiny", "missing_dep", "fixed_bsize"} <= set(names)
    assert "not_a_model" not in names  # a folder without __init__.py
    assert not [m for m in sys.modules if m.startswith("torchbenchmark.models.")]


def test_names_match_case_insensitively(torchbench):
    assert suite.resolve("bert_tiny", "torchbench") == "BERT_tiny"
    bench = suite.load("bert_TINY", 3, suite="torchbench")
    assert bench.name == "BERT_tiny" and bench.batch_size == 3
    with pytest.raises(suite.UnknownModelError, match="did you mean: ok_mlp"):
        suite.load("ok_mpl", 1, suite="torchbench")


def test_list_inputs_are_positional(torchbench):
    (x,) = suite.load("BERT_tiny", 3, suite="torchbench").example_inputs().args
    assert x.shape == (3, 8)


def test_a_model_that_refuses_other_batch_sizes_gets_its_own(torchbench):
    # The trap is real: asked for another size, the model raises.
    import torchbenchmark

    model_class = torchbenchmark.load_model_by_name("fixed_bsize")
    manual_seed = torch.manual_seed
    try:
        with pytest.raises(NotImplementedError, match="customizing batch size"):
            model_class(test="eval", device="cpu", batch_size=16)
    finally:
        torch.manual_seed = manual_seed  # that build replaced it, as TorchBench does
    assert suite.load("fixed_bsize", 16, suite="torchbench").batch_size == 3
    assert suite.load("fixed_bsize", 16, suite="torchbench", training=True).batch_size == 5


def test_no_batch_size_lets_torchbench_choose(torchbench):
    assert suite.load("ok_mlp", None, suite="torchbench").batch_size == 2
    assert suite.load("hf_tiny", None, suite="torchbench").batch_size == 1
    assert suite.load("hf_tiny", None, suite="torchbench", training=True).batch_size == 4


def test_dict_inputs_are_keyword_inputs_and_randomize_as_such(torchbench):
    bench = suite.load("hf_tiny", 8, suite="torchbench")
    inputs = bench.example_inputs()
    assert isinstance(inputs, Inputs) and inputs.args == ()
    assert list(inputs.kwargs) == ["input_ids", "attention_mask"]
    assert not bench.module.training
    with torch.no_grad():
        assert inputs.call(bench.module)["logits"].shape == (8, 6, 16)
    fresh = bench.random_inputs(torch.Generator().manual_seed(1))
    ids, new_ids = inputs.kwargs["input_ids"], fresh.kwargs["input_ids"]
    assert new_ids.shape == ids.shape and not torch.equal(new_ids, ids)
    assert int(ids.min()) <= int(new_ids.min()) and int(new_ids.max()) <= int(ids.max())
    # A constant tensor (an all-ones mask) is not turned into noise.
    assert torch.equal(fresh.kwargs["attention_mask"], inputs.kwargs["attention_mask"])


def test_training_builds_with_test_train(torchbench):
    bench = suite.load("hf_tiny", None, suite="torchbench", training=True)
    inputs = bench.example_inputs()
    assert list(inputs.kwargs) == ["input_ids", "attention_mask", "labels"]
    out = inputs.call(bench.module.train())
    assert out["loss"].ndim == 0


def test_seed_override_is_undone_and_seed_still_governs(torchbench):
    manual_seed = torch.manual_seed
    first = suite.load("ok_mlp", 2, seed=1, suite="torchbench")
    assert torch.manual_seed is manual_seed
    after_1 = torch.rand(3)  # torch's RNG follows our seed after the build
    second = suite.load("ok_mlp", 2, seed=2, suite="torchbench")
    after_2 = torch.rand(3)
    torch.manual_seed(1)
    assert torch.equal(torch.rand(3), after_1) and not torch.equal(after_1, after_2)
    # TorchBench fixes its own weights and example inputs (it seeds 1337)...
    assert torch.equal(first.module.mlp[0].weight, second.module.mlp[0].weight)
    assert torch.equal(first.example_inputs().args[0], second.example_inputs().args[0])
    # ...while randomized inputs come from our generator, so --seed changes them.
    draw = [b.random_inputs(torch.Generator().manual_seed(s)).args[0]
            for b, s in ((first, 1), (second, 1), (second, 2))]
    assert torch.equal(draw[0], draw[1]) and not torch.equal(draw[1], draw[2])


def test_seed_override_is_undone_even_when_the_build_fails(torchbench):
    manual_seed = torch.manual_seed
    with pytest.raises(RuntimeError, match="raise_on_load"):
        suite.load("raise_on_load", 2, suite="torchbench")
    with pytest.raises(suite.ModelUnavailableError):
        suite.load("missing_data", 2, suite="torchbench")  # fails after seeding
    assert torch.manual_seed is manual_seed


@pytest.mark.parametrize("name, status, reason", [
    ("missing_dep", "not_installed", "No module named 'a_dependency_nobody_installed'"),
    ("missing_data", "not_installed", "No such file or directory"),
    ("cuda_only", "unsupported", "NotImplementedError: cuda_only requires CUDA"),
])
def test_what_is_missing_is_not_breakage(torchbench, name, status, reason):
    with pytest.raises(suite.ModelUnavailableError) as error:
        suite.load(name, 2, suite="torchbench")
    assert error.value.status == status and reason in error.value.reason
    if status == "not_installed":
        assert f"install.py {name}" in error.value.reason  # what to do about it
    assert "\n" not in error.value.reason


def test_rows_say_not_installed_and_unsupported(torchbench, tmp_path):
    config = RunConfig(suite="torchbench", backends=("eager",), repeat=1, warmup=1,
                       output=str(tmp_path / "out.csv"))
    (row,) = worker.run_model(config, "missing_dep").rows
    assert row["status"] == "not_installed" and "a_dependency_nobody_installed" in row["error"]
    assert row["batch_size"] is None  # unlisted in configs/: TorchBench would choose
    (row,) = worker.run_model(config, "cuda_only").rows
    assert row["status"] == "unsupported" and "requires CUDA" in row["error"]
    (row,) = worker.run_model(config, "raise_on_load").rows
    assert row["status"] == "model_fail_to_load"  # real breakage stays what it was
    (row,) = worker.run_model(config, "fixed_bsize").rows
    assert row["status"] == "pass" and row["batch_size"] == 3  # the size it chose


def test_keyword_inputs_run_through_the_harness(torchbench, tmp_path):
    # Placement, timing with fresh inputs, accuracy and a training loss, all
    # on a model that takes a dict of keyword inputs.
    config = RunConfig(suite="torchbench", backends=("eager",), repeat=2, warmup=1,
                       randomize_input=True, output=str(tmp_path / "out.csv"))
    for run in (config, config.replace(measure="accuracy"), config.replace(training=True),
                config.replace(measure="accuracy", training=True)):
        (row,) = worker.run_model(run, "hf_tiny").rows
        assert row["status"] == "pass", (run.mode, run.training, row)


def test_torchbench_dir_flag(tmp_path, capsys, monkeypatch):
    _forget_torchbenchmark()
    monkeypatch.setenv("PYTHONPATH", "")
    monkeypatch.setattr(sys, "path", list(sys.path))
    try:
        assert cli.main(["--suite", "torchbench", "--torchbench-dir", str(FAULT_MODELS),
                         "--list-models"]) == 0
        listing = capsys.readouterr().out
        assert "hf_tiny" in listing and "TorchBench's default" in listing
        # Worker processes find it too: through PYTHONPATH.
        assert str(FAULT_MODELS) in os.environ["PYTHONPATH"]
    finally:
        _forget_torchbenchmark()
    assert cli.main(["--suite", "torchbench", "--torchbench-dir", str(tmp_path), "--list-models"]) == 2
    assert "holds no torchbenchmark/__init__.py" in capsys.readouterr().err
    assert cli.main(["--suite", "seed", "--torchbench-dir", str(FAULT_MODELS), "--list-models"]) == 2
    assert "--suite torchbench only" in capsys.readouterr().err


def test_clear_error_without_torchbenchmark(monkeypatch):
    # None in sys.modules makes `import torchbenchmark` fail, installed or not.
    monkeypatch.setitem(sys.modules, "torchbenchmark", None)
    with pytest.raises(suite.TorchBenchUnavailableError, match="needs the TorchBench") as error:
        suite.load("resnet50", 1, suite="torchbench")
    assert isinstance(error.value, ValueError)
    assert "--torchbench-dir" in str(error.value)
    with pytest.raises(suite.TorchBenchUnavailableError):
        suite.list_models("torchbench")


def test_a_package_without_the_interface_is_refused(tmp_path, monkeypatch):
    (tmp_path / "torchbenchmark").mkdir()
    (tmp_path / "torchbenchmark" / "__init__.py").write_text("# not pytorch/benchmark\n")
    _forget_torchbenchmark()
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        with pytest.raises(suite.TorchBenchUnavailableError, match="lacks _list_model_paths"):
            suite.list_models("torchbench")
    finally:
        _forget_torchbenchmark()


@pytest.mark.slow  # a worker per model (17 s); test_reliability.py's fault run keeps a crash's row
def test_a_worker_failing_at_exit_keeps_its_rows(torchbench, tmp_path, monkeypatch):
    # The rows were written before the exit handler failed: they stand.
    from benchmarks.run import orchestrate

    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(FAULT_MODELS), os.environ.get("PYTHONPATH")])))  # for the worker process
    config = RunConfig(suite="torchbench", backends=("eager",), repeat=1, warmup=1,
                       output=str(tmp_path / "out.csv"))
    (row,) = orchestrate.run_isolated(config, "fails_at_exit").rows
    assert row["status"] == "pass"
    assert (tmp_path / "out.logs" / "fails_at_exit.log").exists()  # kept, for debugging


def test_accuracy_seeds_the_xla_device_too(torchbench, tmp_path):
    # torch.manual_seed leaves the XLA generator alone: without seeding it, the
    # lazy baseline would disagree with itself on a model that draws noise.
    config = RunConfig(suite="torchbench", measure="accuracy", use_xla_baseline=True,
                       backends=("torchxla_trace_once",), output=str(tmp_path / "out.csv"))
    (row,) = worker.run_model(config, "random_noise").rows
    assert row["status"] == "pass", row


@pytest.mark.slow
def test_a_forward_that_takes_gradients_runs_with_autograd_on(torchbench, tmp_path):
    """TorchBench's maml adapts its weights with torch.autograd.grad in its
    forward: PyTorch's harness runs it with grad enabled in inference, and so
    do we, where configs/models.yaml says so (``grad_in_inference``)."""
    # aot_torchxla_trace_once: the backend whose outputs carry autograd graphs.
    config = RunConfig(suite="torchbench", backends=("eager", "aot_torchxla_trace_once"), repeat=2, warmup=1,
                       output=str(tmp_path / "out.csv"))
    rows = worker.run_model(config.replace(cold_start=True), "maml").rows
    assert [(r["backend"], r["status"]) for r in rows] == [("eager", "pass"), ("aot_torchxla_trace_once", "pass")]
    assert rows[0]["batch_size"] == 2  # listed for its grad mode only: TorchBench's own batch size
    rows = worker.run_model(config.replace(measure="accuracy"), "maml").rows
    assert [(r["backend"], r["status"], r["accuracy"]) for r in rows] == [
        ("eager", "pass", "pass"), ("aot_torchxla_trace_once", "pass", "pass")], rows
    plain = tmp_path / "models.yaml"
    plain.write_text(TINY_CONFIGS)
    (row, _) = worker.run_model(config.replace(configs=str(plain), configs_text=None), "maml").rows
    assert row["status"] == "eager_fail_to_run" and "does not require grad" in row["error"]


def test_grad_in_inference_takes_a_reason(tmp_path):
    from benchmarks.run import settings

    path = tmp_path / "models.yaml"
    with pytest.raises(settings.ConfigError, match="models.m.grad_in_inference"):
        settings.parse_settings(path, TINY_CONFIGS + "models:\n  m:\n    grad_in_inference: true\n")
    loaded = settings.parse_settings(path, TINY_CONFIGS + "models:\n  m:\n    grad_in_inference: why\n")
    assert loaded.for_model("m").grad_in_inference == "why" and not loaded.lists("m")
    assert loaded.for_model("other").grad_in_inference is None
