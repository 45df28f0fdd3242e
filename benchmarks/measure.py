"""The timing loop: a timed first call, warm-up, then interleaved repeats.

``measure(runners, draw_inputs, warmup=..., repeat=...)`` runs every runner
(the baseline and each backend) and returns, per runner, its first-call time
and its timed samples, or the error that stopped it. Nothing here knows what
a runner runs: placement builds runners, this module only times them.

* The first call is timed on its own: for a compiled backend it is trace plus
  compile (``compilation_latency``), for the lazy baseline its first compile.
* Repeats interleave the runners, so frequency scaling and load from other
  processes hit all of them alike; the order rotates every repeat so that no
  runner always follows the same one.
* With ``randomize``, fresh inputs are drawn and placed before each repeat,
  outside the timer.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable


@dataclass
class Runner:
    """One way of running the model: ``prepare`` places host inputs where this
    runner needs them (untimed); ``step`` runs one iteration and returns only
    once the device is done."""

    name: str
    step: Callable[[tuple], Any]
    prepare: Callable[[tuple], tuple] = lambda inputs: inputs
    probe: Any = None  # a probes.Probe, told of each step outside the timer


@dataclass
class Timings:
    first_call_s: float | None = None
    samples_s: list[float] = field(default_factory=list)
    error: BaseException | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


def measure(
    runners: list[Runner],
    draw_inputs: Callable[[int], tuple],
    *,
    warmup: int,
    repeat: int,
    randomize: bool = False,
    clock: Callable[[], float] = time.perf_counter,
) -> dict[str, Timings]:
    """Time ``runners``; ``draw_inputs(i)`` gives the host inputs of draw ``i``.

    A runner that raises is stopped and keeps its error; the others go on.
    """
    timings = {r.name: Timings() for r in runners}
    live = list(runners)
    placed = _place(live, draw_inputs(0), timings)
    live = [r for r in live if timings[r.name].ok]
    for i in range(max(warmup, 1)):
        for r in live:
            t = _timed(r, placed[r.name], clock, timings[r.name], "first" if i == 0 else "warmup")
            if i == 0 and t is not None:
                timings[r.name].first_call_s = t
        live = [r for r in live if timings[r.name].ok]
    for i in range(repeat):
        if randomize:
            placed = _place(live, draw_inputs(i + 1), timings)
            live = [r for r in live if timings[r.name].ok]
        shift = i % len(live) if live else 0
        for r in live[shift:] + live[:shift]:
            t = _timed(r, placed[r.name], clock, timings[r.name], "timed")
            if t is not None:
                timings[r.name].samples_s.append(t)
        live = [r for r in live if timings[r.name].ok]
    return timings


def _place(runners, inputs, timings) -> dict[str, tuple]:
    placed = {}
    for r in runners:
        try:
            placed[r.name] = r.prepare(inputs)
        except Exception as err:  # noqa: BLE001 - a runner's failure is data
            timings[r.name].error = err
    return placed


def _timed(runner: Runner, inputs: tuple, clock, timing: Timings, phase: str) -> float | None:
    try:
        if runner.probe:
            runner.probe.before()
        start = clock()
        runner.step(inputs)
        elapsed = clock() - start
        if runner.probe:
            runner.probe.after(phase)
        return elapsed
    except Exception as err:  # noqa: BLE001 - a runner's failure is data
        timing.error = err
        return None
