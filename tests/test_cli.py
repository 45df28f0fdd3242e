"""The command line: flags -> RunConfig, and bad input -> one line, exit code 2.

Parsing is tested in-process (``cli.build_parser`` / ``cli.make_config`` on
the built-in models). Bad input is tested through ``cli.main`` (what
``runner.py`` calls) with captured output, and a few cases end to end,
``runner.py`` in a subprocess each, started together.
"""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import cli
from benchmarks.results import store
from benchmarks.run import suite
from benchmarks.run.config import RunConfig
from conftest import FAULT_MODELS

REPO = Path(__file__).resolve().parent.parent
BUILTIN = suite.list_models("builtin")


def config(*argv: str) -> RunConfig:
    return cli.make_config(cli.build_parser().parse_args(list(argv)))


def selected(*argv: str) -> list[str]:
    return cli.select_models(cli.build_parser().parse_args(list(argv)))


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path, monkeypatch):
    """Runs write under the working folder: keep it out of the repository."""
    monkeypatch.chdir(tmp_path)


# --------------------------------------------------------------------------
# Flags -> RunConfig


def test_defaults():
    c = config()
    assert c.measure == "performance" and not c.training
    assert c.backends == cli.DEFAULT_BACKENDS == ("torchxla_trivial", "torchxla_trace_once")
    assert c.models == tuple(BUILTIN)
    assert c.suite == "builtin" and c.device == "cpu" and c.baseline == "eager"
    assert (c.repeat, c.processes, c.warmup, c.seed, c.timeout) == (30, 6, 3, 0, 900.0)
    assert c.isolate and not c.resume and c.batch_size is None and c.configs is None
    assert Path(c.output) == Path("results", "performance_inference_cpu.csv")
    assert not Path("results").exists()  # made when the run writes, not while checking flags


def test_output_path_follows_mode_and_output_directory():
    assert Path(config("--accuracy").output) == Path("results/accuracy_inference_cpu.csv")
    assert Path(config("--training", "--output-directory", "out").output) == \
        Path("out/performance_training_cpu.csv")
    assert config("--output", "x/y.csv").output == "x/y.csv"


def test_flags_reach_the_config():
    c = config("--accuracy", "--use-xla-baseline", "--randomize-input", "--batch-size", "4",
               "--repeat", "5", "--warmup", "2", "--seed", "7", "--timeout", "60")
    assert (c.measure, c.baseline, c.randomize_input, c.batch_size) == ("accuracy", "xla", True, 4)
    assert (c.repeat, c.warmup, c.seed, c.timeout, c.isolate) == (5, 2, 7, 60.0, True)
    assert not config("--no-isolate").isolate
    assert RunConfig.from_json(c.to_json()) == c  # what a worker receives


def test_backends_comma_separated_and_repeated():
    c = config("--backend", "eager, aot_eager", "--backend", "torchxla_trace_once",
               "--backend=eager")
    assert c.backends == ("eager", "aot_eager", "torchxla_trace_once")  # order kept, no repeats


def test_only_filter_and_exclude():
    assert selected("--only", "resnet18") == ["resnet18"]
    assert selected("--only", "bert_PYTORCH") == ["BERT_pytorch"]  # as TorchBench matches names
    assert selected("--suite", "seed", "-k", "resnet") == ["resnet18", "resnet50"]
    assert selected("--suite", "seed", "-k", "^resn", "-x", "50") == ["resnet18"]
    assert selected("-k", "^resnet") == ["resnet152", "resnet18", "resnet50"]  # builtin: all models
    assert selected("-k", "vgg", "--filter", "alex") == ["alexnet", "vgg16"]  # any -k matches


def test_empty_selection_is_an_error():
    with pytest.raises(cli.UsageError, match="no model matches"):
        selected("-x", ".")


@pytest.mark.parametrize("n", [1, 2, 3, 4, 10, 13])
def test_partitions_cover_every_model_once(n):
    shards = [selected("--total-partitions", str(n), "--partition-id", str(i)) for i in range(n)]
    assert sorted(m for shard in shards for m in shard) == sorted(BUILTIN)  # all, exactly once
    assert max(map(len, shards)) - min(map(len, shards)) <= 1  # balanced
    # Deterministic: the same flags give the same shard, in run order.
    again = [selected("--total-partitions", str(n), "--partition-id", str(i)) for i in range(n)]
    assert again == shards
    assert all(shard == sorted(shard, key=BUILTIN.index) for shard in shards)


def test_partitions_split_the_selection():
    picked = selected("-k", "res")
    halves = [selected("-k", "res", "--total-partitions", "2", "--partition-id", str(i))
              for i in range(2)]
    assert sorted(halves[0] + halves[1]) == sorted(picked)
    assert config("-k", "res", "--total-partitions", "2", "--partition-id", "1").models == \
        tuple(halves[1])


# --------------------------------------------------------------------------
# Bad input: one line on stderr, exit code 2, nothing written


BROKEN_YAML = "defaults:\n  batch_size: {cpu: 1\n"
DEFAULTS_YAML = ("defaults:\n  batch_size: {accelerator: 1, cpu: 1}\n"
                 "  tolerance: {host: 1.0e-4, xla: 1.0e-2}\n  cosine: false\n")
UNKNOWN_KEY_YAML = DEFAULTS_YAML + "models:\n  ok_mlp:\n    batchsize: {cpu: 2}\n"
WRONG_TYPE_YAML = DEFAULTS_YAML + "models:\n  ok_mlp:\n    batch_size: {cpu: two, accelerator: 2}\n"
EXISTING = "dev,name\ncpu,earlier_result\n"

TB = ("--suite", "torchbench")
# id -> (arguments, what the error line must say); {d} is the case's folder.
# Each is run as its own process: exit code, stderr and files as a user sees them.
BAD_INPUT = {
    "unknown_model": ((*TB, "--only", "ok_mpl"), ["unknown model 'ok_mpl'", "ok_mlp"]),
    "unknown_backend": ((*TB, "--only", "ok_mlp", "--backend", "eager,torchxla_trace_onse"),
                        ["unknown backend 'torchxla_trace_onse'", "torchxla_trace_once",
                         "backends to pick:", "openxla_eval", "inductor"]),
    "repeat_zero": ((*TB, "--repeat", "0"), ["--repeat must be at least 1"]),
    "partition_out_of_range": ((*TB, "--total-partitions", "2", "--partition-id", "3"),
                               ["--partition-id must be in [0, 1], got 3"]),
    "resume_with_overwrite": ((*TB, "--resume", "--overwrite"), ["--resume", "--overwrite"]),
    "performance_with_accuracy": (("--performance", "--accuracy"), ["--accuracy", "--performance"]),
    "bad_filter_regex": ((*TB, "-k", "ok_(mlp"), ["-k/--filter", "bad regular expression",
                                                   "'ok_(mlp'"]),
    "unparsable_configs": ((*TB, "--configs", "{d}/broken.yaml"),
                           ["{d}/broken.yaml", "invalid YAML"]),
    "configs_unknown_key": ((*TB, "--configs", "{d}/unknown_key.yaml"),
                            ["{d}/unknown_key.yaml", "models.ok_mlp.batchsize", "unknown key"]),
    "configs_wrong_type": ((*TB, "--configs", "{d}/wrong_type.yaml"),
                           ["{d}/wrong_type.yaml", "models.ok_mlp.batch_size.cpu",
                            "expected a positive int", "'two'"]),
    # A path under a file fails for root too, unlike a read-only folder.
    "output_under_a_file": ((*TB, "--only", "ok_mlp", "--backend", "eager",
                             "--output", "{d}/a_file/run.csv"),
                            ["cannot create output folder", "{d}/a_file"]),
    "output_exists": ((*TB, "--only", "ok_mlp", "--backend", "eager", "--output", "{d}/exists.csv"),
                      ["{d}/exists.csv exists", "--resume", "--overwrite"]),
}


# These also run as a user runs them: runner.py in a process of its own.
END_TO_END = ("configs_wrong_type", "output_exists", "unknown_backend")


def _prepare(folder: Path) -> None:
    (folder / "broken.yaml").write_text(BROKEN_YAML)
    (folder / "unknown_key.yaml").write_text(UNKNOWN_KEY_YAML)
    (folder / "wrong_type.yaml").write_text(WRONG_TYPE_YAML)
    (folder / "a_file").write_text("not a folder\n")
    (folder / "exists.csv").write_text(EXISTING)


def _argv(case: str, folder: Path) -> list[str]:
    argv = [a.format(d=folder) for a in BAD_INPUT[case][0]]
    return argv if "--output" in argv else [*argv, "--output", str(folder / "run.csv")]


def _check_bad_input(case: str, folder: Path, code: int, out: str, err: str) -> None:
    assert "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("runner.py: error: "), lines[0]
    for expected in BAD_INPUT[case][1]:
        assert expected.format(d=folder) in lines[0], lines[0]
    assert code == 2
    assert out == ""
    # Before any model ran: nothing written.
    assert not (folder / "run.csv").exists()
    assert not list(folder.glob("*.jsonl")) and not list(folder.glob("*.md"))
    assert (folder / "exists.csv").read_text() == EXISTING
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        ["broken.yaml", "unknown_key.yaml", "wrong_type.yaml", "a_file", "exists.csv"])


@pytest.mark.parametrize("case", sorted(BAD_INPUT))
def test_bad_input_is_one_line_and_exit_code_2(case, tmp_path, capsys, fault_models):
    _prepare(tmp_path)
    code = cli.main(_argv(case, tmp_path))
    out, err = capsys.readouterr()
    _check_bad_input(case, tmp_path, code, out, err)


@pytest.fixture(scope="module")
def bad_runs(tmp_path_factory):
    """The END_TO_END cases as processes, run at once; id -> (folder, exit code, stdout, stderr)."""
    base = tmp_path_factory.mktemp("bad_input")
    procs = {}
    for case in END_TO_END:
        folder = base / case
        folder.mkdir()
        _prepare(folder)
        env = {**os.environ, "PJRT_DEVICE": "CPU", "PYTHONPATH": str(FAULT_MODELS)}
        procs[case] = folder, subprocess.Popen(
            [sys.executable, "runner.py", *_argv(case, folder)], cwd=REPO, env=env,
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    done = {}
    for case, (folder, proc) in procs.items():
        try:
            out, err = proc.communicate(timeout=300)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
        done[case] = folder, proc.returncode, out, err
    return done


@pytest.mark.parametrize("case", END_TO_END)
def test_bad_input_end_to_end(bad_runs, case):
    _check_bad_input(case, *bad_runs[case])


# More bad input, in-process (cli.main is what runner.py calls): the same
# checks, without paying for a process each.
IN_PROCESS = {
    "unknown_builtin_model": (["--only", "resnet19"], ["unknown model 'resnet19'", "resnet18"]),
    "output_not_csv": (["--only", "resnet18", "--backend", "eager", "--output", "run.txt"],
                       ["must name a .csv file", "run.txt"]),
    "output_is_a_folder": (["--only", "resnet18", "--backend", "eager", "--output", "d.csv"],
                           ["d.csv is a directory"]),
    "unknown_flag": (["--repeats", "3"], ["unrecognized arguments: --repeats"]),
    "not_a_number": (["--repeat", "many"], ["--repeat", "invalid int value: 'many'"]),
    "warmup_zero": (["--warmup", "0"], ["--warmup must be at least 1"]),
    "timeout_not_positive": (["--timeout", "0"], ["--timeout must be positive"]),
    "batch_size_zero": (["--batch-size", "0"], ["--batch-size must be at least 1"]),
    "bad_exclude_regex": (["-x", "[a"], ["-x/--exclude", "bad regular expression"]),
    "nothing_selected": (["-k", "no_such_model"], ["no model matches"]),
    "missing_configs": (["--configs", "nowhere.yaml"], ["nowhere.yaml", "can't read it"]),
    "merge_without_inputs": (["merge", "out.csv"], ["runner.py merge: error:", "IN.csv"]),
    "no_torchbench_package": (["--suite", "torchbench", "--list-models"],
                              ["torchbenchmark", "can't be imported"]),
}


@pytest.mark.parametrize("case", sorted(IN_PROCESS))
def test_bad_input_in_process(case, capsys, monkeypatch, tmp_path):
    argv, expected = IN_PROCESS[case]
    (tmp_path / "d.csv").mkdir()
    monkeypatch.setitem(sys.modules, "torchbenchmark", None)  # not installed, whatever ran before
    assert cli.main(argv) == 2
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith("runner.py")
    for text in expected:
        assert text in lines[0], lines[0]
    assert out == ""
    assert sorted(p.name for p in tmp_path.iterdir()) in (["d.csv"], ["d.csv", "results"])


def test_a_new_run_keeps_the_files_of_another_beside_its_csv(capsys, tmp_path):
    out = tmp_path / "x.csv"
    for path in (store.markdown_path(out), store.plot_path(out), store.samples_path(out)):
        path.write_text("keep me\n")
        argv = ["--only", "resnet18", "--backend", "eager", "--output", str(out)]
        assert cli.main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"{path} exists" in err and "--overwrite" in err, err
        assert path.read_text() == "keep me\n"
        path.unlink()


def test_a_folder_where_a_result_file_goes_is_refused(capsys, tmp_path):
    out = tmp_path / "x.csv"
    store.samples_path(out).mkdir()
    for more in ([], ["--overwrite"], ["--resume"]):
        assert cli.main(["--only", "resnet18", "--backend", "eager", "--output", str(out), "--dry-run", *more]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"{store.samples_path(out)} is a folder" in err, err


def test_resume_refuses_a_file_it_cannot_read_back(capsys, tmp_path):
    good = tmp_path / "good.csv"
    store.append_rows(good, [{"dev": "cpu", "name": "resnet18", "batch_size": 2, "backend": "eager",
                                "baseline": "eager", "status": "pass", "speedup": 1.0, "repeat": 2,
                                "schema_version": store.SCHEMA_VERSION}])
    header, row = good.read_text().splitlines()
    cells = row.split(",")
    cells[header.split(",").index("repeat")] = "nan"
    for name, text in (("nan_cell", ",".join(cells)), ("short_row", ",".join(cells[:5]))):
        path = tmp_path / f"{name}.csv"
        path.write_text(f"{header}\n{text}\n")
        argv = ["--only", "resnet18", "--backend", "eager", "--output", str(path), "--resume", "--dry-run"]
        assert cli.main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"cannot --resume {path}" in err, err


def test_configs_that_are_not_utf8_text(capsys, tmp_path):
    path = tmp_path / "models.yaml"
    path.write_bytes(b"\xd5\xff defaults: {}\n")
    assert cli.main(["--only", "resnet18", "--dry-run", "--configs", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not UTF-8 text" in err, err


def test_resume_refuses_a_file_with_other_columns(capsys, tmp_path):
    # An older harness's file: --resume would append rows under another header.
    old = tmp_path / "old.csv"
    text = "dev,name,batch_size,speedup,backend,status\ncpu,resnet18,1,1.5,eager,pass\n"
    old.write_text(text)
    argv = ["--only", "resnet18", "--backend", "eager", "--output", str(old), "--resume"]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"cannot --resume {old}" in err and "--overwrite" in err
    assert old.read_text() == text


# --------------------------------------------------------------------------
# A newcomer's commands: the README's, and PyTorch's flag names


def _make_bench_argv() -> list[str]:
    """``make bench``'s flags, as the Makefile passes them."""
    lines = (REPO / "Makefile").read_text().splitlines()
    i = next(i for i, line in enumerate(lines) if line.startswith("BENCH_ARGS ?="))
    words = lines[i].split("?=", 1)[1].split()
    while words[-1] == "\\":
        i += 1
        words = words[:-1] + lines[i].split()
    return words


CANONICAL = ["--performance", "--backend=torchxla_trace_once", "--only", "resnet18"]


def test_default_output_names_the_kind_of_experiment():
    assert Path(config(*CANONICAL).output) == Path("results/performance_inference_cpu.csv")
    bench = [a for a in _make_bench_argv() if a != "--overwrite"]
    assert Path(config(*bench).output) == Path("results/performance_inference_cpu_seed_xla_baseline_random_inputs.csv")
    assert Path(config(*CANONICAL, "--bfloat16", "--dynamic-shapes").output) == \
        Path("results/performance_inference_cpu_bf16_dynamic.csv")
    assert Path(config("--training", "--compile-step").output) == \
        Path("results/performance_training_step_cpu.csv")


def test_the_canonical_command_runs_after_make_bench(capsys):
    bench_csv = Path(config(*[a for a in _make_bench_argv() if a != "--overwrite"]).output)
    bench_csv.parent.mkdir()
    for path in store.files_beside(bench_csv):
        path.write_text("make bench's\n")
    assert cli.main([*CANONICAL, "--dry-run"]) == 0
    assert "results/performance_inference_cpu.csv" in capsys.readouterr().out
    config(*CANONICAL)  # a real run's checks pass: no clash
    assert all(p.read_text() == "make bench's\n" for p in store.files_beside(bench_csv))


def test_a_clash_suggests_a_new_output_first_and_a_dry_run_still_plans(capsys):
    csv_path = Path(config(*CANONICAL).output)
    csv_path.parent.mkdir()
    csv_path.write_text("an earlier run's\n")
    assert cli.main(CANONICAL) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and f"{csv_path} exists" in err, err
    assert err.index("--output NEW.csv") < err.index("--resume") < err.index("--overwrite"), err
    assert cli.main([*CANONICAL, "--dry-run"]) == 2  # as the run would
    out = capsys.readouterr().out
    assert "resnet18" in out and f"{csv_path} exists" in out and "--output NEW.csv" in out, out
    assert csv_path.read_text() == "an earlier run's\n"


@pytest.mark.parametrize("dry_run", [False, True])
def test_an_output_folder_that_cannot_be_made_is_one_line(dry_run, capsys):
    argv = ["--only", "resnet18", "--backend", "eager", "--output", "/proc/nope/x.csv"]
    assert cli.main(argv + ["--dry-run"] * dry_run) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "Traceback" not in err, err
    assert "cannot write into /proc/nope" in err, err


def test_only_takes_lists_and_repeats_and_filters_ignore_case():
    assert selected("--only", "resnet18,alexnet") == ["alexnet", "resnet18"]
    assert selected("--only", "resnet18", "--only", "ALEXNET") == ["alexnet", "resnet18"]
    assert selected("--only", "resnet18,resnet18") == ["resnet18"]
    assert selected("--suite", "seed", "-k", "RESNET") == ["resnet18", "resnet50"]
    assert selected("--suite", "seed", "-k", "ResNet", "-x", "50") == ["resnet18"]
    assert selected("--suite", "seed", "-k", "resnet", "--exclude-exact", "RESNET50") == ["resnet18"]
    with pytest.raises(cli.UsageError, match="unknown model 'resnet19'"):
        selected("--only", "resnet18,resnet19")
    with pytest.raises(cli.UsageError, match="names no model"):
        selected("--only", ",")


def test_pytorch_harness_flags_keep_their_meaning():
    assert config("--devices", "cpu").device == config("-d", "CPU").device == "cpu"
    assert config("--cold-start-latency").cold_start and not config("--no-cold-start").cold_start
    assert config("--warm-start-latency").warm_start
    assert config("--amp", "--amp-dtype", "bfloat16").precision == "amp"
    c = config("--export-profiler-trace", "--only", "resnet18", "--output-directory", "out")
    assert Path(c.profiler_trace_dir) == Path("out", cli.PROFILER_TRACE_FOLDER)
    assert Path(config("--export-profiler-trace", "traces").profiler_trace_dir) == Path("traces")


@pytest.mark.parametrize("argv, expected", [
    (["--iterations", "5"], ["--iterations", "--repeat"]),
    (["--iterations"], ["--iterations", "--repeat"]),
    (["--tolerance", "0.01"], ["--tolerance", "configs/models.yaml"]),
    (["--devices", "cuda"], ["'cuda'", "cpu or tpu"]),
    (["--amp-dtype", "bfloat16"], ["--amp-dtype applies to --amp"]),
    (["--amp", "--amp-dtype", "float16"], ["bfloat16 only"]),
    (["--partition-id", "1"], ["--partition-id needs --total-partitions"]),
])
def test_flags_of_pytorchs_harness_with_no_twin_name_ours(argv, expected, capsys):
    assert cli.main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "Traceback" not in err, err
    for text in expected:
        assert text in err, err


def test_version_names_the_harness_and_what_it_measures_with(capsys):
    assert cli.main(["--version"]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and "xla-dynamo-bench" in out, out
    assert "torch 2.9.0" in out and "torch_xla 2.9.0" in out, out


def test_exclude_applies_beside_only():
    assert selected("--only", "resnet18,alexnet", "-x", "resnet") == ["alexnet"]
    assert selected("--only", "resnet18,alexnet", "--exclude-exact", "alexnet") == ["resnet18"]
    with pytest.raises(cli.UsageError, match="nothing left to run: .* every model --only names \\(resnet18\\)"):
        selected("--only", "resnet18", "-x", "resnet18")


def test_partition_id_needs_total_partitions():
    with pytest.raises(cli.UsageError, match="--partition-id needs --total-partitions N"):
        config("--partition-id", "0")
    assert config("--total-partitions", "1", "--partition-id", "0").models == config().models


def test_a_mistyped_subcommand_is_refused_with_the_name_meant(capsys):
    assert cli.main(["comapre", "a.csv", "b.csv"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("runner.py: error: unknown subcommand 'comapre'; did you mean 'compare'?")
    assert len(err.strip().splitlines()) == 1


def test_help_lists_every_subcommand():
    epilog = cli.build_parser().epilog
    assert all(f"runner.py {name}" in epilog for name in cli.SUBCOMMANDS)
