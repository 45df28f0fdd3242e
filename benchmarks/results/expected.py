"""Expected results, checked in: what each model should do on each backend,
and a run judged against it.

``configs/expected/<suite>_<mode>_<dtype>.csv`` holds, per model and backend
(columns ``name,backend,status,graph_breaks``), the status a night's row is
expected to have and the graph breaks dynamo is expected to find in it (empty
for a row that does not pass), as PyTorch's ``ci_expected_accuracy`` keeps
them.  ``configs/expected/flaky.csv`` (``name,backend,why``; an empty backend
is every backend) lists the models whose status or graph breaks come and go:
their changes are reported, never failing a night.

``judge(run, expected)`` names each row of a run:

* ``new failure``: expected to pass, it does not (fails the night);
* ``more graph breaks``: it passes with more breaks than expected (fails);
* ``newly passes`` / ``fewer graph breaks`` / ``fails differently``: better,
  or a known failure that changed its status: ``runner.py update-expected``
  accepts it (does not fail);
* ``known failure``: fails as expected; ``as expected``: passes as expected;
* ``flaky``: a flaky model that differs from its expected row (reported);
* ``unconfirmed``: a new failure that passed when the gate ran it again;
* ``not expected``: no expected row (a model or backend added since).

Expected rows the run does not have are counted (a filtered night runs
few).  ``update(run, folder)`` rewrites the files from a run.

Standard library only: the nightly's summary step, which runs before
anything is installed, separates known failures from new ones with it.
"""
from __future__ import annotations

import csv
import difflib
import io
import math
import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Iterable, Mapping

from benchmarks.nightly.night import RESULT

FOLDER = Path(__file__).resolve().parents[2] / "configs" / "expected"
FLAKY_FILE = "flaky.csv"
COLUMNS = ("name", "backend", "status", "graph_breaks")
FLAKY_COLUMNS = ("name", "backend", "why")
PASS = "pass"
# A row's group, and the file that holds its expectations: <suite>_<mode>_<dtype>.csv.
FILE_NAME = re.compile(r"^(?P<suite>[a-z0-9]+)_(?P<mode>[a-z_]+)_(?P<dtype>[a-z0-9]+)\.csv$")
# What rows of schema version 1 (no suite, mode or dtype columns) ran.
V1_GROUP = {"suite": "builtin", "mode": "inference", "dtype": "fp32"}

NEW_FAILURE = "new failure"
MORE_BREAKS = "more graph breaks"
NEWLY_PASSES = "newly passes"
FEWER_BREAKS = "fewer graph breaks"
FAILS_DIFFERENTLY = "fails differently"
KNOWN_FAILURE = "known failure"
AS_EXPECTED = "as expected"
FLAKY = "flaky"
NOT_EXPECTED = "not expected"
UNCONFIRMED = "unconfirmed"  # a new failure that passed when the gate ran it again
FAILING = (NEW_FAILURE, MORE_BREAKS)
UPDATES = (NEWLY_PASSES, FEWER_BREAKS, FAILS_DIFFERENTLY, NOT_EXPECTED)  # update the expected file
# Summary order: what needs attention first.
MARKS = (NEW_FAILURE, MORE_BREAKS, FLAKY, UNCONFIRMED, NEWLY_PASSES, FEWER_BREAKS, FAILS_DIFFERENTLY, NOT_EXPECTED,
         KNOWN_FAILURE, AS_EXPECTED)
NAN = float("nan")


class ExpectedError(ValueError):
    """An expected file, flaky list or run that cannot be read; the message names the file."""


@dataclass(frozen=True)
class Entry:
    """What a model did (or is expected to do) on a backend."""

    status: str
    graph_breaks: int | None = None


Group = tuple[str, str, str]  # (suite, mode, dtype)
Rows = dict[Group, dict[tuple[str, str], Entry]]  # group -> (name, backend) -> entry


def file_name(group: Group) -> str:
    return "_".join(group) + ".csv"


def _int(text: str | None, where: str) -> int | None:
    text = (text or "").strip()
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        raise ExpectedError(f"{where}: graph_breaks must be a whole number, not {text!r}") from None
    if math.isnan(value):
        return None
    if value != int(value) or value < 0:
        raise ExpectedError(f"{where}: graph_breaks must be a whole number, not {text!r}")
    return int(value)


def _read(path: Path, columns: Iterable[str]) -> list[dict]:
    try:
        with open(path, newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            missing = [c for c in columns if c not in (reader.fieldnames or ())]
            if missing:
                raise ExpectedError(f"{path}: no {missing[0]} column (wants {', '.join(columns)})")
            return list(reader)
    except (OSError, UnicodeDecodeError, csv.Error) as err:
        raise ExpectedError(f"{path}: {err}") from None


# --------------------------------------------------------------------------
# The checked-in files


@dataclass(frozen=True)
class Expected:
    """The expected files of a folder, by group, and its flaky list
    (``(name, backend)``; backend ``""``: every backend -> why)."""

    folder: Path
    rows: Rows
    flaky: Mapping[tuple[str, str], str] = field(default_factory=dict)

    def why_flaky(self, name: str, backend: str) -> str | None:
        return self.flaky.get((name, backend), self.flaky.get((name, "")))


def read_file(path: Path) -> dict[tuple[str, str], Entry]:
    out = {}
    for line, row in enumerate(_read(path, COLUMNS), start=2):
        where = f"{path}:{line}"
        name, backend, status = (row.get(c, "").strip() for c in ("name", "backend", "status"))
        if not (name and backend and status):
            raise ExpectedError(f"{where}: name, backend and status are required")
        if (name, backend) in out:
            raise ExpectedError(f"{where}: {name} / {backend} is listed twice")
        out[(name, backend)] = Entry(status, _int(row.get("graph_breaks"), where))
    return out


def load(folder: str | os.PathLike | None = None) -> Expected:
    """The expected files and flaky list of ``folder`` (default configs/expected);
    a folder that does not exist expects nothing."""
    folder = Path(folder) if folder else FOLDER
    rows: Rows = {}
    if folder.is_dir():
        for path in sorted(folder.glob("*.csv")):
            match = FILE_NAME.match(path.name)
            if match and path.name != FLAKY_FILE:
                rows[(match["suite"], match["mode"], match["dtype"])] = read_file(path)
    flaky = {}
    if (folder / FLAKY_FILE).is_file():
        for line, row in enumerate(_read(folder / FLAKY_FILE, FLAKY_COLUMNS), start=2):
            name = (row.get("name") or "").strip()
            if not name:
                raise ExpectedError(f"{folder / FLAKY_FILE}:{line}: name is required")
            flaky[(name, (row.get("backend") or "").strip())] = (row.get("why") or "").strip()
    return Expected(folder, rows, flaky)


# --------------------------------------------------------------------------
# A run's rows


def run_csv(night_or_csv: str | os.PathLike) -> Path:
    """A run's CSV: a night's folder's merged run, or the path itself."""
    path = Path(night_or_csv)
    return path / RESULT if path.is_dir() else path


def run_rows(csv_path: str | os.PathLike) -> Rows:
    """A run's rows by group and (model, backend): its status, and its graph
    breaks when it passed.  Several rows of one model and backend (batch
    sizes) are one: passing when all pass (the most breaks), else the first
    failure."""
    path = Path(csv_path)
    rows: Rows = {}
    for line, row in enumerate(_read(path, ("name", "backend", "status")), start=2):
        name, backend, status = (row.get(c, "").strip() for c in ("name", "backend", "status"))
        if not (name and backend and status):
            raise ExpectedError(f"{path}:{line}: a row without its name, backend or status")
        group = tuple((row.get(c) or "").strip() or V1_GROUP[c] for c in ("suite", "mode", "dtype"))
        breaks = _int(row.get("graph_breaks"), f"{path}:{line}") if status == PASS else None
        found = Entry(status, breaks)
        seen = rows.setdefault(group, {}).get((name, backend))
        if seen is not None:
            if seen.status != PASS:
                found = seen
            elif status == PASS:
                found = Entry(PASS, None if seen.graph_breaks is None and breaks is None
                              else max(b for b in (seen.graph_breaks, breaks) if b is not None))
        rows[group][(name, backend)] = found
    return rows


# --------------------------------------------------------------------------
# A run judged


@dataclass(frozen=True)
class Check:
    """One row of a run against its expected row.  ``ratio`` and the
    change's interval are NaN: shaped as the gate's compared rows, so that
    the policies' tables show it."""

    name: str
    backend: str
    group: Group
    mark: str
    status: str
    expected: Entry | None
    graph_breaks: int | None = None
    flaky: str = ""  # why it is on the flaky list
    ratio: float = NAN
    change: float = NAN
    change_low: float = NAN
    change_high: float = NAN

    @property
    def note(self) -> str:
        was = self.expected
        if was is None:
            said = f"{self.status}, no expected row in {file_name(self.group)}"
        elif was.status != self.status:
            said = f"expected {was.status}, got {self.status}"
        elif self.status == PASS and was.graph_breaks != self.graph_breaks:
            said = f"expected {_breaks(was.graph_breaks)} graph breaks, got {_breaks(self.graph_breaks)}"
        else:
            said = self.status
        if self.mark == FLAKY:
            said += f" (flaky: {self.flaky})" if self.flaky else " (flaky)"
        elif self.mark == UNCONFIRMED:
            said += " in the night; passed when run again"
        elif self.mark in UPDATES:
            said += ": update the expected file"
        return said


def _breaks(value: int | None) -> str:
    return "?" if value is None else str(value)


def _mark(now: Entry, was: Entry | None) -> str:
    if was is None:
        return NOT_EXPECTED
    if was.status == PASS and now.status != PASS:
        return NEW_FAILURE
    if was.status != PASS and now.status == PASS:
        return NEWLY_PASSES
    if now.status != PASS:
        return KNOWN_FAILURE if now.status == was.status else FAILS_DIFFERENTLY
    if None not in (now.graph_breaks, was.graph_breaks) and now.graph_breaks != was.graph_breaks:
        return MORE_BREAKS if now.graph_breaks > was.graph_breaks else FEWER_BREAKS
    return AS_EXPECTED


@dataclass(frozen=True)
class Judgement:
    """A run's rows against the expected files: a ``Check`` per row, the
    groups with no expected file, and the expected rows the run lacks."""

    checks: tuple[Check, ...]
    folder: Path
    no_file: tuple[Group, ...] = ()
    not_run: int = 0

    def marked(self, *marks: str) -> list[Check]:
        return [c for c in self.checks if c.mark in marks]

    @property
    def failing(self) -> list[Check]:
        return self.marked(*FAILING)

    @property
    def failed(self) -> bool:
        return bool(self.failing)

    def counts(self) -> dict[str, int]:
        found = [c.mark for c in self.checks]
        return {m: found.count(m) for m in MARKS if m in found}

    def line(self) -> str:
        """``FAIL: 1 new failure (a/ours: expected pass, got fail_to_run), 3 known failures, ...``."""
        parts = []
        for mark, n in self.counts().items():
            named = self.marked(mark) if mark not in (AS_EXPECTED, KNOWN_FAILURE) else []
            shown = "; ".join(f"{c.name}/{c.backend}: {c.note}" for c in named)
            parts.append(f"{n} {mark}" + (f" ({shown})" if shown else ""))
        if self.not_run:
            parts.append(f"{self.not_run} expected row(s) not in this run")
        for group in self.no_file:
            parts.append(f"no expected file {file_name(group)}")
        if self.marked(*UPDATES) or self.no_file:
            parts.append("accept with runner.py update-expected")
        return f"{'FAIL' if self.failed else 'PASS'}: {', '.join(parts) or 'no rows'}"

    def to_json(self) -> dict:
        """The judgement as plain data (compare.json's ``expected``)."""
        return {"verdict": "FAIL" if self.failed else "PASS", "folder": str(self.folder),
                "counts": self.counts(), "not_run": self.not_run,
                "no_file": [file_name(g) for g in self.no_file],
                "rows": [{"name": c.name, "backend": c.backend, "file": file_name(c.group), "mark": c.mark,
                          "status": c.status, "graph_breaks": c.graph_breaks,
                          "expected_status": c.expected.status if c.expected else None,
                          "expected_graph_breaks": c.expected.graph_breaks if c.expected else None,
                          "flaky": c.flaky, "note": c.note}
                         for c in self.checks if c.mark != AS_EXPECTED]}

    def markdown(self) -> str:
        """The report's section: new failures first, then the known ones."""
        return section(self.to_json())


def judge(run: Rows, expected: Expected) -> Judgement:
    """Each row of ``run`` (``run_rows``) against ``expected``."""
    checks, no_file, not_run = [], [], 0
    for group in sorted(run):
        wanted = expected.rows.get(group)
        if wanted is None:
            no_file.append(group)
        for (name, backend), now in sorted(run[group].items()):
            was = (wanted or {}).get((name, backend))
            mark = _mark(now, was)
            why = expected.why_flaky(name, backend)
            if why is not None and mark not in (AS_EXPECTED, KNOWN_FAILURE):
                mark = FLAKY
            checks.append(Check(name, backend, group, mark, now.status, was, now.graph_breaks, why or ""))
        not_run += len(set(wanted or {}) - set(run[group]))
    return Judgement(tuple(checks), expected.folder, tuple(no_file), not_run)


def rerun_passed(judgement: Judgement, keys: set[tuple[str, str]]) -> Judgement:
    """``judgement`` with the new failures of ``keys`` (model, backend) that
    passed when the gate measured them again ``unconfirmed``."""
    return replace(judgement, checks=tuple(
        replace(c, mark=UNCONFIRMED) if c.mark == NEW_FAILURE and (c.name, c.backend) in keys else c
        for c in judgement.checks))


def flaky_failures(judgement: Judgement) -> set[tuple[str, str]]:
    """The (model, backend) of flaky rows that did not pass: their failure
    fails no policy of the night."""
    return {(c.name, c.backend) for c in judgement.marked(FLAKY) if c.status != PASS}


def _list(rows: list[dict]) -> list[str]:
    return [f"- {r['name']} / {r['backend']}: {r['note']}" for r in rows]


def section(document: Mapping) -> str:
    """A judgement's ``to_json`` as markdown: new failures apart from the
    known ones (the gate's report, and the issue it opens)."""
    rows = list(document.get("rows") or ())
    by_mark = {m: [r for r in rows if r.get("mark") == m] for m in MARKS}
    parts = [f"## Expected results: {document.get('verdict', '?')}", ""]
    new = by_mark[NEW_FAILURE] + by_mark[MORE_BREAKS]
    parts += [f"**New failures** ({len(new)}): not in the expected files, failing the night", ""]
    parts += (_list(new) or ["none"]) + [""]
    known = by_mark[KNOWN_FAILURE]
    parts += [f"**Known failures** ({len(known)}): expected to fail, and failed", ""]
    parts += (_list(known) or ["none"]) + [""]
    if by_mark[FLAKY]:
        parts += [f"**Flaky** ({len(by_mark[FLAKY])}): on the flaky list, reported, not failing", ""]
        parts += _list(by_mark[FLAKY]) + [""]
    updates = [r for m in UPDATES for r in by_mark[m]]
    if updates or document.get("no_file"):
        parts += [f"**Update the expected file** ({len(updates)}): better than expected, or not in it; "
                  "`python runner.py update-expected NIGHT` accepts them", ""]
        parts += _list(updates) + [f"- no expected file {name}" for name in document.get("no_file") or ()] + [""]
    if document.get("not_run"):
        parts += [f"{document['not_run']} expected row(s) not in this run.", ""]
    return "\n".join(parts)


# --------------------------------------------------------------------------
# Accepting a run


def render_file(rows: Mapping[tuple[str, str], Entry]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS)
    for (name, backend), entry in sorted(rows.items()):
        breaks = "" if entry.graph_breaks is None or entry.status != PASS else entry.graph_breaks
        writer.writerow([name, backend, entry.status, breaks])
    return out.getvalue()


def update(run: Rows, folder: str | os.PathLike | None = None) -> list[tuple[Path, str]]:
    """The expected files rewritten from ``run``: its rows replace theirs,
    the rows it lacks are kept; ``(path, unified diff)`` of each file changed."""
    folder = Path(folder) if folder else FOLDER
    changed = []
    for group, rows in sorted(run.items()):
        path = folder / file_name(group)
        before = path.read_text(encoding="utf-8") if path.is_file() else ""
        kept = read_file(path) if before else {}
        after = render_file({**kept, **rows})
        if after != before:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(after, encoding="utf-8")
            diff = "".join(difflib.unified_diff(before.splitlines(True), after.splitlines(True),
                                                f"a/{path.name}", f"b/{path.name}"))
            changed.append((path, diff))
    return changed
