"""The dashboard summary per suite and backend, on hand-computed numbers."""
import math
import re

import pandas as pd
import pytest

from benchmarks.results import hud, report, store


def _row(name, backend="torchxla_trace_once", suite="huggingface", status="pass", speedup=1.0, **fields):
    return dict(dev="cpu", name=name, batch_size=1, backend=backend, baseline="xla", suite=suite,
                mode="inference", dtype="fp32", dynamic="static", inputs="fixed", status=status,
                speedup=speedup if status == "pass" else None, **fields)


def _frame(rows):
    return pd.DataFrame(rows)


def test_pass_rate_geomean_compile_time_and_compression():
    rows = [_row("a", speedup=2.0, compilation_latency=10.0, compression_ratio=1.0),
            _row("b", speedup=0.5, compilation_latency=20.0, compression_ratio=0.5),
            _row("c", speedup=1.0, compilation_latency=30.0, compression_ratio=0.6),
            _row("d", status="fail_to_run", compilation_latency=99.0, compression_ratio=9.0)]
    (s,) = hud.summarise(_frame(rows))
    assert (s.suite, s.backend, s.passed, s.total) == ("huggingface", "torchxla_trace_once", 3, 4)
    assert s.geomean == pytest.approx(1.0)  # (2 * 0.5 * 1) ** (1/3); d is left out
    assert s.compilation_s == pytest.approx(20.0)
    assert s.compression == pytest.approx(0.7)
    assert s.marks == ("pass rate", "compression ratio")  # 75% < 90%; 0.7 < 0.9; 1.0 >= 0.95
    headers, (cells,) = hud.render([s])
    assert cells[2] == "**75%, 3/4** ▼" and cells[3] == "1.00x" and cells[5] == "**0.70x** ▼"


def test_a_geomean_below_the_line_is_marked_and_each_suite_backend_apart():
    rows = [_row(f"m{i}", speedup=0.9) for i in range(10)] + [_row("m0", backend="openxla_eval", speedup=1.2)]
    rows.append(_row("x", suite="timm_models", speedup=1.5))
    summaries = {(s.suite, s.backend): s for s in hud.summarise(_frame(rows))}
    assert set(summaries) == {("huggingface", "torchxla_trace_once"), ("huggingface", "openxla_eval"),
                              ("timm_models", "torchxla_trace_once")}
    assert summaries[("huggingface", "torchxla_trace_once")].marks == ("geomean speedup",)
    assert summaries[("huggingface", "openxla_eval")].marks == ()


def test_an_accuracy_run_has_a_pass_rate_and_no_speedup():
    rows = [_row("a", accuracy="pass"), _row("b", status="fail_accuracy", accuracy="fail_accuracy")]
    (s,) = hud.summarise(_frame(rows))
    assert (s.passed, s.total) == (1, 2) and math.isnan(s.geomean) and s.marks == ("pass rate",)


def test_only_pytorchs_suites_get_a_summary_in_the_report(tmp_path):
    assert hud.summarise(_frame([_row("a", suite="builtin")])) == []
    path = tmp_path / "run.csv"
    store.append_rows(path, [_row("a", suite="timm_models", speedup=1.1, abs_latency=1.0,
                                  baseline_latency=1.1)])
    report.finish(path)
    text = store.markdown_path(path).read_text()
    assert "## Dashboard summary" in text
    assert re.search(r"\| timm_models +\| torchxla_trace_once +\| 100%, 1/1 +\| +1.10x", text), text
