"""Reports rendered from a results DataFrame (``benchmarks.results.store.read_rows``).

Offers:

* ``speedup_table(df) -> (headers, rows)`` -- the model x backend table of
  speedups with bootstrap CIs, failure statuses and a geomean row (a row per
  model and batch size; the geomean counts each model once).
* ``failures(df, logs) -> list[(name, backend, status, reason, log)]``.
* ``accuracy_table(df)`` / ``accuracy_summary(df)`` -- an accuracy run's
  verdicts with max error and tolerance; ``latency_table(df)`` -- ms per step.
* ``describe(df) -> str`` / ``caption(df) -> str`` -- what was measured:
  mode, dtype, shapes, device and baseline (``baseline_note(df)``: with the
  eager baseline, how to measure against lazy XLA instead).
* ``graph_break_table(breaks)`` -- breaks per model, from the graph-break CSV.
* ``headroom_table(df)`` -- per row, the zero-overhead limit of the speedup
  and the share of it the backend captured (``headroom_share``), where that
  share can be told from the noise.
* ``too_few_samples(df)`` -- the passing rows timed fewer times than
  ``compare``'s paired test needs: shown without an interval, and flagged.
* ``persistent_cache_warning(df)`` -- a line when ``--compile-cache`` never
  loaded an executable it tried to load.
* ``render_markdown(df, title=...) -> str`` and ``render_console(df) -> str``.
* ``write_markdown(csv_path, title=None) -> Path`` -- renders the stored CSV
  into the ``.md`` beside it, linking the graph-break CSV.
* ``finish(csv_path) -> str`` -- what a run (or a merge) renders at its end:
  the plot and the markdown beside the CSV; returns the console report.
  ``report_files(csv_path, accuracy)``: the files a run leaves beside its CSV.

Everything is computed from the data first and only then formatted
(``benchmarks.results.tables``); the renderers return strings and never
print, so they are testable against golden files. If an experiment
(``store.experiment_key``) appears more than once (a re-run appended to the
same CSV), the last row wins.

One module, though long: every table here is a view of the same run's rows
for the same page, sharing its captions, its notes and its choice of rows
(the latest of each experiment, the passing ones); split by table, each
piece would import all the others' captions to render one page.
"""
from __future__ import annotations

import math
import os
from pathlib import Path

import pandas as pd

from benchmarks.results import hud, pytorch_files, stats, store, tables

DEFAULT_TITLE = "Speedup over baseline"
ACCURACY_TITLE = "Accuracy against baseline"
ACCURACY_EXPLANATION = (
    "Each backend's outputs against the baseline's on the same inputs: pass when the largest "
    "error stays within the tolerance (configs/models.yaml, per dtype) or the output is closer "
    "to a float64 reference than the baseline's is."
)
LATENCY_NOTE = "Median milliseconds per step (lower is better); the baseline as measured beside the first backend."
MISSING = "-"  # a (model, backend) pair that was not run at all
EXPLANATION = (
    "Speedup = median baseline latency / median backend latency (higher is better); "
    "brackets: bootstrap confidence interval; geomean over the models that passed "
    "with that backend (n = how many models; a model run at several batch sizes counts once, "
    "with the geomean of its batch sizes)."
)
# What each baseline is, where a speedup is read.
BASELINES = {
    "eager": "PyTorch eager on the host",
    "xla": "the model run lazily on the XLA device",
}
EAGER_NOTE = ("The baseline is PyTorch eager on the host (the default), so a speedup also "
              "counts what moving the model to XLA changes; to measure the backends against "
              "lazy XLA, rerun with --use-xla-baseline.")


# --------------------------------------------------------------------------
# Compute


def _unique(series: pd.Series) -> list:
    """Distinct non-missing values in order of first appearance."""
    return list(pd.unique(series.dropna()))


def _format_speedup(value: float, low: float = math.nan, high: float = math.nan) -> str:
    if not store.is_finite(value):
        return "n/a"
    if store.is_finite(low) and store.is_finite(high):
        return f"{value:.2f}x [{low:.2f}, {high:.2f}]"
    return f"{value:.2f}x"


def timed_samples(row: pd.Series) -> int | None:
    """How many timed samples a row's speedup rests on (``repeats_used``,
    else the ``repeat`` asked for); None when the row does not say."""
    for column in ("repeats_used", "repeat"):
        if store.is_finite(row.get(column)):
            return int(row[column])
    return None


def _too_few(row: pd.Series) -> bool:
    """A passing speedup on fewer samples than a paired test needs."""
    n = timed_samples(row)
    return (n is not None and n < stats.MIN_PAIRED_SAMPLES and store.passed(row)
            and store.is_finite(row.get("speedup")))


def _cell(row: pd.Series | None) -> str:
    if row is None:
        return MISSING
    if not store.passed(row):
        return str(row["status"])
    if not store.is_finite(row["speedup"]) and isinstance(row.get("accuracy"), str):
        return row["accuracy"]  # an --accuracy run measures no speedup
    if _too_few(row):  # an interval of so few samples would claim a precision it lacks
        return f"{_format_speedup(row['speedup'])} ({timed_samples(row)} samples)"
    return _format_speedup(row["speedup"], row["speedup_ci_low"], row["speedup_ci_high"])


def _batch_size(rows: pd.DataFrame) -> str:
    # Normally one value per model; show every distinct one rather than pick.
    return "/".join(str(int(b)) for b in _unique(rows["batch_size"]))


def _geomean_cell(rows: pd.DataFrame) -> str:
    """The geomean over the models that passed, each model once (a cycle of
    batch sizes gives a model several rows: their own geomean stands for it)."""
    passed = rows[[store.passed(row) and store.is_finite(row["speedup"]) for _, row in rows.iterrows()]]
    value, n = stats.geomean_of_groups(passed["speedup"], passed["name"])
    if not n:
        return MISSING
    return f"{value:.2f}x (n={n})"


def _model_rows(latest: pd.DataFrame, name: str) -> list[pd.DataFrame]:
    """``name``'s rows, split by batch size when it ran at several (a cycle)."""
    rows = latest[latest["name"] == name]
    sizes = _unique(rows["batch_size"])
    if len(sizes) < 2 or rows.groupby("backend")["batch_size"].nunique().max() < 2:
        return [rows]  # one batch size, or one per backend: one line
    return [rows[rows["batch_size"] == size] for size in sizes]


def speedup_table(df: pd.DataFrame) -> tuple[list[str], list[list[str]]]:
    """Headers and rows of the speedup table.

    One row per model (per model and batch size, for a cycle of batch
    sizes) in order of first appearance (the harness runs models sorted by
    name), one column per backend in order of first appearance, and a final
    ``geomean`` row over the models that passed with each backend.
    """
    latest = store.latest(df)
    backends = _unique(df["backend"])
    headers = ["name", "batch_size", *backends]
    body = []
    for name in _unique(df["name"]):
        for model_rows in _model_rows(latest, name):
            by_backend = {row["backend"]: row for _, row in model_rows.iterrows()}
            body.append([name, _batch_size(model_rows), *(_cell(by_backend.get(b)) for b in backends)])
    if body:
        body.append(["geomean", "", *(_geomean_cell(latest[latest["backend"] == b]) for b in backends)])
    return headers, body


def failures(df: pd.DataFrame, logs: Path | None = None) -> list[tuple[str, str, str, str, str]]:
    """``(name, backend, status, reason, log)`` of every pair whose latest row
    did not pass: the reason is the row's one-line error; the log, the kept
    worker output in the folder ``logs`` (``store.logs_path``) if there is one."""
    latest = store.latest(df)
    found = []
    for _, row in latest.iterrows():
        if store.passed(row):
            continue
        reason = row.get("error")
        log = Path(logs, f"{row['name']}.log") if logs is not None else None
        found.append((row["name"], row["backend"], str(row["status"]),
                      reason if isinstance(reason, str) else "",
                      str(log) if log is not None and log.exists() else ""))
    return found


def is_accuracy(df: pd.DataFrame) -> bool:
    """Whether the rows are of an ``--accuracy`` run: verdicts, no speedups."""
    return ("accuracy" in df and df["accuracy"].notna().any()
            and not df["speedup"].map(store.is_finite).any())


def accuracy_table(df: pd.DataFrame) -> tuple[list[str], list[list[str]]]:
    """One line per (model, backend): the verdict, the largest error seen and
    the tolerance it was judged against (or why the check did not run)."""
    latest = store.latest(df)
    rows = []
    for _, row in latest.iterrows():
        verdict = row["accuracy"] if isinstance(row.get("accuracy"), str) else str(row["status"])
        why = row.get("error") if not store.passed(row) and isinstance(row.get("error"), str) else ""
        rows.append([row["name"], row.get("batch_size"), row["backend"], verdict,
                     row.get("max_error"), row.get("tolerance"), why])
    return ["name", "batch_size", "backend", "verdict", "max error", "tolerance", "why"], tables.cells(rows)


def accuracy_summary(df: pd.DataFrame) -> tuple[list[str], list[list[str]]]:
    """Per backend: how many models passed, failed the check, failed otherwise."""
    latest = store.latest(df)
    rows = []
    for backend in _unique(latest["backend"]):
        own = latest[latest["backend"] == backend]
        passed = int(own.apply(store.passed, axis=1).sum())
        wrong = int((own["status"] == "fail_accuracy").sum())
        rows.append([backend, f"{passed} of {len(own)}", str(wrong), str(len(own) - passed - wrong)])
    return ["backend", "pass", "fail_accuracy", "other failures"], rows


def _latency(row: pd.Series | None) -> float | str:
    if row is None or not store.passed(row) or not store.is_finite(row.get("abs_latency")):
        return MISSING
    return row["abs_latency"]


def latency_table(df: pd.DataFrame) -> tuple[list[str], list[list[str]]]:
    """Median latency (ms per step) of the baseline and each backend, per
    model; the baseline's is the one measured beside the first backend."""
    latest = store.latest(df)
    backends = _unique(df["backend"])
    rows = []
    for name in _unique(df["name"]):
        for model_rows in _model_rows(latest, name):
            by_backend = {row["backend"]: row for _, row in model_rows.iterrows()}
            baseline = next((r.get("baseline_latency") for r in by_backend.values()
                             if store.is_finite(r.get("baseline_latency"))), math.nan)
            cells = [_latency(by_backend.get(b)) for b in backends]
            rows.append([name, _batch_size(model_rows),
                         baseline if store.is_finite(baseline) else MISSING, *cells])
    return ["name", "batch_size", "baseline ms", *(f"{b} ms" for b in backends)], tables.cells(rows)


def describe(df: pd.DataFrame) -> str:
    """What the rows measured, e.g. ``"inference, bf16, static shapes, fixed
    inputs, on cpu, xla baseline"``; several values are /-joined, unrecorded
    ones (files of older schema versions) say so (``store.caption``)."""
    return store.caption(store.settings_of(df))


def _baselines(df: pd.DataFrame) -> list[str]:
    return [str(b) for b in _unique(df["baseline"])] if "baseline" in df else []


def baseline_phrase(df: pd.DataFrame) -> str:
    """``"xla baseline (the model run lazily on the XLA device)"``: the
    baseline named and said what it is."""
    named = [f"{b} baseline ({BASELINES[b]})" if b in BASELINES else f"{b} baseline"
             for b in _baselines(df)]
    return " / ".join(named) or "unknown baseline"


def baseline_note(df: pd.DataFrame) -> str | None:
    """With the eager baseline, that its speedups are not the bridge's alone
    and how to measure against lazy XLA; None otherwise."""
    return EAGER_NOTE if "eager" in _baselines(df) else None


def caption(df: pd.DataFrame) -> str:
    """``"Inference, bf16, static shapes, fixed inputs, on cpu, xla baseline
    (the model run lazily on the XLA device)"``, with what a cycle of batch sizes means when
    there is one."""
    text = store.caption(store.settings_of(df), phrases={"baseline": baseline_phrase(df)})
    text = text[:1].upper() + text[1:]
    if is_accuracy(df) and store.latest(df).duplicated(["name", "backend"]).any():
        text += "; each batch size of the cycle was checked and is a row of its own"
    elif any(len(rows) > 1 for name in _unique(df["name"])
             for rows in [_model_rows(store.latest(df), name)]):
        text += ("; the batch sizes were cycled across repeats and each is a row of its own: "
                 "speedups and first-call compiles are per batch size")
    return text


def title_suffix(df: pd.DataFrame) -> str:
    """``" (inference, bf16, on cpu, xla baseline)"``: the title's account of
    the run, saying ``dynamic shapes`` and ``random inputs`` when they were
    (``store.caption``'s brief form)."""
    if df.empty:
        return ""
    return f" ({store.caption(store.settings_of(df), brief=True)})"


def graph_break_table(breaks: pd.DataFrame) -> tuple[list[str], list[list[str]]]:
    """Per model: how many distinct graph breaks (reason and user frame), in
    which backends, and the first reason."""
    if breaks.empty:
        return [], []
    rows = []
    for name in _unique(breaks["name"]):
        own = breaks[breaks["name"] == name]
        distinct = own.drop_duplicates(subset=["reason", "user_frame"])
        rows.append([name, len(distinct), ", ".join(map(str, _unique(own["backend"]))),
                     str(distinct.iloc[0]["reason"])])
    return ["name", "graph breaks", "backends", "first reason"], tables.cells(rows)


# What the compiler-metrics table shows: header -> CSV column.
METRICS = {
    "first call s": "compilation_latency",
    "fastest s": "compilation_latency_low",
    "slowest s": "compilation_latency_high",
    "cold starts": "cold_starts",
    "first call": "compilation_kind",
    "first-call cache hits": "first_call_cache_hits",
    "warm start s": "warm_start_latency",
    "of it XLA compile s": "first_call_compile_s",
    "compiles/iter": "compiles_per_iter",
    "execute ms/iter": "execute_ms",
    "graphs run/iter": "executes_per_iter",
    "host ms/iter": "host_ms",
    "baseline host ms/iter": "baseline_host_ms",
    "dynamo graphs": "dynamo_graphs",
    "graph breaks": "graph_breaks",
    "recompiles": "recompiles",
    "first-call compiles": "first_call_compiles",
    "baseline first-call compiles": "baseline_first_call_compiles",
    "fallback ops": "fallback_ops",
    "repeats": "repeats_used",
    "repeats ended": "repeat_stop",
    "threads": "threads",
    "persistent cache hits": "persistent_cache_hits",
    "misses": "persistent_cache_misses",
    "load failures": "persistent_cache_load_failures",
}
FIRST_CALL_NOTE = ("First call: cold = timed in fresh processes of the runner's own, where no "
                   "executable compiled by another runner can serve it: the median over "
                   "\"cold starts\" such processes, with the fastest and the slowest; in_process = in the "
                   "measuring process, where one may (first-call cache hits count such). "
                   "Warm start: a fresh runner's first call with its executable already cached.")
# What the per-step columns count (benchmarks.run.probes): torch_xla times an
# execution from its dispatch to its completion, and a step dispatches its
# graphs without waiting for the one before.
PER_STEP_NOTE = ("Per timed step: compiles/iter and execute ms/iter are means over the repeats, "
                 "host ms/iter a median. compiles/iter: XLA compiles, those XLA's cache served "
                 "included. execute ms/iter: torch_xla's ExecuteTime summed over the graphs the "
                 "step ran (graphs run/iter), each timed from its dispatch to its completion, so a "
                 "graph queued behind another counts its wait too: with several graphs per step "
                 "the sum can exceed the step's latency (the Latency table, a median of whole "
                 "steps). host ms/iter: the time until the step's call returns, before the device sync.")
HEADROOM_NOTE = ("Zero-overhead limit: the lazy baseline's step time over that step less its "
                 "tracing time, the speedup a replay with no host cost at all would reach on "
                 "this machine (an estimate, without an interval of its own); share captured = "
                 "(speedup - 1) / (limit - 1), with the speedup's interval in brackets. A share "
                 "is given only where it can be told from the noise: \"within noise\" when the "
                 "speedup's interval is wider than the gain there is, \"above the estimated "
                 "limit\" when the whole interval lies above it, \"slower than the baseline\" "
                 "when it lies below 1x. A limit near 1.00x leaves nothing to gain (the step is "
                 "all execution).")
# Below this limit a model has nothing left to gain; above this share, a
# backend has taken (nearly) all there was.
NOTHING_TO_GAIN = 1.02
AT_THE_LIMIT = 0.9
# The memory table: header -> CSV column.
MEMORY = {
    "peak host MB": "peak_host_mb",
    "baseline peak host MB": "baseline_peak_host_mb",
    "host ratio": "host_compression_ratio",
    "peak device MB": "peak_device_mb",
    "baseline peak device MB": "baseline_peak_device_mb",
    "device ratio": "device_compression_ratio",
}
# The memory note, sentence by sentence, each for the column it explains.
MEMORY_NOTES = {
    "peak host MB": ("Peak host memory: the worker's RSS high-water mark during the runner's steps "
                     "(everything the process holds included)"),
    "baseline peak host MB": "baseline peak: the same over the baseline's steps",
    "host ratio": ("ratio = baseline peak / backend peak, as PyTorch's compression_ratio "
                   "(above 1: less memory than the baseline)"),
}
NO_DEVICE_MEMORY = "The XLA device did not report memory: no device columns."
# Counters of --compile-cache: all zero where the cache was off (with it on,
# every compile is a hit, a miss or a load failure), so shown only if any is not.
PERSISTENT_CACHE = ("persistent_cache_hits", "persistent_cache_misses", "persistent_cache_load_failures")
UNSTABLE_REMEDY = "rerun with a larger --repeat, on a quieter machine"


def _recorded(df: pd.DataFrame, columns: dict[str, str]) -> dict[str, str]:
    """The ``columns`` (header -> CSV column) some row holds a value of; the
    persistent-cache counters only where the cache counted something."""
    present = {h: c for h, c in columns.items() if c in df.columns and df[c].notna().any()}
    cache = [c for c in present.values() if c in PERSISTENT_CACHE]
    if cache and not df[cache].fillna(0).astype(float).to_numpy().any():
        present = {h: c for h, c in present.items() if c not in PERSISTENT_CACHE}
    return present


def metrics_table(df: pd.DataFrame, columns: dict[str, str] | None = None
                  ) -> tuple[list[str], list[list[str]]]:
    """``columns`` (header -> CSV column; default ``METRICS``) of the rows that
    passed; empty when none were recorded. Columns no row recorded are left out."""
    columns = METRICS if columns is None else columns
    present = _recorded(df, columns)
    if "of it XLA compile s" in present and "first call s" not in present:  # an accuracy run's: no timed first call
        present = {("first-call XLA compile s" if h == "of it XLA compile s" else h): c for h, c in present.items()}
    recorded = [c for c in present.values() if c != "compilation_latency"]
    if not recorded:
        return [], []
    latest = store.latest(df)
    rows = [[row["name"], row.get("batch_size"), row["backend"], *(row[c] for c in present.values())]
            for _, row in latest.iterrows() if store.passed(row)]
    return ["name", "batch_size", "backend", *present], tables.cells(rows)


def memory_note(headers: list[str]) -> str:
    """What the memory table's ``headers`` mean, only those it has."""
    said = [MEMORY_NOTES[h] for h in headers if h in MEMORY_NOTES]
    text = "; ".join(said) + "." if said else ""
    if not any("device" in h for h in headers):
        text += f" {NO_DEVICE_MEMORY}"
    return text.strip()


def headroom_share(speedup: float, low: float, high: float, limit: float) -> tuple[str, str]:
    """``(share captured, what is left)`` of a speedup with its interval
    ``[low, high]`` against the zero-overhead ``limit``: a percentage (with
    its interval, clipped to 0-100%) only where the share can be told from
    the noise; otherwise words that say why not."""
    up_to = f"up to {limit:.2f}x"
    if limit < NOTHING_TO_GAIN:
        return "", "nothing to gain"
    if not (store.is_finite(low) and store.is_finite(high)):
        return "no interval", up_to
    if low > limit:
        return "above the estimated limit", "none by the estimate"
    if high < 1:
        return "slower than the baseline", up_to
    if high - low >= limit - 1:
        return "within noise", up_to
    share, share_low, share_high = (min(max((v - 1) / (limit - 1), 0.0), 1.0) for v in (speedup, low, high))
    left = "at the limit" if share >= AT_THE_LIMIT else up_to
    return f"{share:.0%} [{share_low:.0%}, {share_high:.0%}]", left


def headroom_table(df: pd.DataFrame) -> tuple[list[str], list[list[str]]]:
    """Per passing row with a zero-overhead limit: speedup, limit, share
    captured and what is left; empty when no row has a limit (an eager
    baseline has no tracing to remove)."""
    if "zero_overhead_speedup" not in df.columns or not df["zero_overhead_speedup"].notna().any():
        return [], []
    latest = store.latest(df)
    rows = []
    for _, row in latest.iterrows():
        if not store.passed(row) or not store.is_finite(row["zero_overhead_speedup"]):
            continue
        limit = row["zero_overhead_speedup"]
        low, high = row.get("speedup_ci_low"), row.get("speedup_ci_high")
        share, left = headroom_share(row["speedup"], low, high, limit)
        rows.append([row["name"], row.get("batch_size"), row["backend"],
                     _format_speedup(row["speedup"], low, high), f"{limit:.2f}x", share, left])
    return ["name", "batch_size", "backend", "speedup", "zero-overhead limit", "share captured", "left"], tables.cells(rows)


def persistent_cache_warning(df: pd.DataFrame) -> str | None:
    """Why ``--compile-cache`` did not help, when it tried to load executables
    and never could (None otherwise)."""
    columns = ("persistent_cache_hits", "persistent_cache_load_failures")
    if df.empty or any(c not in df.columns for c in columns):
        return None
    hits, failures = (int(df[c].fillna(0).sum()) for c in columns)
    if failures == 0 or hits > 0:
        return None
    return (f"--compile-cache: every attempt to load an executable from the persistent cache "
            f"failed ({failures} deserialize failures), so each graph was compiled again; "
            "torch_xla 2.9 cannot load its executables on PJRT CPU (the cache helps on TPU)")


def unstable(df: pd.DataFrame) -> list[tuple[str, str, str, str]]:
    """``(name, backend, batch size, reason)`` of every row flagged as
    unstable (a row with too few samples for an interval is
    ``too_few_samples``'s); the batch size tells the rows of a cycle apart."""
    if "unstable" not in df.columns:
        return []
    latest = store.latest(df)
    return [(row["name"], row["backend"], _batch_size(pd.DataFrame([row])), row["unstable"])
            for _, row in latest.iterrows()
            if isinstance(row["unstable"], str) and row["unstable"] and not _too_few(row)]


def too_few_samples(df: pd.DataFrame) -> list[tuple[str, str, int]]:
    """``(name, backend, samples)`` of every passing row timed fewer times
    than ``compare``'s paired test needs (``stats.MIN_PAIRED_SAMPLES``): its
    speedup is shown without an interval, and ``compare`` will call it
    inconclusive."""
    latest = store.latest(df)
    return [(row["name"], row["backend"], timed_samples(row)) for _, row in latest.iterrows()
            if _too_few(row)]


def too_few_line(name: str, backend: str, samples: int) -> str:
    return (f"{name} / {backend}: {samples} timed samples, fewer than the {stats.MIN_PAIRED_SAMPLES} "
            f"a paired test needs: no interval is given and compare will call it inconclusive; "
            f"rerun with --repeat {stats.MIN_PAIRED_SAMPLES} or more")


# --------------------------------------------------------------------------
# Render


def _table(df: pd.DataFrame, tablefmt: str) -> str:
    return tables.render(*speedup_table(df), tablefmt)


def _verdicts(df: pd.DataFrame, tablefmt: str) -> str:
    return tables.render(*accuracy_table(df), tablefmt)


def render_markdown(df: pd.DataFrame, title: str = DEFAULT_TITLE, plot: str | None = None,
                    graph_breaks: pd.DataFrame | None = None, graph_breaks_link: str | None = None,
                    logs: Path | None = None) -> str:
    """Markdown report: title, caption, table (a caption and table per group
    of settings), then the sections that apply: the plot, latencies,
    failures with their reasons (and kept logs, from the folder ``logs``),
    unstable measurements, compiler metrics, memory, graph breaks
    (``graph_breaks``: the rows of the graph-break CSV, linked as
    ``graph_breaks_link``). An accuracy run's report is its verdicts."""
    parts = [f"# {title}", ""]
    if df.empty:
        return "\n".join([*parts, "_No results._", ""])
    if is_accuracy(df):
        parts += _accuracy_sections(df)
    else:
        parts += _speed_sections(df, plot)
    summaries = hud.summarise(df)
    if summaries:
        headers, rows = hud.render(summaries)
        parts += ["## Dashboard summary", "", hud.note(headers), "", tables.render(headers, rows, tables.MARKDOWN), ""]
    failed = failures(df, logs)
    if failed:
        listing = tables.render(["name", "backend", "status", "reason", "log"], [list(f) for f in failed], tables.MARKDOWN)
        parts += ["## Failures", "", listing, ""]
    parts += _metric_sections(df)  # an accuracy run's too: its fallback ops, compiles
    if graph_breaks is not None:
        parts += _graph_break_section(graph_breaks, graph_breaks_link)
    return "\n".join(parts)


def _accuracy_sections(df: pd.DataFrame) -> list[str]:
    parts = [ACCURACY_EXPLANATION, ""]
    for group in store.groups(df):
        parts += [f"{caption(group)}.", "", tables.render(*accuracy_summary(group), tables.MARKDOWN), "",
                  tables.render(*accuracy_table(group), tables.MARKDOWN), ""]
    return parts


def _speed_sections(df: pd.DataFrame, plot: str | None) -> list[str]:
    parts = [EXPLANATION, ""]
    note = baseline_note(df)
    if note:
        parts += [note, ""]
    sections = store.groups(df)
    for group in sections:
        if len(sections) > 1:
            parts += [f"## {describe(group)}", ""]
        parts += [f"{caption(group)}.", "", _table(group, tables.MARKDOWN), ""]
    if plot:
        parts += [f"![speedups]({plot})", ""]
    headers, rows = latency_table(df)
    if rows and any(cell != MISSING for row in rows for cell in row[2:]):
        parts += ["## Latency", "", LATENCY_NOTE, "", tables.render(headers, rows, tables.MARKDOWN), ""]
    return parts


def _metric_sections(df: pd.DataFrame) -> list[str]:
    parts = []
    few = too_few_samples(df)
    if few:
        parts += ["## Too few samples", "",
                  f"These speedups rest on fewer than the {stats.MIN_PAIRED_SAMPLES} timed samples a paired "
                  f"test needs: they are shown without an interval, and `compare` calls them inconclusive. "
                  f"Rerun with --repeat {stats.MIN_PAIRED_SAMPLES} or more.", "",
                  tables.render(["name", "backend", "samples"], [[n, b, str(k)] for n, b, k in few], tables.MARKDOWN), ""]
    shaky = unstable(df)
    if shaky:
        parts += ["## Unstable measurements", "", f"To firm them up, {UNSTABLE_REMEDY}.", "",
                  tables.render(["name", "backend", "batch size", "why"], [list(s) for s in shaky], tables.MARKDOWN), ""]
    headers, rows = headroom_table(df)
    if rows:
        parts += ["## Headroom", "", HEADROOM_NOTE, "", tables.render(headers, rows, tables.MARKDOWN), ""]
    headers, rows = metrics_table(df)
    if rows:
        notes = [FIRST_CALL_NOTE, ""] if "first call" in headers else []
        if {"compiles/iter", "execute ms/iter", "host ms/iter"} & set(headers):
            notes += [PER_STEP_NOTE, ""]
        parts += ["## Compiler metrics", "", *notes, tables.render(headers, rows, tables.MARKDOWN), ""]
    cache = persistent_cache_warning(df)
    if cache:
        parts += [f"Warning: {cache}.", ""]
    headers, rows = metrics_table(df, MEMORY)
    if rows:
        parts += ["## Memory", "", memory_note(headers), "", tables.render(headers, rows, tables.MARKDOWN), ""]
    return parts


def _graph_break_section(breaks: pd.DataFrame, link: str | None) -> list[str]:
    where = f"[{link}]({link})" if link else "the graph-break CSV"
    headers, rows = graph_break_table(breaks)
    if not rows:
        return ["## Graph breaks", "", f"Dynamo broke no graph ({where}).", ""]
    return ["## Graph breaks", "", f"Every break with its reason and user frame: {where}.", "",
            tables.render(headers, rows, tables.MARKDOWN), ""]


def render_console(df: pd.DataFrame, logs: Path | None = None) -> str:
    """Plain-text report for the terminal: caption line (naming the
    baseline), table (of speedups, or of verdicts for an accuracy run), with
    the eager baseline how to measure against lazy XLA, each failure with
    its reason and kept log, and a warning per unstable measurement."""
    if df.empty:
        return "No results.\n"
    accuracy = is_accuracy(df)
    table = _verdicts if accuracy else _table
    text = "\n".join(f"{caption(group)}\n\n{table(group, 'simple')}\n" for group in store.groups(df))
    note = None if accuracy else baseline_note(df)
    if note:
        text += f"\nnote: {note[:1].lower()}{note[1:]}\n"
    failed, shaky = failures(df, logs), unstable(df)
    for name, backend, status, reason, log in failed:
        text += f"\nfailed: {name} / {backend}: {status}{': ' + reason if reason else ''}"
        text += f" (log: {log})" if log else ""
    for name, backend, batch_size, why in shaky:
        text += (f"\nwarning: {name} / {backend} at batch size {batch_size} may be unstable ({why}); "
                 f"{UNSTABLE_REMEDY}.")
    few = too_few_samples(df)
    for name, backend, samples in few:
        text += f"\nwarning: {too_few_line(name, backend, samples)}."
    return text + ("\n" if failed or shaky or few else "")


def write_markdown(csv_path: str | os.PathLike, title: str | None = None,
                   plot: str | None = None) -> Path:
    """Render the CSV at ``csv_path`` into the ``.md`` beside it; return its path.

    Written to a temporary file and renamed, so a reader never sees half a
    report.  The default title names the run (the CSV's stem).
    """
    df = store.read_rows(csv_path)
    breaks_path = store.graph_breaks_path(csv_path)
    breaks = store.read_graph_breaks(csv_path) if breaks_path.exists() else None
    default = ACCURACY_TITLE if is_accuracy(df) else DEFAULT_TITLE
    text = render_markdown(df, title=title or f"{default}: {Path(csv_path).stem}{title_suffix(df)}",
                           plot=plot, graph_breaks=breaks,
                           graph_breaks_link=breaks_path.name if breaks is not None else None,
                           logs=store.logs_path(csv_path))
    target = store.markdown_path(csv_path)
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, target)
    return target


def report_files(csv_path: str | os.PathLike, accuracy: bool) -> list[Path]:
    """Every file a run leaves for ``csv_path`` (``store.files_beside``),
    less the chart for an ``accuracy`` run: ``finish`` draws none for it."""
    chart = store.plot_path(csv_path)
    return [p for p in store.files_beside(csv_path) if not (accuracy and p == chart)]


def finish(csv_path: str | os.PathLike) -> str:
    """Render the stored rows: the plot (not for an accuracy run: verdicts
    are no bars), the markdown and PyTorch's files (``pytorch_files``)
    beside the CSV; returns the console report."""
    # Here, not at the top: listing report_files (a dry run) needs no matplotlib.
    from benchmarks.results import plots

    df = store.read_rows(csv_path)
    png = None
    if store.plot_path(csv_path) in report_files(csv_path, is_accuracy(df)):
        png = plots.plot_speedups(df, store.plot_path(csv_path)).name
    write_markdown(csv_path, plot=png)
    pytorch_files.write(csv_path)  # PyTorch's files, for its tools
    return render_console(df, store.logs_path(csv_path))
