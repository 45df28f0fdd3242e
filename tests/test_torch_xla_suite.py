"""torch_xla's own dynamo tests (v2.9.0), pointed at our backends.

``test/dynamo/test_dynamo.py`` of torch_xla tests its bridge through the
backend name ``openxla``. The file and its helper live, unmodified, in
``../shared/peer/pytorch-xla-v2.9.0/``; this test copies them into a temporary
folder with the names substituted (``DynamoTraining*`` classes ->
``aot_torchxla_trace_once``, every other class -> ``torchxla_trace_once``),
runs them in a fresh interpreter, and fails if a case that should pass does
not. Cases parameterised with torch_xla's jax backend (``dynamo_backend2``)
do not apply and are deselected; two cases assert details of torch_xla's own
bridge and are expected to fail (see ``DIFFERENT_BY_DESIGN`` and docs/backends.md).

``make test-torch-xla`` runs this file alone.
"""
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

PEER = Path(__file__).resolve().parents[2] / "shared" / "peer" / "pytorch-xla-v2.9.0"
INFERENCE, TRAINING = "torchxla_trace_once", "aot_torchxla_trace_once"

# Cases that check how torch_xla's bridge works inside, not what it computes.
DIFFERENT_BY_DESIGN = {
    # Counts torch_xla's own ``DynamoSyncInputExecuteTime`` metric.
    "DynamoInferenceBasicTest.test_simple_model",
    # Expects warnings and a host run when every tensor is on the CPU; ours
    # runs such graphs on the XLA device and returns host tensors.
    "DynamoErrorMessageTest.test_all_cpu_tensor",
}


def substituted(source: str) -> str:
    """``source`` with each class's ``openxla`` replaced by our backend name."""
    parts = re.split(r"(?m)^(?=class )", source)
    out = []
    for part in parts:
        name = re.match(r"class (\w+)", part)
        backend = TRAINING if name and name.group(1).startswith("DynamoTraining") else INFERENCE
        out.append(re.sub(r"""(["'])openxla\1""", rf"\1{backend}\1", part))
    return "import xla_backends  # registers our backends\n" + "".join(out)


def jax_cases(source: str) -> list[str]:
    """Node ids of the cases parameterised with torch_xla's jax backend.

    absl names ``@parameterized.parameters(a, b)`` cases ``test_x0``,
    ``test_x1``: the jax backend is the second parameter wherever it appears.
    """
    found, cls = [], None
    lines = source.splitlines()
    for n, line in enumerate(lines):
        if m := re.match(r"class (\w+)", line):
            cls = m.group(1)
        if "parameterized.parameters" in line and "dynamo_backend2" in line:
            params = re.search(r"parameters\(\[?(.*?)\]?\)", line).group(1).split(",")
            index = next(i for i, p in enumerate(params) if "dynamo_backend2" in p)
            test = next(re.search(r"def (\w+)", l).group(1) for l in lines[n + 1:] if "def " in l)
            found.append(f"{cls}::{test}{index}")
    return found


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory):
    if not (PEER / "test_dynamo.py").exists():
        pytest.skip(f"torch_xla's tests are not at {PEER}")
    folder = tmp_path_factory.mktemp("torch_xla_dynamo")
    source = (PEER / "test_dynamo.py").read_text()
    (folder / "test_dynamo.py").write_text(substituted(source))
    (folder / "test_utils.py").write_text((PEER / "test_utils.py").read_text())
    report = folder / "report.xml"
    deselect = [arg for case in jax_cases(source) for arg in ("--deselect", f"test_dynamo.py::{case}")]
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "test_dynamo.py", "-q", "-p", "no:cacheprovider",
         "--rootdir", str(folder), "-o", "addopts=", f"--junitxml={report}", *deselect],
        cwd=folder, capture_output=True, text=True, timeout=1800,
        env=dict(os.environ, PJRT_DEVICE="CPU"))
    assert report.exists(), done.stdout[-3000:] + done.stderr[-3000:]
    results = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        name = f"{case.get('classname').rsplit('.', 1)[-1]}.{case.get('name')}"
        failed = case.find("failure") is not None or case.find("error") is not None
        skipped = case.find("skipped") is not None
        results[name] = "skipped" if skipped else "failed" if failed else "passed"
    return results, done.stdout


def test_substitution_keeps_no_openxla_name():
    source = (PEER / "test_dynamo.py").read_text() if PEER.exists() else pytest.skip("no peer copy")
    copy = substituted(source)
    assert not re.search(r"""["']openxla["']""", copy)
    assert f'backend="{TRAINING}"' in copy and f'backend="{INFERENCE}"' in copy
    assert len(jax_cases(source)) == 8


@pytest.mark.slow
def test_torch_xla_dynamo_tests_pass_on_our_backends(outcomes):
    results, log = outcomes
    assert len(results) >= 20, log[-3000:]
    failed = sorted(name for name, r in results.items() if r == "failed")
    unexpected = [name for name in failed if name not in DIFFERENT_BY_DESIGN]
    assert not unexpected, f"torch_xla's dynamo tests failing on our backends: {unexpected}\n{log[-6000:]}"


@pytest.mark.slow
def test_only_the_documented_differences_fail(outcomes):
    """The two cases we expect to differ do differ: if one starts passing,
    the list of differences in docs/backends.md is out of date."""
    results, _ = outcomes
    failed = {name for name, r in results.items() if r == "failed"}
    assert failed == DIFFERENT_BY_DESIGN
