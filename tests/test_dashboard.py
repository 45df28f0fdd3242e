"""Tests of benchmarks.results.dashboard: the data it computes, its command line, and
the page itself in a real browser (Playwright driving Debian's chromium,
installed by `make browser`, which `make test` runs first).

The histories are generated here by ``write_history`` (seeded, synthetic
numbers in the harness's CSV format); the year-long one measures how fast
the page opens with 365 nights x 40 models x 4 backends.
"""
import json
import math
import re
import statistics
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image
from scipy import stats as sps

from benchmarks.results import dashboard, store

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--headless", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
HOSTILE_ERROR = 'RuntimeError: </script><script>console.error("injected")</script>'


# --------------------------------------------------------------------------
# Synthetic histories


COMMITS = [f"{n:02x}" * 20 for n in range(1, 400)]  # one fake 40-hex commit per night


def history_frames(nights, models, backends, seed=0, failures=(), noise=0.02, batch_changes=()):
    """Seeded synthetic nights from ``2025-01-01`` on: a list of (date, rows)
    in the harness's CSV columns, night ``i`` run at commit ``COMMITS[i]``.
    ``failures`` holds (night, model, backend) triples that fail with
    ``fail_to_run``; ``batch_changes`` (night, model, backend, size) triples
    set that pair's batch size from that night on (default 8)."""
    rng = np.random.default_rng(seed)
    dates = [str(d.date()) for d in pd.date_range("2025-01-01", periods=nights, freq="D")]
    pairs = len(models) * len(backends)
    night = np.repeat(np.arange(nights), pairs)
    name = np.tile(np.repeat(models, len(backends)), nights)
    backend = np.tile(backends, len(models) * nights)
    level = np.tile(rng.uniform(0.8, 1.6, pairs), nights)  # each pair's typical speedup
    speedup = level * rng.lognormal(0, noise, night.size)
    model_latency = rng.uniform(1.0, 200.0, len(models))[:, None] * rng.lognormal(0, noise, (len(models), nights))
    base = np.repeat(model_latency.T.ravel(), len(backends))  # the night's baseline of the model
    broken = np.zeros(night.size, dtype=bool)
    for n, m, b in failures:
        broken[n * pairs + models.index(m) * len(backends) + backends.index(b)] = True
    batch = np.full(night.size, 8)
    for n, m, b, size in batch_changes:
        batch[(night >= n) & (name == m) & (backend == b)] = size
    ok = np.where(broken, np.nan, 1.0)
    limit = np.maximum(level, 1.0) * 1.25  # the zero-overhead limit: above 1, above most speedups
    df = pd.DataFrame({
        "dev": "cpu", "name": name, "batch_size": batch, "speedup": speedup * ok,
        "abs_latency": base / speedup * ok, "compilation_latency": rng.uniform(0.5, 3.0, night.size) * ok,
        "backend": backend, "baseline": "xla", "baseline_latency": base * ok,
        "speedup_ci_low": speedup * 0.97 * ok, "speedup_ci_high": speedup * 1.03 * ok,
        "status": np.where(broken, "fail_to_run", "pass"), "schema_version": store.SCHEMA_VERSION,
        "error": np.where(broken, HOSTILE_ERROR, None),
        "suite": "builtin", "mode": "inference", "dtype": "fp32", "dynamic": "static",
        "commit": [COMMITS[n] for n in night],
        "host_compression_ratio": rng.uniform(0.8, 1.2, night.size) * ok,
        "zero_overhead_speedup": limit * ok, "headroom_captured": (speedup - 1) / (limit - 1) * ok,
    }, columns=store.CSV_COLUMNS)
    return [(dates[i], rows.reset_index(drop=True)) for i, rows in df.groupby(night, sort=True)]


def _gate_file(failed):
    """A gate's compare.json as ``benchmarks.nightly.gate`` writes it: its state and reasons."""
    if failed:
        return {"state": "fail", "exit_code": 1, "reasons": ["1 row(s) failed"], "rows": []}
    return {"state": "pass", "exit_code": 0, "reasons": [], "rows": []}


def write_history(root, nights, models, backends, seed=0, failures=(), gate_failures=(), **kwargs):
    """``history_frames`` written under ``root`` as benchmarks.nightly writes
    nights: performance.csv (+ .md), and from the second night on a
    compare.md and compare.json, whose gate failed on the ``gate_failures``
    night indices.  Returns the night names."""
    frames = history_frames(nights, models, backends, seed, failures, **kwargs)
    for night, (date, df) in enumerate(frames):
        folder = Path(root) / date
        folder.mkdir(parents=True)
        df.to_csv(folder / "performance.csv", index=False)
        (folder / "performance.md").write_text(f"# report of {date}\n")
        if night:
            gate = _gate_file(night in gate_failures)
            (folder / "compare.md").write_text(f"# Night {date}: {gate['state'].upper()}\n")
            (folder / "compare.json").write_text(json.dumps(gate))
    return [date for date, _ in frames]


MODELS = ["alexnet", "mnasnet1_0", "resnet18"]
BACKENDS = ["openxla_eval", "torchxla_trace_once"]
FAILURE = (3, "mnasnet1_0", "openxla_eval")
GROUP = "builtin · inference · fp32"
ALL = "all nights"


@pytest.fixture(scope="module")
def small_site(tmp_path_factory):
    """8 nights x 3 models x 2 backends, one failure, one failed gate, and a
    night folder without results; built into a site."""
    root = tmp_path_factory.mktemp("nightly")
    dates = write_history(root, 8, MODELS, BACKENDS, failures=[FAILURE], gate_failures=[5])
    (root / "2025-02-01" / "shards").mkdir(parents=True)  # a night still running: skipped
    (root / "notes").mkdir()  # not a night
    site = root.parent / "site"
    index = dashboard.build(root, site, repo_url="https://example.org/team/bench")
    return root, site, index, dates


# --------------------------------------------------------------------------
# What the page is built from


def test_geomean_band_by_hand():
    # logs 0 and ln 4: geomean 2; se_i = (ln 1.1 - ln 0.9) / (2 z) for both.
    value, low, high = dashboard.geomean_band([1.0, 4.0], [0.9, 3.6], [1.1, 4.4])
    se = (math.log(1.1) - math.log(0.9)) / (2 * dashboard.Z95)
    spread = dashboard.Z95 * math.sqrt(2 * se**2) / 2
    assert value == pytest.approx(2.0)
    assert (low, high) == (pytest.approx(2 * math.exp(-spread)), pytest.approx(2 * math.exp(spread)))


def test_geomean_band_without_intervals_is_the_point():
    assert dashboard.geomean_band([2.0, 8.0], [np.nan] * 2, [np.nan] * 2) == (
        pytest.approx(4.0), pytest.approx(4.0), pytest.approx(4.0))
    assert all(math.isnan(v) for v in dashboard.geomean_band([np.nan], [1.0], [2.0]))


def _trend(data, line, key, group=GROUP, span=ALL):
    (found,) = [g for g in data["groups"] if g["label"] == group]
    return found["trends"][line]["ranges"][span][key]


def test_page_data(small_site):
    root, _, _, dates = small_site
    nights = dashboard.find_nights(root)
    history = dashboard.load_history(nights)
    data = dashboard.page_data(nights, history)
    (group,) = data["groups"]
    assert data["nights"] == dates and group["models"] == MODELS and data["lines"] == BACKENDS
    assert group["label"] == GROUP and data["failedGate"] == [5] and data["verdicts"][0] is None
    assert data["commits"] == COMMITS[:8] and data["nightCommits"] == [[i] for i in range(8)]
    # The geomean is scipy's over the fixed set: for openxla_eval, the models
    # that passed on every night (mnasnet1_0 failed on night 3).
    night0 = store.read_rows(root / dates[0] / "performance.csv")
    for backend, fixed in (("openxla_eval", ["alexnet", "resnet18"]), ("torchxla_trace_once", MODELS)):
        own = night0[(night0["backend"] == backend) & night0["name"].isin(fixed)]
        assert _trend(data, backend, "geo")[0] == pytest.approx(sps.gmean(own["speedup"]), rel=1e-3)
        assert group["trends"][backend]["ranges"][ALL]["n"] == len(fixed)
    assert group["trends"]["openxla_eval"]["pass"][3] == 2 and group["trends"]["openxla_eval"]["total"][3] == 3
    assert group["trends"]["torchxla_trace_once"]["pass"][3] == 3
    # The last 7 nights leave night 3 in: the same fixed set there.
    assert group["trends"]["openxla_eval"]["ranges"]["last 7 nights"]["n"] == 2


def test_model_series_has_gaps_statuses_and_errors(small_site):
    root, site, _, dates = small_site
    text = (site / "data" / "models" / "g0-m1.js").read_text(encoding="utf-8")  # mnasnet1_0
    series = json.loads(text[text.index(",") + 1: text.rindex(")")])
    failing = series["openxla_eval"]
    assert failing["sp"][3] is None and all(v is not None for i, v in enumerate(failing["sp"]) if i != 3)
    assert failing["status"][3] == "fail_to_run" and failing["error"][3] == HOSTILE_ERROR
    assert failing["status"][:3] == ["pass"] * 3 and failing["commit"] == list(range(8))


def test_two_settings_of_a_backend_never_share_a_line():
    frames = history_frames(3, MODELS[:1], BACKENDS, seed=2)
    frames[1][1].loc[frames[1][1]["backend"] == "openxla_eval", "dynamic"] = "dynamic"
    history = dashboard.combine([(i, df) for i, (_, df) in enumerate(frames)])
    assert sorted(history["series"].unique()) == [
        "openxla_eval [dynamic=dynamic]", "openxla_eval [dynamic=static]", "torchxla_trace_once [dynamic=static]"]


def test_the_pass_rate_is_accuracy_gated_where_a_night_has_accuracy_rows(tmp_path):
    """Night 1 also ran --accuracy: alexnet on openxla_eval computed wrong
    results. It passed the performance run but does not count as a pass."""
    dates = write_history(tmp_path / "n", 3, MODELS, BACKENDS)
    accuracy = store.read_rows(tmp_path / "n" / dates[1] / "performance.csv")
    wrong = (accuracy["name"] == "alexnet") & (accuracy["backend"] == "openxla_eval")
    accuracy["accuracy"] = np.where(wrong, "fail_accuracy", "pass")
    accuracy["status"] = accuracy["accuracy"]
    accuracy.to_csv(tmp_path / "n" / dates[1] / "accuracy.csv", index=False)
    nights = dashboard.find_nights(tmp_path / "n")
    history = dashboard.load_history(nights)
    assert len(history) == 3 * len(MODELS) * len(BACKENDS)  # the accuracy rows are no points of their own
    data = dashboard.page_data(nights, history)
    (group,) = data["groups"]
    assert group["trends"]["openxla_eval"]["pass"] == [3, 2, 3]
    assert group["trends"]["torchxla_trace_once"]["pass"] == [3, 3, 3]
    assert group["trends"]["openxla_eval"]["ranges"][ALL]["n"] == 2  # out of the fixed set too
    rows = history[(history["name"] == "alexnet") & (history["series"] == "openxla_eval")]
    series = dashboard.aggregate.model_series(rows, 3, "host_compression_ratio", data["commits"])
    assert series["openxla_eval"]["status"] == ["pass", "fail_accuracy", "pass"]
    assert series["openxla_eval"]["sp"][1] is None


def test_a_batch_size_change_is_not_a_line():
    frames = history_frames(4, MODELS[:1], BACKENDS, seed=2, batch_changes=[(2, MODELS[0], BACKENDS[0], 16)])
    history = dashboard.combine([(i, df) for i, (_, df) in enumerate(frames)])
    assert sorted(history["series"].unique()) == BACKENDS
    own = history[history["series"] == BACKENDS[0]]
    assert dashboard.aggregate.batch_changes(own) == [[2, 8, 16]]


def test_each_suite_mode_and_dtype_is_a_group():
    frames = history_frames(2, MODELS[:1], BACKENDS, seed=2)
    frames[1] = (frames[1][0], pd.concat([frames[1][1], frames[1][1].assign(dtype="bf16")]))
    history = dashboard.combine([(i, df) for i, (_, df) in enumerate(frames)])
    assert sorted(history["group"].unique()) == ["builtin · inference · bf16", GROUP]
    assert sorted(history["series"].unique()) == BACKENDS


def test_an_older_night_shares_the_line_of_the_settings_it_implied():
    """A version-1 night has no dtype column: it was fp32, static."""
    old, new = (df for _, df in history_frames(2, MODELS[:1], BACKENDS[:1], seed=3))
    old = old.assign(schema_version=1, dtype=None, dynamic=None)
    new = new.assign(dtype="fp32", dynamic="static")
    history = dashboard.combine([(0, old), (1, new)])
    assert history["series"].tolist() == [BACKENDS[0], BACKENDS[0]]
    assert history["dtype"].tolist() == ["fp32", "fp32"]


def test_site_holds_the_page_its_assets_and_copied_reports(small_site):
    root, site, index, dates = small_site
    text = index.read_text(encoding="utf-8")
    assert text.count('id="dashboard-data"') == 1
    assert '<script src="assets/plotly-basic.min.js"' in text
    assert "plotly.js (basic - minified) v" in (site / "assets" / "plotly-basic.min.js").read_text()
    for name in ("dashboard.js", "dashboard.css"):
        assert (site / "assets" / name).read_text() == dashboard.site.asset(name)
    assert (site / "nights" / dates[0] / "performance.md").read_text() == f"# report of {dates[0]}\n"
    assert (site / "nights" / dates[1] / "compare.md").exists()
    assert f'href="nights/{dates[1]}/compare.md"' in text
    assert "2025-02-01" not in text


def test_the_installed_package_ships_the_page_files(tmp_path):
    """setup.cfg declares the assets as package data: setuptools' build_py,
    which lays out what an install holds, copies them."""
    import shutil
    import subprocess
    import sys

    repo, source = Path(__file__).resolve().parent.parent, tmp_path / "source"
    skip = shutil.ignore_patterns("__pycache__", "*.egg-info")
    for name in ("benchmarks", "xla_backends"):  # a copy: the build writes beside its sources
        shutil.copytree(repo / name, source / name, ignore=skip)
    for name in ("setup.cfg", "pyproject.toml", "README.md", "runner.py"):
        shutil.copy(repo / name, source / name)
    done = subprocess.run([sys.executable, "-c", "from setuptools import setup; setup()", "-q", "build_py",
                           "-d", str(tmp_path / "lib")], cwd=source, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    for name in (*dashboard.site.ASSETS, dashboard.site.TEMPLATE):
        assert (tmp_path / "lib" / "benchmarks" / "results" / "dashboard" / "assets" / name).is_file(), name


def test_no_data_string_can_close_its_script_element(small_site):
    text = small_site[2].read_text(encoding="utf-8")
    assert HOSTILE_ERROR not in text and "</script><script>console" not in text


def test_skipped_night_is_warned_about(tmp_path, capsys):
    write_history(tmp_path / "n", 2, MODELS[:1], BACKENDS[:1])
    (tmp_path / "n" / "2025-03-01").mkdir()
    (tmp_path / "n" / "2025-03-02").mkdir()
    (tmp_path / "n" / "2025-03-02" / "performance.csv").write_text("not,a\nresults,file\n")
    assert dashboard.main([str(tmp_path / "n"), "-o", str(tmp_path / "site")]) == 0
    err = capsys.readouterr().err
    assert "2025-03-01: no performance.csv; night skipped" in err
    assert "2025-03-02/performance.csv: unreadable" in err


def test_nights_without_rows_still_make_a_page(tmp_path):
    """Every night's run had no model (an empty selection): a page, no lines."""
    for date in ("2025-01-01", "2025-01-02"):
        (tmp_path / "n" / date).mkdir(parents=True)
        (tmp_path / "n" / date / "performance.csv").write_text(",".join(store.CSV_COLUMNS) + "\n")
    index = dashboard.build(tmp_path / "n", tmp_path / "site")
    assert "2 nights (2025-01-01 to 2025-01-02), 0 models" in index.read_text()


@pytest.mark.parametrize("case, message", [
    ("missing", "no such folder"),
    ("empty", "no nights found"),
    ("site_is_file", "is not a folder"),
    ("compare_nights", "--compare-nights: must be a whole number >= 2, got '1'"),
    ("baseline", "--baseline 2024-12-31: no such night"),
    ("repo_url", "--repo-url must be an http(s) URL"),
])
def test_cli_errors_are_one_line_exit_2(tmp_path, capsys, case, message):
    root, site = tmp_path / "nightly", tmp_path / "site"
    flags = {"compare_nights": ["--compare-nights", "1"], "baseline": ["--baseline", "2024-12-31"],
             "repo_url": ["--repo-url", "javascript:alert(1)"]}.get(case, [])
    if case != "missing":
        root.mkdir()
    if case not in ("missing", "empty"):
        write_history(root, 1, MODELS[:1], BACKENDS[:1])
    if case == "site_is_file":
        site.write_text("a file")
    assert dashboard.main([str(root), "-o", str(site), *flags]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err


def test_a_night_merged_in_github_actions_links_its_run(tmp_path, monkeypatch):
    """nightly merge records the run's URL in night.json; the page links
    it, and the commits to the run's repository."""
    from benchmarks import nightly

    root = tmp_path / "nightly"
    frames = history_frames(2, MODELS[:1], BACKENDS[:1])
    (root / frames[0][0]).mkdir(parents=True)
    frames[0][1].to_csv(root / frames[0][0] / "performance.csv", index=False)
    (root / frames[1][0] / "shards").mkdir(parents=True)
    frames[1][1].to_csv(root / frames[1][0] / "shards" / "shard-0.csv", index=False)
    monkeypatch.setenv("GITHUB_SERVER_URL", "https://github.example")
    monkeypatch.setenv("GITHUB_REPOSITORY", "team/bench")
    monkeypatch.setenv("GITHUB_RUN_ID", "4242")
    assert nightly.main(["merge", "--root", str(root), "--date", frames[1][0]]) == 0
    meta = json.loads((root / frames[1][0] / "night.json").read_text())
    assert meta["run_url"] == "https://github.example/team/bench/actions/runs/4242"
    monkeypatch.delenv("GITHUB_SERVER_URL")  # the page is built elsewhere: the URLs come from the night
    text = dashboard.build(root, tmp_path / "site").read_text()
    assert '<a class="run" href="https://github.example/team/bench/actions/runs/4242">CI run</a>' in text
    assert f'href="https://github.example/team/bench/commit/{COMMITS[1]}"' in text
    assert f'href="https://github.example/team/bench/commit/{COMMITS[0]}"' in text


def test_a_night_merged_elsewhere_records_no_run(tmp_path, monkeypatch):
    from benchmarks import nightly

    for name in ("GITHUB_SERVER_URL", "GITHUB_REPOSITORY", "GITHUB_RUN_ID"):
        monkeypatch.delenv(name, raising=False)
    (date, rows), = history_frames(1, MODELS[:1], BACKENDS[:1])
    (tmp_path / date / "shards").mkdir(parents=True)
    rows.to_csv(tmp_path / date / "shards" / "shard-0.csv", index=False)
    assert nightly.main(["merge", "--root", str(tmp_path), "--date", date]) == 0
    # night.json says what the merge found (its shards), but names no CI run.
    assert "run_url" not in json.loads((tmp_path / date / "night.json").read_text())
    assert 'class="run"' not in dashboard.build(tmp_path, tmp_path.parent / "site2").read_text()


def test_filters_pick_a_group_and_a_range(browser, tmp_path):
    """Two dtypes, 10 nights; resnet18 fails on openxla_eval (fp32) on night
    1 only: over all nights it is out of the fixed set, over the last 7 in."""
    frames = history_frames(10, MODELS, BACKENDS, seed=3, failures=[(1, "resnet18", "openxla_eval")])
    bf16 = history_frames(10, MODELS, BACKENDS, seed=4)
    frames = [(date, pd.concat([df, other.assign(dtype="bf16")])) for (date, df), (_, other) in zip(frames, bf16)]
    nights = [dashboard.Night(date, tmp_path / date) for date, _ in frames]
    index = dashboard.write_site(tmp_path / "site", nights, dashboard.combine(
        [(i, df) for i, (_, df) in enumerate(frames)]))
    page, errors, _ = open_page(browser, index)
    assert page.locator("#f-dtype option").all_inner_texts() == ["bf16", "fp32"]
    legend = page.locator("#trend-speedup .legendtext").all_text_contents()
    assert legend == ["openxla_eval (3 of 3 models)", "torchxla_trace_once (3 of 3 models)"]  # bf16 first
    assert page.locator("table.summary:not(.hidden) caption").text_content().startswith("builtin · inference · bf16")
    page.select_option("#f-dtype", "fp32")
    page.wait_for_function("document.body.dataset.ready === 'true'")
    assert page.locator("#trend-speedup .legendtext").all_text_contents()[0] == "openxla_eval (2 of 3 models)"
    assert page.locator("table.summary:not(.hidden) caption").text_content().startswith("builtin · inference · fp32")
    page.select_option("#f-range", "last 7 nights")
    page.wait_for_function("document.body.dataset.ready === 'true'")
    assert page.locator("#trend-speedup .legendtext").all_text_contents()[0] == "openxla_eval (3 of 3 models)"
    (line,) = [t for t in _traces(page, "trend-speedup") if t["name"].startswith("openxla_eval (")]
    assert line["x"] == [date for date, _ in frames[3:]]
    assert "group=builtin%20%C2%B7%20inference%20%C2%B7%20fp32" in page.evaluate("location.hash")
    assert errors == []
    page.close()


def test_runner_dashboard_subcommand(tmp_path, capsys):
    from benchmarks import cli

    write_history(tmp_path / "n", 2, MODELS[:1], BACKENDS[:1])
    assert cli.main(["dashboard", str(tmp_path / "n"), "-o", str(tmp_path / "site")]) == 0
    assert (tmp_path / "site" / "assets" / "plotly-basic.min.js").stat().st_size > 1_000_000
    assert cli.main(["dashboard", str(tmp_path / "n")]) == 2  # -o is required
    assert "-o/--output" in capsys.readouterr().err


# --------------------------------------------------------------------------
# In the browser


@pytest.fixture(scope="module")
def browser():
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} not found: run `make browser` (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


def open_page(browser, index, fragment=""):
    """Open ``index`` and wait until every chart is drawn; returns the page
    (with ``requests`` and ``first_chart_s``: the page's own clock, from
    navigation to its first chart drawn), the console errors and page
    exceptions seen, and the seconds until the page was ready."""
    page = browser.new_page(viewport={"width": 1280, "height": 2400})
    page.set_default_timeout(120_000)  # a loaded two-core machine
    errors, requests = [], []
    page.on("request", lambda request: requests.append(request.url))
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda exc: errors.append(f"page error: {exc}"))
    start = time.perf_counter()
    page.goto(index.as_uri() + fragment)
    page.wait_for_function("document.body.dataset.ready === 'true'", timeout=120_000)
    page.requests = requests
    page.first_chart_s = page.evaluate("window.dashboardFirstChartMs") / 1e3
    return page, errors, time.perf_counter() - start


def _traces(page, div):
    return page.evaluate(f"""() => document.getElementById("{div}").data.map(
        t => ({{name: t.name, x: Array.from(t.x || []), y: Array.from(t.y || []), legend: t.showlegend !== false,
               customdata: t.customdata ? Array.from(t.customdata) : null}}))""")


def _layout(page, div):
    return page.evaluate(f"""() => JSON.parse(JSON.stringify(document.getElementById("{div}").layout))""")


def _choose(page, model):
    page.select_option("#model", model)
    page.wait_for_function(f"document.body.dataset.shown === '{model}' && document.body.dataset.ready === 'true'")


@pytest.fixture(scope="module")
def small_page(browser, small_site):
    page, errors, _ = open_page(browser, small_site[2])
    yield page, errors
    page.close()


def test_page_has_no_console_errors(small_page):
    page, errors = small_page
    assert errors == []
    assert page.title() == "Nightly benchmark history"


def test_page_requests_nothing_from_the_network(small_page, small_site):
    page, _ = small_page
    assert page.requests and all(url.startswith(("file://", "data:")) for url in page.requests), page.requests


def test_every_backend_and_model_appears(small_page, small_site):
    page, _ = small_page
    assert page.locator("#model option").all_inner_texts() == MODELS
    legend = page.locator("#trend-speedup .legendtext").all_text_contents()
    assert legend == ["openxla_eval (2 of 3 models)", "torchxla_trace_once (3 of 3 models)", "gate failed"]
    dates = small_site[3]
    assert page.locator("#nights tbody tr").count() == len(dates)
    assert page.locator("#nights tr.fail").all_inner_texts()[0].startswith(dates[5])


def test_pass_rate_is_shown_per_night(small_page, small_site):
    page, _ = small_page
    dates = small_site[3]
    passing = {t["name"]: t for t in _traces(page, "trend-pass")}
    assert passing["openxla_eval"]["customdata"][3] == [2, 3]
    assert passing["openxla_eval"]["y"][3] == pytest.approx(200 / 3)
    assert passing["torchxla_trace_once"]["customdata"][3] == [3, 3]
    assert passing["openxla_eval"]["x"] == dates
    # The latest night's table: every model passed on the last night.
    cells = page.locator('table.summary tr[data-line="openxla_eval"] td').all_inner_texts()
    assert cells[1].startswith("3/3")


def test_selecting_a_model_shows_its_series_with_gaps(small_page, small_site):
    page, errors = small_page
    dates = small_site[3]
    _choose(page, "mnasnet1_0")
    speedup = {t["name"]: t for t in _traces(page, "model-speedup") if t["legend"]}
    assert set(speedup) == set(BACKENDS)
    assert speedup["torchxla_trace_once"]["x"] == dates and None not in speedup["torchxla_trace_once"]["y"]
    # The failed night is a gap in the line, not a bridge across it.
    assert speedup["openxla_eval"]["x"] == dates and speedup["openxla_eval"]["y"][3] is None
    assert _layout(page, "model-speedup")["yaxis"]["type"] == "log"
    latency = {t["name"] for t in _traces(page, "model-latency")}
    assert latency == set(BACKENDS) | {"baseline"}
    (failure,) = _traces(page, "model-failures")
    assert (failure["name"], failure["x"], failure["y"]) == ("openxla_eval", [dates[3]], ["openxla_eval"])
    assert "mnasnet1_0: speedup" in page.locator("#model-speedup .gtitle").text_content()
    assert page.evaluate("location.hash") == "#model=mnasnet1_0"
    assert errors == []


def test_hovering_a_failure_shows_its_error(small_page):
    page, errors = small_page
    _choose(page, "mnasnet1_0")
    page.evaluate("Plotly.Fx.hover('model-failures', [{curveNumber: 0, pointNumber: 0}])")
    hover = page.locator("#model-failures .hoverlayer").text_content()
    assert "fail_to_run" in hover and "RuntimeError" in hover
    assert errors == []  # the error's markup stayed text


def test_a_link_selects_its_model(small_page):
    page, errors = small_page
    page.evaluate("location.hash = '#model=resnet18'")
    page.wait_for_function("document.body.dataset.shown === 'resnet18' && document.body.dataset.ready === 'true'")
    assert page.locator("#model").input_value() == "resnet18"
    assert "resnet18: latency" in page.locator("#model-latency .gtitle").text_content()
    assert errors == []


def test_links_point_at_each_nights_commit(small_page, small_site):
    page, _ = small_page
    dates = small_site[3]
    for row in range(len(dates)):
        night = len(dates) - 1 - row  # newest first
        href = page.locator(f'#nights tr[data-night="{night}"] a.commit').get_attribute("href")
        assert href == f"https://example.org/team/bench/commit/{COMMITS[night]}"
    caption = page.locator("table.summary caption a.commit").get_attribute("href")
    assert caption.endswith(COMMITS[len(dates) - 1])
    # A click on a point names the commit of that night.
    page.evaluate("""() => { const div = document.getElementById('trend-speedup');
        div.emit('plotly_click', {points: [{x: div.data.find(t => t.showlegend !== false).x[4]}]}); }""")
    assert page.locator("#trend-speedup-clicked a.commit").get_attribute("href").endswith(COMMITS[4])


STEADY_MODELS = ["alexnet", "mnasnet1_0", "resnet18", "vgg16"]


@pytest.fixture(scope="module")
def steady_page(browser, tmp_path_factory):
    """6 nights with no noise: every speedup the same each night, but
    resnet18 fails on openxla_eval on nights 2 and 3, alexnet's batch size
    on torchxla_trace_once goes from 8 to 16 on night 4, and vgg16 runs on
    torchxla_trace_once only."""
    frames = history_frames(6, STEADY_MODELS, BACKENDS, seed=5, noise=0.0,
                            failures=[(2, "resnet18", "openxla_eval"), (3, "resnet18", "openxla_eval")],
                            batch_changes=[(4, "alexnet", "torchxla_trace_once", 16)])
    frames = [(date, df[~((df["name"] == "vgg16") & (df["backend"] == "openxla_eval"))]) for date, df in frames]
    root = tmp_path_factory.mktemp("steady")
    for date, df in frames:
        (root / date).mkdir()
        df.to_csv(root / date / "performance.csv", index=False)
    index = dashboard.build(root, root.parent / "steady-site")
    page, errors, _ = open_page(browser, index)
    yield page, errors, frames
    page.close()


def test_the_fixed_set_geomean_does_not_move_when_a_model_fails(steady_page):
    page, errors, frames = steady_page
    lines = {t["name"]: t for t in _traces(page, "trend-speedup") if t["legend"]}
    steady = lines["openxla_eval (2 of 3 models)"]["y"]  # resnet18 failed: left out every night
    rows = frames[0][1]
    fixed = rows[(rows["backend"] == "openxla_eval") & rows["name"].isin(["alexnet", "mnasnet1_0"])]
    assert steady == pytest.approx([sps.gmean(fixed["speedup"])] * 6, rel=1e-3)
    assert "torchxla_trace_once (4 of 4 models)" in lines
    # ... and the pass rate says what broke, beside it.
    passing = {t["name"]: t["customdata"] for t in _traces(page, "trend-pass")}
    assert passing["openxla_eval"] == [[3, 3], [3, 3], [2, 3], [2, 3], [3, 3], [3, 3]]
    assert passing["torchxla_trace_once"] == [[4, 4]] * 6
    assert _layout(page, "trend-speedup")["yaxis"]["type"] == "log"
    assert errors == []


def test_nights_are_dates_on_the_axis(steady_page):
    page, _, frames = steady_page
    ticks = page.locator("#trend-speedup .xtick text").all_text_contents()
    assert ticks == [date for date, _ in frames]


def test_a_batch_size_change_is_an_annotation_on_the_models_line(steady_page):
    page, errors, _ = steady_page
    _choose(page, "alexnet")
    names = [t["name"] for t in _traces(page, "model-speedup")]
    assert not [n for n in names if "batch" in n] and "torchxla_trace_once" in names
    notes = [a["text"] for a in _layout(page, "model-speedup")["annotations"]]
    assert notes == ["batch size 8 → 16"]
    assert "batch size 8 → 16" in page.locator("#model-speedup .annotation").all_text_contents()
    assert errors == []


def test_the_failures_panel_names_only_backends_that_ran_the_model(steady_page):
    page, _, _ = steady_page
    _choose(page, "vgg16")
    assert _layout(page, "model-failures")["yaxis"]["categoryarray"] == ["torchxla_trace_once"]
    assert page.locator("#model-failures .gtitle").text_content() == "vgg16: no failures on torchxla_trace_once"
    _choose(page, "resnet18")
    (failure,) = _traces(page, "model-failures")
    assert failure["x"] == ["2025-01-03", "2025-01-04"]
    speedup = {t["name"]: t for t in _traces(page, "model-speedup") if t["legend"]}
    assert speedup["openxla_eval"]["y"][2:4] == [None, None]


def write_samples(folder, rows, seed, slower=(), repeats=10):
    """Raw samples beside a night's CSV, paired by repeat as the harness
    records them: backend_i = baseline_i / speedup, with 1% noise; the
    (name, backend) pairs in ``slower`` 25% slower relative to the baseline."""
    rng = np.random.default_rng(seed)
    records = []
    for row in rows[rows["status"] == "pass"].to_dict("records"):
        base = row["baseline_latency"] / 1e3 * rng.lognormal(0, 0.01, repeats)
        factor = 1.25 if (row["name"], row["backend"]) in slower else 1.0
        backend = base / row["speedup"] * factor * rng.lognormal(0, 0.01, repeats)
        key = {k: v for k, v in store.key_fields(row).items() if k not in ("name", "backend")}
        records += [store.sample_record(row["name"], row["backend"], "baseline", base, **key),
                    store.sample_record(row["name"], row["backend"], "backend", backend, **key)]
    store.append_samples(folder / "performance.jsonl", records)


PAIR_SLOWER = {("resnet18", "torchxla_trace_once")}


@pytest.fixture(scope="module")
def pair_site(browser, tmp_path_factory):
    """5 nights with raw samples: on night 3, resnet18 on
    torchxla_trace_once is 25% slower against its baseline and mnasnet1_0
    fails on openxla_eval; night 3's gate ran and failed (the nightly's gate,
    judging against nights 0-2)."""
    from benchmarks import nightly

    root = tmp_path_factory.mktemp("pairs")
    frames = history_frames(5, MODELS, BACKENDS, seed=7, noise=0.005, failures=[(3, "mnasnet1_0", "openxla_eval")])
    for night, (date, df) in enumerate(frames):
        (root / date).mkdir()
        df.to_csv(root / date / "performance.csv", index=False)
        write_samples(root / date, df, seed=night, slower=PAIR_SLOWER if night == 3 else ())
    policy = root.parent / "pairs-gate.yaml"
    policy.write_text("alpha: 0.05\nwindow: 3\nmin_nights: 3\nmax_age_days: 60\nloaded_cores: 0.1\n"
                      "min_judged: 0.5\nmetrics:\n  speedup: {threshold: 0.03, fail_at_once: 0.2}\n"
                      "  first_call: {threshold: 0.25, fail_at_once: 1.0}\n"
                      "  host_memory: {threshold: 0.1, fail_at_once: 0.5}\n"
                      "  device_memory: {threshold: 0.1, fail_at_once: 0.5}\n")
    assert nightly.main(["gate", "--root", str(root), "--date", frames[3][0], "--gate-config", str(policy),
                         "--expected", str(root.parent / "no-expected")]) == 1
    index = dashboard.build(root, root.parent / "pairs-site", repo_url="https://example.org/team/bench",
                            compare_nights=3)
    return root, index, [date for date, _ in frames]


def _pair_rows(page):
    return page.evaluate("""() => Array.from(document.querySelectorAll('#pair-table tbody tr')).map(
        tr => [tr.dataset.name, tr.dataset.backend, tr.dataset.mark, tr.className])""")


def test_two_nights_verdicts_are_those_of_runner_compare(browser, pair_site, tmp_path):
    from benchmarks import cli

    root, index, dates = pair_site
    data = json.loads(re.search(r'id="dashboard-data">(.*?)</script>', index.read_text()).group(1))
    # Every two of the last 3 nights, and the failed gate's two.
    assert sorted(data["pairs"]) == ["2,3", "2,4", "3,4"]
    marks = {}
    for key in data["pairs"]:
        old, new = (int(i) for i in key.split(","))
        page, errors, _ = open_page(browser, index, f"#compare={key}")
        page.wait_for_function(f"document.body.dataset.pairShown === '{key}'")
        shown = _pair_rows(page)
        out = tmp_path / f"{old}-{new}.json"
        cli.compare_main([str(root / dates[old] / "performance.csv"), str(root / dates[new] / "performance.csv"),
                          "--json", str(out)])
        expected = json.loads(out.read_text())
        assert [r[:3] for r in shown] == [[r["name"], r["backend"], r["mark"]] for r in expected["rows"]]
        marks[key] = {r[2] for r in shown}
        assert page.locator("#pair-table .verdict strong").text_content() == expected["verdict"]
        assert errors == []
        page.close()
    # The fixture has verdicts of every kind the gate cares about.
    assert marks["2,3"] == {"slower", "new failure", "no change"} and marks["3,4"] >= {"fixed", "faster"}


def test_two_nights_are_coloured_by_verdict(browser, pair_site):
    _, index, _ = pair_site
    page, _, _ = open_page(browser, index, "#compare=2,3")
    page.wait_for_function("document.body.dataset.pairShown === '2,3'")
    marks = {(r[0], r[1]): r for r in _pair_rows(page)}
    assert "mark-slower" in marks[("resnet18", "torchxla_trace_once")][3]
    assert marks[("mnasnet1_0", "openxla_eval")][2] == "new failure"
    colour = page.evaluate("""() => getComputedStyle(document.querySelector(
        '#pair-table tr.mark-slower td')).backgroundColor""")
    assert colour == "rgb(253, 236, 234)"
    links = page.locator("#pair-table .pair-nights a.commit").evaluate_all("as => as.map(a => a.href)")
    assert links == [f"https://example.org/team/bench/commit/{COMMITS[2]}",
                     f"https://example.org/team/bench/commit/{COMMITS[3]}"]
    page.close()


def test_a_failed_gate_lists_what_failed_it_linked_to_both_nights(browser, pair_site):
    _, index, dates = pair_site
    page, errors, _ = open_page(browser, index)
    panel = page.locator('#gate-failures .gate-failure[data-night="3"]')
    assert dates[3] in panel.locator("h3").text_content() and "FAIL" in panel.locator("h3").text_content()
    rows = panel.locator("tbody tr").all_inner_texts()
    assert [r.split("\t")[:4] for r in rows] == [["mnasnet1_0", "openxla_eval", "speedup", "fail"],
                                                 ["resnet18", "torchxla_trace_once", "speedup", "fail"]]
    change = rows[1].split("\t")[4]  # the change against the row's earlier nights, about +25%
    assert 0.2 < float(re.match(r"([+-][\d.]+)%$", change).group(1)) / 100 < 0.3
    panel.locator("a", has_text="resnet18").click()
    page.wait_for_function("document.body.dataset.pairShown === '2,3'")
    chosen = page.locator("#pair-table tr.chosen").evaluate_all("trs => trs.map(t => t.dataset.backend)")
    assert chosen == ["openxla_eval", "torchxla_trace_once"]
    assert "compare=2,3&row=resnet18" in page.evaluate("location.hash")
    assert errors == []
    page.close()


def test_latest_night_table_equals_numbers_from_the_csvs(browser, pair_site):
    """The summary row of each line, recomputed here from the two nights'
    CSVs with pandas and scipy."""
    root, index, dates = pair_site
    latest = store.read_rows(root / dates[-1] / "performance.csv")
    before = store.read_rows(root / dates[-2] / "performance.csv")
    page, _, _ = open_page(browser, index)
    assert f"night {dates[-1]}" in page.locator("table.summary caption").text_content()
    assert f"change from {dates[-2]}" in page.locator("table.summary caption").text_content()
    for backend in BACKENDS:
        now = latest[(latest["backend"] == backend) & (latest["status"] == "pass")]
        then = before[(before["backend"] == backend) & (before["status"] == "pass")]
        both = now.merge(then, on="name", suffixes=("", "_before"))
        cells = page.locator(f'table.summary tr[data-line="{backend}"] td').all_inner_texts()
        assert cells[1].split()[0] == f"{len(now)}/{(latest['backend'] == backend).sum()}"
        geomean = sps.gmean(now["speedup"])
        change = sps.gmean(both["speedup"] / both["speedup_before"]) - 1
        assert cells[2] == f"{geomean:.3f}x {change:+.1%}"
        compile_change = both["compilation_latency"].mean() / both["compilation_latency_before"].mean() - 1
        assert cells[3] == f"{now['compilation_latency'].mean():.2f} s {compile_change:+.1%}"
        memory_change = sps.gmean(both["host_compression_ratio"] / both["host_compression_ratio_before"]) - 1
        assert cells[4] == f"{sps.gmean(now['host_compression_ratio']):.3f}x {memory_change:+.1%}"
    page.close()


def _assert_not_blank(png_path):
    with Image.open(png_path) as image:
        rgb = image.convert("RGB")
        pixels = np.asarray(rgb)
        colors = rgb.getcolors(maxcolors=1 << 20)
    assert colors is not None and len(colors) > 50, "hardly any colors: blank page?"
    non_white = np.any(pixels < 240, axis=-1).mean()
    assert non_white > 0.03, f"only {non_white:.1%} of the pixels are drawn on"


def test_screenshot_is_not_blank(small_page, tmp_path):
    page, _ = small_page
    png = tmp_path / "dashboard.png"
    page.screenshot(path=str(png), full_page=True)
    _assert_not_blank(png)
    chart = tmp_path / "overview.png"
    page.locator("#trend-speedup").screenshot(path=str(chart))
    _assert_not_blank(chart)


# Generous bound for a loaded 2-core machine; the measured figures are printed.
YEAR_LOAD_LIMIT_S = 20.0
YEAR_LOADS = 3
YEAR_MODELS = [f"model_{i:02d}" for i in range(40)]
YEAR_BACKENDS = ["inductor", "openxla_eval", "torchxla_trace_once", "torchxla_trivial"]
YEAR_FAILURES = [(n, YEAR_MODELS[n % 40], YEAR_BACKENDS[n % 4]) for n in range(0, 365, 7)]
YEAR_GATE_FAILURES = range(10, 365, 30)


def _check_year_page(browser, index, tmp_path):
    """Open the year-long page, select a model; returns (first chart s,
    all drawn s, select s)."""
    page, errors, load_s = open_page(browser, index)
    start = time.perf_counter()
    _choose(page, "model_17")
    select_s = time.perf_counter() - start
    assert errors == []
    assert page.locator("#model option").count() == 40
    speedup = [t for t in _traces(page, "model-speedup") if t["legend"]]
    assert {t["name"] for t in speedup} == set(YEAR_BACKENDS)
    assert max(len(t["x"]) for t in speedup) == 365
    page.screenshot(path=str(tmp_path / "year.png"))
    _assert_not_blank(tmp_path / "year.png")
    page.close()
    return page.first_chart_s, load_s, select_s


def _site_mb(index):
    return sum(p.stat().st_size for p in index.parent.rglob("*") if p.is_file() and "nights" not in p.parts) / 1e6


@pytest.mark.slow
def test_a_year_of_history_opens_fast(browser, tmp_path, capsys):
    """365 nights x 40 models x 4 backends, the page built from rows in
    memory (the nights' files are the slow test's business): it opens, with
    no console error, within the limit; prints the figures (pytest -s)."""
    frames = history_frames(365, YEAR_MODELS, YEAR_BACKENDS, seed=1, failures=YEAR_FAILURES)
    nights = [dashboard.Night(date, tmp_path / date, gate=_gate_file(i in YEAR_GATE_FAILURES) if i else {})
              for i, (date, _) in enumerate(frames)]
    history = dashboard.combine([(i, df) for i, (_, df) in enumerate(frames)])
    index = dashboard.write_site(tmp_path / "site", nights, history)
    loads = [_check_year_page(browser, index, tmp_path) for _ in range(YEAR_LOADS)]
    first_s, load_s, select_s = (statistics.median(values) for values in zip(*loads))
    with capsys.disabled():
        print(f"\n[dashboard, 365 nights x 40 models x 4 backends] page {index.stat().st_size / 1e6:.2f} MB "
              f"(site {_site_mb(index):.1f} MB); medians of {YEAR_LOADS} loads: first chart drawn {first_s:.2f} s "
              f"({', '.join(f'{f:.2f}' for f, _, _ in loads)}), every chart drawn {load_s:.2f} s, "
              f"select a model {select_s:.2f} s")
    assert load_s < YEAR_LOAD_LIMIT_S


@pytest.mark.slow
def test_a_year_of_nights_on_disk(browser, tmp_path, capsys):
    """The same year as 365 night folders: `runner.py dashboard` reads them all."""
    write_history(tmp_path / "nightly", 365, YEAR_MODELS, YEAR_BACKENDS, seed=1,
                  failures=YEAR_FAILURES, gate_failures=YEAR_GATE_FAILURES)
    start = time.perf_counter()
    assert dashboard.main([str(tmp_path / "nightly"), "-o", str(tmp_path / "site")]) == 0
    build_s = time.perf_counter() - start
    index = tmp_path / "site" / "index.html"
    assert len(list((tmp_path / "site" / "nights").iterdir())) == 365
    first_s, load_s, select_s = _check_year_page(browser, index, tmp_path)
    with capsys.disabled():
        print(f"\n[dashboard from 365 night folders] build {build_s:.1f} s, page "
              f"{index.stat().st_size / 1e6:.2f} MB, first chart drawn {first_s:.2f} s, every chart drawn "
              f"{load_s:.2f} s, select a model {select_s:.2f} s")
    assert load_s < YEAR_LOAD_LIMIT_S


def test_the_page_names_the_nights_that_never_ran(tmp_path):
    """Two days without a scheduled night (one had an ad-hoc run only): the
    nights table says which; a history without a gap says nothing."""
    frames = history_frames(6, MODELS, BACKENDS, seed=5)
    kept = [frames[i] for i in (0, 1, 2, 5)]
    nights = [dashboard.Night(date, tmp_path / date, {"kind": "ad-hoc"} if i == 2 else {})
              for i, (date, _) in enumerate(kept)]
    history = dashboard.combine([(i, df) for i, (_, df) in enumerate(kept)])
    page = dashboard.write_site(tmp_path / "site", nights, history).read_text()
    assert f"Missing nights (no scheduled night ran): {kept[2][0]}, {frames[3][0]}, {frames[4][0]}" in page
    assert "ad-hoc</span>" in page
    unjudged = [dashboard.Night(d, tmp_path / d, {"not_judged": "the gate did not finish"} if i == 2 else {})
                for i, (d, _) in enumerate(frames[:3])]
    shown = dashboard.write_site(tmp_path / "site3", unjudged,
                                 dashboard.combine([(i, df) for i, (_, df) in enumerate(frames[:3])])).read_text()
    assert "NOT JUDGED: the gate did not finish" in shown
    whole = dashboard.write_site(tmp_path / "site2", [dashboard.Night(d, tmp_path / d) for d, _ in frames[:3]],
                                 dashboard.combine([(i, df) for i, (_, df) in enumerate(frames[:3])])).read_text()
    assert "missing-nights" not in whole


def test_an_ad_hoc_night_is_no_baseline_on_the_page(tmp_path):
    """A dispatch that ran one model between two scheduled nights: the
    latest night's change is from the scheduled night before it, the
    trends keep every model in their fixed set (the dispatch's one model
    would otherwise be all of it), and no side-by-side pair starts from the
    ad-hoc night."""
    from benchmarks.results.dashboard import pairs

    frames = history_frames(4, MODELS, BACKENDS, seed=7)
    date, rows = frames[2]
    kept = [frames[0], frames[1], (date, rows[rows["name"] == "alexnet"]), frames[3]]
    nights = [dashboard.Night(d, tmp_path / d, {"kind": "ad-hoc"} if i == 2 else {}) for i, (d, _) in enumerate(kept)]
    data = dashboard.page_data(nights, dashboard.combine([(i, df) for i, (_, df) in enumerate(kept)]))
    [group] = data["groups"]
    assert group["summary"]["latest"] == 3 and group["summary"]["baseline"] == 1
    for trend in group["trends"].values():
        assert trend["ranges"][ALL]["n"] == len(MODELS)
        assert trend["ranges"][ALL]["geo"][2] is None  # the ad-hoc night is no point of the trend
        assert trend["total"][2] == 1  # its pass rate is still shown
    assert pairs.pairs_to_compare(nights, 7) == [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3)]
