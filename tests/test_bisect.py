"""``runner.py bisect GOOD BAD``: the search itself on made-up verdicts (fast),
and real bisections of a throwaway repository built from this project's tree,
whose history has exactly one commit that makes a backend slower and one that
makes it wrong (slow: each probe runs the harness twice)."""
import math
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.cli import bisect, main

REPO = Path(__file__).resolve().parent.parent
BACKEND_FILE = "tests/fault_models/fault_backends.py"


# --------------------------------------------------------------------------
# The search, on made-up verdicts


class Scripted(bisect.Search):
    """A search whose probes are answered from ``states`` (sha -> state)."""

    def __init__(self, commits, states):
        super().__init__(lab=None, good="g" * 40, commits=commits, metric="speedup", policy=None,
                         rounds=1, retries=0, echo=lambda line: None)
        self.states, self.probed = states, []

    def probe(self, sha, follow):
        self.probes += 1
        self.probed.append(sha)
        verdict = bisect.Verdict(self.states[sha], {})
        self.verdicts[sha] = verdict
        return verdict


def _history(n):
    return [f"{i:040d}" for i in range(n)]


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8, 13])
def test_the_search_finds_each_first_bad_commit_in_log2_probes(n):
    commits = _history(n)
    for first in range(n):
        search = Scripted(commits, {c: bisect.GOOD if i < first else bisect.BAD for i, c in enumerate(commits)})
        found, left = search.run(follow={})
        assert (found, left) == (first, [])
        # BAD was measured once before the search: at most ceil(log2 n) + 1 in all.
        assert search.probes + 1 <= math.ceil(math.log2(n)) + 1 if n > 1 else search.probes == 0


def test_a_skipped_probe_is_searched_around():
    commits = _history(8)
    states = {c: bisect.GOOD if i < 5 else bisect.BAD for i, c in enumerate(commits)}
    states[commits[3]] = bisect.SKIP
    search = Scripted(commits, states)
    assert search.run(follow={}) == (5, [])
    assert commits[3] in search.probed


def test_when_only_skipped_commits_are_left_the_answer_is_the_range():
    commits = _history(6)
    states = {c: bisect.GOOD if i < 2 else bisect.BAD for i, c in enumerate(commits)}
    states[commits[2]] = states[commits[3]] = bisect.SKIP
    found, left = Scripted(commits, states).run(follow={})
    assert found == -1 and left == [2, 3, 4]


def test_a_slower_row_is_followed_as_slower_only():
    slower, failure = "slower", "new failure"
    assert bisect._state(slower, slower, 0.5, 0.6) == bisect.BAD
    # Good only when the interval rules out half the slowdown found at BAD.
    assert bisect._state("no change", slower, 0.5, 0.2) == bisect.GOOD
    assert bisect._state("no change", slower, 0.5, 0.3) == bisect.SKIP
    assert bisect._state("faster", slower, 0.5, float("nan")) == bisect.SKIP
    # At BAD itself (nothing followed yet): not reproduced only below the threshold (0.05 here).
    assert bisect._state("no change", None, 0.1, 0.04) == bisect.GOOD
    assert bisect._state("no change", None, 0.1, 0.3) == bisect.SKIP
    assert bisect._state(slower, None, 0.1, 0.3) == bisect.BAD
    # A run that fails where a slowdown is followed cannot say whether it is slower.
    assert bisect._state(failure, slower) == bisect.SKIP
    assert bisect._state("inconclusive", slower) == bisect.SKIP
    assert bisect._state(failure, failure) == bisect.BAD
    assert bisect._state("inconclusive", failure) == bisect.GOOD


# --------------------------------------------------------------------------
# Bad input


@pytest.mark.parametrize("argv, message", [
    ([], "give GOOD and BAD first"),
    (["HEAD"], "give GOOD and BAD first"),
    (["no-such-commit", "HEAD"], "names no commit"),
    (["HEAD", "HEAD"], "the same commit"),
    (["HEAD~1", "HEAD", "--output", "x.csv"], "--output: bisect chooses"),
    (["HEAD~1", "HEAD", "--accuracy"], "use --metric accuracy"),
    (["HEAD~1", "HEAD", "--rounds", "0"], "--rounds must be at least 1"),
    (["HEAD~1", "HEAD", "--alpha", "2"], "--alpha must be between 0 and 1"),
    (["HEAD~1", "HEAD", "--no-such-flag"], "unrecognized arguments"),
])
def test_bad_input_is_one_line_and_exit_status_2(argv, message, capsys, monkeypatch, throwaway):
    monkeypatch.chdir(throwaway.path)
    assert main(["bisect", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1, err


def test_bad_must_descend_from_good(capsys, monkeypatch, throwaway):
    monkeypatch.chdir(throwaway.path)
    assert main(["bisect", throwaway.commits[-1], throwaway.commits[0]]) == 2
    assert "is not an ancestor" in capsys.readouterr().err


# --------------------------------------------------------------------------
# A throwaway repository with a history


class Throwaway:
    def __init__(self, path: Path):
        self.path, self.commits, self.subjects = path, [], []

    def git(self, *args):
        return subprocess.run(["git", "-C", str(self.path), *args], check=True, capture_output=True,
                              text=True).stdout.strip()

    def commit(self, message, edit=None):
        if edit:
            file, old, new = edit
            text = (self.path / file).read_text()
            assert old in text, (file, old)
            (self.path / file).write_text(text.replace(old, new))
        else:
            with open(self.path / "NOTES.txt", "a") as notes:
                notes.write(message + "\n")
        self.git("add", "-A")
        self.git("commit", "--quiet", "-m", message)
        self.commits.append(self.git("rev-parse", "HEAD"))
        self.subjects.append(message)


@pytest.fixture(scope="module")
def throwaway(tmp_path_factory):
    """This project's tree as one commit (GOOD), then four: a note, the
    commit that makes ``fault_passthrough`` sleep 3 ms per call, the one that
    scales its outputs by 1.5, another note."""
    files = subprocess.run(["git", "-C", str(REPO), "ls-files", "--cached", "--others", "--exclude-standard"],
                           check=True, capture_output=True, text=True).stdout.split()
    repo = Throwaway(tmp_path_factory.mktemp("bisect") / "repo")
    for name in files:
        source = REPO / name
        if source.is_file() and not source.is_symlink():
            (repo.path / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, repo.path / name)
    subprocess.run(["git", "init", "--quiet", str(repo.path)], check=True)
    repo.git("config", "user.email", "bench@example.com")
    repo.git("config", "user.name", "bench")
    repo.commit("the project as it is")
    repo.commit("a note")
    repo.commit("fault_passthrough waits 3 ms per call",
                (BACKEND_FILE, "PASSTHROUGH_DELAY_S = 0.0", "PASSTHROUGH_DELAY_S = 0.003"))
    repo.commit("fault_passthrough scales its outputs",
                (BACKEND_FILE, "PASSTHROUGH_SCALE = 1.0", "PASSTHROUGH_SCALE = 1.5"))
    repo.commit("another note")
    return repo


RUN_FLAGS = ["--suite", "torchbench", "--torchbench-dir", "tests/fault_models", "--only", "ok_tiny",
             "--backend", "fault_passthrough", "--repeat", "8", "--warmup", "1", "--no-cold-start",
             "--rounds", "1", "--threshold", "0.5"]


def _bisect(repo: Throwaway, good: str, bad: str, *flags: str) -> subprocess.CompletedProcess:
    # The throwaway repository's own runner.py: each worktree's code, not ours.
    return subprocess.run([sys.executable, "runner.py", "bisect", good, bad, *RUN_FLAGS, *flags],
                          cwd=repo.path, capture_output=True, text=True, timeout=1800,
                          env={**__import__("os").environ, "PYTHONPATH": str(repo.path)})


def _probes(out: str) -> int:
    return len(re.findall(r"^probe \d+:", out, flags=re.M))


@pytest.mark.slow
def test_bisect_names_the_commit_that_made_the_backend_slower(throwaway):
    done = _bisect(throwaway, throwaway.commits[0], throwaway.commits[-1])
    assert done.returncode == 0, done.stdout + done.stderr
    slow = throwaway.commits[2]
    assert f"first bad commit: {slow} {throwaway.subjects[2]}\n" in done.stdout, done.stdout
    n = len(throwaway.commits) - 1
    assert _probes(done.stdout) <= math.ceil(math.log2(n)) + 1, done.stdout
    at_it = re.search(r"at it: +ok_tiny/fault_passthrough: slower, ratio ([\d.]+)x \[([\d.]+), ([\d.]+)\]",
                      done.stdout)
    assert at_it and float(at_it.group(2)) > 1.5, done.stdout
    assert "at its parent: ok_tiny/fault_passthrough: no change, ratio" in done.stdout, done.stdout
    # Every worktree is gone again.
    assert throwaway.git("worktree", "list").count("\n") == 0


@pytest.mark.slow
def test_bisect_of_an_accuracy_regression_names_the_commit_that_made_it_wrong(throwaway):
    done = _bisect(throwaway, throwaway.commits[0], throwaway.commits[-1], "--metric", "accuracy")
    assert done.returncode == 0, done.stdout + done.stderr
    wrong = throwaway.commits[3]
    assert f"first bad commit: {wrong} {throwaway.subjects[3]}\n" in done.stdout, done.stdout
    assert re.search(r"at it: +ok_tiny/fault_passthrough: new failure", done.stdout), done.stdout
    assert _probes(done.stdout) <= math.ceil(math.log2(len(throwaway.commits) - 1)) + 1, done.stdout


@pytest.mark.slow
def test_bisect_says_not_reproduced_when_good_and_bad_do_not_differ(throwaway):
    done = _bisect(throwaway, throwaway.commits[0], throwaway.commits[1])
    assert done.returncode == 1, done.stdout + done.stderr
    assert "not reproduced: BAD is good against GOOD" in done.stdout, done.stdout
    assert "first bad commit" not in done.stdout
    assert _probes(done.stdout) == 1
