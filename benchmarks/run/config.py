"""``RunConfig``: the one frozen object that describes a run.

The CLI builds it from the command line (validating everything), the parent
process hands it to each worker as JSON, and nothing else holds run-wide
state.
"""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path

from benchmarks.results.schema import Experiment

# --float32 / --bfloat16 / --float16 / --amp -> the row's dtype: the model and
# its floating inputs are cast to the torch dtype; amp keeps them fp32 and
# runs the step under autocast (bf16, on the device that runs the step).
PRECISIONS = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16", "amp": None}
# The suites (``benchmarks.run.suite``): seed, ten of the built-in models;
# builtin, all of ours; torchbench, a pytorch/benchmark checkout's;
# huggingface and timm_models, PyTorch's own suites from its list files
# (``benchmarks.models.pytorch_suites``).
SUITES = ("seed", "builtin", "torchbench", "huggingface", "timm_models")
PYTORCH_SUITES = ("huggingface", "timm_models")
# --profile: the model sizes and batch sizes of a cpu run; small fits two
# cores (PyTorch's suites only: the built-in models' cpu profile already does).
PROFILES = ("small",)
# torch_xla's backends: their graphs run on the XLA device, as ours
# (``xla_backends.BACKENDS``) do; any other backend runs on the host
# (``benchmarks.run.placement``).
TORCH_XLA_BACKENDS = ("openxla_eval", "openxla")
# --compile-step: what of a training step is compiled besides the model.
# whole: the step (forward, loss, backward, SGD step) as one graph; graphs:
# the step as written, which dynamo breaks into graphs at backward().
COMPILE_STEPS = ("whole", "graphs")


@dataclass(frozen=True)
class RunConfig:
    measure: str = "performance"  # "performance" | "accuracy": what the run measures
    training: bool = False
    backends: tuple[str, ...] = ()
    use_xla_baseline: bool = False
    randomize_input: bool = False
    models: tuple[str, ...] = ()  # the selection, in run order
    suite: str = "builtin"
    batch_size: int | None = None  # overrides configs/ when set
    repeat: int = 30  # timed repeats in each worker process
    # Performance: fresh worker processes per model, each timing ``repeat``
    # repeats (benchmarks.run.processes); 1: one process, as before.
    processes: int = 1
    warmup: int = 3
    device: str = "cpu"  # XLA device kind: PJRT_DEVICE
    seed: int = 0
    output: str = "results/performance_inference_cpu.csv"
    configs: str | None = None  # per-model settings file; None: configs/models.yaml
    configs_text: str | None = None  # that file's text, read once when the run starts
    timeout: float = 900.0  # seconds per model, in isolation
    isolate: bool = True
    resume: bool = False
    precision: str = "fp32"  # a key of PRECISIONS: the rows' dtype
    dynamic_shapes: bool = False  # mark the batch dimension dynamic
    batch_sizes: tuple[int, ...] = ()  # cycled across repeats; () = the one batch size
    profiler_trace_dir: str | None = None  # one profiled step per runner, after timing
    hlo_dir: str | None = None  # the HLO of each graph of the XLA runners
    # First calls. cold_start: each runner's first call timed in a fresh
    # process of its own (compilation_latency; the CLI's default, off here to
    # keep programmatic runs cheap); warm_start: a fresh runner's first call
    # again after timing, its executable already in XLA's cache.
    cold_start: bool = False
    cold_start_repeat: int = 3  # fresh processes per runner: a median and a range
    warm_start: bool = False
    compile_cache: str | None = None  # torch_xla's persistent compilation cache folder
    # Adaptive repeats: with max_time (seconds of timed repeats per model),
    # repeat is the most repeats; they stop once every speedup's 95% interval
    # is within +-target_ci of it, after at least min_repeat.
    max_time: float | None = None
    min_repeat: int = 5
    target_ci: float = 0.03
    threads: int | None = None  # torch intra-op and XLA CPU client threads; None: the CPUs allowed
    cpu_affinity: tuple[int, ...] = ()  # CPUs the worker may run on; (): as inherited
    # Training: the whole step compiled, a value of COMPILE_STEPS; None: the model alone.
    compile_step: str | None = None
    # Inference with autograd on: set per model by the worker from its
    # settings (``grad_in_inference``), never by the command line.
    grad_in_inference: bool = False
    # --profile small: PyTorch's suites at batch size 1, shorter sequences and
    # fewer layers (configs/pytorch/); None: the device's profile.
    size_profile: str | None = None
    # --iterations-per-run: iterations in each timed sample, run back to
    # back with one device wait at the end, as PyTorch's harness times them.
    iterations_per_run: int = 1

    @property
    def adaptive(self) -> bool:
        return self.max_time is not None

    @property
    def amp(self) -> bool:
        return self.precision == "amp"

    @property
    def profile(self) -> str:
        """The batch-size column of configs/ that fits the device, or the
        profile --profile names."""
        if self.size_profile:
            return self.size_profile
        return "cpu" if self.device == "cpu" else "accelerator"

    @property
    def experiment(self) -> Experiment:
        """What the run measures: every setting of ``schema.SETTINGS`` read
        from this config, once (the config is frozen)."""
        found = self.__dict__.get("_experiment")
        if found is None:
            found = Experiment.of(self)
            object.__setattr__(self, "_experiment", found)
        return found

    @property
    def baseline(self) -> str:
        return self.experiment["baseline"]

    def settings(self):
        """configs/ as the run read it when it started (``configs_text``), the
        same for every model and worker; read now when the run did not."""
        from benchmarks.run.settings import DEFAULT_PATH, load_settings, parse_settings

        if self.configs_text is None:
            return load_settings(self.configs)
        return parse_settings(Path(self.configs) if self.configs else DEFAULT_PATH, self.configs_text)

    @property
    def csv_path(self) -> Path:
        return Path(self.output)

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self))

    @classmethod
    def from_json(cls, text: str) -> "RunConfig":
        data = json.loads(text)
        data["backends"] = tuple(data["backends"])
        data["models"] = tuple(data["models"])
        data["batch_sizes"] = tuple(data.get("batch_sizes", ()))
        data["cpu_affinity"] = tuple(data.get("cpu_affinity", ()))
        return cls(**data)

    def replace(self, **changes) -> "RunConfig":
        return dataclasses.replace(self, **changes)
