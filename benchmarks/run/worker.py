"""Benchmark one model: load it, run the baseline and every backend, and
return plain records (CSV rows and raw samples).

The parent process runs ``python -m benchmarks.run.worker JOB RESULT`` once per
model (``orchestrate``): JOB holds the ``RunConfig`` and the model name as
JSON, and the worker writes ``{"rows": [...], "samples": [...], "graph_breaks": [...]}``
(``rows.ModelResult``) to RESULT.
``run_model`` is the same work in-process (``--no-isolate``).

Failures are data here: a model that fails to load, a baseline or a backend
that raises, each becomes a row with its status and the first line of its
error, never an exception out of ``run_model``.

Every row says what was run (``row_base``: the experiment's settings and the
software that ran it). With a cycle of batch sizes (``--batch-sizes``) the
model is loaded once per batch size for its inputs, all contenders share the
first load's module, and each (backend, batch size) gets a row of its own:
speedup, first call and compiles at that shape. With ``--dynamic-shapes`` the
batch dimension of the inputs is marked dynamic. After timing, the contenders
may be profiled (``--export-profiler-trace``) and the HLO of the XLA contenders'
graphs dumped (``--dump-hlo``); graph breaks come back as records.

First calls: with ``cold_start`` each runner's first calls (one per batch
size) are timed before anything else, in fresh processes of the runner's own
(``coldstart``; ``cold_start_repeat`` of them, the runners taking turns), so
that no executable compiled by another contender, or by another model, can
serve them (``compilation_latency``: the median, with the range and the
number of processes; kind ``cold``);
otherwise the measuring process's first call is reported (kind
``in_process``). With ``warm_start``, after timing, each contender is built
afresh (dynamo reset) and its first call timed again, its executable already
in XLA's cache (``warm_start_latency``).

The process applies the run's CPU affinity and thread counts (``affinity``; the same for
every contender: torch's intra-op threads and XLA's CPU client, sized by
``NPROC``) and, with ``compile_cache``, torch_xla's persistent compilation
cache, before XLA starts.

It is one module of some 600 lines because it is one process's work, in the
order the process does it (settings, first calls, load, measure or check,
diagnostics): splitting it would pass the same handful of objects (config,
benches, contenders, probes) across modules for no reader's gain.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import tempfile
import traceback
from dataclasses import dataclass
from pathlib import Path

import torch
import torch._dynamo
from torch.utils import _pytree as pytree

from benchmarks.run import accuracy, coldstart, machine_load, placement, probes, suite
from benchmarks.results import store, stats
from benchmarks.run.config import RunConfig
from benchmarks.run.measure import measure
from benchmarks.run.affinity import available, format_cpus, pin, thread_count
from benchmarks.run.rows import ModelResult, failed, failure_status, first_line, join, row_bases


def apply_process_settings(config: RunConfig) -> dict:
    """Pin this process (and the processes it starts) to the run's CPUs, size
    torch's and XLA's thread pools alike, and turn on the persistent compile
    cache if asked; before XLA starts here, or XLA keeps what it had.
    Returns the threads and CPUs the process now has, as row fields."""
    pin(config)
    threads = thread_count(config)
    torch.set_num_threads(threads)
    # XLA's PJRT CPU client sizes its thread pools by NPROC when it starts.
    os.environ["NPROC"] = str(threads)
    if config.compile_cache:
        use_compile_cache(config.compile_cache)
    return {"threads": torch.get_num_threads(), "cpu_affinity": format_cpus(available())}


def use_compile_cache(folder: str) -> bool:
    """torch_xla's persistent compilation cache in ``folder``; False (with a
    warning) when XLA already compiled in this process (``--no-isolate``)."""
    import torch_xla
    import torch_xla.runtime as xr

    if os.environ.get("XLA_PERSISTENT_CACHE_PATH") == folder:
        return True
    if torch_xla._XLAC._xla_computation_cache_is_initialized():
        print(f"warning: --compile-cache {folder}: XLA has compiled in this process already, "
              "so its cache stays in memory (run isolated, without --no-isolate)", file=sys.stderr)
        return False
    xr.initialize_cache(folder)
    return True


def load_benches(config: RunConfig, name: str, bases: list[dict]) -> list:
    """The model loaded at each batch size of ``bases``."""
    return [suite.load(name, base["batch_size"], seed=config.seed, suite=config.suite,
                       training=config.training, profile=config.profile)
            for base in bases]


def run_model(config: RunConfig, name: str, fresh: bool = False) -> ModelResult:
    """Benchmark ``name``. ``fresh``: this process has done nothing yet (the
    isolated worker), so the cold first calls fork it directly."""
    torch._dynamo.reset()
    applied = apply_process_settings(config)
    settings = config.settings().for_model(name)
    config = config.replace(grad_in_inference=bool(settings.grad_in_inference))
    bases = [{**base, **applied} for base in row_bases(config, name)]
    cold = {}
    if config.measure == "performance" and config.cold_start and not settings.skip_reason(config.training):
        # First of all: a fresh worker forks only before it runs anything.
        cold = cold_starts(config, name, [BASELINE_KEY, *config.backends], fork=fresh)
    # Progress lines: a worker killed for its time leaves them in its kept log.
    print(f"worker: loading {name}", flush=True)
    try:
        benches = load_benches(config, name, bases)
    except suite.ModelUnavailableError as err:  # not_installed, unsupported: with the reason
        return failed(config, bases, err.status, err.reason)
    except Exception as err:  # noqa: BLE001 - reported as the model's rows
        return failed(config, bases, failure_status(err, "model_fail_to_load"), err)
    for base, bench in zip(bases, benches):
        base["batch_size"] = bench.batch_size
    skip = settings.skip_reason(config.training)
    if skip:
        return failed(config, bases, "skipped", skip)
    print(f"worker: {config.measure} of {name}: baseline and {', '.join(config.backends)}", flush=True)
    if config.measure == "accuracy":
        return join([_run_accuracy(config, bench, settings, base) for bench, base in zip(benches, bases)])
    return _run_performance(config, benches, bases, cold)


# The baseline's key among the contenders: its own name ("eager") may also be
# the name of a measured backend (``--backend eager``).
BASELINE_KEY = "<baseline>"


def _baseline_contender(config: RunConfig, module):
    contender = placement.baseline_contender(module, config.use_xla_baseline, config.training,
                                             config.precision, grad=config.grad_in_inference)
    return dataclasses.replace(contender, name=BASELINE_KEY)


def _contender_of(config: RunConfig, module, key: str, on_graph=None):
    """The contender named ``key`` (``BASELINE_KEY`` or a backend), built
    afresh; ``on_graph`` sees a backend's graphs (``--dump-hlo``)."""
    if key == BASELINE_KEY:
        return _baseline_contender(config, module)
    return placement.backend_contender(module, key, config.training, config.precision, on_graph=on_graph,
                                       compile_step=config.compile_step, grad=config.grad_in_inference)


def _backend_contenders(config: RunConfig, module, bases: list[dict], result: ModelResult) -> list:
    """A contender per backend; a backend whose contender cannot even be built
    (the module does not move to its device...) gets its failed rows now."""
    contenders = []
    for backend in config.backends:
        try:
            contenders.append(_contender_of(config, module, backend))
        except Exception as err:  # noqa: BLE001 - reported as the backend's row
            for base in bases:
                result.fail(_failed_row(base, backend, err), err)
    return contenders


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


def _drawer(config: RunConfig, benches: list):
    """``draw(i, shape)`` for ``measure``: draw 0 the example inputs of the
    batch size at index ``shape``, later draws random ones."""
    generator = torch.Generator().manual_seed(config.seed + 1)

    def draw(i, shape):
        bench = benches[shape]
        inputs = bench.example_inputs() if i == 0 else bench.random_inputs(generator)
        return mark_batch_dynamic(inputs, bench.batch_size) if config.dynamic_shapes else inputs

    return draw


def _run_performance(config: RunConfig, benches: list, bases: list[dict], cold: dict) -> ModelResult:
    module = benches[0].module
    draw = _drawer(config, benches)
    try:
        baseline_contender = _baseline_contender(config, module)
    except Exception as err:  # noqa: BLE001 - reported as the model's rows
        return failed(config, bases, failure_status(err, "eager_fail_to_run"), err)
    result = ModelResult()
    contenders = [baseline_contender] + _backend_contenders(config, module, bases, result)
    probes_of = {r.name: r.probe for r in contenders}
    others = machine_load.OtherLoad()
    timings = measure(contenders, draw, warmup=config.warmup, repeat=config.repeat,
                      randomize=config.randomize_input, shapes=range(len(benches)),
                      max_time=config.max_time, min_repeat=config.min_repeat,
                      enough=_precise_enough(config.target_ci),
                      iterations_per_run=config.iterations_per_run)
    other_cores = others.cores()
    baseline = timings.pop(BASELINE_KEY)
    if not baseline.ok:
        return failed(config, bases, failure_status(baseline.error, "eager_fail_to_run"), baseline.error)
    lookups = {c.name: _cache_lookup(c, benches[0].example_inputs()) for c in contenders
               if c.name != BASELINE_KEY and timings[c.name].ok}
    warm = warm_starts(config, benches, [r.name for r in contenders]) if config.warm_start else {}
    for backend, timing in timings.items():
        result.graph_breaks += _graph_breaks(bases[0], backend, probes_of[backend])
        for shape, base in enumerate(bases):
            if not timing.ok:
                result.fail(_failed_row(base, backend, timing.error), timing.error)
                continue
            first = _first_call(cold, backend, shape, timing.at(shape).first_call_s)
            baseline_first = _first_call(cold, BASELINE_KEY, shape, baseline.at(shape).first_call_s)
            baseline_summary = {**probes_of[BASELINE_KEY].summary(shape), **baseline_first.fields}
            row = {**base, "backend": backend,
                   **_speedup_fields(baseline.at(shape), timing.at(shape)),
                   **_cache_fields(config, probes_of[backend].summary(shape)),
                   **first.fields,
                   **_baseline_fields(baseline_summary),
                   "other_cores": other_cores, "cache_lookup_latency": lookups.get(backend),
                   **warm.get((backend, shape), {})}
            result.rows.append({**row, **_memory_ratios(row), **headroom(row), **store.pytorch_columns(row)})
            # Each row gets its own pair of records: the baseline samples it
            # was measured against (interleaved with it) and its own.
            settings = {c: base[c] for c in store.SETTING_COLUMNS}
            result.samples += [
                store.sample_record(base["name"], backend, "baseline", baseline.at(shape).samples_s,
                                      baseline_first.seconds, **settings, **baseline_first.raw),
                store.sample_record(base["name"], backend, "backend", timing.at(shape).samples_s,
                                      first.seconds, **settings, **first.raw,
                                      **_recompiles(probes_of[backend], shape)),
            ]
    _diagnostics(config, benches[0], contenders)
    return result


# --------------------------------------------------------------------------
# First calls: cold (a fresh process per contender) and warm (executable cached)

# What a cold process reports of a first call, besides its seconds.
_FIRST_CALL_FIELDS = ("first_call_compiles", "first_call_cache_hits", "first_call_compile_s",
                      "first_call_execute_s")


@dataclass(frozen=True)
class _FirstCall:
    seconds: float | None
    fields: dict
    raw: dict = dataclasses.field(default_factory=dict)  # for the samples record: each process's seconds


def _first_call(cold: dict, key: str, shape: int, in_process_s: float | None) -> _FirstCall:
    """The first call a row reports: the cold one when it was measured (the
    median of the fresh processes, with their range and number), else the
    measuring process's own (its probe fields are in the row)."""
    got = cold.get(key, {}).get(shape)
    if got is None:
        return _FirstCall(in_process_s, {"compilation_latency": in_process_s,
                                         "compilation_kind": "in_process"})
    fields = {f: got[f] for f in _FIRST_CALL_FIELDS if f in got}
    return _FirstCall(got["seconds"], {**fields, "compilation_latency": got["seconds"],
                                       "compilation_latency_low": got["low"],
                                       "compilation_latency_high": got["high"],
                                       "cold_starts": got["n"], "compilation_kind": "cold"},
                      {"cold_first_calls_s": got["tries"]})


def cold_starts(config: RunConfig, name: str, keys: list[str], fork: bool = False
                ) -> dict[str, dict[int, dict]]:
    """Per contender (``BASELINE_KEY`` or a backend) and batch-size index, its
    cold first call: over ``config.cold_start_repeat`` fresh processes per
    contender, the contenders taking turns (``coldstart.taking_turns``; with
    ``fork``, forked from this process, which must be fresh itself), the
    median seconds and ``_FIRST_CALL_FIELDS``, the range and the number of
    processes (``coldstart.summary``). A contender whose cold process fails
    is left out (its rows then report the in-process first call, and say
    so); the failure is printed."""
    def failed(key, err):
        print(f"warning: cold first call of {name} / {key} failed: {err}", file=sys.stderr)

    tries = coldstart.taking_turns(cold_first_calls, {key: (config.to_json(), name, key) for key in keys},
                                   config.cold_start_repeat, timeout=config.timeout, fork=fork,
                                   on_error=failed)
    return {key: {shape: coldstart.summary([t[shape] for t in got]) for shape in got[0]}
            for key, got in tries.items() if got}


def cold_first_calls(config_json: str, name: str, key: str) -> dict[int, dict]:
    """Runs in a fresh process (``coldstart``): load ``name``, build the
    contender ``key`` and time its first call at each batch size."""
    # Cold: no executable from an earlier process may serve this one either,
    # neither XLA's persistent cache nor inductor's on-disk caches (a host
    # backend's cold start).
    os.environ.pop("XLA_PERSISTENT_CACHE_PATH", None)
    config = RunConfig.from_json(config_json).replace(compile_cache=None)
    apply_process_settings(config)
    torch._dynamo.reset()
    with tempfile.TemporaryDirectory(prefix="xdb-cold-") as caches:
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = caches
        benches = load_benches(config, name, row_bases(config, name))
        contender = _contender_of(config, benches[0].module, key)
        shapes = range(len(benches))
        timing = measure([contender], _drawer(config, benches), warmup=1, repeat=0, shapes=shapes)[contender.name]
    if not timing.ok:
        raise timing.error
    return {shape: {"seconds": timing.first_calls_s[shape],
                    **{f: v for f, v in contender.probe.summary(shape).items() if f in _FIRST_CALL_FIELDS}}
            for shape in shapes}


def warm_starts(config: RunConfig, benches: list, keys: list[str]) -> dict[tuple[str, int], dict]:
    """Per (backend, batch-size index): the first call of the backend built
    afresh after dynamo forgot every graph, its executables already in XLA's
    cache (``warm_start_latency``; ``warm_start_fresh_compiles``: compiles the
    cache did not serve). The baseline gets none (it has no row)."""
    torch._dynamo.reset()
    draw, found = _drawer(config, benches), {}
    for key in keys:
        if key == BASELINE_KEY:
            continue
        try:
            contender = _contender_of(config, benches[0].module, key)
        except Exception as err:  # noqa: BLE001 - the rows keep their other numbers
            print(f"warning: warm start of {key} failed: {first_line(err)}", file=sys.stderr)
            continue
        timing = measure([contender], draw, warmup=1, repeat=0, shapes=range(len(benches)))[contender.name]
        for shape, seconds in timing.first_calls_s.items():
            summary = contender.probe.summary(shape)
            fresh = None
            if "first_call_compiles" in summary:
                fresh = summary["first_call_compiles"] - summary["first_call_cache_hits"]
            found[(key, shape)] = {"warm_start_latency": seconds, "warm_start_fresh_compiles": fresh}
        del contender
    return found


def _cache_fields(config: RunConfig, summary: dict) -> dict:
    """The probe's row fields; the persistent cache's counters only when the
    run turned that cache on (zeros would read as "it missed nothing")."""
    if config.compile_cache:
        return summary
    return {k: v for k, v in summary.items() if k not in probes.PERSISTENT_CACHE_COUNTERS}


# --------------------------------------------------------------------------
# Adaptive repeats and headroom


def _precise_enough(target: float):
    """``enough(timings)`` for ``measure``: every backend's speedup at every
    batch size known within +-``target`` (95% interval half-width relative
    to the speedup)."""

    def enough(timings) -> bool:
        baseline = timings.get(BASELINE_KEY)
        if baseline is None or not baseline.ok:
            return True  # nothing left to firm up: the rows fail anyway
        for name, timing in timings.items():
            if name == BASELINE_KEY or not timing.ok:
                continue
            for shape, samples in timing.shape_samples_s.items():
                base = baseline.shape_samples_s[shape]
                low, high = stats.speedup_ci(base, samples)
                width = stats.relative_ci_width(low, high, stats.speedup(base, samples))
                if not width <= 2 * target:  # nan (too few samples) is not enough
                    return False
        return True

    return enough


# A zero-overhead limit closer to 1 than this leaves no headroom worth a share.
HEADROOM_MIN = 0.02


def headroom(row: dict) -> dict:
    """How close the backend came to a zero-overhead replay: the lazy
    baseline's step over that step less its tracing (what a replay with no
    host cost at all would reach on this machine), and the share of that
    gain the backend captured ((speedup - 1) / (limit - 1)). Empty without
    the lazy baseline's tracing time (an eager baseline)."""
    step, tracing = row.get("baseline_latency"), row.get("baseline_host_ms")
    if not (store.is_finite(step) and store.is_finite(tracing)) or not 0 <= tracing < step:
        return {}
    limit = step / (step - tracing)
    speedup = row.get("speedup")
    captured = None
    if limit - 1 >= HEADROOM_MIN and store.is_finite(speedup):
        captured = (speedup - 1) / (limit - 1)
    return {"zero_overhead_speedup": limit, "headroom_captured": captured}


def _cache_lookup(contender, inputs) -> float | None:
    """PyTorch's cache_lookup_latency of a backend, after its measured steps
    (outside the timer and the probe): None where it cannot be profiled."""
    try:
        return probes.cache_lookup_us(contender.step, contender.prepare(inputs))
    except Exception as err:  # noqa: BLE001 - a diagnostic column must not cost the row
        print(f"warning: cache lookup of {contender.name} not profiled: {first_line(err)}", file=sys.stderr)
        return None


def _recompiles(probe, shape) -> dict:
    """The guard failures behind a backend's recompiles at ``shape``, for its
    samples record (``--explain`` prints them)."""
    reasons = probe.recompile_reasons(shape)
    return {"recompile_reasons": reasons} if reasons else {}


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


def _file_stem(model: str, contender: str, config: RunConfig) -> str:
    if contender == BASELINE_KEY:
        contender = f"baseline_{config.baseline}"
    return f"{model}_{contender}"


def _diagnostics(config: RunConfig, bench, contenders: list) -> None:
    """What ``--export-profiler-trace`` and ``--dump-hlo`` ask for, on the
    first shape's example inputs. A failure here costs the file, not the rows."""
    inputs = bench.example_inputs()
    for contender in contenders if config.profiler_trace_dir else ():
        stem = _file_stem(bench.name, contender.name, config)
        _try(f"profiling {stem}", probes.profile_step, contender.step, contender.prepare(inputs),
             Path(config.profiler_trace_dir, f"{stem}.json"))
        if contender.probe.xla:
            _try(f"XLA-profiling {stem}", probes.xla_profile_step, contender.step,
                 contender.prepare(inputs), Path(config.profiler_trace_dir, f"{stem}_xla"))
    if config.hlo_dir:
        _try("dumping HLO", _dump_hlo, config, bench, inputs)


def _dump_hlo(config: RunConfig, bench, inputs) -> None:
    """Each XLA contender once more, freshly compiled, recording the HLO of
    every graph: the lazy baseline's pending step, each backend's graphs."""
    torch._dynamo.reset()  # after timing: every graph is compiled anew and seen
    if config.use_xla_baseline:
        contender = _baseline_contender(config, bench.module)
        contender.probe.capture_hlo = True
        contender.step(contender.prepare(inputs))
        probes.write_hlo(config.hlo_dir, _file_stem(bench.name, BASELINE_KEY, config), contender.probe.hlo)
    for backend in filter(placement.runs_on_xla, config.backends):
        graphs = []
        contender = _contender_of(config, bench.module, backend,
                                  on_graph=lambda gm, ex: graphs.append(probes.graph_hlo(gm, ex)))
        _try(f"tracing {backend} for its HLO", lambda: contender.step(contender.prepare(inputs)))
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
        "status": store.STATUS_PASS,
        "repeats_used": len(timing.samples_s),
        "repeat_stop": timing.stop,
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
    from the same torch seed. With the whole step compiled
    (``compile_step``), ``ACCURACY_STEPS`` steps are compared, each from
    the weights the previous one left: the optimizer step is the backend's
    too, and a wrong update shows in the next step's loss.
    """
    inputs = bench.example_inputs()
    if config.dynamic_shapes:
        inputs = mark_batch_dynamic(inputs, bench.batch_size)
    tolerance = settings.tolerance(xla=config.use_xla_baseline, dtype=config.precision)
    steps = ACCURACY_STEPS if config.training and config.compile_step else 1
    try:
        baseline = _baseline_contender(config, bench.module)
        reference = _steps(baseline, inputs, config.seed, steps)
        if config.training:
            baseline = _baseline_contender(config, bench.module)
        again = _steps(baseline, inputs, config.seed, steps)
    except Exception as err:  # noqa: BLE001 - reported as the model's rows
        return failed(config, base, failure_status(err, "eager_fail_to_run"), err)
    check = accuracy.compare(reference, again, tolerance, settings.cosine)
    if not check.ok:
        return failed(config, base, "eager_two_runs_differ",
                      f"baseline disagrees with itself: max error {check.max_error:.3g}")
    fp64 = _fp64_outputs(config, bench, inputs, steps)
    result = ModelResult()
    calls = 1 if config.training else 2
    for contender in _backend_contenders(config, bench.module, [base], result):
        xla = config.use_xla_baseline or placement.runs_on_xla(contender.name)
        check = _Check(reference, fp64, settings.tolerance(xla=xla, dtype=config.precision),
                       settings.cosine)
        fields, err = _accuracy_fields(contender, inputs, check, calls, config.seed, steps)
        if err is None and not config.training:  # a training step would move the weights
            fields["cache_lookup_latency"] = _cache_lookup(contender, inputs)
        row = {**base, "backend": contender.name, **_cache_fields(config, fields)}
        row.update(store.pytorch_columns(row))
        if err is None:
            result.rows.append(row)
        else:
            result.fail(row, err)
        result.graph_breaks += _graph_breaks(base, contender.name, contender.probe)
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


def _fp64_outputs(config: RunConfig, bench, inputs, steps: int = 1):
    """The step's outputs in float64 on the host (as PyTorch's harness takes
    its reference), or None when the model does not run in float64."""
    try:
        return _steps(placement.fp64_contender(bench.module, config.training, config.grad_in_inference),
                      inputs, config.seed, steps)
    except Exception:  # noqa: BLE001 - the tolerance alone then decides
        return None


# Training steps compared when the whole step is compiled.
ACCURACY_STEPS = 3


def _steps(contender, inputs, seed, steps: int = 1):
    """The outputs of ``steps`` steps in a row (a list), or of one step."""
    if steps == 1:
        return _outputs(contender, inputs, seed)
    return [_outputs(contender, inputs, seed, "first" if i == 0 else "warmup") for i in range(steps)]


def _outputs(contender, inputs, seed, call="first"):
    """One step of ``contender`` on ``inputs``, its outputs on the host."""
    torch.manual_seed(seed)
    placement.seed_device(seed)
    contender.probe.before()
    out = contender.step(contender.prepare(inputs))
    contender.probe.after(call)
    return accuracy.to_cpu(out)


def _accuracy_fields(contender, inputs, check: _Check, calls, seed, steps: int = 1
                     ) -> tuple[dict, Exception | None]:
    """The row's verdict fields, and the error that kept the check from
    running (None when it ran)."""
    try:
        if steps > 1:
            checks = [check(_steps(contender, inputs, seed, steps))]
        else:
            checks = [check(_outputs(contender, inputs, seed, call)) for call in ("first", "warmup")[:calls]]
    except Exception as err:  # noqa: BLE001 - reported as the row
        status = failure_status(err, "fail_to_run")
        return {"status": status, "accuracy": status, "error": first_line(err)}, err
    worst = max(checks, key=lambda c: c.max_error)
    verdict = "pass" if all(c.ok for c in checks) else "fail_accuracy"
    return {"status": verdict, "accuracy": verdict, "max_error": worst.max_error,
            "tolerance": check.tolerance, "error": None if worst.ok else worst.reason,
            **contender.probe.summary()}, None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("job", help="JSON file: {'config': RunConfig JSON, 'model': name}")
    parser.add_argument("result", help="where to write the records as JSON")
    args = parser.parse_args(argv)
    with open(args.job) as f:
        job = json.load(f)
    config = RunConfig.from_json(job["config"])
    try:
        result = run_model(config, job["model"], fresh=True)
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
