"""A model's timed repeats spread over several fresh worker processes.

A process's own state -- its memory layout, address randomisation, where its
threads landed, how its allocator warmed up -- shifts its timings by more than
the noise between its repeats (pyperf runs 20 worker processes per benchmark
for that reason).  One process per model per night puts that shift into the
night's ratio unseen: the next night draws another.  So a performance run
(``RunConfig.processes`` > 1) runs each model in ``processes`` fresh workers,
one after the other, each timing ``repeat`` repeats with the baseline and the
backends interleaved as in one process (``benchmarks.run.measure``), and keeps
which process each sample came from.

``spread(config, name, run_once)`` runs them and joins their results
(``join``): per experiment, the samples of every process concatenated, in
order, with ``process_repeats`` (the samples each process gave) on both
samples records; a row whose timings are recomputed over all of them
(``timing_fields``: the speedup is the median of the per-process speedups and
its 95% interval a bootstrap over processes, so it is as wide as the spread
between processes; ``other_cores``, the load of other processes while it was
timed, the mean over processes, each process's on the samples records as
``process_other_cores``); the speedup, interval and latencies leave out the
processes the load made outliers (``benchmarks.results.load.load_outliers``,
named on the samples records as ``process_left_out``; their samples stay
there); the first process's other columns (first
calls, compiler metrics, memory).  An experiment that failed in any process is that failure
(its error says in which process).  Only the first process times cold and warm
starts and writes profiles and HLO: the others time repeats only.  Once no
experiment of the model passes, no further process is started.
"""
from __future__ import annotations

from typing import Callable

from benchmarks.results import load, stats, store
from benchmarks.run.config import RunConfig
from benchmarks.run.rows import ModelResult


def process_config(config: RunConfig, index: int) -> RunConfig:
    """The settings of process ``index`` (0-based) of a model: one process's
    repeats; only the first times first calls and writes diagnostics."""
    one = config.replace(processes=1)
    if index == 0:
        return one
    return one.replace(cold_start=False, warm_start=False, profiler_trace_dir=None, hlo_dir=None)


def spread(config: RunConfig, name: str, run_once: Callable[[RunConfig, str], ModelResult]) -> ModelResult:
    """``name`` run in ``config.processes`` worker processes (``run_once``
    runs one), joined."""
    parts = []
    for index in range(config.processes):
        part = run_once(process_config(config, index), name)
        parts.append(part)
        if not any(store.passed(row) for row in part.rows):
            break
    return join(parts, config.processes)


def _key(record: dict) -> store.ExperimentKey:
    return store.experiment_key(record)


def join(parts: list[ModelResult], processes: int) -> ModelResult:
    """One result from the results of a model's processes (see the module
    docstring); ``processes`` is the number planned."""
    first = parts[0]
    joined = ModelResult(graph_breaks=list(first.graph_breaks))
    samples = [{(_key(r), r.get("role")): r for r in part.samples} for part in parts]
    by_key = [{_key(row): row for row in part.rows} for part in parts]
    for row in first.rows:
        key = _key(row)
        failure = next(((i, found[key]) for i, found in enumerate(by_key)
                        if key in found and not store.passed(found[key])), None)
        if failure is not None:
            index, failed = failure
            error = failed.get("error") or ""
            where = f"in process {index + 1} of {processes}" if processes > 1 else ""
            joined.rows.append({**failed, "processes": processes,
                                "error": "; ".join(p for p in (error, where) if p) if index else error})
            continue
        present = [i for i, found in enumerate(by_key) if key in found]
        records = {role: [samples[i].get((key, role)) for i in present] for role in store.SAMPLE_ROLES}
        if any(r is None for rs in records.values() for r in rs):
            joined.rows.append(row)  # a process left no samples: keep the first as it was
            joined.samples += [r for r in first.samples if _key(r) == key]
            continue
        sizes = [min(len(b["samples_s"]), len(k["samples_s"]))
                 for b, k in zip(records["baseline"], records["backend"])]
        pooled = {role: [s for r, n in zip(rs, sizes) for s in r["samples_s"][:n]]
                  for role, rs in records.items()}
        each = [by_key[i][key].get("other_cores") for i in present]
        each = [round(float(x), 3) if store.is_finite(x) else None for x in each]
        loads = [x for x in each if x is not None]
        # Every sample is kept on the records; the row's numbers leave out
        # the processes the load made outliers (benchmarks.results.load's rule).
        left_out = load.load_outliers(each)
        for role, rs in records.items():
            joined.samples.append({**rs[0], "samples_s": pooled[role], "process_repeats": sizes,
                                   **({"process_other_cores": each} if loads else {}),
                                   **({"process_left_out": list(left_out)} if left_out else {})})
        kept = [i for i in range(len(sizes)) if i not in left_out]
        kept_samples = {role: [s for i in kept for s in list(chunks(pooled[role], sizes))[i]]
                        for role in pooled}
        joined.rows.append({**row, "processes": len(present),
                            **timing_fields(kept_samples["baseline"], kept_samples["backend"],
                                            [sizes[i] for i in kept], stop=row.get("repeat_stop")),
                            "other_cores": round(sum(loads) / len(loads), 3) if loads else None})
    return joined


def chunks(values, sizes):
    """``values`` cut into consecutive pieces of ``sizes``."""
    start = 0
    for n in sizes:
        yield values[start:start + n]
        start += n


def timing_fields(baseline_s, backend_s, sizes, stop=None) -> dict:
    """A row's timing columns from samples of several processes (``sizes``
    samples each, in order): the speedup is the median of the per-process
    speedups, its interval a bootstrap over processes; latencies are the
    medians of all samples."""
    speedups = [stats.speedup(b, k) for b, k in zip(chunks(baseline_s, sizes), chunks(backend_s, sizes))]
    low, high = stats.median_ci(speedups)
    speedup = stats.median(speedups)
    return {
        "speedup": speedup,
        "unstable": stats.instability(baseline_s, backend_s, low, high, speedup),
        "speedup_ci_low": low,
        "speedup_ci_high": high,
        "abs_latency": stats.median(backend_s) * 1e3,
        "baseline_latency": stats.median(baseline_s) * 1e3,
        "repeats_used": len(backend_s),
        **({"repeat_stop": stop} if stop else {}),
    }
