"""Declarative descriptions of a model and of the inputs of one call.

Offers:

- ``Inputs``: the inputs of one call, positional (``args``) and keyword
  (``kwargs``); ``inputs.call(fn)`` is ``fn(*args, **kwargs)``. It is a pytree
  node, so ``torch.utils._pytree.tree_map`` reaches every tensor inside it.
- ``TensorSpec``: one random input tensor, described without its batch dimension.
- ``ModelSpec``: a built-in model: its builder, its input recipe (positional and
  keyword), the keyword inputs of a training step when they differ (labels),
  and its variants: ``cpu`` (reduced for a 2-core machine) and ``tiny`` (for
  tests). ``spec.variant(profile)`` picks one.

This module imports nothing of the harness: the model families and the suite
both build on it.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn
from torch.utils import _pytree as pytree

# The variants a ModelSpec may have: the accelerator profile runs the full
# model (TorchBench's sizes), "cpu" a reduced one, "tiny" is for tests.
VARIANTS = ("accelerator", "cpu", "tiny")


@dataclass(frozen=True)
class Inputs:
    """The inputs of one call: ``fn(*args, **kwargs)``."""

    args: tuple = ()
    kwargs: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self):
        object.__setattr__(self, "args", tuple(self.args))
        object.__setattr__(self, "kwargs", dict(self.kwargs))

    def call(self, fn: Callable) -> Any:
        return fn(*self.args, **self.kwargs)

    def tensors(self) -> list[torch.Tensor]:
        """Every tensor among the inputs, positional first."""
        return [t for t in pytree.tree_leaves(self) if isinstance(t, torch.Tensor)]

    @classmethod
    def of(cls, value: Any) -> "Inputs":
        """What TorchBench's ``get_module()`` gives as example inputs, as Inputs:
        a dict is keyword inputs, a tuple or list positional ones, anything
        else a single positional input."""
        if isinstance(value, Inputs):
            return value
        if isinstance(value, Mapping):
            return cls((), dict(value))
        if isinstance(value, (tuple, list)):
            return cls(tuple(value))
        return cls((value,))


def _flatten(inputs: Inputs):
    return [inputs.args, inputs.kwargs], None


def _unflatten(children, _context) -> Inputs:
    args, kwargs = children
    return Inputs(args, kwargs)


pytree.register_pytree_node(
    Inputs, _flatten, _unflatten, serialized_type_name="benchmarks.models.spec.Inputs")


def call(fn: Callable, inputs: Inputs | tuple) -> Any:
    """``fn`` on ``inputs``: an ``Inputs``, or a tuple of positional inputs."""
    if isinstance(inputs, Inputs):
        return inputs.call(fn)
    return fn(*inputs)


@dataclass(frozen=True)
class TensorSpec:
    """One model input, described without its batch dimension.

    Integer inputs are drawn uniformly from ``[low, high)``. Floating-point
    inputs are drawn from a standard normal distribution, or uniformly from
    ``[low, high)`` when ``high`` is given. ``batched=False`` makes an input
    whose shape is ``shape`` whatever the batch size (a table shared by the
    batch).
    """

    shape: tuple[int, ...]
    dtype: torch.dtype = torch.float32
    low: float = 0
    high: float | None = None
    batched: bool = True

    def __post_init__(self):
        object.__setattr__(self, "shape", tuple(self.shape))  # accept lists, stay hashable
        integer = not self.dtype.is_floating_point
        if integer and (self.high is None or self.high <= self.low):
            raise ValueError(f"integer TensorSpec needs low < high, got [{self.low}, {self.high})")
        if not integer and self.high is not None and self.high <= self.low:
            raise ValueError(f"uniform TensorSpec needs low < high, got [{self.low}, {self.high})")

    def make(self, batch_size: int, generator: torch.Generator | None = None) -> torch.Tensor:
        """A random tensor of shape ``(batch_size, *shape)`` (``shape`` if not batched)."""
        size = (batch_size, *self.shape) if self.batched else self.shape
        if not self.dtype.is_floating_point:
            return torch.randint(int(self.low), int(self.high), size, generator=generator,
                                 dtype=self.dtype)
        if self.high is None:
            return torch.randn(size, generator=generator, dtype=self.dtype)
        uniform = torch.rand(size, generator=generator, dtype=self.dtype)
        return uniform * (self.high - self.low) + self.low


@dataclass(frozen=True)
class ModelSpec:
    """A built-in model: how to build it (with random weights) and what it takes.

    ``inputs`` are the positional inputs, ``kwargs`` the keyword ones.
    ``train_kwargs``, when set, replaces ``kwargs`` in a training step (a
    Hugging Face model then takes ``labels`` and computes its own loss).
    ``cpu`` is a smaller variant for the cpu profile (fewer layers, shorter
    sequences; configs/models.yaml says what changed), ``tiny`` a few-layer
    variant with the same structure for quick tests; ``None`` means the model
    itself.
    """

    name: str
    family: str
    build: Callable[[], nn.Module]
    inputs: tuple[TensorSpec, ...] = ()
    kwargs: Mapping[str, TensorSpec] = field(default_factory=dict)
    train_kwargs: Mapping[str, TensorSpec] | None = None
    cpu: ModelSpec | None = None
    tiny: ModelSpec | None = None

    def variant(self, profile: str) -> ModelSpec:
        """The spec to build for a device profile ("accelerator", "cpu") or "tiny"."""
        if profile not in VARIANTS:
            raise ValueError(f"unknown variant {profile!r}; choose from: {', '.join(VARIANTS)}")
        if profile == "tiny":
            return self.tiny or self.cpu or self
        if profile == "cpu":
            return self.cpu or self
        return self

    def make_inputs(self, batch_size: int, generator: torch.Generator | None = None,
                    training: bool = False) -> Inputs:
        """Random inputs of ``batch_size``, drawn in a fixed order from ``generator``."""
        kwargs = self.train_kwargs if training and self.train_kwargs is not None else self.kwargs
        return Inputs(tuple(spec.make(batch_size, generator) for spec in self.inputs),
                      {key: spec.make(batch_size, generator) for key, spec in kwargs.items()})
