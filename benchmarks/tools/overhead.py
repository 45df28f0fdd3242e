"""Per-call host overhead of the trace-once bridge: ``python -m benchmarks.tools.overhead``.

For a few graphs (a tiny MLP, torchvision resnet18, and a model with ~200
graph inputs: BERT_pytorch from ``benchmarks.run.suite``, or a 12-layer
``nn.TransformerEncoder`` where the suite lacks it), all at batch 1, in eval
mode under ``torch.no_grad()``, this measures

* the latency of one call (ending with a wait for the device, so execution
  counts the same for all) of
  ``ours`` (``torch.compile(model, backend="torchxla_trace_once")``),
  ``openxla_eval`` (torch_xla's trace-once backend, as registered by torch),
  ``lazy`` (the module on the XLA device, then ``torch_xla.sync()``) and
  ``raw`` (``torch_xla._XLAC._run_cached_graph(hash, inputs)`` on the inputs
  our replay would feed, prepared once: the executable alone, the limit),
  interleaved round-robin (a Williams design of orders) within each repeat; medians;
* the host overhead of a call: the same compiled calls with the executable's
  launch replaced by a stub that returns ready results, minus the stub's own
  cost; split into dynamo's share (the compiled module with a backend that
  returns ready outputs: guards, the bytecode that gathers the graph's
  arguments, its wrappers; the same for any backend) and each backend's (the
  callable it returned to dynamo, called with the arguments dynamo passes);
* the first call (trace, compile, run) of ``ours`` and ``openxla_eval``, each
  in a fresh interpreter, so that neither finds the other's executable in
  XLA's in-memory compilation cache; the median of a few such interpreters
  per backend, alternating.

``--first-calls-only --graphs seed`` measures just the first calls, on the
ten seed models at batch 1 (any built-in model name works as a graph), and
prints per model the medians, their ratio, the ranges, what XLA did and
the time spent outside XLA (dynamo and the backend). With ``--at-call`` it
also times ours with the graph built and compiled on its first call, as
before the compile moved to a thread of its own (``ours at call``): what
overlapping XLA's compile with dynamo's guards gains. ``--busy N`` keeps N
processes busy-looping (one core each) while it measures: the first calls
of a machine with other CPU-bound work.

Why the host overhead is not taken as "latency minus raw's": XLA runs the
executable asynchronously, and on the CPU "device" it runs on the same cores
as the host thread, evicting the host's caches; so host work right after
device work is slower than on an accelerator host, and the latency of a big
graph varies by more than the overhead. Latency minus raw's is reported too.

One module, though over 400 lines: a standalone command whose subjects,
fresh-interpreter first calls and tables only make sense together; nothing
else imports it.
"""
from __future__ import annotations

import argparse
import copy
import gc
import json
import os
import statistics
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

from benchmarks.run.measure import round_robin, turn_order

os.environ.setdefault("PJRT_DEVICE", "CPU")

GRAPHS = ("tiny_mlp", "resnet18", "many_inputs")
BACKENDS = {"ours": "torchxla_trace_once", "openxla_eval": "openxla_eval"}
AT_CALL = "ours at call"  # ours, building and compiling the graph on its first call
TIMED = ("ours", "openxla_eval", "lazy", "raw")  # latency, with the device
HOST = ("ours", "openxla_eval", "ours direct", "openxla_eval direct", "dynamo", "stub")
LATENCY_COLUMNS = (
    "graph", "graph inputs", "ours ms", "openxla_eval ms", "lazy ms", "raw ms",
    "ours - raw µs", "openxla_eval - raw µs", "latency ours/raw",
    "first call ours s", "first call openxla_eval s",
)
OVERHEAD_COLUMNS = (
    "graph", "graph inputs", "ours overhead µs", "openxla_eval overhead µs",
    "overhead ours/openxla_eval", "dynamo µs", "ours backend µs", "openxla_eval backend µs",
)
# Targets: our host overhead at most this share of openxla_eval's, and within
# this many µs of raw for graphs of up to so many inputs; first call no slower.
OVERHEAD_SHARE = 0.5
OVERHEAD_US = 100.0
MAX_INPUTS_FOR_US_TARGET = 200
SAMPLE_S = 2e-3  # a variant makes enough calls per turn to last about this long
MAX_CALLS = 20
HOST_CALLS = 50  # host-only calls per variant and repeat


def build(graph: str):
    """``(description, module, inputs)`` on the host, module in eval mode.
    ``graph`` is one of ``GRAPHS`` or a built-in model's name (batch 1)."""
    import torch
    from torch import nn

    torch.manual_seed(0)
    if graph not in GRAPHS:
        from benchmarks.run import suite

        bench = suite.load(graph, batch_size=1)
        inputs = bench.example_inputs()
        if inputs.kwargs:
            raise ValueError(f"{graph} takes keyword inputs; first calls here pass positional ones")
        return f"{graph}, bs 1", bench.module.eval(), tuple(inputs.args)
    if graph == "tiny_mlp":
        module = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(),
                               nn.Linear(64, 10))
        return "3 Linear, bs 1", module.eval(), (torch.randn(1, 64),)
    if graph == "resnet18":
        import torchvision

        module = torchvision.models.resnet18(weights=None)
        return "torchvision, bs 1", module.eval(), (torch.randn(1, 3, 224, 224),)
    if graph == "many_inputs":
        try:
            from benchmarks.run import suite

            bench = suite.load("BERT_pytorch", batch_size=1)
            return "BERT_pytorch, bs 1", bench.module.eval(), bench.example_inputs().args
        except (ImportError, AttributeError, ValueError):
            layer = nn.TransformerEncoderLayer(d_model=128, nhead=4, dim_feedforward=256,
                                               batch_first=True)
            module = nn.TransformerEncoder(layer, num_layers=12, enable_nested_tensor=False)
            return "12-layer TransformerEncoder, bs 1", module.eval(), (torch.randn(1, 16, 128),)
    raise ValueError(f"unknown graph {graph!r}; known: {', '.join(GRAPHS)}")


def _xla():
    import torch_xla

    return torch_xla, torch_xla._XLAC


class Subject:
    """One graph, set up for every variant on the XLA device."""

    def __init__(self, graph: str):
        import torch

        from xla_backends import trace_once

        torch_xla, X = _xla()
        self.name = graph
        self.description, module, host_inputs = build(graph)
        device = torch_xla.device()
        self.inputs = tuple(t.to(device) for t in host_inputs)
        copies = ("ours", "openxla_eval", "lazy", "dynamo")
        self.modules = {v: copy.deepcopy(module).to(device) for v in copies}
        torch_xla.sync()
        X._xla_wait_device_ops([])

        # What each backend hands dynamo, and the arguments dynamo calls it
        # with. The recording wrapper costs both compiled variants the same
        # (one Python frame and a store, well under a microsecond).
        self.direct, self.args = {}, {}

        def capturing(variant, backend):
            def compile_graph(gm, example_inputs):
                if variant in self.direct:
                    raise RuntimeError(f"{graph}: {variant} compiled more than one graph")
                fn = self.direct[variant] = backend(gm, example_inputs)
                args = self.args

                def call(*a):
                    args[variant] = a
                    return fn(*a)

                return call

            return compile_graph

        lookup = torch._dynamo.lookup_backend
        self.compiled = {
            "ours": torch.compile(self.modules["ours"],
                                  backend=capturing("ours", trace_once.torchxla_trace_once)),
            "openxla_eval": torch.compile(self.modules["openxla_eval"],
                                          backend=capturing("openxla_eval", lookup("openxla_eval"))),
        }
        for variant in ("ours", "openxla_eval"):
            self.latency(variant)
        runner = self.direct["ours"]
        if len(runner.runners) != 1 or not isinstance(runner.runners[0], trace_once.Replay):
            raise RuntimeError(f"{graph}: our graph is not replayed ({runner.runners})")
        self.replay = replay = runner.runners[0]
        args = self.args["ours"]
        self.graph_inputs = len([a for a in args if isinstance(a, torch.Tensor)])
        # The raw limit: the executable by hash, on the inputs our replay feeds it.
        self.raw_inputs = list(replay.graph_inputs(args))
        self.raw_hash = replay.executable.graph_hash
        # dynamo alone: a backend whose compiled graph returns ready outputs.
        ready = runner(*args)

        def instant(gm, example_inputs):
            return lambda *a: ready

        self.compiled["dynamo"] = torch.compile(self.modules["dynamo"], backend=instant)
        self.host("dynamo")
        for variant in TIMED:
            self.latency(variant)

    def latency(self, variant: str) -> float:
        """Seconds of one call of ``variant``, to the end of the device's work."""
        torch_xla, X = _xla()
        if variant == "raw":
            run, h, inputs = X._run_cached_graph, self.raw_hash, self.raw_inputs
            start = time.perf_counter()
            out = run(h, inputs)
        elif variant == "lazy":
            module, inputs = self.modules["lazy"], self.inputs
            start = time.perf_counter()
            out = module(*inputs)  # kept alive through the sync, or never computed
            torch_xla.sync()
        else:
            fn, inputs = self.compiled[variant], self.inputs
            start = time.perf_counter()
            out = fn(*inputs)
        X._xla_wait_device_ops([])
        done = time.perf_counter()
        del out
        return done - start

    def host(self, variant: str) -> float:
        """Seconds of one call of ``variant`` on the host alone (within
        ``stubbed_execution``, or ``dynamo``)."""
        if variant == "stub":
            fn, args = self._stub, (self.raw_hash, self.raw_inputs)
        elif variant.endswith(" direct"):
            backend = variant[: -len(" direct")]
            fn, args = self.direct[backend], self.args[backend]
        else:
            fn, args = self.compiled[variant], self.inputs
        start = time.perf_counter()
        out = fn(*args)
        done = time.perf_counter()
        del out
        return done - start

    @contextmanager
    def stubbed_execution(self):
        """``_run_cached_graph`` replaced by a stub returning each graph's
        results, computed once beforehand."""
        torch_xla, X = _xla()
        real = X._run_cached_graph
        results = {}

        def recording(h, inputs):
            results[h] = out = real(h, inputs)
            return out

        X._run_cached_graph = recording
        try:
            with self.replay.launching(recording):
                for variant in ("ours", "openxla_eval"):
                    self.compiled[variant](*self.inputs)
            X._xla_wait_device_ops([])
            self._stub = stub = lambda h, inputs: list(results[h])
            X._run_cached_graph = stub
            with self.replay.launching(stub):
                yield
        finally:
            X._run_cached_graph = real

    def calls_per_turn(self) -> int:
        """Enough calls for a variant's turn to last about SAMPLE_S."""
        per_call = statistics.median(self.latency("raw") for _ in range(3))
        return max(1, min(MAX_CALLS, int(SAMPLE_S / max(per_call, 1e-7))))


def measure(subject: Subject, repeat: int) -> dict:
    """Median latency per variant (``TIMED``), median host time per ``HOST``
    variant, and the number of calls behind each latency."""
    import torch

    calls = subject.calls_per_turn()
    with torch.no_grad():
        latency = round_robin(TIMED, repeat, calls, subject.latency)
        with subject.stubbed_execution():
            host = round_robin(HOST, repeat, HOST_CALLS, subject.host)
    return {"latency": latency, "host": host, "calls": repeat * calls}


def first_call(graph: str, variant: str) -> dict:
    """The first call (trace, compile, run) of ``variant``, in this process:
    its seconds, and XLA's compilations and executions during it (counts and
    seconds)."""
    import torch
    import torch_xla.debug.metrics as met

    torch_xla, X = _xla()
    import xla_backends  # noqa: F401  (registers our backend by name)

    _, module, host_inputs = build(graph)
    device = torch_xla.device()
    module = module.to(device)
    inputs = tuple(t.to(device) for t in host_inputs)
    torch_xla.sync()
    X._xla_wait_device_ops([])
    torch._dynamo.reset()
    compiled = torch.compile(module, backend=at_call_backend if variant == AT_CALL else BACKENDS[variant])

    def metric(name):
        data = met.metric_data(name)
        return (data[0], data[1] / 1e9) if data else (0, 0.0)

    (compiles, compile_s), (runs, run_s) = metric("CompileTime"), metric("ExecuteTime")
    with torch.no_grad():
        start = time.perf_counter()
        out = compiled(*inputs)
        X._xla_wait_device_ops([])
        seconds = time.perf_counter() - start
    del out
    (compiles2, compile_s2), (runs2, run_s2) = metric("CompileTime"), metric("ExecuteTime")
    return {"seconds": seconds, "compiles": compiles2 - compiles,
            "compile_s": compile_s2 - compile_s, "executions": runs2 - runs,
            "execute_s": run_s2 - run_s}


def at_call_backend(gm, example_inputs):
    """Ours with nothing built when dynamo hands the graph over: its trace
    and compile happen inside the first call (``AT_CALL``)."""
    from xla_backends.trace_once import TraceOnce

    return TraceOnce(gm)


@contextmanager
def busy_loops(n: int):
    """``n`` processes, each spinning on a core, while the block runs."""
    spinning = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]
    try:
        yield
    finally:
        for p in spinning:
            p.kill()
        for p in spinning:
            p.wait()


def first_call_fresh(graph: str, variant: str) -> dict | None:
    """``first_call`` in a fresh interpreter (a cold XLA compilation cache)."""
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.tools.overhead", "--first-call-of", graph, variant],
        capture_output=True, text=True, env=dict(os.environ), timeout=900,
    )
    lines = done.stdout.strip().splitlines()
    if done.returncode or not lines:
        print(f"first call of {variant} on {graph} failed:\n{done.stderr[-2000:]}", file=sys.stderr)
        return None
    return json.loads(lines[-1])


def first_calls_of(graph: str, how: str, repeat: int, variants=tuple(BACKENDS)) -> dict:
    """Per variant, its first calls (``first_call``'s dicts) over ``repeat``
    tries, the variants taking turns in ``turn_order``'s order (AB BA...,
    ABC BCA CAB CBA ACB BAC...), so that load drifting during the run
    favours none; empty where not measured or failed."""
    tries = {v: [] for v in variants}
    if how == "skip":
        return tries
    for i in range(repeat if how == "fresh" else 1):
        for v in turn_order(list(variants), i):
            got = first_call_fresh(graph, v) if how == "fresh" else first_call(graph, v)
            if got is not None:
                tries[v].append(got)
    return tries


def _median(tries: list, key: str):
    return statistics.median(t[key] for t in tries) if tries else None


def rows(graphs, repeat: int, first_calls: str, first_call_repeat: int = 1) -> list[dict]:
    import torch

    out = []
    for graph in graphs:
        with torch.no_grad():
            subject = Subject(graph)
        timed = measure(subject, repeat)
        first = first_calls_of(graph, first_calls, first_call_repeat)
        lat, host = timed["latency"], timed["host"]
        us = 1e6
        ours_over = (host["ours"] - host["stub"]) * us
        theirs_over = (host["openxla_eval"] - host["stub"]) * us
        out.append({
            "graph": graph,
            "model": subject.description,
            "graph inputs": subject.graph_inputs,
            "calls": timed["calls"],
            "ours ms": lat["ours"] * 1e3,
            "openxla_eval ms": lat["openxla_eval"] * 1e3,
            "lazy ms": lat["lazy"] * 1e3,
            "raw ms": lat["raw"] * 1e3,
            "ours - raw µs": (lat["ours"] - lat["raw"]) * us,
            "openxla_eval - raw µs": (lat["openxla_eval"] - lat["raw"]) * us,
            "latency ours/raw": lat["ours"] / lat["raw"],
            "first call ours s": _median(first["ours"], "seconds"),
            "first call openxla_eval s": _median(first["openxla_eval"], "seconds"),
            "first calls": first,
            "ours overhead µs": ours_over,
            "openxla_eval overhead µs": theirs_over,
            "overhead ours/openxla_eval": ours_over / theirs_over if theirs_over > 0 else float("nan"),
            "dynamo µs": host["dynamo"] * us,
            "ours backend µs": (host["ours direct"] - host["stub"]) * us,
            "openxla_eval backend µs": (host["openxla_eval direct"] - host["stub"]) * us,
        })
        del subject
        gc.collect()
    return out


def verdicts(table: list[dict]) -> list[str]:
    """One line per target and graph: met or missed."""
    lines = []
    for row in table:
        g = row["graph"]
        share = row["overhead ours/openxla_eval"]
        lines.append(f"{g}: host overhead <= {OVERHEAD_SHARE:.0%} of openxla_eval's: "
                     f"{'met' if share <= OVERHEAD_SHARE else 'MISSED'} ({share:.2f})")
        if row["graph inputs"] <= MAX_INPUTS_FOR_US_TARGET:
            over = row["ours overhead µs"]
            lines.append(f"{g}: host overhead within {OVERHEAD_US:.0f} µs of raw: "
                         f"{'met' if over <= OVERHEAD_US else 'MISSED'} ({over:.0f} µs, of which "
                         f"dynamo {row['dynamo µs']:.0f} µs, ours {row['ours backend µs']:.0f} µs)")
        ours, theirs = row["first call ours s"], row["first call openxla_eval s"]
        if ours is not None and theirs is not None:
            tries = row["first calls"]
            spread = {v: f"{min(t['seconds'] for t in tries[v]):.2f}-{max(t['seconds'] for t in tries[v]):.2f} s"
                      for v in BACKENDS}
            xla = {v: f"{_median(tries[v], 'compiles'):g} compiles in {_median(tries[v], 'compile_s'):.2f} s, "
                      f"{_median(tries[v], 'executions'):g} runs" for v in BACKENDS}
            # XLA's compile time of one graph varies by ~10% from process to
            # process here: the rest of the first call is what a backend adds.
            rest = {v: statistics.median(t["seconds"] - t["compile_s"] for t in tries[v]) for v in BACKENDS}
            lines.append(f"{g}: first call no slower than openxla_eval's: "
                         f"{'met' if ours <= theirs else 'MISSED'} (medians {ours:.2f} s vs {theirs:.2f} s; "
                         f"ranges {spread['ours']} vs {spread['openxla_eval']}; "
                         f"without XLA's compile time {rest['ours']:.2f} s vs {rest['openxla_eval']:.2f} s; "
                         f"XLA: {xla['ours']} vs {xla['openxla_eval']})")
    return lines


FIRST_CALL_COLUMNS = ("model", "ours s", "openxla_eval s", "ours/openxla_eval", "ours range s",
                      "openxla_eval range s", "ours XLA", "openxla_eval XLA", "ours host s",
                      "openxla_eval host s")
AT_CALL_COLUMNS = (f"{AT_CALL} s", f"ours/{AT_CALL}")


def _host_seconds(tries: list) -> float:
    """Median of a first call's seconds outside XLA's compiles and runs: dynamo
    and the backend's own work. Both backends hand XLA the same graph, whose
    compile time alone varies by 10-30% between processes on a loaded machine,
    so this is the part where one backend can be faster than the other."""
    return statistics.median(t["seconds"] - t["compile_s"] - t.get("execute_s", 0.0) for t in tries)


def first_call_rows(graphs, repeat: int, at_call: bool = False) -> list[dict]:
    """Per graph, the first calls of both backends (and ``AT_CALL``) in fresh
    interpreters (``repeat`` each, taking turns): medians, ratios, ranges,
    XLA's work, and the median time outside it."""
    variants = tuple(BACKENDS) + ((AT_CALL,) if at_call else ())
    table = []
    for graph in graphs:
        tries = first_calls_of(graph, "fresh", repeat, variants)
        if not all(tries.values()):
            continue
        med = {v: _median(tries[v], "seconds") for v in variants}
        extra = {}
        if at_call:
            extra = {f"{AT_CALL} s": med[AT_CALL], f"ours/{AT_CALL}": med["ours"] / med[AT_CALL]}
        table.append({
            "model": graph,
            "ours s": med["ours"], "openxla_eval s": med["openxla_eval"],
            "ours/openxla_eval": med["ours"] / med["openxla_eval"],
            **{f"{v} range s": f"{min(t['seconds'] for t in tries[v]):.2f}-"
                               f"{max(t['seconds'] for t in tries[v]):.2f}" for v in BACKENDS},
            **{f"{v} XLA": f"{_median(tries[v], 'compiles'):g} compiles "
                           f"({_median(tries[v], 'compile_s'):.2f} s), "
                           f"{_median(tries[v], 'executions'):g} runs" for v in BACKENDS},
            **{f"{v} host s": _host_seconds(tries[v]) for v in BACKENDS},
            **extra,
            "first calls": tries,
        })
    return table


def first_call_summary(table: list[dict]) -> list[str]:
    """How many models ours is no slower on, and the geomean of the ratios
    (and of ours against ``AT_CALL``, where measured)."""
    from benchmarks.results import stats

    ratios = [row["ours/openxla_eval"] for row in table]
    if not ratios:
        return ["no first call measured"]
    met = sum(r <= 1 for r in ratios)
    lines = [f"first call no slower than openxla_eval's on {met} of {len(ratios)} models; "
             f"geomean ours/openxla_eval {stats.geomean(ratios):.3f}"]
    ahead = [row[f"ours/{AT_CALL}"] for row in table if f"ours/{AT_CALL}" in row]
    if ahead:
        lines.append(f"compiled ahead against at the call: faster on {sum(r < 1 for r in ahead)} of "
                     f"{len(ahead)} models; geomean ours/{AT_CALL} {stats.geomean(ahead):.3f}")
    return lines


def render(table: list[dict], columns) -> str:
    from benchmarks.results import tables

    return tables.render_table(columns, [[row[c] for c in columns] for row in table], missing="-")


PROG = "python -m benchmarks.tools.overhead"


def main(argv=None) -> int:
    """0 when measured; bad input: one line on stderr and 2 (``usage.guarded``)."""
    from benchmarks.usage import guarded

    return guarded(PROG, lambda: _main(argv))


def _main(argv) -> int:
    from benchmarks.usage import Parser

    parser = Parser(prog=PROG, description=__doc__.split("\n\n")[0])
    parser.add_argument("--graphs", default=",".join(GRAPHS),
                        help=f"comma-separated subset of {', '.join(GRAPHS)}")
    parser.add_argument("--repeat", type=int, default=None,
                        help="round-robin repeats (default 30; 3 with --quick)")
    parser.add_argument("--quick", action="store_true", help="a smoke test: few repeats")
    parser.add_argument("--first-calls", choices=("fresh", "same-process", "skip"), default="fresh",
                        help="time first calls in a fresh interpreter each (default), in this one "
                             "(the second backend may find the first's executable in XLA's cache), or not")
    parser.add_argument("--first-call-repeat", type=int, default=None,
                        help="fresh interpreters per backend and graph; the median is reported "
                             "(default 3; 1 with --quick)")
    parser.add_argument("--first-calls-only", action="store_true",
                        help="measure only first calls, in fresh interpreters (with --graphs seed: "
                             "the ten seed models)")
    parser.add_argument("--at-call", action="store_true",
                        help="with --first-calls-only: also time ours building and compiling the graph "
                             "on its first call instead of ahead of it")
    parser.add_argument("--busy", type=int, default=0, metavar="N",
                        help="with --first-calls-only: keep N processes busy-looping, one core each, "
                             "while measuring (default 0)")
    parser.add_argument("--json", metavar="PATH", help="also write the rows as JSON (replacing the file)")
    parser.add_argument("--first-call-of", nargs=2, metavar=("GRAPH", "VARIANT"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.first_call_of:
        graph, variant = args.first_call_of
        print(json.dumps(first_call(graph, variant)))
        return 0
    graphs = [g.strip() for g in args.graphs.split(",") if g.strip()]
    if not graphs:
        parser.error("--graphs names no graph")
    for flag in ("repeat", "first_call_repeat"):
        if getattr(args, flag) is not None and getattr(args, flag) < 1:
            parser.error(f"--{flag.replace('_', '-')} must be at least 1, got {getattr(args, flag)}")
    _check_writable(parser, args.json)
    if args.at_call and not args.first_calls_only:
        parser.error("--at-call needs --first-calls-only")
    if args.busy < 0:
        parser.error(f"--busy must be 0 or more, got {args.busy}")
    if args.busy and not args.first_calls_only:
        parser.error("--busy needs --first-calls-only")
    if args.first_calls_only:
        return _first_calls_only(parser, graphs, args)
    unknown = sorted(set(graphs) - set(GRAPHS))
    if unknown:
        parser.error(f"unknown graph(s) {', '.join(unknown)}; known: {', '.join(GRAPHS)}")
    repeat = args.repeat if args.repeat is not None else (3 if args.quick else 30)

    import xla_backends  # noqa: F401

    first_call_repeat = args.first_call_repeat if args.first_call_repeat is not None else (1 if args.quick else 3)
    table = rows(graphs, repeat, args.first_calls, first_call_repeat)
    print("Latency per call: median, to the end of the device's work")
    print(render(table, LATENCY_COLUMNS))
    print()
    print("Host overhead per call (µs): the compiled call with the executable's launch stubbed out, "
          "minus the stub;\nsplit into dynamo's share and each backend's")
    print(render(table, OVERHEAD_COLUMNS))
    print()
    for row in table:
        print(f"{row['graph']}: {row['model']}, {row['graph inputs']} graph inputs, "
              f"{row['calls']} timed calls per variant")
    print("first calls: " + {
        "fresh": f"each in a fresh interpreter, median of {first_call_repeat}",
        "same-process": "in this process, ours first (openxla_eval may reuse its XLA executable)",
        "skip": "not measured"}[args.first_calls])
    for line in verdicts(table):
        print(line)
    _write_json(args.json, table)
    return 0


def _check_writable(parser, path: str | None) -> None:
    """Refuse, before measuring, a --json path that cannot be written."""
    if not path:
        return
    target = Path(path)
    if target.is_dir():
        parser.error(f"--json {path} is a folder")
    folder = target.parent if str(target.parent) else Path(".")
    if not folder.is_dir() or not os.access(folder, os.W_OK) or (target.exists() and not os.access(target, os.W_OK)):
        parser.error(f"--json {path} cannot be written")


def _write_json(path: str | None, table: list[dict]) -> None:
    if path:
        with open(path, "w") as f:
            json.dump(table, f, indent=2)


def _first_calls_only(parser, graphs: list[str], args) -> int:
    from benchmarks.run import suite

    if graphs == ["seed"]:
        graphs = suite.list_models("seed")
    known = set(GRAPHS) | set(suite.list_models("builtin"))
    unknown = sorted(set(graphs) - known)
    if unknown:
        parser.error(f"unknown graph(s) {', '.join(unknown)}; known: {', '.join(GRAPHS)}, "
                     "seed, or a built-in model")
    repeat = args.first_call_repeat if args.first_call_repeat is not None else (1 if args.quick else 3)
    with busy_loops(args.busy):
        table = first_call_rows(graphs, repeat, args.at_call)
    busy = f"; {args.busy} busy-looping processes running" if args.busy else ""
    print(f"First calls (trace, compile, run), each in a fresh interpreter; median of {repeat} per "
          f"backend{busy}")
    print(render(table, FIRST_CALL_COLUMNS + (AT_CALL_COLUMNS if args.at_call else ())))
    for line in first_call_summary(table):
        print(line)
    _write_json(args.json, table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
