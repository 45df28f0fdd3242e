"""How the backends become known to dynamo: import, entry point, idempotence."""
import importlib
import os
import subprocess
import sys
import textwrap
from configparser import ConfigParser
from importlib.metadata import entry_points
from pathlib import Path

import torch

import xla_backends

NAMES = ("torchxla_trivial", "torchxla_trace_once", "aot_torchxla_trace_once")
REPO = Path(__file__).resolve().parent.parent


def _python(code: str) -> str:
    """Run ``code`` in a fresh interpreter on the CPU PJRT client; its stdout."""
    env = dict(os.environ, PJRT_DEVICE="CPU")
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_importing_twice_is_safe():
    again = importlib.reload(xla_backends)
    again.register()
    xla_backends.register()
    for name in NAMES:
        assert torch._dynamo.lookup_backend(name) is again.BACKENDS[name]


def test_names_resolve_through_dynamo():
    assert torch._dynamo.lookup_backend("torchxla_trace_once") is xla_backends.torchxla_trace_once
    assert torch._dynamo.lookup_backend("torchxla_trivial") is xla_backends.torchxla_trivial
    assert torch._dynamo.lookup_backend("aot_torchxla_trace_once") is xla_backends.aot_torchxla_trace_once
    listed = torch._dynamo.list_backends(exclude_tags=())
    assert set(NAMES) <= set(listed)


def test_entry_points_are_installed():
    found = {ep.name: ep.value for ep in entry_points(group="torch_dynamo_backends")}
    assert found.get("torchxla_trace_once") == "xla_backends.trace_once:torchxla_trace_once"
    assert found.get("torchxla_trivial") == "xla_backends.trivial:torchxla_trivial"
    assert found.get("aot_torchxla_trace_once") == "xla_backends.aot:aot_torchxla_trace_once"


def test_one_list_of_our_backends():
    """xla_backends.BACKENDS is the list; setup.cfg's entry points, the
    harness's placement and its suggestions follow it."""
    from benchmarks import cli
    from benchmarks.run import placement

    assert tuple(xla_backends.BACKENDS) == NAMES
    setup = ConfigParser()
    setup.read(REPO / "setup.cfg")
    lines = setup["options.entry_points"]["torch_dynamo_backends"].strip().splitlines()
    published = dict(line.replace(" ", "").split("=") for line in lines)
    assert set(published) == set(NAMES)
    for name, value in published.items():
        module, attr = value.split(":")
        assert getattr(importlib.import_module(module), attr) is xla_backends.BACKENDS[name], value
    assert set(NAMES) <= placement.XLA_BACKENDS
    assert placement.XLA_BACKENDS - set(NAMES) == set(placement.TORCH_XLA_BACKENDS)
    assert cli.suggested_backends()["ours"] == NAMES


def test_importing_the_probes_registers_nothing():
    out = _python("""
        import torch
        from torch._dynamo.backends import registry
        import benchmarks.run.probes
        print("xla_backends" in __import__("sys").modules,
              any(n in registry._COMPILER_FNS for n in %r))
    """ % (NAMES,))
    assert out.split() == ["False", "False"]


def test_importing_the_package_does_not_import_torch_xla():
    out = _python("""
        import sys
        import xla_backends
        print("torch_xla" in sys.modules)
    """)
    assert out.split() == ["False"]


def test_fresh_interpreter_finds_the_backends_by_name():
    """No import of xla_backends: dynamo finds both names through the entry
    point (and must not fail with "duplicate name" when loading it registers
    the package)."""
    out = _python("""
        import sys
        import torch
        import torch_xla

        device = torch_xla.device()
        model = torch.nn.Linear(4, 2).to(device)
        x = torch.randn(3, 4)
        want = torch.nn.functional.linear(x, model.weight.cpu(), model.bias.cpu())
        assert "xla_backends" not in sys.modules
        for name in ("torchxla_trace_once", "torchxla_trivial"):
            torch._dynamo.reset()
            compiled = torch.compile(model, backend=name)
            for _ in range(2):
                got = compiled(x.to(device)).cpu()
                torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)
        print("xla_backends" in sys.modules, "ok")
    """)
    assert out.split() == ["True", "ok"]


def test_import_after_dynamo_discovered_the_entry_points():
    """Discovery first (list_backends), then an explicit import: no duplicate."""
    out = _python("""
        import torch
        torch._dynamo.list_backends(exclude_tags=())
        import xla_backends
        for name in ("torchxla_trace_once", "torchxla_trivial"):
            assert torch._dynamo.lookup_backend(name) is xla_backends.BACKENDS[name]
        print("ok")
    """)
    assert out.split() == ["ok"]
