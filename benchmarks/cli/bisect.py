"""``runner.py bisect GOOD BAD [runner flags]``: the first commit between
GOOD and BAD at which a measurement regressed.

Each commit it probes is checked out in a git worktree of this repository
(detached, in a temporary folder) and measured by ``runner.py`` run in that
worktree, with the worktree first on ``PYTHONPATH`` and as the working
folder, so the parent and every worker import that commit's code (the same
interpreter and venv).  A probe measures the commit and GOOD in turns, in
separate processes, GOOD - probe - probe - GOOD ... (``--rounds`` pairs), so
that whatever the machine does meanwhile hits both; the runs of each side are
pooled and judged by the gate's own test (``compare.compare``: the
backend/baseline ratio paired within each run, compared across the two
sides; ``--threshold``/``--alpha``/``--min-samples`` as for ``compare``), on
the metric's view of the runs (``benchmarks.results.policies``).

First BAD is measured against GOOD: the rows that regressed there (slower,
or a new failure) are the ones followed; none: "not reproduced", exit 1.
Then a binary search: a probe is bad when a followed row regressed the
same way at it; good when none did and, for a slowdown, the change's 95%
interval stays below half the change found at BAD (a commit whose noise
cannot tell it from BAD is not called good: it is measured again).  A probe that cannot be judged (the run
wrote no results: a build error; too few samples or a row that failed where
a slowdown is followed) is measured again (``--retries``), then skipped as
``git bisect skip`` does: the search goes on around it, and when only
skipped commits are left the answer is the range.

Output: a line per probe, then ``first bad commit: <sha> <subject>`` with the
change at it and at its parent (ratio of medians against GOOD, 95%
interval).  Exit status: 0 found, 1 not reproduced or only a range, 2 bad
input.
"""
from __future__ import annotations

import argparse
import math
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from benchmarks.cli.compare import add_policy, check_policy
from benchmarks.cli.flags import PROG, build_parser
from benchmarks.usage import Parser, UsageError

GOOD, BAD, SKIP = "good", "bad", "skip"
METRIC_NAMES = {"speedup": "speedup", "first-call": "first_call", "memory": "memory", "accuracy": "accuracy"}
# Runner flags bisect sets itself: where the runs go, what they measure.
OWN_FLAGS = ("output", "output_directory", "resume", "overwrite", "list_models", "dry_run")
RESULT = "run.csv"


# --------------------------------------------------------------------------
# The repository


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=False)
    if done.returncode:
        raise UsageError(f"git {' '.join(args)}: {(done.stderr.strip() or 'failed').splitlines()[0]}")
    return done.stdout.strip()


def commit_of(repo: Path, rev: str) -> str:
    try:
        return git(repo, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")
    except UsageError:
        raise UsageError(f"{rev!r} names no commit of {repo}") from None


def subject(repo: Path, sha: str) -> str:
    return git(repo, "log", "-1", "--format=%s", sha)


def commits_between(repo: Path, good: str, bad: str) -> list[str]:
    """The commits after GOOD up to BAD, oldest first, along BAD's first parents."""
    if good == bad:
        raise UsageError("GOOD and BAD are the same commit")
    ancestor = subprocess.run(["git", "-C", str(repo), "merge-base", "--is-ancestor", good, bad],
                              capture_output=True, check=False)
    if ancestor.returncode:
        raise UsageError(f"GOOD {good[:12]} is not an ancestor of BAD {bad[:12]}")
    return git(repo, "rev-list", "--reverse", "--first-parent", "--ancestry-path",
               f"{good}..{bad}").split()


# --------------------------------------------------------------------------
# Measuring


@dataclass
class Runs:
    """The result CSVs of the runs of one commit in one probe."""

    commit: str
    csvs: list[Path] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)


class Lab:
    """Worktrees and runs of ``runner.py`` under one temporary folder."""

    def __init__(self, repo: Path, flags: Sequence[str], folder: Path, echo: Callable[[str], None]):
        self.repo, self.flags, self.folder, self.echo = repo, list(flags), folder, echo
        self.trees: dict[str, Path] = {}
        self.count = 0

    def tree(self, sha: str) -> Path:
        if sha not in self.trees:
            path = self.folder / "trees" / sha[:12]
            git(self.repo, "worktree", "add", "--detach", "--quiet", str(path), sha)
            self.trees[sha] = path
        return self.trees[sha]

    def environment(self, tree: Path) -> dict:
        """The worktree's code first on the import path; the repository's
        own checkout off it, so nothing is imported from the wrong commit."""
        own = {Path(self.repo).resolve(), Path.cwd().resolve()}
        paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
                 if p and Path(p).resolve() not in own]
        return {**os.environ, "PYTHONPATH": os.pathsep.join([str(tree), *paths])}

    def run(self, sha: str) -> Path | None:
        """One ``runner.py`` run of commit ``sha``: its CSV, or None."""
        self.count += 1
        out = self.folder / "runs" / f"{self.count:03d}-{sha[:12]}" / RESULT
        tree = self.tree(sha)
        done = subprocess.run([sys.executable, "runner.py", *self.flags, "--output", str(out)],
                              cwd=tree, env=self.environment(tree), capture_output=True, text=True,
                              check=False)
        (out.parent / "log.txt").write_text(done.stdout + done.stderr, encoding="utf-8")
        if not out.is_file():
            lines = (done.stderr.strip() or done.stdout.strip() or f"exit status {done.returncode}").splitlines()
            self.echo(f"  run of {sha[:12]} wrote no results: {lines[-1]}")
            return None
        return out

    def close(self) -> None:
        for path in self.trees.values():
            subprocess.run(["git", "-C", str(self.repo), "worktree", "remove", "--force", str(path)],
                           capture_output=True, check=False)
        subprocess.run(["git", "-C", str(self.repo), "worktree", "prune"], capture_output=True, check=False)


def measure_in_turns(lab: Lab, good: Runs, probe: Runs, rounds: int) -> None:
    """``rounds`` pairs of runs, GOOD-probe, probe-GOOD, ... (ABBA: a drift
    that grows over the probe hits both sides alike)."""
    for n in range(rounds):
        for side in ((good, probe) if n % 2 == 0 else (probe, good)):
            csv = lab.run(side.commit)
            (side.csvs.append(csv) if csv else side.failures.append(side.commit))


# --------------------------------------------------------------------------
# Judging


@dataclass(frozen=True)
class Verdict:
    """A probe's state and, per followed row, its mark and change against GOOD."""

    state: str
    rows: dict  # key -> (mark, change, low, high)
    why: str = ""


def judge(good: Runs, probe: Runs, metric: str, policy: argparse.Namespace,
          follow: dict | None = None) -> Verdict:
    """The probe against GOOD. ``follow``: key -> (mark, change) at BAD
    (None: judge every row, as for BAD itself)."""
    from benchmarks.results import compare, pairing, policies, stats

    if not probe.csvs or not good.csvs:
        return Verdict(SKIP, {}, "no results (build error or a crash: see the logs)")
    view = policies.METRICS[metric]
    comparison = compare.compare(good.csvs, probe.csvs, policy.threshold, policy.alpha,
                                 policy.min_samples, load=view.load,
                                 loaded=policy.max_other_cores if metric == "speedup" else None)
    old, _ = pairing.load_baseline(good.csvs, view.load)
    new, _ = pairing.load_baseline(probe.csvs, view.load)
    rows, states = {}, []
    for row in comparison.rows:
        if follow is not None and row.key not in follow:
            continue
        low = high = math.nan
        if row.key in old and row.key in new and old[row.key].ratios and new[row.key].ratios:
            low, high = (v - 1 for v in stats.speedup_ci(new[row.key].ratios, old[row.key].ratios))
        rows[row.key] = (row.mark, row.change, low, high, row.note)
        # At BAD itself, "not reproduced" needs the interval below the
        # threshold: a noisy "no change" is measured again first.
        at_bad = follow.get(row.key) if follow is not None else (None, 2 * policy.threshold)
        states.append(_state(row.mark, *at_bad, high))
    if follow is not None and len(rows) < len(follow):
        states.append(SKIP)
    if BAD in states:
        return Verdict(BAD, rows)
    if states and all(s == GOOD for s in states):
        return Verdict(GOOD, rows)
    return Verdict(SKIP, rows, "cannot tell (a failure, too few samples, or an interval reaching half the "
                               "change at BAD): " + ", ".join(sorted({m for m, *_ in rows.values()})))


def _state(mark: str, at_bad: str | None, bad_change: float = math.nan, high: float = math.nan) -> str:
    """Bad when the row regressed as it did at BAD (at BAD itself: either
    way). Good, for a slowdown of ``bad_change`` at BAD, only when the
    change's upper bound ``high`` is below half of it: "no change" under
    noise as wide as the regression is no evidence (at BAD itself,
    ``bad_change`` is twice the threshold: below the threshold)."""
    from benchmarks.results import compare

    regressed = {compare.SLOWER, compare.NEW_FAILURE} if at_bad is None else {at_bad}
    if mark in regressed:
        return BAD
    if at_bad in (None, compare.SLOWER) and mark in (compare.NO_CHANGE, compare.FASTER):
        return GOOD if math.isfinite(high) and math.isfinite(bad_change) and high < bad_change / 2 else SKIP
    if at_bad == compare.NEW_FAILURE and mark in (compare.NO_CHANGE, compare.FASTER, compare.INCONCLUSIVE,
                                                  compare.SLOWER):
        return GOOD  # it runs (the failure is what is followed, not its speed)
    return SKIP


def describe(key, row) -> str:
    mark, change, low, high, note = row
    text = f"{key.name}/{key.backend}: {mark}"
    if math.isfinite(change):
        text += f", ratio {1 + change:.3f}x"
        if math.isfinite(low):
            text += f" [{1 + low:.3f}, {1 + high:.3f}]"
    return text + (f" ({note})" if note and not math.isfinite(change) else "")


# --------------------------------------------------------------------------
# The search


@dataclass
class Search:
    lab: Lab
    good: str
    commits: list[str]
    metric: str
    policy: argparse.Namespace
    rounds: int
    retries: int
    echo: Callable[[str], None]
    probes: int = 0
    verdicts: dict = field(default_factory=dict)

    def probe(self, sha: str, follow: dict | None) -> Verdict:
        self.probes += 1
        good, runs = Runs(self.good), Runs(sha)
        verdict = None
        for attempt in range(1 + self.retries):
            measure_in_turns(self.lab, good, runs, self.rounds)
            verdict = judge(good, runs, self.metric, self.policy, follow)
            if verdict.state != SKIP:
                break
        where = "BAD" if sha == self.commits[-1] else f"{self.commits.index(sha) + 1}/{len(self.commits)}"
        rows = "; ".join(describe(k, r) for k, r in verdict.rows.items()) or verdict.why
        self.echo(f"probe {self.probes}: {sha[:12]} ({where}) {subject(self.lab.repo, sha)!r}: "
                  f"{verdict.state}: {rows} ({len(runs.csvs)} run(s) of it, {len(good.csvs)} of GOOD)")
        self.verdicts[sha] = verdict
        return verdict

    def run(self, follow: dict) -> tuple[int, list[int]]:
        """(index of the first bad commit, or -1; indices left untested: a range)."""
        lo, hi, skipped = -1, len(self.commits) - 1, set()
        while True:
            open_ = [i for i in range(lo + 1, hi) if i not in skipped]
            if not open_:
                return (hi, []) if hi - lo == 1 else (-1, [i for i in range(lo + 1, hi + 1)])
            mid = (lo + hi) // 2
            pick = min(open_, key=lambda i: (abs(i - mid), i))
            state = self.probe(self.commits[pick], follow).state
            if state == BAD:
                hi = pick
            elif state == GOOD:
                lo = pick
            else:
                skipped.add(pick)


# --------------------------------------------------------------------------
# The command line


def _parser(prog: str) -> argparse.ArgumentParser:
    parser = Parser(
        prog=prog, allow_abbrev=False,  # a runner flag is never taken for an abbreviation of ours
        usage=f"{prog} GOOD BAD [--metric M] [--rounds N] [--retries N] [--keep] [gate flags] [runner.py flags]",
        description="Find the first commit between GOOD and BAD at which a measurement regressed: "
        "each probed commit is measured in its own git worktree, in turns with GOOD, and judged as "
        "the gate judges. Other flags are runner.py's (which models, backends, baseline, repeats). "
        "Exit status: 0 found, 1 not reproduced or only a range of skipped commits, 2 bad input.",
    )
    parser.add_argument("--metric", choices=sorted(METRIC_NAMES), default="speedup",
                        help="what regressed: speedup (steady latency ratio, the default), first-call "
                        "(cold first call), memory (peak, device if recorded else host), accuracy "
                        "(a model that starts failing)")
    parser.add_argument("--rounds", type=int, default=2,
                        help="runs of each side per probe, in turns (default 2; a per-run metric, "
                        "first-call or memory, needs at least --min-samples)")
    parser.add_argument("--retries", type=int, default=1,
                        help="times a probe that could not be judged is measured again before it is "
                        "skipped (default 1)")
    parser.add_argument("--keep", action="store_true", help="keep the runs' files (their folder is printed)")
    # Its two sides are measured in turns, so a load beside the bisection
    # weighs on both alike: rows are judged whatever the load unless asked.
    add_policy(parser, loaded_cores=math.inf)
    return parser


def _runner_flags(rest: list[str], metric: str) -> list[str]:
    unknown = [a for a in rest if a.startswith("-") and a.split("=")[0] in ("--markdown", "--json", "--plot")]
    if unknown:
        raise UsageError(f"{unknown[0]} is not a bisect flag")
    args = build_parser().parse_args(rest)
    defaults = build_parser().parse_args([])
    own = [f for f in OWN_FLAGS if getattr(args, f) != getattr(defaults, f)]
    if own:
        raise UsageError(f"--{own[0].replace('_', '-')}: bisect chooses where its runs go and what they do")
    if args.accuracy and metric != "accuracy":
        raise UsageError("--accuracy measures no speed: use --metric accuracy")
    if args.performance and metric == "accuracy":
        raise UsageError("--metric accuracy runs --accuracy, not --performance")
    _check_run(args)
    return [*rest, "--accuracy" if metric == "accuracy" else "--performance"]


def _check_run(args: argparse.Namespace) -> None:
    """Every check a run of these flags makes before any model runs (its
    numbers, models and backends), here, before any worktree is made: a typo
    should cost one line, not a checkout per probe."""
    from benchmarks.cli.run import parse_backends, select_models, validate

    validate(args)
    select_models(args)
    parse_backends(args.backend, training=args.training)


def _metric_view(metric: str, flags: list[str]) -> str:
    name = METRIC_NAMES[metric]
    if name == "memory":  # the device's peak where the runs record one (an XLA baseline)
        return "device_memory" if "--use-xla-baseline" in flags else "host_memory"
    return name


def bisect_main(argv: list[str], prog: str = f"{PROG} bisect") -> int:
    parser = _parser(prog)
    if any(a in ("-h", "--help") for a in argv):
        parser.parse_args(["--help"])
    if len(argv) < 2 or any(a.startswith("-") for a in argv[:2]):
        raise UsageError("give GOOD and BAD first: runner.py bisect GOOD BAD [flags]")
    # GOOD and BAD first; then ours, and what is left is runner.py's (argparse
    # keeps the unknown flags with their values, in order).
    args, rest = parser.parse_known_args(argv[2:])
    args.good, args.bad = argv[:2]
    check_policy(args)
    if args.rounds < 1 or args.retries < 0:
        raise UsageError("--rounds must be at least 1 and --retries at least 0")
    flags = _runner_flags(rest, args.metric)
    repo = Path(git(Path.cwd(), "rev-parse", "--show-toplevel"))
    good, bad = commit_of(repo, args.good), commit_of(repo, args.bad)
    commits = commits_between(repo, good, bad)
    metric = _metric_view(args.metric, flags)
    folder = Path(tempfile.mkdtemp(prefix="xdb-bisect-"))

    def echo(line: str) -> None:
        print(line, flush=True)

    lab = Lab(repo, flags, folder, echo)
    most = math.ceil(math.log2(len(commits))) + 1 if len(commits) > 1 else 1
    echo(f"bisect: {len(commits)} commit(s) after GOOD {good[:12]} up to BAD {bad[:12]}, {metric} "
         f"judged as the gate does; at most {most} probe(s) unless some are skipped; runs in {folder}")
    try:
        return _search(Search(lab, good, commits, metric, args, args.rounds, args.retries, echo), echo)
    finally:
        lab.close()
        if args.keep:
            echo(f"runs kept in {folder}")
        else:
            shutil.rmtree(folder, ignore_errors=True)


def _search(search: Search, echo: Callable[[str], None]) -> int:
    from benchmarks.results import compare

    at_bad = search.probe(search.commits[-1], None)
    follow = {k: r[:2] for k, r in at_bad.rows.items() if r[0] in (compare.SLOWER, compare.NEW_FAILURE)}
    if at_bad.state != BAD or not follow:
        why = ("no row slower or newly failing" if at_bad.state == GOOD else
               f"it cannot tell: {at_bad.why}; more --rounds or a quieter machine may")
        echo(f"not reproduced: BAD is {at_bad.state} against GOOD ({why}); nothing to bisect")
        return 1
    first, left = search.run(follow)
    if first < 0:
        shas = ", ".join(search.commits[i][:12] for i in left)
        echo(f"no single first bad commit: it is one of {shas} (the others could not be judged)")
        return 1
    sha = search.commits[first]
    echo(f"first bad commit: {sha} {subject(search.lab.repo, sha)}")
    for key, row in search.verdicts[sha].rows.items():
        echo(f"  at it:         {describe(key, row)}")
    parent = search.commits[first - 1] if first else search.good
    if parent == search.good:
        echo(f"  at its parent: GOOD {parent[:12]} itself")
    else:
        for key, row in search.verdicts[parent].rows.items():
            echo(f"  at its parent: {describe(key, row)}")
    return 0
