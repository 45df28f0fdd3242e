"""Benchmark one model: load it, run the baseline and every backend, and
return plain records (CSV rows and raw samples).

The parent process runs ``python -m benchmarks.worker JOB RESULT`` once per
model (``orchestrate``): JOB holds the ``RunConfig`` and the model name as
JSON, and the worker writes ``{"rows": [...], "samples": [...]}`` to RESULT.
``run_model`` is the same work in-process (``--no-isolate``).

Failures are data here: a model that fails to load, a baseline or a backend
that raises, each becomes a row with its status and the first line of its
error, never an exception out of ``run_model``.

Every row says what was run (``row_base``: the experiment's settings and the
software that ran it). With a cycle of batch sizes (``--batch-sizes``) the
model is loaded once per batch size for its inputs, all runners share the
first load's module, and each (backend, batch size) gets a row of its own:
speedup, first call and compiles at that shape. With ``--dynamic-shapes`` the
batch dimension of the inputs is marked dynamic. After timing, the runners
may be profiled (``--export-profiler-trace``) and the HLO of the XLA runners'
graphs dumped (``--dump-hlo``); graph breaks come back as records.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import torch
import torch._dynamo
from torch.utils import _pytree as pytree

from . import accuracy, placement, probes, provenance, results, stats, suite
from .config import RunConfig
from .measure import measure
from .settings import load_settings


@dataclass
class ModelResult:
    rows: list[dict] = field(default_factory=list)
    samples: list[dict] = field(default_factory=list)
    graph_breaks: list[dict] = field(default_factory=list)  # results.GRAPH_BREAK_COLUMNS

    def to_json(self) -> str:
        return json.dumps(results.plain({"rows": self.rows, "samples": self.samples,
                                         "graph_breaks": self.graph_breaks}))


def batch_sizes(config: RunConfig, name: str) -> tuple[int | None, ...]:
    """The batch sizes ``name`` runs at: the cycle of --batch-sizes, or the
    one of --batch-size or configs/ (None: TorchBench's own default)."""
    if config.batch_sizes:
        return config.batch_sizes
    settings = load_settings(config.configs)
    if config.batch_size or config.suite != "torchbench" or settings.lists(name):
        return (config.batch_size or settings.for_model(name).batch_size(config.profile, config.training),)
    return (None,)  # TorchBench's own default; the row gets the size it chose


def row_base(config: RunConfig, name: str, batch_size: int | None = None) -> dict:
    """The columns every row of ``name`` at ``batch_size`` (default: the first
    it runs at) shares, before the model is loaded: the experiment's key and
    what ran it."""
    return {
        "dev": config.device, "name": name,
        "batch_size": batch_size or batch_sizes(config, name)[0],
        "baseline": config.baseline, "suite": config.suite, "mode": config.phase,
        "dtype": config.precision, "dynamic": config.dynamic, "repeat": config.repeat,
        "warmup": config.warmup, "seed": config.seed, "timestamp": provenance.timestamp(),
        **provenance.versions(),
    }


def row_bases(config: RunConfig, name: str) -> list[dict]:
    """``row_base`` at each batch size ``name`` runs at."""
    return [row_base(config, name, b) for b in batch_sizes(config, name)]


def run_model(config: RunConfig, name: str) -> ModelResult:
    torch._dynamo.reset()
    settings = load_settings(config.configs).for_model(name)
    bases = row_bases(config, name)
    try:
        benches = [suite.load(name, base["batch_size"], seed=config.seed, suite=config.suite,
                              training=config.training, profile=config.profile)
                   for base in bases]
    except suite.ModelUnavailableError as err:  # not_installed, unsupported: with the reason
        return failed(config, bases, err.status, err.reason)
    except Exception as err:  # noqa: BLE001 - reported as the model's rows
        return failed(config, bases, failure_status(err, "model_fail_to_load"), err)
    for base, bench in zip(bases, benches):
        base["batch_size"] = bench.batch_size
    skip = settings.skip_reason(config.training)
    if skip:
        return failed(config, bases, "skipped", skip)
    if config.mode == "accuracy":
        return _join([_run_accuracy(config, bench, settings, base) for bench, base in zip(benches, bases)])
    return _run_performance(config, benches, bases)


def _join(parts: list["ModelResult"]) -> "ModelResult":
    joined = ModelResult()
    for part in parts:
        joined.rows += part.rows
        joined.samples += part.samples
        joined.graph_breaks += part.graph_breaks
    return joined


def failed(config: RunConfig, base: dict | list[dict], status: str, error) -> ModelResult:
    """One row per backend (and batch size, given several bases), all with ``status``."""
    line = error if isinstance(error, str) else first_line(error)
    bases = base if isinstance(base, list) else [base]
    return ModelResult(rows=[{**b, "backend": backend, "status": status, "error": line}
                             for b in bases for backend in config.backends])


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
    runner = placement.baseline_runner(module, config.use_xla_baseline, config.training,
                                       config.precision)
    return dataclasses.replace(runner, name=BASELINE_KEY)


def _backend_runners(config: RunConfig, module, bases: list[dict], result: ModelResult) -> list:
    """A runner per backend; a backend whose runner cannot even be built
    (the module does not move to its device...) gets its failed rows now."""
    runners = []
    for backend in config.backends:
        try:
            runners.append(placement.backend_runner(module, backend, config.training, config.precision))
        except Exception as err:  # noqa: BLE001 - reported as the backend's row
            result.rows += [_failed_row(base, backend, err) for base in bases]
    return runners


def _failed_row(base: dict, backend: str, err: BaseException) -> dict:
    status = failure_status(err, "fail_to_run")
    return {**base, "backend": backend, "status": status, "error": first_line(err)}


def mark_batch_dynamic(inputs, batch_size: int):
    """Mark dimension 0 of every input tensor whose dimension 0 is the batch
    dynamic (``torch._dynamo.mark_dynamic``); returns ``inputs``."""
    for t in pytree.tree_leaves(inputs):
        if isinstance(t, torch.Tensor) and t.dim() > 0 and t.shape[0] == batch_size:
            torch._dynamo.mark_dynamic(t, 0)
    return inputs


def _run_performance(config: RunConfig, benches: list, bases: list[dict]) -> ModelResult:
    generator = torch.Generator().manual_seed(config.seed + 1)
    module = benches[0].module

    def draw(i, shape):
        bench = benches[shape]
        inputs = bench.example_inputs() if i == 0 else bench.random_inputs(generator)
        return mark_batch_dynamic(inputs, bench.batch_size) if config.dynamic_shapes else inputs

    try:
        baseline_runner = _baseline_runner(config, module)
    except Exception as err:  # noqa: BLE001 - reported as the model's rows
        return failed(config, bases, failure_status(err, "eager_fail_to_run"), err)
    result = ModelResult()
    runners = [baseline_runner] + _backend_runners(config, module, bases, result)
    probes_of = {r.name: r.probe for r in runners}
    timings = measure(runners, draw, warmup=config.warmup, repeat=config.repeat,
                      randomize=config.randomize_input, shapes=range(len(benches)))
    baseline = timings.pop(BASELINE_KEY)
    if not baseline.ok:
        return failed(config, bases, failure_status(baseline.error, "eager_fail_to_run"), baseline.error)
    for backend, timing in timings.items():
        result.graph_breaks += _graph_breaks(bases[0], backend, probes_of[backend])
        for shape, base in enumerate(bases):
            if not timing.ok:
                result.rows.append(_failed_row(base, backend, timing.error))
                continue
            row = {**base, "backend": backend,
                   **_speedup_fields(baseline.at(shape), timing.at(shape)),
                   **probes_of[backend].summary(shape),
                   **_baseline_fields(probes_of[BASELINE_KEY].summary(shape))}
            result.rows.append({**row, **_memory_ratios(row)})
            # Each row gets its own pair of records: the baseline samples it
            # was measured against (interleaved with it) and its own.
            settings = {c: base[c] for c in results.SETTING_COLUMNS}
            result.samples += [
                results.sample_record(base["name"], backend, "baseline", baseline.at(shape).samples_s,
                                      baseline.at(shape).first_call_s, **settings),
                results.sample_record(base["name"], backend, "backend", timing.at(shape).samples_s,
                                      timing.at(shape).first_call_s, **settings),
            ]
    _diagnostics(config, benches[0], runners)
    return result


def _graph_breaks(base: dict, backend: str, probe) -> list[dict]:
    return [{"name": base["name"], "backend": backend, "mode": base["mode"], "dtype": base["dtype"],
             "dynamic": base["dynamic"], "reason": reason, "user_frame": frame}
            for reason, frame in probe.graph_breaks()]


def _memory_ratios(row: dict) -> dict:
    return {"host_compression_ratio": probes.compression_ratio(row.get("baseline_peak_host_mb"),
                                                               row.get("peak_host_mb")),
            "device_compression_ratio": probes.compression_ratio(row.get("baseline_peak_device_mb"),
                                                                 row.get("peak_device_mb"))}


# --------------------------------------------------------------------------
# After timing: profiles and HLO


def _file_stem(model: str, runner: str, config: RunConfig) -> str:
    if runner == BASELINE_KEY:
        runner = f"baseline_{config.baseline}"
    return f"{model}_{runner}"


def _diagnostics(config: RunConfig, bench, runners: list) -> None:
    """What ``--export-profiler-trace`` and ``--dump-hlo`` ask for, on the
    first shape's example inputs. A failure here costs the file, not the rows."""
    inputs = bench.example_inputs()
    for runner in runners if config.profiler_trace_dir else ():
        stem = _file_stem(bench.name, runner.name, config)
        _try(f"profiling {stem}", probes.profile_step, runner.step, runner.prepare(inputs),
             Path(config.profiler_trace_dir, f"{stem}.json"))
        if runner.probe.xla:
            _try(f"XLA-profiling {stem}", probes.xla_profile_step, runner.step,
                 runner.prepare(inputs), Path(config.profiler_trace_dir, f"{stem}_xla"))
    if config.hlo_dir:
        _try("dumping HLO", _dump_hlo, config, bench, inputs)


def _dump_hlo(config: RunConfig, bench, inputs) -> None:
    """Each XLA runner once more, freshly compiled, recording the HLO of
    every graph: the lazy baseline's pending step, each backend's graphs."""
    torch._dynamo.reset()  # after timing: every graph is compiled anew and seen
    if config.use_xla_baseline:
        runner = _baseline_runner(config, bench.module)
        runner.probe.capture_hlo = True
        runner.step(runner.prepare(inputs))
        probes.write_hlo(config.hlo_dir, _file_stem(bench.name, BASELINE_KEY, config), runner.probe.hlo)
    for backend in filter(placement.runs_on_xla, config.backends):
        graphs = []
        runner = placement.backend_runner(bench.module, backend, config.training, config.precision,
                                          on_graph=lambda gm, ex: graphs.append(probes.graph_hlo(gm, ex)))
        _try(f"tracing {backend} for its HLO", lambda: runner.step(runner.prepare(inputs)))
        probes.write_hlo(config.hlo_dir, _file_stem(bench.name, backend, config), graphs)


def _try(what: str, fn, *args) -> None:
    try:
        fn(*args)
    except Exception as err:  # noqa: BLE001 - diagnostics must not cost the results
        print(f"warning: {what} failed: {first_line(err)}", file=sys.stderr)


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
    baseline, its tracing time, its XLA compiles in the first call at this
    shape and per iteration; its memory peaks."""
    return {"baseline_host_ms": summary.get("host_ms"),
            "baseline_compiles_per_iter": summary.get("compiles_per_iter"),
            "baseline_first_call_compiles": summary.get("first_call_compiles"),
            "baseline_peak_host_mb": summary.get("peak_host_mb"),
            "baseline_peak_device_mb": summary.get("peak_device_mb")}


def _run_accuracy(config: RunConfig, bench, settings, base: dict) -> ModelResult:
    """Compare each backend's outputs with the baseline's on the same inputs.

    Inference compares a backend's first call and its second (a replay).
    A training step updates the weights, so only first steps are comparable:
    every check then runs on a fresh copy of the model. Each check starts
    from the same torch seed.
    """
    inputs = bench.example_inputs()
    if config.dynamic_shapes:
        inputs = mark_batch_dynamic(inputs, bench.batch_size)
    tolerance = settings.tolerance(xla=config.use_xla_baseline, dtype=config.precision)
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
    fp64 = _fp64_outputs(config, bench, inputs)
    result = ModelResult()
    calls = 1 if config.training else 2
    for runner in _backend_runners(config, bench.module, [base], result):
        xla = config.use_xla_baseline or placement.runs_on_xla(runner.name)
        check = _Check(reference, fp64, settings.tolerance(xla=xla, dtype=config.precision),
                       settings.cosine)
        result.rows.append({**base, "backend": runner.name,
                            **_accuracy_fields(runner, inputs, check, calls, config.seed)})
        result.graph_breaks += _graph_breaks(base, runner.name, runner.probe)
    return result


@dataclass(frozen=True)
class _Check:
    """What a backend's outputs are checked against, and how."""

    reference: object  # the baseline's outputs
    fp64: object  # the same step in float64 on the host, or None
    tolerance: float
    cosine: bool

    def __call__(self, output) -> accuracy.Check:
        return accuracy.compare(self.reference, output, self.tolerance, self.cosine, self.fp64)


def _fp64_outputs(config: RunConfig, bench, inputs):
    """The step's outputs in float64 on the host (as PyTorch's harness takes
    its reference), or None when the model does not run in float64."""
    try:
        return _outputs(placement.reference_runner(bench.module, config.training), inputs, config.seed)
    except Exception:  # noqa: BLE001 - the tolerance alone then decides
        return None


def _outputs(runner, inputs, seed, phase="first"):
    """One step of ``runner`` on ``inputs``, its outputs on the host."""
    torch.manual_seed(seed)
    placement.seed_device(seed)
    runner.probe.before()
    out = runner.step(runner.prepare(inputs))
    runner.probe.after(phase)
    return accuracy.to_cpu(out)


def _accuracy_fields(runner, inputs, check: _Check, calls, seed) -> dict:
    try:
        checks = [check(_outputs(runner, inputs, seed, phase)) for phase in ("first", "warmup")[:calls]]
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
