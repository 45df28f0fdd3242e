"""Tests of benchmarks.plots: each chart is written as a valid, non-empty PNG."""
from pathlib import Path

import matplotlib.image
import numpy as np
import pandas as pd

from benchmarks import compare, plots, results

FIXTURES = Path(__file__).parent / "fixtures" / "compare"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _assert_png(path: Path) -> None:
    assert path.stat().st_size > 0
    assert path.read_bytes()[:8] == PNG_SIGNATURE
    image = matplotlib.image.imread(path)
    assert image.ndim == 3 and image.shape[0] > 100 and image.shape[1] > 100
    assert np.ptp(image) > 0  # something was drawn, not a blank canvas


def test_plot_speedups_writes_png(tmp_path):
    df = results.read_rows(FIXTURES / "new.csv")  # two backends, two failures
    written = plots.plot_speedups(df, tmp_path / "speedups.png")
    assert written == tmp_path / "speedups.png"
    _assert_png(written)


def test_plot_speedups_without_passing_rows(tmp_path):
    df = results.read_rows(FIXTURES / "new.csv")
    only_failures = df[df["status"] != "pass"]
    _assert_png(plots.plot_speedups(only_failures, tmp_path / "failures.png"))
    _assert_png(plots.plot_speedups(results.empty_frame(), tmp_path / "empty.png"))


def test_plot_speedups_missing_ci_and_legacy_status(tmp_path):
    df = results.read_rows(FIXTURES / "new.csv")
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
    assert ax.get_title() == "Speedup over xla baseline (cpu, inference, bf16)"
