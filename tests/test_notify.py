"""A red night reaches a person (``python -m benchmarks.nightly notify``): a
GitHub issue per red night, or a comment on the open one, never a duplicate;
``::error`` annotations per failing row. GitHub's API is a local fake that
records the calls."""
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from benchmarks import nightly
from benchmarks.judge.verdict import Policy
from benchmarks.nightly import gate, notify
from benchmarks.nightly.night import NIGHT_FILE, update_json
from test_gate import DATES, DRIFT, SMALL, STEADY, _write_night

import yaml

LAST, TONIGHT, NEXT = DATES[3], DATES[4], DATES[5]
REPOSITORY = "team/bench"
COMMITS = {LAST: "a" * 40, TONIGHT: "b" * 40, NEXT: "c" * 40}
POLICY = Policy.from_mapping(yaml.safe_load(SMALL))
FLAGS = ["--performance", "--suite", "builtin", "--repeat", "8", "--use-xla-baseline", "--only", "x,y"]


class FakeGitHub:
    """Issues of one repository, kept in memory; every call recorded."""

    def __init__(self):
        self.calls, self.issues, self.comments = [], [], []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _reply(self, value, status=200):
                data = json.dumps(value).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                fake.calls.append(("GET", self.path, None, self.headers.get("Authorization")))
                label = self.path.split("labels=")[1].split("&")[0]
                self._reply([i for i in fake.issues if label in i["labels"] and i["state"] == "open"])

            def do_POST(self):
                payload = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                fake.calls.append(("POST", self.path, payload, self.headers.get("Authorization")))
                if self.path.endswith("/issues"):  # any repository's
                    issue = {"number": len(fake.issues) + 1, "state": "open", **payload}
                    fake.issues.append(issue)
                    self._reply(issue, 201)
                else:
                    fake.comments.append((int(self.path.split("/")[-2]), payload["body"]))
                    self._reply({"id": len(fake.comments)}, 201)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def github(monkeypatch):
    fake = FakeGitHub()
    monkeypatch.setenv("GITHUB_API_URL", fake.url)
    monkeypatch.setenv("GITHUB_REPOSITORY", REPOSITORY)
    monkeypatch.setenv("GITHUB_TOKEN", "t0ken")
    yield fake
    fake.server.shutdown()


def _stamp(root, date):
    """The night's night.json records its flags and run."""
    update_json(root / date / NIGHT_FILE, {"partial": "", "runner": {"flags": FLAGS},
                                           "run_url": f"https://github.com/{REPOSITORY}/actions/runs/7",
                                           "repository_url": f"https://github.com/{REPOSITORY}"})


def _nights(root, dates, ratio=0.8, **kw):
    for date in dates:
        _write_night(root, date, {DRIFT: ratio, STEADY: 0.9}, seed=DATES.index(date), processes=4,
                     process_spread=0.01, commit=COMMITS.get(date, "0" * 40), **kw)
        _stamp(root, date)


@pytest.fixture
def red_nights(tmp_path):
    """Steady nights, then two red ones: the trace-once backend 40% slower
    (past fail_at_once) on the 5th, and m2 failing to run on the 6th."""
    _nights(tmp_path, DATES[:4])
    _nights(tmp_path, [TONIGHT], ratio=0.8 * 1.4)
    assert gate.run(tmp_path, TONIGHT, POLICY) == 1
    _nights(tmp_path, [NEXT], failing=("m2",))
    assert gate.run(tmp_path, NEXT, POLICY) == 1
    return tmp_path


def _notify(root, date, *flags):
    return nightly.main(["notify", "--root", str(root), "--date", date, *flags])


def test_two_red_nights_open_one_issue_then_comment_on_it(red_nights, github, capsys):
    assert _notify(red_nights, TONIGHT) == 0
    assert [(m, p.split("?")[0]) for m, p, *_ in github.calls] == [
        ("GET", f"/repos/{REPOSITORY}/issues"), ("POST", f"/repos/{REPOSITORY}/issues")]
    assert all(auth == "Bearer t0ken" for *_, auth in github.calls)
    [issue] = github.issues
    assert issue["labels"] == [notify.LABEL]
    assert issue["title"] == f"Nightly {TONIGHT}: FAIL (2 row(s) failed)"
    text = issue["body"]
    assert f"| m1 | {DRIFT} | fail | +41.1% | speedup | large: slower +41.1% against 4 night(s)" in text
    # Links: both nights' commits, the run, the page.
    assert f"[aaaaaaaaaaaa](https://github.com/{REPOSITORY}/commit/{'a' * 40})" in text
    assert f"[bbbbbbbbbbbb](https://github.com/{REPOSITORY}/commit/{'b' * 40})" in text
    assert f"(https://github.com/{REPOSITORY}/actions/runs/7)" in text and "(https://team.github.io/bench/)" in text
    # The exact bisect command per flagged row: GOOD = the earlier night's commit, BAD = tonight's.
    assert (f"python runner.py bisect {'a' * 40} {'b' * 40} --only m1 --backend {DRIFT} "
            "--suite builtin --repeat 8 --use-xla-baseline") in text
    out = capsys.readouterr().out
    assert f"::error title=Nightly {TONIGHT} speedup::m1 / {DRIFT}: fail, change +41.1% (large: " in out
    assert "opened issue #1" in out

    github.calls.clear()
    assert _notify(red_nights, NEXT) == 0
    assert [(m, p.split("?")[0]) for m, p, *_ in github.calls] == [
        ("GET", f"/repos/{REPOSITORY}/issues"), ("POST", f"/repos/{REPOSITORY}/issues/1/comments")]
    assert len(github.issues) == 1  # never a duplicate
    [(number, comment)] = github.comments
    assert number == 1 and comment.startswith(f"# Nightly {NEXT}: FAIL (")
    assert "| m2 | " in comment and "new failure: failed (fail_to_run)" in comment
    assert f"python runner.py bisect {'b' * 40} {'c' * 40} --only m2" in comment
    assert "commented on issue #1" in capsys.readouterr().out


def test_a_green_night_tells_nobody(tmp_path, github, capsys):
    _nights(tmp_path, DATES[:5])
    assert gate.run(tmp_path, TONIGHT, POLICY) == 0
    assert _notify(tmp_path, TONIGHT) == 0
    assert github.calls == [] and "nobody to tell" in capsys.readouterr().out


def test_an_unjudged_night_reaches_a_person(tmp_path, github, capsys):
    _nights(tmp_path, [TONIGHT])
    assert gate.run(tmp_path, TONIGHT, POLICY) == 3
    assert _notify(tmp_path, TONIGHT) == 0
    [issue] = github.issues
    assert issue["title"].startswith(f"Nightly {TONIGHT}: UNJUDGED (")


def test_a_refusing_api_is_exit_1_and_a_night_that_is_not_there_exit_2(red_nights, github, monkeypatch, capsys):
    monkeypatch.setenv("GITHUB_API_URL", "http://127.0.0.1:9")  # nothing listens there
    assert _notify(red_nights, TONIGHT) == 1
    assert "GitHub's API refused" in capsys.readouterr().err
    # A night without a gate is not a pass: it is told too.
    assert _notify(red_nights, DATES[0]) == 1
    assert "GitHub's API refused" in capsys.readouterr().err
    assert _notify(red_nights, "2025-12-31") == 2
    err = capsys.readouterr().err
    assert "no such night" in err and len(err.strip().splitlines()) == 1
