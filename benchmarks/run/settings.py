"""Per-model settings (batch sizes, accuracy tolerances, skips) from configs/models.yaml.

``load_settings()`` reads and validates the file once into frozen dataclasses, and
``Settings.for_model(name)`` answers for any model: the keys a model's entry leaves
out, and models the file doesn't list, get the file's ``defaults``. Every problem in
the file is a ``ConfigError`` whose one-line message names the file and the key.

Batch sizes are per device profile (``PROFILES``): ``accelerator`` holds TorchBench's
defaults, ``cpu`` sizes small enough for a 2-core machine.
"""
from __future__ import annotations

import functools

from collections.abc import Callable
from dataclasses import MISSING, dataclass, fields, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, NamedTuple

import yaml

DEFAULT_PATH = Path(__file__).resolve().parents[2] / "configs" / "models.yaml"


class ConfigError(ValueError):
    """A settings file that can't be used; the message names the file and the key."""

    def __init__(self, path: Path | str, key: str, problem: str):
        self.path, self.key, self.problem = path, key, problem
        super().__init__(f"{path}: {key}: {problem}" if key else f"{path}: {problem}")

    def __reduce__(self):
        # Exceptions pickle as cls(*args); rebuild from our own arguments instead so
        # that the error survives being sent back from a worker process.
        return type(self), (self.path, self.key, self.problem)


@dataclass(frozen=True)
class BatchSizes:
    """A batch size for each device profile."""

    accelerator: int  # TorchBench's default
    cpu: int  # small enough for a 2-core machine


@dataclass(frozen=True)
class Tolerances:
    """Accuracy tolerances: of fp32 runs on the host and on an XLA device, and
    of the lower precisions wherever they run (their rounding dwarfs the
    host/XLA difference). The lower precisions' defaults here serve files
    that predate them; configs/models.yaml sets its own."""

    host: float
    xla: float
    bf16: float = 5.0e-2
    fp16: float = 1.0e-2
    amp: float = 5.0e-2


@dataclass(frozen=True)
class Skips:
    """Why the model isn't run in a mode, for each mode it isn't run in."""

    inference: str | None = None
    training: str | None = None


def _names(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in fields(cls))


PROFILES = _names(BatchSizes)
MODES = _names(Skips)


@dataclass(frozen=True)
class ModelSettings:
    """The settings of one model."""

    name: str
    batch_sizes: BatchSizes  # for inference
    train_batch_sizes: BatchSizes
    tolerances: Tolerances
    cosine: bool  # judge accuracy by cosine similarity >= 0.99 instead
    skips: Skips
    # Why inference runs with autograd on (a forward that takes gradients
    # itself, as maml's adaptation step does); None: under no_grad.
    grad_in_inference: str | None = None
    # The entry gives batch sizes: it sets one, or it is empty (``name:``
    # alone, every default); a TorchBench model runs at them, one whose
    # entry sets only other keys at TorchBench's own.
    batch_listed: bool = False

    def batch_size(self, profile: str, training: bool = False) -> int:
        if profile not in PROFILES:
            raise ValueError(f"unknown profile {profile!r}; choose from: {', '.join(PROFILES)}")
        return getattr(self.train_batch_sizes if training else self.batch_sizes, profile)

    def tolerance(self, xla: bool, dtype: str = "fp32") -> float:
        """The tolerance of ``dtype`` runs on an XLA device (``xla``) or on the host."""
        if dtype != "fp32":
            return getattr(self.tolerances, dtype)
        return self.tolerances.xla if xla else self.tolerances.host

    def skip_reason(self, training: bool) -> str | None:
        """Why the model isn't run in this mode, or None when it is."""
        return self.skips.training if training else self.skips.inference


@dataclass(frozen=True)
class Settings:
    """The settings of all models, as read from ``path``."""

    path: Path
    defaults: ModelSettings  # what models the file doesn't list get
    models: dict[str, ModelSettings]
    text: str = ""  # what the file held when it was read

    def for_model(self, name: str) -> ModelSettings:
        if name in self.models:
            return self.models[name]
        return replace(self.defaults, name=name)

    def lists(self, name: str) -> bool:
        """Whether the file gives ``name`` batch sizes (``batch_listed``): a
        TorchBench model it doesn't runs at TorchBench's own batch size."""
        return name in self.models and self.models[name].batch_listed


class _Key(NamedTuple):
    """What a key of a model entry holds: a value, or a mapping of ``choices`` to values."""

    check: Callable[[Any], bool]
    wants: str  # the check in words, for error messages
    choices: tuple[str, ...] = ()  # the sub-keys, when the value is a mapping
    noun: str = "key"  # what a sub-key is, for error messages


def _positive_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _non_negative_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0


def _reason(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _boolean(value: Any) -> bool:
    return isinstance(value, bool)


_KEYS = MappingProxyType(
    {
        "batch_size": _Key(_positive_int, "a positive int", PROFILES, "profile"),
        "train_batch_size": _Key(_positive_int, "a positive int", PROFILES, "profile"),
        "tolerance": _Key(_non_negative_number, "a non-negative number", _names(Tolerances)),
        "cosine": _Key(_boolean, "true or false"),
        "skip": _Key(_reason, "a reason (a non-empty string)", MODES, "mode"),
        "grad_in_inference": _Key(_reason, "a reason (a non-empty string)"),
    }
)
# train_batch_size, skip and grad_in_inference are per model only: a model without train_batch_size
# trains at its own batch_size, and skipping every model makes no sense.
_DEFAULT_KEYS = ("batch_size", "tolerance", "cosine")
# Sub-keys the defaults may leave out: they have a default of their own.
_OPTIONAL_CHOICES = tuple(f.name for f in fields(Tolerances) if f.default is not MISSING)


def load_settings(path: Path | str | None = None) -> Settings:
    """Read and validate the settings file (configs/models.yaml by default)."""
    path = Path(path) if path is not None else DEFAULT_PATH
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(path, "", f"can't read it: {exc.strerror or exc}") from exc
    except UnicodeDecodeError:
        raise ConfigError(path, "", "can't read it: not UTF-8 text") from None
    return parse_settings(path, text)


@functools.lru_cache(maxsize=8)
def parse_settings(path: Path, text: str) -> Settings:
    """The settings that ``text``, the content of ``path``, gives. A run
    reads the file once and hands the text to its workers (``RunConfig``),
    so every model sees the same version of it."""
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).replace("\n", " ")
        raise ConfigError(path, "", f"invalid YAML{where}: {problem}") from exc

    document = _mapping(document, path, "", ("defaults", "models"))
    defaults = _entry(document.get("defaults", {}), path, "defaults", _DEFAULT_KEYS)
    _check_complete(defaults, path)
    listed = document.get("models")
    models = {}
    for name, raw in _mapping({} if listed is None else listed, path, "models").items():
        if not isinstance(name, str):
            raise ConfigError(path, f"models.{name}", "a model name must be a string")
        # An empty entry (`name:` alone) takes every default.
        entry = _entry({} if raw is None else raw, path, f"models.{name}", tuple(_KEYS))
        models[name] = _model_settings(name, defaults, entry)
    return Settings(path, _model_settings("", defaults, {}), models, text)


def _model_settings(name: str, defaults: dict, entry: dict) -> ModelSettings:
    batch_sizes = {**defaults["batch_size"], **entry.get("batch_size", {})}
    return ModelSettings(
        name=name,
        batch_sizes=BatchSizes(**batch_sizes),
        # A model without train_batch_size trains at its own batch_size.
        train_batch_sizes=BatchSizes(**{**batch_sizes, **entry.get("train_batch_size", {})}),
        tolerances=Tolerances(**{**defaults["tolerance"], **entry.get("tolerance", {})}),
        cosine=entry.get("cosine", defaults["cosine"]),
        skips=Skips(**entry.get("skip", {})),
        grad_in_inference=entry.get("grad_in_inference"),
        batch_listed=not entry or "batch_size" in entry or "train_batch_size" in entry,
    )


def _entry(raw: Any, path: Path, where: str, allowed: tuple[str, ...]) -> dict:
    """Check one model entry (or the defaults): known keys holding the right types."""
    entry = _mapping(raw, path, where, allowed)
    for key, value in entry.items():
        spec = _KEYS[key]
        if spec.choices:
            values = _mapping(value, path, f"{where}.{key}", spec.choices, spec.noun)
            named = [(f"{where}.{key}.{sub}", item) for sub, item in values.items()]
        else:
            named = [(f"{where}.{key}", value)]
        for name, item in named:
            if not spec.check(item):
                raise ConfigError(path, name, f"expected {spec.wants}, got {item!r}{_hint(item)}")
    return entry


def _check_complete(defaults: dict, path: Path) -> None:
    """The defaults must answer everything a model's entry may leave out."""
    problem = "missing; the defaults must set it"
    for key in _DEFAULT_KEYS:
        if key not in defaults:
            raise ConfigError(path, f"defaults.{key}", problem)
        for choice in _KEYS[key].choices:
            if choice not in defaults[key] and choice not in _OPTIONAL_CHOICES:
                raise ConfigError(path, f"defaults.{key}.{choice}", problem)


def _mapping(
    raw: Any, path: Path, where: str, allowed: tuple[str, ...] = (), noun: str = "key"
) -> dict:
    """``raw``, checked to be a mapping that (if ``allowed`` is given) uses only those keys."""
    if not isinstance(raw, dict):
        raise ConfigError(path, where, f"expected a mapping, got {raw!r}")
    for key in raw:
        if allowed and key not in allowed:
            name = f"{where}.{key}" if where else str(key)
            raise ConfigError(path, name, f"unknown {noun}; expected one of: {', '.join(allowed)}")
    return raw


def _hint(value: Any) -> str:
    # YAML 1.1 reads 1e-4 (no dot) as a string; say so rather than leave people puzzled.
    if isinstance(value, str) and "e" in value.lower():
        try:
            float(value)
        except ValueError:
            return ""
        return " (YAML reads a float without a dot as a string: write 1.0e-4)"
    return ""
