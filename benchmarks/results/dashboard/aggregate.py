"""What the page shows, computed when it is built: trends over a fixed set
of models, the latest night's summary, and each model's series.

**A fixed set of models.**  A geomean taken over the models that passed
*that* night rises when a slow model breaks.  So each trend (geomean
speedup, mean first call, memory compression, headroom) is taken, for a
line and a time range, over the models that passed on every night of that
range on which the line ran; the page shows how many they are, and the pass
rate (x of y, accuracy-gated where the night has accuracy rows) beside it.
The ranges are the whole history and its last 7, 30, 90 and 365 nights.

**The band of a geomean**: each row's 95% bootstrap interval gives the
standard error of its log speedup, se_i = (ln high - ln low) / (2 * 1.96);
the mean of n logs has standard error sqrt(sum se_i^2) / n, so the band is
exp(mean log +- 1.96 * that).  It says how far measurement noise alone could
move that night's geomean; rows without an interval add nothing to it.

**The latest night's summary**, per group and line: pass rate, geomean
speedup, mean first-call time and memory compression over the models that
passed that night (what that night measured), and the change from the
baseline night over the models that passed on both.
"""
from __future__ import annotations

import math
from typing import Collection, Sequence

import numpy as np
import pandas as pd

Z95 = 1.959963984540054
DIGITS = 4  # significant digits kept in the page's data
RANGES = (7, 30, 90, 365)  # the last N nights; and the whole history
ERROR_CHARS = 160
# Columns of a model's series: the page's short name, the CSV's column.
MODEL_COLUMNS = {"sp": "speedup", "lo": "speedup_ci_low", "hi": "speedup_ci_high", "lat": "abs_latency",
                 "base": "baseline_latency", "comp": "compilation_latency", "head": "headroom_captured",
                 "limit": "zero_overhead_speedup"}
MEMORY_COLUMNS = ("device_compression_ratio", "host_compression_ratio")  # the first a group has


# --------------------------------------------------------------------------
# Numbers as the page carries them


def compact(values) -> list:
    """Floats with DIGITS significant digits; nan and inf become null."""
    return [float(f"{v:.{DIGITS}g}") if math.isfinite(v) else None for v in np.asarray(values, dtype=float)]


def geomean_band(speedups, lows, highs) -> tuple[float, float, float]:
    """Geomean of ``speedups`` and its 95% band (see the module docstring)."""
    s = np.asarray(speedups, dtype=float)
    lo, hi = np.asarray(lows, dtype=float), np.asarray(highs, dtype=float)
    ok = np.isfinite(s) & (s > 0)
    if not ok.any():
        return math.nan, math.nan, math.nan
    logs = np.log(s[ok])
    with np.errstate(divide="ignore", invalid="ignore"):
        se = (np.log(hi[ok]) - np.log(lo[ok])) / (2 * Z95)
    se = np.where(np.isfinite(se) & (se >= 0), se, 0.0)
    center, spread = logs.mean(), Z95 * math.sqrt(float(np.sum(se**2))) / logs.size
    return math.exp(center), math.exp(center - spread), math.exp(center + spread)


def _positive_logs(frame: pd.DataFrame) -> pd.DataFrame:
    values = frame.to_numpy(dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return pd.DataFrame(np.where(values > 0, np.log(values), np.nan), index=frame.index, columns=frame.columns)


def ranges(nights: int) -> list[tuple[str, int]]:
    """(label, first night index) of each time range a reader can pick."""
    found = [(f"last {n} nights", nights - n) for n in RANGES if n < nights]
    return [("all nights", 0), *found]


def memory_column(rows: pd.DataFrame) -> str:
    """The compression ratio a group is shown with: the device's where the
    group's rows report one, else the host's."""
    for column in MEMORY_COLUMNS:
        if column in rows and np.isfinite(rows[column].to_numpy(dtype=float)).any():
            return column
    return MEMORY_COLUMNS[-1]


# --------------------------------------------------------------------------
# Trends of a line


def _pivots(rows: pd.DataFrame, memory: str) -> dict[str, pd.DataFrame]:
    """Model x night tables of one line's rows (one row per model and night)."""
    table = rows.set_index(["name", "night"])
    columns = {"passed": "passed", "sp": "speedup", "lo": "speedup_ci_low", "hi": "speedup_ci_high",
               "comp": "compilation_latency", "mem": memory, "head": "headroom_captured"}
    return {k: table[c].astype(float).unstack("night") for k, c in columns.items()}


def _over_fixed_set(p: dict[str, pd.DataFrame], nights: list[int]) -> dict:
    """The trend over the models that passed on every one of ``nights``."""
    passed = p["passed"][nights].fillna(0).astype(bool)
    fixed = passed.index[passed.all(axis=1)]
    logs = _positive_logs(p["sp"].loc[fixed, nights])
    with np.errstate(divide="ignore", invalid="ignore"):
        se = (np.log(p["hi"].loc[fixed, nights]) - np.log(p["lo"].loc[fixed, nights])) / (2 * Z95)
    se = se.where(np.isfinite(se) & (se >= 0), 0.0)
    n = logs.notna().sum()
    center = logs.mean()
    spread = Z95 * np.sqrt((se**2).sum()) / n.where(n > 0)
    memory = _positive_logs(p["mem"].loc[fixed, nights])
    return {
        "n": int(len(fixed)),
        "models": int(p["passed"][nights].notna().any(axis=1).sum()),
        "geo": np.exp(center), "lo": np.exp(center - spread), "hi": np.exp(center + spread),
        "comp": p["comp"].loc[fixed, nights].mean(), "mem": np.exp(memory.mean()),
        "head": p["head"].loc[fixed, nights].median(),
    }


def line_trend(rows: pd.DataFrame, nights: int, memory: str, ad_hoc: Collection[int] = ()) -> dict:
    """One line's pass rate per night and, per time range, its trends over
    that range's fixed set.  Arrays are dense over the nights (null where the
    line did not run); a range's arrays start at its first night.  The
    ``ad_hoc`` nights (a filter, other backends or repeats of their own) have
    their pass rate but no part in the trends: a fixed set cut down to one
    dispatch's model would be no trend of the schedule."""
    runs = rows.groupby("night")["passed"].agg(["sum", "size"]).reindex(range(nights))
    out = {"pass": compact(runs["sum"]), "total": compact(runs["size"]), "ranges": {}}
    rows = rows[~rows["night"].isin(list(ad_hoc))]
    if rows.empty:
        return out
    p = _pivots(rows, memory)
    for label, start in ranges(nights):
        ran = [i for i in p["passed"].columns if i >= start]
        if not ran:
            continue
        t = _over_fixed_set(p, ran)
        dense = {k: compact(pd.Series(t[k]).reindex(range(start, nights))) for k in
                 ("geo", "lo", "hi", "comp", "mem", "head")}
        out["ranges"][label] = {"n": t["n"], "models": t["models"], **dense}
    return out


# --------------------------------------------------------------------------
# The latest night


def _night_numbers(rows: pd.DataFrame, memory: str) -> dict:
    ok = rows[rows["passed"]]
    return {"passed": int(len(ok)), "total": int(len(rows)),
            "geomean": _geomean(ok["speedup"]), "compile_s": _mean(ok["compilation_latency"]),
            "memory": _geomean(ok[memory])}


def _geomean(values) -> float:
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v) & (v > 0)]
    return float(np.exp(np.log(v).mean())) if v.size else math.nan


def _mean(values) -> float:
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    return float(v.mean()) if v.size else math.nan


def _change(latest: pd.DataFrame, baseline: pd.DataFrame, memory: str) -> dict:
    """Latest against baseline over the models that passed on both nights."""
    a = latest[latest["passed"]].set_index("name")
    b = baseline[baseline["passed"]].set_index("name")
    common = a.index.intersection(b.index)
    a, b = a.loc[common], b.loc[common]
    compile_a, compile_b = _mean(a["compilation_latency"]), _mean(b["compilation_latency"])
    return {"common": int(len(common)),
            "geomean": _geomean(a["speedup"] / b["speedup"]) - 1,
            "compile_s": compile_a / compile_b - 1 if compile_b > 0 else math.nan,
            "memory": _geomean(a[memory] / b[memory]) - 1}


def latest_summary(rows: pd.DataFrame, baseline_night: int | None = None, ad_hoc: Collection[int] = ()) -> dict:
    """One group's summary table: its latest night, the baseline night
    (``baseline_night`` when the group ran then, else its last scheduled
    night before the latest: never one of the ``ad_hoc`` nights) and per
    line the numbers of ``_night_numbers`` with their change (``_change``;
    None without a baseline night)."""
    ran = sorted(rows["night"].unique())
    latest = int(ran[-1])
    earlier = [int(i) for i in ran if i < latest]
    scheduled = [i for i in earlier if i not in set(ad_hoc)]
    base = baseline_night if baseline_night in earlier else (scheduled[-1] if scheduled else None)
    memory = memory_column(rows)
    lines = {}
    for series, own in rows.groupby("series", sort=True):
        now = own[own["night"] == latest]
        if now.empty:
            continue
        before = own[own["night"] == base] if base is not None else own.iloc[:0]
        lines[str(series)] = {
            **_night_numbers(now, memory),
            "baseline": _night_numbers(before, memory) if not before.empty else None,
            "change": _change(now, before, memory) if not before.empty else None,
        }
    return {"latest": latest, "baseline": base, "memory": memory, "lines": lines}


# --------------------------------------------------------------------------
# A model's series


def _error_text(error) -> str:
    text = "" if error is None or pd.isna(error) else str(error)
    return text if len(text) <= ERROR_CHARS else text[: ERROR_CHARS - 3] + "..."


def _dense(nights_of_rows: np.ndarray, values, nights: int) -> list:
    dense = np.full(nights, np.nan)
    dense[nights_of_rows] = np.asarray(values, dtype=float)
    return compact(dense)


def batch_changes(own: pd.DataFrame) -> list[list]:
    """``[night, from, to]`` for each night a line's batch size changed."""
    sizes = own.sort_values("night")[["night", "batch_size"]].dropna()
    changes, previous = [], None
    for night, size in zip(sizes["night"], sizes["batch_size"]):
        if previous is not None and int(size) != previous:
            changes.append([int(night), previous, int(size)])
        previous = int(size)
    return changes


def _status(passed: bool, accuracy_failed: bool, status) -> str:
    if passed:
        return "pass"
    if accuracy_failed:
        return "fail_accuracy"
    return "unknown" if pd.isna(status) else str(status)


def _per_night(nights_of_rows: np.ndarray, values, nights: int) -> list:
    dense: list = [None] * nights
    for night, value in zip(nights_of_rows, values):
        dense[night] = value
    return dense


def model_series(rows: pd.DataFrame, nights: int, memory: str, commits: Sequence[str]) -> dict:
    """One model's lines in a group: every column of ``MODEL_COLUMNS`` and
    the memory compression, dense over the nights with null where the line
    has no passing row (a gap: no line is drawn across a failed night); per
    night the status (null: not run), the error of a failure, the commit
    (an index into ``commits``) and the batch size; and the batch-size
    changes."""
    index = {c: i for i, c in enumerate(commits)}
    out = {}
    for series, own in rows.groupby("series", sort=True):
        own = own.sort_values("night")
        at = own["night"].to_numpy(dtype=int)
        passed = own["passed"].to_numpy(dtype=bool)
        line = {key: _dense(at[passed], own[column].to_numpy(dtype=float)[passed], nights)
                for key, column in MODEL_COLUMNS.items()}
        line["mem"] = _dense(at[passed], own[memory].to_numpy(dtype=float)[passed], nights)
        status = [_status(p, a, s) for p, a, s in zip(passed, own["accuracy_failed"], own["status"])]
        errors = [None if p else (_error_text(e) or None) for p, e in zip(passed, own["error"])]
        commit = [index.get(_commit(c)) for c in own["commit"]]
        batch = [None if pd.isna(b) else int(b) for b in own["batch_size"]]
        line.update(status=_per_night(at, status, nights), error=_per_night(at, errors, nights),
                    commit=_per_night(at, commit, nights), bs=_per_night(at, batch, nights),
                    bsChanges=batch_changes(own))
        out[str(series)] = line
    return out


def _commit(value) -> str | None:
    text = "" if value is None or pd.isna(value) else str(value).strip()
    return text if text and text != "unknown" else None


def night_commits(history: pd.DataFrame, nights: int) -> tuple[list[str], list[list[int]]]:
    """Every commit the rows name (sorted), and per night the indices of its
    rows' commits (shards merged from two checkouts name two)."""
    found = [_commit(c) for c in history["commit"]] if "commit" in history else [None] * len(history)
    commits = sorted({c for c in found if c})
    index = {c: i for i, c in enumerate(commits)}
    per_night: list[set] = [set() for _ in range(nights)]
    for night, commit in zip(history["night"], found):
        if commit:
            per_night[int(night)].add(index[commit])
    return commits, [sorted(s) for s in per_night]
