"""Tests of benchmarks.results.report: golden files for the renderers, units for the table.

Regenerate the golden files after an intended change with
``UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/test_report.py`` and review
the diff; without it a mismatch fails.
"""
import os
import re
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks.results import report, store, tables

GOLDEN = Path(__file__).parent / "golden"
TITLE = "Speedup over baseline"
NAN = np.nan


def _frame(rows):
    """A DataFrame shaped like ``store.read_rows`` output."""
    df = pd.DataFrame([{**dict.fromkeys(store.CSV_COLUMNS, NAN), **r} for r in rows], columns=store.CSV_COLUMNS)
    return df.astype({c.name: c.dtype for c in store.COLUMNS})


def _row(name, backend, speedup, low, high, status="pass", batch_size=8, **settings):
    return {
        **dict(dev="cpu", name=name, batch_size=batch_size, backend=backend, baseline="xla",
               speedup=speedup, speedup_ci_low=low, speedup_ci_high=high, status=status,
               schema_version=2, suite="builtin", mode="inference", dtype="fp32", dynamic="static"),
        **settings,
    }


# Two models x two backends, one failure.  Hand-computed geomeans:
# trivial: only alexnet passed -> 1.50; trace_once: sqrt(2.0 * 0.5) = 1.00.
SAMPLE_ROWS = [
    _row("alexnet", "torchxla_trivial", 1.5, 1.4, 1.6, abs_latency=20.0, baseline_latency=30.0),
    _row("alexnet", "torchxla_trace_once", 2.0, 1.9, 2.25, abs_latency=15.5, baseline_latency=31.0),
    _row("resnet18", "torchxla_trivial", NAN, NAN, NAN, status="fail_to_run", batch_size=16,
         error="RuntimeError: no lowering for aten::foo"),
    _row("resnet18", "torchxla_trace_once", 0.5, 0.45, 0.55, batch_size=16, abs_latency=80.0,
         baseline_latency=40.0),
]


def _check_golden(name, text):
    path = GOLDEN / name
    if os.environ.get("UPDATE_GOLDEN") == "1":
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8"), f"{path} differs; UPDATE_GOLDEN=1 regenerates it"


def test_markdown_matches_golden():
    _check_golden("report.md", report.render_markdown(_frame(SAMPLE_ROWS), title=TITLE))


def test_console_matches_golden():
    _check_golden("report.txt", report.render_console(_frame(SAMPLE_ROWS)))


def test_write_markdown_renders_stored_csv(tmp_path):
    csv_path = tmp_path / "run.csv"
    store.append_rows(csv_path, [{k: v for k, v in r.items() if k != "schema_version"} for r in SAMPLE_ROWS])
    written = report.write_markdown(csv_path, title=TITLE)
    assert written == tmp_path / "run.md"
    assert written.read_text() == (GOLDEN / "report.md").read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.csv", "run.md"]


def test_write_markdown_default_title_names_the_run(tmp_path):
    csv_path = tmp_path / "nightly.csv"
    store.append_rows(csv_path, [SAMPLE_ROWS[0]])
    text = report.write_markdown(csv_path).read_text()
    assert text.startswith("# Speedup over baseline: nightly (inference, fp32, on cpu, xla baseline)\n")


def test_table_cells_and_geomean_exclude_failures():
    headers, rows = report.speedup_table(_frame(SAMPLE_ROWS))
    assert headers == ["name", "batch_size", "torchxla_trivial", "torchxla_trace_once"]
    assert rows == [
        ["alexnet", "8", "1.50x [1.40, 1.60]", "2.00x [1.90, 2.25]"],
        ["resnet18", "16", "fail_to_run", "0.50x [0.45, 0.55]"],
        ["geomean", "", "1.50x (n=1)", "1.00x (n=2)"],
    ]


def test_table_last_row_wins_missing_pair_and_no_ci():
    rows = [
        _row("m", "a", NAN, NAN, NAN, status="timeout"),
        _row("m", "a", 4.0, NAN, NAN),  # re-run appended later: wins
        _row("n", "b", 1.0, 0.9, 1.1),
    ]
    _, body = report.speedup_table(_frame(rows))
    assert body == [
        ["m", "8", "4.00x", "-"],
        ["n", "8", "-", "1.00x [0.90, 1.10]"],
        ["geomean", "", "4.00x (n=1)", "1.00x (n=1)"],
    ]


def test_geomean_of_backend_with_only_failures_is_dash():
    _, body = report.speedup_table(_frame([_row("m", "a", NAN, NAN, NAN, status="OOM")]))
    assert body == [["m", "8", "OOM"], ["geomean", "", "-"]]


def test_failures_and_caption():
    df = _frame(SAMPLE_ROWS)
    assert report.failures(df) == [("resnet18", "torchxla_trivial", "fail_to_run",
                                    "RuntimeError: no lowering for aten::foo", "")]
    assert report.caption(df) == ("Inference, fp32, static shapes, inputs not recorded, on cpu, "
                                  "xla baseline (the model run lazily on the XLA device)")


def test_markdown_without_failures_has_no_failures_section():
    assert "Failures" not in report.render_markdown(_frame(SAMPLE_ROWS[:2]))


def test_empty_results_render():
    empty = store.empty_frame()
    assert "No results" in report.render_markdown(empty)
    assert report.render_console(empty) == "No results.\n"


def test_unstable_rows_get_a_section_and_a_console_warning():
    df = pd.DataFrame([dict(SAMPLE_ROWS[0], unstable="95% CI spans 40% of the speedup")])
    md = report.render_markdown(df)
    assert "## Unstable measurements" in md and "95% CI spans 40% of the speedup" in md
    console = report.render_console(df)
    assert f"warning: alexnet / torchxla_trivial at batch size {SAMPLE_ROWS[0]['batch_size']} may be unstable" \
        in console
    assert report.UNSTABLE_REMEDY in console


def test_an_unstable_warning_names_the_batch_size_of_a_cycle():
    shaky = dict(SAMPLE_ROWS[0], unstable="95% CI spans 40% of the speedup")
    df = pd.DataFrame([dict(shaky, batch_size=1), dict(shaky, batch_size=4)])
    console = report.render_console(df)
    assert "alexnet / torchxla_trivial at batch size 1 may be unstable" in console
    assert "alexnet / torchxla_trivial at batch size 4 may be unstable" in console


def test_compiler_metrics_table_only_when_recorded():
    plain = pd.DataFrame([SAMPLE_ROWS[0]])
    assert report.metrics_table(plain) == ([], [])
    row = dict(SAMPLE_ROWS[0], compiles_per_iter=0.0, execute_ms=12.5, fallback_ops="histc")
    headers, rows = report.metrics_table(pd.DataFrame([row]))
    cells = dict(zip(headers, rows[0]))
    assert cells["compiles/iter"] == "0" and cells["execute ms/iter"] == "12.5"
    assert cells["fallback ops"] == "histc" and "host ms/iter" not in cells
    assert "## Compiler metrics" in report.render_markdown(pd.DataFrame([row]))
    # "of it" reads against the first call's time; without one (accuracy runs) the column says whose.
    headers, _ = report.metrics_table(pd.DataFrame([dict(row, first_call_compile_s=0.5)]))
    assert "first-call XLA compile s" in headers and "of it XLA compile s" not in headers
    headers, _ = report.metrics_table(pd.DataFrame([dict(row, first_call_compile_s=0.5, compilation_latency=2.0)]))
    assert headers[3:5] == ["first call s", "of it XLA compile s"]


def test_accuracy_rows_show_their_verdict():
    row = dict(SAMPLE_ROWS[0], speedup=NAN, speedup_ci_low=NAN, speedup_ci_high=NAN, accuracy="pass")
    _, rows = report.speedup_table(pd.DataFrame([row]))
    assert rows[0][2] == "pass"


def test_title_and_caption_say_what_was_measured(tmp_path):
    rows = [_row("m", "a", 1.5, NAN, NAN, dtype="bf16", mode="training", dynamic="dynamic")]
    csv_path = tmp_path / "run.csv"
    store.append_rows(csv_path, rows)
    text = report.write_markdown(csv_path).read_text()
    assert text.startswith("# Speedup over baseline: run (training, bf16, dynamic shapes, on cpu, xla baseline)\n")
    assert "Training, bf16, dynamic shapes, inputs not recorded, on cpu, xla baseline (the model run lazily on the XLA device)." in text


def test_version_1_rows_say_their_mode_was_not_recorded():
    df = store.read_rows(Path(__file__).parent / "fixtures" / "v1" / "run.csv")
    assert report.caption(df) == ("Mode not recorded, fp32, static shapes, inputs not recorded, on cpu, "
                                  "xla baseline (the model run lazily on the XLA device)")


def test_a_file_with_two_modes_gets_a_table_for_each():
    rows = [_row("m", "a", 1.5, NAN, NAN), _row("m", "a", 3.0, NAN, NAN, mode="training")]
    md = report.render_markdown(_frame(rows))
    assert "## inference, fp32, static shapes, inputs not recorded, on cpu, xla baseline" in md
    assert "## training, fp32, static shapes, inputs not recorded, on cpu, xla baseline" in md
    inference, training = md.split("## training")
    assert "1.50x" in inference and "3.00x" not in inference and "3.00x" in training
    console = report.render_console(_frame(rows))
    assert console.index("Inference,") < console.index("1.50x") < console.index("Training,") < console.index("3.00x")


def test_a_cycle_of_batch_sizes_gets_a_row_per_batch_size():
    rows = [_row("m", backend, speedup * size, NAN, NAN, batch_size=size, dynamic="dynamic")
            for size in (1, 2, 4) for backend, speedup in (("a", 1.0), ("b", 0.5))]
    df = _frame(rows)
    _, body = report.speedup_table(df)
    assert body[:3] == [["m", "1", "1.00x", "0.50x"], ["m", "2", "2.00x", "1.00x"],
                        ["m", "4", "4.00x", "2.00x"]]
    assert "speedups and first-call compiles are per batch size" in report.caption(df)


def test_one_batch_size_per_backend_stays_one_line():
    rows = [_row("m", "a", 1.0, NAN, NAN, batch_size=1), _row("m", "b", 2.0, NAN, NAN, batch_size=2)]
    _, body = report.speedup_table(_frame(rows))
    assert body[0] == ["m", "1/2", "1.00x", "2.00x"]


def test_memory_table_and_per_shape_compiles():
    row = dict(SAMPLE_ROWS[0], peak_host_mb=1100.0, baseline_peak_host_mb=1000.0,
               host_compression_ratio=1000 / 1100, first_call_compiles=1, baseline_first_call_compiles=1)
    md = report.render_markdown(pd.DataFrame([row]))
    headers, rows = report.metrics_table(pd.DataFrame([row]), report.MEMORY)
    cells = dict(zip(headers, rows[0]))
    assert cells["peak host MB"] == "1100" and cells["host ratio"] == "0.909"
    assert "peak device MB" not in cells  # the device did not report memory
    assert "## Memory" in md and "compression_ratio" in md
    headers, rows = report.metrics_table(pd.DataFrame([row]))
    assert dict(zip(headers, rows[0]))["first-call compiles"] == "1"


def test_graph_breaks_are_counted_per_model_and_linked(tmp_path):
    csv_path = tmp_path / "run.csv"
    store.append_rows(csv_path, [SAMPLE_ROWS[0]])
    store.append_graph_breaks(csv_path, [])
    assert "Dynamo broke no graph ([run_graph_breaks.csv](run_graph_breaks.csv))" in \
        report.write_markdown(csv_path).read_text()
    brk = dict(name="alexnet", backend="torchxla_trivial", mode="inference", dtype="fp32", dynamic="static",
               reason="Failed to trace builtin operator: print | pipe", user_frame="m.py:3 in forward")
    store.append_graph_breaks(csv_path, [brk, dict(brk, backend="eager"),
                                           dict(brk, user_frame="m.py:9 in forward")])
    md = report.write_markdown(csv_path).read_text()
    assert "[run_graph_breaks.csv](run_graph_breaks.csv)" in md
    table = md.split("## Graph breaks")[1]
    assert re.search(r"\| alexnet \| +2 \|", table) and "torchxla_trivial, eager" in table
    assert "print \\| pipe" in table  # a pipe in a reason does not split the cell


def _accuracy_row(name, backend, verdict, max_error, **extra):
    return _row(name, backend, NAN, NAN, NAN, status=verdict, accuracy=verdict, max_error=max_error,
                tolerance=0.01, **extra)


def test_an_accuracy_run_is_reported_as_verdicts_with_error_and_tolerance(tmp_path):
    rows = [_accuracy_row("alexnet", "torchxla_trace_once", "pass", 2e-6),
            _accuracy_row("hf_Longformer", "torchxla_trace_once", "fail_accuracy", 0.071,
                          error="max error 0.071 > tolerance 0.01"),
            _accuracy_row("alexnet", "openxla_eval", "pass", 3e-6)]
    csv_path = tmp_path / "accuracy.csv"
    store.append_rows(csv_path, rows)
    console = report.finish(csv_path)
    md = store.markdown_path(csv_path).read_text()
    assert md.startswith("# Accuracy against baseline: accuracy (inference")
    assert "Speedup" not in md and "geomean" not in md
    assert not store.plot_path(csv_path).exists()  # verdicts are not bars
    headers, body = report.accuracy_table(store.read_rows(csv_path))
    assert headers[3:6] == ["verdict", "max error", "tolerance"]
    assert body[1][:6] == ["hf_Longformer", "8", "torchxla_trace_once", "fail_accuracy", "0.0710", "0.0100"]
    _, summary = report.accuracy_summary(store.read_rows(csv_path))
    assert summary == [["torchxla_trace_once", "1 of 2", "1", "0"], ["openxla_eval", "1 of 1", "0", "0"]]
    assert "fail_accuracy" in console and "0.071" in console and "geomean" not in console


def test_failures_show_their_reason_and_kept_log(tmp_path):
    csv_path = tmp_path / "run.csv"
    store.append_rows(csv_path, SAMPLE_ROWS)
    log = store.logs_path(csv_path) / "resnet18.log"
    log.parent.mkdir()
    log.write_text("Traceback ...\nRuntimeError: no lowering for aten::foo\n")
    console = report.finish(csv_path)
    line = "failed: resnet18 / torchxla_trivial: fail_to_run: RuntimeError: no lowering for aten::foo"
    assert f"{line} (log: {log})" in console
    md = store.markdown_path(csv_path).read_text()
    failures = md.split("## Failures")[1]
    assert "RuntimeError: no lowering for aten::foo" in failures and str(log) in failures


def test_the_markdown_shows_latencies_in_ms():
    headers, body = report.latency_table(_frame(SAMPLE_ROWS))
    assert headers == ["name", "batch_size", "baseline ms", "torchxla_trivial ms", "torchxla_trace_once ms"]
    # Three significant digits in a column that is not all whole numbers.
    assert body == [["alexnet", "8", "30", "20", "15.5"], ["resnet18", "16", "40", "-", "80.0"]]


# --------------------------------------------------------------------------
# The baseline is named where a speedup is read


def test_the_eager_baseline_is_named_with_the_way_to_measure_against_lazy_xla():
    rows = [_row("squeezenet1_1", "torchxla_trace_once", 5.2, 3.33, 11.1, baseline="eager")]
    console = report.render_console(_frame(rows))
    assert console.splitlines()[0] == ("Inference, fp32, static shapes, inputs not recorded, on cpu, "
                                       "eager baseline (PyTorch eager on the host)")
    assert "--use-xla-baseline" in console
    md = report.render_markdown(_frame(rows))
    assert "eager baseline (PyTorch eager on the host)" in md and "rerun with --use-xla-baseline" in md
    lazy = _frame(SAMPLE_ROWS)  # the xla baseline: nothing to point at
    assert "--use-xla-baseline" not in report.render_console(lazy)
    assert "--use-xla-baseline" not in report.render_markdown(lazy)


# --------------------------------------------------------------------------
# Headroom: a share only where it can be told from the noise


def test_headroom_shares_stay_within_0_and_100_percent_or_say_why():
    share = report.headroom_share
    # The speedups that read 376%, -669%, 148%: above the limit, slower, noisy.
    assert share(1.24, 1.20, 1.28, 1.06) == ("above the estimated limit", "none by the estimate")
    assert share(1.24, 1.00, 1.50, 1.06) == ("within noise", "up to 1.06x")
    assert share(0.60, 0.55, 0.65, 1.06) == ("slower than the baseline", "up to 1.06x")
    assert share(1.24, NAN, NAN, 1.50) == ("no interval", "up to 1.50x")
    assert share(1.00, 0.90, 1.10, 1.01) == ("", "nothing to gain")
    # Told from the noise: (s - 1) / (limit - 1), its interval clipped to 0-100%.
    assert share(1.30, 1.25, 1.35, 1.41) == ("73% [61%, 85%]", "up to 1.41x")
    assert share(1.40, 1.37, 1.43, 1.41) == ("98% [90%, 100%]", "at the limit")
    assert share(1.02, 0.98, 1.10, 1.41) == ("5% [0%, 24%]", "up to 1.41x")


def test_the_headroom_section_prints_no_share_outside_0_to_100_percent():
    cases = [(1.24, 1.20, 1.28, 1.06), (0.60, 0.55, 0.65, 1.06), (1.48, 1.10, 1.90, 1.10),
             (0.70, 0.60, 0.95, 1.20), (1.30, 1.25, 1.35, 1.41)]
    rows = [_row(f"m{i}", "torchxla_trace_once", s, low, high, zero_overhead_speedup=limit,
                 headroom_captured=(s - 1) / (limit - 1))
            for i, (s, low, high, limit) in enumerate(cases)]
    section = report.render_markdown(_frame(rows)).split("## Headroom")[1]
    shares = [int(p) for p in re.findall(r"(-?\d+)%", section.split("\n\n", 2)[2])]
    assert shares and all(0 <= p <= 100 for p in shares), shares
    assert "above the estimated limit" in section and "slower than the baseline" in section


# --------------------------------------------------------------------------
# Numbers in tables


def test_table_numbers_are_fixed_point_with_three_significant_digits():
    row = dict(SAMPLE_ROWS[0], peak_host_mb=3831.2, baseline_peak_host_mb=3830.0,
               host_compression_ratio=3830.0 / 3831.2, execute_ms=1590.3, compiles_per_iter=0.0,
               host_ms=0.07123, first_call_compiles=13)
    md = report.render_markdown(pd.DataFrame([row]))
    assert "e+" not in md and "e-" not in md
    headers, rows = report.metrics_table(pd.DataFrame([row]), report.MEMORY)
    assert dict(zip(headers, rows[0])) == {"name": "alexnet", "batch_size": "8", "backend": "torchxla_trivial",
                                           "peak host MB": "3831", "baseline peak host MB": "3830",
                                           "host ratio": "1.00"}
    headers, rows = report.metrics_table(pd.DataFrame([row]))
    cells = dict(zip(headers, rows[0]))
    assert (cells["execute ms/iter"], cells["compiles/iter"], cells["host ms/iter"]) == ("1590", "0", "0.0712")
    # A tiny error keeps its digits rather than turning into an exponent.
    _, body = report.accuracy_table(_frame([_accuracy_row("m", "b", "pass", 2e-6)]))
    assert body[0][4:6] == ["0.00000200", "0.0100"]


def test_numbers_are_right_aligned_in_every_table():
    row = dict(SAMPLE_ROWS[0], peak_host_mb=3831.2, execute_ms=12.5, compilation_kind="cold")
    md = report.render_markdown(pd.DataFrame([row]))
    for section in ("## Memory", "## Compiler metrics", "## Latency"):
        header, rule = md.split(section)[1].split("\n| name")[1].splitlines()[:2]
        cells = [c.strip() for c in f"| name{header}".strip("|").split("|")]
        marks = rule.strip("|").split("|")
        aligned = dict(zip(cells, marks))
        assert aligned["name"].startswith(":") and not aligned["name"].endswith(":")
        numeric = [h for h in cells if h.endswith(("MB", "ms/iter", " ms", "batch_size"))]
        assert numeric and all(aligned[h].endswith(":") for h in numeric), (section, aligned)
    console = report.render_console(_frame([_accuracy_row("m", "b", "pass", 2e-6),
                                            _accuracy_row("longer_name", "b", "pass", 0.5)]))
    lines = console.splitlines()
    error_end = lines[2].index("max error") + len("max error")
    assert all(line[error_end - 1] != " " for line in lines[4:6])  # the last digit under the header's end


# --------------------------------------------------------------------------
# What the columns count


def test_the_geomean_counts_a_model_once_whatever_its_batch_sizes():
    # m at batch sizes 1 and 2 (1x, 4x: its own geomean 2x), n at one (8x):
    # over the models sqrt(2 * 8) = 4x, n=2; over the rows it would be 3.17x, n=3.
    rows = [_row("m", "a", 1.0, NAN, NAN, batch_size=1), _row("m", "a", 4.0, NAN, NAN, batch_size=2),
            _row("n", "a", 8.0, NAN, NAN)]
    _, body = report.speedup_table(_frame(rows))
    assert body[-1] == ["geomean", "", "4.00x (n=2)"]
    assert "a model run at several batch sizes counts once" in report.render_markdown(_frame(rows))


def test_the_metrics_say_what_each_per_step_column_counts():
    row = dict(SAMPLE_ROWS[0], execute_ms=215.0, executes_per_iter=12.0, host_ms=3.1)
    md = report.render_markdown(pd.DataFrame([row]))
    metrics = md.split("## Compiler metrics")[1]
    assert "summed over the graphs the step ran" in metrics and "from its dispatch to its completion" in metrics
    assert "can exceed the step's latency" in metrics


# --------------------------------------------------------------------------
# Accuracy runs


def test_an_accuracy_run_lists_no_chart_it_will_not_draw(tmp_path, capsys):
    from benchmarks import cli

    out = tmp_path / "acc.csv"
    assert store.plot_path(out) not in report.report_files(out, accuracy=True)
    assert store.plot_path(out) in report.report_files(out, accuracy=False)
    assert cli.main(["--accuracy", "--only", "resnet18", "--backend", "eager", "--output", str(out),
                     "--dry-run"]) == 0
    plan = capsys.readouterr().out
    assert str(store.markdown_path(out)) in plan and ".png" not in plan


def test_the_memory_note_describes_only_the_columns_the_table_has():
    accuracy_like = dict(SAMPLE_ROWS[0], peak_host_mb=1100.0)  # no baseline peak, no ratio
    md = report.render_markdown(pd.DataFrame([accuracy_like]))
    memory = md.split("## Memory")[1]
    assert "RSS high-water mark" in memory
    assert "ratio" not in memory and "baseline" not in memory
    full = dict(accuracy_like, baseline_peak_host_mb=1000.0, host_compression_ratio=1000 / 1100)
    memory = report.render_markdown(pd.DataFrame([full])).split("## Memory")[1]
    assert "compression_ratio" in memory and "baseline peak" in memory


def test_persistent_cache_counters_show_only_when_the_cache_counted():
    off = dict(SAMPLE_ROWS[0], compiles_per_iter=0.0, persistent_cache_hits=0, persistent_cache_misses=0,
               persistent_cache_load_failures=0)
    headers, _ = report.metrics_table(pd.DataFrame([off]))
    assert "persistent cache hits" not in headers and "misses" not in headers
    on = dict(off, persistent_cache_misses=3)
    headers, rows = report.metrics_table(pd.DataFrame([on]))
    cells = dict(zip(headers, rows[0]))
    assert (cells["persistent cache hits"], cells["misses"], cells["load failures"]) == ("0", "3", "0")


def test_an_accuracy_title_says_dynamic_shapes(tmp_path):
    csv_path = tmp_path / "acc.csv"
    store.append_rows(csv_path, [_accuracy_row("m", "b", "pass", 0.0, dynamic="dynamic")])
    text = report.write_markdown(csv_path).read_text()
    assert text.startswith("# Accuracy against baseline: acc (inference, fp32, dynamic shapes, on cpu, xla baseline)\n")


def test_standalone_tables_format_numbers_as_the_report_does():
    from benchmarks.tools import overhead

    text = tables.render_table(["model", "ms", "runs"], [["a", 1234.5, 3], ["bb", None, 12]], missing="-")
    assert [line.split() for line in text.splitlines()[2:]] == [["a", "1234", "3"], ["bb", "-", "12"]]
    lines = text.splitlines()
    assert lines[2].index("1234") + 3 == lines[3].index("-")  # right-aligned: "-" under the last digit
    rows = [{c: 1234.5 if c.endswith(" s") else "x" for c in overhead.FIRST_CALL_COLUMNS}]
    assert "1234" in overhead.render(rows, overhead.FIRST_CALL_COLUMNS)
    assert "e+" not in overhead.render(rows, overhead.FIRST_CALL_COLUMNS)


def test_an_accuracy_cycle_speaks_of_checks_not_speedups():
    df = _frame([_accuracy_row("m", "b", "pass", 0.0, batch_size=size, dynamic="dynamic") for size in (1, 2)])
    text = report.caption(df)
    assert text.endswith("; each batch size of the cycle was checked and is a row of its own")
    assert "speedup" not in text


def test_a_speedup_on_too_few_samples_is_flagged_in_the_run_report():
    """Three samples give a bootstrap "95%" interval that means nothing:
    the run's own report shows the speedup bare, says why, and names the
    remedy; five samples keep their interval."""
    rows = [_row("alexnet", "torchxla_trivial", 1.15, 1.08, 1.28, repeats_used=3),
            _row("alexnet", "torchxla_trace_once", 2.0, 1.9, 2.25, repeats_used=5)]
    df = _frame(rows)
    _, body = report.speedup_table(df)
    assert body[0][2:] == ["1.15x (3 samples)", "2.00x [1.90, 2.25]"]
    assert report.too_few_samples(df) == [("alexnet", "torchxla_trivial", 3)]
    console = report.render_console(df)
    assert "[1.08, 1.28]" not in console
    assert ("warning: alexnet / torchxla_trivial: 3 timed samples, fewer than the 5 a paired test "
            "needs") in console
    assert "--repeat 5" in console
    md = report.render_markdown(df)
    assert "## Too few samples" in md and "[1.08, 1.28]" not in md
