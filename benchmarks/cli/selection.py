"""Which models a run measures: --only, -k, -x, --exclude-exact, the suite
and the shard (``select_models``), and a TorchBench checkout put on the path
(``use_torchbench_dir``)."""
from __future__ import annotations

import os
import re
import sys
from pathlib import Path

from benchmarks.usage import UsageError


def _names(values: list[str] | None) -> list[str]:
    """Model names from a repeatable flag that also takes comma lists."""
    return [n.strip() for v in values or () for n in v.split(",") if n.strip()]


def select_models(args) -> list[str]:
    """The models to run, in a stable order, for this partition."""
    from benchmarks.run import suite

    try:
        known = suite.list_models(args.suite)
    except ValueError as err:
        raise UsageError(str(err)) from None
    if args.only is not None and not all(_names([value]) for value in args.only):
        raise UsageError("--only names no model")
    # -x and --exclude-exact leave models out of --only's too (as in PyTorch's
    # harness, where --only is one more filter): an exclusion is never ignored.
    exclude = [_regex(r, "-x/--exclude") for r in args.exclude]
    excluded = {_known_name(name, known, args) for name in _names(args.exclude_exact)}
    if args.only:
        names = [_known_name(name, known, args) for name in dict.fromkeys(_names(args.only))]
        names = sorted(set(names), key=known.index)  # the suite's order, as without --only
    else:
        include = [_regex(r, "-k/--filter") for r in args.filter]
        names = [n for n in known if not include or any(r.search(n) for r in include)]
    kept = [n for n in names if n not in excluded and not any(r.search(n) for r in exclude)]
    if not kept and args.only:
        raise UsageError(f"nothing left to run: -x/--exclude-exact leave out every model --only names "
                         f"({', '.join(names)})")
    if not kept:
        raise UsageError("no model matches the selection; see --list-models")
    # Round-robin keeps shards balanced and deterministic for a given selection.
    return kept[args.partition_id or 0::args.total_partitions or 1]


def _known_name(name: str, known: list[str], args) -> str:
    """``name`` as the suite spells it: exact, else ignoring case (as TorchBench matches)."""
    matches = [n for n in known if n == name] or [n for n in known if n.lower() == name.lower()]
    if len(matches) != 1:
        from benchmarks.run import suite

        raise UsageError(str(suite.UnknownModelError(name, known)) + _torchbench_hint(name, args))
    return matches[0]


def _torchbench_hint(name: str, args) -> str:
    """Where a model outside our suites may be found."""
    if args.suite == "torchbench":
        return ""
    try:
        from benchmarks.run import suite

        if name.lower() in {n.lower() for n in suite.list_models("torchbench")}:
            return f" ({name} is a TorchBench model: add --suite torchbench)"
    except ValueError:  # no torchbenchmark importable here
        pass
    return (" (TorchBench's other models run with --suite torchbench and a pytorch/benchmark "
            "checkout: --torchbench-dir DIR)")


def use_torchbench_dir(args) -> None:
    """With --torchbench-dir, import torchbenchmark from that checkout, here and
    in the worker processes (which inherit PYTHONPATH)."""
    if args.torchbench_dir is None:
        return
    if args.suite != "torchbench":
        raise UsageError("--torchbench-dir applies to --suite torchbench only")
    folder = Path(args.torchbench_dir).resolve()
    if not (folder / "torchbenchmark" / "__init__.py").is_file():
        raise UsageError(f"--torchbench-dir: {args.torchbench_dir} holds no torchbenchmark/__init__.py; "
                         "pass the root of a pytorch/benchmark checkout")
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
    paths = os.environ.get("PYTHONPATH", "").split(os.pathsep)
    if str(folder) not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join([str(folder), *filter(None, paths)])


def _regex(pattern: str, flag: str) -> re.Pattern:
    try:
        return re.compile(pattern, re.IGNORECASE)  # as --only matches names
    except re.error as err:
        raise UsageError(f"{flag}: bad regular expression {pattern!r}: {err}") from None
