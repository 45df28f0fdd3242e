"""The nightly's plumbing for CI and other job runners: where a shard finds
its place (Slurm arrays, Kubernetes Indexed Jobs), the comparison on the
run's page, the light install of the report steps, and the token the git
steps use without storing it.
"""
from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

from benchmarks import nightly
from benchmarks.nightly import plan, publish, shard
from test_nightly import place_run, split_into_shards

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "compare"
STAMP = ".venv/.installed"


# --------------------------------------------------------------------------
# Where a shard is


@pytest.mark.parametrize("env, place", [
    ({"NIGHTLY_SHARD": "2", "NIGHTLY_SHARDS": "4"}, (2, 4)),
    ({"SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_COUNT": "4", "SLURM_ARRAY_TASK_MIN": "0"}, (3, 4)),
    ({"SLURM_ARRAY_TASK_ID": "4", "SLURM_ARRAY_TASK_COUNT": "4", "SLURM_ARRAY_TASK_MIN": "1"}, (3, 4)),  # --array=1-4
    ({"SLURM_ARRAY_TASK_ID": "6", "SLURM_ARRAY_TASK_COUNT": "4", "SLURM_ARRAY_TASK_MIN": "0",
      "SLURM_ARRAY_TASK_STEP": "2"}, (3, 4)),  # --array=0-7:2
    ({"JOB_COMPLETION_INDEX": "1", "JOB_COMPLETIONS": "3"}, (1, 3)),
    ({"JOB_COMPLETION_INDEX": "1"}, (1, None)),  # the count must come from elsewhere
    # The project's own variables win over the job runner's.
    ({"NIGHTLY_SHARD": "0", "NIGHTLY_SHARDS": "2", "SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_COUNT": "2"},
     (0, 2)),
    ({}, (None, None)),
])
def test_shard_from_env(env, place):
    assert shard.shard_from_env(env) == place


@pytest.mark.parametrize("env, message", [
    ({"SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_COUNT": "4", "SLURM_ARRAY_TASK_STEP": "2"},
     "SLURM_ARRAY_TASK_ID='1' does not name a shard"),
    ({"JOB_COMPLETION_INDEX": "x", "JOB_COMPLETIONS": "3"}, "JOB_COMPLETION_INDEX='x'"),
    ({"JOB_COMPLETION_INDEX": "0", "JOB_COMPLETIONS": "100"}, "JOB_COMPLETIONS: must be a whole number from 1 to 64"),
    ({"JOB_COMPLETION_INDEX": "0"}, "--shards is needed"),
    ({"NIGHTLY_SHARDS": "2"}, "--shard is needed"),
    ({"SLURM_ARRAY_TASK_ID": "5", "SLURM_ARRAY_TASK_COUNT": "4", "SLURM_ARRAY_TASK_MIN": "0"},
     "--shard must be in [0, 3]"),  # a non-contiguous array (--array=0,2,5)
])
def test_shard_place_refused_is_exit_2(tmp_path, monkeypatch, capsys, env, message):
    for name in [v for pair in shard.SHARD_VARIABLES for v in pair]:
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert nightly.main(["shard", "--root", str(tmp_path), "--date", "2026-01-02"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err
    assert not any(tmp_path.iterdir())


def _shard_command(env):
    """What `make nightly-shard` would run, as argv (make -n, read by the shell)."""
    done = subprocess.run(["make", "-n", "-o", STAMP, "nightly-shard"], cwd=ROOT, capture_output=True, text=True,
                          timeout=60, env={**os.environ, **env})
    assert done.returncode == 0, done.stderr
    script = done.stdout.replace(" -m benchmarks.nightly shard", " -c 'import json,sys; print(json.dumps(sys.argv[1:]))'")
    shown = subprocess.run(["bash", "-c", script], capture_output=True, text=True, env={**os.environ, **env})
    return json.loads(shown.stdout)


def test_make_shard_passes_a_slurm_array_through():
    """The same make target under a Slurm array: no NIGHTLY_SHARD(S) flags
    are invented, so the array's variables decide."""
    argv = _shard_command({"SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_COUNT": "2", "NIGHTLY_DATE": "2026-01-02"})
    assert "--shard" not in argv and "--shards" not in argv
    assert argv[argv.index("--date") + 1] == "2026-01-02" and argv[-1] == "--"


def test_make_shard_runs_torchbench_from_the_checkout():
    argv = _shard_command({"NIGHTLY_SHARD": "0", "NIGHTLY_SHARDS": "1", "NIGHTLY_SUITE": "torchbench",
                           "TORCHBENCH_DIR": "tb dir", "NIGHTLY_REPEAT": "3"})
    assert argv[argv.index("--"):] == ["--", "--suite", "torchbench", "--torchbench-dir", "tb dir", "--repeat", "3"]
    builtin = _shard_command({"NIGHTLY_SHARD": "0", "NIGHTLY_SHARDS": "1", "NIGHTLY_SUITE": "builtin",
                              "TORCHBENCH_DIR": "tb dir"})
    assert builtin[builtin.index("--"):] == ["--", "--suite", "builtin"]


def test_torchbench_install_runs_torchbenchs_installer(tmp_path):
    """make torchbench-install runs the checkout's install.py for the chosen
    models (here a stand-in install.py beside the fake torchbenchmark)."""
    checkout = tmp_path / "benchmark"
    checkout.mkdir()
    (checkout / "install.py").write_text(
        "import json, os, sys\nopen('argv.json', 'w').write(json.dumps([os.getcwd(), sys.executable] + sys.argv[1:]))\n")
    done = subprocess.run(["make", "-s", "-o", STAMP, "torchbench-install"], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, env={**os.environ, "TORCHBENCH_DIR": str(checkout),
                                            "TORCHBENCH_MODELS": "dcgan lennard_jones"})
    assert done.returncode == 0, done.stderr
    cwd, python, *argv = json.loads((checkout / "argv.json").read_text())
    assert cwd == str(checkout) and Path(python).parent == ROOT / ".venv" / "bin"
    assert argv == ["--torch", "--continue_on_fail", "dcgan", "lennard_jones"]


# --------------------------------------------------------------------------
# The comparison on the run's page


def _night(root, with_previous=True):
    if with_previous:
        place_run(FIXTURES / "old.csv", root / "2026-01-01" / "performance.csv")
    place_run(FIXTURES / "new.csv", root / "2026-01-02" / "performance.csv")


def test_summary_leaves_the_page_to_the_gate_when_it_judged(tmp_path, monkeypatch, capsys):
    """The gate writes its report to the run's page itself; the summary step
    adds only the line that says the night is not green then, and prints
    that report (after the line) where there is no page."""
    root = tmp_path / "nightly"
    _night(root)
    page = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(page))
    assert nightly.main(["gate", "--root", str(root), "--date", "2026-01-02"]) == 1  # a new failure
    compared = (root / "2026-01-02" / "compare.md").read_text()
    assert page.read_text() == compared + "\n" and "2026-01-01" in compared
    assert nightly.main(["summary", "--root", str(root), "--date", "2026-01-02"]) == 0
    line = "**Nightly 2026-01-02 is not green: FAIL** (exit status 1): a confirmed regression.\n\n"
    assert page.read_text() == compared + "\n" + line
    monkeypatch.delenv("GITHUB_STEP_SUMMARY")
    capsys.readouterr()
    assert nightly.main(["summary", "--root", str(root), "--date", "2026-01-02"]) == 0
    assert capsys.readouterr().out == line + compared


@pytest.mark.parametrize("case, expected", [
    ("unmerged", "no results\n\nThe shards were not merged"),
    ("ungated", "not judged\n\nThe gate wrote no report"),
])
def test_summary_says_why_there_is_no_judgement(tmp_path, monkeypatch, capsys, case, expected):
    root = tmp_path / "nightly"
    page = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(page))
    if case == "unmerged":
        place_run(FIXTURES / "old.csv", root / "2026-01-01" / "performance.csv")
    else:
        _night(root)
    assert nightly.main(["summary", "--root", str(root), "--date", "2026-01-02"]) == 0
    assert expected in page.read_text()
    if case == "ungated":  # recorded for the page, and uploaded and published with the night
        recorded = json.loads((root / "2026-01-02" / "night.json").read_text())["not_judged"]
        assert "did not finish (the job timed out or was cancelled)" in recorded


def test_the_merge_jobs_record_steps_run_after_a_timeout_too():
    """A job that outlives its timeout is cancelled: `!cancelled()` steps are
    skipped, `always()` ones run.  The summary (which records a night not
    judged) and the upload run whatever happened."""
    import yaml

    steps = yaml.safe_load((ROOT / ".github" / "workflows" / "nightly.yml").read_text())["jobs"]["merge"]["steps"]
    conditions = {s.get("name"): s.get("if", "") for s in steps}
    for name in ("Say why on the run's page", "Upload the night and the dashboard", "Render the dashboard"):
        assert conditions[name].startswith("${{ always()"), (name, conditions[name])


# --------------------------------------------------------------------------
# The light install: merge, gate and the dashboard without torch


def test_light_requirements_are_setup_cfgs_without_the_heavy_ones(capsys):
    assert nightly.main(["light-requirements"]) == 0
    light = capsys.readouterr().out.split()
    assert "pandas>=2.0" in light and "matplotlib>=3.7" in light
    assert not [r for r in light if r.split("=")[0].split(">")[0].split("<")[0] in plan.HEAVY]


def _requirement_name(text: str) -> str:
    import re

    return re.split(r"[<>=!~\[; (]", text.strip(), maxsplit=1)[0].lower().replace("_", "-")


def _closure(names):
    """The distributions ``names`` install, with their dependencies (those
    installed here; markers with an ``extra`` are an extra's, not taken)."""
    seen, todo = set(), [n.lower().replace("_", "-") for n in names]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        try:
            requires = metadata.distribution(name).requires or []
        except metadata.PackageNotFoundError:
            continue
        seen.add(name)
        todo += [_requirement_name(r) for r in requires if "extra ==" not in r]
    return seen


BLOCKER = '''
import importlib.abc, json, os, sys
allowed = set(json.loads(os.environ["LIGHT_MODULES"]))
class Blocker(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        top = name.partition(".")[0]
        stdlib = top in sys.stdlib_module_names or top.startswith("_sysconfigdata")
        if top not in allowed and not stdlib:
            raise ImportError(f"{name} is not in the light install")
sys.meta_path.insert(0, Blocker())
'''


def test_report_steps_import_only_the_light_install(tmp_path):
    """merge, gate (without re-runs) and dashboard run with every import
    outside the light install refused (torch and the rest of the heavy set, and whatever only
    they bring, like jinja2 or sympy): what `make install-light` installs is
    all they need."""
    light = [_requirement_name(r) for r in plan.requirements_without_heavy(ROOT / "setup.cfg")]
    dists = _closure(light)
    modules = {"benchmarks", "runner", "sitecustomize", "_distutils_hack", "xla_backends"} | {
        top for top, owners in metadata.packages_distributions().items()
        if {o.lower().replace("_", "-") for o in owners} & dists}
    assert "torch" not in modules and "pandas" in modules
    (tmp_path / "hook").mkdir()
    (tmp_path / "hook" / "sitecustomize.py").write_text(BLOCKER)
    env = {**os.environ, "LIGHT_MODULES": json.dumps(sorted(modules)), "MPLBACKEND": "Agg",
           "PYTHONPATH": os.pathsep.join([str(tmp_path / "hook"), str(ROOT)])}
    root, site = tmp_path / "nightly", tmp_path / "site"
    place_run(FIXTURES / "old.csv", root / "2026-01-01" / "performance.csv")
    split_into_shards(FIXTURES / "new.csv", root / "2026-01-02" / "shards")
    probe = subprocess.run([sys.executable, "-c", "import torch"], env=env, capture_output=True, text=True)
    assert "torch is not in the light install" in probe.stderr  # the blocker works
    codes = {}
    for target in ("nightly-merge", "nightly-gate", "dashboard"):
        done = subprocess.run(["make", "-s", "-o", STAMP, target, f"NIGHTLY_ROOT={root}", f"SITE_DIR={site}",
                               "GATE_ARGS=--no-confirm"],
                              cwd=ROOT, env={**env, "NIGHTLY_DATE": "2026-01-02"}, capture_output=True, text=True,
                              timeout=600)
        assert "not in the light install" not in done.stderr, done.stderr
        codes[target] = done.returncode
    assert codes == {"nightly-merge": 0, "nightly-gate": 2, "dashboard": 0}  # the fixtures regress: make's 2
    assert (site / "index.html").is_file()


def test_the_steps_before_any_install_need_only_the_standard_library(tmp_path):
    """plan, light-requirements, summary, notify and the results-branch steps run on
    the runner's own Python before (or without) any install: every import
    beyond the standard library and the project is refused, and they work."""
    (tmp_path / "hook").mkdir()
    (tmp_path / "hook" / "sitecustomize.py").write_text(BLOCKER)
    env = {**os.environ, "LIGHT_MODULES": json.dumps(["benchmarks", "sitecustomize", "_distutils_hack"]),
           "PYTHONPATH": os.pathsep.join([str(tmp_path / "hook"), str(ROOT)])}
    env.pop("GITHUB_STEP_SUMMARY", None)
    steps = [["plan", "--shards", "2"], ["light-requirements"],
             ["summary", "--root", str(tmp_path), "--date", "2026-01-02"],
             ["publish", "--help"], ["fetch-history", "--help"], ["notify", "--help"]]
    for step in steps:
        done = subprocess.run([sys.executable, "-m", "benchmarks.nightly", *step], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0 and "not in the light install" not in done.stderr, (step, done.stderr)


# --------------------------------------------------------------------------
# The token of the git steps


def test_git_env_adds_the_token_as_an_extra_header():
    env = publish.git_env({"NIGHTLY_GIT_TOKEN": "s3cret", "GIT_CONFIG_COUNT": "1",
                           "GIT_CONFIG_KEY_0": "safe.directory", "GIT_CONFIG_VALUE_0": "/w"})
    assert env["GIT_CONFIG_COUNT"] == "2" and env["GIT_CONFIG_KEY_0"] == "safe.directory"
    assert env["GIT_CONFIG_KEY_1"] == "http.https://github.com/.extraheader"
    basic = base64.b64encode(b"x-access-token:s3cret").decode()
    assert env["GIT_CONFIG_VALUE_1"] == f"AUTHORIZATION: basic {basic}"
    assert publish.git_env({"PATH": "/bin"}) == {"PATH": "/bin"}  # no token, nothing added


def test_git_reads_the_token_header_from_the_environment(tmp_path):
    """git takes the header as configuration from the environment (so it is
    on no command line and in no file)."""
    env = publish.git_env({"PATH": os.environ["PATH"], "HOME": str(tmp_path), "NIGHTLY_GIT_TOKEN": "s3cret",
                           "GITHUB_SERVER_URL": "https://git.example"})
    done = subprocess.run(["git", "config", "--get", "http.https://git.example/.extraheader"], env=env,
                          capture_output=True, text=True, cwd=tmp_path)
    assert done.stdout.strip().startswith("AUTHORIZATION: basic ")
