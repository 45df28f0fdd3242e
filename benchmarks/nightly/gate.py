"""The nightly gate: judge a night against a stable baseline, re-measure
what got slower before failing, and say loudly what could not be judged.

``gate(args)`` is the ``nightly gate`` step; ``run(root, date, policy, ...)``
does the work:

1. the baseline (``history.choose_baseline``): by default the paired ratios
   of the last K complete nights pooled; partial nights are never used;
2. ``compare.compare`` of tonight against it; tonight's absent rows are
   ``missing`` when tonight is partial (``night.json``);
3. when rows are ``slower`` or ``new failure``, those experiments alone are
   measured again in this job with the night's runner settings
   (``remeasure``) and compared with the same baseline; a row stays slower
   (failing) only if the re-run agrees (``compare.confirm``);
4. ``compare.md``, ``compare.json`` and ``compare.png`` beside the night,
   the markdown also appended to ``$GITHUB_STEP_SUMMARY`` when set.

A night with no baseline says so in the first line of its summary and
passes -- unless a results branch exists and could not be read
(``night.read_state``), which fails: a broken history must not look like a
first night.

Exit status: 0 pass, 1 fail, 2 bad input (``UsageError``).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from benchmarks import cli
from benchmarks.cli import compare as compare_cli
from benchmarks.nightly import history
from benchmarks.nightly.night import (COMPARE_MD, COMPARE_PNG, CONFIRM_DIR, NIGHT_FILE, RESULT, VERDICT_FILE,
                                      Night, date_arg, read_state)
from benchmarks.results import compare, plots
from benchmarks.usage import UsageError


def nights_arg(text: str) -> int:
    if not text.strip().isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number of nights >= 1, got {text!r}")
    return int(text)


def add_arguments(p: argparse.ArgumentParser, step: str | None) -> None:
    p.add_argument("--baseline-nights", type=nights_arg, default=history.DEFAULT_NIGHTS, metavar="K",
                   help="judge against the paired ratios of the last K complete nights pooled "
                        f"(default {history.DEFAULT_NIGHTS}; 1: night to night)")
    p.add_argument("--pin", type=date_arg, metavar="DATE", help="judge against this complete night alone")
    p.add_argument("--previous", type=Path, metavar="CSV", help="judge against this run alone")
    p.add_argument("--no-confirm", dest="confirm", action="store_false",
                   help="fail on slower rows without measuring them again first")
    compare_cli.add_policy(p)


@dataclass(frozen=True)
class Policy:
    """How rows are judged (``compare.compare``'s parameters)."""

    threshold: float = 0.05
    alpha: float = 0.05
    min_samples: int = 5
    latency_criterion: bool = False
    allow_removed: bool = False
    fail_on_inconclusive: bool = False

    def kwargs(self) -> dict:
        return dict(threshold=self.threshold, alpha=self.alpha, min_samples=self.min_samples,
                    latency_criterion=self.latency_criterion, allow_removed=self.allow_removed,
                    fail_on_inconclusive=self.fail_on_inconclusive)


# (night, experiments, output CSV) -> "" once measured, else why not.
Remeasure = Callable[[Night, Sequence, Path], str]


def _confirmed(comparison: compare.Comparison, baseline: history.Baseline, night: Night,
               policy: Policy, remeasure: Remeasure | None) -> compare.Comparison:
    slower = [row.key for row in comparison.rows if row.mark in compare.RECHECKED]
    if not slower:
        return comparison
    if remeasure is None:
        return compare.confirm(comparison, None, "re-runs turned off (--no-confirm)")
    out = night.folder / CONFIRM_DIR / RESULT
    why = remeasure(night, slower, out)
    if not out.is_file():
        return compare.confirm(comparison, None, why or "the re-run wrote no results")
    try:
        rerun = compare.compare(list(baseline.runs), out, **policy.kwargs())
    except (OSError, ValueError) as err:
        return compare.confirm(comparison, None, f"the re-run's results are unreadable: {err}")
    return compare.confirm(comparison, rerun, why)


def judge(root: Path, date: str, baseline: history.Baseline, policy: Policy,
          remeasure: Remeasure | None = None) -> compare.Comparison:
    """Night ``date`` compared with ``baseline``, slower rows re-measured."""
    night = Night.read(root / date)
    comparison = compare.compare(list(baseline.runs), night.csv, **policy.kwargs(),
                                 baseline=baseline.describe(), old_label=baseline.label(),
                                 partial=night.partial)
    return _confirmed(comparison, baseline, night, policy, remeasure)


# --------------------------------------------------------------------------
# No baseline


def no_baseline(root: Path, date: str, baseline: history.Baseline) -> tuple[str, str, int]:
    """The summary, verdict and exit status of a night with nothing to compare with."""
    state = read_state(root)
    passed_over = [*baseline.skipped, *baseline.unreadable]
    if state.get("error"):
        why, code = (f"the results branch {state.get('branch', '')} exists but could not be read: "
                     f"{state['error']}"), 1
    elif baseline.unreadable:
        why, code = f"no earlier night could be read ({'; '.join(baseline.unreadable)})", 1
    elif passed_over:
        why, code = f"no complete earlier night ({'; '.join(passed_over)})", 0
    elif state.get("exists"):
        why, code = f"the results branch {state.get('branch', '')} holds no earlier night", 0
    else:
        why, code = f"first night under {root}", 0
    verdict = "FAIL" if code else "PASS"
    text = (f"# NO BASELINE: night {date} was not compared with anything ({verdict})\n\n"
            f"{why}.\n")
    return text, f"{verdict} (no baseline: {why})", code


# --------------------------------------------------------------------------
# The step


def _write(folder: Path, markdown: str, json_text: str) -> None:
    (folder / COMPARE_MD).write_text(markdown, encoding="utf-8")
    (folder / VERDICT_FILE).write_text(json_text, encoding="utf-8")
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        with open(summary, "a", encoding="utf-8") as out:
            out.write(markdown + "\n")


def run(root: Path, date: str, policy: Policy, *, window: int = history.DEFAULT_NIGHTS,
        pin: str | None = None, previous: Path | None = None,
        remeasure: Remeasure | None = None) -> int:
    """The gate step for night ``date`` under ``root``; its exit status."""
    folder = root / date
    if not (folder / RESULT).is_file():
        raise UsageError(f"{folder / RESULT} not found: run (or merge) the night first")
    baseline = history.choose_baseline(root, date, window, pin, previous)
    if not baseline.runs:
        text, verdict, code = no_baseline(root, date, baseline)
        print(text, file=sys.stderr, end="")
        _write(folder, text, json.dumps({"verdict": verdict, "exit_code": code, "baseline": None,
                                         "rows": []}, indent=1) + "\n")
        return code
    print(f"nightly gate: baseline: {baseline.describe()}", file=sys.stderr)
    try:
        comparison = judge(root, date, baseline, policy, remeasure)
    except (OSError, ValueError) as err:
        raise UsageError(str(err).splitlines()[0] if str(err) else type(err).__name__) from None
    print(compare.render_console(comparison), end="")
    _write(folder, compare.render_markdown(comparison), compare.render_json(comparison))
    plots.plot_comparison(comparison, folder / COMPARE_PNG)
    return compare.exit_code(comparison)


# --------------------------------------------------------------------------
# The confirmation re-run


def remeasure(night: Night, keys: Sequence, out: Path) -> str:
    """The gate's confirmation re-run: the experiments ``keys`` measured
    again into ``out``, a model at a time, with the settings the night's
    ``night.json`` records (its runner flags; ``--only`` the model, not the
    night's filters); "" once measured, else why not."""
    if not night.runner:
        return f"no re-run: {night.folder / NIGHT_FILE} does not record the runner's settings"
    by_model: dict[str, list[str]] = {}
    for key in keys:
        by_model.setdefault(key.name, [])
        if key.backend not in by_model[key.name]:
            by_model[key.name].append(key.backend)
    for index, (model, backends) in enumerate(by_model.items()):
        print(f"nightly gate: measuring {model} ({', '.join(backends)}) again", file=sys.stderr)
        code = cli.run_benchmarks(night.runner.get("flags", []), backends, only=[model], output=out,
                                  overwrite=index == 0, resume=index > 0)
        if code != 0:
            return f"the re-run of {model} exited with status {code}"
    return ""


def gate(args: argparse.Namespace) -> int:
    """Judge the night: against ``--previous``, a ``--pin``-ned night or the
    last ``--baseline-nights`` complete nights."""
    compare_cli.check_policy(args)
    policy = Policy(args.threshold, args.alpha, args.min_samples, args.latency_criterion,
                    args.allow_removed, args.fail_on_inconclusive)
    return run(args.root, args.date, policy, window=args.baseline_nights, pin=args.pin,
               previous=args.previous, remeasure=remeasure if args.confirm else None)
