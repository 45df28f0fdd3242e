"""CPUs and threads: the one home of ``--cpu-affinity`` and ``--threads``.

``parse_cpus`` reads a CPU list as ``taskset -c`` takes it (``"0-2,5"``) and
refuses CPUs this process may not run on; ``format_cpus`` writes one back;
``allowed_cpus`` and ``thread_count`` say what a worker runs on and with how
many threads; ``pin`` applies the run's CPUs to the calling process. Nothing
here imports torch: the parent uses it too.
"""
from __future__ import annotations

import os

from benchmarks.run.config import RunConfig
from benchmarks.usage import UsageError


def available() -> set[int]:
    """The CPUs this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return set(os.sched_getaffinity(0))
    return set(range(os.cpu_count() or 1))


def parse_cpus(text: str | None) -> tuple[int, ...]:
    """``"0-2,5"`` -> ``(0, 1, 2, 5)``: CPUs this process may run on."""
    if text is None:
        return ()
    allowed = available()
    cpus: set[int] = set()
    try:
        for part in text.split(","):
            low, _, high = part.strip().partition("-")
            first, last = int(low), int(high or low)
            if first < 0 or last < first:
                raise ValueError
            if last > max(allowed):  # named before the range is built: it may be huge
                raise UsageError(f"--cpu-affinity: CPU {last} not available here "
                                 f"(allowed: {format_cpus(allowed)})")
            cpus.update(range(first, last + 1))
    except ValueError:
        raise UsageError(f"--cpu-affinity takes CPU numbers and ranges such as 0-3,6, got {text!r}") from None
    outside = cpus - allowed
    if outside:
        raise UsageError(f"--cpu-affinity: CPU(s) {format_cpus(outside)} not available here "
                         f"(allowed: {format_cpus(allowed)})")
    return tuple(sorted(cpus))


def format_cpus(cpus) -> str:
    """``(0, 1, 2, 5)`` -> ``"0-2,5"`` (as ``taskset -c`` takes them)."""
    runs: list[list[int]] = []
    for cpu in sorted(set(cpus)):
        if runs and cpu == runs[-1][1] + 1:
            runs[-1][1] = cpu
        else:
            runs.append([cpu, cpu])
    return ",".join(f"{a}" if a == b else f"{a}-{b}" for a, b in runs)


def allowed_cpus(config: RunConfig) -> tuple[int, ...]:
    """The CPUs the worker runs on: the run's affinity, or those inherited."""
    if config.cpu_affinity:
        return tuple(config.cpu_affinity)
    return tuple(sorted(available()))


def thread_count(config: RunConfig) -> int:
    """Threads for torch's intra-op pool and XLA's CPU client: the run's
    ``--threads``, or one per allowed CPU."""
    return config.threads or len(allowed_cpus(config))


def pin(config: RunConfig) -> None:
    """Pin this process (and the processes it starts) to the run's CPUs, if it names any."""
    if config.cpu_affinity and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, config.cpu_affinity)
