"""How busy other processes kept the machine while a model was timed.

A night measured beside a test suite or a second job is slower and noisier
in ways its samples cannot tell from a change of the code: a loaded night in
the gate's pool widens the baseline a slowdown is measured against. So the
worker reads the kernel's CPU time around its timed repeats: the machine's
busy time (every CPU, steal included: time a virtual CPU waited for its
host) less this process's own, over the wall time, is the number of cores
others kept busy on average (``other_cores``; 0 on a quiet machine, 1 with
one other busy thread). Inside a container the kernel may count its host's
CPUs: the figure is then the host's.  Nothing here imports torch.
"""
from __future__ import annotations

import time

import psutil


def _busy_s() -> float:
    """CPU seconds the machine spent busy, all CPUs (guest time is already in user and nice)."""
    times = psutil.cpu_times()
    idle = times.idle + getattr(times, "iowait", 0.0)
    guest = getattr(times, "guest", 0.0) + getattr(times, "guest_nice", 0.0)
    return sum(times) - idle - guest


def _own_s() -> float:
    """CPU seconds of this process (every thread) and its waited-for children."""
    times = psutil.Process().cpu_times()
    return times.user + times.system + times.children_user + times.children_system


class OtherLoad:
    """Started at construction; ``cores()`` is the mean number of cores
    other processes kept busy since (None when the kernel gives no figure)."""

    def __init__(self) -> None:
        self._start = self._read()

    @staticmethod
    def _read() -> tuple[float, float, float] | None:
        try:
            return time.monotonic(), _busy_s(), _own_s()
        except (OSError, psutil.Error, AttributeError):
            return None

    def cores(self) -> float | None:
        end = self._read()
        if self._start is None or end is None or end[0] <= self._start[0]:
            return None
        wall = end[0] - self._start[0]
        other = (end[1] - self._start[1]) - (end[2] - self._start[2])
        return round(max(0.0, other / wall), 3)
