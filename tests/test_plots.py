"""Tests of benchmarks.results.plots: each chart is written as a valid, non-empty PNG."""
from pathlib import Path

import matplotlib.image
import numpy as np
import pandas as pd
import pytest

from benchmarks.results import compare, plots, store

FIXTURES = Path(__file__).parent / "fixtures" / "compare"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _assert_png(path: Path) -> None:
    assert path.stat().st_size > 0
    assert path.read_bytes()[:8] == PNG_SIGNATURE
    image = matplotlib.image.imread(path)
    assert image.ndim == 3 and image.shape[0] > 100 and image.shape[1] > 100
    assert np.ptp(image) > 0  # something was drawn, not a blank canvas


def test_plot_speedups_writes_png(tmp_path):
    df = store.read_rows(FIXTURES / "new.csv")  # two backends, two failures
    written = plots.plot_speedups(df, tmp_path / "speedups.png")
    assert written == tmp_path / "speedups.png"
    _assert_png(written)


def test_plot_speedups_without_passing_rows(tmp_path):
    df = store.read_rows(FIXTURES / "new.csv")
    only_failures = df[df["status"] != "pass"]
    _assert_png(plots.plot_speedups(only_failures, tmp_path / "failures.png"))
    _assert_png(plots.plot_speedups(store.empty_frame(), tmp_path / "empty.png"))


def test_plot_speedups_missing_ci_and_legacy_status(tmp_path):
    df = store.read_rows(FIXTURES / "new.csv")
    df.loc[:, ["speedup_ci_low", "speedup_ci_high"]] = np.nan
    df.loc[df["status"] == "pass", "status"] = pd.NA  # PyTorch-harness style: no status column values
    _assert_png(plots.plot_speedups(df, tmp_path / "legacy.png"))


def test_plot_comparison_writes_png(tmp_path):
    comparison = compare.compare(FIXTURES / "old.csv", FIXTURES / "new.csv")
    written = plots.plot_comparison(comparison, tmp_path / "sub" / "comparison.png")
    assert written == tmp_path / "sub" / "comparison.png"
    _assert_png(written)


def test_plot_comparison_with_nothing_measured(tmp_path):
    comparison = compare.compare(FIXTURES / "old.csv", FIXTURES / "old.csv")
    only_failures = compare.Comparison(
        rows=[r for r in comparison.rows if r.mark == compare.STILL_FAILING],
        old_label="a", new_label="b", threshold=0.05, alpha=0.05, min_samples=5,
        geomean_ratio=float("nan"), geomean_n=0,
    )
    _assert_png(plots.plot_comparison(only_failures, tmp_path / "nothing.png"))


def test_speedups_on_a_log_axis_titled_with_what_was_measured():
    rows = [dict(dev="cpu", name=n, batch_size=1, backend="b", baseline="xla", speedup=v,
                 speedup_ci_low=np.nan, speedup_ci_high=np.nan, status="pass", schema_version=4,
                 mode="inference", dtype="bf16") for n, v in (("slow", 0.21), ("fast", 3.0))]
    fig = plots.speedup_figure(pd.DataFrame(rows))
    ax = fig.axes[0]
    assert ax.get_yscale() == "log"
    low, high = ax.get_ylim()
    assert low < 0.21 and high > 3.0  # a 0.21x slowdown is visible, pointing down from 1x
    assert ax.get_title() == "Speedup (inference, bf16, on cpu, xla baseline)"


def _row(name, backend, speedup, **settings):
    return {**dict(dev="cpu", name=name, batch_size=1, backend=backend, baseline="xla", speedup=speedup,
                   speedup_ci_low=np.nan, speedup_ci_high=np.nan, status="pass", schema_version=4,
                   mode="inference", dtype="fp32"), **settings}


def _bar_heights(ax) -> dict[str, list[float]]:
    """Per backend (legend label), the speedups its bars show, left to right."""
    found = {}
    for container in ax.containers:
        if hasattr(container, "patches") and container.get_label() and not container.get_label().startswith("_"):
            bars = sorted(container.patches, key=lambda p: p.get_x())
            found[container.get_label()] = [round(p.get_y() + p.get_height(), 6) for p in bars]
    return found


def test_a_cycle_of_batch_sizes_draws_a_bar_per_size():
    rows = [_row("m", b, v, batch_size=bs) for b, bs, v in
            (("ours", 2, 1.5), ("ours", 4, 2.5), ("lazy", 2, 1.1), ("lazy", 4, 0.8))]
    rows.append(_row("n", "ours", 3.0))
    rows.append(_row("n", "lazy", 1.2))
    (ax,) = plots.speedup_figure(pd.DataFrame(rows)).axes
    assert [t.get_text() for t in ax.get_xticklabels()] == ["m bs 2", "m bs 4", "n"]
    assert _bar_heights(ax) == {"ours": [1.5, 2.5, 3.0], "lazy": [1.1, 0.8, 1.2]}


def test_rows_of_other_settings_get_a_panel_each():
    # A training run resumed on an inference CSV: the same model in two modes.
    rows = [_row("m", "ours", 2.0), _row("m", "ours", 0.5, mode="training")]
    fig = plots.speedup_figure(pd.DataFrame(rows))
    assert [ax.get_title() for ax in fig.axes] == ["Speedup (inference, fp32, on cpu, xla baseline)",
                                                    "Speedup (training, fp32, on cpu, xla baseline)"]
    assert [_bar_heights(ax) for ax in fig.axes] == [{"ours": [2.0]}, {"ours": [0.5]}]


def test_a_dynamic_shapes_run_says_so_in_its_title():
    fig = plots.speedup_figure(pd.DataFrame([_row("m", "ours", 2.0, dynamic="dynamic")]))
    assert fig.axes[0].get_title() == "Speedup (inference, fp32, dynamic shapes, on cpu, xla baseline)"


def test_the_geomean_line_counts_a_model_once_whatever_its_batch_sizes():
    # m at batch sizes 2 and 4 (1x, 4x: its own geomean 2x), n at one (8x): sqrt(2 * 8) = 4x.
    rows = [_row("m", "ours", 1.0, batch_size=2), _row("m", "ours", 4.0, batch_size=4), _row("n", "ours", 8.0)]
    (ax,) = plots.speedup_figure(pd.DataFrame(rows)).axes
    (line,) = [l for l in ax.get_lines() if l.get_label().startswith("geomean")]
    assert line.get_label() == "geomean ours: 4.00x (n=2)"
    assert line.get_ydata()[0] == pytest.approx(4.0)
