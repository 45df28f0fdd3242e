"""The whole night on one machine (``make nightly``): the runner on every
backend (recorded in ``night.json`` as one shard), then the gate."""
from __future__ import annotations

import argparse
import os

from benchmarks.nightly import gate as gating
from benchmarks.nightly.merge import night_record, record_ci_run, record_night
from benchmarks.nightly.night import NIGHT_FILE, RESULT, night_dir, update_json
from benchmarks.nightly.shard import add_run_flags, check_runner_args, measure, shard_record


def add_arguments(p: argparse.ArgumentParser, step: None) -> None:
    add_run_flags(p)
    gating.add_arguments(p, step)


def run_all(args: argparse.Namespace) -> int:
    folder = night_dir(args.root, args.date)
    check_runner_args(args)
    record = shard_record(args, 1, 0)
    # Partial until the runner has finished: a night killed on the way is never a baseline.
    update_json(folder / NIGHT_FILE, night_record(args.date, {0: record}, [0], set(), 1))
    code = measure(args, folder / RESULT)
    if (folder / RESULT).is_file():
        record_night(args.root, args.date, {0: {**record, "finished": code == 0, "exit_code": code}}, [0], 1)
        record_ci_run(folder, os.environ)
    return code if code != 0 else gating.gate(args)
