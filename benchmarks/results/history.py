"""The nights of a nightly history (``ROOT/<date>/``): which are complete,
and the baseline a night is judged against.

A night's folder holds its merged run (``performance.csv`` and the files
beside it) and ``night.json``, written when the night is merged from its
shards (or run in one go): the shards the plan expected, those merged, those
lost or unfinished, the models that were planned but have no row, and the
runner settings (what a confirmation re-run repeats).  A night is *partial*
when a shard is lost or did not finish; a partial night is never a baseline,
and the rows it lacks are ``missing`` in its own comparison, not removed.  A
night without ``night.json`` (written before the file existed) counts as
complete: nothing says otherwise.

Each shard job leaves ``shards/shard-I.json`` beside its CSV: the shard
count, its planned models, its runner settings and whether its runner
finished.  The merge reads them (``night_record``) and writes ``night.json``.

Baselines (``choose_baseline``), in the order they are asked for:

* ``--previous CSV``: that run alone;
* ``--pin DATE``: that night alone (it must be complete);
* by default the last ``K`` complete nights before tonight, pooled: per
  experiment, the paired backend/baseline ratios of those nights are put
  together (``pairing.load_baseline``), so its median is the median ratio
  over K nights and Mann-Whitney still compares raw samples.  One noisy night
  moves the reference by a K-th, and a slow drift is caught once tonight has
  drifted ``threshold`` from the middle of the window (3% a night: by the
  third night; 1.5% a night or less, within a window of 7, never -- pin a
  night for that).  ``K = 1`` is the night-to-night comparison.

The pooled test treats the K nights' ratios as one sample.  The spread from
night to night (the machine's state) is therefore not in the p-value: the
threshold, a confirmation re-run and the pooling itself (which halves the
night-to-night noise of the reference) are what guard against it.

``ROOT/.history.json`` (written by ``nightly fetch-history``) says whether a
results branch exists and whether it could be read: a night with no baseline
on a branch that exists but could not be read fails the gate.
"""
from __future__ import annotations

import json
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from benchmarks.usage import UsageError

RESULT = "performance.csv"  # the merged run of a night
NIGHT_FILE = "night.json"
STATE_FILE = ".history.json"
SHARDS_DIR = "shards"
DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
SHARD_META = re.compile(r"^shard-(\d+)\.json$")
DEFAULT_NIGHTS = 7  # a week of complete nights


# --------------------------------------------------------------------------
# Small JSON files


def read_json(path: Path) -> dict:
    """A JSON object from ``path``; ``{}`` when absent; ``ValueError`` naming
    the file when it is not a JSON object."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}: not JSON ({err.msg})") from None
    if not isinstance(value, dict):
        raise ValueError(f"{path}: not a JSON object")
    return value


def update_json(path: Path, value: Mapping[str, Any]) -> None:
    """Set the keys of ``value`` in the JSON object at ``path``, keeping the
    others (what other steps record there, such as the CI run's address);
    an unreadable file is replaced."""
    try:
        found = read_json(path)
    except ValueError:
        found = {}
    write_json(path, {**found, **value})


def write_json(path: Path, value: Mapping[str, Any]) -> None:
    """Write ``value`` to ``path`` through a temporary name: a reader never
    sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".tmp")
    partial.write_text(json.dumps(value, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    partial.replace(path)


# --------------------------------------------------------------------------
# Nights


@dataclass(frozen=True)
class Night:
    """One night's folder and its ``night.json`` (empty when absent)."""

    date: str
    folder: Path
    meta: Mapping[str, Any] = field(default_factory=dict)

    @property
    def csv(self) -> Path:
        return self.folder / RESULT

    @property
    def partial(self) -> str:
        """Why the night is partial (``"shard 2 of 4 lost"``), or ``""``."""
        return str(self.meta.get("partial") or "")

    @property
    def runner(self) -> Mapping[str, Any]:
        """The runner settings the night ran with (``{}``: unknown)."""
        value = self.meta.get("runner")
        return value if isinstance(value, dict) else {}


def read_night(folder: Path) -> Night:
    """The night in ``folder``; ``ValueError`` when its ``night.json`` is unreadable."""
    return Night(folder.name, folder, read_json(folder / NIGHT_FILE))


def night_folders(root: Path, before: str | None = None) -> list[Path]:
    """Folders named by a date holding a merged run, oldest first; only
    those strictly before ``before`` when given."""
    return sorted(p.parent for p in root.glob(f"*/{RESULT}")
                  if DATE.match(p.parent.name) and (before is None or p.parent.name < before))


# --------------------------------------------------------------------------
# What a night's shards say: night.json


def shard_meta_path(shards_dir: Path, shard: int) -> Path:
    return shards_dir / f"shard-{shard}.json"


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
    A shard is *lost* when it left no CSV, *unfinished* when its record says
    its runner did not finish; either makes the night partial, and the
    planned models without a row are named.
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
    return {"date": date, "shards_expected": expected, "shards_merged": sorted(merged),
            "shards_lost": lost, "shards_unfinished": unfinished, "models_not_run": not_run,
            "partial": partial, "runner": runner}


# --------------------------------------------------------------------------
# The baseline


@dataclass(frozen=True)
class Baseline:
    """What a night is judged against: ``runs`` (CSV paths, oldest first;
    none when there is nothing to compare with), how they were chosen
    (``kind``: ``nights``, ``pinned`` or ``given``), the window asked for,
    and the earlier nights passed over with the reason (``skipped``)."""

    kind: str
    runs: tuple[Path, ...] = ()
    dates: tuple[str, ...] = ()
    window: int = 0
    skipped: tuple[str, ...] = ()
    unreadable: tuple[str, ...] = ()

    def describe(self) -> str:
        """One line: which baseline, and which nights were passed over."""
        if self.kind == "given":
            text = f"the run given with --previous ({self.runs[0]})"
        elif self.kind == "pinned":
            text = f"the pinned night {self.dates[0]}"
        elif not self.runs:
            text = "none"
        elif self.window == 1:
            text = f"the previous complete night, {self.dates[0]} (night to night)"
        else:
            text = (f"the paired ratios of the last {len(self.runs)} complete night(s) pooled, "
                    f"{', '.join(self.dates)} (window of {self.window})")
        passed_over = [*self.skipped, *self.unreadable]
        return text + (f"; passed over: {'; '.join(passed_over)}" if passed_over else "")

    def label(self) -> str:
        """A short name for the old side of the comparison."""
        if self.kind == "given":
            return str(self.runs[0])
        if len(self.dates) == 1:
            return f"{self.dates[0]}/{RESULT}"
        return f"{len(self.dates)} nights {self.dates[0]} .. {self.dates[-1]}"


def _why_unusable(night: Night) -> str:
    """Why an earlier night cannot be a baseline (``""``: it can)."""
    if night.partial:
        return f"partial: {night.partial}"
    from benchmarks.results import store

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a torn last line: the rest is still a run
            store.read_rows(night.csv)
            if store.samples_path(night.csv).exists():
                store.read_samples(store.samples_path(night.csv))
    except (OSError, ValueError, UnicodeDecodeError) as err:
        return f"unreadable: {(str(err).splitlines() or [type(err).__name__])[0]}"
    return ""


def _earlier_night(root: Path, folder: Path) -> tuple[Night | None, str]:
    try:
        night = read_night(folder)
    except ValueError as err:
        return None, f"unreadable: {err}"
    return night, _why_unusable(night)


def choose_baseline(root: Path, date: str, window: int = DEFAULT_NIGHTS, pin: str | None = None,
                    previous: Path | None = None) -> Baseline:
    """The baseline of night ``date`` under ``root`` (see the module
    docstring).  A pinned night that is absent, partial or unreadable is
    bad input (``UsageError``); earlier nights that cannot serve are passed
    over and listed."""
    if previous is not None:
        return Baseline("given", (previous,), window=1)
    if pin is not None:
        folder = root / pin
        if not (folder / RESULT).is_file():
            raise UsageError(f"--pin {pin}: no night {folder / RESULT}")
        night, why = _earlier_night(root, folder)
        if why:
            raise UsageError(f"--pin {pin} cannot be a baseline ({why})")
        return Baseline("pinned", (night.csv,), (pin,), window=1)
    chosen: list[Night] = []
    skipped, unreadable = [], []
    for folder in reversed(night_folders(root, before=date)):
        if len(chosen) == window:
            break
        night, why = _earlier_night(root, folder)
        if not why:
            chosen.append(night)
        else:
            (unreadable if why.startswith("unreadable") else skipped).append(f"{folder.name} ({why})")
    chosen.reverse()
    return Baseline("nights", tuple(n.csv for n in chosen), tuple(n.date for n in chosen), window,
                    tuple(skipped), tuple(unreadable))


# --------------------------------------------------------------------------
# The results branch's state (written by fetch-history)


def write_state(root: Path, **state: Any) -> None:
    write_json(root / STATE_FILE, state)


def read_state(root: Path) -> dict:
    """What ``fetch-history`` recorded: ``{"branch", "remote", "exists",
    "error"}``; ``{}`` when the history was not fetched (a local run)."""
    try:
        return read_json(root / STATE_FILE)
    except ValueError as err:
        return {"exists": True, "error": str(err)}
