"""The nightly gate: judge a night against a stable baseline, re-measure
what got slower before failing, and say loudly what could not be judged.

``gate(args)`` is the ``nightly gate`` step; ``run(root, date, policy, ...)``
does the work:

1. the baseline (``history.choose_baseline``): by default the paired ratios
   of the last K complete nights pooled; partial nights are never used;
2. ``compare.compare`` of tonight against it; tonight's absent rows are
   ``missing`` when tonight is partial (``night.json``); a row tonight
   shows slower past the floor but not significantly is judged again on
   last night and tonight together against the nights before last night
   (``two_nights``): a slowdown two nights running is ``slower``;
3. the other policies of ``configs/gate.yaml`` (``--gate-config``;
   ``benchmarks.results.policies``): cold first call and peak memory
   against the same baseline, and the pass rate;
4. when rows are ``slower`` or ``new failure`` (steady speedup), or
   ``slower`` by a policy with ``confirm``, those experiments alone are
   measured again in this job with the night's runner settings
   (``remeasure``, once for all of them) and compared with the same
   baseline; a row stays slower (failing) only if the re-run is slower
   too, by a one-sided test, as the re-run asks only whether the night's
   slowdown is there again (``compare.confirm``; ``--confirm-two-sided``:
   tested as the night was; with ``--confirm-with-night`` also when the
   night and the re-run together are slower and the re-run's own change is
   past the floor its units flag); a re-run stopped by SIGINT or SIGTERM (Ctrl-C,
   Slurm's time limit) stops the gate with no verdict;
5. ``compare.md``, ``compare.json`` (with every policy's verdict) and
   ``compare.png`` beside the night, the markdown also appended to
   ``$GITHUB_STEP_SUMMARY`` when set.  The night fails when compare's gate
   does or any policy does.

A night with no baseline says so in the first line of its summary and
passes -- unless its rows fail the expected files, which need no
baseline, or a results branch exists and could not be read
(``night.read_state``), which fails: a broken history must not look like a
first night.

Exit status: 0 pass, 1 fail, 2 bad input (``UsageError``), 130/143 interrupted.
"""
from __future__ import annotations

import argparse
import functools
import json
import os
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Sequence

from benchmarks import cli
from benchmarks.cli import compare as compare_cli
from benchmarks.nightly import history
from benchmarks.nightly.night import (COMPARE_MD, COMPARE_PNG, CONFIRM_DIR, NIGHT_FILE, RESULT, VERDICT_FILE,
                                      Night, date_arg, listed_dates, read_state)
from benchmarks.results import compare, expected, plots, policies, store
from benchmarks.run import signals
from benchmarks.usage import UsageError


# The confirmation re-runs' budget: a wide regression must not outlive the
# job (GitHub cancels it, and the steps after the gate would not record the
# night); rows past it stay as the night measured them, saying why.
CONFIRM_MODELS = 12
CONFIRM_MINUTES = 25


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
    p.add_argument("--pool-every-night", dest="leave_out", action="store_false",
                   help="keep every baseline night in each row's pool, even one whose median ratio is more "
                        f"than {compare.LEAVE_OUT_THRESHOLDS:g} thresholds from the others' (default: left out)")
    p.add_argument("--no-two-nights", dest="two_nights", action="store_false",
                   help="judge each night alone: not also last night and tonight together when tonight "
                        "looks slower but not significantly (default: together too)")
    p.add_argument("--no-confirm", dest="confirm", action="store_false",
                   help="fail on slower rows without measuring them again first")
    p.add_argument("--confirm-two-sided", dest="confirm_one_sided", action="store_false",
                   help="judge a re-run by the night's two-sided test (default: one-sided, as it asks one "
                        "question, whether the slowdown the night found is there again)")
    p.add_argument("--confirm-with-night", action="store_true",
                   help="a re-run not slower on its own confirms a slower row too when the night and the "
                        "re-run pooled are slower and the re-run's change is past the floor (default: the "
                        "re-run alone decides; it ran minutes after the night, on the machine in the same state)")
    compare_cli.add_policy(p)
    p.add_argument("--confirm-models", type=nights_arg, default=CONFIRM_MODELS, metavar="N",
                   help=f"re-measure at most N models (default {CONFIRM_MODELS})")
    p.add_argument("--confirm-minutes", type=nights_arg, default=CONFIRM_MINUTES, metavar="M",
                   help=f"start no re-run after M minutes of re-runs (default {CONFIRM_MINUTES}: with the "
                        "install, merge and dashboard, inside the merge job's 60)")
    p.add_argument("--gate-config", metavar="YAML",
                   help="the policies of the other metrics (first call, peak memory, pass rate) "
                        "and their thresholds (default configs/gate.yaml)")
    p.add_argument("--expected", metavar="FOLDER",
                   help="the expected statuses and graph breaks, and the flaky list (default configs/expected)")


@dataclass(frozen=True)
class Policy:
    """How rows are judged (``compare.compare``'s parameters), and where the
    other metrics' policies are (``gate_config``: None, configs/gate.yaml)."""

    threshold: float = 0.05
    alpha: float = 0.05
    min_samples: int = 5
    latency_criterion: bool = False
    allow_removed: bool = False
    fail_on_inconclusive: bool = False
    gate_config: str | None = None
    units: str = compare.UNIT_PROCESS  # what the test compares (compare.units)
    expected: str | None = None  # the expected files' folder (None: configs/expected)
    leave_out: bool = True  # a baseline night far from the others leaves the row's pool (compare)
    loaded: float | None = compare.LOADED_CORES  # cores: a row timed beside more is inconclusive (compare)
    two_nights: bool = True  # a slowdown two nights running is judged on both together (two_nights)
    # A re-run not slower alone confirms a row when the night and it pooled are (compare.confirm).
    confirm_with_night: bool = False
    # A re-run is tested one-sided (is it slower?), not as the night (compare's alternative).
    confirm_one_sided: bool = True

    def policies(self) -> tuple[policies.Policy, ...]:
        return policies.with_speedup(policies.load_policies(self.gate_config), self.threshold, self.alpha,
                                     self.min_samples)

    def kwargs(self) -> dict:
        return dict(threshold=self.threshold, alpha=self.alpha, min_samples=self.min_samples,
                    latency_criterion=self.latency_criterion, allow_removed=self.allow_removed,
                    fail_on_inconclusive=self.fail_on_inconclusive, units=self.units,
                    leave_out=self.leave_out, loaded=self.loaded)

    @property
    def confirm_alternative(self) -> str:
        """How a re-run is tested (``compare``'s alternative): one-sided with ``confirm_one_sided``."""
        return compare.SLOWER_ONLY if self.confirm_one_sided else compare.TWO_SIDED

    def confirm_kwargs(self) -> dict:
        """``kwargs`` for judging a re-run."""
        return {**self.kwargs(), "alternative": self.confirm_alternative}


# (night, experiments, output CSV) -> "" once measured, else why not.
Remeasure = Callable[[Night, Sequence, Path], str]


def _slower(name: str, comparison: compare.Comparison) -> list:
    """What a re-run settles: steady speedup's slower rows and new failures,
    another metric's slower rows (its failures are speedup's)."""
    marks = compare.RECHECKED if name == "speedup" else (compare.SLOWER,)
    return [row.key for row in comparison.rows if row.mark in marks]


def _confirmed(comparisons: dict[str, compare.Comparison], baseline: history.Baseline, night: Night,
               policy: Policy, configured: Sequence[policies.Policy],
               remeasure: Remeasure | None, two_night_rows: frozenset = frozenset()
               ) -> dict[str, compare.Comparison]:
    """``comparisons`` (by policy name; ``speedup`` always confirmed) with
    their slower rows measured again, all in one re-run; the speedup's
    ``two_night_rows`` (made slower by ``two_nights``) judged as that rule
    judged them (``rerun_comparisons``)."""
    confirming = {"speedup"} | {p.name for p in configured if p.confirm}
    keys = list(dict.fromkeys(k for name, c in comparisons.items() if name in confirming
                              for k in _slower(name, c)))
    if not keys:
        return comparisons

    def settle(rerun_of: Callable[[str], compare.Comparison | None], note: str,
               pooled: compare.Comparison | None = None) -> dict:
        return {name: compare.confirm(c, rerun_of(name), note, pooled if name == "speedup" else None)
                if name in confirming and _slower(name, c) else c
                for name, c in comparisons.items()}

    if remeasure is None:
        return settle(lambda name: None, "re-runs turned off (--no-confirm)")
    out = night.folder / CONFIRM_DIR / RESULT
    why = remeasure(night, keys, out)
    if not out.is_file():
        return settle(lambda name: None, why or "the re-run wrote no results")
    by_name = {p.name: p for p in configured}
    try:
        reruns = {name: policies.judge_metric(by_name[name], list(baseline.runs), [out],
                                              alternative=policy.confirm_alternative)
                  for name, c in comparisons.items() if name in confirming and name != "speedup" and _slower(name, c)}
        pooled = None
        if _slower("speedup", comparisons["speedup"]):
            reruns["speedup"], pooled = rerun_comparisons(baseline, night.csv, out, policy, two_night_rows,
                                                          with_night=policy.confirm_with_night)
    except (OSError, ValueError) as err:
        return settle(lambda name: None, f"the re-run's results are unreadable: {err}")
    return settle(reruns.get, why, pooled)


def rerun_comparisons(baseline: history.Baseline, night_csv: Path, rerun_csv: Path, policy: Policy,
                      two_night_rows: frozenset = frozenset(), with_night: bool = True
                      ) -> tuple[compare.Comparison, compare.Comparison | None]:
    """(the re-run, the night and the re-run pooled; None unless
    ``with_night``), each compared with ``baseline``: what
    ``compare.confirm`` settles the speedup's slower rows by.  A row in
    ``two_night_rows`` (made slower by ``two_nights``) is judged as the
    rule judged it, against the nights before last night
    (tonight's window holds last night, whose own slowdown would otherwise
    sit in the baseline): the re-run in tonight's place, pooled with last
    night -- the rule needed two nights' processes, and one night's alone
    would clear most slowdowns it catches -- and with ``with_night``, last
    night, tonight and the re-run pooled."""
    runs = list(baseline.runs)
    kwargs = policy.confirm_kwargs()
    rerun = compare.compare(runs, rerun_csv, **kwargs)
    pooled = compare.compare(runs, [night_csv, rerun_csv], **kwargs) if with_night else None
    basis = _before_last_night(baseline) if two_night_rows else None
    if basis is None:
        return rerun, pooled
    last_csv, before = basis
    rerun = _with_rows(rerun, compare.compare(list(before.runs), [last_csv, rerun_csv], **kwargs),
                       two_night_rows)
    if with_night:
        together = compare.compare(list(before.runs), [last_csv, night_csv, rerun_csv], **kwargs)
        pooled = _with_rows(pooled, together, two_night_rows)
    return rerun, pooled


def _with_rows(comparison: compare.Comparison, other: compare.Comparison, keys: frozenset) -> compare.Comparison:
    """``comparison`` with its rows of ``keys`` taken from ``other``."""
    theirs = {row.key: row for row in other.rows}
    return replace(comparison, rows=[theirs.get(row.key, row) if row.key in keys else row
                                     for row in comparison.rows])


def _before_last_night(baseline: history.Baseline) -> tuple[Path, history.Baseline] | None:
    """(last night's results, the window of nights before it) for judging
    two nights together, or None: only with a window of nights (not
    ``--pin`` or ``--previous``) and two nights at least before last
    night.  Last night is the last complete night."""
    if baseline.kind != "nights" or baseline.window < 2 or not baseline.runs:
        return None
    last_csv = Path(baseline.runs[-1])
    before = history.choose_baseline(last_csv.parent.parent, baseline.dates[-1], baseline.window)
    return (last_csv, before) if len(before.runs) >= 2 else None


def two_nights(comparison: compare.Comparison, baseline: history.Baseline, night_csv: Path,
               policy: Policy) -> compare.Comparison:
    """``comparison`` with each row that tonight shows slower past the floor
    its units flag (``compare.flag_at``) but not significantly judged again
    on last night and tonight pooled, against the window of nights before
    last night: ``slower`` when the two together are.  A regression that
    landed yesterday and was missed then is caught on its second night with
    twice the processes (docs/methodology.md, the gate's power); a one-off
    slow night does not fail the next, whose own change must be past the
    floor too.  Only with a window of nights (not ``--pin`` or
    ``--previous``) and two nights at least before last night, for rows
    last night measured too, and only for per-process units.  Last night
    is the last complete night.  A row it makes slower is re-run as any
    other, the re-run judged against the nights before last night too
    (``rerun_comparisons``): the rule's own power, re-run included, is what
    the power benchmark's ``gate, by the second night`` measures."""
    candidates = {row.key for row in comparison.rows if row.mark == compare.NO_CHANGE
                  and row.unit == compare.UNIT_PROCESS and row.change >= compare.flag_at(comparison.threshold, row.unit)}
    basis = _before_last_night(baseline) if candidates else None
    if basis is None:
        return comparison
    last_csv, before = basis
    last = baseline.dates[-1]
    together = {row.key: row for row in compare.compare(list(before.runs), [last_csv, night_csv],
                                                        **policy.kwargs()).rows}
    rows = []
    for row in comparison.rows:
        both = together.get(row.key)
        # Last night must have measured the row too (else "together" is tonight alone).
        if (row.key in candidates and both is not None and both.mark == compare.SLOWER and both.unit == row.unit
                and both.n_new > row.n_new):
            row = replace(row, mark=compare.SLOWER, note=compare.joined(
                row.note, f"slower two nights running: {last} and this night together {both.change:+.1%}, "
                          f"p {both.p_value:.3f}, against the {len(before.runs)} night(s) before {last}"))
        rows.append(row)
    return replace(comparison, rows=rows)


EXPECTED_POLICY = policies.Policy("expected", threshold=0.0, confirm=False)


def expected_verdict(judgement: expected.Judgement) -> policies.Verdict:
    """The expected files' judgement as a policy's verdict: it fails on a
    new failure or more graph breaks, naming each."""
    return policies.Verdict(EXPECTED_POLICY, None, tuple(judgement.failing), failed=judgement.failed,
                            judged=len(judgement.no_file) < len({c.group for c in judgement.checks}),
                            detail=judgement.line().split(": ", 1)[1])


def excuse_flaky(comparison: compare.Comparison, flaky: set[tuple[str, str]]) -> compare.Comparison:
    """``comparison`` with the new failures of flaky models ``unconfirmed``:
    reported, failing neither the gate nor the pass rate, and not re-run."""
    rows = [replace(row, mark=compare.UNCONFIRMED, note="; ".join(
                n for n in (row.note, "flaky (the expected files' flaky list): reported, not failing") if n))
            if row.mark == compare.NEW_FAILURE and (row.name, row.backend) in flaky else row
            for row in comparison.rows]
    return replace(comparison, rows=rows)


def judge_all(root: Path, date: str, baseline: history.Baseline, policy: Policy,
              remeasure: Remeasure | None = None
              ) -> tuple[compare.Comparison, list[policies.Verdict], expected.Judgement]:
    """Night ``date`` compared with ``baseline`` by every policy, slower
    rows re-measured, and with the expected files: the steady-state
    comparison, the policies' verdicts (the expected files' last) and the
    expected files' judgement."""
    night = Night.read(root / date)
    configured = policy.policies()
    judgement = expected.judge(expected.run_rows(night.csv), expected.load(policy.expected))
    labels = dict(baseline=baseline.describe(), old_label=baseline.label(), partial=night.partial)
    comparison = compare.compare(list(baseline.runs), night.csv, **policy.kwargs(), **labels)
    one_night = {row.key for row in comparison.rows if row.mark == compare.SLOWER}
    if policy.two_nights:
        comparison = two_nights(comparison, baseline, night.csv, policy)
    two_night_rows = frozenset(row.key for row in comparison.rows if row.mark == compare.SLOWER) - one_night
    comparison = excuse_flaky(comparison, expected.flaky_failures(judgement))
    others = policies.metric_comparisons(configured, list(baseline.runs), [night.csv], **labels)
    settled = _confirmed({"speedup": comparison, **others}, baseline, night, policy, configured, remeasure,
                         two_night_rows)
    failed_before = {row.key for row in comparison.rows if row.mark == compare.NEW_FAILURE}
    comparison = settled.pop("speedup")
    # A new failure the re-run did not reproduce is not one by the expected files either.
    judgement = expected.rerun_passed(judgement, {(row.name, row.backend) for row in comparison.rows
                                                  if row.key in failed_before and row.mark != compare.NEW_FAILURE})
    found = policies.verdicts(configured, comparison, settled) + [expected_verdict(judgement)]
    return comparison, found, judgement


def judge(root: Path, date: str, baseline: history.Baseline, policy: Policy,
          remeasure: Remeasure | None = None) -> compare.Comparison:
    """Night ``date`` compared with ``baseline``, slower rows re-measured."""
    return judge_all(root, date, baseline, policy, remeasure)[0]


def night_verdict(comparison: compare.Comparison, found: Sequence[policies.Verdict]) -> tuple[str, int]:
    """The night's verdict and exit status: compare's gate, and the failed policies named."""
    verdict, code = compare.verdict(comparison), compare.exit_code(comparison)
    failed = [name for name in policies.failed(found) if name != "speedup"]
    if failed:
        named = f"failed policies: {', '.join(failed)}"
        verdict = f"{verdict}; {named}" if verdict.startswith("FAIL") else f"FAIL ({named})"
        code = 1
    return verdict, code


def exit_code_before(root: Path, date: str, stored: dict, policy: Policy | None = None,
                     window: int | None = None) -> int:
    """Night ``date``'s exit status before its re-run, from its stored
    verdict ``stored``: as the gate recorded it, or, for a verdict written
    before that was recorded, the night judged again from its files against
    the same baseline with nothing re-run (every policy, first calls and
    memory too, as the gate saw it before re-running)."""
    if "exit_code_before" in stored:
        return stored["exit_code_before"]
    baseline = history.choose_baseline(root, date, window or history.DEFAULT_NIGHTS)
    comparison, found, _ = judge_all(root, date, baseline, policy or Policy(), remeasure=None)
    return night_verdict(comparison, found)[1]


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


def missing_section(missing: Sequence[str]) -> str:
    """What the report says of the scheduled nights that never ran."""
    if not missing:
        return ""
    return (f"\n## Missing nights\n\nNo scheduled night ran on {listed_dates(missing)}: the schedule may "
            "have been disabled (GitHub turns off a public repository's schedule after 60 days without "
            "activity on its default branch) or the run never started; see docs/nightly.md.\n")


def _write(folder: Path, markdown: str, json_text: str, missing: Sequence[str] = ()) -> None:
    markdown += missing_section(missing)
    json_text = json.dumps({**json.loads(json_text), "missing_nights": list(missing)}, indent=1) + "\n"
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
    missing = history.missing_before(root, date)
    if missing:
        print(f"nightly gate: MISSING NIGHTS: no scheduled night ran on {listed_dates(missing)}", file=sys.stderr)
    if not baseline.runs:
        text, verdict, code = no_baseline(root, date, baseline)
        # The expected files need no baseline: a first night is held to them too.
        try:
            judgement = expected.judge(expected.run_rows(folder / RESULT), expected.load(policy.expected))
        except (OSError, ValueError) as err:
            raise UsageError(str(err).splitlines()[0] if str(err) else type(err).__name__) from None
        found = [expected_verdict(judgement)]
        if judgement.failed:
            verdict, code = f"FAIL ({verdict.split(' (', 1)[1][:-1]}; failed policies: expected)", 1
            text = text.replace(" (PASS)\n", " (FAIL: failed policies: expected)\n", 1)
        print(text, file=sys.stderr, end="")
        print("policies:\n" + policies.render(found), end="")
        text += "\n" + judgement.markdown()
        _write(folder, text, json.dumps(store.plain({"verdict": verdict, "exit_code": code, "baseline": None,
                                                     "rows": [], "policies": policies.to_json(found),
                                                     "expected": judgement.to_json()}),
                                        indent=1, allow_nan=False) + "\n", missing)
        return code
    print(f"nightly gate: baseline: {baseline.describe()}", file=sys.stderr)
    try:
        comparison, found, judgement = judge_all(root, date, baseline, policy, remeasure)
    except (OSError, ValueError) as err:
        raise UsageError(str(err).splitlines()[0] if str(err) else type(err).__name__) from None
    verdict, code = night_verdict(comparison, found)
    if verdict != compare.verdict(comparison):  # a policy failed a night compare's table passes
        print(f"night {date}: {verdict}")
    print(compare.render_console(comparison) + "policies:\n" + policies.render(found), end="")
    document = json.loads(compare.render_json(comparison))
    document.update(verdict=verdict, exit_code=code, policies=policies.to_json(found),
                    expected=judgement.to_json())
    # The night's exit status had nothing been re-run: every policy's.
    document["exit_code_before"] = max([code, *(p["exit_code_before"] for p in document["policies"])])
    markdown = (compare.render_markdown(comparison) + "\n## Policies\n\n" + policies.render(found, markdown=True)
                + "\n" + judgement.markdown())
    if verdict != compare.verdict(comparison):
        markdown = f"**Night: {verdict}**\n\n" + markdown
    _write(folder, markdown, json.dumps(store.plain(document), indent=1, allow_nan=False) + "\n", missing)
    plots.plot_comparison(comparison, folder / COMPARE_PNG)
    return code


# --------------------------------------------------------------------------
# The confirmation re-run


def remeasure(night: Night, keys: Sequence, out: Path, *, models: int = CONFIRM_MODELS,
              minutes: float = CONFIRM_MINUTES, clock: Callable[[], float] = time.monotonic) -> str:
    """The gate's confirmation re-run: the experiments ``keys`` measured
    again into ``out``, a model at a time, with the settings the night's
    ``night.json`` records (its runner flags; ``--only`` the model, not the
    night's filters); "" once measured, else why not.  At most ``models``
    models, and none started after ``minutes`` of re-runs: the rest are
    not re-measured, and the returned note says so."""
    if not night.runner:
        return f"no re-run: {night.folder / NIGHT_FILE} does not record the runner's settings"
    by_model: dict[str, list[str]] = {}
    for key in keys:
        by_model.setdefault(key.name, [])
        if key.backend not in by_model[key.name]:
            by_model[key.name].append(key.backend)
    started = clock()
    for index, (model, backends) in enumerate(by_model.items()):
        spent = (clock() - started) / 60
        if index >= models or spent >= minutes:
            return (f"confirmation budget spent ({models} model(s), {minutes:g} min): re-measured "
                    f"{index} of {len(by_model)} model(s) in {spent:.0f} min; the rest were not")
        print(f"nightly gate: measuring {model} ({', '.join(backends)}) again", file=sys.stderr)
        code = cli.run_benchmarks(night.runner.get("flags", []), backends, only=[model], output=out,
                                  overwrite=index == 0, resume=index > 0)
        signals.reraise(code)  # interrupted: no verdict on a re-run cut short
        if code != 0:
            return f"the re-run of {model} exited with status {code}"
    return ""


def gate(args: argparse.Namespace) -> int:
    """Judge the night: against ``--previous``, a ``--pin``-ned night or the
    last ``--baseline-nights`` complete nights."""
    compare_cli.check_policy(args)
    policy = Policy(args.threshold, args.alpha, args.min_samples, args.latency_criterion,
                    args.allow_removed, args.fail_on_inconclusive, args.gate_config, expected=args.expected,
                    leave_out=args.leave_out, loaded=args.max_other_cores, two_nights=args.two_nights,
                    confirm_with_night=args.confirm_with_night, confirm_one_sided=args.confirm_one_sided)
    try:
        policy.policies()
        expected.load(policy.expected)
    except (policies.PolicyError, expected.ExpectedError) as err:
        raise UsageError(str(err)) from None
    budgeted = functools.partial(remeasure, models=args.confirm_models, minutes=args.confirm_minutes)
    return run(args.root, args.date, policy, window=args.baseline_nights, pin=args.pin,
               previous=args.previous, remeasure=budgeted if args.confirm else None)
