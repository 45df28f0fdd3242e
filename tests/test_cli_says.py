"""A command line that says what it will do: training's backends, flags that
contradict each other, PyTorch's harness's flags, --help's defaults."""
import argparse

import pytest

from benchmarks import cli
from benchmarks.cli import flags
from benchmarks.results import store

ONE = ["--suite", "seed", "--only", "resnet18"]


def _config(*argv):
    return cli.make_config(cli.build_parser().parse_args([*ONE, *argv]))


def _refused(capsys, *argv) -> str:
    assert cli.main(list(argv)) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    return err


def test_training_runs_the_training_backends_by_default():
    assert _config("--training").backends == ("torchxla_trivial", "aot_torchxla_trace_once")
    assert _config().backends == ("torchxla_trivial", "torchxla_trace_once")


def test_an_inference_backend_named_for_training_gets_one_line_naming_ours(capsys):
    err = _refused(capsys, *ONE, "--training", "--backend", "torchxla_trace_once", "--dry-run")
    assert "aot_torchxla_trace_once" in err and "torchxla_trace_once is an inference backend" in err


@pytest.mark.parametrize("argv", [
    ["--cold-start-latency", "--no-cold-start"],
    ["--no-isolate", "--timeout", "60"],
    ["-k", "resnet"],  # with ONE's --only
    ["--output", ""],
], ids=str)
def test_contradictory_flags_are_refused(argv, capsys):
    _refused(capsys, *ONE, "--backend", "eager", *argv, "--dry-run")


def test_resume_with_another_repeat_than_its_rows_is_refused(tmp_path, capsys):
    out = tmp_path / "run.csv"
    store.append_rows(out, [dict(dev="cpu", name="resnet18", batch_size=1, backend="eager", baseline="eager",
                                 status="pass", speedup=1.0, repeat=10)])
    err = _refused(capsys, *ONE, "--backend", "eager", "--resume", "--output", str(out), "--repeat", "30")
    assert "--repeat 10" in err
    assert _config("--backend", "eager", "--resume", "--output", str(out), "--repeat", "10").repeat == 10


@pytest.mark.parametrize("flag", ["--nopython", "--inductor", "--xla", "--trace-on-xla", "--use-eval-mode",
                                  "--batch-size-file", "--log-graph-breaks", "--iterations", "--tolerance"])
def test_pytorch_harness_flags_without_a_twin_name_ours(flag, capsys):
    err = _refused(capsys, flag)
    assert "PyTorch's harness's flag; here use" in err


def test_dynamic_batch_only_is_accepted_as_dynamic_shapes():
    assert _config("--backend", "eager", "--dynamic-batch-only").dynamic_shapes


def test_device_xla_is_explained_in_xlas_terms(capsys):
    err = _refused(capsys, "-d", "xla")
    assert "CUDA" not in err and "already runs on XLA" in err


def test_help_shows_every_default_and_lists_no_refused_value():
    parser = cli.build_parser()
    text = parser.format_help()
    assert "float16}" not in text and "{bfloat16" not in text
    lacking = []
    for action in parser._actions:
        shown = action.help not in (None, argparse.SUPPRESS)
        if shown and action.default not in (None, False, [], argparse.SUPPRESS) and "default" not in action.help:
            lacking.append(action.option_strings[0])
    assert lacking == []
    with pytest.raises(cli.UsageError, match="bfloat16 only"):
        parser.parse_args(["--amp", "--amp-dtype", "float16"])


def test_every_refused_flag_is_named_in_flags_elsewhere():
    assert {"--nopython", "--inductor", "--xla", "--trace-on-xla", "--use-eval-mode", "--batch-size-file",
            "--log-graph-breaks"} <= set(flags.FLAGS_ELSEWHERE)


def test_explain_prints_no_recompile_bullet_when_there_are_none(tmp_path):
    from benchmarks.results import explain

    out = tmp_path / "run.csv"
    row = dict(dev="cpu", name="m", batch_size=1, backend="b", baseline="xla", status="pass", speedup=1.0,
               abs_latency=2.0, host_ms=1.0, recompiles=0, inputs="fixed")
    store.append_rows(out, [row, {**row, "name": "n", "recompiles": 1}])
    key = {c: row.get(c) for c in store.SETTING_COLUMNS}
    store.append_samples(store.samples_path(out), [
        store.sample_record("m", "b", "backend", [0.1], 0.1, recompile_reasons=[""], **key),
        store.sample_record("n", "b", "backend", [0.1], 0.1, recompile_reasons=["", "size of x changed"], **key)])
    text = explain.render(out)
    m_part, n_part = text.split("\nm · b")[1].split("\nn · b")
    assert "  recompiles: 0\n" in m_part and "    - " not in m_part
    assert n_part.count("    - ") == 1 and "    - size of x changed" in n_part


def test_compares_table_caption_says_which_way_ratio_and_speedup_point():
    from pathlib import Path

    from benchmarks.results import compare

    fixtures = Path(__file__).parent / "fixtures" / "compare"
    comparison = compare.compare(fixtures / "old.csv", fixtures / "new.csv")
    for text in (compare.render_console(comparison), compare.render_markdown(comparison)):
        caption, table = text.split("How to read it:")[1].split("\n\n", 1)
        assert "below 1 = the backend is faster" in caption and "above 1 = faster" in caption
        assert "backend/baseline" in table.splitlines()[0] and "speedup" in table.splitlines()[0]


def test_profiler_traces_go_beside_the_csv(tmp_path):
    out = tmp_path / "elsewhere" / "run.csv"
    c = _config("--backend", "eager", "--export-profiler-trace", "--output", str(out))
    assert c.profiler_trace_dir == str(tmp_path / "elsewhere" / flags.PROFILER_TRACE_FOLDER)


def test_dry_run_prints_the_real_plan_creates_nothing_and_exits_as_the_run_would(tmp_path, capsys):
    out = tmp_path / "run.csv"
    argv = [*ONE, "--backend", "eager", "--output", str(out), "--repeat", "7", "--warmup", "2",
            "--dump-hlo", str(tmp_path / "hlo"), "--dry-run"]
    assert cli.main(argv) == 0
    plan = capsys.readouterr().out
    assert "7 timed repeats after 2 warm-up call(s)" in plan and "fresh process" in plan
    assert str(tmp_path / "hlo") in plan and not (tmp_path / "hlo").exists()
    out.write_text("an earlier run's\n")
    assert cli.main(argv) == 2
    assert "exit code 2" in capsys.readouterr().out
    assert cli.main([*argv, "--overwrite"]) == 0


def test_no_cold_start_beside_a_cold_start_repeat_is_refused(capsys):
    assert cli.main([*ONE, "--no-cold-start", "--cold-start-repeat", "3", "--dry-run"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--cold-start-repeat" in err[0] and "--no-cold-start" in err[0]


def test_an_accuracy_dry_run_announces_no_timed_repeats(capsys):
    assert cli.main([*ONE, "--backend", "eager", "--accuracy", "--dry-run"]) == 0
    plan = capsys.readouterr().out
    assert "timed repeats" not in plan and "warm-up" not in plan and "first call timed" not in plan
    assert "outputs compared with the eager baseline's" in plan
