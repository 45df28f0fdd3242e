"""The models to benchmark, loaded on the host together with their inputs.

Offers:

- five suites (``SUITES``): ``"seed"`` (the ten models of the first
  experiment), ``"builtin"`` (every model of our registry,
  ``benchmarks.models.MODELS``), ``"torchbench"`` (the TorchBench package
  ``torchbenchmark``, from a pytorch/benchmark checkout on ``sys.path``),
  and PyTorch's own ``"huggingface"`` and ``"timm_models"`` (every model of
  PyTorch's list files, built offline: ``benchmarks.models.pytorch_suites``);
- ``Benchmark``: a loaded model on the host, with its example inputs and fresh
  random inputs of the same kind (``Inputs``: positional and keyword);
- ``list_models``, ``resolve``, ``get_spec`` and ``load``;
- errors: ``UnknownModelError`` and ``TorchBenchUnavailableError`` (both
  ValueErrors: bad user input), and ``ModelUnavailableError``, whose
  ``status`` says why a TorchBench model can't run here: ``not_installed``
  (a missing dependency, data file or download) or ``unsupported`` (the model
  raises ``NotImplementedError`` for this device, mode or batch size).

TorchBench fixes its own weights and example inputs: ``BenchmarkModel``
seeds 1337 whatever ``--seed`` says. ``load`` undoes the side effect that
comes with it (TorchBench replaces ``torch.manual_seed`` for the whole process
with a function that ignores its argument), so ``--seed`` still governs
everything after the build: the inputs drawn by ``random_inputs`` and the
random numbers of the runs.
"""
from __future__ import annotations

import difflib
import importlib
import os
import urllib.error
from collections.abc import Callable, Iterable
from functools import partial
from types import ModuleType

import torch
from torch import nn
from torch.utils import _pytree as pytree

from benchmarks.models.spec import Inputs, ModelSpec, TensorSpec
from benchmarks.models import pytorch_suites
from benchmarks.run.config import PYTORCH_SUITES, SUITES

__all__ = [
    "SUITES", "Benchmark", "Inputs", "ModelSpec", "TensorSpec", "UnknownModelError",
    "TorchBenchUnavailableError", "ModelUnavailableError", "list_models", "resolve",
    "get_spec", "load",
]

NOT_INSTALLED = "not_installed"
UNSUPPORTED = "unsupported"


class UnknownModelError(ValueError):
    """A model name that the suite doesn't have; the message suggests close names."""

    def __init__(self, name: str, known: Iterable[str]):
        self.name = name
        self.known = tuple(sorted(known))
        # Match case-insensitively so that "bert_pytorch" finds "BERT_pytorch".
        by_lower = {k.lower(): k for k in self.known}
        self.suggestions = [by_lower[m] for m in difflib.get_close_matches(name.lower(), by_lower)]
        if self.suggestions:
            hint = f"did you mean: {', '.join(self.suggestions)}?"
        else:
            hint = f"known models: {', '.join(self.known)}"
        super().__init__(f"unknown model {name!r}; {hint}")

    def __reduce__(self):
        # Exceptions pickle as cls(*args); rebuild from our own arguments instead so
        # that the error survives being sent back from a worker process.
        return type(self), (self.name, self.known)


class TorchBenchUnavailableError(ValueError):
    """The "torchbench" suite was asked for but ``torchbenchmark`` can't be imported."""


class ModelUnavailableError(Exception):
    """A model that can't run here, for a reason the user can act on.

    ``status`` is ``"not_installed"`` or ``"unsupported"``; ``reason`` is one line.
    """

    def __init__(self, name: str, status: str, reason: str):
        self.name, self.status, self.reason = name, status, reason
        super().__init__(f"{name}: {reason}")

    def __reduce__(self):
        return type(self), (self.name, self.status, self.reason)


class Benchmark:
    """A model loaded on the host (in eval mode), with its inputs.

    Attributes: ``name``, ``module`` and ``batch_size`` (the one the model really
    uses, which TorchBench may have chosen itself).
    """

    def __init__(
        self,
        name: str,
        module: nn.Module,
        batch_size: int,
        example_inputs: Inputs,
        make_inputs: Callable[[torch.Generator], Inputs],
    ):
        self.name = name
        self.module = module.eval()
        self.batch_size = batch_size
        self._example_inputs = Inputs.of(example_inputs)
        self._make_inputs = make_inputs

    def example_inputs(self) -> Inputs:
        """The inputs made at load time: the same values for the same seed.

        Every call returns the same tensors; clone them before changing them in place.
        """
        return self._example_inputs

    def random_inputs(self, generator: torch.Generator) -> Inputs:
        """Fresh inputs with the structure, shapes and dtypes of ``example_inputs()``.

        Integer inputs stay within their valid range (token ids stay in the vocabulary).
        """
        return self._make_inputs(generator)

    def __repr__(self) -> str:
        return f"Benchmark({self.name!r}, batch_size={self.batch_size})"


def list_models(suite: str = "builtin") -> list[str]:
    """The names of the suite's models, sorted."""
    suite = _check_suite(suite)
    if suite == "seed":
        from benchmarks.models import SEED_MODELS

        return sorted(SEED_MODELS)
    if suite == "builtin":
        return sorted(_registry())
    if suite in PYTORCH_SUITES:
        return sorted(pytorch_suites.names(suite))
    return sorted(_torchbench_names(_torchbench()))


def resolve(name: str, suite: str = "builtin") -> str:
    """The suite's own spelling of ``name``, matched case-insensitively as
    TorchBench does (``bert_pytorch`` -> ``BERT_pytorch``); raises
    UnknownModelError."""
    known = list_models(suite)
    if name in known:
        return name
    matches = [k for k in known if k.lower() == name.lower()]
    if len(matches) == 1:
        return matches[0]
    raise UnknownModelError(name, known)


def get_spec(name: str) -> ModelSpec:
    """The ModelSpec of a built-in model."""
    registry = _registry()
    if name not in registry:
        raise UnknownModelError(name, registry)
    return registry[name]


def load(name: str, batch_size: int | None, seed: int = 0, suite: str = "builtin", *,
         training: bool = False, profile: str = "cpu") -> Benchmark:
    """Build ``name`` on the host (eval mode), with example inputs of ``batch_size``.

    Built-in models are built with torch seeded by ``seed`` (the same weights
    and inputs from run to run), in the variant of the device ``profile``
    ("cpu": reduced sizes, "accelerator": TorchBench's, "tiny": for tests);
    with ``training``, their inputs are those of a training step (labels
    included).

    A TorchBench model is built as TorchBench's ``Model(test="train"|"eval")``;
    ``batch_size=None`` lets TorchBench choose (as it must for models that
    refuse another size), and ``Benchmark.batch_size`` reports its choice.
    """
    suite = _check_suite(suite)
    if batch_size is not None and (isinstance(batch_size, bool) or not isinstance(batch_size, int)
                                   or batch_size < 1):
        raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
    if suite == "torchbench":
        return _load_torchbench(name, batch_size, seed, training)
    if batch_size is None:
        raise ValueError(f"suite {suite!r} needs a batch size")
    known = list_models(suite)
    if name not in known:
        raise UnknownModelError(name, known)
    if suite in PYTORCH_SUITES:
        return _load_pytorch_suite(suite, name, batch_size, seed, training, profile)
    return _load_builtin(name, batch_size, seed, training, profile)


def _load_pytorch_suite(suite: str, name: str, batch_size: int, seed: int, training: bool,
                        profile: str) -> Benchmark:
    try:
        built = pytorch_suites.build(suite, name, batch_size, seed, training, profile)
    except pytorch_suites.Unbuildable as err:  # a row that says why: model_fail_to_load
        raise ModelUnavailableError(name, "model_fail_to_load", err.reason) from err
    return Benchmark(name, built.module, batch_size, built.example_inputs, built.make_inputs)


def _load_builtin(name: str, batch_size: int, seed: int, training: bool, profile: str) -> Benchmark:
    spec = get_spec(name).variant(profile)
    torch.manual_seed(seed)
    module = spec.build()
    # A generator of their own keeps the inputs independent of how many random
    # numbers the build consumed.
    generator = torch.Generator().manual_seed(seed)
    make_inputs = partial(spec.make_inputs, batch_size, training=training)
    return Benchmark(name, module, batch_size, make_inputs(generator), make_inputs)


# --------------------------------------------------------------------------
# TorchBench


def _load_torchbench(name: str, batch_size: int | None, seed: int, training: bool) -> Benchmark:
    package = _torchbench()
    name = resolve(name, "torchbench")
    manual_seed = torch.manual_seed
    try:
        model = _build_torchbench(package, name, batch_size, training)
        module, example = model.get_module()
    except Exception as err:  # noqa: BLE001 - sorted into our statuses
        raise _classify(name, err) from err
    finally:
        # BenchmarkModel replaces torch.manual_seed with one that always seeds
        # 1337, for the whole process; put ours back, then seed what follows.
        torch.manual_seed = manual_seed
    torch.manual_seed(seed)
    inputs = Inputs.of(example)
    return Benchmark(name, module, model.batch_size, inputs, partial(_randomize_like, inputs))


def _build_torchbench(package: ModuleType, name: str, batch_size: int | None, training: bool):
    model_class = package.load_model_by_name(name)
    if model_class is None:  # a model folder without a Model class
        raise RuntimeError(f"TorchBench's {name} defines no Model class")
    if not getattr(model_class, "ALLOW_CUSTOMIZE_BSIZE", True):
        # Such models raise NotImplementedError for any size but their own.
        batch_size = None
    return model_class(test="train" if training else "eval", device="cpu",
                       batch_size=batch_size, extra_args=[])


def _randomize_like(examples: Inputs, generator: torch.Generator) -> Inputs:
    """Fresh values like ``examples``: floats from randn, integers within the
    example's [min, max]; anything else as it is: bool masks, constant tensors
    (every element equal: an all-ones attention mask, a scale), empty tensors
    and non-tensors."""

    def like(value: torch.Tensor) -> torch.Tensor:
        if value.numel() == 0 or value.dtype == torch.bool or value.is_complex():
            return value
        if bool((value == value.flatten()[0]).all()):
            return value
        if value.is_floating_point():
            return torch.randn(value.shape, generator=generator, dtype=value.dtype)
        low, high = int(value.min()), int(value.max()) + 1
        return torch.randint(low, high, value.shape, generator=generator, dtype=value.dtype)

    return pytree.tree_map_only(torch.Tensor, like, examples)


# Errors that mean "something is missing here", not "the model is broken".
_MISSING = (ImportError, FileNotFoundError, urllib.error.URLError, ConnectionError)
# What transformers raises offline when a config or weights are not cached.
_OFFLINE_MESSAGES = ("couldn't connect to", "offline mode")


def _classify(name: str, err: BaseException) -> BaseException:
    """A TorchBench model's load or build error, as ModelUnavailableError when
    the user can fix it by installing something (or the model can't run here
    at all); other errors are kept as they are (``model_fail_to_load``)."""
    line = " ".join(f"{type(err).__name__}: {err}".split())
    if isinstance(err, NotImplementedError):
        return ModelUnavailableError(name, UNSUPPORTED, line)
    if isinstance(err, _MISSING) or (isinstance(err, OSError)
                                     and any(m in str(err) for m in _OFFLINE_MESSAGES)):
        hint = ("install the model's requirements and data in the TorchBench checkout "
                f"(python install.py {name}), with network access once")
        return ModelUnavailableError(name, NOT_INSTALLED, f"{line}; {hint}")
    return err


def _torchbench_names(package: ModuleType) -> list[str]:
    # _list_model_paths lists the model folders without importing them.
    return [os.path.basename(path) for path in package._list_model_paths()]


def _torchbench() -> ModuleType:
    try:
        package = importlib.import_module("torchbenchmark")
    except ImportError as exc:
        raise TorchBenchUnavailableError(
            "suite 'torchbench' needs the TorchBench package 'torchbenchmark', which can't be "
            f"imported ({exc}); put a pytorch/benchmark checkout on PYTHONPATH or pass "
            "--torchbench-dir, or use suite 'builtin'"
        ) from exc
    missing = [f for f in ("_list_model_paths", "load_model_by_name") if not hasattr(package, f)]
    if missing:
        raise TorchBenchUnavailableError(
            f"the 'torchbenchmark' package at {getattr(package, '__file__', '?')} lacks "
            f"{', '.join(missing)}: not a pytorch/benchmark checkout")
    return package


# --------------------------------------------------------------------------


def _registry() -> dict[str, ModelSpec]:
    from benchmarks.models import MODELS

    return MODELS


def _check_suite(suite: str) -> str:
    if suite not in SUITES:
        raise ValueError(f"unknown suite {suite!r}; choose from: {', '.join(SUITES)}")
    return suite
