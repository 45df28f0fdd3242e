"""What the gate judges a night by: each row's value on each night, read from
the nights' files, with what was left out and why.

The unit is the night.  A row (an experiment: model, backend and settings)
on one night is a ``RowNight``: the row's processes, each the log of its
median paired backend/baseline ratio (``speedup``: one pair per timed
repeat; ``first_call``: one pair per cold process; ``host_memory`` and
``device_memory``: one pair per run), and the night's value, the mean of the
processes that were kept.  Processes share the night's machine state, so the
night -- not the process -- is the independent sample: a row is judged
against the values the same row had on earlier nights (``benchmarks.judge.rules``).

Every exclusion is made here, once, and recorded with its reason:

* a process timed while other processes kept more than ``loaded_cores``
  cores busy (``RowNight.left_out``);
* an earlier night that is partial, ad hoc, unreadable or older than
  ``max_age_days`` (``History.passed_over``);
* an earlier night of a row that ran on another CPU, failed, had no quiet
  process, or was flagged by its own gate (``History.values`` leaves it out
  and says so in ``History.left_out``).
"""
from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from benchmarks.nightly.night import Night, night_folders
from benchmarks.results import pairing, policies, store

METRICS = ("speedup", "first_call", "host_memory", "device_memory")
NAN = float("nan")


@dataclass(frozen=True)
class RowNight:
    """One row on one night, for one metric."""

    key: store.ExperimentKey
    metric: str
    status: str
    cpu: str
    units: tuple[float, ...] = ()  # log ratio of each process (or pair) kept
    left_out: tuple[str, ...] = ()  # each process left out, with its reason

    @property
    def passed(self) -> bool:
        return self.status == store.STATUS_PASS

    @property
    def value(self) -> float:
        """The night's log ratio: the mean of the kept processes' (nan: none)."""
        return float(np.mean(self.units)) if self.units else NAN

    def to_json(self) -> dict:
        return {"units": list(self.units), "left_out": list(self.left_out)}


def _log_ratios(backend: Sequence[float], baseline: Sequence[float]) -> list[float]:
    return [math.log(b / a) for b, a in zip(backend, baseline)
            if store.is_finite(b) and store.is_finite(a) and a > 0 and b > 0]


def units_of(side: pairing.Side, loaded_cores: float) -> tuple[tuple[float, ...], tuple[str, ...]]:
    """(the log ratio of each quiet process, each process left out with its
    reason).  A side whose samples say their processes gives one unit per
    process (its median ratio); otherwise one per pair."""
    if not side.paired:
        return (), ()
    if not side.by_process:
        return tuple(_log_ratios(side.backend_s, side.baseline_s)), ()
    kept, left = [], []
    loads = side.process_loads if len(side.process_loads) == len(side.process_repeats) else ()
    start = 0
    for index, n in enumerate(side.process_repeats):
        logs = _log_ratios(side.backend_s[start:start + n], side.baseline_s[start:start + n])
        start += n
        load = loads[index] if loads else NAN
        if store.is_finite(load) and load > loaded_cores:
            left.append(f"process {index}: loaded ({load:.2f} other cores > {loaded_cores:g})")
        elif logs:
            kept.append(float(np.median(logs)))
    return tuple(kept), tuple(left)


def read_rows(csv: Path, metric: str, loaded_cores: float) -> dict[store.ExperimentKey, RowNight]:
    """Every row of a run for ``metric``."""
    run, _ = policies.METRICS[metric].load(csv)
    found = {}
    for key, side in run.items():
        units, left = units_of(side, loaded_cores)
        found[key] = RowNight(key, metric, side.status, side.cpu, units, left)
    return found


@dataclass(frozen=True)
class NightRows:
    """One night's rows, every metric: ``rows[metric][key]``, and the marks
    its own gate gave (``flagged``: (metric, key) -> mark)."""

    date: str
    rows: Mapping[str, Mapping[store.ExperimentKey, RowNight]]
    flagged: Mapping[tuple[str, store.ExperimentKey], str] = field(default_factory=dict)


def read_night(night: Night, loaded_cores: float, metrics: Sequence[str] = METRICS) -> NightRows:
    return NightRows(night.date, {m: read_rows(night.csv, m, loaded_cores) for m in metrics},
                     flagged_rows(night.gate))


def key_json(key: store.ExperimentKey) -> dict:
    return dict(key._asdict())


def key_of(value: Mapping) -> store.ExperimentKey:
    return store.ExperimentKey(**{c: value.get(c) for c in store.ExperimentKey._fields})


def flagged_rows(document: Mapping) -> dict[tuple[str, store.ExperimentKey], str]:
    """The rows a night's own gate flagged (suspected or failed), read from
    its ``compare.json`` fields; a verdict of the old format flagged none."""
    found = {}
    for row in document.get("rows") or ():
        if isinstance(row, dict) and row.get("mark") in ("suspected", "fail") and isinstance(row.get("key"), dict):
            found[(row.get("metric"), key_of(row["key"]))] = row["mark"]
    return found


@dataclass(frozen=True)
class History:
    """The earlier nights a night is judged against, newest first, and those
    passed over with the reason."""

    nights: tuple[NightRows, ...] = ()
    passed_over: tuple[str, ...] = ()

    def values(self, tonight: RowNight, window: int) -> tuple[tuple[float, ...], tuple[str, ...], str]:
        """(the row's values on its last ``window`` usable nights, oldest
        first; the nights left out with the reason; the newest night's mark
        for the row when its gate flagged it, else "")."""
        kept, left = [], []
        last_mark = ""
        for index, night in enumerate(self.nights):
            if len(kept) == window:
                break
            row = night.rows.get(tonight.metric, {}).get(tonight.key)
            if row is None:
                continue
            mark = night.flagged.get((tonight.metric, tonight.key), "")
            if index == 0 and mark:
                last_mark = mark
            why = ("ran on another CPU" if row.cpu != tonight.cpu
                   else f"flagged {mark} by its gate" if mark
                   else "failed" if not row.passed
                   else "no quiet process" if not row.units else "")
            if why:
                left.append(f"{night.date} ({why})")
            else:
                kept.append(row.value)
        return tuple(reversed(kept)), tuple(left), last_mark


def _age_days(date: str, tonight: str) -> int:
    return (dt.date.fromisoformat(tonight) - dt.date.fromisoformat(date)).days


def _not_history(night: Night) -> str:
    """Why an earlier night is no history (``""``: it is): a partial night
    lacks rows, an ad-hoc one did not run the nightly's plan."""
    if night.partial:
        return f"partial: {night.partial}"
    if night.ad_hoc:
        return "ad-hoc: not the nightly's default plan"
    return ""


def read_history(root: Path, date: str, loaded_cores: float, max_age_days: int, most: int,
                 metrics: Sequence[str] = METRICS) -> History:
    """The complete scheduled nights before ``date`` under ``root``, newest
    first, at most ``most`` of them and none older than ``max_age_days``."""
    kept, passed = [], []
    for folder in reversed(night_folders(root, before=date)):
        if len(kept) == most:
            break
        if _age_days(folder.name, date) > max_age_days:
            passed.append(f"{folder.name} and earlier (older than {max_age_days} days)")
            break
        try:
            night = Night.read(folder)
            why = _not_history(night)
            if not why:
                kept.append(read_night(night, loaded_cores, metrics))
        except (OSError, ValueError, UnicodeDecodeError) as err:
            why = f"unreadable: {(str(err).splitlines() or [type(err).__name__])[0]}"
        if why:
            passed.append(f"{folder.name} ({why})")
    return History(tuple(kept), tuple(passed))
