"""The timing loop: a timed first call, warm-up, then interleaved repeats.

``measure(contenders, draw_inputs, warmup=..., repeat=...)`` runs every contender
(the baseline and each backend) and returns, per contender, its first-call time
and its timed samples, or the error that stopped it. Nothing here knows what
a contender runs: placement builds contenders, this module only times them.

* The first call is timed on its own: for a compiled backend it is trace plus
  compile (``compilation_latency``), for the lazy baseline its first compile.
* Repeats interleave the contenders, so frequency scaling and load from other
  processes hit all of them alike, in a Williams design (``turn_order``):
  over a cycle of repeats every contender follows every other equally often
  and takes every place equally often, so what a contender leaves behind
  (caches, the allocator, a thread still winding down) favours none.
* With ``randomize``, fresh inputs are drawn and placed before each repeat,
  outside the timer.
* With several ``shapes`` (a cycle of batch sizes), each shape gets its own
  warm-up, whose first call is timed alone (what a new shape costs: a
  recompile, a new executable), and every repeat runs the whole cycle, each
  shape in turn: every shape gets ``repeat`` samples, kept apart.
* Adaptive repeats (with ``max_time``), as pyperf and Google Benchmark
  calibrate: after ``min_repeat`` repeats, the loop asks ``enough(timings)``
  after each repeat and stops once it says yes (the caller's precision target
  is met), once ``max_time`` seconds of repeats have passed, or after
  ``repeat`` repeats; ``Timings.stop`` says which. Without ``max_time``,
  exactly ``repeat`` repeats run (``stop`` is ``"fixed"``).
"""
from __future__ import annotations

import gc
import statistics
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Hashable, Sequence


def _williams_rows(n: int) -> list[list[int]]:
    """The orders of a Williams design for ``n`` items: the first
    0, 1, n-1, 2, n-2, ..., each next one it shifted by one, and for odd
    ``n`` their reverses too (an odd square cannot balance alone)."""
    first = [0] + [(k + 1) // 2 if k % 2 else n - k // 2 for k in range(1, n)]
    rows = [[(x + j) % n for x in first] for j in range(n)]
    return rows + [row[::-1] for row in rows] if n % 2 else rows


def turn_order(items: Sequence, i: int) -> list:
    """``items`` in the order of round ``i`` of a Williams design: over any
    ``n`` consecutive rounds (``2n`` for an odd number ``n`` of items) each
    item directly follows each other item equally often and takes each place
    equally often. Plain rotation (ABC BCA CAB) takes each place equally
    often but lets B follow A in two rounds of three and A follow B in none."""
    if len(items) < 2:
        return list(items)
    rows = _williams_rows(len(items))
    return [items[x] for x in rows[i % len(rows)]]


@dataclass
class Contender:
    """One way of running the model: ``prepare`` places host inputs where this
    contender needs them (untimed); ``step`` runs one iteration and returns only
    once the device is done."""

    name: str
    step: Callable[[tuple], Any]
    prepare: Callable[[tuple], tuple] = lambda inputs: inputs
    probe: Any = None  # a probes.Probe, told of each step outside the timer
    # ``run(inputs, n)``: n iterations back to back, the device waited for
    # once at the end (--iterations-per-run); None: n calls of ``step``.
    run: Callable[[tuple, int], Any] | None = None


@dataclass
class Timings:
    """One runner's times. ``first_call_s`` / ``samples_s`` are those of the
    first shape (the only one, without a cycle); ``first_calls_s`` and
    ``shape_samples_s`` hold every shape's."""

    first_calls_s: dict[Hashable, float] = field(default_factory=dict)
    shape_samples_s: dict[Hashable, list[float]] = field(default_factory=dict)
    error: BaseException | None = None
    # Why the repeats ended: "fixed" (the asked number), "target" (precise
    # enough), "time" (max_time spent) or "max" (the most repeats ran).
    stop: str = "fixed"

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def first_call_s(self) -> float | None:
        return next(iter(self.first_calls_s.values()), None)

    @property
    def samples_s(self) -> list[float]:
        return next(iter(self.shape_samples_s.values()), [])

    def at(self, shape: Hashable) -> "Timings":
        """The times of one shape, as a single-shape Timings."""
        return Timings({shape: self.first_calls_s[shape]} if shape in self.first_calls_s else {},
                       {shape: list(self.shape_samples_s.get(shape, []))}, self.error, self.stop)


def measure(
    contenders: list[Contender],
    draw_inputs: Callable[[int, Hashable], Any],
    *,
    warmup: int,
    repeat: int,
    randomize: bool = False,
    shapes: Sequence[Hashable] = (None,),
    clock: Callable[[], float] = time.perf_counter,
    max_time: float | None = None,
    min_repeat: int = 1,
    enough: Callable[[dict[str, Timings]], bool] | None = None,
    iterations_per_run: int = 1,
) -> dict[str, Timings]:
    """Time ``contenders``; ``draw_inputs(i, shape)`` gives the host inputs of
    draw ``i`` at ``shape`` (draw 0: warm-up and, without ``randomize``,
    every repeat). ``repeat`` is the number of repeats, or with ``max_time``
    the most (see the module's account of adaptive repeats).

    A contender that raises is stopped and keeps its error; the others go on.
    ``iterations_per_run``: each timed sample runs that many iterations back
    to back before the device is waited for (as PyTorch's harness times
    them, so that on XLA one iteration's tracing overlaps the last one's
    execution); a sample is their time divided by that number.
    """
    shapes = list(shapes)
    timings = {r.name: Timings(shape_samples_s={s: [] for s in shapes}) for r in contenders}
    live = list(contenders)
    placed = {}
    for shape in shapes:
        placed[shape] = _place(live, draw_inputs(0, shape), timings)
        live = _alive(live, timings)
    for shape in shapes:
        for i in range(max(warmup, 1)):
            for r in live:
                call = "first" if i == 0 else "warmup"
                t = _timed(r, placed[shape][r.name], clock, timings[r.name], call, shape)
                if i == 0 and t is not None:
                    timings[r.name].first_calls_s[shape] = t
            live = _alive(live, timings)
    stop = "fixed" if max_time is None else "max"
    started = clock()
    for i in range(repeat):
        if max_time is not None and i >= min_repeat:
            if enough is not None and enough(timings):
                stop = "target"
                break
            if clock() - started >= max_time:
                stop = "time"
                break
        for shape in shapes:
            if randomize:
                placed[shape] = _place(live, draw_inputs(i + 1, shape), timings)
                live = _alive(live, timings)
            for r in turn_order(live, i):
                t = _timed(r, placed[shape][r.name], clock, timings[r.name], "timed", shape,
                           iterations_per_run)
                if t is not None:
                    timings[r.name].shape_samples_s[shape].append(t)
            live = _alive(live, timings)
    else:
        # The loop ran out: with max_time, the last repeat may also have met
        # the target; say so rather than "max".
        if max_time is not None and repeat >= min_repeat and enough is not None and enough(timings):
            stop = "target"
    for timing in timings.values():
        timing.stop = stop
    return timings


def _alive(contenders, timings) -> list[Contender]:
    return [r for r in contenders if timings[r.name].ok]


def _place(contenders, inputs, timings) -> dict[str, tuple]:
    placed = {}
    for r in contenders:
        try:
            placed[r.name] = r.prepare(inputs)
        except Exception as err:  # noqa: BLE001 - a runner's failure is data
            timings[r.name].error = err
    return placed


def _timed(contender: Contender, inputs, clock, timing: Timings, call: str, shape: Hashable,
           iterations: int = 1) -> float | None:
    """Seconds per iteration of ``iterations`` run back to back."""
    try:
        if contender.probe:
            contender.probe.before()
        start = clock()
        if iterations == 1:
            contender.step(inputs)
        elif contender.run is not None:
            contender.run(inputs, iterations)
        else:
            for _ in range(iterations):
                contender.step(inputs)
        elapsed = (clock() - start) / iterations
        if contender.probe and iterations == 1:
            contender.probe.after(call, shape)
        elif contender.probe:
            contender.probe.after(call, shape, steps=iterations)
        return elapsed
    except Exception as err:  # noqa: BLE001 - a runner's failure is data
        timing.error = err
        return None


def round_robin(variants, repeat: int, calls: int, one_call) -> dict[str, float]:
    """Median of ``one_call(variant)`` per variant over ``repeat`` rounds of
    ``calls`` calls each, in ``turn_order``'s order each round, with the garbage
    collector off: the standalone tools' interleaved timing of variants of
    one piece of work (``benchmarks.tools``), where ``measure`` times a
    model's contenders."""
    samples = {v: [] for v in variants}
    gc.collect()
    gc.disable()
    try:
        for r in range(repeat):
            for v in turn_order(variants, r):
                samples[v] += [one_call(v) for _ in range(calls)]
    finally:
        gc.enable()
    return {v: statistics.median(s) for v, s in samples.items()}
