"""The baseline a night is judged against, among the nights of a history
(``ROOT/<date>/``, read through ``night.Night``).

A night's folder holds its merged run (``performance.csv`` and the files
beside it) and ``night.json``, written when the night is merged from its
shards (``merge``) or run in one go: the shards the plan expected, those merged, those
lost or unfinished, the models that were planned but have no row, and the
runner settings (what a confirmation re-run repeats).  A night is *partial*
when a shard is lost or did not finish; a partial night is never a baseline,
nor is an ad-hoc one (``night.json``'s ``kind``: a dispatch, not the schedule),
and the rows it lacks are ``missing`` in its own comparison, not removed.  A
night without ``night.json`` (written before the file existed) counts as
complete: nothing says otherwise.

Baselines (``choose_baseline``), in the order they are asked for:

* ``--previous CSV``: that run alone;
* ``--pin DATE``: that night alone (it must be complete);
* by default the last ``K`` complete scheduled nights before tonight, pooled: per
  experiment, the paired backend/baseline ratios of those nights are put
  together (``pairing.load_baseline``), so its median is the median ratio
  over K nights and Mann-Whitney still compares raw samples.  One noisy night
  moves the reference by a K-th, and a slow drift is caught once tonight has
  drifted ``threshold`` from the middle of the window (3% a night: by the
  third night; 1.5% a night or less, within a window of 7, never -- pin a
  night for that).  A night far from the rest for one row (a loaded
  machine) is left out of that row's pool (``compare.LEAVE_OUT_THRESHOLDS``).
  ``K = 1`` is the night-to-night comparison.

The pooled test treats the K nights' ratios as one sample.  The spread from
night to night (the machine's state) is therefore not in the p-value: the
threshold, a confirmation re-run and the pooling itself (which halves the
night-to-night noise of the reference) are what guard against it.

``ROOT/.history.json`` (written by ``nightly fetch-history``) says whether a
results branch exists and whether it could be read: a night with no baseline
on a branch that exists but could not be read fails the gate.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path

from benchmarks.nightly.night import RESULT, Night, missing_dates, night_folders
from benchmarks.results import store
from benchmarks.usage import UsageError

DEFAULT_NIGHTS = 7  # a week of complete nights


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
    if night.ad_hoc:
        return "ad-hoc: not the nightly's default plan"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a torn last line: the rest is still a run
            store.read_rows(night.csv)
            if store.samples_path(night.csv).exists():
                store.read_samples(store.samples_path(night.csv))
    except (OSError, ValueError, UnicodeDecodeError) as err:
        return f"unreadable: {(str(err).splitlines() or [type(err).__name__])[0]}"
    return ""


def earlier_night(folder: Path) -> tuple[Night | None, str]:
    """The night in ``folder`` and why it cannot be a baseline (``""``: it can)."""
    try:
        night = Night.read(folder)
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
        night, why = earlier_night(folder)
        if why:
            raise UsageError(f"--pin {pin} cannot be a baseline ({why})")
        return Baseline("pinned", (night.csv,), (pin,), window=1)
    chosen: list[Night] = []
    skipped, unreadable = [], []
    for folder in reversed(night_folders(root, before=date)):
        if len(chosen) == window:
            break
        night, why = earlier_night(folder)
        if not why:
            chosen.append(night)
        else:
            (unreadable if why.startswith("unreadable") else skipped).append(f"{folder.name} ({why})")
    chosen.reverse()
    return Baseline("nights", tuple(n.csv for n in chosen), tuple(n.date for n in chosen), window,
                    tuple(skipped), tuple(unreadable))


def missing_before(root: Path, date: str) -> list[str]:
    """The days between the last scheduled night before ``date`` and
    ``date`` on which no scheduled night ran (a disabled schedule, a run
    that never started); an ad-hoc night fills no such day."""
    earlier = []
    for folder in night_folders(root, before=date):
        try:
            if not Night.read(folder).ad_hoc:
                earlier.append(folder.name)
        except ValueError:
            earlier.append(folder.name)  # unreadable, but it ran
    return missing_dates([earlier[-1], date]) if earlier else []
