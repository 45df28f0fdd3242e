"""The run command's flags: one parser built from its argument groups.

Flags keep the names users know from PyTorch's ``benchmarks/dynamo`` harness;
those of that harness that mean something else here are refused with a line
naming ours (``FLAGS_ELSEWHERE``).
"""
from __future__ import annotations

import argparse

from benchmarks.run.config import COMPILE_STEPS, PROFILES, SUITES
from benchmarks.usage import Parser, UsageError

PROG = "runner.py"
DEFAULT_BACKENDS = ("torchxla_trivial", "torchxla_trace_once")
# With --training: a step's backward needs a backend that gives gradients.
DEFAULT_TRAINING_BACKENDS = ("torchxla_trivial", "aot_torchxla_trace_once")
# Inference backends of ours, and the one to name instead with --training.
FOR_TRAINING = {"torchxla_trace_once": "aot_torchxla_trace_once"}
DEFAULT_TIMEOUT = 900.0
DEVICES = {"cpu": "CPU", "tpu": "TPU"}  # --device -> PJRT_DEVICE
DEFAULT_REPEAT = 30  # --repeat's default with one process (--processes 1, or --max-time)
# --performance without --repeat: the repeats spread over fresh worker
# processes (benchmarks.run.processes), so the gate's test sees the spread a
# second run would show.  6 x 30: the fewest that caught a +5% slowdown nine
# nights in ten on a steady model in the power benchmark's measurements (a
# repeat costs a second at most, a process more than a minute: repeats are
# the cheap precision; docs/methodology.md, the gate's rule and its precision).
DEFAULT_PROCESSES = 6
DEFAULT_PROCESS_REPEAT = 30
DEFAULT_COLD_START_REPEAT = 3  # a median that one slow process cannot move
ADAPTIVE_MAX_REPEAT = 1000  # --max-time without --repeat: time and precision decide
DEFAULT_MIN_REPEAT = 5
DEFAULT_TARGET_CI = 0.03


def build_parser() -> argparse.ArgumentParser:
    """The run command's parser: its argument groups, in --help's order."""
    p = Parser(prog=PROG, description="Benchmark torch._dynamo backends on TorchBench-named models.",
                epilog="Subcommands: `runner.py compare OLD.csv NEW.csv`, "
                       "`runner.py merge OUT.csv IN.csv...`, "
                       "`runner.py dashboard ROOT -o SITE`; each takes --help.")
    for add_group in (_experiment, _selection, _measurement, _diagnostics, _first_calls, _running,
                      _output, _pytorch_names):
        add_group(p)
    return p


def _experiment(p: argparse.ArgumentParser) -> None:
    measure = p.add_mutually_exclusive_group()
    measure.add_argument("--performance", action="store_true", help="measure speedups (default)")
    measure.add_argument("--accuracy", action="store_true", help="compare outputs with the baseline")
    phase = p.add_mutually_exclusive_group()
    phase.add_argument("--inference", action="store_true", help="run inference (default)")
    phase.add_argument("--training", action="store_true", help="run a training step")
    p.add_argument("--compile-step", nargs="?", const=COMPILE_STEPS[0], choices=COMPILE_STEPS,
                   help="with --training: compile the whole step (forward, loss, backward, SGD step), "
                        "not only the model: as one graph (whole, the default; rows of mode "
                        "training_step), or as written, which dynamo breaks into graphs at backward() "
                        "(graphs; rows of mode training_step_graphs)")
    p.add_argument("--backend", action="append", metavar="NAME",
                   help="dynamo backend to measure; repeat it or separate names with commas "
                        f"(default: {','.join(DEFAULT_BACKENDS)}; with --training "
                        f"{','.join(DEFAULT_TRAINING_BACKENDS)})")
    p.add_argument("--use-xla-baseline", action="store_true",
                   help="baseline: the model run lazily on the XLA device instead of eager on the host")
    p.add_argument("--randomize-input", action="store_true", help="draw fresh inputs every repeat")


def _selection(p: argparse.ArgumentParser) -> None:
    sel = p.add_argument_group("model selection")
    pick = sel.add_mutually_exclusive_group()  # --only names the models; -k would silently narrow them
    pick.add_argument("--only", action="append", metavar="NAME",
                     help="run just these models: repeat it or separate names with commas "
                          "(names match case-insensitively)")
    pick.add_argument("-k", "--filter", action="append", default=[], metavar="REGEX",
                     help="run models whose name matches, ignoring case (repeatable)")
    sel.add_argument("-x", "--exclude", action="append", default=[], metavar="REGEX",
                     help="skip models whose name matches, ignoring case (repeatable)")
    sel.add_argument("--exclude-exact", action="append", default=[], metavar="NAME",
                     help="skip these models, named exactly (case-insensitively; repeatable, commas)")
    sel.add_argument("--suite", choices=SUITES, default="builtin",
                     help="seed: the ten models of the first experiment; builtin: all our "
                          "models (default); torchbench: a pytorch/benchmark checkout's; huggingface, "
                          "timm_models: PyTorch's own suites, from its list files (configs/pytorch/)")
    sel.add_argument("--profile", choices=PROFILES, default=None,
                     help="with --suite huggingface or timm_models on --device cpu: small, batch size 1, "
                          "sequences of at most 128 tokens and at most two layers (configs/pytorch/), "
                          "which fits two cores (default: PyTorch's CPU batch sizes, the models whole)")
    sel.add_argument("--torchbench-dir", metavar="DIR",
                     help="the pytorch/benchmark checkout for --suite torchbench "
                          "(default: torchbenchmark from PYTHONPATH)")
    sel.add_argument("--list-models", action="store_true",
                     help="print the selected models (after --only/-k/-x and the shard flags) and exit")
    sel.add_argument("--dry-run", action="store_true",
                     help="print the plan (models x backends, batch sizes, repeats, first calls, the files "
                          "it would write) and exit with the code the run would give; creates nothing")
    sel.add_argument("--total-partitions", type=int, default=1, metavar="N",
                     help="split the selected models into N shards (for CI; default 1: all of them)")
    sel.add_argument("--partition-id", type=int, default=None, metavar="I",
                     help="with --total-partitions: run shard I (0-based)")


def _measurement(p: argparse.ArgumentParser) -> None:
    m = p.add_argument_group("measurement")
    m.add_argument("--batch-size", type=int, help="override the batch size of configs/")
    m.add_argument("--repeat", type=int, default=None,
                   help=f"timed repeats in each worker process (default {DEFAULT_PROCESS_REPEAT} in each "
                        f"of --processes; {DEFAULT_REPEAT} with --processes 1); with --max-time, the most "
                        f"(default {ADAPTIVE_MAX_REPEAT})")
    m.add_argument("--processes", type=int, metavar="N",
                   help=f"performance: fresh worker processes per model, each timing --repeat repeats "
                        f"of the baseline and backends interleaved (default {DEFAULT_PROCESSES} without "
                        f"--repeat; 1 with --repeat, --max-time or --no-isolate)")
    m.add_argument("--max-time", type=float, metavar="S",
                   help="adaptive repeats: keep interleaving repeats until every speedup's 95%% "
                        "interval is within --target-ci, or S seconds of repeats per model are spent")
    m.add_argument("--min-repeat", type=int, metavar="N",
                   help=f"with --max-time: at least N repeats (default {DEFAULT_MIN_REPEAT})")
    m.add_argument("--target-ci", type=float, metavar="F",
                   help="with --max-time: the 95%% interval's half-width sought, relative to the "
                        f"speedup (default {DEFAULT_TARGET_CI}: +-{DEFAULT_TARGET_CI * 100:g}%%)")
    m.add_argument("--threads", type=int, metavar="N",
                   help="threads of torch's intra-op pool and of XLA's CPU client, the same for every "
                        "runner (default: one per CPU the worker may use)")
    m.add_argument("--cpu-affinity", metavar="CPUS",
                   help="pin each worker to these CPUs, as taskset -c takes them (e.g. 0-3,6)")
    m.add_argument("--iterations-per-run", type=int, default=1, metavar="N",
                   help="performance: run N iterations back to back in each timed sample, the device "
                        "waited for once at their end, as PyTorch's harness does (on XLA one iteration's "
                        "tracing then overlaps the last one's execution); latencies stay per iteration "
                        "(default 1)")
    m.add_argument("--warmup", type=int, default=3, help="warm-up calls; the first is timed alone (default 3)")
    m.add_argument("--device", "--devices", "-d", type=_device, default="cpu",
                   help=f"XLA device (PJRT_DEVICE): {', '.join(sorted(DEVICES))} (default cpu)")
    m.add_argument("--seed", type=int, default=0, help="seed of weights and inputs (default 0)")
    m.add_argument("--configs", metavar="YAML", help="per-model settings (default configs/models.yaml)")
    prec = m.add_mutually_exclusive_group()
    prec.add_argument("--float32", dest="precision", action="store_const", const="fp32",
                      help="run in float32 (default)")
    prec.add_argument("--bfloat16", dest="precision", action="store_const", const="bf16",
                      help="cast the model and its floating inputs to bfloat16")
    prec.add_argument("--float16", dest="precision", action="store_const", const="fp16",
                      help="cast the model and its floating inputs to float16")
    prec.add_argument("--amp", dest="precision", action="store_const", const="amp",
                      help="float32 model under autocast (bfloat16) on the device that runs the step")
    m.add_argument("--amp-dtype", type=_amp_dtype, metavar="bfloat16",
                   help="with --amp: the autocast dtype (bfloat16 only here)")
    m.add_argument("--dynamic-shapes", "--dynamic-batch-only", action="store_true",
                   help="mark the batch dimension dynamic (torch._dynamo.mark_dynamic)")
    m.add_argument("--batch-sizes", metavar="N,N,...",
                   help="cycle these batch sizes across repeats; one row per batch size")


def _diagnostics(p: argparse.ArgumentParser) -> None:
    d = p.add_argument_group("diagnostics")
    d.add_argument("--export-profiler-trace", metavar="DIR", nargs="?", const=PROFILER_TRACE_FOLDER,
                   help="after timing, profile one step of each contender into DIR/<model>_<contender>.json "
                        f"(DIR: default {PROFILER_TRACE_FOLDER}/ beside the output CSV)")
    d.add_argument("--explain", "--print-graph-breaks", action="store_true",
                   help="after the run, print per model and backend its graph breaks with reasons, "
                        "the ops run on the host, recompiles with the guard that failed, and the "
                        "host's share of a step")
    d.add_argument("--dump-hlo", metavar="DIR",
                   help="write the HLO of each graph of the XLA contenders into DIR")


def _first_calls(p: argparse.ArgumentParser) -> None:
    f = p.add_argument_group("first calls")
    cold = f.add_mutually_exclusive_group()
    cold.add_argument("--no-cold-start", dest="cold_start", action="store_false",
                   help="time each contender's first call in the measuring process instead of a fresh "
                        "process of its own (faster; another contender's executable may then serve it: "
                        "compilation_kind in_process; default: a fresh process, --cold-start-latency)")
    cold.add_argument("--cold-start-latency", dest="cold_start", action="store_true",
                   help="time each contender's first call in a fresh process (the default here)")
    f.add_argument("--cold-start-repeat", type=int, default=DEFAULT_COLD_START_REPEAT, metavar="N",
                   help="fresh processes per contender for its cold first call, the contenders taking "
                        "turns; the row reports their median and range "
                        f"(default {DEFAULT_COLD_START_REPEAT})")
    f.add_argument("--warm-start", "--warm-start-latency", action="store_true",
                   help="also time each backend's first call with its executable already cached "
                        "(warm_start_latency)")
    f.add_argument("--compile-cache", metavar="DIR",
                   help="torch_xla's persistent compilation cache in DIR: later runs load unchanged "
                        "graphs' executables instead of compiling (TPU; not PJRT CPU in torch_xla 2.9)")


def _running(p: argparse.ArgumentParser) -> None:
    r = p.add_argument_group("running")
    r.add_argument("--timeout", type=float, default=None,
                   help=f"seconds per model, in its own process (default {DEFAULT_TIMEOUT:g})")
    r.add_argument("--no-isolate", dest="isolate", action="store_false",
                   help="run models in this process, with no --timeout (for debugging; default: each model "
                        "in its own process)")
    r.add_argument("--resume", action="store_true", help="complete an existing output, skipping done rows")
    r.add_argument("--overwrite", action="store_true",
                   help="replace an existing output once this run ends; until then it writes beside it "
                        "(NAME.partial.csv, ...), so a run stopped early leaves the earlier files as they were")


def _output(p: argparse.ArgumentParser) -> None:
    o = p.add_argument_group("output")
    o.add_argument("--output", metavar="PATH", help="CSV path; markdown beside it with .md")
    o.add_argument("--output-directory", default="results", metavar="DIR",
                   help="folder of the default output (default results/)")


def _pytorch_names(p: argparse.ArgumentParser) -> None:
    """--version, and PyTorch's harness's flags that mean something else here."""
    p.add_argument("--version", action=_Version, help="print the versions of this harness, torch and "
                                                      "torch_xla, and exit")
    for flag, instead in FLAGS_ELSEWHERE.items():
        p.add_argument(flag, nargs="?", action=_Refused, instead=instead, help=argparse.SUPPRESS)


# PyTorch's benchmarks/dynamo flags that mean something else here: what to use instead.
FLAGS_ELSEWHERE = {
    "--iterations": "--repeat N (timed repeats, each one step) and --warmup N",
    "--tolerance": "the per-model `tolerance:` of configs/models.yaml (--configs YAML for your own)",
    "--nopython": "nothing: a graph break here is measured and reported (--explain), never an error",
    "--inductor": "--backend inductor (any registered dynamo backend is measured on the host)",
    "--xla": "--backend NAME: every backend of ours runs on XLA (torchxla_trace_once, "
             "aot_torchxla_trace_once with --training)",
    "--trace-on-xla": "--backend torchxla_trace_once (dynamo's graphs are traced on the XLA device "
                      "by every XLA backend)",
    "--use-eval-mode": "nothing: inference runs in eval mode, --training in train mode",
    "--batch-size-file": "--configs YAML (batch sizes per model in configs/models.yaml's format)",
    "--log-graph-breaks": "--explain (graph breaks with reasons; every run also writes NAME_graph_breaks.csv)",
}
PROFILER_TRACE_FOLDER = "profiler_traces"

# The flags that do not change what is measured, each with the column that
# records it on the row (None: nothing to record) and why it is not part of
# the experiment.  Every other flag sets a setting of
# ``benchmarks.results.schema.SETTINGS`` (or ``MEASURE_FLAGS``);
# tests/test_experiment.py holds each flag to be one or the other.
NOT_MEASURED = {
    "--help": (None, "prints the flags"),
    "--version": (None, "prints the versions"),
    "--torchbench-dir": (None, "where TorchBench's models are found; which ones: the suite"),
    "--list-models": (None, "prints the selection"),
    "--dry-run": (None, "prints the plan"),
    "--total-partitions": (None, "a shard of the selection: merge joins the shards"),
    "--partition-id": (None, "a shard of the selection: merge joins the shards"),
    "--max-time": ("max_time_s", "how many repeats: the precision, not the experiment"),
    "--min-repeat": ("min_repeat", "how many repeats: the precision, not the experiment"),
    "--target-ci": ("target_ci", "how many repeats: the precision, not the experiment"),
    "--processes": ("processes", "how many worker processes the repeats ran in: the precision, "
                                 "not the experiment (compare tests per process where both sides have them)"),
    "--threads": ("threads", "the machine's share the run had; compare names a change"),
    "--cpu-affinity": ("cpu_affinity", "the machine's share the run had; compare names a change"),
    "--configs": ("batch_size", "its batch sizes are the rows' batch_size, its tolerances their tolerance"),
    "--export-profiler-trace": (None, "a diagnostic after timing"),
    "--explain": (None, "a diagnostic after the run"),
    "--dump-hlo": (None, "a diagnostic after timing"),
    "--no-cold-start": ("compilation_kind", "where the first call was timed, beside it"),
    "--cold-start-latency": ("compilation_kind", "where the first call was timed, beside it"),
    "--cold-start-repeat": ("cold_starts", "how many fresh processes the first call's median is of"),
    "--warm-start": ("warm_start_latency", "one more first call, in columns of its own"),
    "--compile-cache": ("persistent_cache_hits", "first calls only, their cache hits beside them"),
    "--timeout": (None, "a model past it fails: its status says so"),
    "--no-isolate": (None, "where models run, for debugging"),
    "--resume": (None, "how the file is written"),
    "--overwrite": (None, "how the file is written"),
    "--output": (None, "where the file is written"),
    "--output-directory": (None, "where the file is written"),
}


class _Refused(argparse.Action):
    """A flag of PyTorch's harness with no twin here: one line naming ours."""

    def __init__(self, option_strings, dest, instead, **kwargs):
        super().__init__(option_strings, dest, **kwargs)
        self.instead = instead

    def __call__(self, parser, namespace, values, option_string=None):
        raise UsageError(f"{option_string} is PyTorch's harness's flag; here use {self.instead}")


class _Version(argparse.Action):
    """--version, printed as one unwrapped line (argparse's own wraps it)."""

    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=0, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        print(_version())
        parser.exit()


def _amp_dtype(name: str) -> str:
    if name == "bfloat16":
        return name
    if name == "float16":
        raise argparse.ArgumentTypeError("float16: --amp autocasts to bfloat16 only here "
                                         "(--float16 casts the model and its inputs instead)")
    raise argparse.ArgumentTypeError(f"{name!r}: --amp autocasts to bfloat16 only here")


def _device(name: str) -> str:
    if name.lower() in DEVICES:
        return name.lower()
    if name.lower() == "xla":
        raise argparse.ArgumentTypeError(
            "'xla': every backend here already runs on XLA; --device names the XLA device's kind "
            f"(PJRT_DEVICE): {' or '.join(sorted(DEVICES))} (cpu: XLA's CPU client)")
    raise argparse.ArgumentTypeError(
        f"{name!r}: this harness runs XLA on {' or '.join(sorted(DEVICES))} (torch_xla 2.9 has no "
        "CUDA device; --device cpu runs the XLA CPU client)")


def _version() -> str:
    """This package's version and the ones it measures with, read from the
    installed metadata (no torch import: --version answers at once)."""
    from importlib import metadata

    def version(name):
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return "not installed"

    return (f"{PROG} (xla-dynamo-bench) {version('xla-dynamo-bench')}; torch {version('torch')}, "
            f"torch_xla {version('torch_xla')}, torchvision {version('torchvision')}")
