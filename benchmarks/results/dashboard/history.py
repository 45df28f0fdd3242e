"""The nights under a folder, read into one frame.

``find_nights(root)`` lists the nights that hold a merged run, read as
``benchmarks.nightly.night.Night`` (the nightly's own record of a night):
what each says about itself, its gate's verdict and rows (``compare.json``)
and the CI run that made it (``night.json``).  ``load_history(nights)`` reads
every night's rows into one frame (``combine``): one row per experiment and
night, with the night's index, whether it passed (accuracy-gated where the
night also holds an ``accuracy.csv``), its group of settings (suite, mode,
dtype: the page's filters) and its line (``series``).
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd

from benchmarks.nightly.night import ACCURACY, RESULT, Night, dated_folders
from benchmarks.results import store
from benchmarks.usage import UsageError

PROG = "runner.py dashboard"
# The settings a reader filters on; each combination is a group with its own
# charts and summary.  The other settings of the key (baseline, device,
# dynamic) name a line when they vary; a change of batch size is marked on
# the model's line.
GROUP_COLUMNS = ("suite", "mode", "dtype")
LINE_COLUMNS = tuple(c for c in store.SETTING_COLUMNS if c not in GROUP_COLUMNS and c != "batch_size")
UNKNOWN = "-"


def find_nights(root: Path) -> list[Night]:
    """The nights under ``root`` in date order; a folder without a result
    (a run still going, or one that died) is skipped with a warning, and an
    unreadable ``night.json`` or ``compare.json`` is read as empty."""
    if not root.is_dir():
        raise UsageError(f"{root}: no such folder")
    nights = []
    for folder in dated_folders(root):
        if not (folder / RESULT).is_file():
            warn(f"{folder}: no {RESULT}; night skipped")
            continue
        nights.append(Night.read(folder, on_error=lambda why: warn(f"{why}; shown without it")))
    if not nights:
        raise UsageError(f"{root}: no nights found (folders YYYY-MM-DD with a {RESULT})")
    return nights


def warn(message: str) -> None:
    print(f"{PROG}: warning: {message}", file=sys.stderr)


def _read(path: Path) -> pd.DataFrame | None:
    try:
        run = store.read_run(path)
    except (OSError, ValueError) as err:
        detail = (str(err).splitlines() or [type(err).__name__])[0]
        warn(f"{path}: unreadable ({detail}); night skipped")
        return None
    for damage in run.damage:  # a cut last line: the night is shown without what it lost
        warn(f"{damage.describe()}; the night is shown without it")
    return run.rows


def load_history(nights: Sequence[Night]) -> pd.DataFrame:
    """Every night's rows in one frame (see :func:`combine`); an unreadable
    night is skipped with a warning rather than hiding a year of history."""
    frames, accuracy = [], []
    for index, night in enumerate(nights):
        rows = _read(night.csv)
        if rows is None:
            continue
        frames.append((index, rows))
        if (night.folder / ACCURACY).is_file():
            checked = _read(night.folder / ACCURACY)
            if checked is not None:
                accuracy.append((index, checked))
    if not frames:
        raise UsageError("no night could be read")
    return combine(frames, accuracy)


def combine(frames: Sequence[tuple[int, pd.DataFrame]],
            accuracy: Sequence[tuple[int, pd.DataFrame]] = ()) -> pd.DataFrame:
    """(night index, rows) pairs -> one frame: the last row of each
    experiment per night, with the columns ``night``, ``passed`` (the row
    passed and, where the night has an accuracy row of the experiment, that
    passed too), ``accuracy_failed``, ``suite``/``mode``/``dtype`` filled
    (``"-"`` when unknown), ``group`` and ``series`` (the line it is on)."""
    history = pd.concat([store.latest(df).assign(night=index) for index, df in frames], ignore_index=True)
    performance = np.array([store.measures({"accuracy": a}) == "performance" for a in history["accuracy"]],
                           dtype=bool)
    history = history[performance].reset_index(drop=True)
    passed = np.array([store.passed({"status": s, "speedup": v})
                       for s, v in zip(history["status"], history["speedup"])], dtype=bool)
    wrong = _accuracy_failed(history, accuracy)
    history["passed"] = passed & ~wrong
    history["accuracy_failed"] = wrong
    keys = _distinct_keys(history)
    for column in GROUP_COLUMNS:  # as the key has them: a version-1 row ran fp32
        history[column] = _per_row(keys, lambda k, c=column: UNKNOWN if getattr(k, c) is None else str(getattr(k, c)))
    history["group"] = _per_row(keys, group_label)
    history["series"] = series_labels(history, keys)
    # A night that ran a model at several batch sizes: one point per line and night (the last).
    return history.drop_duplicates(["night", "group", "name", "series"], keep="last").reset_index(drop=True)


def group_label(key: store.ExperimentKey) -> str:
    """``"builtin · inference · fp32"``: the suite, mode and dtype of a key."""
    return " · ".join(UNKNOWN if getattr(key, c) is None else str(getattr(key, c)) for c in GROUP_COLUMNS)


def _accuracy_failed(history: pd.DataFrame, accuracy: Sequence[tuple[int, pd.DataFrame]]) -> np.ndarray:
    """Per row of ``history``: the night's accuracy run judged the same
    experiment and it did not pass."""
    verdicts: dict[tuple, Any] = {}
    for index, df in accuracy:
        for row in store.latest(df).to_dict("records"):
            if store.measures(row) == "accuracy":
                verdicts[(index, store.experiment_key(row))] = row["accuracy"]
    if not verdicts:
        return np.zeros(len(history), dtype=bool)
    return np.array([verdicts.get((row["night"], store.experiment_key(row)), store.STATUS_PASS)
                     != store.STATUS_PASS for row in history.to_dict("records")], dtype=bool)


def _distinct_keys(history: pd.DataFrame) -> tuple[np.ndarray, list]:
    """Per row, the index of its experiment key, and the distinct keys:
    ``experiment_key`` once per distinct key (it normalises: an older row
    gets the settings it implied), not per row: a year has 58,000 rows."""
    if history.empty:
        return np.zeros(0, dtype=int), []
    columns = [c for c in (*store.KEY_COLUMNS, "schema_version") if c in history]
    group = history.groupby(columns, dropna=False, sort=False).ngroup().to_numpy()
    first = np.unique(group, return_index=True)[1]
    return group, [store.experiment_key(row) for row in history.iloc[first].to_dict("records")]


def _per_row(keys: tuple[np.ndarray, list], fn) -> np.ndarray:
    group, distinct = keys
    return np.array([fn(k) for k in distinct], dtype=object)[group] if distinct else np.array([], dtype=object)


def series_labels(history: pd.DataFrame, keys: tuple[np.ndarray, list] | None = None) -> pd.Series:
    """What a line on the page is: the backend, plus the settings of
    ``LINE_COLUMNS`` (baseline, device, dynamic) that differ within the
    history, so that two such settings of one backend never share a line:
    ``"openxla_eval"`` or ``"openxla_eval [dynamic=dynamic]"``.  Batch size,
    suite, mode and dtype never make a line of their own (see the module
    docstring)."""
    group, distinct = keys if keys is not None else _distinct_keys(history)
    if not distinct:
        return pd.Series([], index=history.index, dtype=object)
    settings = pd.DataFrame([[UNKNOWN if getattr(k, c) is None else str(getattr(k, c)) for c in LINE_COLUMNS]
                             for k in distinct], columns=list(LINE_COLUMNS))
    varying = [c for c in settings if settings[c].nunique() > 1]
    labels = np.array([str(k.backend) + (" [" + ", ".join(f"{c}={row[c]}" for c in varying) + "]" if varying else "")
                       for k, (_, row) in zip(distinct, settings.iterrows())], dtype=object)
    return pd.Series(labels[group], index=history.index)
