"""Compiler metrics per runner: XLA compiles and execution, dynamo graphs.

A ``Probe`` snapshots torch_xla's metrics and dynamo's counters before and
after every step of its runner (outside the timer), so that with runners
interleaved each delta is still attributed to the runner that caused it.
``summary()`` turns the deltas into row fields; a value that was not observed
stays ``None`` (an empty cell), never a made-up number.
"""
from __future__ import annotations

import sys
import time
from collections import Counter

from . import stats

_XLA_COUNTERS = ("UncachedCompile", "CachedCompile")
_XLA_TIMES = ("CompileTime", "ExecuteTime")  # nanoseconds


def _snapshot(xla: bool) -> Counter:
    from torch._dynamo.utils import counters

    snap = Counter()
    snap["graphs"] = counters["stats"]["unique_graphs"]
    snap["graph_breaks"] = sum(counters["graph_break"].values())
    if xla and "torch_xla" in sys.modules:
        import torch_xla.debug.metrics as met

        for name in met.counter_names():
            if name in _XLA_COUNTERS or name.startswith("aten::"):
                snap[name] = met.counter_value(name)
        for name in _XLA_TIMES:
            data = met.metric_data(name)
            if data:
                snap[f"{name}.n"], snap[f"{name}.ns"] = data[0], data[1]
    return snap


class Probe:
    """Collects the metrics of one runner, phase by phase."""

    def __init__(self, xla: bool):
        self.xla = xla
        self.phases: dict[str, Counter] = {"first": Counter(), "warmup": Counter(), "timed": Counter()}
        self.host_s: list[float] = []  # time until the call returned, before the device sync
        self.timed_steps = 0
        self._before: Counter | None = None
        self._host_start = 0.0

    def before(self) -> None:
        self._before = _snapshot(self.xla)

    def after(self, phase: str) -> None:
        delta = _snapshot(self.xla)
        delta.subtract(self._before)
        self.phases[phase].update(delta)
        if phase == "timed":
            self.timed_steps += 1
        elif self.host_s:
            self.host_s.pop()  # keep host times of timed steps only

    def host_started(self) -> None:
        self._host_start = time.perf_counter()

    def host_done(self) -> None:
        self.host_s.append(time.perf_counter() - self._host_start)

    def summary(self) -> dict:
        first, timed = self.phases["first"], self.phases["timed"]
        later = self.phases["warmup"] + timed
        fields = {
            "dynamo_graphs": first["graphs"] + later["graphs"],
            "graph_breaks": first["graph_breaks"] + later["graph_breaks"],
            "recompiles": later["graphs"],
        }
        if not self.xla:
            return fields
        n = self.timed_steps
        fields.update({
            "first_call_compiles": first["UncachedCompile"] + first["CachedCompile"],
            "first_call_compile_s": first["CompileTime.ns"] / 1e9,
            "first_call_execute_s": first["ExecuteTime.ns"] / 1e9,
            "compiles_per_iter": (timed["UncachedCompile"] + timed["CachedCompile"]) / n if n else None,
            "execute_ms": timed["ExecuteTime.ns"] / 1e6 / n if n else None,
            # XLA graphs run per iteration: one per traced-once partition.
            "executes_per_iter": timed["ExecuteTime.n"] / n if n else None,
            "host_ms": stats.median(self.host_s) * 1e3 if self.host_s else None,
            "fallback_ops": " ".join(sorted(
                k.removeprefix("aten::") for k, v in (first + later).items()
                if k.startswith("aten::") and v > 0)),
        })
        return fields
