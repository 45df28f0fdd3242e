"""A night on disk: the names of its files, its records, and ``Night``.

Every other module of the nightly, and the dashboard, finds a night's files
through the names defined here, once::

    ROOT/<YYYY-MM-DD>/            a night (DATE)
        performance.csv           its merged run (RESULT), .jsonl/.md/.png beside it
        night.json                what is known of it beyond its rows (NIGHT_FILE)
        compare.{md,json,png}     its gate's report (COMPARE_MD, VERDICT_FILE, COMPARE_PNG)
        accuracy.csv              an accuracy run, when it has one (ACCURACY)
        confirm/performance.csv   the gate's confirmation re-run (CONFIRM_DIR)
        shards/shard-I.csv|json   a shard's rows and record (SHARDS_DIR)
    ROOT/.history.json            what fetch-history found (STATE_FILE)

Standard library only: the steps that run before anything is installed
(plan, summary, the results branch) read it too.
"""
from __future__ import annotations

import argparse
import datetime
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

RESULT = "performance.csv"
NIGHT_FILE = "night.json"
VERDICT_FILE = "compare.json"
COMPARE_MD = "compare.md"
COMPARE_PNG = "compare.png"
ACCURACY = "accuracy.csv"
REPORT = "performance.md"
SHARDS_DIR = "shards"
CONFIRM_DIR = "confirm"
STATE_FILE = ".history.json"
DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
SHARD_CSV = re.compile(r"^shard-(\d+)\.csv$")
SHARD_META = re.compile(r"^shard-(\d+)\.json$")
# How a night started (night.json's "kind"): the nightly's default plan on
# its schedule, or an ad-hoc run (a dispatch with whatever filter, backends
# or repeats it was given), which is never a baseline or anyone's previous
# night.  A night recorded without a kind ran before kinds were: scheduled.
SCHEDULED, AD_HOC = "scheduled", "ad-hoc"
KINDS = (SCHEDULED, AD_HOC)
# The gate's states (benchmarks.judge.verdict), and the row marks that flag.
PASS, SUSPECTED, UNJUDGED, FAIL = "pass", "suspected", "unjudged", "fail"
STATES = (PASS, SUSPECTED, UNJUDGED, FAIL)
FLAGGED = (FAIL, SUSPECTED)
# The exit status of each state (the gate's, ``nightly state``'s, merge.sh's,
# a job's).  Only a pass is green: a night that judged nothing (or too
# little), or whose slowdown is not yet confirmed, is as much not green as a
# failed one, for every reader.
STATE_EXIT = {PASS: 0, FAIL: 1, UNJUDGED: 3, SUSPECTED: 4}
# What a night keeps on the results branch (shard files and worker logs go to
# the run's artifacts only).
PUBLISHED = (RESULT, "performance.jsonl", REPORT, "performance.png", "performance_graph_breaks.csv",
             NIGHT_FILE, COMPARE_MD, VERDICT_FILE, COMPARE_PNG)


# --------------------------------------------------------------------------
# Paths and dates


def night_dir(root: Path, date: str) -> Path:
    return root / date


def shard_csv(root: Path, date: str, shard: int) -> Path:
    return night_dir(root, date) / SHARDS_DIR / f"shard-{shard}.csv"


def shard_meta_path(shards_dir: Path, shard: int) -> Path:
    return shards_dir / f"shard-{shard}.json"


def today() -> str:
    return datetime.datetime.now(datetime.timezone.utc).date().isoformat()


def date_arg(text: str) -> str:
    """A night's name: YYYY-MM-DD, today (UTC) when empty (an argparse type)."""
    if not text:
        return today()
    try:
        datetime.date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a date (YYYY-MM-DD): {text!r}") from None
    if not DATE.match(text):
        raise argparse.ArgumentTypeError(f"not a date (YYYY-MM-DD): {text!r}")
    return text


def night_kind(env: Mapping[str, str]) -> str:
    """How this night started.  On GitHub the event says it
    (``GITHUB_EVENT_NAME``: ``schedule`` runs the default plan, whatever the
    repository's variables set; anything else is ad-hoc); elsewhere
    ``NIGHTLY_KIND`` (default scheduled: a cluster's cron).  ``ValueError``
    on a kind that is neither."""
    event = env.get("GITHUB_EVENT_NAME", "").strip()
    if event:
        return SCHEDULED if event == "schedule" else AD_HOC
    kind = env.get("NIGHTLY_KIND", "").strip() or SCHEDULED
    if kind not in KINDS:
        raise ValueError(f"NIGHTLY_KIND={kind!r}: must be {' or '.join(KINDS)}")
    return kind


# --------------------------------------------------------------------------
# Small JSON files


def read_json(path: Path) -> dict:
    """A JSON object from ``path``; ``{}`` when absent; ``ValueError`` naming
    the file when it is not a JSON object."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as err:
        raise ValueError(f"{path}: unreadable ({err.strerror})") from None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}: not JSON ({err.msg})") from None
    if not isinstance(value, dict):
        raise ValueError(f"{path}: not a JSON object")
    return value


def write_json(path: Path, value: Mapping[str, Any]) -> None:
    """Write ``value`` to ``path`` through a temporary name: a reader never
    sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".tmp")
    partial.write_text(json.dumps(value, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    partial.replace(path)


def update_json(path: Path, value: Mapping[str, Any]) -> None:
    """Set the keys of ``value`` in the JSON object at ``path``, keeping the
    others (what other steps record there, such as the CI run's address);
    an unreadable file is replaced."""
    try:
        found = read_json(path)
    except ValueError:
        found = {}
    write_json(path, {**found, **value})


# --------------------------------------------------------------------------
# Nights


def _url(value: Any) -> str | None:
    """An http(s) URL from a night's metadata (nothing else becomes a link)."""
    return value.rstrip("/") if isinstance(value, str) and value.startswith(("https://", "http://")) else None


@dataclass(frozen=True)
class Night:
    """One night's folder, its ``night.json`` (``meta``) and its gate's
    ``compare.json`` (``gate``: verdict, labels, rows); empty when absent."""

    date: str
    folder: Path
    meta: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)
    gate: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @classmethod
    def read(cls, folder: Path, on_error: Callable[[str], None] | None = None) -> "Night":
        """The night in ``folder``.  An unreadable ``night.json`` or
        ``compare.json`` raises ``ValueError``, or with ``on_error`` is
        reported to it and read as empty."""
        found = []
        for name in (NIGHT_FILE, VERDICT_FILE):
            try:
                found.append(read_json(folder / name))
            except ValueError as err:
                if on_error is None:
                    raise
                on_error(str(err))
                found.append({})
        return cls(folder.name, folder, *found)

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

    @property
    def kind(self) -> str:
        """``scheduled`` or ``ad-hoc`` (see ``night_kind``)."""
        return AD_HOC if self.meta.get("kind") == AD_HOC else SCHEDULED

    @property
    def ad_hoc(self) -> bool:
        return self.kind == AD_HOC

    @property
    def state(self) -> str | None:
        """The gate's state (``pass``, ``suspected``, ``unjudged``, ``fail``;
        None: not judged), read from ``compare.json``'s fields; a verdict of
        the old format by its exit code."""
        return gate_state(self.gate)

    @property
    def verdict(self) -> str | None:
        """The state and its reasons, for display (never parsed)."""
        state = self.state
        if state is None:
            return None
        reasons = self.gate.get("reasons")
        if isinstance(reasons, list) and reasons:
            return f"{state.upper()} ({'; '.join(map(str, reasons))})"
        old = self.gate.get("verdict")
        return old if isinstance(old, str) else state.upper()

    @property
    def not_judged(self) -> str:
        """Why the night has no verdict, when its gate did not finish (``""``: it did)."""
        return "" if self.state else str(self.meta.get("not_judged") or "")

    @property
    def green(self) -> bool:
        """Whether the gate passed the night: the only state that is green
        (a night no gate judged is not)."""
        return self.state == PASS

    @property
    def gate_failed(self) -> bool:
        """The gate judged the night and it is not green (anything but ``pass``)."""
        return self.state not in (None, PASS)

    @property
    def run_url(self) -> str | None:
        return _url(self.meta.get("run_url"))

    @property
    def repository_url(self) -> str | None:
        return _url(self.meta.get("repository_url"))


def gate_state(gate: Mapping[str, Any]) -> str | None:
    """``compare.json``'s state; for a verdict of the old format (no state)
    its exit code: 0 pass, 1 fail; None when the night was not judged."""
    state = gate.get("state")
    if state in STATES:
        return state
    return {0: PASS, 1: FAIL}.get(gate.get("exit_code")) if "verdict" in gate else None


def flagged_rows(gate: Mapping[str, Any]) -> list[dict]:
    """``{metric, name, backend, mark, rule, change, p_value, note}`` of
    each row the gate flagged (failed or suspected), from its fields."""
    found = []
    for row in gate.get("rows") or ():
        if isinstance(row, dict) and row.get("mark") in FLAGGED and isinstance(row.get("key"), dict):
            found.append({"metric": row.get("metric"), "name": row["key"].get("name"),
                          "backend": row["key"].get("backend"), "mark": row["mark"], "rule": row.get("rule"),
                          "change": row.get("change"), "p_value": row.get("p_value"),
                          "note": row.get("note") or ""})
    return found


def night_folders(root: Path, before: str | None = None) -> list[Path]:
    """Folders named by a date holding a merged run, oldest first; only
    those strictly before ``before`` when given."""
    return sorted(p.parent for p in root.glob(f"*/{RESULT}")
                  if DATE.match(p.parent.name) and (before is None or p.parent.name < before))


def missing_dates(dates: Iterable[str], until: str | None = None) -> list[str]:
    """The days from the first of ``dates`` to ``until`` (default: the last
    of them) that are not among ``dates``: nights that never ran."""
    days = sorted({datetime.date.fromisoformat(d) for d in dates})
    if not days:
        return []
    last = datetime.date.fromisoformat(until) if until else days[-1]
    have, day, missing = set(days), days[0], []
    while day < last:
        if day not in have:
            missing.append(day.isoformat())
        day += datetime.timedelta(days=1)
    return missing


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


def listed_dates(dates: Sequence[str], limit: int = 10) -> str:
    """``2026-01-03, 2026-01-04`` or, for many, the first and last and how many."""
    if len(dates) <= limit:
        return ", ".join(dates)
    return f"{dates[0]} .. {dates[-1]} ({len(dates)} nights)"


def dated_folders(root: Path) -> list[Path]:
    """Every folder under ``root`` named by a date, merged or not, oldest first."""
    return sorted(p for p in root.iterdir() if p.is_dir() and DATE.match(p.name)) if root.is_dir() else []


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
