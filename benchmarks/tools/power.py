"""The gate's power: how often it cries wolf on identical nights, and how
often it catches a slowdown of a known size.

    python -m benchmarks.tools.power --nights 20 --root results/power [--resume] [--resample TRIALS] [--exclude DATES] [-- RUNNER FLAGS]

1. **Identical nights** through the real nightly (``benchmarks.tools.aa_nights``:
   the runner with the nightly's settings, then the gate against its pooled
   baseline with its confirmation re-run).  Nothing changed between them, so
   every night a gate fails is a false alarm.
2. **Synthetic slowdowns**: each judged night again, with every backend's
   samples scaled by 1 + s (``--slowdowns``, default +3/+5/+10/+20%), judged by
   the gate (``gate.judge``) against the same baseline.  A row marked slower
   is a slowdown caught.  The re-run of a slower row measures the slowed code
   a second time; the next identical night, slowed alike, stands in for it
   (``after re-run``: caught in both).

Gate modes, each counted over the same nights:

* ``night-to-night``: each night against the one before (per repeat);
* ``pooled, per repeat``: against the last K nights pooled, each repeat's ratio a unit;
* ``pooled, per process``: the same, each worker process's median ratio a
  unit where the nights recorded their processes (the gate's default);
  a baseline night far from the others is left out of a row's pool
  (``compare.LEAVE_OUT_THRESHOLDS``);
* ``pooled, per process, every night``: the same with every baseline night
  kept (``--pool-every-night``);
* ``gate, before re-run``: the gate's comparison of the speedup before
  its re-run (``gate.judge`` with nothing re-run), for the identical nights
  and the slowdowns alike;
* ``gate, before re-run, any policy``: the identical nights' status before
  any re-run, every policy counted (first calls and memory too: how often
  a quiet night costs a re-run), judged again from the night's files by
  today's rules (the status a night stored, ``exit_code_before``, keeps
  the rules of its day);
* ``gate, after re-run``: for the identical nights, the gate's verdict
  settled by the night's own re-run where the night kept it
  (``confirm/``); else a pass where today's rules pass the night before
  any re-run, and otherwise the nightly's stored verdict (``compare.json``,
  under the rule of its day);
  for the slowdowns, the gate's judgement with a stand-in re-run, settled
  by the gate itself (``gate.judge``: the re-run slower alone; a
  two-night row's re-run judged against the nights before last night);
* ``gate, after re-run, with the night``: the same with
  ``--confirm-with-night`` (a re-run not slower alone confirms when the
  night and the re-run together are slower and the re-run's change is
  past its units' floor);
* ``two nights``: tonight and last night pooled, against the K nights before
  last night: a slowdown that persisted two nights judged on both together;
* ``gate, by the second night``: for the slowdowns, a row the gate settled
  as slower on the night the slowdown landed (after its re-run) or on the
  night after it, that night judged by the gate as it would be (its window
  holding the first slowed night; ``gate.two_nights`` pooling the two) and
  settled by its own stand-in re-run (the night after that, slowed alike;
  the night after the first is also the first's stand-in re-run, so the two
  chances are not independent).  The gate's verdicts on identical
  nights (``gate, before re-run`` / ``after re-run``) already include the
  two-night rule.

The first call (``configs/gate.yaml``'s ``first_call`` policy), judged again
from each night's files, on its own table: false alarms on the identical
nights, and rows caught with every backend's cold first calls scaled by
``--first-call-slowdowns`` (default +25%, its threshold, and +50%):

* ``first call, per process``: its pairs one per cold process (the gate's);
* ``first call, one pair a night``: the medians the row reports, one pair a
  night, judged by the range of the baseline nights (the rule before).

``--resample TRIALS`` also replays the gate's rule (``compare.judge_units``)
on TRIALS nights made of the stored nights' processes (``resampled``, the
processes taken as alike, so without the nights' spread test): many
more trials than nights, at any number of processes (``--resample-processes``)
and of repeats up to those measured (``--resample-repeats``), so the
precision a rule needs can be read off nights already run.

``--exclude DATES`` judges the nights but those: nights measured while the
machine was not quiet, which a reader is told about where the result is
quoted.  They stay in the pooled baselines of the nights after them (the
gate had them there), out of the two-night pairs, the re-run stand-ins and
the resampled processes.  Each night's load is printed: the most cores
other processes kept busy while one of its rows was timed (``other_cores``,
rows of schema version 10 on); ``--exclude-loaded CORES`` excludes the
nights above CORES as ``--exclude`` does.  So is the CPU each night ran on:
the gate pools only the nights on a row's own CPU, so nights on another
machine are judged as a set of their own.

Printed: the false alarms of each mode, the slowdowns caught per mode and
size, and per model and size for the gate, and the wall time.  Exit status:
0 when the nights ran (whatever the counts), 1 when a night's runner failed,
2 bad input.
"""
from __future__ import annotations

import argparse
import functools
import itertools
import json
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Collection, Sequence

import numpy as np
from tabulate import tabulate

from benchmarks.cli import flags
from benchmarks.nightly import gate, history
from benchmarks.nightly.night import CONFIRM_DIR, NIGHT_FILE, RESULT
from benchmarks.results import compare, pairing, policies, store
from benchmarks.tools import aa_nights
from benchmarks.usage import Parser, UsageError, guarded

PROG = "python -m benchmarks.tools.power"
DEFAULT_SLOWDOWNS = (0.03, 0.05, 0.10, 0.20)
NIGHT_TO_NIGHT = "night-to-night"
PER_REPEAT = "pooled, per repeat"
PER_PROCESS = "pooled, per process"
EVERY_NIGHT = "pooled, per process, every night"
BEFORE = "gate, before re-run"
BEFORE_ANY = "gate, before re-run, any policy"
AFTER = "gate, after re-run"
AFTER_WITH_NIGHT = "gate, after re-run, with the night"
TWO_NIGHTS = "two nights"
SECOND_NIGHT = "gate, by the second night"
MODES = (NIGHT_TO_NIGHT, PER_REPEAT, PER_PROCESS, EVERY_NIGHT, BEFORE, BEFORE_ANY, AFTER, AFTER_WITH_NIGHT, TWO_NIGHTS,
         SECOND_NIGHT)
DEFAULT_FIRST_CALL_SLOWDOWNS = (0.25, 0.50)
FIRST_CALL = "first call, per process"
FIRST_CALL_ONE = "first call, one pair a night"
FIRST_CALL_MODES = {FIRST_CALL: True, FIRST_CALL_ONE: False}  # mode: its pairs by process


def _parser() -> argparse.ArgumentParser:
    p = Parser(prog=PROG, description=__doc__.splitlines()[0])
    p.add_argument("--nights", type=int, default=20, help="identical nights (default 20, at least 3)")
    p.add_argument("--root", type=Path, default=Path("results/power"), help="folder of the nights "
                   "(default results/power)")
    p.add_argument("--backends", default=aa_nights.DEFAULT_BACKENDS,
                   help=f"comma-separated (default {aa_nights.DEFAULT_BACKENDS})")
    p.add_argument("--resume", action="store_true", help="keep the nights already under ROOT, add the rest")
    p.add_argument("--judge-only", action="store_true",
                   help="run no night: judge the nights already under ROOT")
    p.add_argument("--slowdowns", default=",".join(f"{s:g}" for s in DEFAULT_SLOWDOWNS),
                   help="slowdowns to inject, as fractions (default 0.03,0.05,0.1,0.2)")
    p.add_argument("--first-call-slowdowns", default=",".join(f"{s:g}" for s in DEFAULT_FIRST_CALL_SLOWDOWNS),
                   help="slowdowns of the cold first calls to inject (default 0.25,0.5)")
    p.add_argument("--resample", type=int, default=0, metavar="TRIALS",
                   help="also replay the gate's rule on TRIALS nights resampled from the nights' processes "
                        "(default 0: none)")
    p.add_argument("--resample-processes", type=int, default=flags.DEFAULT_PROCESSES, metavar="P",
                   help=f"processes of each resampled night (default {flags.DEFAULT_PROCESSES}, the nightly's)")
    p.add_argument("--resample-repeats", type=int, default=flags.DEFAULT_PROCESS_REPEAT, metavar="R",
                   help="repeats of each resampled process: the median of its first R "
                        f"(default {flags.DEFAULT_PROCESS_REPEAT}, the nightly's)")
    p.add_argument("--exclude", default="", metavar="DATES",
                   help="comma-separated nights not to judge (say why where the result is quoted: a machine "
                        "that was not quiet); they stay in the baselines of the nights after them, as the gate "
                        "had them, and out of the resampled processes")
    p.add_argument("--exclude-loaded", type=float, default=None, metavar="CORES",
                   help="also exclude the nights where other processes kept more than CORES cores busy while a "
                        "row was timed (their rows' other_cores)")
    p.add_argument("--confirm-two-sided", dest="confirm_one_sided", action="store_false",
                   help="judge re-runs by the gate's --confirm-two-sided rule (default: its own, one-sided)")
    p.add_argument("--real-nights", action=argparse.BooleanOptionalAction, default=True,
                   help="judge the nights themselves (default); --no-real-nights: only the resampled ones")
    p.add_argument("runner_args", nargs="*",
                   help="runner.py flags, after -- (default: the nightly's own, no --repeat)")
    return p


def parse_slowdowns(text: str, flag: str = "--slowdowns") -> tuple[float, ...]:
    try:
        values = tuple(float(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise UsageError(f"{flag} takes fractions separated by commas (0.05 = 5%), got {text!r}") from None
    if not values or not all(0 < v < 10 for v in values):
        raise UsageError(f"{flag} takes positive fractions (0.05 = 5%), got {text!r}")
    return values


# --------------------------------------------------------------------------
# A night slowed on paper


def _scaled(values, factor: float):
    return [v * factor if v is not None else None for v in values or ()]


def _slowed_record(record: dict, factor: float, first_call_factor: float) -> dict:
    if record.get("role") != "backend":
        return record
    slowed = {**record, "samples_s": _scaled(record.get("samples_s"), factor)}
    if record.get("first_call_s") is not None:
        slowed["first_call_s"] = record["first_call_s"] * first_call_factor
    if record.get("cold_first_calls_s"):
        slowed["cold_first_calls_s"] = _scaled(record["cold_first_calls_s"], first_call_factor)
    return slowed


def slowed_night(src: Path, dst: Path, factor: float, first_call_factor: float = 1.0) -> Path:
    """A copy of the night in ``src`` at ``dst`` with every backend's samples
    (and the CSV's latency and speedup) scaled by ``factor``, and its first
    calls (each cold process's, and the CSV's ``compilation_latency``) by
    ``first_call_factor``; the baseline's as they were.  Returns ``dst``."""
    dst.mkdir(parents=True, exist_ok=True)
    if (src / NIGHT_FILE).is_file():
        shutil.copyfile(src / NIGHT_FILE, dst / NIGHT_FILE)
    rows = store.read_rows(src / RESULT)
    for column, scale in (("abs_latency", factor), ("speedup", 1 / factor),
                          ("compilation_latency", first_call_factor)):
        if column in rows:
            rows[column] = rows[column] * scale
    rows.to_csv(dst / RESULT, index=False)
    records = store.read_samples(store.samples_path(src / RESULT))
    scaled = [_slowed_record(r, factor, first_call_factor) for r in records]
    out = store.samples_path(dst / RESULT)
    out.write_text("".join(json.dumps(r) + "\n" for r in scaled), encoding="utf-8")
    return dst


# --------------------------------------------------------------------------
# Judging


@dataclass
class Tally:
    """Per gate mode: the nights judged and the false alarms; per (mode,
    slowdown) and (model, slowdown): rows caught of rows judged."""

    judged: dict[str, int] = field(default_factory=dict)
    alarms: dict[str, int] = field(default_factory=dict)
    caught: dict[tuple, list[int]] = field(default_factory=dict)

    def alarm(self, mode: str, failed: bool) -> None:
        self.judged[mode] = self.judged.get(mode, 0) + 1
        self.alarms[mode] = self.alarms.get(mode, 0) + int(failed)

    def count(self, key: tuple, hit: bool) -> None:
        found = self.caught.setdefault(key, [0, 0])
        found[0] += int(hit)
        found[1] += 1


def _slower(comparison) -> dict:
    return {row.key: row.mark == compare.SLOWER for row in comparison.rows
            if row.mark in compare.MEASURED_MARKS}


def judged_nights(root: Path, dates: Sequence[str], window: int, exclude: Collection[str] = ()):
    """(date, baseline) of each night with a baseline, oldest first, but
    those in ``exclude``."""
    found = []
    for date in dates:
        if date in exclude:
            continue
        baseline = history.choose_baseline(root, date, window)
        if baseline.runs:
            found.append((date, baseline))
    return found


def false_alarms(root: Path, dates: Sequence[str], window: int, policy, tally: Tally,
                 exclude: Collection[str] = ()) -> None:
    """Each mode's verdict on each identical night but those in ``exclude``."""
    kwargs = {k: v for k, v in policy.kwargs().items() if k not in ("units", "leave_out")}
    nights = judged_nights(root, dates, window, exclude)
    for date, baseline in nights:
        night = root / date / RESULT
        previous = history.choose_baseline(root, date, 1)
        tally.alarm(NIGHT_TO_NIGHT, compare.exit_code(compare.compare(previous.runs, night, **kwargs,
                                                                      units=compare.UNIT_REPEAT)))
        for mode, unit, leave_out in ((PER_REPEAT, compare.UNIT_REPEAT, True),
                                      (PER_PROCESS, compare.UNIT_PROCESS, True),
                                      (EVERY_NIGHT, compare.UNIT_PROCESS, False)):
            tally.alarm(mode, compare.exit_code(compare.compare(baseline.runs, night, **kwargs, units=unit,
                                                                leave_out=leave_out)))
        verdict = _stored_verdict(root / date)
        if verdict is not None:
            # The speedup's test before its re-run, judged again from the
            # night's files (what the slowdowns below are judged by), and the
            # night's status before any re-run, every policy (first calls,
            # memory) counted: both by today's rules, not the stored ones.
            comparison, found, _ = gate.judge_all(root, date, baseline, policy, remeasure=None)
            before = gate.night_verdict(comparison, found)[1]
            tally.alarm(BEFORE, compare.exit_code(comparison))
            tally.alarm(BEFORE_ANY, before)
            rerun = root / date / CONFIRM_DIR / RESULT
            for mode, rule in ((AFTER, policy), (AFTER_WITH_NIGHT, replace(policy, confirm_with_night=True))):
                # Without its re-run kept: a night that passes before any
                # re-run passes after it; else the stored verdict says what
                # its re-run found (under the rules of its day).
                tally.alarm(mode, _settled_code(root, date, baseline, rule, rerun) if rerun.is_file()
                            else min(before, verdict["exit_code"]))
        two = _two_nights_baseline(root, dates, date, window, exclude)
        if two is not None:
            tally.alarm(TWO_NIGHTS, compare.exit_code(compare.compare(two[0], two[1], **policy.kwargs())))


def _settled_code(root: Path, date: str, baseline, policy, rerun: Path) -> int:
    """The gate's exit status on night ``date`` (every policy), its slower
    rows settled by the re-run it kept (``rerun``) under ``policy``'s rule."""
    comparison, found, _ = gate.judge_all(root, date, baseline, policy, _stand_in(rerun))
    return gate.night_verdict(comparison, found)[1]


def _stored_verdict(folder: Path) -> dict | None:
    try:
        verdict = json.loads((folder / "compare.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return verdict if verdict.get("baseline") is not None else None


def _two_nights_baseline(root: Path, dates: Sequence[str], date: str, window: int,
                         exclude: Collection[str] = ()):
    """(baseline runs, [last night, tonight]) for judging two nights
    together, or None when there is no night before last with a baseline
    (or last night is in ``exclude``)."""
    index = list(dates).index(date)
    if index < 1 or dates[index - 1] in exclude:
        return None
    last = dates[index - 1]
    baseline = history.choose_baseline(root, last, window)
    if not baseline.runs:
        return None
    return list(baseline.runs), [root / last / RESULT, root / date / RESULT]


def detections(root: Path, dates: Sequence[str], window: int, policy, slowdowns: Sequence[float],
               tally: Tally, scratch: Path, exclude: Collection[str] = ()) -> None:
    """Each judged night (but those in ``exclude``) slowed by each of
    ``slowdowns``, judged in each mode; the re-run's stand-in is the next
    night not excluded."""
    kwargs = {k: v for k, v in policy.kwargs().items() if k not in ("units", "leave_out")}
    nights = judged_nights(root, dates, window, exclude)
    for slowdown in slowdowns:
        factor = 1 + slowdown
        slowed_root = scratch / f"{slowdown:g}"
        for date in dates:
            if (root / date / RESULT).is_file():
                slowed_night(root / date, slowed_root / date, factor)
        for index, (date, baseline) in enumerate(nights):
            night = slowed_root / date / RESULT
            judged = gate.judge(slowed_root, date, baseline, policy, remeasure=None)
            caught = _slower(judged)
            later = [d for d in dates if d > date and d not in exclude and (slowed_root / d / RESULT).is_file()]
            previous = history.choose_baseline(root, date, 1)
            by_mode = {
                NIGHT_TO_NIGHT: _slower(compare.compare(previous.runs, night, **kwargs, units=compare.UNIT_REPEAT)),
                PER_REPEAT: _slower(compare.compare(baseline.runs, night, **kwargs, units=compare.UNIT_REPEAT)),
                PER_PROCESS: _slower(compare.compare(baseline.runs, night, **kwargs, units=compare.UNIT_PROCESS)),
                EVERY_NIGHT: _slower(compare.compare(baseline.runs, night, **kwargs, units=compare.UNIT_PROCESS,
                                                     leave_out=False)),
                BEFORE: caught,
            }
            if later:
                stand_in = slowed_root / later[0] / RESULT
                by_mode[AFTER] = _slower(gate.judge(slowed_root, date, baseline, policy, _stand_in(stand_in)))
                by_mode[AFTER_WITH_NIGHT] = _slower(gate.judge(slowed_root, date, baseline,
                                                               replace(policy, confirm_with_night=True),
                                                               _stand_in(stand_in)))
            two = _two_nights_baseline(root, dates, date, window, exclude)
            if two is not None:
                slowed_two = [slowed_root / Path(p).parent.name / RESULT for p in two[1]]
                by_mode[TWO_NIGHTS] = _slower(compare.compare(two[0], slowed_two, **policy.kwargs()))
            if len(later) >= 2 and dates.index(later[0]) == dates.index(date) + 1:
                second = _second_night(root, dates, later[0], later[1], date, slowed_root, window, policy,
                                       scratch / "second" / f"{slowdown:g}" / date)
                first = by_mode[AFTER]
                by_mode[SECOND_NIGHT] = {key: hit or second.get(key, False) for key, hit in first.items()}
            for mode, rows in by_mode.items():
                for key, hit in rows.items():
                    tally.count((mode, slowdown), hit)
            for key, hit in caught.items():
                tally.count((key.name, key.backend, slowdown), hit)


def _second_night(root: Path, dates: Sequence[str], tonight: str, stand_in: str, landed: str,
                  slowed_root: Path, window: int, policy, folder: Path) -> dict:
    """The gate's settled verdict, per row, on night ``tonight`` when the
    slowdown landed on night ``landed`` (before it): a history in
    ``folder`` of the nights of ``root``, those two slowed
    (``slowed_root``), judged as the gate would (its window, the two-night
    rule), and settled by night ``stand_in`` slowed as its re-run."""
    for date in dates:
        source = slowed_root / date if date in (landed, tonight) else root / date
        if source.is_dir():
            (folder / date).parent.mkdir(parents=True, exist_ok=True)
            (folder / date).symlink_to(source.resolve(), target_is_directory=True)
    baseline = history.choose_baseline(folder, tonight, window)
    return _slower(gate.judge(folder, tonight, baseline, policy, _stand_in(slowed_root / stand_in / RESULT)))


def _stand_in(night_csv: Path) -> gate.Remeasure:
    """The gate's re-run, played by the night of ``night_csv``: its results
    copied where the gate reads its re-run's, so the gate settles the
    slower rows by its own rule (``gate.rerun_comparisons``)."""
    def remeasure(night, keys, out: Path) -> str:
        if out.resolve() != night_csv.resolve():  # a night's own re-run is already there
            out.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(night_csv, out)
            if store.samples_path(night_csv).is_file():
                shutil.copyfile(store.samples_path(night_csv), store.samples_path(out))
        return ""
    return remeasure


# --------------------------------------------------------------------------
# Which nights were quiet


def night_loads(root: Path, dates: Sequence[str]) -> dict[str, float | None]:
    """Per night: the most cores other processes kept busy while one of its
    rows was timed (``other_cores``); None where its rows did not record it."""
    found = {}
    for date in dates:
        path = root / date / RESULT
        rows = store.read_rows(path) if path.is_file() else None
        loads = rows["other_cores"].dropna() if rows is not None and "other_cores" in rows else ()
        found[date] = float(max(loads)) if len(loads) else None
    return found


def loads_line(loads: dict[str, float | None]) -> str:
    """``load (...): 2000-01-08 0.04, ...`` for the nights that recorded it."""
    known = [f"{date} {load:.2f}" for date, load in loads.items() if load is not None]
    return ("load (the most cores other processes kept busy while a row was timed): " + ", ".join(known) + "\n"
            if known else "")


def night_cpus(root: Path, dates: Sequence[str]) -> dict[str, str]:
    """Per night: the CPUs its rows ran on (``pairing.cpu_label``; "" where
    they did not record it)."""
    found = {}
    for date in dates:
        path = root / date / RESULT
        rows = store.read_rows(path).to_dict("records") if path.is_file() else []
        found[date] = "; ".join(sorted({pairing.cpu_label(row) for row in rows} - {""}))
    return found


def cpus_line(cpus: dict[str, str]) -> str:
    """``CPUs: A: 2000-01-01 .. 2000-01-14; B: 2000-01-15 ..`` -- which nights
    ran on which machine (the gate pools only a row's own CPU's nights)."""
    shown = []
    for cpu, group in itertools.groupby(cpus, key=cpus.get):
        dates = list(group)
        shown.append(f"{cpu or 'not recorded'}: {dates[0]}" + (f" .. {dates[-1]}" if len(dates) > 1 else ""))
    return "CPUs: " + "; ".join(shown) + "\n" if shown else ""


# --------------------------------------------------------------------------
# The first call


def first_call_policy() -> "policies.Policy":
    """The gate's first-call policy (``configs/gate.yaml``)."""
    return next(p for p in policies.load_policies() if p.name == "first_call")


def _first_call_slower(policy, baseline_runs, night: Path, by_process: bool) -> dict:
    load = functools.partial(policies.load_first_calls, by_process=by_process)
    return _slower(policies.judge_metric(policy, list(baseline_runs), [night], load=load))


def first_calls(root: Path, dates: Sequence[str], window: int, slowdowns: Sequence[float], tally: Tally,
                scratch: Path, exclude: Collection[str] = ()) -> None:
    """The first-call policy on each judged night (``FIRST_CALL_MODES``):
    a false alarm when a row is slower; then with every backend's first
    calls scaled by each of ``slowdowns``, the rows caught."""
    policy = first_call_policy()
    nights = judged_nights(root, dates, window, exclude)
    for date, baseline in nights:
        for mode, by_process in FIRST_CALL_MODES.items():
            tally.alarm(mode, any(_first_call_slower(policy, baseline.runs, root / date / RESULT, by_process)
                                  .values()))
    for slowdown in slowdowns:
        slowed_root = scratch / f"first-call-{slowdown:g}"
        for date, baseline in nights:
            night = slowed_night(root / date, slowed_root / date, 1.0, 1 + slowdown) / RESULT
            for mode, by_process in FIRST_CALL_MODES.items():
                for hit in _first_call_slower(policy, baseline.runs, night, by_process).values():
                    tally.count((mode, slowdown), hit)


# --------------------------------------------------------------------------
# Resampled nights: more trials from the processes the nights measured

RESAMPLED = "resampled, before re-run"
RESAMPLED_AFTER = "resampled, after re-run"
RESAMPLED_AFTER_WITH_NIGHT = "resampled, after re-run, with the night"
RESAMPLED_TWO = "resampled, two nights"
RESAMPLED_MODES = (RESAMPLED, RESAMPLED_AFTER, RESAMPLED_AFTER_WITH_NIGHT, RESAMPLED_TWO)


def stored_processes(root: Path, dates: Sequence[str]) -> dict[tuple[str, str], list[list[np.ndarray]]]:
    """Per (model, backend): per night that recorded its processes, each
    process's per-repeat backend/baseline ratios (those the gate tests: a
    process timed on a loaded machine left out, ``compare.LOADED_CORES``)."""
    found: dict[tuple[str, str], list[list[np.ndarray]]] = {}
    for date in dates:
        path = root / date / RESULT
        if not path.is_file():
            continue
        for key, side in pairing.load_run(path)[0].items():
            side, _ = side.quiet(compare.LOADED_CORES)
            if not (side.passed and side.by_process):
                continue
            ratios = np.asarray(side.ratios, dtype=float)
            ends = np.cumsum(side.process_repeats)
            found.setdefault((key.name, key.backend), []).append(np.split(ratios, ends[:-1]))
    return found


def _median_units(processes: Sequence[np.ndarray], repeats: int) -> np.ndarray:
    """Each process's median over its first ``repeats`` ratios."""
    return np.array([np.median(p[:repeats]) for p in processes])


def resampled(root: Path, dates: Sequence[str], processes: int, repeats: int, trials: int,
              slowdowns: Sequence[float], policy=None, window: int | None = None, seed: int = 0,
              tally: Tally | None = None) -> Tally:
    """The gate's rule (``compare.judge_units``) replayed on ``trials``
    nights made of the stored nights' processes, at ``processes`` processes
    of ``repeats`` repeats (each process's median over its first
    ``repeats``), per (model, backend) measured by process.

    A trial shuffles the model's processes of all the stored nights and
    deals them out, none twice: tonight's ``processes``, its re-run's, a
    second night's (``two nights``: tonight's and these together), and the
    baseline's, the rest up to ``window`` nights of ``processes``.  So it
    takes the nights' processes as alike, whichever night ran them (check
    that the nights do not differ beyond their processes before trusting
    it), and draws no process twice, which would pass one process off as
    two agreeing ones.  A trial is a night: a false alarm when any of its
    rows is slower unscaled; a slowdown is caught on a row when tonight's
    units scaled by it are slower (after re-run: and the re-run's, as
    ``compare.confirm`` settles it; with the night: or tonight's and the
    re-run's together, with the re-run's change past the floor)."""
    policy = policy or gate.Policy()
    window = window or history.DEFAULT_NIGHTS
    tally = tally or Tally()
    rng = np.random.default_rng(seed)
    models = {key: [p for night in nights for p in night] for key, nights in stored_processes(root, dates).items()}
    short = sorted(f"{name}/{backend} ({len(pool)})" for (name, backend), pool in models.items()
                   if len(pool) < 4 * processes)
    if short:
        raise UsageError(f"too few stored processes to deal 4 x {processes} (tonight, its re-run, a second "
                         f"night, a baseline) from: {', '.join(short)}")
    judge = functools.partial(compare.judge_units, threshold=policy.threshold, alpha=policy.alpha)
    recheck = functools.partial(judge, alternative=policy.confirm_alternative)  # a re-run's test
    for _ in range(trials):
        alarms = dict.fromkeys(RESAMPLED_MODES, False)
        for (name, backend), pool in sorted(models.items()):
            dealt = [pool[i] for i in rng.permutation(len(pool))]
            new, rerun, second = (_median_units(dealt[i * processes:(i + 1) * processes], repeats)
                                  for i in range(3))
            old = _median_units(dealt[3 * processes:3 * processes + window * processes], repeats)
            for slowdown in (0.0, *slowdowns):
                factor = 1 + slowdown
                first = judge(old, new * factor)[0] == compare.SLOWER
                alone = with_night = False
                if first:  # a re-run only settles a row the night flagged
                    again, change, _ = recheck(old, rerun * factor)
                    together = recheck(old, np.concatenate([new, rerun]) * factor)[0]
                    alone = again == compare.SLOWER
                    with_night = alone or compare.confirmed_with_night(again, change, together, policy.threshold,
                                                                       compare.UNIT_PROCESS)
                found = {RESAMPLED: first,
                         RESAMPLED_AFTER: alone,
                         RESAMPLED_AFTER_WITH_NIGHT: with_night,
                         RESAMPLED_TWO: judge(old, np.concatenate([new, second]) * factor)[0] == compare.SLOWER}
                for mode, hit in found.items():
                    if slowdown:
                        tally.count((mode, slowdown), hit)
                    else:
                        alarms[mode] |= hit
        for mode, failed in alarms.items():
            tally.alarm(mode, failed)
    return tally


# --------------------------------------------------------------------------
# Report


def _rate(found: list[int] | None) -> str:
    if not found or not found[1]:
        return "-"
    return f"{found[0]}/{found[1]} ({found[0] / found[1]:.0%})"


def _modes_table(tally: Tally, modes: Sequence[str], slowdowns: Sequence[float], what: str) -> str:
    shown = [m for m in modes if m in tally.judged or any(k[0] == m for k in tally.caught)]
    table = [[mode, _rate([tally.alarms.get(mode, 0), tally.judged.get(mode, 0)]),
              *[_rate(tally.caught.get((mode, s))) for s in slowdowns]] for mode in shown]
    headers = [what, "false alarms (nights)", *[f"+{s:.0%} caught (rows)" for s in slowdowns]]
    return tabulate(table, headers=headers, disable_numparse=True)


def report(tally: Tally, slowdowns: Sequence[float], seconds: dict[str, float],
           first_call_slowdowns: Sequence[float] = ()) -> str:
    models = sorted({k[:2] for k in tally.caught if len(k) == 3})
    per_model = [[name, backend, *[_rate(tally.caught.get((name, backend, s))) for s in slowdowns]]
                 for name, backend in models]
    wall = ", ".join(f"{what} {s:.0f} s" for what, s in seconds.items())
    first = ""
    if any(m in tally.judged for m in FIRST_CALL_MODES):
        first = ("\n\nthe first call (its policy, before re-run; slowdowns of the cold first calls):\n"
                 + _modes_table(tally, tuple(FIRST_CALL_MODES), first_call_slowdowns, "first-call rule"))
    return (_modes_table(tally, (*MODES, *RESAMPLED_MODES), slowdowns, "gate mode") + "\n\n"
            f"caught by the gate (before its re-run), per model:\n"
            + tabulate(per_model, headers=["model", "backend", *[f"+{s:.0%}" for s in slowdowns]],
                       disable_numparse=True)
            + first + f"\n\nwall time: {wall}\n")


def measure_power(root: Path, dates: Sequence[str], slowdowns: Sequence[float], policy=None,
                  window: int | None = None, exclude: Collection[str] = (),
                  first_call_slowdowns: Sequence[float] = DEFAULT_FIRST_CALL_SLOWDOWNS) -> Tally:
    """The false alarms and detections of the nights ``dates`` under
    ``root``; those in ``exclude`` are not judged but stay in the baselines
    of the nights after them, as the gate had them."""
    policy = policy or gate.Policy()
    window = window or history.DEFAULT_NIGHTS
    tally = Tally()
    false_alarms(root, dates, window, policy, tally, exclude)
    with tempfile.TemporaryDirectory(prefix="power-") as scratch:
        detections(root, dates, window, policy, slowdowns, tally, Path(scratch), exclude)
        first_calls(root, dates, window, first_call_slowdowns, tally, Path(scratch), exclude)
    return tally


def main(argv: Sequence[str] | None = None) -> int:
    def body() -> int:
        args = _parser().parse_args(list(sys.argv[1:] if argv is None else argv))
        slowdowns = parse_slowdowns(args.slowdowns)
        first_call_slowdowns = parse_slowdowns(args.first_call_slowdowns, "--first-call-slowdowns")
        exclude = [d for d in args.exclude.split(",") if d]
        if args.resample < 0 or args.resample_processes < 1 or args.resample_repeats < 1:
            raise UsageError("--resample takes a number of nights >= 0, --resample-processes and "
                             "--resample-repeats numbers >= 1")
        if args.exclude_loaded is not None and not args.exclude_loaded >= 0:
            raise UsageError(f"--exclude-loaded takes a number of cores >= 0, got {args.exclude_loaded:g}")
        if args.nights < 3:
            raise UsageError(f"--nights must be at least 3 (two to judge, one its re-run), got {args.nights}")
        if args.root.exists() and not args.root.is_dir():
            raise UsageError(f"--root {args.root} is not a folder")
        if args.judge_only and not args.root.is_dir():
            raise UsageError(f"--judge-only: no nights under {args.root}")
        if (not args.judge_only and args.root.is_dir() and any(args.root.iterdir()) and not args.resume):
            raise UsageError(f"{args.root} is not empty; pass --resume to add to its nights or choose another --root")
        seconds = {}
        code = 0
        started = time.monotonic()
        if not args.judge_only:
            args.runner_args = args.runner_args or ["--only", "squeezenet1_1,resnet18,mobilenet_v2,alexnet"]
            code = aa_nights.run_nights(args)
            seconds["running nights"] = time.monotonic() - started
        dates = [d for d in aa_nights.dates(args.nights) if (args.root / d).is_dir()]
        unknown = [d for d in exclude if d not in dates]
        if unknown:
            raise UsageError(f"--exclude {','.join(unknown)}: no such night under {args.root}")
        loads = night_loads(args.root, dates)
        loaded = [] if args.exclude_loaded is None else [
            d for d, load in loads.items() if load is not None and load > args.exclude_loaded and d not in exclude]
        named, exclude = list(exclude), exclude + loaded
        judging = time.monotonic()
        policy = gate.Policy(confirm_one_sided=args.confirm_one_sided)
        tally = (measure_power(args.root, dates, slowdowns, policy, exclude=exclude,
                               first_call_slowdowns=first_call_slowdowns) if args.real_nights else Tally())
        seconds["judging"] = time.monotonic() - judging
        if args.resample:
            judging = time.monotonic()
            resampled(args.root, [d for d in dates if d not in exclude], args.resample_processes, args.resample_repeats, args.resample,
                      slowdowns, policy, tally=tally)
            seconds[f"{args.resample} resampled nights of {args.resample_processes} x {args.resample_repeats}"] = (
                time.monotonic() - judging)
        print(f"{len(dates)} identical night(s) under {args.root}"
              + (f"; not judged (--exclude): {', '.join(named)}" if named else "")
              + (f"; not judged, loaded (--exclude-loaded {args.exclude_loaded:g}): {', '.join(loaded)}"
                 if loaded else ""))
        print(loads_line(loads), end="")
        print(cpus_line(night_cpus(args.root, dates)), end="")
        print(report(tally, slowdowns, seconds, first_call_slowdowns), end="")
        return code

    return guarded(PROG, body)


if __name__ == "__main__":
    sys.exit(main())
