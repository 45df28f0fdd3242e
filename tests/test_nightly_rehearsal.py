"""The nightly workflow rehearsed as GitHub runs it (``gha_runner``): cron
events, each job in a workspace of its own that the runner's user owns while
the steps run as root, the workflow's environment, artifacts carried from job
to job, a re-run job, the results branch on an origin repository.

* Fast (the default suite): the previous night is already on the results
  branch (the compare fixtures' old run); tonight's shard jobs stand in with
  the fixtures' new run split in two; every other job runs for real.
* Slow: two consecutive nights from scratch on one tiny model (the first
  with the runner's clock a day back), the second night's gate comparing
  against the first night the workflow itself published.
* A season: the runner image moves Python between two nights (the cached
  venv's interpreter gone), a gate outlives the merge job's time, an ad-hoc
  dispatch between scheduled nights.

Each night prints its wall time (``pytest -s``).
"""
from __future__ import annotations

import csv
import datetime
import functools
import io
import json
import os
import shutil
import time
from pathlib import Path

import pytest
import yaml

import gha_runner
from gha_runner import JobRecord, Run, branch_files, push_night
from gha_workspace import make_origin, needs_root
from test_nightly import split_into_shards

from benchmarks.nightly.plan import plan_lines, read_plan
from benchmarks.results import compare, store

ROOT = Path(__file__).resolve().parent.parent
NIGHTLY = ROOT / ".github" / "workflows" / "nightly.yml"
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "compare"
BRANCH = "nightly-results"

pytestmark = pytest.mark.skipif(needs_root() is not None, reason=str(needs_root()))


def _today() -> str:
    return datetime.datetime.now(datetime.timezone.utc).date().isoformat()


def _yesterday() -> str:
    return (datetime.datetime.now(datetime.timezone.utc).date() - datetime.timedelta(days=1)).isoformat()


def _explain(run: Run) -> str:
    return "\n\n".join(f"=== {name}: {job.result}\n{job.log()[-4000:]}" for name, job in run.jobs.items())


def _walls(walls: dict[str, float]) -> None:
    """The nights' wall times, for the closing note of a season."""
    print("\n" + "\n".join(f"{night:<44} {seconds:6.1f} s" for night, seconds in walls.items()))


def fixture_shards(run: Run, contexts: dict, source: Path = FIXTURES / "new.csv") -> JobRecord:
    """The shard jobs' artifacts, from a run (the fixtures' new one) split
    into the plan's count."""
    count = int(contexts["needs"]["plan"]["outputs"]["count"])
    staging = run.folder / "fixture-shards"
    split_into_shards(source, staging, shards=count)
    for index in range(count):
        artifact = run.artifact(f"shard-{index}")
        for path in staging.glob(f"shard-{index}.*"):
            shutil.copy2(path, artifact / path.name)
    return JobRecord("shard", "success")


def _planned(date: str, count: int, settings: dict | None = None):
    """The plan job, as it would plan ``date`` (the runner's clock that
    night): its outputs, and the plan it uploads."""
    settings = settings or {"filter": "", "backends": "", "repeat": "", "suite": "builtin", "args": "", "image": ""}

    def stand_in(run: Run, contexts: dict) -> JobRecord:
        text = plan_lines(date, count, settings)
        if (run.artifacts / "plan").exists():
            shutil.rmtree(run.artifacts / "plan")
        (run.artifact("plan") / "plan.txt").write_text(text)
        return JobRecord("plan", "success", dict(line.split("=", 1) for line in text.splitlines()))
    return stand_in


@pytest.fixture
def origin(tmp_path):
    bare = tmp_path / "origin.git"
    make_origin(ROOT, bare)
    return bare


@pytest.mark.xfail(strict=True, reason="written for the old gate's verdict and exit codes; not yet re-checked against the judge's states and the frozen plan (issue #50)")
def test_a_night_after_a_published_one(tmp_path, origin):
    """Tonight's cron run, with last night on the results branch: merged,
    gated against last night (which it fails: the fixtures regress), said
    why on the run's page, an issue opened for it, published, dashboard
    deployed; the publish and Pages jobs re-run."""
    from test_notify import FakeGitHub

    yesterday, today = _yesterday(), _today()
    push_night(origin, BRANCH, {f"{yesterday}/performance.csv": FIXTURES / "old.csv",
                                f"{yesterday}/performance.jsonl": FIXTURES / "old.jsonl"}, tmp_path / "before")
    github = FakeGitHub()
    run = Run(NIGHTLY, origin, tmp_path / "run", event="schedule", variables={"NIGHTLY_SHARDS": "2"},
              api_url=github.url)
    run.run_all(stand_ins={"shard": fixture_shards})
    jobs = run.jobs
    explain = _explain(run)
    settings = {"filter": "", "backends": "", "repeat": "", "suite": "builtin", "args": "", "image": ""}
    assert jobs["plan"].outputs == {"date": today, "count": "2", "shards": "[0, 1]",
                                    "settings": json.dumps(settings, sort_keys=True)}, explain
    merge = jobs["merge"]
    assert merge.step("Merge the shards").outcome == "success", explain
    assert merge.step("Gate against the previous night").outcome == "failure", explain  # the regression
    assert f"last 1 complete night(s) pooled, {yesterday}" in merge.step(
        "Gate against the previous night").log, explain
    assert merge.result == "failure" and merge.outputs == {"merged": "success", "gate": "failure",
                                                          "state": "fail", "dashboard": "success"}, explain
    night = run.artifacts / f"nightly-{today}"
    compared = (night / "nightly" / today / "compare.md").read_text()
    assert merge.summary.startswith(compared + "\n") and yesterday in compared  # the run's page says why
    assert merge.summary.endswith(f"**Nightly {today} is not green: FAIL** (exit status 1): a confirmed regression.\n\n")
    assert json.loads((night / "nightly" / today / "compare.json").read_text())["verdict"].startswith("FAIL")

    # The red night reaches a person: one issue, each failing row annotated.
    assert jobs["notify"].result == "success", explain
    github.server.shutdown()
    [issue] = github.issues
    assert issue["title"].startswith(f"Nightly {today}: FAIL") and issue["labels"] == ["nightly-regression"]
    assert "python runner.py bisect " in issue["body"]
    assert "::error title=Nightly" in jobs["notify"].log()

    # The night is published though the gate failed; the dashboard goes to Pages.
    assert jobs["publish"].result == "success", explain
    published = branch_files(origin, BRANCH)
    assert {f"{yesterday}/performance.csv", f"{today}/performance.csv", f"{today}/compare.json"} <= set(published)
    assert not [p for p in published if "/shards/" in p]
    assert jobs["pages"].result == "success", explain
    assert f"2 nights ({yesterday} to {today})" in (run.pages / "index.html").read_text()

    # Re-run alone (each a new attempt of the run), the publish job has
    # nothing new to push; the Pages job uploads the site again under its
    # attempt's name.
    again = run.run_job("publish")
    assert run.run_attempt == 2
    assert again.result == "success" and "nothing to publish" in again.log(), again.log()
    pages = run.run_job("pages")
    assert pages.result == "success", pages.log()
    assert {p.name for p in run.artifacts.glob("github-pages-*")} == {"github-pages-1", "github-pages-3"}


def _failed(name: str):
    def stand_in(run: Run, contexts: dict) -> JobRecord:
        return JobRecord(name, "failure")
    return stand_in


def test_publish_and_pages_re_run_alone_in_a_new_attempt(tmp_path, origin):
    """Publish lost a push race and Pages hiccuped in the night's attempt:
    each re-run alone, in a new attempt of the run, still finds the night's
    artifact (uploaded by attempt 1) and publishes it."""
    run = Run(NIGHTLY, origin, tmp_path / "run", event="schedule", variables={"NIGHTLY_SHARDS": "2"})
    run.run_all(stand_ins={"shard": fixture_shards, "publish": _failed("publish"), "pages": _failed("pages")})
    assert run.jobs["merge"].outputs["merged"] == "success", _explain(run)
    assert not [p for p in branch_files(origin, BRANCH) if p.startswith(_today())]
    publish = run.run_job("publish")
    assert run.run_attempt == 2
    assert publish.result == "success", publish.log()
    assert f"{_today()}/performance.csv" in branch_files(origin, BRANCH)
    pages = run.run_job("pages")
    assert pages.result == "success", pages.log()
    assert (run.pages / "index.html").is_file()


def test_artifacts_of_an_earlier_attempt_need_the_run_id_and_a_token(tmp_path, origin):
    """The rehearsal's artifacts are the runtime API's: what attempt 1
    uploaded, attempt 2 finds only through the REST API (run id and token),
    and that only with ``actions: read``."""
    run = Run(NIGHTLY, origin, tmp_path / "run", event="schedule")
    run.artifact("night")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    assert run._download({"name": "night"}, workspace)[0]
    run.run_attempt = 2
    assert "Artifact not found" in run._download({"name": "night"}, workspace)[1]
    by_run = {"name": "night", "run-id": str(run.run_id), "github-token": "***"}
    run.permissions = {"contents": "read"}
    assert "Resource not accessible" in run._download(by_run, workspace)[1]
    run.permissions = {"actions": "read"}
    assert run._download(by_run, workspace)[0]


def test_every_checkout_of_this_repository_is_refused_to_plain_git(tmp_path, origin):
    """The rehearsal's workspaces are the trap itself: git run as root
    refuses them unless the job's environment trusts the workspace."""
    run = Run(NIGHTLY, origin, tmp_path / "run", event="schedule")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    ok, _ = run._checkout({}, workspace)
    assert ok
    done = gha_runner.git("-C", str(workspace), "status", check=False)
    assert "dubious ownership" in done.stderr


@pytest.mark.slow
def test_two_nights_from_scratch(tmp_path, origin):
    """Two consecutive cron nights on the tiny lennard_jones model (one
    backend, five repeats): the first starts the results branch, the second
    compares with it, and its merge job is re-run.  Prints the wall time of
    each night."""
    if shutil.which("faketime") is None:
        pytest.fail("faketime not found: run `make faketime` (apt-get install faketime)")
    settings = {"NIGHTLY_SHARDS": "1", "NIGHTLY_FILTER": "^lennard_jones$", "NIGHTLY_BACKENDS": "openxla_eval",
                "NIGHTLY_REPEAT": "5"}
    yesterday, today = _yesterday(), _today()
    walls = []
    for night, clock in ((1, {"plan": "-1d"}), (2, {})):
        started = time.monotonic()
        run = Run(NIGHTLY, origin, tmp_path / f"night{night}", event="schedule", run_id=night,
                  variables=settings, clock=clock)
        run.run_all()
        walls.append(time.monotonic() - started)
        explain = _explain(run)
        date = yesterday if night == 1 else today
        assert run.jobs["plan"].outputs["date"] == date, explain
        assert {name: job.result for name, job in run.jobs.items()} == {
            "plan": "success", "shard": "success", "merge": "success", "publish": "success",
            "notify": "skipped", "pages": "success"}, explain  # a green night tells nobody
        shard_csv = run.artifacts / "shard-0" / "shard-0.csv"
        rows = store.read_rows(shard_csv)
        assert set(rows["name"]) == {"lennard_jones"} and set(rows["status"]) == {"pass"}, explain
        assert len(set(rows["commit"])) == 1 and len(rows["commit"].iloc[0]) == 40  # read as root
        gate_log = run.jobs["merge"].step("Gate against the previous night").log
        if night == 1:
            assert "NO BASELINE" in gate_log and "first night" in gate_log, explain
            assert "NO BASELINE" in run.jobs["merge"].summary
        else:
            assert f"last 1 complete night(s) pooled, {yesterday}" in gate_log, explain
            compared = json.loads((run.artifacts / f"nightly-{today}" / "nightly" / today /
                                   "compare.json").read_text())
            # The suite's other workers share these cores: a row they loaded
            # is inconclusive, never a failure (the night stays green).
            assert (compared["verdict"].startswith("PASS")
                    or compared["verdict"].startswith("INCONCLUSIVE") and "on a loaded machine" in compared["verdict"]
                    ), compared["verdict"]
            assert yesterday in run.jobs["merge"].summary
            # "Re-run jobs": the merge job merges and uploads again, over its artifact.
            again = run.run_job("merge")
            assert again.result == "success", again.log()
        assert f"{date}/performance.csv" in branch_files(origin, BRANCH)
    assert "2 nights" in (tmp_path / "night2" / "pages" / "index.html").read_text()
    _walls({"night 1 from scratch (lennard_jones)": walls[0], "night 2 from scratch (lennard_jones)": walls[1]})



def _days_ago(days: int) -> str:
    return (datetime.datetime.now(datetime.timezone.utc).date() - datetime.timedelta(days=days)).isoformat()


def _edited_run(source: Path, dest: Path, keep=lambda row: True, failing: str = "") -> Path:
    """A copy of the run ``source`` with only the rows ``keep`` accepts, and
    model ``failing`` failing to run (no speedup, no samples)."""
    reader = csv.DictReader(io.StringIO(source.read_text()))
    rows = [r for r in reader if keep(r)]
    for row in rows:
        if row["name"] == failing:
            row.update(status="fail_to_run", speedup="", abs_latency="", speedup_ci_low="", speedup_ci_high="",
                       error="RuntimeError: boom")
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=reader.fieldnames, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(out.getvalue())
    names = {r["name"] for r in rows} - {failing}
    samples = [line for line in store.samples_path(source).read_text().splitlines()
               if json.loads(line)["name"] in names]
    store.samples_path(dest).write_text("".join(line + "\n" for line in samples))
    return dest


@pytest.mark.slow
def test_an_ad_hoc_dispatch_is_never_the_next_nights_baseline(tmp_path, origin):
    """Scheduled night 1 (run by the workflow); an ad-hoc dispatch (one model) on night 2;
    scheduled night 3 with resnet18 newly failing: night 3 is judged against
    night 1, passing night 2 over, and reports resnet18 as a new failure
    (against night 2 it would be "added").  The ad-hoc night is published,
    marked so, and a dispatch never replaces a scheduled night of its date."""
    first, second, third = _days_ago(2), _days_ago(1), _today()
    walls = {}
    started = time.monotonic()
    night1 = Run(NIGHTLY, origin, tmp_path / "night1", event="schedule", run_id=1, variables={"NIGHTLY_SHARDS": "2"})
    night1.run_all(stand_ins={"plan": _planned(first, 2),
                              "shard": functools.partial(fixture_shards, source=FIXTURES / "old.csv")})
    walls["night 1 (scheduled)"] = time.monotonic() - started
    assert night1.jobs["publish"].result == "success", _explain(night1)
    assert "NO BASELINE" in night1.jobs["merge"].step("Gate against the previous night").log, _explain(night1)
    only_alexnet = _edited_run(FIXTURES / "new.csv", tmp_path / "alexnet" / "run.csv",
                               keep=lambda row: row["name"] == "alexnet")
    started = time.monotonic()
    dispatch = Run(NIGHTLY, origin, tmp_path / "night2", event="workflow_dispatch", run_id=2,
                   inputs={"date": second, "filter": "^alexnet$", "shards": 1})
    dispatch.run_all(stand_ins={"shard": functools.partial(fixture_shards, source=only_alexnet)})
    walls["night 2 (dispatch, one model: ad-hoc)"] = time.monotonic() - started
    assert dispatch.jobs["publish"].result == "success", _explain(dispatch)
    published = json.loads(gha_runner.git("show", f"{BRANCH}:{second}/night.json", cwd=origin).stdout)
    assert published["kind"] == "ad-hoc"
    assert "ad-hoc" in (dispatch.pages / "index.html").read_text()

    failing = _edited_run(FIXTURES / "new.csv", tmp_path / "failing" / "run.csv", failing="resnet18")
    started = time.monotonic()
    scheduled = Run(NIGHTLY, origin, tmp_path / "night3", event="schedule", run_id=3,
                    variables={"NIGHTLY_SHARDS": "2"})
    scheduled.run_all(stand_ins={"shard": functools.partial(fixture_shards, source=failing)})
    walls["night 3 (scheduled, resnet18 newly failing)"] = time.monotonic() - started
    explain = _explain(scheduled)
    gate = scheduled.jobs["merge"].step("Gate against the previous night").log
    assert f"complete night(s) pooled, {first} " in gate and f"{second} (ad-hoc" in gate, explain
    verdict = json.loads((scheduled.artifacts / f"nightly-{third}" / "nightly" / third / "compare.json").read_text())
    marks = {(row["name"], row["backend"]): row["mark"] for row in verdict["rows"]}
    assert {mark for (name, _), mark in marks.items() if name == "resnet18"} == {"new failure"}, marks
    # Only what night 1 lacked is "added": not every model night 2 did not run.
    direct = compare.compare(FIXTURES / "old.csv", failing)
    assert ({(r.key.name, r.key.backend) for r in direct.rows if r.mark == compare.ADDED}
            == {key for key, mark in marks.items() if mark == "added"}), marks

    # A dispatch of night 3's date afterwards: it runs and is judged, but the
    # scheduled night 3 stays on the branch as it was.
    before = gha_runner.git("show", f"{BRANCH}:{third}/performance.csv", cwd=origin).stdout
    started = time.monotonic()
    again = Run(NIGHTLY, origin, tmp_path / "night3-dispatch", event="workflow_dispatch", run_id=4,
                inputs={"filter": "^alexnet$", "shards": 1})
    again.run_all(stand_ins={"shard": functools.partial(fixture_shards, source=only_alexnet)})
    walls["night 3 again (dispatch: does not replace it)"] = time.monotonic() - started
    assert again.jobs["publish"].result == "success", _explain(again)
    assert "does not replace it" in again.jobs["publish"].log()
    assert gha_runner.git("show", f"{BRANCH}:{third}/performance.csv", cwd=origin).stdout == before
    _walls(walls)


# --------------------------------------------------------------------------
# A season: the runner's Python moves, a gate outlives the job


def _pip_calls(run: Run) -> list[str]:
    log = run.folder / "pip.log"
    return log.read_text().splitlines() if log.exists() else []


# Two whole nights with a venv installed in each (45 s): make test-all.
@pytest.mark.slow
@pytest.mark.parametrize("key", ["exact", "minor"])
def test_the_runner_moves_python_between_two_nights(tmp_path, origin, key):
    """Night 1 on the image's Python 3.11.7 installs into a fresh venv and
    caches it; by night 2 the image carries 3.11.8 and 3.11.7's tool cache
    is gone, so the cached venv's interpreter dangles.  Keyed on the exact
    interpreter (the workflow), night 2 misses the dead venv and installs
    afresh; keyed on the minor version only (the old key), it restores the
    dead venv and `make install` makes it again.  Either way night 2 gates
    against night 1, and a re-run of its merge job restores night 2's venv
    and installs nothing (the stamps hold the metadata, whatever the
    checkout's mtimes)."""
    workflow = NIGHTLY
    if key == "minor":
        text = NIGHTLY.read_text()
        exact = "-py${{ steps.python.outputs.python-version }}-"
        assert exact in text
        workflow = tmp_path / "nightly.yml"
        workflow.write_text(text.replace(exact, "-py3.11-"))
    caches, tools = tmp_path / "caches", tmp_path / "toolcache"
    yesterday, today = _yesterday(), _today()
    walls = {}
    for night, python, date in ((1, "3.11.7", yesterday), (2, "3.11.8", today)):
        started = time.monotonic()
        run = Run(workflow, origin, tmp_path / f"night{night}", event="schedule", run_id=night,
                  variables={"NIGHTLY_SHARDS": "2"}, python=python, caches=caches, tool_cache=tools)
        run.run_all(stand_ins={"plan": _planned(date, 2), "shard": fixture_shards})
        walls[f"night {night} (Python {python}, {key} key)"] = time.monotonic() - started
        explain = _explain(run)
        merge = run.jobs["merge"]
        assert merge.result == "success" and run.jobs["publish"].result == "success", explain
        assert f"python {python} at {tools}/Python/{python}/x64/bin/python3" in merge.log(), explain
        venv = merge.workspace / ".venv"
        assert os.readlink(venv / "bin" / "python3") == f"{tools}/Python/{python}/x64/bin/python3"
        installs = [line for line in _pip_calls(run) if " -e .[test]" in line]
        assert installs and all(str(venv) in line for line in installs), _pip_calls(run)
        gate = merge.step("Gate against the previous night").log
        if night == 1:
            assert "Cache not found" in merge.log() and "NO BASELINE" in gate, explain
        else:
            assert f"last 1 complete night(s) pooled, {yesterday}" in gate, explain
            restored = "Cache restored" in merge.step("Restore the venv (keyed on the exact interpreter, the "
                                                      "suite and the package metadata)").log
            assert restored == (key == "minor"), explain  # the dead venv, restored by the old key
        assert sorted(p.name for p in (tools / "Python").iterdir()) == [python]  # the image's only 3.11
    dead = [p for p in caches.iterdir() if "3.11.7" in p.name or key == "minor"]
    assert dead and not os.path.exists(dead[0] / "bin" / "python3")  # night 1's venv: its Python is gone

    # "Re-run jobs": the merge job restores night 2's venv (saved after its
    # first attempt, if it was a miss) and installs nothing.
    before = len(_pip_calls(run))
    again = run.run_job("merge")
    assert again.result == "success", again.log()
    if key == "exact":
        assert "Cache restored" in again.log() and len(_pip_calls(run)) == before, _pip_calls(run)[before:]
    _walls(walls)


@pytest.mark.xfail(strict=True, reason="written for the old gate's verdict and exit codes; not yet re-checked against the judge's states and the frozen plan (issue #50)")
def test_a_gate_that_outlives_the_merge_job_leaves_the_night_not_judged(tmp_path, origin):
    """The merge job's time runs out while the gate re-measures: GitHub
    cancels the job, the gate is stopped, the `always()` steps still record
    the night as not judged (run page, night.json) and upload it, and the
    night is published and shown as not judged on the dashboard.  The night
    is not a pass: its issue is opened."""
    from test_notify import FakeGitHub

    github = FakeGitHub()
    yesterday, today = _yesterday(), _today()
    push_night(origin, BRANCH, {f"{yesterday}/performance.csv": FIXTURES / "old.csv",
                                f"{yesterday}/performance.jsonl": FIXTURES / "old.jsonl"}, tmp_path / "before")
    started = time.monotonic()
    run = Run(NIGHTLY, origin, tmp_path / "run", event="schedule", variables={"NIGHTLY_SHARDS": "2"},
              overrun={"merge": "Gate against the previous night"}, api_url=github.url)
    run.run_all(stand_ins={"shard": fixture_shards})
    wall = time.monotonic() - started
    explain = _explain(run)
    merge = run.jobs["merge"]
    assert merge.result == "cancelled", explain
    assert merge.step("Gate against the previous night").outcome == "cancelled", explain
    assert merge.outputs["merged"] == "success" and merge.outputs["gate"] == "cancelled", explain
    for name in ("Say why on the run's page", "Render the dashboard", "Upload the night and the dashboard"):
        assert merge.step(name).outcome == "success", explain
    assert f"# Nightly {today}: not judged" in merge.summary, merge.summary
    night = run.artifacts / f"nightly-{today}" / "nightly" / today
    assert not (night / "compare.json").exists()
    assert "did not finish" in json.loads((night / "night.json").read_text())["not_judged"]
    assert merge.outputs["state"] == "unjudged", explain
    assert run.jobs["notify"].result == "success", explain
    github.server.shutdown()
    [issue] = github.issues
    assert issue["title"].startswith(f"Nightly {today}: UNJUDGED: not judged (The gate wrote no report"), issue
    assert run.jobs["publish"].result == "success", explain
    published = json.loads(gha_runner.git("show", f"{BRANCH}:{today}/night.json", cwd=origin).stdout)
    assert "did not finish" in published["not_judged"]
    assert run.jobs["pages"].result == "success", explain
    assert "NOT JUDGED: " in (run.pages / "index.html").read_text()
    _walls({"night (the gate outlives the merge job)": wall})


def test_a_cancelled_job_runs_only_its_always_steps(tmp_path, origin):
    """The rehearsal's timeout as GitHub documents it: after the step during
    which the job's time ran out, `always()` and `cancelled()` steps run,
    `!cancelled()`, `failure()` and plain steps do not; the job is cancelled."""
    steps = [{"name": "long", "run": "sleep 30"},
             {"name": "plain", "run": "true"},
             {"name": "not cancelled", "if": "${{ !cancelled() }}", "run": "true"},
             {"name": "on failure", "if": "${{ failure() }}", "run": "true"},
             {"name": "always", "if": "${{ always() }}", "run": "true"},
             {"name": "on cancel", "if": "${{ cancelled() }}", "run": "true"}]
    workflow = tmp_path / "w.yml"
    workflow.write_text(yaml.safe_dump({"name": "w", "on": {"schedule": [{"cron": "0 0 * * *"}]},
                                        "jobs": {"j": {"runs-on": "ubuntu-latest", "timeout-minutes": 1,
                                                       "steps": steps}}}))
    started = time.monotonic()
    run = Run(workflow, origin, tmp_path / "run", overrun={"j": "long"})
    job = run.run_job("j")
    assert time.monotonic() - started < 25  # stopped, not waited for
    assert job.result == "cancelled"
    assert {s.name: s.outcome for s in job.steps} == {
        "long": "cancelled", "plain": "skipped", "not cancelled": "skipped", "on failure": "skipped",
        "always": "success", "on cancel": "success"}


@pytest.mark.slow
def test_a_second_red_night_comments_on_the_open_issue(tmp_path, origin):
    """A red dispatched night opens an issue; the scheduled night after it,
    red too (resnet18 newly failing), comments on that issue instead of
    opening another: the fake GitHub API records the calls."""
    from test_notify import FakeGitHub

    first, second, third = _days_ago(2), _days_ago(1), _today()
    push_night(origin, BRANCH, {f"{first}/performance.csv": FIXTURES / "old.csv",
                                f"{first}/performance.jsonl": FIXTURES / "old.jsonl"}, tmp_path / "before")
    github = FakeGitHub()
    try:
        red = Run(NIGHTLY, origin, tmp_path / "night2", event="workflow_dispatch", run_id=2,
                  inputs={"date": second, "shards": 1}, api_url=github.url)
        red.run_all(stand_ins={"shard": fixture_shards})
        assert red.jobs["merge"].outputs["gate"] == "failure", _explain(red)
        assert red.jobs["notify"].result == "success", _explain(red)
        [issue] = github.issues
        assert issue["title"].startswith(f"Nightly {second}: FAIL") and github.comments == []

        failing = _edited_run(FIXTURES / "new.csv", tmp_path / "failing" / "run.csv", failing="resnet18")
        again = Run(NIGHTLY, origin, tmp_path / "night3", event="schedule", run_id=3, api_url=github.url)
        again.run_all(stand_ins={"shard": functools.partial(fixture_shards, source=failing)})
        explain = _explain(again)
        assert again.jobs["merge"].outputs["gate"] == "failure", explain
        assert again.jobs["notify"].result == "success", explain
        assert "commented on issue #1" in again.jobs["notify"].log(), explain
    finally:
        github.server.shutdown()
    assert len(github.issues) == 1  # never a duplicate
    posts = [path.split("?")[0] for method, path, *_ in github.calls if method == "POST"]
    assert len(posts) == 2 and posts[0].endswith("/issues") and posts[1] == posts[0] + "/1/comments", posts
    [(number, comment)] = github.comments
    assert number == 1 and comment.startswith(f"# Nightly {third}: FAIL"), comment
    assert "| resnet18 | torchxla_trace_once | new failure |" in comment, comment


def test_a_re_run_on_a_later_day_keeps_the_nights_date_and_settings(tmp_path, origin):
    """"Re-run all jobs" of a scheduled night, a UTC day later and after the
    repository's variables changed: the plan job finds the plan its first
    attempt uploaded and keeps it (the date, the shard count, the settings),
    so the shards resume into the night they began, with its settings."""
    yesterday, today = _yesterday(), _today()
    first = {"filter": "resnet", "backends": "openxla_eval", "repeat": "5", "suite": "builtin", "args": "",
             "image": ""}
    run = Run(NIGHTLY, origin, tmp_path / "run", event="schedule",
              variables={"NIGHTLY_SHARDS": "3", "NIGHTLY_BACKENDS": "inductor", "NIGHTLY_REPEAT": "7"})
    # Attempt 1 ran yesterday (its plan job's clock) with yesterday's variables.
    (run.artifact("plan") / "plan.txt").write_text(plan_lines(yesterday, 2, first))
    run.run_attempt = 2
    again = run.run_job("plan")
    assert again.result == "success", again.log()
    assert again.outputs["date"] == yesterday and again.outputs["count"] == "2", again.outputs
    assert json.loads(again.outputs["settings"]) == first
    assert read_plan(run.artifacts / "plan" / "plan.txt")["date"] == yesterday  # uploaded again, unchanged


def test_the_first_attempt_plans_and_uploads_the_night(tmp_path, origin):
    """A first attempt freezes the variables it saw in the plan it uploads."""
    run = Run(NIGHTLY, origin, tmp_path / "run", event="schedule",
              variables={"NIGHTLY_SHARDS": "3", "NIGHTLY_BACKENDS": "inductor", "NIGHTLY_REPEAT": "7",
                         "NIGHTLY_FILTER": "^alexnet$"})
    plan = run.run_job("plan")
    assert plan.result == "success", plan.log()
    frozen = read_plan(run.artifacts / "plan" / "plan.txt")
    assert frozen["date"] == _today() and frozen["count"] == 3
    assert {k: frozen["settings"][k] for k in ("filter", "backends", "repeat", "suite")} == {
        "filter": "^alexnet$", "backends": "inductor", "repeat": "7", "suite": "builtin"}
    assert json.loads(plan.outputs["settings"]) == frozen["settings"]
