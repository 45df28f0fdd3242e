"""PyTorch's own suites, ``huggingface`` and ``timm_models``, from PyTorch's
list files (configs/pytorch/, README.md there says where they come from).

Offers ``PYTORCH_SUITES``, ``names(suite)`` (every listed model, in the
lists' order), ``batch_size(suite, name, profile)``, and ``build(...)``, which
builds a model offline as PyTorch's ``huggingface.py`` and ``timm_models.py``
build it, with random weights, and its inputs as those files generate them
(``benchmarks.models.pytorch_inputs``). A listed model that cannot be built
here raises ``Unbuildable`` with the reason (its rows: model_fail_to_load).

Profiles: ``accelerator`` (PyTorch's GPU batch sizes, less its divisors),
``cpu`` (PyTorch's CPU list; timm has none, so its list as for GPUs) and
``small`` (``--profile small``: batch size 1, and for the transformers
shorter sequences and at most two layers; for timm, overrides of the few
models still too large). Reading the lists imports no torch.
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

if TYPE_CHECKING:
    from benchmarks.models.spec import Inputs

PYTORCH_SUITES = ("huggingface", "timm_models")
PROFILES = ("accelerator", "cpu", "small")
CONFIG_DIR = Path(__file__).resolve().parents[2] / "configs" / "pytorch"
# The list files: per profile of the batch size, the file and its separator.
_LISTS = {
    "huggingface": {"accelerator": ("huggingface_models_list.txt", ","),
                    "cpu": ("huggingface_models_list_cpu.txt", ",")},
    "timm_models": {"accelerator": ("timm_models_list.txt", " "),
                    "cpu": ("timm_models_list.txt", " ")},
}
# The keys each suite's YAML may have (anything else is refused).
_KEYS = {"huggingface": {"divisors", "hub_configs", "unbuildable", "small"},
         "timm_models": {"divisors", "small"}}
_SMALL_KEYS = {"huggingface": {"batch_size", "seq_len", "layers", "layer_keys"},
               "timm_models": {"batch_size", "overrides"}}
_HUB_KEYS = {"auto_class", "config_class", "values"}


class SuiteDataError(ValueError):
    """A file of configs/pytorch/ that can't be used; the message names it."""


class Unbuildable(Exception):
    """A listed model that can't be built here; ``reason`` says why."""

    def __init__(self, name: str, reason: str):
        self.name, self.reason = name, reason
        super().__init__(f"{name}: {reason}")

    def __reduce__(self):
        return type(self), (self.name, self.reason)


@dataclass(frozen=True)
class SuiteData:
    """One suite's list files and our settings for it, read and checked once."""

    suite: str
    sizes: dict[str, dict[str, int]]  # profile -> model -> the list's batch size
    settings: dict[str, Any]

    @property
    def names(self) -> list[str]:
        # Every model of the GPU list, then any the CPU list adds, in order.
        ordered = dict.fromkeys([*self.sizes["accelerator"], *self.sizes["cpu"]])
        return list(ordered)

    def batch_size(self, name: str, profile: str) -> int:
        if profile not in PROFILES:
            raise ValueError(f"unknown profile {profile!r}; choose from: {', '.join(PROFILES)}")
        if profile == "small":
            return self.settings["small"]["batch_size"]
        sizes = self.sizes[profile]
        divisor = self.settings.get("divisors", {}).get(name, 1)
        if name not in sizes:  # a model the CPU list lacks: the GPU list's size, divided
            sizes, profile = self.sizes["accelerator"], "accelerator"
        if profile == "cpu" and self.suite == "huggingface":
            return sizes[name]  # PyTorch's CPU list is the batch size itself
        return max(sizes[name] // divisor, 1)


def _read_list(path: Path, separator: str) -> dict[str, int]:
    sizes = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        parts = line.strip().split(separator)
        if len(parts) != 2 or not parts[1].strip().isdigit():
            raise SuiteDataError(f"{path}:{number}: expected 'name{separator}batch_size', got {line!r}")
        sizes[parts[0].strip()] = int(parts[1])
    return sizes


def _check(suite: str, path: Path, settings: Any) -> dict:
    if not isinstance(settings, dict):
        raise SuiteDataError(f"{path}: expected a mapping")
    unknown = set(settings) - _KEYS[suite]
    if unknown:
        raise SuiteDataError(f"{path}: unknown key(s) {sorted(unknown)}; expected: {sorted(_KEYS[suite])}")
    small = settings.get("small")
    if not isinstance(small, dict) or set(small) - _SMALL_KEYS[suite] or "batch_size" not in small:
        raise SuiteDataError(f"{path}: small: expected a mapping of {sorted(_SMALL_KEYS[suite])} "
                             "with batch_size")
    for name, entry in settings.get("hub_configs", {}).items():
        if not isinstance(entry, dict) or set(entry) != _HUB_KEYS:
            raise SuiteDataError(f"{path}: hub_configs.{name}: expected exactly {sorted(_HUB_KEYS)}")
    for name, divisor in settings.get("divisors", {}).items():
        if not isinstance(divisor, int) or divisor < 1:
            raise SuiteDataError(f"{path}: divisors.{name}: expected a positive int, got {divisor!r}")
    return settings


@functools.lru_cache(maxsize=4)
def suite_data(suite: str, folder: Path = CONFIG_DIR) -> SuiteData:
    """The suite's lists and settings, from ``folder`` (configs/pytorch/)."""
    if suite not in PYTORCH_SUITES:
        raise ValueError(f"not one of PyTorch's suites: {suite!r}")
    sizes = {profile: _read_list(folder / file, sep) for profile, (file, sep) in _LISTS[suite].items()}
    path = folder / f"{suite}.yaml"
    try:
        settings = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise SuiteDataError(f"{path}: invalid YAML: {exc}") from exc
    return SuiteData(suite, sizes, _check(suite, path, settings))


def names(suite: str) -> list[str]:
    return suite_data(suite).names


def batch_size(suite: str, name: str, profile: str) -> int:
    return suite_data(suite).batch_size(name, profile)


# --------------------------------------------------------------------------
# Building


@dataclass(frozen=True)
class Built:
    """A model built on the host, its example inputs and how to draw more."""

    module: Any
    example_inputs: "Inputs"
    make_inputs: Callable[[Any], "Inputs"]  # generator -> fresh inputs of the same recipe


def build(suite: str, name: str, batch_size: int, seed: int, training: bool, profile: str) -> Built:
    """``name`` of ``suite`` built offline (random weights, torch seeded with
    ``seed``), with inputs of ``batch_size`` drawn from a generator of ``seed``."""
    import torch

    data = suite_data(suite)
    if name not in data.names:
        raise ValueError(f"{name!r} is not in PyTorch's {suite} list")
    torch.manual_seed(seed)
    if suite == "huggingface":
        module, recipe = _huggingface(data, name, profile)
    else:
        module, recipe = _timm(data, name, profile, training)
    module.train(training)

    def make_inputs(generator) -> "Inputs":
        return recipe(batch_size, generator)

    return Built(module, make_inputs(torch.Generator().manual_seed(seed)), make_inputs)


def _huggingface(data: SuiteData, name: str, profile: str):
    import transformers

    from benchmarks.models import pytorch_inputs

    settings = data.settings
    if name in settings.get("unbuildable", {}):
        raise Unbuildable(name, settings["unbuildable"][name])
    hub = settings.get("hub_configs", {}).get(name)
    if hub is not None:
        config = getattr(transformers, hub["config_class"])(**hub["values"])
        make = getattr(transformers, hub["auto_class"]).from_config
    else:
        model_cls = getattr(transformers, name, None)
        if model_cls is None:
            raise Unbuildable(name, f"transformers {transformers.__version__} has no class {name} "
                                    "(PyTorch's huggingface.py builds it as a transformers class)")
        config = model_cls.config_class()
        if pytorch_inputs.needs_pad_token(name):
            config.pad_token_id = 0  # as PyTorch's harness: batches above 1 need a pad token
        make = model_cls
    small = profile == "small"
    if small:
        caps = settings["small"]
        for key in caps.get("layer_keys", ()):
            if isinstance(getattr(config, key, None), int):
                setattr(config, key, min(getattr(config, key), caps["layers"]))
    config.use_cache = False  # PyTorch's harness turns the kv-cache off
    model = make(config).float()
    # As PyTorch's harness, after building: dropout read from the config at run time is ~0.
    for attr in dir(model.config):
        if "drop" in attr and isinstance(getattr(model.config, attr, None), float):
            setattr(model.config, attr, 1e-30)
    if hasattr(model.config, "use_cache"):
        model.config.use_cache = False
    seq_len = pytorch_inputs.sequence_length(name)
    if small:
        seq_len = min(seq_len, settings["small"]["seq_len"])
    recipe = functools.partial(pytorch_inputs.huggingface_inputs, name, model.config, seq_len)
    return model, recipe


def _timm(data: SuiteData, name: str, profile: str, training: bool):
    import timm
    from timm.data import resolve_data_config

    from benchmarks.models import pytorch_inputs

    if not timm.is_model(name):
        raise Unbuildable(name, f"timm {timm.__version__} has no model {name}")
    overrides = dict(data.settings["small"].get("overrides", {}).get(name, {})) if profile == "small" else {}
    # As PyTorch's timm_models.py, with pretrained=False: random weights, nothing fetched.
    model = timm.create_model(name, in_chans=3, scriptable=False, num_classes=None, drop_rate=0.0,
                              drop_path_rate=None, drop_block_rate=None, pretrained=False, **overrides)
    input_size = tuple(resolve_data_config({}, model=model, use_test_size=not training)["input_size"])
    if "img_size" in overrides:  # the model's own configuration still names its original size
        input_size = (input_size[0], overrides["img_size"], overrides["img_size"])
    return model, functools.partial(pytorch_inputs.timm_inputs, input_size)
