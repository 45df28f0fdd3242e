"""The nightly gate step: judge a night against its own history and write
what was decided.

``gate(args)`` is ``nightly gate``; ``run(root, date, policy, expected_folder)``
does the work: the expected files (statuses and graph breaks, no history
needed) and ``benchmarks.judge.judge_night`` (every row against its earlier
nights, ``configs/gate.yaml``), then ``compare.md`` and ``compare.json``
beside the night -- the markdown also appended to ``$GITHUB_STEP_SUMMARY``
when set.  How a night is decided: docs/gate.md.

Exit status: the verdict's (0 pass, 1 fail, 3 unjudged, 4 suspected), 2 bad
input (``UsageError``).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import Sequence

from benchmarks import judge
from benchmarks.judge import render
from benchmarks.judge.verdict import UNJUDGED, Policy, Verdict
from benchmarks.nightly.night import COMPARE_MD, RESULT, VERDICT_FILE, listed_dates, missing_before, read_state
from benchmarks.results import expected, store
from benchmarks.usage import UsageError


def add_arguments(p: argparse.ArgumentParser, step: str | None) -> None:
    del step
    p.add_argument("--gate-config", metavar="YAML",
                   help="the gate's policy: every threshold it decides by (default configs/gate.yaml)")
    p.add_argument("--expected", metavar="FOLDER",
                   help="the expected statuses and graph breaks, and the flaky list (default configs/expected)")


def missing_section(missing: Sequence[str]) -> str:
    """What the report says of the scheduled nights that never ran."""
    if not missing:
        return ""
    return (f"\n## Missing nights\n\nNo scheduled night ran on {listed_dates(missing)}: the schedule may "
            "have been disabled (GitHub turns off a public repository's schedule after 60 days without "
            "activity on its default branch) or the run never started; see docs/nightly.md.\n")


def _broken_history(root: Path, verdict: Verdict) -> Verdict:
    """A night whose results branch exists but could not be read judged
    nothing against it, whatever it found: unjudged at best, and saying why."""
    state = read_state(root)
    if not state.get("error"):
        return verdict
    why = f"the results branch {state.get('branch', '')} exists but could not be read: {state['error']}"
    worse = verdict.state if verdict.exit_code == 1 else UNJUDGED
    return replace(verdict, state=worse, reasons=(*verdict.reasons, why))


def write(folder: Path, verdict: Verdict, judgement: expected.Judgement, missing: Sequence[str] = ()) -> None:
    markdown = render.markdown(verdict) + "\n" + judgement.markdown() + missing_section(missing)
    document = {**verdict.to_json(), "missing_nights": list(missing)}
    (folder / COMPARE_MD).write_text(markdown, encoding="utf-8")
    (folder / VERDICT_FILE).write_text(json.dumps(store.plain(document), indent=1) + "\n", encoding="utf-8")
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        with open(summary, "a", encoding="utf-8") as out:
            out.write(markdown + "\n")


def run(root: Path, date: str, policy: Policy, expected_folder: str | None = None) -> int:
    """The gate step for night ``date`` under ``root``; its exit status."""
    folder = root / date
    if not (folder / RESULT).is_file():
        raise UsageError(f"{folder / RESULT} not found: run (or merge) the night first")
    missing = missing_before(root, date)
    if missing:
        print(f"nightly gate: MISSING NIGHTS: no scheduled night ran on {listed_dates(missing)}", file=sys.stderr)
    try:
        judgement = expected.judge(expected.run_rows(folder / RESULT), expected.load(expected_folder))
        verdict = judge.judge_night(root, date, policy, judgement, expected.flaky_failures(judgement))
    except (OSError, ValueError, UnicodeDecodeError) as err:
        raise UsageError(str(err).splitlines()[0] if str(err) else type(err).__name__) from None
    verdict = _broken_history(root, verdict)
    print(render.console(verdict), end="")
    write(folder, verdict, judgement, missing)
    return verdict.exit_code


def gate(args: argparse.Namespace) -> int:
    """Judge the night by the policy of ``--gate-config``."""
    policy = Policy.load(args.gate_config)
    try:
        expected.load(args.expected)
    except expected.ExpectedError as err:
        raise UsageError(str(err)) from None
    return run(args.root, args.date, policy, args.expected)
