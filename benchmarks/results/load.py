"""Load: where other processes bent a row's numbers, by one rule.

A worker reads how many cores other processes kept busy while it timed its
repeats (``benchmarks.run.machine_load``: a row's ``other_cores``, each
process's ``process_other_cores`` on the samples records). A process timed
beside a busy neighbour is slower in ways its samples cannot tell from the
code: one such process of six can make a row's interval span 0.43 to 6.82.

The rule (``load_outliers``), in order:

1. a process is *loaded* when others kept more than ``threshold()`` cores
   busy on average while it was timed: the gate's ``loaded_cores``
   (``configs/gate.yaml``), the one figure compare, the gate's judge and the
   run's notes read, so that changing it there changes each of them;
2. a row's speedup and interval leave its loaded processes out, as long as
   at least ``MIN_KEPT`` processes and half of them stay quiet;
3. else (most of the row was loaded) none is left out: the row keeps every
   process and is only said to be loaded: leaving out most of a row would
   be choosing its number.

``notes(records)`` says it in words for the console and the report: which
process, how busy the machine was, and what would help.
"""
from __future__ import annotations

from pathlib import Path

import math
from typing import Iterable, Mapping, Sequence

MIN_KEPT = 2  # quiet processes a row needs to leave its loaded ones out
REMEDY = ("a quieter machine (stop the other work), or --cpu-affinity to give the run cores of its own, "
          "would help")


def _finite(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


# The gate's policy file: where loaded_cores is set (the judge's Policy reads it too).
GATE_CONFIG = Path(__file__).resolve().parents[2] / "configs" / "gate.yaml"


def threshold() -> float:
    """The cores other processes may keep busy, on average, before a process
    timed beside them is loaded: ``loaded_cores`` of the gate's policy, read
    each time (a changed policy file is seen by the next reader)."""
    import yaml  # read here, not through the judge's Policy: the judge sits above results

    return float(yaml.safe_load(GATE_CONFIG.read_text(encoding="utf-8"))["loaded_cores"])


def is_loaded(other_cores: float | None, limit: float) -> bool:
    """Whether a process timed while others kept ``other_cores`` busy is
    loaded (None or nan: not recorded, never loaded)."""
    return _finite(other_cores) and other_cores > limit


def loaded(loads: Sequence[float | None], limit: float | None = None) -> tuple[int, ...]:
    """The processes (0-based) timed while others kept more than ``limit``
    (default ``threshold()``) cores busy."""
    limit = threshold() if limit is None else limit
    return tuple(i for i, x in enumerate(loads) if is_loaded(x, limit))


def load_outliers(loads: Sequence[float | None], limit: float | None = None) -> tuple[int, ...]:
    """The processes of a row that its speedup and interval leave out (the
    module docstring's rule); ``loads``: each process's ``other_cores``
    (None: not recorded, never left out)."""
    out = loaded(loads, limit)
    kept = len(loads) - len(out)
    if not out or kept < MIN_KEPT or kept * 2 < len(loads):
        return ()
    return out


def _cores(x: float) -> str:
    return f"{x:.2f} cores" if x != 1 else "1 core"


def note(name: str, backend: str, loads: Sequence[float | None], left_out: Iterable[int] = (),
         limit: float | None = None) -> str | None:
    """One line on the load a row was timed under, or None when it was quiet."""
    busy = loaded(loads, limit)
    if not busy:
        return None
    left_out = set(left_out)
    n = len(loads)
    quiet = [x for i, x in enumerate(loads) if i not in busy and _finite(x)]
    if n == 1:
        where = f"timed while other processes kept {_cores(loads[0])} busy"
    else:
        named = ", ".join(f"process {i + 1} of {n} ({_cores(loads[i])})" for i in busy)
        where = f"{named} timed while other processes kept the machine busy"
        if quiet:
            where += f" (the others {_cores(max(quiet))} at most)"
    if left_out:
        effect = "left out of its speedup and interval"
    elif n > 1:
        effect = "too many processes loaded to leave them out: its speedup counts them"
    else:
        effect = "its speedup counts it"
    return f"load: {name} / {backend}: {where}; {effect}; {REMEDY}"


def notes(rows: Iterable[Mapping], records: Iterable[Mapping], limit: float | None = None) -> list[str]:
    """The load lines of a run (one per row timed under load), in the rows'
    order: each process's load from the row's backend samples record
    (``process_other_cores``, and the processes the rule left out), else
    the row's own ``other_cores`` (one process)."""
    by_key = {(r.get("name"), r.get("backend"), r.get("batch_size")): r for r in records
              if r.get("role") == "backend"}
    limit = threshold() if limit is None else limit
    found = []
    for row in rows:
        batch = row.get("batch_size")
        batch = int(batch) if _finite(batch) else None
        record = by_key.get((row.get("name"), row.get("backend"), batch), {})
        loads = record.get("process_other_cores")
        if not isinstance(loads, list):
            loads = [row["other_cores"]] if _finite(row.get("other_cores")) else []
        line = note(str(row.get("name")), str(row.get("backend")), loads, record.get("process_left_out") or (), limit)
        if line:
            found.append(line)
    return found
