"""What a contender did besides taking time: compiles, graphs, graph breaks, memory.

A ``Probe`` snapshots torch_xla's metrics, dynamo's counters and the memory
high-water marks before and after every step of its contender (outside the
timer), so that with contenders interleaved each delta is still attributed to
the contender that caused it, and, with a cycle of batch sizes, to the shape
the step ran at. ``summary(shape)`` turns the deltas into row fields; a value
that was not observed stays ``None`` (an empty cell), never a made-up number.

Besides the probe:

* ``graph_hlo(gm, example_inputs)`` -- the HLO of one FX graph, traced lazily
  on the XLA device (what the XLA backends compile for it);
* ``profile_step(step, inputs, path)`` / ``xla_profile_step(...)`` -- one step
  under ``torch.profiler`` (a Chrome trace) / torch_xla's profiler.

Memory: the host peak is the process's RSS high-water mark (``VmHWM``),
reset before each step through ``/proc/self/clear_refs``, so it is the peak
of that step, everything the process holds included (all contenders' models);
where that reset is unavailable (not Linux), the resident size after the
step (psutil), a lower bound. The device peak comes from torch_xla's memory
info where the device reports it (TPU; PJRT CPU does not).

One module, though over 400 lines: everything here reads the compilers'
and the process's state around a step (torch_xla's metrics, dynamo's
counters, the HLO, the profilers), so it is what has to change when
torch_xla does; the harness's other modules never touch those APIs.
"""
from __future__ import annotations

import json
import os
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any, Hashable

import psutil


from benchmarks.results import stats

_XLA_COUNTERS = ("UncachedCompile", "CachedCompile")
# torch_xla's persistent compilation cache (``--compile-cache``): executables
# loaded from disk, graphs not found there, files found but not loadable.
PERSISTENT_CACHE_COUNTERS = {"persistent_cache_hits": "PersistentCacheHit",
                             "persistent_cache_misses": "PersistentCacheMiss",
                             "persistent_cache_load_failures": "PersistentCacheDeserializeFailure"}
_XLA_TIMES = ("CompileTime", "ExecuteTime")  # nanoseconds
_PERSISTENT = frozenset(PERSISTENT_CACHE_COUNTERS.values())
_MB = 1024 * 1024
_REASON_CHARS = 300
# The lines of dynamo's graph-break message a reason keeps (besides the first).
_BREAK_LABELS = ("Explanation", "Developer debug context")
_BREAK_KEY = "graph_break:"
# The profiler's event for dynamo's lookup of a compiled frame (its guards).
CACHE_LOOKUP_EVENT = "TorchDynamo Cache Lookup"


def _snapshot(xla: bool) -> Counter:
    from torch._dynamo.utils import counters

    snap = Counter()
    snap["graphs"] = counters["stats"]["unique_graphs"]
    snap["calls_captured"] = counters["stats"]["calls_captured"]
    snap["graph_breaks"] = sum(counters["graph_break"].values())
    # Each reason apart: PyTorch's unique_graph_breaks counts the reasons seen.
    snap.update({f"{_BREAK_KEY}{reason}": n for reason, n in counters["graph_break"].items()})
    snap["autograd_captures"] = counters["compiled_autograd"]["captures"]
    snap["autograd_compiles"] = counters["compiled_autograd"]["compiles"]
    if xla and "torch_xla" in sys.modules:
        import torch_xla.debug.metrics as met

        for name in met.counter_names():
            if name in _XLA_COUNTERS or name in _PERSISTENT:
                snap[name] = met.counter_value(name)
        from xla_backends.metrics import fallback_counts  # here: importing the package registers it

        snap.update(fallback_counts())
        for name in _XLA_TIMES:
            data = met.metric_data(name)
            if data:
                snap[f"{name}.n"], snap[f"{name}.ns"] = data[0], data[1]
    return snap


# --------------------------------------------------------------------------
# Memory


class HostPeak:
    """The host's peak resident memory over one step."""

    _STATUS = "/proc/self/status"
    _CLEAR_REFS = "/proc/self/clear_refs"

    def __init__(self):
        self.resettable = os.path.exists(self._CLEAR_REFS) and os.access(self._CLEAR_REFS, os.W_OK)
        self._process = psutil.Process()

    def reset(self) -> None:
        if not self.resettable:
            return
        try:
            with open(self._CLEAR_REFS, "w") as f:
                f.write("5")  # 5: reset the peak RSS to the current RSS (proc(5))
        except OSError:
            self.resettable = False

    def peak_bytes(self) -> int:
        if self.resettable:
            with open(self._STATUS) as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        return int(line.split()[1]) * 1024
        return self._process.memory_info().rss


class DevicePeak:
    """The XLA device's peak memory over one step, where the device says.

    torch_xla reports ``bytes_used`` and, on TPU, ``peak_bytes_used`` (which
    cannot be reset): a step whose peak did not move gets the larger of its
    usage before and after (a lower bound). ``supported`` turns False at the
    first device that does not report memory (PJRT CPU).
    """

    def __init__(self):
        self.supported = True
        self._before: tuple[int, int | None] | None = None

    def _read(self) -> tuple[int, int | None] | None:
        if not self.supported:
            return None
        try:
            import torch_xla
            import torch_xla.core.xla_model as xm

            info = xm.get_memory_info(torch_xla.device())
        except Exception:  # noqa: BLE001 - UNIMPLEMENTED on PJRT CPU
            self.supported = False
            return None
        used = info.get("bytes_used")
        if used is None:
            self.supported = False
            return None
        return int(used), info.get("peak_bytes_used")

    def reset(self) -> None:
        self._before = self._read()

    def peak_bytes(self) -> int | None:
        after = self._read()
        if after is None or self._before is None:
            return None
        (used0, peak0), (used1, peak1) = self._before, after
        if peak1 is not None and peak0 is not None and peak1 > peak0:
            return int(peak1)
        return max(used0, used1)


# --------------------------------------------------------------------------
# Graph breaks


def _break_reasons() -> list:
    from torch._dynamo.utils import graph_break_reasons

    return graph_break_reasons


def _guard_failures() -> dict:
    """dynamo's record of the guards that failed, per code object: one
    reason per recompile (``"0/0: tensor 'x' size mismatch at index 0..."``)."""
    from torch._dynamo.utils import guard_failures

    return guard_failures


def describe_break(reason) -> tuple[str, str]:
    """(reason, user frame) of a dynamo ``GraphCompileReason``, each on one line.

    Dynamo's message is its graph-break type, then labelled lines: the
    explanation (empty for some, e.g. an operator fake tensors cannot run)
    and the developer context, which names the operator or function. The
    reason keeps the type, the explanation and the context, empty ones left
    out; when it is too long, the explanation is cut, so the context stays.
    """
    lines = [line.strip() for line in str(reason.reason).splitlines() if line.strip()]
    labelled: dict[str, str] = {}
    label = None  # the labelled part a line continues
    for line in lines[1:]:
        start, colon, value = line.partition(":")
        if colon and (start in _BREAK_LABELS or start in ("Hint", "For more details about this graph break, please visit")):
            label, line = start, value.strip()
        if label in _BREAK_LABELS and line:
            labelled[label] = f"{labelled[label]} {line}" if labelled.get(label) else line
    head, context = lines[0] if lines else "", labelled.get("Developer debug context", "")
    explanation = labelled.get("Explanation", "")
    room = _REASON_CHARS - len(head) - len(context) - 4  # the two ": "
    if len(explanation) > room:
        explanation = explanation[:max(0, room - 3)] + "..." if room > 3 else ""
    text = ": ".join(part for part in (head, explanation, context) if part)
    if len(text) > _REASON_CHARS:
        text = text[:_REASON_CHARS - 3] + "..."
    frame = ""
    if reason.user_stack:
        last = reason.user_stack[-1]
        frame = f"{last.filename}:{last.lineno} in {last.name}"
        if last.line:
            frame += f": {last.line.strip()}"
    return text, " ".join(frame.split())


# --------------------------------------------------------------------------
# The probe


class Probe:
    """Collects the metrics of one contender, call by call (first, warm-up,
    timed) and shape by shape.

    ``shape`` is whatever label the timing loop gives the step's inputs (the
    batch size of a cycle); ``None`` when there is only one.
    """

    def __init__(self, xla: bool):
        self.xla = xla
        self.calls: dict[tuple[str, Hashable], Counter] = defaultdict(Counter)
        self.host_s: dict[Hashable, list[float]] = defaultdict(list)  # timed steps, pre-sync
        self.timed_steps: Counter = Counter()
        self.first_shape: Hashable = None  # the shape of the runner's very first call
        self.breaks: dict[tuple[str, str], None] = {}  # (reason, frame), in order seen
        # Per shape: why a graph was compiled again, in order seen.
        self.guard_failures: dict[Hashable, dict[str, None]] = defaultdict(dict)
        self.peak_host: dict[Hashable, int] = {}
        self.peak_device: dict[Hashable, int] = {}
        self.capture_hlo = False  # record the HLO of what a step leaves pending
        self.hlo: list[str] = []
        self._host, self._device = HostPeak(), DevicePeak() if xla else None
        self._before: Counter | None = None
        self._breaks_before = 0
        self._failures_before: dict = {}
        self._host_start = 0.0
        self._pending_host: float | None = None
        self._seen_first = False

    def before(self) -> None:
        self._breaks_before = len(_break_reasons())
        self._failures_before = {code: len(reasons) for code, reasons in _guard_failures().items()}
        self._before = _snapshot(self.xla)
        self._host.reset()
        if self._device:
            self._device.reset()

    def after(self, call: str, shape: Hashable = None, steps: int = 1) -> None:
        """After ``steps`` iterations run as one (--iterations-per-run)."""
        host_peak = self._host.peak_bytes()  # first: the reads below allocate a little
        device_peak = self._device.peak_bytes() if self._device else None
        delta = _snapshot(self.xla)
        delta.subtract(self._before)
        if call == "first" and not self._seen_first:
            self._seen_first, self.first_shape = True, shape
        self.calls[(call, shape)].update(delta)
        if call == "timed":
            self.timed_steps[shape] += steps
            if self._pending_host is not None:
                self.host_s[shape].append(self._pending_host / steps)
        self._pending_host = None
        self.peak_host[shape] = max(self.peak_host.get(shape, 0), host_peak)
        if device_peak is not None:
            self.peak_device[shape] = max(self.peak_device.get(shape, 0), device_peak)
        reasons = _break_reasons()
        for reason in reasons[self._breaks_before:] if len(reasons) >= self._breaks_before else reasons:
            self.breaks.setdefault(describe_break(reason), None)
        for code, failures in list(_guard_failures().items()):
            for failure in failures[self._failures_before.get(code, 0):]:
                where = f"{code.co_name} ({code.co_filename}:{code.co_firstlineno})"
                self.guard_failures[shape].setdefault(" ".join(f"{where}: {failure}".split()), None)

    def host_started(self) -> None:
        self._host_start = time.perf_counter()

    def host_done(self, pending: Any = None) -> None:
        """The step's call returned (before the device sync); ``pending`` is
        what it left for the device to compute, for ``capture_hlo``."""
        self._pending_host = time.perf_counter() - self._host_start
        if self.capture_hlo and pending is not None:
            hlo = pending_hlo(pending)
            if hlo:
                self.hlo.append(hlo)

    def recompile_reasons(self, shape: Hashable = None) -> list[str]:
        """The distinct guard failures that made dynamo compile a graph again
        on the steps at ``shape``."""
        return list(self.guard_failures.get(shape, ()))

    def graph_breaks(self) -> list[tuple[str, str]]:
        """(reason, user frame) of every distinct graph break this contender met."""
        return list(self.breaks)

    def _at(self, call: str, shape: Hashable) -> Counter:
        return self.calls.get((call, shape), Counter())

    def summary(self, shape: Hashable = None) -> dict:
        """Row fields of the steps at ``shape``: what its first call compiled,
        what each timed iteration did, the peaks."""
        first, timed = self._at("first", shape), self._at("timed", shape)
        later = self._at("warmup", shape) + timed
        graphs = first["graphs"] + later["graphs"]
        # Graphs captured after the runner's very first call are recompiles:
        # at a new shape, all of them.
        initial = first["graphs"] if shape == self.first_shape else 0
        every = first + later
        fields = {
            "dynamo_graphs": graphs,
            "graph_breaks": first["graph_breaks"] + later["graph_breaks"],
            # PyTorch's dynamo statistics (its common.get_dynamo_stats), over
            # this contender's steps: ops put in graphs, distinct break reasons,
            # compiled autograd's captures and compiles.
            "calls_captured": every["calls_captured"],
            "unique_graph_breaks": sum(1 for k, v in every.items() if k.startswith(_BREAK_KEY) and v > 0),
            "autograd_captures": every["autograd_captures"],
            "autograd_compiles": every["autograd_compiles"],
            "recompiles": graphs - initial,
            "peak_host_mb": self.peak_host[shape] / _MB if shape in self.peak_host else None,
            "peak_device_mb": self.peak_device[shape] / _MB if shape in self.peak_device else None,
        }
        if not self.xla:
            return fields
        from xla_backends.metrics import PREFIX  # here: importing the package registers it

        n = self.timed_steps[shape]
        host_s = self.host_s.get(shape)
        fallbacks = sorted(k.removeprefix(PREFIX) for k, v in every.items() if k.startswith(PREFIX) and v > 0)
        fields.update({
            "first_call_compiles": first["UncachedCompile"] + first["CachedCompile"],
            # Compiles of the first call that XLA's cache served: executables
            # compiled earlier in the process (by this contender, or another).
            "first_call_cache_hits": first["CachedCompile"],
            "first_call_compile_s": first["CompileTime.ns"] / 1e9,
            "first_call_execute_s": first["ExecuteTime.ns"] / 1e9,
            "compiles_per_iter": (timed["UncachedCompile"] + timed["CachedCompile"]) / n if n else None,
            "execute_ms": timed["ExecuteTime.ns"] / 1e6 / n if n else None,
            # XLA graphs run per iteration: one per traced-once partition.
            "executes_per_iter": timed["ExecuteTime.n"] / n if n else None,
            "host_ms": stats.median(host_s) * 1e3 if host_s else None,
            "fallback_ops": " ".join(fallbacks),
            # PyTorch's fallbacks_to_eager, for XLA: the distinct ops run on
            # the host because XLA has no lowering for them.
            "fallbacks_to_eager": len(fallbacks),
            **{field: every[counter] for field, counter in PERSISTENT_CACHE_COUNTERS.items()},
        })
        return fields


def cache_lookup_us(step, inputs, calls: int = 2) -> float | None:
    """PyTorch's cache_lookup_latency: the host CPU time, in microseconds, of
    dynamo's cache lookups (the guards that pick a compiled frame) over
    ``calls`` calls of ``step`` on ``inputs``, from torch.profiler's
    "TorchDynamo Cache Lookup" events, as its --profile-dynamo-cache-lookup
    reads them over a two-call warm-up. None when no lookup happened (no
    dynamo: the baseline)."""
    import torch

    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        for _ in range(calls):
            step(inputs)
    events = [e for e in prof.key_averages() if CACHE_LOOKUP_EVENT in e.key]
    return float(sum(e.self_cpu_time_total for e in events)) if events else None


def compression_ratio(baseline_mb: float | None, backend_mb: float | None) -> float | None:
    """baseline peak / backend peak, as PyTorch's ``compression_ratio``
    (above 1: the backend needs less memory)."""
    if not baseline_mb or not backend_mb:
        return None
    return baseline_mb / backend_mb


# --------------------------------------------------------------------------
# HLO and profiles


def _xla_tensors(tree) -> list:
    import torch
    from torch.utils import _pytree as pytree

    return [t for t in pytree.tree_leaves(tree)
            if isinstance(t, torch.Tensor) and t.device.type == "xla"]


def pending_hlo(tree) -> str:
    """The HLO that computes the XLA tensors of ``tree`` (empty if none)."""
    import torch_xla

    tensors = _xla_tensors(tree)
    return torch_xla._XLAC._get_xla_tensors_hlo(tensors) if tensors else ""


def graph_hlo(gm, example_inputs) -> str:
    """The HLO of FX graph ``gm``: traced lazily on clones of its example
    inputs (so in-place updates touch nothing real), never executed."""
    import torch

    clones = [t.clone() if isinstance(t, torch.Tensor) else t for t in example_inputs]
    with torch.no_grad():
        return pending_hlo(gm(*clones))


def write_hlo(folder: str | os.PathLike, stem: str, modules: list[str]) -> list[Path]:
    """``folder/<stem>.<i>.hlo.txt``, one per HLO module."""
    paths = []
    for i, text in enumerate(modules):
        path = Path(folder, f"{stem}.{i}.hlo.txt")
        path.write_text(text, encoding="utf-8")
        paths.append(path)
    return paths


def profile_step(step, inputs, path: str | os.PathLike) -> Path:
    """Run ``step(inputs)`` once under ``torch.profiler`` (host activity,
    with shapes) and write a Chrome trace (JSON) to ``path``."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        step(inputs)
    prof.export_chrome_trace(str(path))
    return Path(path)


def xla_profile_step(step, inputs, folder: str | os.PathLike) -> Path | None:
    """Run ``step(inputs)`` once under torch_xla's profiler; its trace
    (``plugins/profile/<run>/*.xplane.pb`` and ``*.trace.json.gz``) lands
    in ``folder``. None when the profiler fails on this device."""
    try:
        import torch_xla.debug.profiler as xp

        xp.start_trace(str(folder))
        try:
            step(inputs)
        finally:
            xp.stop_trace()
    except Exception:  # noqa: BLE001 - the torch.profiler trace still stands
        return None
    return Path(folder)


def chrome_trace_events(path: str | os.PathLike) -> list[dict]:
    """The events of a Chrome trace file (for checks)."""
    data = json.loads(Path(path).read_text())
    return data["traceEvents"] if isinstance(data, dict) else data
