"""Tests of benchmarks.dashboard: the data it computes, its command line, and
the page itself in a real browser (Playwright driving Debian's chromium,
installed by `make browser`, which `make test` runs first).

The histories are generated here by ``write_history`` (seeded, synthetic
numbers in the harness's CSV format); the year-long one measures how fast
the page opens with 365 nights x 40 models x 4 backends.
"""
import json
import math
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image
from scipy import stats as sps

from benchmarks import dashboard, results

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--headless", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
HOSTILE_ERROR = 'RuntimeError: </script><script>console.error("injected")</script>'


# --------------------------------------------------------------------------
# Synthetic histories


def history_frames(nights, models, backends, seed=0, failures=()):
    """Seeded synthetic nights from ``2025-01-01`` on: a list of (date, rows)
    in the harness's CSV columns.  ``failures`` holds (night, model, backend)
    triples that fail with ``fail_to_run``."""
    rng = np.random.default_rng(seed)
    dates = [str(d.date()) for d in pd.date_range("2025-01-01", periods=nights, freq="D")]
    pairs = len(models) * len(backends)
    night = np.repeat(np.arange(nights), pairs)
    name = np.tile(np.repeat(models, len(backends)), nights)
    backend = np.tile(backends, len(models) * nights)
    level = np.tile(rng.uniform(0.8, 1.6, pairs), nights)  # each pair's typical speedup
    speedup = level * rng.lognormal(0, 0.02, night.size)
    model_latency = rng.uniform(1.0, 200.0, len(models))[:, None] * rng.lognormal(0, 0.02, (len(models), nights))
    base = np.repeat(model_latency.T.ravel(), len(backends))  # the night's baseline of the model
    broken = np.zeros(night.size, dtype=bool)
    for n, m, b in failures:
        broken[n * pairs + models.index(m) * len(backends) + backends.index(b)] = True
    ok = np.where(broken, np.nan, 1.0)
    df = pd.DataFrame({
        "dev": "cpu", "name": name, "batch_size": 1, "speedup": speedup * ok,
        "abs_latency": base / speedup * ok, "compilation_latency": rng.uniform(0.5, 3.0, night.size) * ok,
        "backend": backend, "baseline": "xla", "baseline_latency": base * ok,
        "speedup_ci_low": speedup * 0.97 * ok, "speedup_ci_high": speedup * 1.03 * ok,
        "status": np.where(broken, "fail_to_run", "pass"), "schema_version": results.SCHEMA_VERSION,
        "error": np.where(broken, HOSTILE_ERROR, None),
    }, columns=results.CSV_COLUMNS)
    return [(dates[i], rows.reset_index(drop=True)) for i, rows in df.groupby(night, sort=True)]


def write_history(root, nights, models, backends, seed=0, failures=(), gate_failures=()):
    """``history_frames`` written under ``root`` as benchmarks.nightly writes
    nights: performance.csv (+ .md), and from the second night on a
    compare.md and compare.json, whose gate failed on the ``gate_failures``
    night indices.  Returns the night names."""
    frames = history_frames(nights, models, backends, seed, failures)
    for night, (date, df) in enumerate(frames):
        folder = Path(root) / date
        folder.mkdir(parents=True)
        df.to_csv(folder / "performance.csv", index=False)
        (folder / "performance.md").write_text(f"# report of {date}\n")
        if night:
            verdict = "FAIL (1 slower)" if night in gate_failures else "PASS"
            (folder / "compare.md").write_text(f"# comparison of {date}: {verdict}\n")
            (folder / "compare.json").write_text(json.dumps({"verdict": verdict}))
    return [date for date, _ in frames]


MODELS = ["alexnet", "mnasnet1_0", "resnet18"]
BACKENDS = ["openxla_eval", "torchxla_trace_once"]
FAILURE = (3, "mnasnet1_0", "openxla_eval")


@pytest.fixture(scope="module")
def small_site(tmp_path_factory):
    """8 nights x 3 models x 2 backends, one failure, one failed gate, and a
    night folder without results; built into a site."""
    root = tmp_path_factory.mktemp("nightly")
    dates = write_history(root, 8, MODELS, BACKENDS, failures=[FAILURE], gate_failures=[5])
    (root / "2025-02-01" / "shards").mkdir(parents=True)  # a night still running: skipped
    (root / "notes").mkdir()  # not a night
    site = root.parent / "site"
    index = dashboard.build(root, site)
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


def test_page_data(small_site):
    root, _, _, dates = small_site
    nights = dashboard.find_nights(root)
    history = dashboard.load_history(nights)
    data = dashboard.page_data(nights, history)
    assert data["nights"] == dates and data["models"] == MODELS and data["backends"] == BACKENDS
    assert data["failedGate"] == [5] and data["verdicts"][0] is None
    # A night's geomean is scipy's over the models that passed.
    night0 = results.read_rows(root / dates[0] / "performance.csv")
    for backend in BACKENDS:
        expected = sps.gmean(night0[night0["backend"] == backend]["speedup"])
        assert data["geomean"][backend]["value"][0] == pytest.approx(expected, rel=1e-3)
        assert data["geomean"][backend]["n"][0] == len(MODELS)
    failing = data["series"]["mnasnet1_0"]["openxla_eval"]
    assert failing["fail"] == [[3, "fail_to_run", HOSTILE_ERROR]]
    assert 3 not in failing["i"] and len(failing["i"]) == len(dates) - 1
    assert data["geomean"]["openxla_eval"]["n"][3] == len(MODELS) - 1


def test_two_settings_of_a_backend_never_share_a_line():
    frames = history_frames(3, MODELS[:1], BACKENDS, seed=2)
    frames[1][1].loc[frames[1][1]["backend"] == "openxla_eval", "dtype"] = "bf16"
    history = dashboard.combine([(i, df.assign(dtype=df["dtype"].fillna("fp32"))) for i, (_, df) in enumerate(frames)])
    assert sorted(history["series"].unique()) == [
        "openxla_eval [dtype=bf16]", "openxla_eval [dtype=fp32]", "torchxla_trace_once [dtype=fp32]"]


def test_an_older_night_shares_the_line_of_the_settings_it_implied():
    """A version-1 night has no dtype column: it was fp32, static."""
    old, new = (df for _, df in history_frames(2, MODELS[:1], BACKENDS[:1], seed=3))
    old = old.assign(schema_version=1, dtype=None, dynamic=None)
    new = new.assign(dtype="fp32", dynamic="static")
    history = dashboard.combine([(0, old), (1, new)])
    assert history["series"].tolist() == [BACKENDS[0], BACKENDS[0]]


def test_site_has_one_page_with_inlined_plotly_and_copied_reports(small_site):
    root, site, index, dates = small_site
    text = index.read_text(encoding="utf-8")
    assert text.count('id="dashboard-data"') == 1
    assert "<script src=" not in text  # works offline: see also test_page_requests_nothing
    assert text.count("plotly.js v") >= 1  # the library itself is in the page
    assert (site / "nights" / dates[0] / "performance.md").read_text() == f"# report of {dates[0]}\n"
    assert (site / "nights" / dates[1] / "compare.md").exists()
    assert f'href="nights/{dates[1]}/compare.md"' in text
    assert "2025-02-01" not in text


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
        (tmp_path / "n" / date / "performance.csv").write_text(",".join(results.CSV_COLUMNS) + "\n")
    index = dashboard.build(tmp_path / "n", tmp_path / "site")
    assert "2 nights (2025-01-01 to 2025-01-02), 0 models" in index.read_text()


@pytest.mark.parametrize("case, message", [
    ("missing", "no such folder"),
    ("empty", "no nights found"),
    ("site_is_file", "is not a folder"),
])
def test_cli_errors_are_one_line_exit_2(tmp_path, capsys, case, message):
    root, site = tmp_path / "nightly", tmp_path / "site"
    if case != "missing":
        root.mkdir()
    if case == "site_is_file":
        write_history(root, 1, MODELS[:1], BACKENDS[:1])
        site.write_text("a file")
    assert dashboard.main([str(root), "-o", str(site)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err


def test_runner_dashboard_subcommand(tmp_path, capsys):
    from benchmarks import cli

    write_history(tmp_path / "n", 2, MODELS[:1], BACKENDS[:1])
    assert cli.main(["dashboard", str(tmp_path / "n"), "-o", str(tmp_path / "site")]) == 0
    assert (tmp_path / "site" / "index.html").stat().st_size > 1_000_000  # Plotly inlined
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
    """Open ``index`` and wait until the first model is drawn; returns the
    page, the console errors and page exceptions seen, and the seconds until
    the page was ready."""
    page = browser.new_page(viewport={"width": 1280, "height": 2400})
    errors, requests = [], []
    page.on("request", lambda request: requests.append(request.url))
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda exc: errors.append(f"page error: {exc}"))
    start = time.perf_counter()
    page.goto(index.as_uri() + fragment)
    page.wait_for_function("document.body.dataset.ready === 'true'", timeout=120_000)
    page.requests = requests
    return page, errors, time.perf_counter() - start


def _traces(page, div):
    return page.evaluate(f"""() => document.getElementById("{div}").data.map(
        t => ({{name: t.name, x: Array.from(t.x || []), y: Array.from(t.y || []), legend: t.showlegend !== false}}))""")


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
    legend = page.locator("#overview .legendtext").all_text_contents()
    assert set(BACKENDS) <= set(legend) and "gate failed" in legend
    overview = [t for t in _traces(page, "overview") if t["legend"]]
    assert {t["name"] for t in overview} == set(BACKENDS) | {"gate failed"}
    dates = small_site[3]
    assert page.locator("#nights tbody tr").count() == len(dates)
    assert page.locator("#nights tr.fail").all_inner_texts()[0].startswith(dates[5])


def test_selecting_a_model_shows_its_series(small_page, small_site):
    page, errors = small_page
    dates = small_site[3]
    page.select_option("#model", "mnasnet1_0")
    page.wait_for_function("document.body.dataset.shown === 'mnasnet1_0'")
    speedup = {t["name"]: t for t in _traces(page, "model-speedup") if t["legend"]}
    assert set(speedup) == set(BACKENDS)
    assert speedup["torchxla_trace_once"]["x"] == dates
    assert dates[3] not in speedup["openxla_eval"]["x"] and len(speedup["openxla_eval"]["x"]) == len(dates) - 1
    latency = {t["name"] for t in _traces(page, "model-latency")}
    assert latency == set(BACKENDS) | {"baseline"}
    (failure,) = _traces(page, "model-failures")
    assert (failure["name"], failure["x"], failure["y"]) == ("openxla_eval", [dates[3]], ["openxla_eval"])
    assert "mnasnet1_0: speedup" in page.locator("#model-speedup .gtitle").text_content()
    assert page.evaluate("location.hash") == "#model=mnasnet1_0"
    assert errors == []


def test_hovering_a_failure_shows_its_error(small_page):
    page, errors = small_page
    page.select_option("#model", "mnasnet1_0")
    page.wait_for_function("document.body.dataset.shown === 'mnasnet1_0'")
    page.evaluate("Plotly.Fx.hover('model-failures', [{curveNumber: 0, pointNumber: 0}])")
    hover = page.locator("#model-failures .hoverlayer").text_content()
    assert "fail_to_run" in hover and "RuntimeError" in hover
    assert errors == []  # the error's markup stayed text


def test_a_link_selects_its_model(small_page):
    page, errors = small_page
    page.evaluate("location.hash = '#model=resnet18'")
    page.wait_for_function("document.body.dataset.shown === 'resnet18'")
    assert page.locator("#model").input_value() == "resnet18"
    assert "resnet18: latency" in page.locator("#model-latency .gtitle").text_content()
    assert errors == []


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
    page.locator("#overview").screenshot(path=str(chart))
    _assert_not_blank(chart)


# Generous bound for a loaded 2-core machine; the measured figure is printed.
YEAR_LOAD_LIMIT_S = 20.0
YEAR_MODELS = [f"model_{i:02d}" for i in range(40)]
YEAR_BACKENDS = ["inductor", "openxla_eval", "torchxla_trace_once", "torchxla_trivial"]
YEAR_FAILURES = [(n, YEAR_MODELS[n % 40], YEAR_BACKENDS[n % 4]) for n in range(0, 365, 7)]
YEAR_GATE_FAILURES = range(10, 365, 30)


def _check_year_page(browser, index, tmp_path):
    """Open the year-long page, select a model; returns (load s, select s)."""
    page, errors, load_s = open_page(browser, index)
    start = time.perf_counter()
    page.select_option("#model", "model_17")
    page.wait_for_function("document.body.dataset.shown === 'model_17'")
    select_s = time.perf_counter() - start
    assert errors == []
    assert page.locator("#model option").count() == 40
    speedup = [t for t in _traces(page, "model-speedup") if t["legend"]]
    assert {t["name"] for t in speedup} == set(YEAR_BACKENDS)
    assert max(len(t["x"]) for t in speedup) == 365
    page.screenshot(path=str(tmp_path / "year.png"))
    _assert_not_blank(tmp_path / "year.png")
    page.close()
    return load_s, select_s


def test_a_year_of_history_opens_fast(browser, tmp_path, capsys):
    """365 nights x 40 models x 4 backends, the page built from rows in
    memory (the nights' files are the slow test's business): it opens, with
    no console error, within the limit; prints the figures (pytest -s)."""
    frames = history_frames(365, YEAR_MODELS, YEAR_BACKENDS, seed=1, failures=YEAR_FAILURES)
    nights = [dashboard.Night(date, tmp_path / date,
                              "FAIL (1 slower)" if i in YEAR_GATE_FAILURES else "PASS" if i else None)
              for i, (date, _) in enumerate(frames)]
    history = dashboard.combine([(i, df) for i, (_, df) in enumerate(frames)])
    index = dashboard.write_site(tmp_path / "site", nights, history)
    load_s, select_s = _check_year_page(browser, index, tmp_path)
    with capsys.disabled():
        print(f"\n[dashboard, 365 nights x 40 models x 4 backends] page {index.stat().st_size / 1e6:.1f} MB, "
              f"load until drawn {load_s:.2f} s, select a model {select_s:.2f} s")
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
    load_s, select_s = _check_year_page(browser, index, tmp_path)
    with capsys.disabled():
        print(f"\n[dashboard from 365 night folders] build {build_s:.1f} s, page "
              f"{index.stat().st_size / 1e6:.1f} MB, load until drawn {load_s:.2f} s, "
              f"select a model {select_s:.2f} s")
    assert load_s < YEAR_LOAD_LIMIT_S
