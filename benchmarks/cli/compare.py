"""``runner.py compare OLD.csv NEW.csv``: the command line of the gate.

The comparison itself is ``benchmarks.results.compare`` (compute, then render); this
module checks the flags and paths, runs it, writes the requested files and
turns bad input into one line and exit status 2, never 1, which CI reads as
"slower".
"""
from __future__ import annotations

import argparse
import math
from pathlib import Path

from benchmarks.usage import Parser, UsageError
from benchmarks.cli.flags import PROG


def _compare_parser(prog: str | None) -> argparse.ArgumentParser:
    parser = Parser(
        prog=prog,
        description="Compare two benchmark runs (result CSVs with their .jsonl samples beside them) "
        "on the per-repeat backend/baseline ratio. Exit status: 0 pass, 1 a row got slower, newly "
        "failed or was removed (or is inconclusive, with --fail-on-inconclusive), 2 bad input or "
        "an output that cannot be written.",
    )
    parser.add_argument("old", metavar="OLD", help="results CSV of the reference run")
    parser.add_argument("new", metavar="NEW", help="results CSV of the run to judge")
    add_policy(parser)
    parser.add_argument("--markdown", metavar="PATH", help="also write the markdown comparison here")
    parser.add_argument("--json", metavar="PATH", help="also write the comparison as JSON here")
    parser.add_argument("--plot", metavar="PATH", help="also write the comparison chart (PNG) here")
    parser.add_argument("--gate-config", metavar="YAML",
                        help="the policies of the other metrics (first call, peak memory, pass rate) "
                        "and their thresholds (default configs/compare.yaml); the flags above set speedup's")
    return parser


def add_policy(parser: argparse.ArgumentParser, loaded_cores: float | None = None) -> None:
    """The flags that say how rows are judged (compare, the nightly gate and
    bisect); ``loaded_cores``: ``--max-other-cores``'s default (None: the
    gate's, ``compare.LOADED_CORES``)."""
    from benchmarks.results.compare import LOADED_CORES

    loaded_cores = LOADED_CORES if loaded_cores is None else loaded_cores
    parser.add_argument("--threshold", type=float, default=0.05,
                        help="smallest relative change of the ratio that counts (default 0.05 = 5%%)")
    parser.add_argument("--alpha", type=float, default=0.05,
                        help="significance level of the Mann-Whitney U test (default 0.05)")
    parser.add_argument("--min-samples", type=int, default=5,
                        help="paired samples per side needed to test; fewer: inconclusive (default 5)")
    parser.add_argument("--latency-criterion", action="store_true",
                        help="also mark a row slower when its absolute latency alone got slower")
    parser.add_argument("--allow-removed", action="store_true",
                        help="pass even if rows of OLD are missing from NEW")
    parser.add_argument("--fail-on-inconclusive", action="store_true",
                        help="fail when a row has too few samples to test")
    parser.add_argument("--max-other-cores", type=float, default=loaded_cores, metavar="CORES",
                        help="a worker process timed while other processes kept more cores than this "
                             "busy leaves the units tested; a row left with too few is inconclusive "
                             f"(default {loaded_cores:g}; inf: judge every row whatever the load)")


def check_policy(args: argparse.Namespace) -> None:
    """Refuse policy values no comparison can use (``add_policy``'s flags)."""
    if not (math.isfinite(args.threshold) and args.threshold >= 0):
        raise UsageError(f"--threshold must be a number >= 0, got {args.threshold:g}")
    if not 0 < args.alpha < 1:
        raise UsageError(f"--alpha must be between 0 and 1, got {args.alpha:g}")
    if args.min_samples < 2:
        raise UsageError(f"--min-samples must be at least 2, got {args.min_samples}")
    if not args.max_other_cores >= 0:
        raise UsageError(f"--max-other-cores must be a number of cores >= 0, got {args.max_other_cores:g}")


def _check_compare_args(args: argparse.Namespace) -> None:
    check_policy(args)
    from benchmarks.results.store import files_beside

    if Path(args.old).resolve() == Path(args.new).resolve():
        raise UsageError(f"OLD and NEW are the same file ({args.new}); compare two runs")
    # The inputs and the files of their runs (samples, report, plot) are kept.
    inputs = {p.resolve() for run in (args.old, args.new) for p in files_beside(run)}
    named: dict = {}
    for flag in ("markdown", "json", "plot"):
        path = getattr(args, flag)
        if not path:
            continue
        if Path(path).resolve() in inputs:
            raise UsageError(f"--{flag} {path} is an input or a file of its run; choose another path")
        if Path(path).resolve() in named:
            raise UsageError(f"--{flag} and --{named[Path(path).resolve()]} name the same file {path}")
        named[Path(path).resolve()] = flag


def _check_same_measure(old: str, new: str) -> None:
    """Speedups compare with speedups: an accuracy run's verdicts are refused."""
    from benchmarks.results import pairing, store

    kinds = {}
    for path in (old, new):
        with pairing.cut_lines_said_elsewhere():  # the comparison names a cut file itself
            rows = store.read_rows(path).to_dict("records")
        kinds[path] = "accuracy" if any(store.measures(r) == "accuracy" for r in rows) else "performance"
    if "accuracy" in kinds.values():
        which = next(p for p, k in kinds.items() if k == "accuracy")
        raise UsageError(f"{which} holds --accuracy verdicts, no speedups to compare")


def _write_comparison(comparison, verdicts, args: argparse.Namespace) -> None:
    """Write the requested files, creating their folders; OSError on failure."""
    from benchmarks.results import compare, plots, policies  # matplotlib is slow to import: only for compare

    texts = {args.markdown: lambda c: compare.render_markdown(c) + "\n## Policies\n\n"
             + policies.render(verdicts, markdown=True),
             args.json: compare.render_json}
    for path, render in texts.items():
        if path:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            Path(path).write_text(render(comparison), encoding="utf-8")
    if args.plot:
        plots.plot_comparison(comparison, args.plot)


def _error_line(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.filename:
        return f"{exc.filename}: {exc.strerror or exc}"
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def compare_main(argv: list[str], prog: str = f"{PROG} compare") -> int:
    """``runner.py compare OLD NEW``: print the comparison; 0 pass, 1 fail,
    2 bad input or an output that cannot be written."""
    from benchmarks.results import compare, policies

    args = _compare_parser(prog).parse_args(argv)
    _check_compare_args(args)
    try:
        _check_same_measure(args.old, args.new)
        comparison = compare.compare(args.old, args.new, args.threshold, args.alpha, args.min_samples,
                                     latency_criterion=args.latency_criterion,
                                     allow_removed=args.allow_removed,
                                     fail_on_inconclusive=args.fail_on_inconclusive,
                                     loaded=args.max_other_cores)
        verdicts = policy_verdicts(comparison, [args.old], [args.new], args.gate_config)
        print(compare.render_console(comparison), end="")
        print("policies:\n" + policies.render(verdicts), end="")
        _write_comparison(comparison, verdicts, args)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        # Bad input or an unwritable output, not a regression: exit status 2,
        # never 1, which CI reads as "slower".
        raise UsageError(_error_line(exc)) from None
    return max(compare.exit_code(comparison), int(any(not v.passed for v in verdicts)))


def policy_verdicts(comparison, olds, news, config: str | None) -> list:
    """Every policy of ``config`` (default configs/compare.yaml): steady speedup
    as ``comparison`` judged it (the flags set its policy), the others judged
    by their own (``benchmarks.results.policies``)."""
    from benchmarks.results import policies

    configured = policies.with_speedup(policies.load_policies(config), comparison.threshold, comparison.alpha,
                                       comparison.min_samples)
    return policies.judge(configured, olds, news, speedup=comparison)
