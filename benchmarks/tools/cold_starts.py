"""Cold first calls side by side, in the harness's own figure:
``python -m benchmarks.tools.cold_starts CSV [--ours BACKEND]``.

Reads the rows of a ``runner.py`` run (cold first calls are its default) and
prints, per model, each backend's cold first call (``compilation_latency``:
the median of ``cold_starts`` fresh processes, with the fastest and the
slowest), the XLA compiles and compile seconds in it (medians too), and the
ratio of ours (``--ours``, default ``torchxla_trace_once``) to each other
backend: above 1, ours is slower. Then, per other backend, the geomean of
the ratios and on how many models ours was no slower, and, where a model's
two ranges overlap, that the medians alone cannot order them.

``make bench-cold-starts`` runs the ten seed models with ours, torch_xla's
``openxla_eval`` and ``torchxla_trivial`` and prints this table. Unlike
``benchmarks.tools.overhead --first-calls-only``, which times bare
``torch.compile`` calls in fresh interpreters, this reads the figure the
harness reports: the model loaded as the harness loads it, the call ending
with ``torch_xla.sync()`` and a device wait.
"""
from __future__ import annotations

import sys
from pathlib import Path

PROG = "python -m benchmarks.tools.cold_starts"
OURS = "torchxla_trace_once"


def comparison(df, ours: str = OURS) -> tuple[list[dict], list[str]]:
    """(a row per model: each backend's cold first call, range, compiles and
    compile seconds, ours' ratio to each other backend; summary lines). Only
    passing rows whose first call was cold count; a model where ours has
    none is left out."""
    from benchmarks.results import stats, store

    rows = store.latest(df)
    rows = rows[[store.passed(r) for _, r in rows.iterrows()]]
    rows = rows[rows["compilation_kind"] == "cold"]
    others = [b for b in dict.fromkeys(rows["backend"]) if b != ours]
    table, ratios = [], {b: [] for b in others}
    for (name, batch), model in rows.groupby(["name", "batch_size"], sort=False):
        by = {r["backend"]: r for _, r in model.iterrows()}
        if ours not in by:
            continue
        line = {"model": name, "batch": batch, "processes": by[ours]["cold_starts"]}
        for backend in [ours, *others]:
            label = "ours" if backend == ours else backend
            line[f"{label} s"] = _seconds(by.get(backend))
            line[f"{label} XLA"] = _xla(by.get(backend))
        for backend in others:
            if backend in by:
                ratio = by[ours]["compilation_latency"] / by[backend]["compilation_latency"]
                ratios[backend].append((name, ratio, _overlap(by[ours], by[backend])))
                line[f"ours/{backend}"] = f"{ratio:.3f}"
        table.append(line)
    summary = []
    for backend, found in ratios.items():
        if not found:
            continue
        slower = [n for n, r, _ in found if r > 1]
        unclear = [n for n, _, overlap in found if overlap]
        summary.append(f"{ours} against {backend}: geomean ours/{backend} "
                       f"{stats.geomean([r for _, r, _ in found]):.3f}; no slower on "
                       f"{len(found) - len(slower)} of {len(found)} models"
                       + (f" (slower: {', '.join(slower)})" if slower else "")
                       + (f"; ranges overlap on {', '.join(unclear)}" if unclear else ""))
    return table, summary


def _seconds(row) -> str | None:
    """``median [fastest, slowest]`` of a row's cold first call."""
    if row is None:
        return None
    from benchmarks.results import store

    low, high = row.get("compilation_latency_low"), row.get("compilation_latency_high")
    text = f"{row['compilation_latency']:.2f}"
    if store.is_finite(low) and store.is_finite(high):
        text += f" [{low:.2f}, {high:.2f}]"
    return text


def _xla(row) -> str | None:
    """The XLA compiles and compile seconds of a row's first call."""
    from benchmarks.results import store

    if row is None or not store.is_finite(row.get("first_call_compile_s")):
        return None
    compiles = row.get("first_call_compiles")
    return f"{row['first_call_compile_s']:.2f} s / {compiles}" if store.is_finite(compiles) else \
        f"{row['first_call_compile_s']:.2f} s"


def _overlap(a, b) -> bool:
    """Do two rows' ranges of cold first calls overlap (or is one missing)?"""
    from benchmarks.results import store

    bounds = [a.get("compilation_latency_low"), a.get("compilation_latency_high"),
              b.get("compilation_latency_low"), b.get("compilation_latency_high")]
    if not all(store.is_finite(v) for v in bounds):
        return True
    low_a, high_a, low_b, high_b = bounds
    return low_a <= high_b and low_b <= high_a


def main(argv=None) -> int:
    """0 when printed; bad input: one line on stderr and 2 (``usage.guarded``)."""
    from benchmarks.usage import guarded

    return guarded(PROG, lambda: _main(argv))


def _main(argv) -> int:
    from benchmarks.results import store, tables
    from benchmarks.usage import Parser, UsageError

    parser = Parser(prog=PROG, description=__doc__.split("\n\n")[0])
    parser.add_argument("csv", help="a runner.py run's CSV")
    parser.add_argument("--ours", default=OURS, help=f"the backend compared with the others (default {OURS})")
    args = parser.parse_args(argv)
    path = Path(args.csv)
    if not path.is_file():
        raise UsageError(f"{path}: no such file")
    try:
        df = store.read_rows(path)
    except ValueError as err:
        raise UsageError(str(err).splitlines()[0]) from None
    table, summary = comparison(df, args.ours)
    if not table:
        raise UsageError(f"{path}: no passing row of {args.ours} with a cold first call")
    print(f"Cold first calls (ours: {args.ours}), s: the median of fresh processes per backend "
          "[fastest, slowest]; XLA: compile seconds / compiles in it (medians); "
          "ours/other above 1: ours is slower")
    headers = list(dict.fromkeys(h for row in table for h in row))
    print(tables.render_table(headers, [[row.get(h) for h in headers] for row in table]))
    print("\n".join(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
