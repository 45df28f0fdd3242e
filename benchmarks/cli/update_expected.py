"""``runner.py update-expected NIGHT_OR_CSV``: accept a run's statuses and
graph breaks as the expected ones.

NIGHT_OR_CSV is a night's folder (its ``performance.csv``) or a run's CSV.
Each of its groups (suite, mode, dtype) rewrites
``configs/expected/<suite>_<mode>_<dtype>.csv`` (``--expected FOLDER`` for
another folder): the run's rows replace the file's, the rows it lacks are
kept.  It prints the diff it made to each file (nothing changed: says so).
The flaky list is never touched.  ``--check`` changes nothing and exits 1
when the update would change a file (CI's check that the files are current).
Exit status: 0, 1 (``--check``: would change), or 2 on bad input.
"""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from benchmarks.cli.flags import PROG
from benchmarks.results import expected
from benchmarks.usage import Parser, UsageError


def _check_whole(path: Path) -> None:
    """Only a whole run becomes the expected one: a damaged file (a cut row,
    a garbage row, a binary file) would be accepted short of what it lost,
    or with a torn row's fragment for a status."""
    from benchmarks.results import store

    found = store.damage(path, required=False)  # its own reader names the columns it needs
    if found:
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        raise UsageError(f"{found[0].describe()}{more}; a damaged run is not accepted as expected: "
                         "rerun it, or --resume it to complete it")


def _parser(prog: str) -> Parser:
    p = Parser(prog=prog, description="Rewrite the expected statuses and graph breaks from a run, "
                                      "printing the diff.")
    p.add_argument("run", metavar="NIGHT_OR_CSV", type=Path, help="a night's folder or a run's CSV")
    p.add_argument("--expected", metavar="FOLDER", type=Path, default=expected.FOLDER,
                   help="the expected files' folder (default configs/expected)")
    p.add_argument("--check", action="store_true",
                   help="change nothing: print the diff the update would make and exit 1 if it would "
                        "change a file (for CI), 0 if not")
    return p


def _update(rows, folder: Path, check: bool) -> list[tuple[Path, str]]:
    """``expected.update``; with ``check``, on a copy of ``folder`` (nothing
    written there), the diffs named by the real files' paths."""
    if not check:
        return expected.update(rows, folder)
    with tempfile.TemporaryDirectory(prefix="xdb-expected-") as tmp:
        copy = Path(tmp, "expected")
        if folder.is_dir():
            shutil.copytree(folder, copy)
        return [(folder / path.name, diff) for path, diff in expected.update(rows, copy)]


def update_expected_main(argv: list[str], prog: str = f"{PROG} update-expected") -> int:
    args = _parser(prog).parse_args(argv)
    path = expected.run_csv(args.run)
    if not path.is_file():
        raise UsageError(f"{path} not found: give a night's folder or a run's CSV")
    if args.expected.exists() and not args.expected.is_dir():
        raise UsageError(f"--expected {args.expected} is not a folder")
    _check_whole(path)
    try:
        rows = expected.run_rows(path)
        if not rows:
            raise UsageError(f"{path}: no rows to accept")
        changed = _update(rows, args.expected, args.check)
    except expected.ExpectedError as err:
        raise UsageError(str(err)) from None
    except OSError as err:
        raise UsageError(f"cannot write the expected files: {err}") from None
    for _, diff in changed:
        print(diff, end="")
    names = ", ".join(str(p) for p, _ in changed)
    if args.check:
        print(f"update-expected --check: {len(changed)} file(s) would change"
              + (f": {names}" if names else ": already expected"))
        return 1 if changed else 0
    print(f"update-expected: {len(changed)} file(s) changed" + (f": {names}" if names else ": already expected"))
    return 0
