"""Shared set-up of the test suite.

XLA runs on the CPU PJRT client here (no accelerator): set it before anything
imports torch_xla. The fixtures below are for the backend tests: a clean
dynamo state per test, the XLA device, counters of torch_xla's metrics, and
``run_against_eager``, which checks a backend against eager PyTorch on the
CPU call after call.
"""
import os

os.environ.setdefault("PJRT_DEVICE", "CPU")

# torch_xla registers its device with autograd when imported; the autograd
# engine sizes its per-device queues on the first backward. A test process
# whose first backward ran on the CPU before torch_xla was imported would fail
# its first XLA backward ("device_ready_queues_" assert). So import it first.
import torch_xla  # noqa: E402,F401

import copy  # noqa: E402
import shutil  # noqa: E402
import sys  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    """``torch._dynamo.reset()`` around every test that has dynamo loaded, so
    no test sees another's compiled graphs (or its recompile budget)."""
    if "torch._dynamo" in sys.modules:
        sys.modules["torch._dynamo"].reset()
    yield
    if "torch._dynamo" in sys.modules:
        sys.modules["torch._dynamo"].reset()


# The fake TorchBench package of tests/fault_models, and the per-model
# settings its runs use (test files import both: ``from conftest import ...``).
FAULT_MODELS = Path(__file__).resolve().parent / "fault_models"
TINY_CONFIGS = """
defaults:
  batch_size: {accelerator: 2, cpu: 2}
  tolerance: {host: 1.0e-4, xla: 1.0e-2}
  cosine: false
"""


def _forget_torchbenchmark():
    for name in [n for n in sys.modules if n.split(".")[0] == "torchbenchmark"]:
        del sys.modules[name]


@pytest.fixture
def fault_models(monkeypatch):
    """The fake TorchBench package of tests/fault_models on sys.path (and on
    PYTHONPATH for worker processes); forgotten afterwards, with the
    ``torch.manual_seed`` its models replace."""
    _forget_torchbenchmark()
    monkeypatch.syspath_prepend(str(FAULT_MODELS))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(FAULT_MODELS), os.environ.get("PYTHONPATH")])))
    manual_seed = sys.modules["torch"].manual_seed if "torch" in sys.modules else None
    yield
    if manual_seed is not None:
        sys.modules["torch"].manual_seed = manual_seed
    _forget_torchbenchmark()


@pytest.fixture(scope="session")
def xla():
    """The XLA device (imports torch_xla)."""
    torch_xla = pytest.importorskip("torch_xla")
    return torch_xla.device()


class Metrics:
    """torch_xla's compile and execute counters, read as deltas."""

    COMPILES = ("UncachedCompile", "CachedCompile")

    def __init__(self):
        import torch_xla.debug.metrics as met

        self.met = met

    def counter(self, name: str) -> int:
        return self.met.counter_value(name) or 0

    def compiles(self) -> int:
        """XLA compilations so far, fresh or found in the compilation cache."""
        return sum(self.counter(n) for n in self.COMPILES)

    def executions(self) -> int:
        data = self.met.metric_data("ExecuteTime")
        return data[0] if data else 0

    def clear(self) -> None:
        self.met.clear_all()


@pytest.fixture
def bridge():
    """The bridge's own counters (traces, replays, retraces, ...), from zero."""
    from torch._dynamo.utils import counters

    counters["trace_once"].clear()
    return counters["trace_once"]


@pytest.fixture
def quiet():
    """Warnings silenced: our partition and fallback warnings are expected in some tests."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


@pytest.fixture
def metrics(xla):
    return Metrics()


def _tree():
    from torch.utils import _pytree as pytree

    return pytree


def assert_same(actual, expected, where="value", atol=1e-4, rtol=1e-4, devices=None):
    """``actual`` has ``expected``'s structure (container types included),
    equal non-tensor leaves and close tensors. ``devices`` maps the device
    type of an expected tensor to the one the actual tensor must be on (a
    string: every actual tensor on that device type)."""
    import torch

    if isinstance(expected, torch.Tensor):
        assert isinstance(actual, torch.Tensor), f"{where}: {type(actual).__name__}, expected a tensor"
        if devices is not None:
            want = devices if isinstance(devices, str) else devices.get(expected.device.type)
            assert want is None or actual.device.type == want, f"{where}: on {actual.device}, not {want}"
        assert actual.shape == expected.shape, f"{where}: shape {tuple(actual.shape)} != {tuple(expected.shape)}"
        assert actual.dtype == expected.dtype, f"{where}: dtype {actual.dtype} != {expected.dtype}"
        torch.testing.assert_close(actual.detach().cpu(), expected.detach().cpu(), atol=atol, rtol=rtol,
                                   msg=lambda m: f"{where}: {m}")
        return
    assert type(actual) is type(expected), f"{where}: {type(actual).__name__} != {type(expected).__name__}"
    if isinstance(expected, (tuple, list)):
        assert len(actual) == len(expected), f"{where}: length {len(actual)} != {len(expected)}"
        for n, (a, e) in enumerate(zip(actual, expected)):
            assert_same(a, e, f"{where}[{n}]", atol, rtol, devices)
    elif isinstance(expected, dict):
        assert list(actual) == list(expected), f"{where}: keys {list(actual)} != {list(expected)}"
        for k in expected:
            assert_same(actual[k], expected[k], f"{where}[{k!r}]", atol, rtol, devices)
    else:
        assert actual == expected, f"{where}: {actual!r} != {expected!r}"


def identity_pattern(outputs, inputs) -> list:
    """For each tensor leaf of ``outputs``: which input it *is*, or which
    earlier output it is, or None (a tensor of its own)."""
    import torch

    pytree = _tree()
    ins = [id(t) for t in pytree.tree_leaves(inputs)]
    pattern, seen = [], []
    for t in pytree.tree_leaves(outputs):
        if not isinstance(t, torch.Tensor):
            continue
        if id(t) in ins:
            pattern.append(("input", ins.index(id(t))))
        elif id(t) in seen:
            pattern.append(("output", seen.index(id(t))))
        else:
            pattern.append(None)
        seen.append(id(t))
    return pattern


def run_against_eager(backend, model, make_inputs, *, device, calls=3, between=None,
                      compile_kwargs=None, atol=1e-4, rtol=1e-4, reference_device="cpu"):
    """Call ``model`` eagerly (on ``reference_device``: the CPU, or the XLA
    device for lazy XLA) and compiled with ``backend`` on ``device``,
    ``calls`` times, on inputs ``make_inputs(call)`` (CPU values), and after
    each call assert that both agree on: the outputs (values, structure, which
    outputs are inputs or each other), the inputs (in-place updates) and the
    module's state. ``between(module)`` runs on both modules after each call.
    Returns the compiled callable and its module."""
    import torch

    pytree = _tree()
    is_module = isinstance(model, torch.nn.Module)
    eager = copy.deepcopy(model).to(reference_device) if is_module else model
    ours = copy.deepcopy(model).to(device) if is_module else model
    graphs = []
    compile_graph = torch._dynamo.lookup_backend(backend)

    def counting(gm, example_inputs):
        graphs.append(gm)
        return compile_graph(gm, example_inputs)

    compiled = torch.compile(ours, backend=counting, **(compile_kwargs or {}))
    # Tensors eager puts on its device, ours must put on ours; others (a
    # ``.cpu()`` in the graph) stay where eager puts them.
    devices = {torch.device(reference_device).type: torch.device(device).type}
    for call in range(calls):
        inputs = make_inputs(call)
        eager_in = pytree.tree_map_only(torch.Tensor, lambda t: t.clone().to(reference_device), inputs)
        our_in = pytree.tree_map_only(torch.Tensor, lambda t: t.clone().to(device), inputs)
        expected = eager(*eager_in)
        actual = compiled(*our_in)
        where = f"call {call}"
        # A model that dynamo does not capture runs eagerly and proves nothing.
        assert graphs, f"{where}: dynamo compiled no graph with {backend}"
        assert_same(actual, expected, f"{where}: output", atol, rtol, devices)
        assert identity_pattern(actual, our_in) == identity_pattern(expected, eager_in), \
            f"{where}: outputs alias inputs/each other differently from eager"
        assert_same(our_in, eager_in, f"{where}: inputs after the call", atol, rtol)
        if is_module:
            assert_same(dict(ours.state_dict()), dict(eager.state_dict()), f"{where}: module state",
                        atol, rtol)
        if between is not None:
            between(eager)
            between(ours)
    return compiled, ours


@pytest.fixture
def against_eager(xla):
    """``run_against_eager`` on the XLA device unless told otherwise."""

    def run(backend, model, make_inputs, **kwargs):
        kwargs.setdefault("device", xla)
        return run_against_eager(backend, model, make_inputs, **kwargs)

    return run


@pytest.fixture
def same():
    """``assert_same(actual, expected, where, ...)``."""
    return assert_same


@pytest.fixture
def identities():
    """``identity_pattern(outputs, inputs)``."""
    return identity_pattern


def copy_fixture_run(folder: Path, to: Path) -> Path:
    """A fixture run of an older schema version (``folder``: its ``run.csv``
    with the samples and graph breaks beside it) copied into ``to``; the
    copy's CSV path."""
    for name in ("run.csv", "run.jsonl", "run_graph_breaks.csv"):
        shutil.copy(folder / name, to / name)
    return to / "run.csv"


def write_earlier_run(csv_path: Path) -> dict[Path, bytes]:
    """Files as an earlier run leaves them at ``csv_path`` (every file beside
    the CSV and a kept worker log); returns each file's bytes, to check that
    a later run left them as they were."""
    from benchmarks.results import store

    store.append_rows(csv_path, [dict(dev="cpu", name="earlier_model", batch_size=2, backend="eager",
                                      baseline="eager", status="pass", speedup=1.25)])
    store.append_samples(store.samples_path(csv_path),
                         [store.sample_record("earlier_model", "eager", "backend", [0.1, 0.2])])
    store.append_graph_breaks(csv_path, [])
    store.markdown_path(csv_path).write_text("# the earlier run's report\n")
    store.plot_path(csv_path).write_bytes(b"\x89PNG earlier chart")
    store.logs_path(csv_path).mkdir()
    (store.logs_path(csv_path) / "earlier_model.log").write_text("the earlier run's log\n")
    store.compilation_metrics_path(csv_path).write_text("name,backend\nearlier_model,eager\n")
    store.pytorch_folder(csv_path).mkdir()
    (store.pytorch_folder(csv_path) / "eager.csv").write_text("dev,name\ncpu,earlier_model\n")
    files = [*store.files_beside(csv_path), store.logs_path(csv_path) / "earlier_model.log",
             store.pytorch_folder(csv_path) / "eager.csv"]
    return {path: path.read_bytes() for path in files}
