"""The flags of first calls, caches, repeats, threads and whole training
steps: what reaches the RunConfig, and bad values -> one line, exit code 2
(in-process: ``cli.main`` returns 2 and prints one line)."""
import dataclasses
import os

import pytest

from benchmarks import cli
from benchmarks.results.schema import TRAINING_MODES
from benchmarks.run.config import COMPILE_STEPS, RunConfig


def config(*argv: str) -> RunConfig:
    return cli.make_config(cli.build_parser().parse_args(["--only", "resnet18", *argv]))


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)


def test_defaults():
    c = config()
    assert c.cold_start and not c.warm_start and c.compile_cache is None
    assert (c.repeat, c.processes, c.max_time, c.adaptive) == (30, 6, None, False)
    assert c.threads is None and c.cpu_affinity == () and not c.compile_step
    assert c.experiment["mode"] == "inference"


def test_first_call_flags(tmp_path):
    c = config("--no-cold-start", "--warm-start", "--compile-cache", str(tmp_path / "cache"))
    assert not c.cold_start and c.warm_start
    assert config().cold_start_repeat == cli.DEFAULT_COLD_START_REPEAT == 3
    assert config("--cold-start-repeat", "5").cold_start_repeat == 5
    assert c.compile_cache == str((tmp_path / "cache").resolve()) and (tmp_path / "cache").is_dir()


def test_adaptive_repeats():
    c = config("--max-time", "120")
    assert c.adaptive and c.max_time == 120.0 and c.repeat == cli.ADAPTIVE_MAX_REPEAT
    assert (c.min_repeat, c.target_ci) == (cli.DEFAULT_MIN_REPEAT, cli.DEFAULT_TARGET_CI)
    c = config("--max-time", "60", "--min-repeat", "8", "--target-ci", "0.05", "--repeat", "40")
    assert (c.repeat, c.min_repeat, c.target_ci) == (40, 8, 0.05)


def test_threads_affinity_and_compile_step():
    first = min(os.sched_getaffinity(0))
    c = config("--threads", "1", "--cpu-affinity", f"{first}", "--training", "--compile-step")
    assert c.threads == 1 and c.cpu_affinity == (first,)
    assert c.compile_step == "whole" and c.experiment["mode"] == "training_step"
    assert c.output.endswith("performance_training_step_cpu.csv")
    graphs = config("--training", "--compile-step=graphs")
    assert graphs.compile_step == "graphs" and graphs.experiment["mode"] == "training_step_graphs"
    assert graphs.output.endswith("performance_training_step_graphs_cpu.csv")
    assert config("--training").compile_step is None and config("--training").experiment["mode"] == "training"


def test_the_compile_step_is_one_setting_of_the_run_with_the_flags_values():
    # One field holds it, read by the row's mode, the file name, placement and the HLO dump.
    assert [f.name for f in dataclasses.fields(RunConfig) if "step" in f.name] == ["compile_step"]
    (action,) = [a for a in cli.build_parser()._actions if "--compile-step" in a.option_strings]
    assert tuple(action.choices) == COMPILE_STEPS and action.const == "whole"
    assert sorted(TRAINING_MODES, key=str) == sorted((None, *COMPILE_STEPS), key=str)


def test_cpu_lists():
    allowed = sorted(os.sched_getaffinity(0))
    if len(allowed) >= 2 and allowed[1] == allowed[0] + 1:
        assert cli.parse_cpus(f"{allowed[0]}-{allowed[1]}") == (allowed[0], allowed[1])
    assert cli.parse_cpus(None) == ()


def test_run_config_round_trips_through_json():
    c = RunConfig(cpu_affinity=(0,), max_time=5.0, cold_start=True, cold_start_repeat=4, compile_step="graphs",
                  training=True)
    assert RunConfig.from_json(c.to_json()) == c


@pytest.mark.parametrize("argv, message", [
    (["--max-time", "0"], "--max-time must be positive"),
    (["--max-time", "10", "--min-repeat", "1"], "--min-repeat must be at least 2"),
    (["--max-time", "10", "--target-ci", "1.5"], "--target-ci must be between 0 and 1"),
    (["--max-time", "10", "--repeat", "3"], "--repeat 3 is below --min-repeat 5"),
    (["--min-repeat", "5"], "--min-repeat applies to adaptive repeats; add --max-time S"),
    (["--target-ci", "0.1"], "--target-ci applies to adaptive repeats"),
    (["--threads", "0"], "--threads must be at least 1"),
    (["--cold-start-repeat", "0"], "--cold-start-repeat must be at least 1"),
    (["--cpu-affinity", "a-b"], "--cpu-affinity takes CPU numbers and ranges"),
    (["--cpu-affinity", "3-1"], "--cpu-affinity takes CPU numbers and ranges"),
    (["--cpu-affinity", "100000"], "--cpu-affinity: CPU 100000 not available here"),
    (["--cpu-affinity", "0-99999999999"], "--cpu-affinity: CPU 99999999999 not available here"),
    (["--only", ""], "--only names no model"),
    (["--compile-step"], "--compile-step compiles a training step; add --training"),
])
def test_bad_values_are_one_line_and_exit_2(argv, message, capsys):
    assert cli.main(["--only", "resnet18", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1, err


def test_an_unwritable_compile_cache_folder_is_refused(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert cli.main(["--only", "resnet18", "--compile-cache", str(blocker / "cache")]) == 2
    assert "--compile-cache: cannot create folder" in capsys.readouterr().err
