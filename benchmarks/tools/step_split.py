"""Where a compiled training step loses to a lazy one: ``python -m benchmarks.tools.step_split``.

AOT autograd hands the backend a forward and a backward graph, so a compiled
training step runs at least two executables where a lazy step runs one. This
times, interleaved in every repeat (a Williams design of orders), one SGD training
step at batch 1 of each model as

* ``lazy``: the step traced lazily, one sync at its end (the XLA baseline);
* ``lazy, sync after backward``: forward and backward as one executable,
  the optimizer's update as another;
* ``lazy, sync after forward and backward``: the pieces AOT autograd makes;
* ``ours``: the model compiled with ``aot_torchxla_trace_once``;
* ``openxla``: the model compiled with torch_xla's own AOT backend;
* ``ours, whole step`` / ``openxla, whole step``: the whole step (forward,
  loss, backward, update) compiled as one graph (``xla_backends.step``),
  one executable a step;

and prints each variant's median step time, the lazy step's median over it
(above 1x: faster than lazy) with its 95% bootstrap interval, the XLA
executables the variant runs per step (torch_xla's ``ExecuteTime`` count:
one for the lazy step and the whole step, one per cut otherwise), and where
the step's time goes: the median time until the step's call returned (the
rest is the device sync) and the median time XLA spent running executables
(``ExecuteTime``'s sum per step; executions queued together overlap in
it). A call that waits for its executable (a donated whole step's copy of
its results into the donated tensors' places can) is as long as the step;
one that returns at launch leaves the run to the sync.
"""
from __future__ import annotations

import copy
import gc
import os
import sys
import time
from dataclasses import dataclass, field

from benchmarks.run.measure import turn_order

os.environ.setdefault("PJRT_DEVICE", "CPU")

SYNC_AFTER = {  # lazy variants: where the step is cut into executables
    "lazy": (),
    "lazy, sync after backward": ("backward",),
    "lazy, sync after forward and backward": ("forward", "backward"),
}
COMPILED = {"ours": "aot_torchxla_trace_once", "openxla": "openxla"}
WHOLE = {"ours, whole step": "aot_torchxla_trace_once", "openxla, whole step": "openxla"}
VARIANTS = tuple(SYNC_AFTER) + tuple(COMPILED) + tuple(WHOLE)


def make_step(module, inputs, variant: str):
    """One training step of a copy of ``module`` (``step.model``) on the XLA
    device, ending when the device is done."""
    import torch
    import torch_xla

    import xla_backends  # noqa: F401  (registers our backends)
    from benchmarks.run.placement import LEARNING_RATE, scalar_loss, sync_device
    from xla_backends.step import compile_step

    device = torch_xla.device()
    model = copy.deepcopy(module).to(device).train()
    fn = torch.compile(model, backend=COMPILED[variant]) if variant in COMPILED else model
    cuts = SYNC_AFTER.get(variant, ())
    optimizer = torch.optim.SGD(model.parameters(), lr=LEARNING_RATE)
    args = tuple(t.to(device) for t in inputs)
    if variant in WHOLE:
        whole = compile_step(model, optimizer, scalar_loss, WHOLE[variant])

        def call():
            return whole(*args)
    else:
        def call():
            optimizer.zero_grad(set_to_none=True)
            loss = scalar_loss(fn(*args))
            if "forward" in cuts:
                torch_xla.sync()
            loss.backward()
            if "backward" in cuts:
                torch_xla.sync()
            optimizer.step()
            return loss

    def step():
        out = call()  # referenced until the sync: an unreferenced lazy result is never computed
        sync_device()
        return out

    step.call = call  # the host's part: until the step's call returns
    step.finish = sync_device
    step.model = model  # the copy it trains
    return step


def measure(model_name: str, repeat: int, warmup: int = 3, clock=time.perf_counter) -> list[dict]:
    """A row per variant: its median step, the lazy step's median over it
    with the 95% interval of that ratio, XLA executables per step, and
    where a step's time goes: the median time until its call returned
    (tracing, or a replay's host work and whatever it waits for) and the
    median time XLA spent running its executables (torch_xla's
    ``ExecuteTime``, which the host's part may overlap)."""
    from benchmarks.results import stats
    from benchmarks.run import suite

    bench = suite.load(model_name, batch_size=1)
    steps = {v: make_step(bench.module, bench.example_inputs().args, v) for v in VARIANTS}
    for step in steps.values():
        for _ in range(warmup):
            step()
    samples, runs = _round_robin(steps, repeat, clock)
    lazy = samples["lazy"].step
    rows = []
    for v in VARIANTS:
        low, high = stats.speedup_ci(lazy, samples[v].step)
        rows.append({"model": model_name, "variant": v, "step ms": stats.median(samples[v].step) * 1e3,
                     "lazy/variant": stats.speedup(lazy, samples[v].step), "95% CI low": low,
                     "95% CI high": high, "graphs run/step": runs[v] / repeat,
                     "call returns ms": _median_ms(samples[v].returned),
                     "XLA runs ms": _median_ms(samples[v].executing)})
    return rows


def _median_ms(seconds: list) -> float | None:
    from benchmarks.results import stats

    return stats.median(seconds) * 1e3 if seconds else None


@dataclass
class _Samples:
    """Per step of one variant: seconds until done, until its call returned
    (steps with a ``call`` part), and of XLA executing."""

    step: list = field(default_factory=list)
    returned: list = field(default_factory=list)
    executing: list = field(default_factory=list)


def _round_robin(steps: dict, repeat: int, clock) -> tuple[dict, dict]:
    """(``_Samples``, XLA executions over all steps) per variant: one
    step of each in every round, in ``measure.turn_order``'s order, so that
    every variant follows every other equally often. Executions are counted outside the
    timer."""
    variants = list(steps)
    samples = {v: _Samples() for v in variants}
    runs = dict.fromkeys(variants, 0)
    gc.collect()
    gc.disable()  # a collection would land in one variant's sample
    try:
        for r in range(repeat):
            for v in turn_order(variants, r):
                count, spent = _executions()
                samples[v].step.append(_timed(steps[v], clock, samples[v].returned))
                after = _executions()
                runs[v] += after[0] - count
                if after[0] > count:
                    samples[v].executing.append(after[1] - spent)
    finally:
        gc.enable()
    return samples, runs


def _timed(step, clock, returned: list) -> float:
    """Seconds of one ``step``; for a step with a ``call`` part (the host's),
    the seconds until it returned go to ``returned``, and the step ends as
    ``step`` ends it (``step.finish``: the device sync)."""
    start = clock()
    if not hasattr(step, "call"):
        step()
        return clock() - start
    out = step.call()
    returned.append(clock() - start)
    step.finish()
    del out
    return clock() - start


def _executions() -> tuple[int, float]:
    """XLA executions so far in this process and the seconds they ran
    (torch_xla's ``ExecuteTime``)."""
    import torch_xla.debug.metrics as met

    data = met.metric_data("ExecuteTime")
    return (data[0], data[1] / 1e9) if data else (0, 0.0)


PROG = "python -m benchmarks.tools.step_split"


def main(argv=None) -> int:
    """0 when measured; bad input: one line on stderr and 2 (``usage.guarded``)."""
    from benchmarks.usage import guarded

    return guarded(PROG, lambda: _main(argv))


def _main(argv) -> int:
    from benchmarks.results import tables
    from benchmarks.run import suite
    from benchmarks.usage import Parser

    parser = Parser(prog=PROG, description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="alexnet,vgg16",
                        help="comma-separated built-in models (default alexnet,vgg16)")
    parser.add_argument("--repeat", type=int, default=10, help="interleaved steps per variant (default 10)")
    args = parser.parse_args(argv)
    models = [m.strip() for m in args.models.split(",") if m.strip()]
    if not models:
        parser.error("--models names no model")
    unknown = sorted(set(models) - set(suite.list_models("builtin")))
    if unknown:
        parser.error(f"unknown model(s) {', '.join(unknown)}")
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    table = [row for m in models for row in measure(m, args.repeat)]
    print(f"One SGD training step at batch 1: median of {args.repeat} interleaved steps per variant; "
          "lazy/variant with its 95% bootstrap interval (above 1: faster than the lazy step); the "
          "median time until the step's call returned, and XLA's running time per step")
    print(tables.render_table(list(table[0]), [list(r.values()) for r in table]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
