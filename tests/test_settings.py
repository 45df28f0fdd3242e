"""Per-model settings: the real configs/models.yaml, defaults, overrides and bad files."""
import pickle
from dataclasses import replace

import pytest

from benchmarks.run import suite
from benchmarks.run.settings import DEFAULT_PATH, ConfigError, load_settings

DEFAULTS = """\
defaults:
  batch_size: {accelerator: 4, cpu: 1}
  tolerance: {host: 1.0e-4, xla: 1.0e-2}
  cosine: false
"""
OVERRIDES = (
    DEFAULTS
    + """\
models:
  big:
    batch_size: {accelerator: 32}
    tolerance: {xla: 0.05}
    cosine: true
    skip: {training: "runs out of memory"}
  trains_smaller:
    batch_size: {accelerator: 16, cpu: 2}
    train_batch_size: {accelerator: 8}
  plain:
"""
)


def write(tmp_path, text):
    path = tmp_path / "models.yaml"
    path.write_text(text)
    return path


def test_every_registry_model_has_an_entry():
    settings = load_settings()
    assert settings.path == DEFAULT_PATH
    missing = set(suite.list_models()) - set(settings.models)
    assert not missing, f"add these models to {DEFAULT_PATH}: {sorted(missing)}"


def test_real_file_holds_torchbench_batch_sizes():
    resnet18 = load_settings().for_model("resnet18")
    assert resnet18.batch_size("accelerator") == 8
    assert resnet18.batch_size("accelerator", training=True) == 16
    assert resnet18.batch_size("cpu") == resnet18.batch_size("cpu", training=True) == 1
    assert load_settings().for_model("vgg16").batch_size("accelerator", training=True) == 64


def test_unlisted_model_gets_the_defaults(tmp_path):
    settings = load_settings(write(tmp_path, DEFAULTS))
    model = settings.for_model("not_listed")
    assert model.name == "not_listed"
    assert model.batch_size("accelerator") == model.batch_size("accelerator", training=True) == 4
    assert model.batch_size("cpu") == 1
    assert model.tolerance(xla=False) == 1e-4 and model.tolerance(xla=True) == 1e-2
    assert model.cosine is False
    assert model.skip_reason(training=False) is None and model.skip_reason(training=True) is None


def test_model_entries_override_key_by_key(tmp_path):
    settings = load_settings(write(tmp_path, OVERRIDES))
    big = settings.for_model("big")
    assert big.batch_size("accelerator") == 32 and big.batch_size("cpu") == 1
    assert big.tolerance(xla=True) == 0.05 and big.tolerance(xla=False) == 1e-4
    assert big.cosine is True
    assert big.skip_reason(training=True) == "runs out of memory"
    assert big.skip_reason(training=False) is None
    smaller = settings.for_model("trains_smaller")
    # train_batch_size falls back to the model's own batch_size, profile by profile.
    assert smaller.batch_size("accelerator", training=True) == 8
    assert smaller.batch_size("cpu", training=True) == 2
    assert settings.for_model("plain") == replace(settings.defaults, name="plain")


def test_unknown_profile_argument():
    with pytest.raises(ValueError, match="unknown profile 'gpu'"):
        load_settings().for_model("resnet18").batch_size("gpu")


def model_m(entry):
    """A file with the defaults and one model, ``m``, whose entry is ``entry``."""
    return DEFAULTS + f"models:\n  m: {entry}\n"


@pytest.mark.parametrize(
    "text, key, problem",
    [
        ("defaults: [1, 2\n", "", "invalid YAML at line 2"),
        ("- just\n- a list\n", "", "expected a mapping"),
        (DEFAULTS + "extras: {}\n", "extras", "unknown key"),
        (model_m("{batchsize: {cpu: 1}}"), "models.m.batchsize", "unknown key"),
        (model_m("{batch_size: {gpu: 8}}"), "models.m.batch_size.gpu", "unknown profile"),
        (model_m("{batch_size: {cpu: 0}}"), "models.m.batch_size.cpu", "positive int"),
        (model_m("{batch_size: {cpu: 2.5}}"), "models.m.batch_size.cpu", "positive int"),
        (model_m("{train_batch_size: {cpu: true}}"), "models.m.train_batch_size.cpu", "positive"),
        (model_m("{batch_size: 8}"), "models.m.batch_size", "expected a mapping"),
        (model_m("{tolerance: {xla: 1e-3}}"), "models.m.tolerance.xla", "write 1.0e-4"),
        (model_m("{tolerance: {device: 0.1}}"), "models.m.tolerance.device", "unknown key"),
        (model_m("{cosine: maybe}"), "models.m.cosine", "true or false"),
        (model_m("{skip: {eval: why}}"), "models.m.skip.eval", "unknown mode"),
        (model_m("{skip: {training: ''}}"), "models.m.skip.training", "a reason"),
        (model_m("[1]"), "models.m", "expected a mapping"),
        (DEFAULTS.replace("  batch_size", "  #"), "defaults.batch_size", "missing"),
        (DEFAULTS.replace("host: 1.0e-4, ", ""), "defaults.tolerance.host", "missing"),
        (DEFAULTS.replace("xla: 1.0e-2", "other: 0.1"), "defaults.tolerance.other", "unknown key"),
        (DEFAULTS.replace("cpu: 1", "gpu: 1"), "defaults.batch_size.gpu", "unknown profile"),
        (DEFAULTS + "  skip: {training: oom}\n", "defaults.skip", "unknown key"),
    ],
)
def test_bad_files_raise_config_error(tmp_path, text, key, problem):
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as error:
        load_settings(path)
    message = str(error.value)
    assert "\n" not in message
    assert message.startswith(f"{path}: {key}: " if key else f"{path}: ")
    assert problem in message
    assert error.value.key == key
    assert isinstance(error.value, ValueError)


def test_missing_file_and_pickling(tmp_path):
    with pytest.raises(ConfigError, match="can't read it") as error:
        load_settings(tmp_path / "nope.yaml")
    assert str(pickle.loads(pickle.dumps(error.value))) == str(error.value)


def test_lists_tells_listed_models_from_defaulted_ones(tmp_path):
    settings = load_settings(write(tmp_path, OVERRIDES))
    assert settings.lists("big") and settings.lists("plain")  # an empty entry is listed
    assert not settings.lists("not_listed")
    grad_only = load_settings(write(tmp_path, DEFAULTS + "models:\n  m:\n    grad_in_inference: why\n"))
    assert not grad_only.lists("m")  # an entry of other keys leaves TorchBench's batch size


def test_real_file_holds_torchbench_sizes_of_the_new_models():
    settings = load_settings()
    assert settings.for_model("dlrm").batch_size("accelerator") == 2048
    assert settings.for_model("hf_Bert").batch_size("accelerator", training=True) == 4
    assert settings.for_model("speech_transformer").batch_size("cpu") == 1
    assert settings.for_model("hf_Whisper").skip_reason(training=True)
