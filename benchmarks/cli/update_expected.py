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

``--pytorch [FOLDER]`` writes PyTorch's ``ci_expected_accuracy`` files instead
(``name,accuracy,graph_breaks,calls_captured,fallbacks_to_eager``, one per
device, backend, suite and mode; default ``configs/expected/pytorch``), which
PyTorch's ``check_accuracy.py`` and ``check_graph_breaks.py`` read beside the
accuracy CSVs of ``NAME.pytorch/``; ``--check`` applies to them alike.
"""
from __future__ import annotations

import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path

from benchmarks.cli.flags import PROG
from benchmarks.results import expected, pytorch_files, store
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
    p.add_argument("--pytorch", metavar="FOLDER", type=Path, nargs="?", const=PYTORCH_FOLDER,
                   help="write PyTorch's ci_expected_accuracy files of an --accuracy run into FOLDER "
                        f"instead (default {PYTORCH_FOLDER})")
    return p


PYTORCH_FOLDER = expected.FOLDER / "pytorch"


@contextmanager
def _copy_of(folder: Path):
    """A copy of ``folder`` in a temporary folder, for ``--check``: the
    update is made there and nothing is written into ``folder``."""
    with tempfile.TemporaryDirectory(prefix="xdb-expected-") as tmp:
        copy = Path(tmp, "expected")
        if folder.is_dir():
            shutil.copytree(folder, copy)
        yield copy


def _update(rows, folder: Path, check: bool) -> list[tuple[Path, str]]:
    """``expected.update``; with ``check``, on a copy of ``folder``, the diffs
    named by the real files' paths."""
    if not check:
        return expected.update(rows, folder)
    with _copy_of(folder) as copy:
        return [(folder / path.relative_to(copy), diff) for path, diff in expected.update(rows, copy)]


def _update_pytorch_files(rows, folder: Path, check: bool) -> list[Path]:
    """``pytorch_files.update_expected``; with ``check``, on a copy of ``folder``."""
    if not check:
        return pytorch_files.update_expected(rows, folder)
    with _copy_of(folder) as copy:
        return [folder / path.relative_to(copy) for path in pytorch_files.update_expected(rows, copy)]


def _update_pytorch(path: Path, folder: Path, check: bool) -> int:
    rows = store.read_rows(path)
    if rows.empty or not any(store.measures(r) == "accuracy" for r in rows.to_dict("records")):
        raise UsageError(f"{path}: no accuracy rows (PyTorch's expected files are of --accuracy runs)")
    if folder.exists() and not folder.is_dir():
        raise UsageError(f"--pytorch {folder} is not a folder")
    try:
        changed = _update_pytorch_files(rows, folder, check)
    except OSError as err:
        raise UsageError(f"cannot write the expected files: {err}") from None
    return _summary(changed, check)


def _summary(changed: list[Path], check: bool) -> int:
    """The closing line, and the exit status: ``--check`` exits 1 when a
    file would change."""
    names = ", ".join(map(str, changed))
    what = "would change" if check else "changed"
    print(f"update-expected{' --check' if check else ''}: {len(changed)} file(s) {what}"
          + (f": {names}" if names else ": already expected"))
    return 1 if check and changed else 0


def update_expected_main(argv: list[str], prog: str = f"{PROG} update-expected") -> int:
    args = _parser(prog).parse_args(argv)
    path = expected.run_csv(args.run)
    if not path.is_file():
        raise UsageError(f"{path} not found: give a night's folder or a run's CSV")
    _check_whole(path)
    if args.pytorch is not None:
        return _update_pytorch(path, args.pytorch, args.check)
    if args.expected.exists() and not args.expected.is_dir():
        raise UsageError(f"--expected {args.expected} is not a folder")
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
    return _summary([p for p, _ in changed], args.check)
