"""Every shell command shown in README.md and docs/*.md runs, so none can go stale.

The commands are taken from the pages themselves: every line of a ```sh
block (continuations joined, comments dropped), and lines of other code
blocks that start with ``python runner.py``, ``python -m benchmarks`` or
``make``. Each is run with tiny settings:

* ``python runner.py ...`` runs in this process: a run as its ``--dry-run``
  (the flags parse, the models exist, the plan is made), ``--list-models``,
  ``--dry-run`` and ``--help`` as shown; ``compare``, ``merge`` and
  ``dashboard`` for real, on files made here in place of ``OLD.csv`` and the
  like. The slow suite runs each run for real too, on a tiny model
  (``--repeat 2 --warmup 1 --no-cold-start``), output under ``tmp_path``;
  the default suite does so for the quick start's command only.
* ``python -m benchmarks.X --help`` runs in a fresh interpreter.
* ``make X`` runs as ``make -n X`` (the target exists and its recipe
  expands); ``make bench``'s recipe must be the command the README shows.
* Anything else must be listed in ``NOT_RUN`` with the reason it cannot run
  here; a command that is neither run nor listed fails the test.

Commands run with the working directory in ``tmp_path``, ``~`` expanded to a
folder there, so nothing lands in the checkout or the home folder.
"""
from __future__ import annotations

import importlib
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import cli
from benchmarks.results import store

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FAULT_MODELS = ROOT / "tests" / "fault_models"
COMPARE_FIXTURES = ROOT / "tests" / "fixtures" / "compare"
PREFIXES = ("python runner.py", "python -m benchmarks", "make ")

# A built-in model that runs in seconds, for the real runs; a fake TorchBench
# model of tests/fault_models for the commands of --suite torchbench.
TINY_MODEL = "lennard_jones"
TINY_TORCHBENCH_MODEL = "ok_mlp"
TINY_RUN = ["--repeat", "2", "--warmup", "1", "--no-cold-start"]

# Commands shown in the pages that this test does not run, and why.
NOT_RUN = {
    "python runner.py update-expected NIGHT_OR_CSV":
        "rewrites the checked-in configs/expected; tests/test_expected.py runs it on fixture nights",
    "python runner.py bisect GOOD BAD --only squeezenet1_1 --backend torchxla_trace_once --use-xla-baseline":
        "runs the harness at each probed commit of a real history; tests/test_bisect.py bisects a "
        "throwaway repository built from this tree",
    "python runner.py bisect <baseline night's commit> <tonight's commit> --only resnet18 --backend "
    "torchxla_trace_once --suite builtin --repeat 8 --metric first-call":
        "the notify job's issue shows it with two real commits; tests/test_notify.py checks the command",
    "deploy/slurm/submit.sh --shards 4":
        "needs a Slurm cluster; tests/test_slurm.py runs it on a fake sbatch",
    "deploy/slurm/submit.sh --date 2026-01-02 --array 2":
        "needs a Slurm cluster; tests/test_slurm.py re-submits a killed index on a fake sbatch",
    "docker build -f deploy/Dockerfile -t xla-dynamo-bench:nightly .":
        "needs the network and 8 GB; tests/test_kubernetes.py checks the Dockerfile's pins",
    "kubectl apply -f deploy/kubernetes/volume.yaml -f deploy/kubernetes/rbac.yaml -f "
    "deploy/kubernetes/cronjob.yaml":
        "needs a Kubernetes cluster; tests/test_kubernetes.py validates the manifests",
    "git clone https://github.com/pytorch/benchmark ~/torchbench":
        "needs the network (GitHub)",
    "cd ~/torchbench && python install.py resnet18 hf_Bert ...":
        "needs the network (TorchBench's requirements, weights and data) and a checkout",
}

# The one real run the default suite makes: the README's quick start.
QUICK_START = "python runner.py --performance --use-xla-baseline --backend=torchxla_trace_once --only resnet18"


# --------------------------------------------------------------------------
# Finding the commands


def _code_blocks(text: str):
    """``(language, lines)`` of each fenced code block of a markdown text."""
    language, lines = None, []
    for line in text.splitlines():
        fence = re.match(r"^\s*```(\S*)", line)
        if fence and language is None:
            language, lines = fence.group(1), []
        elif fence:
            yield language, lines
            language = None
        elif language is not None:
            lines.append(line)


def _strip_comment(line: str) -> str:
    return re.sub(r"(^|\s)#.*$", "", line).strip()


def commands_in(text: str) -> list[str]:
    """The shell commands shown in a markdown text, one string each,
    whitespace normalised, continuation lines joined, comments dropped."""
    found = []
    for language, lines in _code_blocks(text):
        joined, pending = [], ""
        for line in lines:
            if line.rstrip().endswith("\\"):
                pending += line.rstrip()[:-1] + " "
                continue
            joined.append(pending + line)
            pending = ""
        for line in joined:
            command = " ".join(_strip_comment(line).split())
            if not command:
                continue
            # Outside sh blocks, only a line that begins with a command is one
            # (an indented "make x" is a cell of a table drawn in text).
            if language == "sh" or line.startswith(PREFIXES):
                found.append(command)
    return found


def shown_commands() -> dict[str, list[str]]:
    """Every command shown in README.md and docs/*.md -> the pages showing it."""
    shown: dict[str, list[str]] = {}
    for page in PAGES:
        for command in commands_in(page.read_text(encoding="utf-8")):
            shown.setdefault(command, []).append(str(page.relative_to(ROOT)))
    return shown


SHOWN = shown_commands()


def _kind(command: str) -> str:
    if command in NOT_RUN:
        return "not run"
    if command.startswith("python runner.py"):
        return "runner"
    if re.fullmatch(r"python -m benchmarks(\.\w+)+ --help", command):
        return "module help"
    if re.fullmatch(r"make [\w-]+( [\w-]+)*", command):
        return "make"
    if command == ". .venv/bin/activate":
        return "activate"
    return "unknown"


def _of_kind(kind: str) -> list[str]:
    return sorted(c for c in SHOWN if _kind(c) == kind)


def _runner_argv(command: str, home: Path) -> list[str]:
    """The arguments of a ``python runner.py`` command, ``~`` expanded to
    ``home`` and ``[optional]`` parts kept, ``...`` dropped."""
    words = shlex.split(command.replace("[", "").replace("]", ""))
    assert words[:2] == ["python", "runner.py"], command
    return [str(home) + w[1:] if w.startswith("~") else w for w in words[2:] if w != "..."]


def _is_plan_only(argv: list[str]) -> bool:
    return any(flag in argv for flag in ("--list-models", "--dry-run", "--help", "-h"))


def _uses_torchbench(argv: list[str]) -> bool:
    return "torchbench" in argv or "--suite=torchbench" in argv


def _fake_torchbench(argv: list[str]) -> list[str]:
    """--torchbench-dir pointed at tests/fault_models, --only at its model."""
    out = []
    for i, word in enumerate(argv):
        if i and argv[i - 1] == "--torchbench-dir":
            word = str(FAULT_MODELS)
        elif i and argv[i - 1] == "--only":
            word = TINY_TORCHBENCH_MODEL
        out.append(word)
    return out


# --------------------------------------------------------------------------
# The pages' commands are all accounted for


def test_the_pages_show_commands():
    """The extraction finds what the README promises (a check that cannot
    silently find nothing)."""
    readme = SHOWN.keys()
    for command in ("make bench", "make test", QUICK_START,
                    "python runner.py --performance --backend=torchxla_trace_once --only resnet18"):
        assert command in readme, f"README.md no longer shows {command!r}"
    assert len(SHOWN) >= 20


def test_every_command_is_run_or_listed():
    unknown = {c: pages for c, pages in SHOWN.items() if _kind(c) == "unknown"}
    assert not unknown, (
        "commands shown in the docs that tests/test_docs.py neither runs nor lists in NOT_RUN "
        f"with a reason: {unknown}")


def test_every_listed_command_is_still_shown():
    stale = sorted(set(NOT_RUN) - set(SHOWN))
    assert not stale, f"NOT_RUN lists commands no page shows any more: {stale}"


def test_extraction_joins_continuations_and_drops_comments():
    text = ("```sh\npython runner.py --a \\\n    --b   # why\n# a comment\nmake x  # y\n```\n"
            "```\nplan   make nightly-plan\n       make nightly-gate\npython runner.py --c\n```\n")
    assert commands_in(text) == ["python runner.py --a --b", "make x", "python runner.py --c"]


# --------------------------------------------------------------------------
# Running them


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    """An empty working directory with a home folder in it; PYTHONPATH
    restored afterwards (--torchbench-dir extends it)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYTHONPATH", os.environ.get("PYTHONPATH", ""))
    (tmp_path / "home").mkdir()
    return tmp_path


def _main(argv: list[str], capsys) -> tuple[int, str, str]:
    try:
        rc = cli.main(argv)
    except SystemExit as stop:  # --help
        rc = stop.code or 0
    out, err = capsys.readouterr()
    return rc, out, err


def _tpu_here() -> bool:
    import importlib.util

    return importlib.util.find_spec("libtpu") is not None


RUNS = [c for c in _of_kind("runner") if c.split()[2] not in cli.SUBCOMMANDS]


@pytest.mark.parametrize("command", RUNS, ids=str)
def test_runner_command_plans(command, workdir, capsys, request):
    """A run as its dry run; --list-models, --dry-run, --help as shown."""
    argv = _runner_argv(command, workdir / "home")
    if _uses_torchbench(argv):
        request.getfixturevalue("fault_models")
        argv = _fake_torchbench(argv)
    if not _is_plan_only(argv):
        argv.append("--dry-run")
    rc, out, err = _main(argv, capsys)
    if "--device" in argv and argv[argv.index("--device") + 1] == "tpu" and not _tpu_here():
        assert rc == 2 and "--device tpu: no TPU" in err and len(err.strip().splitlines()) == 1, err
        return
    assert rc == 0, f"{command}\n{err}"
    assert out.strip()


def _tiny_argv(command: str, home: Path, output: Path) -> list[str]:
    """A run's arguments with a tiny model, few repeats and an output under
    ``output``'s folder (a shown --output is kept: it is relative to tmp)."""
    argv = _runner_argv(command, home)
    if _uses_torchbench(argv):
        return _fake_torchbench(argv) + TINY_RUN + ([] if "--output" in argv else ["--output", str(output)])
    kept, skip = [], False
    for word in argv:
        if skip:
            skip = False
        elif word in ("--only", "--suite", "-k", "-x", "--filter", "--exclude", "--repeat", "--warmup",
                      "--batch-size"):
            skip = True
        elif word.split("=")[0] in ("--only", "--suite", "--repeat", "--warmup"):
            pass
        else:
            kept.append(word)
    if "--max-time" in kept:
        kept[kept.index("--max-time") + 1] = "20"
        kept += ["--min-repeat", "2"]
    if "--device" in kept:
        kept[kept.index("--device") + 1] = "cpu"
    if "--compile-cache" in kept:
        kept[kept.index("--compile-cache") + 1] = str(home / "xla-cache")
    tiny = kept + ["--only", TINY_MODEL, *TINY_RUN]
    if "--output" not in tiny:
        tiny += ["--output", str(output)]
    return tiny


def _check_real_run(command: str, workdir: Path, capsys, *extra: str) -> None:
    argv = _tiny_argv(command, workdir / "home", workdir / "run" / "tiny.csv") + list(extra)
    if "--resume" in argv:  # the shown command completes an earlier run's CSV: make it first
        first = [w for w in argv if w not in ("--resume", "--compile-step")]
        rc, _, err = _main(first, capsys)
        assert rc == 0, f"{first}\n{err}"
    rc, out, err = _main(argv, capsys)
    assert rc == 0, f"{command} -> {argv}\n{out}\n{err}"
    csv = Path(argv[argv.index("--output") + 1])
    rows = store.read_rows(csv)
    assert len(rows) and set(rows["status"]) == {"pass"}, rows[["name", "backend", "status", "error"]]


def test_quick_start_runs_for_real(workdir, capsys):
    """The README's quick start on a tiny model, in this process (the slow
    suite runs it, as every run shown, in its worker process)."""
    _check_real_run(QUICK_START, workdir, capsys, "--no-isolate")


@pytest.mark.slow
@pytest.mark.parametrize("command", [c for c in RUNS if not _is_plan_only(_runner_argv(c, Path("~")))],
                         ids=str)
def test_runner_command_runs_for_real(command, workdir, capsys, request):
    if _uses_torchbench(_runner_argv(command, workdir)):
        request.getfixturevalue("fault_models")
    _check_real_run(command, workdir, capsys)


def _copy_run(stem: str, to: Path) -> Path:
    """A fixture run (CSV and samples) copied to ``to`` (a CSV path)."""
    to.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(COMPARE_FIXTURES / f"{stem}.csv", to)
    shutil.copy(COMPARE_FIXTURES / f"{stem}.jsonl", to.with_suffix(".jsonl"))
    return to


SUBCOMMAND_RUNS = [c for c in _of_kind("runner") if c.split()[2] in cli.SUBCOMMANDS]


@pytest.mark.parametrize("command", SUBCOMMAND_RUNS, ids=str)
def test_subcommand_runs(command, workdir, capsys):
    """compare, merge and dashboard for real, on runs made here in place
    of the pages' OLD.csv, NEW.csv, IN.csv... and results/nightly."""
    argv = _runner_argv(command, workdir / "home")
    name = argv[0]
    if name == "compare":
        _copy_run("old", workdir / "OLD.csv")
        _copy_run("new", workdir / "NEW.csv")
    elif name == "merge":
        argv = [w for w in argv if not w.startswith("IN.csv")] + [str(_copy_run("old", workdir / "IN.csv"))]
    elif name == "dashboard":
        root = Path(argv[1])
        _copy_run("old", root / "2026-01-01" / "performance.csv")
        _copy_run("new", root / "2026-01-02" / "performance.csv")
    rc, out, err = _main(argv, capsys)
    if name == "compare":
        assert rc in (0, 1), f"{command}\n{err}"  # 1: the gate failed, which the fixtures may do
        written = [w for flag, w in zip(argv, argv[1:]) if flag in ("--markdown", "--json", "--plot")]
        assert all(Path(w).is_file() for w in written), written
    else:
        assert rc == 0, f"{command}\n{err}"
    if name == "merge":
        assert Path(argv[1]).is_file()
    if name == "dashboard":
        assert (Path(argv[argv.index("-o") + 1]) / "index.html").is_file()


@pytest.mark.parametrize("command", _of_kind("module help"))
def test_module_help_runs(command, capsys):
    """``python -m benchmarks.X --help``, in this process (torch is loaded
    already): the module's main prints its usage and exits 0."""
    module = importlib.import_module(command.split()[2])
    try:
        rc = module.main(["--help"])
    except SystemExit as stop:
        rc = stop.code
    assert rc in (0, None)
    assert "usage:" in capsys.readouterr().out


@pytest.mark.parametrize("command", _of_kind("make"))
def test_make_target_exists(command):
    """``make -n``: the target exists and its recipe expands (make bench
    itself takes ten minutes, make test is this suite)."""
    proc = subprocess.run(["make", "-n", *command.split()[1:]], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr


def test_make_bench_runs_what_the_readme_says():
    proc = subprocess.run(["make", "-n", "bench"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    recipe = [line.split(" ", 1)[1] for line in proc.stdout.splitlines() if " runner.py " in line]
    shown = [c for c in SHOWN if c.startswith("python runner.py --suite seed") and "--overwrite" in c
             and "README.md" in SHOWN[c]]
    assert shown, "README.md no longer shows the command make bench runs"
    assert [" ".join(r.split()) for r in recipe] == [shown[0].removeprefix("python ")], proc.stdout


@pytest.mark.skipif(not (ROOT / ".venv" / "bin" / "activate").is_file(), reason="no .venv here")
def test_activate_gives_the_venvs_python():
    proc = subprocess.run(["bash", "-c", ". .venv/bin/activate && command -v python"], cwd=ROOT,
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    assert Path(proc.stdout.strip()).parent.resolve() == (ROOT / ".venv" / "bin").resolve()


# --------------------------------------------------------------------------
# The glossary and the links


def _glossary() -> set[str]:
    text = (ROOT / "docs" / "columns.md").read_text(encoding="utf-8")
    start = text.index("## Glossary of the CSV's columns")
    end = text.index("### `NAME_graph_breaks.csv`")
    return set(re.findall(r"^\| `([a-z0-9_]+)` \|", text[start:end], flags=re.M))


def test_every_result_column_has_a_glossary_entry():
    missing = [c for c in store.CSV_COLUMNS if c not in _glossary()]
    assert not missing, f"docs/columns.md has no glossary entry for {missing}"
    unknown = sorted(_glossary() - set(store.CSV_COLUMNS))
    assert not unknown, f"docs/columns.md explains columns the CSV does not have: {unknown}"


def test_columns_md_names_the_schema_version_rows_are_written_with():
    text = (ROOT / "docs" / "columns.md").read_text(encoding="utf-8")
    (line,) = [line for line in text.splitlines() if line.startswith("| `schema_version` |")]
    assert f"({store.SCHEMA_VERSION} now)" in line, line


def test_every_graph_break_column_has_a_glossary_entry():
    text = (ROOT / "docs" / "columns.md").read_text(encoding="utf-8")
    part = text[text.index("### `NAME_graph_breaks.csv`"):]
    assert re.findall(r"^\| `([a-z0-9_]+)` \|", part, flags=re.M) == store.GRAPH_BREAK_COLUMNS


def test_every_flag_is_in_flags_md():
    text = (ROOT / "docs" / "flags.md").read_text(encoding="utf-8")
    import argparse

    flags = {s for action in cli.build_parser()._actions if action.help != argparse.SUPPRESS
             for s in action.option_strings}
    missing = sorted(f for f in flags if not re.search(rf"`{re.escape(f)}[` =]", text))
    assert not missing, f"docs/flags.md does not mention {missing}"


def _anchor(heading: str) -> str:
    """GitHub's anchor of a heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_links_between_pages_resolve(page):
    text = page.read_text(encoding="utf-8")
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue  # http(s) and the like
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        if not linked.exists():
            broken.append(target)
            continue
        if anchor and linked.suffix == ".md":
            headings = re.findall(r"^#+ (.+)$", linked.read_text(encoding="utf-8"), flags=re.M)
            if anchor not in {_anchor(h) for h in headings}:
                broken.append(target)
    assert not broken, f"{page.name}: broken links {broken}"


def test_readme_fits_on_a_few_screens():
    assert len((ROOT / "README.md").read_text(encoding="utf-8").splitlines()) <= 200
