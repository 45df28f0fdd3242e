"""The shards of a night into one run, and ``night.json``: what the night is.

Each shard job leaves ``shards/shard-I.json`` beside its CSV: the shard
count, its planned models, its runner settings and whether its runner
finished.  The merge joins the shards' CSVs into the night's
``performance.csv``, reads those records (``night_record``) and writes
``night.json``: the shards the plan expected, those merged, those lost or
unfinished, the models that were planned but have no row, and the runner
settings (what a confirmation re-run repeats).  A shard is *lost* when it
left no CSV, *unfinished* when its record says its runner did not finish;
either makes the night partial, and a partial night is never a baseline.
The record also says how the night started (``kind``, ``night.night_kind``).
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Mapping, Sequence

from benchmarks.nightly.night import (NIGHT_FILE, RESULT, SCHEDULED, SHARD_CSV, SHARD_META, SHARDS_DIR,
                                      night_dir, night_kind, read_json, update_json)
from benchmarks.nightly.plan import differences, read_plan, shards_arg
from benchmarks.nightly.shard import plan_file, planned_models
from benchmarks.results import merge as merge_rows
from benchmarks.results import store
from benchmarks.usage import UsageError


def add_arguments(p: argparse.ArgumentParser, step: str) -> None:
    p.add_argument("--shards", type=shards_arg, help="the shards the plan made (default: what the "
                                                     "shards' records say)")


def merge(args: argparse.Namespace) -> int:
    """Join the night's shards into its performance.csv (replacing an earlier merge)."""
    folder = night_dir(args.root, args.date)
    # Only the shards' result CSVs: other CSVs beside them (graph breaks) are theirs to merge.
    shards = sorted(p for p in folder.glob(f"{SHARDS_DIR}/shard-*.csv") if SHARD_CSV.match(p.name))
    if not shards:
        raise UsageError(f"no shards under {folder / SHARDS_DIR}")
    records = shard_records(folder / SHARDS_DIR)
    check_settings(records, plan_file(args.root, args.date))
    out = folder / RESULT
    print(f"nightly: merging {len(shards)} shard(s) into {out}", file=sys.stderr)
    code = merge_rows.main([str(out), *map(str, shards), "--overwrite"])
    if code == 0:
        record_ci_run(folder, os.environ)
        merged = [int(SHARD_CSV.match(p.name).group(1)) for p in shards]
        record_night(args.root, args.date, records, merged, args.shards)
    return code


def check_settings(records: Mapping[int, Mapping], plan: Path) -> None:
    """Refuse (one line, exit status 2) a night whose shards ran other
    settings than its plan froze, or than each other (the dependencies'
    digest included): such a night is no one night, and must not merge as
    complete.  Records from before settings were recorded are not compared."""
    planned = read_plan(plan)["settings"] if plan.is_file() else None
    first = None
    for index, record in sorted(records.items()):
        settings = record.get("settings")
        if not isinstance(settings, dict):
            continue
        if planned is not None:
            wrong = differences(planned, {k: v for k, v in settings.items() if k in planned})
            if wrong:
                raise UsageError(f"shard {index} did not run the night's plan ({plan}): {'; '.join(wrong)}")
        if first is None:
            first = (index, settings)
        elif settings != first[1]:
            wrong = differences(first[1], settings)
            raise UsageError(f"shard {index} ran other settings than shard {first[0]}: "
                             + "; ".join(w.replace("(plan:", f"(shard {first[0]}:") for w in wrong))


# --------------------------------------------------------------------------
# The CI run


def ci_run(env: Mapping[str, str]) -> dict[str, str]:
    """The CI run this job belongs to, from GitHub Actions' variables: its
    URL and the repository's (the dashboard links both); empty elsewhere."""
    server, repository, run = (env.get(v, "").strip() for v in
                               ("GITHUB_SERVER_URL", "GITHUB_REPOSITORY", "GITHUB_RUN_ID"))
    if not (server and repository and run):
        return {}
    repository_url = f"{server.rstrip('/')}/{repository}"
    return {"run_url": f"{repository_url}/actions/runs/{run}", "repository_url": repository_url}


def record_ci_run(folder: Path, env: Mapping[str, str]) -> None:
    """Add the CI run (``ci_run``) to the night's ``night.json``."""
    found = ci_run(env)
    if not found:
        return
    try:
        read_json(folder / NIGHT_FILE)
    except ValueError as err:
        raise UsageError(str(err)) from None
    update_json(folder / NIGHT_FILE, found)


# --------------------------------------------------------------------------
# night.json


def shard_records(shards_dir: Path) -> dict[int, dict]:
    """The records shard jobs left in ``shards_dir`` (``shard-I.json``), by shard."""
    found = {}
    for path in sorted(shards_dir.glob("shard-*.json")):
        match = SHARD_META.match(path.name)
        if match:
            found[int(match.group(1))] = read_json(path)
    return found


def _listed(names: Sequence[str], limit: int = 8) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def night_record(date: str, records: Mapping[int, Mapping], merged: Sequence[int],
                 models_with_rows: set[str], expected: int | None = None,
                 planned: Mapping[int, Sequence[str]] | None = None) -> dict:
    """``night.json`` for a night merged from the shards ``merged`` (their
    indices), given the shards' ``records`` (``shard_records``).

    ``expected`` is the plan's shard count (else what the shards' records
    say; unknown when none has one).  ``planned`` gives the models of shards
    that left no record (a lost shard), when the caller could work them out.
    """
    counts = {int(r["shards"]) for r in records.values() if isinstance(r.get("shards"), int)}
    if expected is None and len(counts) == 1:
        expected = counts.pop()
    lost = sorted(set(range(expected)) - set(merged)) if expected else []
    unfinished = sorted(i for i in merged if records.get(i, {}).get("finished") is False)
    plans = {i: list(r.get("models") or []) for i, r in records.items()}
    plans.update({i: list(models) for i, models in (planned or {}).items() if i not in plans})
    not_run = sorted({m for i in [*lost, *unfinished] for m in plans.get(i, [])} - models_with_rows)
    reasons = [f"shard {', '.join(map(str, lost))} of {expected} lost" if lost else "",
               ("the run did not finish" if expected == 1 else
                f"shard {', '.join(map(str, unfinished))} did not finish") if unfinished else ""]
    partial = "; ".join(r for r in reasons if r)
    if partial and not_run:
        partial += f" (not run: {_listed(not_run)})"
    runner = next((r["runner"] for r in records.values() if isinstance(r.get("runner"), dict)), None)
    settings = next((r["settings"] for r in records.values() if isinstance(r.get("settings"), dict)), None)
    versions = next((r["dependencies"] for r in records.values() if isinstance(r.get("dependencies"), dict)), None)
    return {"settings": settings, "dependencies": versions, "date": date, "shards_expected": expected, "shards_merged": sorted(merged),
            "shards_lost": lost, "shards_unfinished": unfinished, "models_not_run": not_run,
            "partial": partial, "runner": runner}


def record_night(root: Path, date: str, records: dict[int, dict], merged: list[int],
                 expected: int | None) -> None:
    """Write the night's night.json; say loudly when the night is partial."""
    folder = night_dir(root, date)
    rows = store.read_rows(folder / RESULT)
    count = expected or next((r["shards"] for r in records.values() if isinstance(r.get("shards"), int)), None)
    runner = next((r["runner"] for r in records.values() if isinstance(r.get("runner"), dict)), None)
    lost = [i for i in range(count or 0) if i not in merged]
    planned = {i: planned_models(runner, count, i) or [] for i in lost} if runner and count else {}
    record = night_record(date, records, merged, set(rows["name"].dropna()), expected, planned)
    try:
        record["kind"] = night_kind(os.environ)
    except ValueError as err:
        raise UsageError(str(err)) from None
    update_json(folder / NIGHT_FILE, record)
    if record["kind"] != SCHEDULED:
        print(f"nightly: {date} is an ad-hoc night (not the schedule's): never a baseline, never "
              "published over a scheduled night", file=sys.stderr)
    if record["partial"]:
        print(f"nightly: PARTIAL NIGHT {date}: {record['partial']}; it will never be a baseline",
              file=sys.stderr)
