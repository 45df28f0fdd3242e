"""The models to benchmark, loaded on the host together with their inputs.

Offers:

- ``TensorSpec`` and ``ModelSpec``: declarative descriptions of a model and its
  inputs; the built-in registry (``benchmarks.models.MODELS``) is a dict of them.
- ``Benchmark``: a loaded model in eval mode on the host, with deterministic
  example inputs and fresh random inputs of the same shapes.
- ``load``, ``list_models`` and ``get_spec`` over two suites: ``"builtin"`` (our
  registry) and ``"torchbench"`` (the TorchBench package ``torchbenchmark``, used
  when it is importable).
- ``UnknownModelError`` and ``TorchBenchUnavailableError``, both ValueErrors.
"""
from __future__ import annotations

import difflib
import importlib
import pkgutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import partial
from types import ModuleType
from typing import Any

import torch
from torch import nn

SUITES = ("builtin", "torchbench")


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


@dataclass(frozen=True)
class TensorSpec:
    """One model input, described without its batch dimension.

    Floating-point inputs are drawn from a standard normal distribution; integer
    inputs uniformly from ``[low, high)``.
    """

    shape: tuple[int, ...]
    dtype: torch.dtype = torch.float32
    low: int = 0
    high: int | None = None

    def __post_init__(self):
        object.__setattr__(self, "shape", tuple(self.shape))  # accept lists, stay hashable
        if not self.dtype.is_floating_point and (self.high is None or self.high <= self.low):
            raise ValueError(f"integer TensorSpec needs low < high, got [{self.low}, {self.high})")

    def make(self, batch_size: int, generator: torch.Generator | None = None) -> torch.Tensor:
        """A random tensor of shape ``(batch_size, *shape)``."""
        size = (batch_size, *self.shape)
        if self.dtype.is_floating_point:
            return torch.randn(size, generator=generator, dtype=self.dtype)
        return torch.randint(self.low, self.high, size, generator=generator, dtype=self.dtype)


@dataclass(frozen=True)
class ModelSpec:
    """A built-in model: how to build it (with random weights) and what it takes."""

    name: str
    family: str
    build: Callable[[], nn.Module]
    inputs: tuple[TensorSpec, ...]


class Benchmark:
    """A model loaded on the host in eval mode, with its inputs.

    Attributes: ``name``, ``module`` and ``batch_size`` (the one the model really
    uses, which TorchBench may have overridden).
    """

    def __init__(
        self,
        name: str,
        module: nn.Module,
        batch_size: int,
        example_inputs: tuple[Any, ...],
        make_inputs: Callable[[torch.Generator], tuple[Any, ...]],
    ):
        self.name = name
        self.module = module.eval()
        self.batch_size = batch_size
        self._example_inputs = tuple(example_inputs)
        self._make_inputs = make_inputs

    def example_inputs(self) -> tuple[Any, ...]:
        """The inputs made at load time: the same values for the same seed.

        Every call returns the same tensors; clone them before changing them in place.
        """
        return self._example_inputs

    def random_inputs(self, generator: torch.Generator) -> tuple[Any, ...]:
        """Fresh inputs with the shapes and dtypes of ``example_inputs()``.

        Integer inputs stay within their valid range (token ids stay in the vocabulary).
        """
        return self._make_inputs(generator)

    def __repr__(self) -> str:
        return f"Benchmark({self.name!r}, batch_size={self.batch_size})"


def list_models(suite: str = "builtin") -> list[str]:
    """The names of the suite's models, sorted."""
    if _check_suite(suite) == "builtin":
        return sorted(_registry())
    # TorchBench keeps each model in a package of its own under torchbenchmark.models.
    models = _torchbench_models()
    return sorted(m.name for m in pkgutil.iter_modules(models.__path__) if m.ispkg)


def get_spec(name: str) -> ModelSpec:
    """The ModelSpec of a built-in model."""
    registry = _registry()
    if name not in registry:
        raise UnknownModelError(name, registry)
    return registry[name]


def load(name: str, batch_size: int, seed: int = 0, suite: str = "builtin") -> Benchmark:
    """Build ``name`` on the host in eval mode, with example inputs of ``batch_size``.

    Torch is seeded with ``seed`` before the build, so the weights are the same
    from run to run.
    """
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
    if _check_suite(suite) == "builtin":
        return _load_builtin(name, batch_size, seed)
    return _load_torchbench(name, batch_size, seed)


def _load_builtin(name: str, batch_size: int, seed: int) -> Benchmark:
    spec = get_spec(name)
    torch.manual_seed(seed)
    module = spec.build()
    # A generator of their own keeps the inputs independent of how many random
    # numbers the build consumed.
    generator = torch.Generator().manual_seed(seed)
    make_inputs = partial(_make_inputs, spec.inputs, batch_size)
    return Benchmark(name, module, batch_size, make_inputs(generator), make_inputs)


def _make_inputs(specs: tuple[TensorSpec, ...], batch_size: int, generator: torch.Generator):
    return tuple(spec.make(batch_size, generator) for spec in specs)


def _load_torchbench(name: str, batch_size: int, seed: int) -> Benchmark:
    # Check the name first: importing an arbitrary dotted name is no way to find typos.
    known = list_models("torchbench")
    if name not in known:
        raise UnknownModelError(name, known)
    torch.manual_seed(seed)
    model_module = importlib.import_module(f"torchbenchmark.models.{name}")
    model = model_module.Model(test="eval", device="cpu", batch_size=batch_size)
    module, example_inputs = model.get_module()
    example_inputs = tuple(example_inputs)
    # Some TorchBench models don't allow a custom batch size and keep their own.
    actual_batch_size = getattr(model, "batch_size", None) or batch_size
    return Benchmark(
        name, module, actual_batch_size, example_inputs, partial(_randomize_like, example_inputs)
    )


def _randomize_like(examples: tuple[Any, ...], generator: torch.Generator) -> tuple[Any, ...]:
    """Fresh values like ``examples``: floats from randn, integers within the example's
    [min, max]; anything else (bool masks, empty tensors, non-tensors) as it is."""

    def like(value: Any) -> Any:
        if not isinstance(value, torch.Tensor) or value.numel() == 0:
            return value
        if value.is_floating_point():
            return torch.randn(value.shape, generator=generator, dtype=value.dtype)
        if value.dtype == torch.bool or value.is_complex():
            return value
        low, high = int(value.min()), int(value.max()) + 1
        return torch.randint(low, high, value.shape, generator=generator, dtype=value.dtype)

    return tuple(like(value) for value in examples)


def _registry() -> dict[str, ModelSpec]:
    # Imported here, not at the top: the model modules import ModelSpec from this one.
    from benchmarks.models import MODELS

    return MODELS


def _torchbench_models() -> ModuleType:
    try:
        return importlib.import_module("torchbenchmark.models")
    except ImportError as exc:
        raise TorchBenchUnavailableError(
            "suite 'torchbench' needs the TorchBench package 'torchbenchmark', which can't be "
            f"imported ({exc}); install it from https://github.com/pytorch/benchmark "
            "or use suite 'builtin'"
        ) from exc


def _check_suite(suite: str) -> str:
    if suite not in SUITES:
        raise ValueError(f"unknown suite {suite!r}; choose from: {', '.join(SUITES)}")
    return suite
