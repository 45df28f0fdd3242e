"""``python -m benchmarks.nightly notify``: a night that is not green reaches a person.

When the night's gate did not pass (``compare.json``'s ``state``: ``fail``,
``suspected`` or ``unjudged``), or no gate judged it (no ``compare.json``:
the gate did not finish), it opens a GitHub issue for the night -- or,
when an issue with the label (``--label``, default ``nightly-regression``)
is already open, comments on that one instead, so nights never pile up
duplicates -- and prints a ``::error`` workflow annotation per flagged row.
The issue says:

* the title: the night's date, its state and the state's reasons;
* a table of the rows the gate flagged (failed or suspected: metric, mark,
  estimated change, the rule and its note);
* links to both nights' commits (the newest earlier night's and tonight's),
  the CI run and the dashboard page;
* the night's failures against the expected files (``expected`` in
  ``compare.json``): new failures apart from the known ones, flaky models
  and what to accept with ``runner.py update-expected``;
* for each flagged row, the exact ``runner.py bisect`` command that finds
  the commit (GOOD: the earlier night's commit, BAD: tonight's; the night's
  runner flags; ``--metric`` of its metric).

It runs in a job that installs nothing and holds only ``issues: write``: the
standard library only (``urllib``), the token from ``GITHUB_TOKEN``, the API
at ``GITHUB_API_URL`` and the repository ``GITHUB_REPOSITORY`` (set by
Actions).  A green night does nothing.  Exit status: 0 (also when
notified: the gate already set the run's status), 1 when the API refused,
2 bad input.
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import re
import shlex
import sys
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any, Callable

from benchmarks.nightly.night import PASS, RESULT, Night, flagged_rows, night_folders
from benchmarks.results import expected
from benchmarks.usage import UsageError

LABEL = "nightly-regression"
MAX_ROWS = 50  # an issue body stays readable (and under GitHub's size limit)
# A policy's metric, as ``runner.py bisect --metric`` names it.
BISECT_METRIC = {"first_call": "first-call", "host_memory": "memory", "device_memory": "memory"}


def add_arguments(p: argparse.ArgumentParser, step: str | None) -> None:
    p.add_argument("--label", default=LABEL, help=f"the label of the nightly's issues (default {LABEL})")
    p.add_argument("--page", default="", help="the dashboard's address (default: the repository's "
                   "GitHub Pages address)")


# --------------------------------------------------------------------------
# What the issue says


def _commit(csv_path: Path) -> str:
    """The commit a night's rows ran (``""``: unknown)."""
    try:
        with open(csv_path, newline="", encoding="utf-8") as f:
            commits = {row.get("commit") or "" for row in csv.DictReader(f)} - {"", "unknown"}
    except OSError:
        return ""
    return sorted(commits)[0] if len(commits) == 1 else ""


def _baseline_night(night: Night) -> Night | None:
    """The newest earlier night with results: what tonight's rows were judged after."""
    earlier = [f for f in night_folders(night.folder.parent, before=night.date) if (f / RESULT).is_file()]
    return Night.read(earlier[-1], on_error=lambda why: None) if earlier else None


def _change(row: dict) -> str:
    change = row.get("change")
    return f"{change:+.1%}" if isinstance(change, (int, float)) and change == change else "-"


def failing_rows(gate: dict) -> list[dict]:
    """``{policy, name, backend, mark, change, note}`` of every row the gate flagged."""
    return [{"policy": r["metric"], "name": r["name"], "backend": r["backend"], "mark": r["mark"],
             "change": _change(r), "note": f"{r['rule']}: {r['note']}"} for r in flagged_rows(gate)]


def bisect_command(good: str, bad: str, row: dict, flags: list[str]) -> str:
    """The ``runner.py bisect`` command that finds the commit of ``row``."""
    kept, skip = [], False
    for word in flags:  # the night's selection is replaced by the row's model and backend
        if skip:
            skip = False
        elif word in ("--only", "--backend", "-k", "--filter", "-x", "--exclude", "--exclude-exact",
                      "--output", "--output-directory", "--total-partitions", "--partition-id"):
            skip = True
        elif word.split("=")[0] in ("--only", "--backend", "--output", "--output-directory") or word in (
                "--resume", "--overwrite", "--performance"):
            pass
        else:
            kept.append(word)
    metric = BISECT_METRIC.get(row["policy"])
    if row["note"].startswith("new failure") and "--accuracy" in flags:
        metric = "accuracy"
    words = ["python", "runner.py", "bisect", good or "GOOD", bad or "BAD", "--only", str(row["name"]),
             "--backend", str(row["backend"]), *kept, *(["--metric", metric] if metric else [])]
    return " ".join(shlex.quote(w) for w in words)


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def headline(night: Night) -> str:
    """The night's state and its reasons (``FAIL (1 slower)``), the state
    before words that do not start with it (``UNJUDGED: INCONCLUSIVE (...)``,
    a file of the old format), or why no gate judged it."""
    if night.state is None:
        return f"NOT JUDGED ({night.not_judged})" if night.not_judged else "NOT JUDGED"
    verdict = night.verdict or night.state.upper()
    return verdict if verdict.upper().startswith(night.state.upper()) else f"{night.state.upper()}: {verdict}"


def title(night: Night) -> str:
    return f"Nightly {night.date}: {headline(night)}"


def body(night: Night, page: str) -> str:
    """The issue's (or comment's) markdown."""
    rows = failing_rows(dict(night.gate))
    base = _baseline_night(night)
    good, bad = (_commit(base.csv) if base else ""), _commit(night.csv)
    repository = night.repository_url or ""
    parts = [f"## Nightly {night.date}: {headline(night)}", ""]
    links = []
    for name, commit in (("baseline night" + (f" {base.date}" if base else ""), good), ("tonight", bad)):
        if commit:
            links.append(f"{name}: [{commit[:12]}]({repository}/commit/{commit})" if repository
                         else f"{name}: {commit[:12]}")
    if night.run_url:
        links.append(f"[the run]({night.run_url})")
    if page:
        links.append(f"[the dashboard]({page})")
    passed_over = night.gate.get("passed_over") or []
    parts += [" · ".join(links), "", "Each row is judged against its own earlier nights (docs/gate.md)"
              + (f"; passed over: {'; '.join(map(str, passed_over))}" if passed_over else "") + ".", ""]
    shown = rows[:MAX_ROWS]
    parts += ["| model | backend | mark | change | metric | rule: note |", "|---|---|---|---|---|---|"]
    parts += [f"| {_cell(r['name'])} | {_cell(r['backend'])} | {_cell(r['mark'])} | {_cell(r['change'])} | "
              f"{_cell(r['policy'])} | {_cell(r['note'])} |" for r in shown]
    if len(rows) > len(shown):
        parts.append(f"\n... and {len(rows) - len(shown)} more rows: see the run.")
    if isinstance(night.gate.get("expected"), dict):
        parts += ["", expected.section(night.gate["expected"]).rstrip("\n")]
    regressed = shown
    if regressed:
        flags = [str(f) for f in night.runner.get("flags") or ()]
        parts += ["", "To find the commit of each regressed row:", "", "```sh"]
        parts += list(dict.fromkeys(bisect_command(good, bad, r, flags) for r in regressed))
        parts += ["```"]
    return "\n".join(parts) + "\n"


def annotations(night: Night) -> list[str]:
    """A ``::error`` workflow command per failing row."""
    return [f"::error title=Nightly {night.date} {r['policy']}::{r['name']} / {r['backend']}: {r['mark']}, "
            f"change {r['change']} ({r['note']})"
            for r in failing_rows(dict(night.gate))]


# --------------------------------------------------------------------------
# GitHub's API

Call = Callable[[str, str, dict | None], Any]


def github(api: str, token: str) -> Call:
    """``call(method, path, payload) -> JSON`` against GitHub's REST API."""

    def call(method: str, path: str, payload: dict | None = None) -> Any:
        request = urllib.request.Request(
            api.rstrip("/") + path, method=method,
            data=None if payload is None else json.dumps(payload).encode(),
            headers={"Authorization": f"Bearer {token}", "Accept": "application/vnd.github+json",
                     "X-GitHub-Api-Version": "2022-11-28", "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read() or b"null")

    return call


def report(call: Call, repository: str, label: str, night: Night, page: str) -> str:
    """Comment on the open issue with ``label``, or open one; what was done."""
    query = urllib.parse.urlencode({"state": "open", "labels": label, "per_page": 100})
    found = [i for i in call("GET", f"/repos/{repository}/issues?{query}", None) or ()
             if isinstance(i, dict) and "pull_request" not in i]
    text = body(night, page)
    if found:
        number = min(i["number"] for i in found)  # the oldest open one
        call("POST", f"/repos/{repository}/issues/{number}/comments", {"body": f"# {title(night)}\n\n{text}"})
        return f"commented on issue #{number}"
    issue = call("POST", f"/repos/{repository}/issues", {"title": title(night), "body": text, "labels": [label]})
    return f"opened issue #{issue.get('number')}"


def notify(args: argparse.Namespace) -> int:
    night = Night.read(args.root / args.date, on_error=lambda why: print(f"notify: {why}", file=sys.stderr))
    if not night.folder.is_dir():
        raise UsageError(f"{night.folder}: no such night")
    if night.green:
        print(f"notify: night {night.date}: {night.verdict}: nobody to tell")
        return 0
    for line in annotations(night):
        print(line)
    repository, token = os.environ.get("GITHUB_REPOSITORY", ""), os.environ.get("GITHUB_TOKEN", "")
    if not (repository and token):
        raise UsageError("GITHUB_REPOSITORY and GITHUB_TOKEN must be set to open an issue")
    owner, _, name = repository.partition("/")
    page = args.page or f"https://{owner}.github.io/{name}/"
    try:
        done = report(github(os.environ.get("GITHUB_API_URL", "https://api.github.com"), token),
                      repository, args.label, night, page)
    except (urllib.error.URLError, OSError, ValueError) as err:
        print(f"notify: GitHub's API refused: {err}", file=sys.stderr)
        return 1
    print(f"notify: night {night.date}: {done}")
    return 0
