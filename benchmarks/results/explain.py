"""``runner.py --explain``: per model and backend, what kept the compiled
runs from being one graph replayed at no cost, read back from a run's files.

For each row: the graph breaks with dynamo's reasons and the user frame, the
ops torch_xla ran on the host (``fallback_ops``), the recompiles with the
guard that failed for each, and the share of a step the host spent before the
device could run (``host_ms`` of ``abs_latency``). ``render(csv_path)`` is the
whole of it; the run prints it after its report.
"""
from __future__ import annotations

import math
from pathlib import Path

from benchmarks.results import store


def _number(value) -> float | None:
    try:
        value = float(value)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def _ms(value: float) -> str:
    """Milliseconds in fixed point, three significant digits (never an exponent)."""
    return f"{value:.3g}" if abs(value) < 100 else f"{value:.0f}"


def _host_share(row) -> str:
    host, latency = _number(row.get("host_ms")), _number(row.get("abs_latency"))
    if host is None or not latency:
        return "host time: not measured (a host backend, or no timed step)"
    return f"host time: {_ms(host)} ms of a {_ms(latency)} ms step ({host / latency:.0%})"


def _recompile_reasons(samples: list[dict]) -> dict[store.ExperimentKey, list[str]]:
    """Each experiment's guard failures, from its backend samples record (the last wins)."""
    return {store.experiment_key(r): r["recompile_reasons"] for r in samples
            if r.get("role") == "backend" and r.get("recompile_reasons")}


def render(csv_path: str | Path) -> str:
    rows = store.read_rows(csv_path)
    breaks = store.read_graph_breaks(csv_path)
    samples_path = store.samples_path(csv_path)
    recompiled = _recompile_reasons(store.read_samples(samples_path) if samples_path.exists() else [])
    parts = ["Explain: what each compiled run did besides replaying one graph"]
    for _, row in rows.iterrows():
        if row.get("status") != store.STATUS_PASS:
            parts += ["", f"{row['name']} · {row['backend']}: {row.get('status')} ({row.get('error')})"]
            continue
        name, backend = row["name"], row["backend"]
        mine = breaks[(breaks["name"] == name) & (breaks["backend"] == backend)] if len(breaks) else breaks
        fallback = row.get("fallback_ops")
        fallback = fallback.split() if isinstance(fallback, str) else []  # NaN: none recorded
        recompiles = _number(row.get("recompiles"))
        reasons = [r for r in recompiled.get(store.experiment_key(row), []) if str(r).strip()]
        lines = [f"{name} · {backend} (batch size {row.get('batch_size')})",
                 f"  graph breaks: {len(mine)}"]
        lines += [f"    - {b['reason']}" + (f" [{b['user_frame']}]" if b.get("user_frame") else "")
                  for _, b in mine.iterrows()]
        lines.append(f"  ops run on the host by torch_xla: {', '.join(fallback) if fallback else 'none'}")
        lines.append(f"  recompiles: {'not measured' if recompiles is None else int(recompiles)}")
        lines += [f"    - {reason}" for reason in reasons if recompiles]  # none: no bullet
        lines.append(f"  {_host_share(row)}")
        parts += ["", *lines]
    return "\n".join(parts) + "\n"
