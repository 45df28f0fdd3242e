"""The rows of a model's results, as the parent and the worker both build them.

``row_base`` / ``row_bases``: the columns every row of a model shares before
it is loaded (the experiment's key, the settings, what ran it); ``failed``:
the rows of a model or runner that failed, with its status and one-line
reason; ``ModelResult``: what a worker hands back. Nothing here imports torch,
so the parent that schedules workers doesn't either.
"""
from __future__ import annotations

import json
import sys
import traceback
from dataclasses import dataclass, field

from benchmarks.run import provenance
from benchmarks.results import store
from benchmarks.run.affinity import allowed_cpus, format_cpus, thread_count
from benchmarks.run.config import PYTORCH_SUITES, RunConfig


@dataclass
class ModelResult:
    rows: list[dict] = field(default_factory=list)
    samples: list[dict] = field(default_factory=list)
    graph_breaks: list[dict] = field(default_factory=list)  # store.GRAPH_BREAK_COLUMNS
    # The whole story of each failed row the CSV tells in one line:
    # {"backend", "status", "traceback"} (``failure``); the parent keeps them
    # in the model's log.
    failures: list[dict] = field(default_factory=list)

    def to_json(self) -> str:
        return json.dumps(store.plain({"rows": self.rows, "samples": self.samples,
                                         "graph_breaks": self.graph_breaks, "failures": self.failures}))

    @classmethod
    def from_json(cls, data: dict) -> "ModelResult":
        return cls(data["rows"], data["samples"], data.get("graph_breaks", []), data.get("failures", []))

    def fail(self, row: dict, err: BaseException) -> None:
        """Add the failed ``row`` and the traceback of ``err``, its cause."""
        self.rows.append(row)
        self.failures.append(failure(row, err))


def batch_sizes(config: RunConfig, name: str) -> tuple[int | None, ...]:
    """The batch sizes ``name`` runs at: the cycle of --batch-sizes, or the
    one of --batch-size or configs/ (None: TorchBench's own default)."""
    if config.batch_sizes:
        return config.batch_sizes
    settings = config.settings()
    if config.batch_size is None and config.suite in PYTORCH_SUITES and not settings.lists(name):
        return (pytorch_batch_size(config.suite, name, config.profile),)
    if config.batch_size or config.suite != "torchbench" or settings.lists(name):
        return (config.batch_size or settings.for_model(name).batch_size(config.profile, config.training),)
    return (None,)  # TorchBench's own default; the row gets the size it chose


def pytorch_batch_size(suite: str, name: str, profile: str) -> int:
    """The batch size PyTorch's list gives ``name`` of its ``suite`` in ``profile``."""
    # Here, not at the top: benchmarks.models imports torch, this module must not.
    from benchmarks.models import pytorch_suites

    return pytorch_suites.batch_size(suite, name, profile)


def row_base(config: RunConfig, name: str, batch_size: int | None = None) -> dict:
    """The columns every row of ``name`` at ``batch_size`` (default: the first
    it runs at) shares, before the model is loaded: the experiment's key and
    what ran it."""
    return {
        **config.experiment.row(), "name": name,
        "batch_size": batch_size or batch_sizes(config, name)[0], "timestamp": provenance.timestamp(),
        **provenance.versions(), **provenance.machine(),
        **({"processes": config.processes} if config.measure == "performance" else {}),
        "threads": thread_count(config), "cpu_affinity": format_cpus(allowed_cpus(config)),
        **({"min_repeat": config.min_repeat, "max_time_s": config.max_time,
            "target_ci": config.target_ci} if config.adaptive else {}),
    }


def row_bases(config: RunConfig, name: str) -> list[dict]:
    """``row_base`` at each batch size ``name`` runs at."""
    return [row_base(config, name, b) for b in batch_sizes(config, name)]


def join(parts: list["ModelResult"]) -> "ModelResult":
    joined = ModelResult()
    for part in parts:
        joined.rows += part.rows
        joined.samples += part.samples
        joined.graph_breaks += part.graph_breaks
        joined.failures += part.failures
    return joined


def failed(config: RunConfig, base: dict | list[dict], status: str, error) -> ModelResult:
    """One row per backend (and batch size, given several bases), all with
    ``status`` (an accuracy run's verdict too: ``store.measures``)."""
    line = error if isinstance(error, str) else first_line(error)
    bases = base if isinstance(base, list) else [base]
    verdict = {"accuracy": status} if config.measure == "accuracy" else {}
    rows = [{**b, "backend": backend, "status": status, "error": line, **verdict}
            for b in bases for backend in config.backends]
    causes = [failure(row, error) for row in rows] if isinstance(error, BaseException) else []
    return ModelResult(rows=rows, failures=causes)


def failure(row: dict, err: BaseException) -> dict:
    """The failed ``row``'s backend and status with the full traceback of
    ``err`` (chained causes included), for the model's log."""
    text = "".join(traceback.format_exception(type(err), err, err.__traceback__))
    return {"backend": row["backend"], "batch_size": row.get("batch_size"), "status": row["status"],
            "traceback": text}


def first_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {text[0] if text else ''}".strip().rstrip(":")


# Out-of-memory errors that arrive as a plain RuntimeError: XLA's, and the
# host allocator's ("DefaultCPUAllocator: can't allocate memory").
_OOM_MESSAGES = ("RESOURCE_EXHAUSTED", "can't allocate memory", "not enough memory")


def failure_status(err: BaseException, default: str) -> str:
    torch = sys.modules.get("torch")  # an error of torch's means torch is loaded
    oom = (MemoryError, *((torch.OutOfMemoryError,) if torch is not None else ()))
    if isinstance(err, oom) or any(m in str(err) for m in _OOM_MESSAGES):
        return "OOM"
    return default
