"""``python -m benchmarks.nightly notify``: a red night reaches a person.

When the night is not green (``compare.json``'s state, ``night.gate_state``,
is anything but ``pass``: failed, suspected or unjudged), it opens a GitHub issue for the night -- or, when an issue with the label
(``--label``, default ``nightly-regression``) is already open, comments on
that one instead, so red nights never pile up duplicates -- and prints a
``::error`` workflow annotation per failing row.  The issue says:

* the title: the night's date and its verdict (the counts of failing rows);
* a table of the rows that failed it (steady-speedup rows, and every failed
  policy's rows: mark, paired ratio and its interval, policy);
* links to both nights' commits (the newest baseline night's and tonight's),
  the CI run and the dashboard page;
* the night's failures against the expected files (``expected`` in
  ``compare.json``): new failures apart from the known ones, flaky models
  and what to accept with ``runner.py update-expected``;
* for each regressed row, the exact ``runner.py bisect`` command that finds
  the commit (GOOD: the baseline night's commit, BAD: tonight's; the night's
  runner flags; ``--metric`` of its policy).

It runs in a job that installs nothing and holds only ``issues: write``: the
standard library only (``urllib``), the token from ``GITHUB_TOKEN``, the API
at ``GITHUB_API_URL`` and the repository ``GITHUB_REPOSITORY`` (set by
Actions).  A green night does nothing.  Exit status: 0
(also when notified: the gate already failed the run), 1 when the API
refused, 2 bad input.
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

from benchmarks.nightly.night import RESULT, Night
from benchmarks.results import expected
from benchmarks.usage import UsageError

LABEL = "nightly-regression"
MAX_ROWS = 50  # an issue body stays readable (and under GitHub's size limit)
# compare's marks that fail a night (its gating marks under any policy).
FAILING_MARKS = ("slower", "new failure", "removed", "missing", "inconclusive")
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
    """The newest night the gate judged against, when its words name one."""
    dates = re.findall(r"\d{4}-\d{2}-\d{2}", str(night.gate.get("baseline") or night.gate.get("old") or ""))
    dates = [d for d in dates if d < night.date and (night.folder.parent / d / RESULT).is_file()]
    return Night.read(night.folder.parent / max(dates), on_error=lambda why: None) if dates else None


def _ratio(row: dict) -> str:
    ratio = row.get("ratio")
    if ratio is None and isinstance(row.get("change"), (int, float)):
        ratio = 1 + row["change"]
        low, high = (1 + row[k] if isinstance(row.get(k), (int, float)) else None
                     for k in ("change_low", "change_high"))
    else:
        low, high = row.get("low"), row.get("high")
    if not isinstance(ratio, (int, float)):
        return "-"
    return f"{ratio:.2f}x" + (f" [{low:.2f}, {high:.2f}]" if isinstance(low, (int, float))
                              and isinstance(high, (int, float)) else "")


def failing_rows(gate: dict) -> list[dict]:
    """``{policy, name, backend, mark, ratio, note}`` of every row that failed the night."""
    rows = [{"policy": "speedup", "name": r.get("name"), "backend": r.get("backend"), "mark": r.get("mark"),
             "ratio": _ratio(r), "note": r.get("note") or ""}
            for r in gate.get("rows") or () if isinstance(r, dict) and r.get("mark") in _gating(gate)]
    for policy in gate.get("policies") or ():
        if isinstance(policy, dict) and policy.get("verdict") == "FAIL" and policy.get("policy") != "speedup":
            rows += [{"policy": policy["policy"], "name": r.get("name"), "backend": r.get("backend"),
                      "mark": r.get("mark"), "ratio": _ratio(r), "note": r.get("note") or ""}
                     for r in policy.get("regressed") or ()]
    return rows


def _gating(gate: dict) -> set[str]:
    policy = gate.get("policy") or {}
    marks = {"slower", "new failure"}
    if not policy.get("allow_removed"):
        marks |= {"removed", "missing"}
    if policy.get("fail_on_inconclusive"):
        marks.add("inconclusive")
    return marks


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
    if row["mark"] == "new failure" and "--accuracy" in flags:
        metric = "accuracy"
    words = ["python", "runner.py", "bisect", good or "GOOD", bad or "BAD", "--only", str(row["name"]),
             "--backend", str(row["backend"]), *kept, *(["--metric", metric] if metric else [])]
    return " ".join(shlex.quote(w) for w in words)


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def headline(night: Night) -> str:
    """The night's state and verdict: ``FAIL (1 slower)``, ``UNJUDGED: INCONCLUSIVE (...)``."""
    verdict = night.verdict or (f"not judged ({night.not_judged})" if night.not_judged else "not judged")
    return verdict if night.gate_failed else f"{night.state.upper()}: {verdict}"


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
    parts += [" · ".join(links), "", f"Baseline: {night.gate.get('baseline') or night.gate.get('old') or '?'}", ""]
    shown = rows[:MAX_ROWS]
    parts += ["| model | backend | mark | paired ratio [95% interval] | policy | note |",
              "|---|---|---|---|---|---|"]
    parts += [f"| {_cell(r['name'])} | {_cell(r['backend'])} | {_cell(r['mark'])} | {_cell(r['ratio'])} | "
              f"{_cell(r['policy'])} | {_cell(r['note'])} |" for r in shown]
    if len(rows) > len(shown):
        parts.append(f"\n... and {len(rows) - len(shown)} more rows: see the run.")
    if isinstance(night.gate.get("expected"), dict):
        parts += ["", expected.section(night.gate["expected"]).rstrip("\n")]
    regressed = [r for r in shown if r["mark"] in ("slower", "new failure")]
    if regressed:
        flags = [str(f) for f in night.runner.get("flags") or ()]
        parts += ["", "To find the commit of each regressed row:", "", "```sh"]
        parts += list(dict.fromkeys(bisect_command(good, bad, r, flags) for r in regressed))
        parts += ["```"]
    return "\n".join(parts) + "\n"


def annotations(night: Night) -> list[str]:
    """A ``::error`` workflow command per failing row."""
    return [f"::error title=Nightly {night.date} {r['policy']}::{r['name']} / {r['backend']}: {r['mark']}, "
            f"ratio {r['ratio']}" + (f" ({r['note']})" if r["note"] else "")
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
