"""``runner.py update-expected NIGHT_OR_CSV``: accept a run's statuses and
graph breaks as the expected ones.

NIGHT_OR_CSV is a night's folder (its ``performance.csv``) or a run's CSV.
Each of its groups (suite, mode, dtype) rewrites
``configs/expected/<suite>_<mode>_<dtype>.csv`` (``--expected FOLDER`` for
another folder): the run's rows replace the file's, the rows it lacks are
kept.  It prints the diff it made to each file (nothing changed: says so).
The flaky list is never touched.  Exit status: 0, or 2 on bad input.

``--pytorch [FOLDER]`` writes PyTorch's ``ci_expected_accuracy`` files instead
(``name,accuracy,graph_breaks,calls_captured,fallbacks_to_eager``, one per
device, backend, suite and mode; default ``configs/expected/pytorch``), which
PyTorch's ``check_accuracy.py`` and ``check_graph_breaks.py`` read beside the
accuracy CSVs of ``NAME.pytorch/``.
"""
from __future__ import annotations

from pathlib import Path

from benchmarks.cli.flags import PROG
from benchmarks.results import expected, pytorch_files, store
from benchmarks.usage import Parser, UsageError



def _parser(prog: str) -> Parser:
    p = Parser(prog=prog, description="Rewrite the expected statuses and graph breaks from a run, "
                                      "printing the diff.")
    p.add_argument("run", metavar="NIGHT_OR_CSV", type=Path, help="a night's folder or a run's CSV")
    p.add_argument("--expected", metavar="FOLDER", type=Path, default=expected.FOLDER,
                   help="the expected files' folder (default configs/expected)")
    p.add_argument("--pytorch", metavar="FOLDER", type=Path, nargs="?", const=PYTORCH_FOLDER,
                   help="write PyTorch's ci_expected_accuracy files of an --accuracy run into FOLDER "
                        f"instead (default {PYTORCH_FOLDER})")
    return p


PYTORCH_FOLDER = expected.FOLDER / "pytorch"


def _update_pytorch(path: Path, folder: Path) -> int:
    rows = store.read_rows(path)
    if rows.empty or not any(store.measures(r) == "accuracy" for r in rows.to_dict("records")):
        raise UsageError(f"{path}: no accuracy rows (PyTorch's expected files are of --accuracy runs)")
    if folder.exists() and not folder.is_dir():
        raise UsageError(f"--pytorch {folder} is not a folder")
    try:
        changed = pytorch_files.update_expected(rows, folder)
    except OSError as err:
        raise UsageError(f"cannot write the expected files: {err}") from None
    names = ", ".join(map(str, changed))
    print(f"update-expected: {len(changed)} file(s) changed" + (f": {names}" if names else ": already expected"))
    return 0


def update_expected_main(argv: list[str], prog: str = f"{PROG} update-expected") -> int:
    args = _parser(prog).parse_args(argv)
    path = expected.run_csv(args.run)
    if not path.is_file():
        raise UsageError(f"{path} not found: give a night's folder or a run's CSV")
    if args.pytorch is not None:
        return _update_pytorch(path, args.pytorch)
    if args.expected.exists() and not args.expected.is_dir():
        raise UsageError(f"--expected {args.expected} is not a folder")
    try:
        rows = expected.run_rows(path)
        if not rows:
            raise UsageError(f"{path}: no rows to accept")
        changed = expected.update(rows, args.expected)
    except expected.ExpectedError as err:
        raise UsageError(str(err)) from None
    except OSError as err:
        raise UsageError(f"cannot write the expected files: {err}") from None
    for _, diff in changed:
        print(diff, end="")
    names = ", ".join(str(p) for p, _ in changed)
    print(f"update-expected: {len(changed)} file(s) changed" + (f": {names}" if names else ": already expected"))
    return 0
