"""One shard of the night: the runner settings every shard shares, where a
shard finds its place, and its run.

A shard job on another job runner finds its place in the environment when
``--shard``/``--shards`` are not given: ``NIGHTLY_SHARD``/``NIGHTLY_SHARDS``,
else a Slurm job array's ``SLURM_ARRAY_TASK_ID``/``SLURM_ARRAY_TASK_COUNT``
(counted from ``SLURM_ARRAY_TASK_MIN`` in steps of ``SLURM_ARRAY_TASK_STEP``),
else a Kubernetes Indexed Job's ``JOB_COMPLETION_INDEX`` with
``JOB_COMPLETIONS`` (the job's ``completions``, which Kubernetes does not
pass on: set it in the pod's environment).
"""
from __future__ import annotations

import argparse
import os
from pathlib import Path

from benchmarks import cli
from benchmarks.nightly import plan as night_plan
from benchmarks.nightly.night import night_dir, shard_csv, shard_meta_path, write_json
from benchmarks.nightly.plan import repeat_arg, shards_arg
from benchmarks.usage import UsageError

NIGHTLY_BACKENDS = ("torchxla_trivial", "torchxla_trace_once", "openxla_eval", "inductor")
# What every night's runner is given (the rest: backends, selection, output, runner_args).
NIGHT_FLAGS = ("--performance", "--use-xla-baseline", "--randomize-input")
# Runner flags each step sets itself.
OWNED_FLAGS = {"--output", "--output-directory", "--resume", "--overwrite", "--backend",
               "--total-partitions", "--partition-id"}
# Where a shard finds its place when not told: (index, count) variables of
# each job runner, in order of preference.
SHARD_VARIABLES = (("NIGHTLY_SHARD", "NIGHTLY_SHARDS"),
                   ("SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT"),
                   ("JOB_COMPLETION_INDEX", "JOB_COMPLETIONS"))


def add_run_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--backends", default=",".join(NIGHTLY_BACKENDS),
                   help=f"comma-separated (default {','.join(NIGHTLY_BACKENDS)})")
    p.add_argument("--filter", action="append", default=[], metavar="REGEX",
                   help="only models matching REGEX (runner.py -k; repeatable)")
    p.add_argument("runner_args", nargs="*", help="extra runner.py flags, after --")


def add_arguments(p: argparse.ArgumentParser, step: str) -> None:
    add_run_flags(p)
    p.add_argument("--shards", type=shards_arg, help="number of shards (default: from the environment)")
    p.add_argument("--shard", type=int, help="this shard, 0-based (default: from the environment)")


# --------------------------------------------------------------------------
# The night's runner settings


def check_runner_args(args: argparse.Namespace) -> None:
    clash = sorted(OWNED_FLAGS.intersection(a.split("=")[0] for a in args.runner_args))
    if clash:
        raise UsageError(f"the nightly job sets {', '.join(clash)} itself")
    given = args.runner_args
    repeats = [value for flag, value in zip(given, [*given[1:], ""]) if flag == "--repeat"]
    repeats += [a.split("=", 1)[1] for a in given if a.startswith("--repeat=")]
    for value in repeats:
        try:
            repeat_arg(value or "?")
        except argparse.ArgumentTypeError as err:
            raise UsageError(f"--repeat {err}") from None


def runner_record(args: argparse.Namespace) -> dict:
    """The night's runner settings as night.json keeps them: a confirmation
    re-run repeats ``flags`` for one model (``gate.remeasure``)."""
    return {"flags": [*NIGHT_FLAGS, *args.runner_args], "backends": args.backends, "filter": args.filter}


def measure(args: argparse.Namespace, csv_path: Path, partition: tuple[int, int] | None = None) -> int:
    """The night's runner on its backends and selection into ``csv_path``;
    a rerun (a retried CI job) completes what is there."""
    runner = runner_record(args)
    return cli.run_benchmarks(runner["flags"], [runner["backends"]], filters=runner["filter"],
                              output=csv_path, partition=partition, resume=csv_path.exists())


def planned_models(runner: dict, shards: int, shard: int) -> list[str] | None:
    """The models shard ``shard`` of ``shards`` runs with these settings
    (the runner's own selection); None when they cannot be worked out here."""
    try:
        return cli.planned_models(runner["flags"], [runner["backends"]], filters=runner["filter"],
                                  partition=(shard, shards))
    except (UsageError, ImportError, OSError):
        return None


def shard_record(args: argparse.Namespace, shards: int, shard: int) -> dict:
    """What a shard is to run, before it runs (``finished: false`` until it
    has): its runner settings, the night's settings as its environment gave
    them, with the digest of its installed distributions, and their versions."""
    runner = runner_record(args)
    versions = night_plan.installed_versions()
    settings = {**night_plan.settings_from_env(os.environ),
                "dependencies": night_plan.dependencies_digest(versions)}
    return {"shard": shard, "shards": shards, "runner": runner, "settings": settings,
            "dependencies": versions, "models": planned_models(runner, shards, shard) or [], "finished": False}


def plan_file(root: Path, date: str) -> Path:
    """The night's plan: ``NIGHTLY_PLAN``, else ``plan.txt`` in its folder."""
    given = os.environ.get("NIGHTLY_PLAN", "").strip()
    return Path(given) if given else night_dir(root, date) / "plan.txt"


def check_plan(root: Path, date: str, record: dict) -> None:
    """Refuse a shard that is not the plan's (its count, its settings): one
    line, exit status 2, before it runs.  A night without a plan file (a
    shard run by hand) is not checked."""
    path = plan_file(root, date)
    if not path.is_file():
        return
    planned = night_plan.read_plan(path)
    who = f"shard {record['shard']}"
    if planned["date"] != date or planned["count"] != record["shards"]:
        raise UsageError(f"{who} does not run the night's plan ({path}): night {date} of {record['shards']} "
                         f"shard(s) (plan: night {planned['date']} of {planned['count']})")
    night_plan.check(path, record["settings"], who)


# --------------------------------------------------------------------------
# Its place


def shard_from_env(env: dict[str, str]) -> tuple[int | None, int | None]:
    """(index, count) from the first job runner's variables that give an
    index (see the module's docstring); (None, None) when none does."""
    for index_var, count_var in SHARD_VARIABLES:
        index = env.get(index_var, "").strip()
        if not index:
            continue
        try:
            position = int(index)
            if index_var == "SLURM_ARRAY_TASK_ID":
                low, step = int(env.get("SLURM_ARRAY_TASK_MIN") or 0), int(env.get("SLURM_ARRAY_TASK_STEP") or 1)
                if (position - low) % step:
                    raise ValueError
                position = (position - low) // step
        except ValueError:
            raise UsageError(f"{index_var}={index!r} does not name a shard") from None
        return position, _count(count_var, env)
    for _, count_var in SHARD_VARIABLES:  # a count without an index (the index given as a flag)
        if env.get(count_var, "").strip():
            return None, _count(count_var, env)
    return None, None


def _count(variable: str, env: dict[str, str]) -> int | None:
    text = env.get(variable, "").strip()
    try:
        return shards_arg(text) if text else None
    except argparse.ArgumentTypeError as err:
        raise UsageError(f"{variable}: {err}") from None


def place(args: argparse.Namespace) -> tuple[int, int]:
    index, count = shard_from_env(dict(os.environ))
    shard_, shards = (args.shard if args.shard is not None else index,
                      args.shards if args.shards is not None else count)
    if shards is None:
        raise UsageError("--shards is needed: give it, or set NIGHTLY_SHARDS (SLURM_ARRAY_TASK_COUNT "
                         "in a Slurm array, JOB_COMPLETIONS in a Kubernetes Indexed Job)")
    if shard_ is None:
        raise UsageError("--shard is needed: give it, or set NIGHTLY_SHARD (a Slurm array and a "
                         "Kubernetes Indexed Job set theirs)")
    return shard_, shards


# --------------------------------------------------------------------------
# The step


def shard(args: argparse.Namespace) -> int:
    """Shard ``--shard`` of ``--shards`` into ROOT/D/shards/shard-I.csv, and
    its record shard-I.json (a job killed on the way leaves ``finished: false``)."""
    args.shard, args.shards = place(args)
    if not 0 <= args.shard < args.shards:
        raise UsageError(f"--shard must be in [0, {args.shards - 1}], got {args.shard}")
    csv_path = shard_csv(args.root, args.date, args.shard)
    check_runner_args(args)
    meta, record = shard_meta_path(csv_path.parent, args.shard), shard_record(args, args.shards, args.shard)
    check_plan(args.root, args.date, record)
    write_json(meta, record)
    code = measure(args, csv_path, (args.shard, args.shards))
    write_json(meta, {**record, "finished": code == 0, "exit_code": code})
    return code
