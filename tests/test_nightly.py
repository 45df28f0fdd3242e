"""Tests of benchmarks.nightly: the steps the CI workflow runs (plan, shard,
merge, gate, the results branch) and, slow, `make nightly` end to end.

The gate and merge steps run on the compare fixtures (tests/fixtures/compare);
the results branch on a throw-away git repository with a bare remote.
"""
import csv
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import nightly
from benchmarks.nightly import cli as nightly_cli
from benchmarks.nightly import shard as shard_step
from benchmarks.nightly.night import Night, night_folders, shard_csv
from benchmarks.results import store

ROOT = Path(__file__).resolve().parent.parent
FAULT_MODELS = Path(__file__).resolve().parent / "fault_models"
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "compare"


def place_run(src_csv, dst_csv):
    """Copy a run (CSV + samples) to ``dst_csv``."""
    dst_csv.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(src_csv, dst_csv)
    shutil.copy(store.samples_path(src_csv), store.samples_path(dst_csv))
    return dst_csv


def split_into_shards(src_csv, folder, shards=2):
    """Split a run into ``shards`` shard files the way --total-partitions
    does: models round-robin in name order."""
    reader = csv.DictReader(io.StringIO(Path(src_csv).read_text()))
    rows = list(reader)
    names = sorted({r["name"] for r in rows})
    owner = {name: i % shards for i, name in enumerate(names)}
    records = [json.loads(line) for line in store.samples_path(src_csv).read_text().splitlines()]
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for shard in range(shards):
        path = folder / f"shard-{shard}.csv"
        out = io.StringIO()
        writer = csv.DictWriter(out, fieldnames=reader.fieldnames, lineterminator="\n")
        writer.writeheader()
        writer.writerows(r for r in rows if owner[r["name"]] == shard)
        path.write_text(out.getvalue())
        store.samples_path(path).write_text(
            "".join(json.dumps(r) + "\n" for r in records if owner[r["name"]] == shard))
        paths.append(path)
    return paths


# --------------------------------------------------------------------------
# plan


def test_plan_prints_github_outputs(capsys):
    assert nightly.main(["plan", "--shards", "3", "--date", "2026-01-02"]) == 0
    assert capsys.readouterr().out.startswith("date=2026-01-02\ncount=3\nshards=[0, 1, 2]\nsettings={")


def test_plan_defaults_to_today_utc(capsys):
    import datetime

    assert nightly.main(["plan", "--date", ""]) == 0
    today = datetime.datetime.now(datetime.timezone.utc).date().isoformat()
    assert capsys.readouterr().out.startswith(f"date={today}\ncount=4\n")


@pytest.mark.parametrize("flags, message", [
    (["--shards", "0"], "from 1 to 64"),
    (["--shards", "65"], "from 1 to 64"),
    (["--shards", "$(id)"], "from 1 to 64"),
    (["--date", "2026-02-30"], "not a date"),
    (["--date", "20260101"], "not a date"),
])
def test_plan_bad_input_is_exit_2(capsys, flags, message):
    assert nightly.main(["plan", *flags]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err


def test_plan_needs_only_the_standard_library():
    """The workflow plans before installing anything: no pandas, no torch."""
    code = ("import sys; from benchmarks import nightly; nightly.main(['plan', '--shards', '2']); "
            "heavy = {'pandas', 'torch', 'scipy', 'numpy'} & set(sys.modules); assert not heavy, heavy")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("argv", [["plan", "--repeat", "3"], ["plan", "--repeat", "x"],
                                  ["shard", "--shards", "1", "--shard", "0", "--", "--repeat", "4"],
                                  ["shard", "--shards", "1", "--shard", "0", "--", "--repeat=2"],
                                  ["--", "--repeat", "1"]])
def test_a_repeat_count_the_gate_cannot_judge_is_refused(argv, tmp_path, capsys):
    """Below compare's --min-samples every row is inconclusive and every
    night would pass without comparing anything: the plan (and a shard, or
    the whole night) refuses it before anything runs."""
    extra = [] if argv[0] == "plan" else ["--root", str(tmp_path)]
    where = 1 if argv[0] in ("plan", "shard") else 0
    assert nightly.main([*argv[:where], *extra, *argv[where:]]) == 2
    assert "at least 5 timed repeats" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


def test_merge_without_shards_is_exit_2(tmp_path, capsys):
    assert nightly.main(["merge", "--root", str(tmp_path), "--date", "2026-01-02"]) == 2
    assert "no shards under" in capsys.readouterr().err


def test_gate_judges_against_the_earlier_nights_only(tmp_path, capsys):
    place_run(FIXTURES / "new.csv", tmp_path / "2025-12-30" / "performance.csv")
    place_run(FIXTURES / "old.csv", tmp_path / "2026-01-01" / "performance.csv")
    place_run(FIXTURES / "new.csv", tmp_path / "2026-01-02" / "performance.csv")
    place_run(FIXTURES / "old.csv", tmp_path / "2026-01-03" / "performance.csv")  # later: ignored
    (tmp_path / "notes").mkdir()
    # Two earlier nights are too few to judge timings, but a new failure needs no history.
    assert nightly.main(["gate", "--root", str(tmp_path), "--date", "2026-01-02"]) == 1
    night = tmp_path / "2026-01-02"
    verdict = json.loads((night / "compare.json").read_text())
    assert verdict["state"] == "fail" and verdict["exit_code"] == 1
    rules = {r["rule"] for r in verdict["rows"] if r["metric"] == "speedup"}
    assert {"new failure", "removed", "too few nights"} <= rules
    assert max(r["nights"] for r in verdict["rows"]) <= 2
    assert (night / "compare.md").read_text().startswith("# Night 2026-01-02: FAIL")
    assert capsys.readouterr().out.startswith("night 2026-01-02: FAIL")


def test_gate_thresholds_come_from_the_policy_file_only(tmp_path, capsys):
    place_run(FIXTURES / "new.csv", tmp_path / "2026-01-02" / "performance.csv")
    assert nightly.main(["gate", "--root", str(tmp_path), "--date", "2026-01-02", "--threshold", "9"]) == 2
    assert "--threshold" in capsys.readouterr().err


def test_gate_first_night_is_unjudged_and_says_so(tmp_path, capsys):
    place_run(FIXTURES / "old.csv", tmp_path / "2026-01-02" / "performance.csv")
    assert nightly.main(["gate", "--root", str(tmp_path), "--date", "2026-01-02"]) == 3
    assert capsys.readouterr().out.startswith("night 2026-01-02: UNJUDGED")
    assert (tmp_path / "2026-01-02" / "compare.md").read_text().startswith("# Night 2026-01-02: UNJUDGED")


def test_gate_without_the_night_is_exit_2(tmp_path, capsys):
    assert nightly.main(["gate", "--root", str(tmp_path), "--date", "2026-01-02"]) == 2
    assert "run (or merge) the night first" in capsys.readouterr().err


def test_earlier_nights_ignore_other_folders(tmp_path):
    for name in ("2026-01-01", "latest", "2026-01-01-rerun"):
        place_run(FIXTURES / "old.csv", tmp_path / name / "performance.csv")
    assert night_folders(tmp_path, "2026-01-02") == [tmp_path / "2026-01-01"]
    assert night_folders(tmp_path, "2026-01-01") == []


# --------------------------------------------------------------------------
# The results branch


def _git(*args, cwd):
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def repository(tmp_path):
    """A clone with a bare ``origin`` that has no results branch yet."""
    remote, work = tmp_path / "remote.git", tmp_path / "work"
    _git("init", "-q", "--bare", str(remote), cwd=tmp_path)
    _git("init", "-q", "-b", "main", str(work), cwd=tmp_path)
    (work / "README.md").write_text("project\n")
    _git("add", "README.md", cwd=work)
    _git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "start", cwd=work)
    _git("remote", "add", "origin", str(remote), cwd=work)
    _git("push", "-q", "origin", "main", cwd=work)
    return work, remote


def _make(target, cwd, **env):
    """A target of the project's Makefile, run in ``cwd`` (as CI runs it in its checkout)."""
    return subprocess.run(["make", "-s", "-f", str(ROOT / "Makefile"), target],
                          cwd=cwd, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT), **env})


def test_results_branch_round_trip(repository):
    work, remote = repository
    history = work / "results" / "nightly"
    first = _make("nightly-history", work)
    assert first.returncode == 0 and "has no branch nightly-results yet" in first.stderr, first.stderr
    # An empty worktree, not the project; the gate learns the branch is new.
    assert sorted(p.name for p in history.iterdir()) == [".git", ".history.json"]
    assert json.loads((history / ".history.json").read_text())["exists"] is False
    night = place_run(FIXTURES / "old.csv", history / "2026-01-01" / "performance.csv").parent
    (night / "compare.md").write_text("# no comparison on the first night\n")
    split_into_shards(FIXTURES / "old.csv", night / "shards")
    published = _make("nightly-publish", work, NIGHTLY_DATE="2026-01-01")
    assert published.returncode == 0, published.stderr
    tree = _git("ls-tree", "-r", "--name-only", "nightly-results", cwd=remote).split()
    assert tree == ["2026-01-01/compare.md", "2026-01-01/performance.csv", "2026-01-01/performance.jsonl"]

    # The next night, on a fresh machine: the history comes back, a night is added.
    _git("worktree", "remove", "--force", str(history), cwd=work)
    again = _make("nightly-history", work)
    assert again.returncode == 0 and "1 earlier night(s)" in again.stderr, again.stderr
    assert json.loads((history / ".history.json").read_text())["exists"] is True
    assert (history / "2026-01-01" / "performance.csv").read_bytes() == (FIXTURES / "old.csv").read_bytes()
    place_run(FIXTURES / "new.csv", history / "2026-01-02" / "performance.csv")
    assert _make("nightly-publish", work, NIGHTLY_DATE="2026-01-02").returncode == 0
    log = _git("log", "--format=%s", "nightly-results", cwd=remote).split("\n")
    assert log[:2] == ["nightly 2026-01-02", "nightly 2026-01-01"]
    assert "README.md" not in _git("ls-tree", "-r", "--name-only", "nightly-results", cwd=remote)
    # A re-run of the publishing job changes nothing and still succeeds.
    rerun = _make("nightly-publish", work, NIGHTLY_DATE="2026-01-02")
    assert rerun.returncode == 0 and "nothing to publish" in rerun.stderr


def test_fetch_history_refuses_a_used_folder(repository):
    work, _ = repository
    (work / "results" / "nightly" / "2026-01-01").mkdir(parents=True)
    done = _make("nightly-history", work)
    assert done.returncode != 0 and "is not empty" in done.stderr


def test_publish_without_the_night_is_an_error(repository):
    work, _ = repository
    assert _make("nightly-history", work).returncode == 0
    done = _make("nightly-publish", work, NIGHTLY_DATE="2026-01-05")
    assert done.returncode != 0 and "nothing to publish" in done.stderr


# --------------------------------------------------------------------------
# `make nightly` end to end (slow: two runs of the harness)


def _night(root, date):
    env = dict(os.environ, PYTHONPATH=str(FAULT_MODELS), PJRT_DEVICE="CPU")
    return subprocess.run(
        [sys.executable, "-m", "benchmarks.nightly", "--root", str(root), "--date", date,
         "--backends", "eager", "--", "--suite", "torchbench", "--only", "steady",
         "--repeat", "12", "--warmup", "1"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def two_nights(tmp_path_factory):
    root = tmp_path_factory.mktemp("nightly")
    return root, _night(root, "2026-01-01"), _night(root, "2026-01-02")


@pytest.mark.slow
def test_first_night_writes_a_dated_run_and_compares_nothing(two_nights):
    root, first, _ = two_nights
    assert first.returncode == 3, first.stderr  # nothing to judge against: unjudged, never green
    night = root / "2026-01-01"
    for name in ("performance.csv", "performance.jsonl", "performance.md", "performance.png"):
        assert (night / name).stat().st_size > 0, name
    assert "night 2026-01-01: UNJUDGED" in first.stdout
    assert (night / "compare.md").read_text().startswith("# Night 2026-01-01: UNJUDGED")
    assert Night.read(night).meta["partial"] == ""  # the run finished: a complete night
    assert "![speedups](performance.png)" in (night / "performance.md").read_text()


@pytest.mark.slow
def test_second_night_compares_with_the_first(two_nights):
    root, _, second = two_nights
    # A/A with one earlier night: too few to judge, and never a failure.
    assert second.returncode == 3, second.stdout + second.stderr
    night = root / "2026-01-02"
    verdict = json.loads((night / "compare.json").read_text())
    assert verdict["state"] == "unjudged"
    assert {r["rule"] for r in verdict["rows"]} == {"too few nights"}
    assert {r["key"]["name"] for r in verdict["rows"]} == {"steady"}

