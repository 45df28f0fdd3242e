"""Benchmark one model: load it, run the baseline and every backend, and
return plain records (CSV rows and raw samples).

The parent process runs ``python -m benchmarks.worker JOB RESULT`` once per
model (``orchestrate``): JOB holds the ``RunConfig`` and the model name as
JSON, and the worker writes ``{"rows": [...], "samples": [...]}`` to RESULT.
``run_model`` is the same work in-process (``--no-isolate``).

Failures are data here: a model that fails to load, a baseline or a backend
that raises, each becomes a row with its status and the first line of its
error, never an exception out of ``run_model``.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import traceback
from dataclasses import dataclass, field

import torch

from . import accuracy, placement, results, stats, suite
from .config import RunConfig
from .measure import measure
from .settings import load_settings


@dataclass
class ModelResult:
    rows: list[dict] = field(default_factory=list)
    samples: list[dict] = field(default_factory=list)

    def to_json(self) -> str:
        return json.dumps(results.plain({"rows": self.rows, "samples": self.samples}))


def row_base(config: RunConfig, name: str) -> dict:
    """The columns every row of ``name`` shares, before the model is loaded."""
    settings = load_settings(config.configs).for_model(name)
    batch_size = config.batch_size or settings.batch_size(config.profile, config.training)
    return {"dev": config.device, "name": name, "batch_size": batch_size, "baseline": config.baseline}


def run_model(config: RunConfig, name: str) -> ModelResult:
    torch._dynamo.reset()
    settings = load_settings(config.configs).for_model(name)
    base = row_base(config, name)
    batch_size = base["batch_size"]
    try:
        bench = suite.load(name, batch_size, seed=config.seed, suite=config.suite)
    except Exception as err:  # noqa: BLE001 - reported as the model's rows
        return failed(config, base, failure_status(err, "model_fail_to_load"), err)
    base["batch_size"] = bench.batch_size
    skip = settings.skip_reason(config.training)
    if skip:
        return failed(config, base, "skipped", skip)
    if config.mode == "accuracy":
        return _run_accuracy(config, bench, settings, base)
    return _run_performance(config, bench, base)


def failed(config: RunConfig, base: dict, status: str, error) -> ModelResult:
    """One row per backend, all with ``status``."""
    line = error if isinstance(error, str) else first_line(error)
    return ModelResult(rows=[{**base, "backend": b, "status": status, "error": line}
                             for b in config.backends])


def first_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {text[0] if text else ''}".strip().rstrip(":")


# Out-of-memory errors that arrive as a plain RuntimeError: XLA's, and the
# host allocator's ("DefaultCPUAllocator: can't allocate memory").
_OOM_MESSAGES = ("RESOURCE_EXHAUSTED", "can't allocate memory", "not enough memory")


def failure_status(err: BaseException, default: str) -> str:
    if isinstance(err, (torch.OutOfMemoryError, MemoryError)) or any(m in str(err) for m in _OOM_MESSAGES):
        return "OOM"
    return default


# The baseline's key among the runners: its own name ("eager") may also be
# the name of a measured backend (``--backend eager``).
BASELINE_KEY = "<baseline>"


def _baseline_runner(config: RunConfig, module):
    runner = placement.baseline_runner(module, config.use_xla_baseline, config.training)
    return dataclasses.replace(runner, name=BASELINE_KEY)


def _backend_runners(config: RunConfig, module, base: dict, result: ModelResult) -> list:
    """A runner per backend; a backend whose runner cannot even be built
    (the module does not move to its device...) gets its failed row now."""
    runners = []
    for backend in config.backends:
        try:
            runners.append(placement.backend_runner(module, backend, config.training))
        except Exception as err:  # noqa: BLE001 - reported as the backend's row
            result.rows.append(_failed_row(base, backend, err))
    return runners


def _failed_row(base: dict, backend: str, err: BaseException) -> dict:
    status = failure_status(err, "fail_to_run")
    return {**base, "backend": backend, "status": status, "error": first_line(err)}


def _run_performance(config: RunConfig, bench, base: dict) -> ModelResult:
    generator = torch.Generator().manual_seed(config.seed + 1)

    def draw(i):
        return bench.example_inputs() if i == 0 else bench.random_inputs(generator)

    try:
        baseline_runner = _baseline_runner(config, bench.module)
    except Exception as err:  # noqa: BLE001 - reported as the model's rows
        return failed(config, base, failure_status(err, "eager_fail_to_run"), err)
    result = ModelResult()
    runners = [baseline_runner] + _backend_runners(config, bench.module, base, result)
    probes = {r.name: r.probe for r in runners}
    timings = measure(runners, draw, warmup=config.warmup,
                      repeat=config.repeat, randomize=config.randomize_input)
    baseline = timings.pop(BASELINE_KEY)
    if not baseline.ok:
        return failed(config, base, failure_status(baseline.error, "eager_fail_to_run"), baseline.error)
    for backend, timing in timings.items():
        if not timing.ok:
            result.rows.append(_failed_row(base, backend, timing.error))
            continue
        result.rows.append({**base, "backend": backend, **_speedup_fields(baseline, timing),
                            **probes[backend].summary(),
                            **_baseline_fields(probes[BASELINE_KEY].summary())})
        # Each row gets its own pair of records: the baseline samples it was
        # measured against (interleaved with it) and its own.
        result.samples += [
            results.sample_record(bench.name, backend, "baseline", baseline.samples_s,
                                  baseline.first_call_s, baseline=config.baseline),
            results.sample_record(bench.name, backend, "backend", timing.samples_s,
                                  timing.first_call_s),
        ]
    return result


def _speedup_fields(baseline, timing) -> dict:
    low, high = stats.speedup_ci(baseline.samples_s, timing.samples_s)
    speedup = stats.speedup(baseline.samples_s, timing.samples_s)
    return {
        "speedup": speedup,
        "unstable": stats.instability(baseline.samples_s, timing.samples_s, low, high, speedup),
        "speedup_ci_low": low,
        "speedup_ci_high": high,
        "abs_latency": stats.median(timing.samples_s) * 1e3,
        "baseline_latency": stats.median(baseline.samples_s) * 1e3,
        "compilation_latency": timing.first_call_s,
        "status": results.STATUS_PASS,
    }


def _baseline_fields(summary: dict) -> dict:
    """What the baseline's probe says of the baseline: for the lazy XLA
    baseline, its tracing time and XLA compiles per iteration."""
    return {"baseline_host_ms": summary.get("host_ms"),
            "baseline_compiles_per_iter": summary.get("compiles_per_iter")}


def _run_accuracy(config: RunConfig, bench, settings, base: dict) -> ModelResult:
    """Compare each backend's outputs with the baseline's on the same inputs.

    Inference compares a backend's first call and its second (a replay).
    A training step updates the weights, so only first steps are comparable:
    every check then runs on a fresh copy of the model. Each check starts
    from the same torch seed.
    """
    inputs = bench.example_inputs()
    tolerance = settings.tolerance(xla=config.use_xla_baseline)
    try:
        baseline = _baseline_runner(config, bench.module)
        reference = _outputs(baseline, inputs, config.seed)
        if config.training:
            baseline = _baseline_runner(config, bench.module)
        again = _outputs(baseline, inputs, config.seed)
    except Exception as err:  # noqa: BLE001 - reported as the model's rows
        return failed(config, base, failure_status(err, "eager_fail_to_run"), err)
    check = accuracy.compare(reference, again, tolerance, settings.cosine)
    if not check.ok:
        return failed(config, base, "eager_two_runs_differ",
                      f"baseline disagrees with itself: max error {check.max_error:.3g}")
    result = ModelResult()
    calls = 1 if config.training else 2
    for runner in _backend_runners(config, bench.module, base, result):
        xla = config.use_xla_baseline or placement.runs_on_xla(runner.name)
        result.rows.append({**base, "backend": runner.name,
                            **_accuracy_fields(runner, inputs, reference, calls, config.seed,
                                               settings.tolerance(xla=xla), settings.cosine)})
    return result


def _outputs(runner, inputs, seed, phase="first"):
    """One step of ``runner`` on ``inputs``, its outputs on the host."""
    torch.manual_seed(seed)
    runner.probe.before()
    out = runner.step(runner.prepare(inputs))
    runner.probe.after(phase)
    return accuracy.to_cpu(out)


def _accuracy_fields(runner, inputs, reference, calls, seed, tolerance, cosine) -> dict:
    try:
        checks = [accuracy.compare(reference, _outputs(runner, inputs, seed, phase), tolerance, cosine)
                  for phase in ("first", "warmup")[:calls]]
    except Exception as err:  # noqa: BLE001 - reported as the row
        status = failure_status(err, "fail_to_run")
        return {"status": status, "accuracy": status, "error": first_line(err)}
    worst = max(checks, key=lambda c: c.max_error)
    verdict = "pass" if all(c.ok for c in checks) else "fail_accuracy"
    return {"status": verdict, "accuracy": verdict, "max_error": worst.max_error,
            "error": None if worst.ok else worst.reason, **runner.probe.summary()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("job", help="JSON file: {'config': RunConfig JSON, 'model': name}")
    parser.add_argument("result", help="where to write the records as JSON")
    args = parser.parse_args(argv)
    with open(args.job) as f:
        job = json.load(f)
    config = RunConfig.from_json(job["config"])
    try:
        result = run_model(config, job["model"])
    except Exception:  # noqa: BLE001 - the parent turns this into rows
        traceback.print_exc()
        return 1
    tmp = f"{args.result}.tmp"
    with open(tmp, "w") as f:
        f.write(result.to_json())
    os.replace(tmp, args.result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
