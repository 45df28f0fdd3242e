"""`make nightly` end to end on one tiny model, twice: the second night compares."""
import os
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image

ROOT = Path(__file__).resolve().parent.parent
FAULT_MODELS = Path(__file__).resolve().parent / "fault_models"


def _night(root, date):
    env = dict(os.environ, PYTHONPATH=str(FAULT_MODELS), PJRT_DEVICE="CPU")
    return subprocess.run(
        [sys.executable, "-m", "benchmarks.nightly", "--root", str(root), "--date", date,
         "--backends", "eager", "--", "--suite", "torchbench", "--only", "steady",
         "--repeat", "12", "--warmup", "1"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def two_nights(tmp_path_factory):
    root = tmp_path_factory.mktemp("nightly")
    return root, _night(root, "2026-01-01"), _night(root, "2026-01-02")


def test_first_night_writes_a_dated_run_and_compares_nothing(two_nights):
    root, first, _ = two_nights
    assert first.returncode == 0, first.stderr
    night = root / "2026-01-01"
    for name in ("performance.csv", "performance.jsonl", "performance.md", "performance.png"):
        assert (night / name).stat().st_size > 0, name
    assert "nothing to compare with" in first.stderr
    assert not (night / "compare.md").exists()
    assert "![speedups](performance.png)" in (night / "performance.md").read_text()


def test_second_night_compares_with_the_first(two_nights):
    root, _, second = two_nights
    # A/A: the same code on the same machine must not fail the gate.
    assert second.returncode == 0, second.stdout + second.stderr
    night = root / "2026-01-02"
    markdown = (night / "compare.md").read_text()
    assert "steady" in markdown and "2026-01-01" not in str(night)
    with Image.open(night / "compare.png") as png:
        assert png.format == "PNG" and png.size[0] > 0
