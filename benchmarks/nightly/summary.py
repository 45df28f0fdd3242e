"""The run's first page when the gate wrote none: why the night was not
judged, also recorded in its ``night.json`` (``not_judged``) for the page,
and its rows against the expected files (``benchmarks.results.expected``):
new failures apart from the known ones.  Standard library only (the merge
job's last steps run it whatever was installed)."""
from __future__ import annotations

import argparse
import os
import sys

from benchmarks.nightly.night import (COMPARE_MD, FAIL, NIGHT_FILE, PASS, RESULT, STATE_EXIT, SUSPECTED, UNJUDGED,
                                      Night, night_dir, update_json)
from benchmarks.results import expected

SUMMARY_LIMIT = 1024 * 1024  # GitHub's limit on one step's summary
NOT_JUDGED = ("The gate wrote no report: it did not finish (the job timed out or was cancelled) "
              "or it failed")
# What each state that is not green means, for the line that heads the page.
NOT_GREEN = {UNJUDGED: "the gate could judge nothing, or too little: nothing says the night is fine",
             SUSPECTED: "a slowdown flagged for the first time, not yet confirmed: the next night confirms "
                        "or clears it",
             FAIL: "a confirmed regression"}


def add_arguments(p: argparse.ArgumentParser, step: str) -> None:
    """``summary`` takes ``--root``, ``--date`` and the gate's ``--expected``."""
    p.add_argument("--expected", metavar="FOLDER",
                   help="the expected statuses and graph breaks, and the flaky list (default configs/expected)")


def expected_section(csv_path, folder: str | None) -> str:
    """The night's rows against the expected files, as the gate's report shows them."""
    try:
        return expected.judge(expected.run_rows(csv_path), expected.load(folder)).markdown()
    except expected.ExpectedError as err:
        return f"## Expected results\n\nnot judged: {err}\n"


def state_line(night: Night) -> str:
    """One line saying that a judged night is not green, and why; ``""`` for a pass."""
    state = night.state or UNJUDGED  # a report without a readable compare.json judged nothing
    if state == PASS:
        return ""
    return (f"**Nightly {night.date} is not green: {state.upper()}** (exit status "
            f"{STATE_EXIT[state]}): {NOT_GREEN[state]}.\n\n")


def summary(args: argparse.Namespace) -> int:
    """Why a night has no judgement, on the run's first page: appended to
    the file ``$GITHUB_STEP_SUMMARY`` names (the gate puts its own report
    there when it judges), or printed with the gate's report without it."""
    tonight = night_dir(args.root, args.date)
    compared = tonight / COMPARE_MD
    target = os.environ.get("GITHUB_STEP_SUMMARY")
    if compared.is_file():
        line = state_line(Night.read(tonight, on_error=lambda why: print(f"summary: {why}", file=sys.stderr)))
        # The gate wrote its report there: only the state is added.
        text = line if target else line + compared.read_text()
    elif not (tonight / RESULT).is_file():
        text = f"# Nightly {args.date}: no results\n\nThe shards were not merged: see the merge step's log.\n"
    else:
        text = (f"# Nightly {args.date}: not judged\n\n{NOT_JUDGED}: see its log.\n\n"
                + expected_section(tonight / RESULT, args.expected))
        # The page shows it, and the night is uploaded and published with it.
        update_json(tonight / NIGHT_FILE, {"not_judged": NOT_JUDGED})
    if len(text.encode()) > SUMMARY_LIMIT:
        cut = text.encode()[:SUMMARY_LIMIT - 200].decode(errors="ignore")
        text = f"{cut}\n\n(cut at GitHub's summary limit: the whole report is compare.md in the run's artifacts)\n"
    if target:
        with open(target, "a", encoding="utf-8") as out:
            out.write(text)
    else:
        sys.stdout.write(text)
    return 0
