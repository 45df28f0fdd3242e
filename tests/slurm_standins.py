"""Stand-ins for what a cluster night runs, so the shipped Slurm scripts run
here in seconds: a ``make`` on PATH that installs nothing and, with
``STANDIN_SHARDS=1`` in its environment, runs a stand-in shard in place of a
measurement; every other target is the real make's.

The stand-in shard is the real ``python -m benchmarks.nightly shard`` (its
place from the environment, its record ``shard-I.json``), with the runner
replaced: shard I of N writes the compare fixtures' new run's models that
``--total-partitions N --partition-id I`` would give it (round-robin in name
order, as ``test_nightly.split_into_shards`` splits them). A shard whose index
is in ``STANDIN_KILL`` (comma-separated) is killed mid-run: its whole process
group (the batch script, make and the shard) gets SIGKILL, as Slurm kills a task
at its time limit or with its node, after the shard wrote its record and
before its CSV.

Each call is logged to ``STANDIN_LOG`` (one JSON line: the targets, the
NIGHTLY_* and SLURM_* variables).
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
FIXTURE = HERE / "fixtures" / "compare" / "new.csv"


def install_make(bin_dir: Path, log: Path) -> None:
    """Write the stand-in ``make`` into ``bin_dir`` (the real one found now)."""
    real = shutil.which("make")
    assert real, "make is not installed"
    path = bin_dir / "make"
    path.write_text(f"#!{sys.executable}\nimport sys\nsys.path.insert(0, {str(HERE)!r})\n"
                    f"import slurm_standins\nsys.exit(slurm_standins.make({real!r}, {str(log)!r}, sys.argv[1:]))\n")
    path.chmod(0o755)


def _targets(argv: list[str]) -> list[str]:
    targets, skip = [], False
    for word in argv:
        if skip:
            skip = False
        elif word in ("-o", "-f", "-C"):
            skip = True
        elif not word.startswith("-") and "=" not in word:
            targets.append(word)
    return targets


def make(real: str, log: str, argv: list[str]) -> int:
    targets = _targets(argv)
    seen = {k: v for k, v in os.environ.items() if k.startswith(("NIGHTLY_", "SLURM_"))}
    with open(log, "a") as out:
        out.write(json.dumps({"targets": targets, "env": seen}) + "\n")
    if targets == ["install"]:
        return 0  # the venv is ready: nothing is installed here
    if targets == ["nightly-shard"] and os.environ.get("STANDIN_SHARDS") == "1":
        return shard()
    os.execv(real, [real, *argv])


def shard() -> int:
    """The real shard step, its runner replaced by the fixtures' rows."""
    sys.path.insert(0, str(ROOT))
    from benchmarks.nightly import cli
    from benchmarks.nightly import shard as step
    from benchmarks.results import store
    from test_nightly import split_into_shards

    def models_of(shards: int, index: int) -> list[str]:
        names = sorted(set(store.read_rows(FIXTURE)["name"]))
        return [n for i, n in enumerate(names) if i % shards == index]

    def measure(args, csv_path: Path, partition=None) -> int:
        index, shards = partition
        if str(index) in os.environ.get("STANDIN_KILL", "").split(","):
            os.killpg(os.getpgrp(), signal.SIGKILL)
        with tempfile.TemporaryDirectory() as tmp:
            made = split_into_shards(FIXTURE, Path(tmp), shards)[index]
            shutil.copy(made, csv_path)
            shutil.copy(store.samples_path(made), store.samples_path(csv_path))
        return 0

    step.measure = measure
    step.planned_models = lambda runner, shards, index: models_of(shards, index)
    env = os.environ
    argv = ["shard", "--root", env.get("NIGHTLY_ROOT", "results/nightly"), "--date", env.get("NIGHTLY_DATE", "")]
    argv += ["--shards", env["NIGHTLY_SHARDS"]] if env.get("NIGHTLY_SHARDS") else []
    argv += ["--shard", env["NIGHTLY_SHARD"]] if env.get("NIGHTLY_SHARD") else []
    return cli.main(argv)
