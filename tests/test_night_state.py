"""Only a pass is green: every reader of a night's gate (the run's page, the
dashboard's nights table, the issue, a cluster job's status) reads its
``compare.json``'s ``state`` through ``night.gate_state`` (its ``exit_code``
for files written before the state was), never the verdict's words; a night
no gate judged is not green either.

The documents are built in the gate's contract: a top-level ``state`` of
``pass``, ``suspected``, ``fail`` or ``unjudged`` and its ``exit_code``
(0, 4, 1, 3).
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.nightly import cli as nightly_cli
from benchmarks.nightly import notify
from benchmarks.judge import verdict
from benchmarks.nightly.night import STATE_EXIT, Night, gate_state
from benchmarks.results import dashboard
from benchmarks.results.dashboard import site
from test_nightly import FIXTURES, place_run
from test_notify import github  # noqa: F401 (a fixture)

ROOT = Path(__file__).resolve().parent.parent
DATE = "2026-01-04"
# The night the issue describes: every row inconclusive, on a loaded machine.
UNJUDGED = {"state": "unjudged", "exit_code": 3, "baseline": "2026-01-03",
            "verdict": "INCONCLUSIVE (4 inconclusive, 4 timed on a loaded machine)", "rows": [],
            "policies": [{"policy": "speedup", "verdict": "PASS: 4 inconclusive"}]}
DOCUMENTS = {
    "pass": {"state": "pass", "exit_code": 0, "verdict": "PASS (4 no change)", "rows": []},
    "suspected": {"state": "suspected", "exit_code": 4, "verdict": "SUSPECTED (1 slower, first night)",
                  "rows": []},
    "fail": {"state": "fail", "exit_code": 1, "verdict": "FAIL (1 slower)", "rows": []},
    "unjudged": UNJUDGED,
}


def _green(document):
    return Night(DATE, Path(DATE), {}, document).green


@pytest.mark.parametrize("state", sorted(DOCUMENTS))
def test_the_state_is_read_and_only_a_pass_is_green(state):
    assert gate_state(DOCUMENTS[state]) == state
    assert _green(DOCUMENTS[state]) == (state == "pass")


def test_the_words_of_the_verdict_are_never_read():
    """A document whose verdict says PASS but whose state is unjudged is not
    green; one whose words say FAIL but whose state is pass is."""
    assert not _green({"state": "unjudged", "exit_code": 3, "verdict": "PASS: 4 inconclusive"})
    assert _green({"state": "pass", "exit_code": 0, "verdict": "FAIL (words only)"})


def test_the_judge_and_the_readers_share_the_exit_statuses():
    assert verdict.EXIT_CODES is STATE_EXIT
    assert STATE_EXIT == {"pass": 0, "fail": 1, "unjudged": 3, "suspected": 4}


@pytest.mark.parametrize("code, state", [(0, "pass"), (1, "fail"), (3, None), (2, None), (143, None)])
def test_a_file_without_a_state_is_read_by_its_exit_code(code, state):
    """The old format (a verdict, no state) knew only pass and fail."""
    assert gate_state({"verdict": "whatever", "exit_code": code}) == state


@pytest.mark.parametrize("document", [{}, {"verdict": "PASS"}, {"state": "green", "verdict": "PASS"},
                                      {"exit_code": 0}, {"exit_code": "0", "verdict": "PASS"}])
def test_a_document_that_says_no_state_is_not_judged_and_not_green(document):
    assert gate_state(document) is None
    assert not _green(document)


@pytest.mark.parametrize("document", [{"state": "green", "verdict": "PASS"}, {"exit_code": 0}])
def test_the_state_step_reads_a_document_without_a_state_as_unjudged(tmp_path, capsys, document):
    _night(tmp_path, document)
    assert nightly_cli.main(["state", "--root", str(tmp_path / "nightly"), "--date", DATE]) == 3
    assert capsys.readouterr().out == "state=unjudged\n"


def _night(tmp_path, document, date=DATE):
    folder = tmp_path / "nightly" / date
    place_run(FIXTURES / "new.csv", folder / "performance.csv")
    (folder / "compare.md").write_text(f"# comparison: {document.get('verdict')}\n")
    (folder / "compare.json").write_text(json.dumps(document))
    return folder


@pytest.mark.parametrize("state, code", [("pass", 0), ("fail", 1), ("unjudged", 3), ("suspected", 4)])
def test_the_state_step_is_a_jobs_status(tmp_path, capsys, state, code):
    _night(tmp_path, DOCUMENTS[state])
    assert nightly_cli.main(["state", "--root", str(tmp_path / "nightly"), "--date", DATE]) == code
    out, err = capsys.readouterr()
    assert out == f"state={state}\n"
    assert ("not green" in err) == (state != "pass")


def test_a_night_the_gate_never_judged_is_unjudged(tmp_path, capsys):
    (tmp_path / "nightly" / DATE).mkdir(parents=True)
    assert nightly_cli.main(["state", "--root", str(tmp_path / "nightly"), "--date", DATE]) == 3
    assert "compare.json not written" in capsys.readouterr().err


@pytest.mark.parametrize("state", ["unjudged", "suspected", "fail"])
def test_the_runs_page_says_a_night_is_not_green(tmp_path, monkeypatch, state):
    _night(tmp_path, DOCUMENTS[state])
    page = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(page))
    assert nightly_cli.main(["summary", "--root", str(tmp_path / "nightly"), "--date", DATE]) == 0
    assert f"is not green: {state.upper()}" in page.read_text()


def test_the_runs_page_adds_nothing_to_a_pass(tmp_path, monkeypatch):
    _night(tmp_path, DOCUMENTS["pass"])
    page = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(page))
    assert nightly_cli.main(["summary", "--root", str(tmp_path / "nightly"), "--date", DATE]) == 0
    assert not page.exists() or "not green" not in page.read_text()


def test_the_dashboard_colours_every_night_that_is_not_a_pass(tmp_path):
    dates = ["2026-01-01", "2026-01-02", "2026-01-03", "2026-01-04"]
    states = ["pass", "suspected", "fail", "unjudged"]
    nights = [Night(d, tmp_path / d, {}, DOCUMENTS[s]) for d, s in zip(dates, states)]
    data = {"commits": [], "nightCommits": [[] for _ in nights], "runUrls": [None] * 4, "repoUrl": None}
    table = site.nights_table(nights, data, {})
    rows = {d: next(r for r in table.split("<tr") if f"<td>{d}" in r) for d in dates}
    assert 'class=' not in rows["2026-01-01"].split(">")[0]
    assert 'class="not-green"' in rows["2026-01-02"] and "<td>SUSPECTED (1 slower" in rows["2026-01-02"]
    assert 'class="fail"' in rows["2026-01-03"]
    assert 'class="not-green"' in rows["2026-01-04"] and "UNJUDGED: INCONCLUSIVE" in rows["2026-01-04"]
    assert [n.gate_failed for n in nights] == [False, True, True, True]  # not green


def test_an_unjudged_night_opens_an_issue(tmp_path, github):  # noqa: F811
    _night(tmp_path, UNJUDGED)
    assert nightly_cli.main(["notify", "--root", str(tmp_path / "nightly"), "--date", DATE]) == 0
    (issue,) = github.issues
    assert issue["title"] == f"Nightly {DATE}: UNJUDGED: INCONCLUSIVE (4 inconclusive, 4 timed on a loaded machine)"


def test_a_passing_night_tells_nobody(tmp_path, github):  # noqa: F811
    _night(tmp_path, DOCUMENTS["pass"])
    assert nightly_cli.main(["notify", "--root", str(tmp_path / "nightly"), "--date", DATE]) == 0
    assert github.issues == [] and github.calls == []


# --------------------------------------------------------------------------
# A cluster job's status (deploy/merge.sh)


def _venv(tmp_path, gate_exit, document):
    """A venv whose python is this one, except the gate: it writes
    ``document`` as the night's compare.json and exits ``gate_exit`` (the
    gate's process is not the judge of the job's status; its file is)."""
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    python = venv / "bin" / "python"
    python.write_text(f"""#!/bin/bash
if [ "$1 $2 $3" = "-m benchmarks.nightly gate" ]; then
    printf '%s' {json.dumps(json.dumps(document))} > "$NIGHTLY_ROOT/$NIGHTLY_DATE/compare.json"
    exit {gate_exit}
fi
if [ "$1 $2" = "runner.py dashboard" ]; then exit 0; fi  # the site is not what is tested here
exec {sys.executable} "$@"
""")
    python.chmod(0o755)
    (venv / ".installed").write_text("")
    return venv


@pytest.mark.parametrize("gate_exit, state, code", [(0, "unjudged", 3), (3, "unjudged", 3), (0, "suspected", 4),
                                                    (1, "fail", 1), (0, "pass", 0), (2, "pass", 2)])
def test_a_cluster_merge_is_green_only_on_a_pass(tmp_path, gate_exit, state, code):
    """The merge job's status is the state's, whatever the gate's process
    exited with (bad input and interruptions excepted)."""
    root = tmp_path / "nightly"
    place_run(FIXTURES / "new.csv", root / DATE / "shards" / "shard-0.csv")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NIGHTLY_", "GATE_", "GITHUB_"))}
    env.update(NIGHTLY_DATE=DATE, NIGHTLY_SHARDS="1", NIGHTLY_ROOT=str(root), SITE_DIR=str(tmp_path / "site"),
               VENV=str(_venv(tmp_path, gate_exit, DOCUMENTS[state])), PYTHON=sys.executable,
               PYTHONPATH=str(ROOT))
    done = subprocess.run([str(ROOT / "deploy" / "merge.sh")], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == code, done.stderr
    assert f"exit status {code}" in done.stderr
