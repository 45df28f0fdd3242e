"""What a user meets around a run: selection and dry runs, device checks,
what was written, resumes with nothing left, Ctrl-C, timed-out workers' logs.
In-process through ``cli.main`` (what ``runner.py`` calls)."""
import sys
import textwrap

import pytest

from benchmarks import cli
from benchmarks.run import orchestrate
from benchmarks.results import store
from conftest import TINY_CONFIGS, write_earlier_run


def run(argv, capsys):
    code = cli.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def fast(tmp_path, fault_models):
    configs = tmp_path / "models.yaml"
    configs.write_text(TINY_CONFIGS)
    return ["--suite", "torchbench", "--repeat", "2", "--warmup", "1", "--no-cold-start",
            "--configs", str(configs), "--backend", "eager"]


def test_device_tpu_without_a_tpu_is_refused_before_any_model(tmp_path, capsys):
    code, out, err = run(["--device", "tpu", "--only", "resnet18", "--output", str(tmp_path / "r.csv")],
                         capsys)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("runner.py: error: --device tpu: no TPU")
    assert list(tmp_path.iterdir()) == []


def test_list_models_honours_the_selection_and_shards(capsys):
    code, out, _ = run(["--suite", "seed", "-k", "^res", "--list-models"], capsys)
    assert code == 0 and "resnet18" in out and "resnet50" in out and "alexnet" not in out
    code, out, _ = run(["--suite", "seed", "-k", "^res", "--total-partitions", "2", "--partition-id", "1",
                        "--list-models"], capsys)
    assert code == 0 and "resnet50" in out and "resnet18" not in out


def test_dry_run_says_what_would_run_and_writes_nothing(tmp_path, capsys):
    out_csv = tmp_path / "sub" / "run.csv"
    code, out, err = run(["--suite", "seed", "-k", "^resnet", "--backend", "torchxla_trace_once,openxla_eval",
                          "--batch-size", "4", "--output", str(out_csv), "--dry-run"], capsys)
    assert code == 0, err
    assert "2 model(s) x 2 backend(s)" in out
    for text in ("resnet18", "resnet50", "torchxla_trace_once, openxla_eval", str(out_csv),
                 str(store.samples_path(out_csv)), str(store.plot_path(out_csv))):
        assert text in out, out
    assert [line.split()[:2] for line in out.splitlines() if line.startswith("resnet")] == \
        [["resnet18", "4"], ["resnet50", "4"]]
    assert list(tmp_path.iterdir()) == []


def test_dry_run_with_overwrite_removes_nothing(tmp_path, capsys):
    out_csv = tmp_path / "run.csv"
    out_csv.write_text("earlier\n")
    code, out, err = run(["--only", "resnet18", "--output", str(out_csv), "--overwrite", "--dry-run"], capsys)
    assert code == 0, err
    assert out_csv.read_text() == "earlier\n"
    assert list(tmp_path.iterdir()) == [out_csv]


def test_dry_run_with_overwrite_names_the_partial_files_and_the_swap(tmp_path, capsys):
    out_csv = tmp_path / "run.csv"
    argv = ["--only", "resnet18", "--output", str(out_csv), "--overwrite", "--dry-run"]
    code, out, _ = run(argv, capsys)  # nothing to replace: written under its own names
    assert code == 0 and f"  {out_csv}\n" in out and ".partial" not in out
    out_csv.write_text("earlier\n")
    code, out, _ = run(argv, capsys)
    partial = store.partial_path(out_csv)
    assert code == 0 and partial.name == "run.partial.csv"
    for path in (partial, store.samples_path(partial), store.markdown_path(partial), store.logs_path(partial)):
        assert f"  {path}\n" in out, out
    assert f"  {out_csv}\n" not in out  # not written until the run ends: then swapped in
    assert f"under the earlier run's names ({out_csv}" in out and "as they were" in out


def test_dry_run_of_a_resume_shows_what_is_left(tmp_path, capsys):
    from benchmarks.run import rows

    out_csv = tmp_path / "run.csv"
    argv = ["--suite", "seed", "--only", "resnet18,squeezenet1_1", "--backend", "eager,torchxla_trivial",
            "--repeat", "2", "--output", str(out_csv), "--resume", "--dry-run"]
    config = cli.make_config(cli.build_parser().parse_args(argv))
    done = [{**rows.row_base(config, "resnet18"), "backend": b, "status": "pass", "speedup": 1.0}
            for b in ("eager", "torchxla_trivial")]
    store.append_rows(out_csv, done + [{**done[0], "name": "squeezenet1_1"}])
    before = sorted(tmp_path.iterdir())
    code, out, _ = run(argv, capsys)
    table = {line.split()[0]: line.split(None, 2)[2] for line in out.splitlines()
             if line.startswith(("resnet18", "squeezenet1_1"))}
    assert code == 0 and table == {"resnet18": "none: the output has its rows",
                                   "squeezenet1_1": "torchxla_trivial"}
    assert "--resume: 1 of 2 model(s) with work left" in out
    store.append_rows(out_csv, [{**done[1], "name": "squeezenet1_1"}])
    code, out, _ = run(argv, capsys)
    assert code == 0 and "--resume: nothing left to run" in out
    assert sorted(tmp_path.iterdir()) == before


def test_help_says_what_dry_run_and_overwrite_do(capsys):
    assert cli.main(["--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "exit with the code the run would give; creates nothing" in text
    assert "replace an existing output once this run ends" in text and "NAME.partial.csv" in text


def test_an_unknown_model_points_at_the_torchbench_suite(capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "torchbenchmark", None)  # no checkout here
    code, _, err = run(["--only", "yolov3"], capsys)
    assert code == 2 and "unknown model 'yolov3'" in err and "--suite torchbench" in err


def test_the_unknown_backend_message_lists_what_a_user_picks(capsys):
    code, _, err = run(["--only", "resnet18", "--backend", "torchxla_trace_twice"], capsys)
    assert code == 2 and "did you mean: torchxla_trace_once" in err
    for name in ("torchxla_trace_once", "openxla_eval", "inductor", "eager"):
        assert name in err
    assert "TESTING_ONLY" not in err


def test_wrote_names_every_file_and_resume_with_nothing_left_says_so(tmp_path, fast, capsys):
    out_csv = tmp_path / "run.csv"
    args = [*fast, "--only", "ok_mlp", "--no-isolate", "--output", str(out_csv)]
    code, _, err = run(args, capsys)
    assert code == 0, err
    wrote = err.strip().splitlines()[-1]
    for path in store.files_beside(out_csv):
        assert path.exists() and str(path) in wrote, wrote
    assert err.count(" done") == 1  # the progress bar's last line, once
    code, console, err = run([*args, "--resume"], capsys)
    assert code == 0, err
    assert f"nothing left to run: {out_csv}" in err and "0model" not in err
    assert "ok_mlp" in console  # the report of what is there


def test_ctrl_c_keeps_the_report_of_the_rows_written(tmp_path, fast, capsys, monkeypatch):
    out_csv = tmp_path / "run.csv"
    real = orchestrate.run_one

    def interrupted_at_the_second_model(config, name):
        if name != "ok_mlp":
            raise KeyboardInterrupt
        return real(config, name)

    monkeypatch.setattr(orchestrate, "run_one", interrupted_at_the_second_model)
    code, _, err = run([*fast, "-k", "^(ok_mlp|slow_1)$", "--no-isolate", "--output", str(out_csv)], capsys)
    assert code == 130 and "interrupted" in err
    assert store.read_rows(out_csv)["name"].tolist() == ["ok_mlp"]
    assert "ok_mlp" in store.markdown_path(out_csv).read_text()
    assert store.plot_path(out_csv).exists()


def _interrupt_at(monkeypatch, model, stop=KeyboardInterrupt):
    """``run_one`` raising ``stop`` when it comes to ``model``."""
    real = orchestrate.run_one

    def interrupted(config, name):
        if name == model:
            raise stop()
        return real(config, name)

    monkeypatch.setattr(orchestrate, "run_one", interrupted)


def _kept_as_they_were(earlier: dict) -> bool:
    return all(path.exists() and path.read_bytes() == data for path, data in earlier.items())


def test_overwrite_replaces_the_earlier_files_when_the_run_ends(tmp_path, fast, capsys):
    out_csv = tmp_path / "run.csv"
    write_earlier_run(out_csv)
    code, console, err = run([*fast, "--only", "ok_mlp", "--no-isolate", "--output", str(out_csv),
                              "--overwrite"], capsys)
    assert code == 0, err
    assert f"written as {store.partial_path(out_csv)} until the run ends" in err
    assert store.read_rows(out_csv)["name"].tolist() == ["ok_mlp"]
    assert {s["name"] for s in store.read_samples(store.samples_path(out_csv))} == {"ok_mlp"}
    assert "ok_mlp" in store.markdown_path(out_csv).read_text()
    assert "earlier" not in store.markdown_path(out_csv).read_text() + console
    assert store.plot_path(out_csv).read_bytes().startswith(b"\x89PNG\r\n")  # drawn anew
    assert not store.logs_path(out_csv).exists()  # the earlier run's logs went with it
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [p.name for p in store.files_beside(out_csv)] + [store.pytorch_folder(out_csv).name, "models.yaml"])


def test_ctrl_c_during_an_overwrite_keeps_the_earlier_files(tmp_path, fast, capsys, monkeypatch):
    """An interrupted --overwrite (make bench's) destroys nothing: the
    earlier run's files stay whole, this run's rows and report stay beside
    them, named, and one line says so."""
    out_csv = tmp_path / "run.csv"
    earlier = write_earlier_run(out_csv)
    _interrupt_at(monkeypatch, "slow_1")
    code, _, err = run([*fast, "-k", "^(ok_mlp|slow_1)$", "--no-isolate", "--output", str(out_csv),
                        "--overwrite"], capsys)
    assert code == 130
    assert _kept_as_they_were(earlier)
    partial = store.partial_path(out_csv)
    assert store.read_rows(partial)["name"].tolist() == ["ok_mlp"]
    assert "ok_mlp" in store.markdown_path(partial).read_text()
    assert err.strip().splitlines()[-1] == (
        f"runner.py: interrupted (Ctrl-C); the earlier run's files are kept as they were ({out_csv}); "
        f"this run's 1 row is beside them in {partial}, with their report "
        f"(complete it with --output {partial} --resume)")
    # A second --overwrite that finishes replaces both.
    monkeypatch.undo()
    code, _, err = run([*fast, "--only", "ok_mlp", "--no-isolate", "--output", str(out_csv), "--overwrite"],
                       capsys)
    assert code == 0, err
    assert not partial.exists() and not store.markdown_path(partial).exists()


def test_overwrite_into_a_new_output_replaces_an_interrupted_runs_partial_files(tmp_path, fast, capsys):
    out_csv = tmp_path / "run.csv"
    write_earlier_run(store.partial_path(out_csv))  # a run stopped before it had a file of its own
    code, _, err = run([*fast, "--only", "ok_mlp", "--no-isolate", "--output", str(out_csv), "--overwrite"],
                       capsys)
    assert code == 0, err
    assert store.read_rows(out_csv)["name"].tolist() == ["ok_mlp"]
    assert not store.has_outputs(store.partial_path(out_csv))


def test_a_crash_during_an_overwrite_keeps_the_earlier_files(tmp_path, fast, capsys, monkeypatch):
    out_csv = tmp_path / "run.csv"
    earlier = write_earlier_run(out_csv)
    _interrupt_at(monkeypatch, "slow_1", lambda: OSError(28, "No space left on device"))
    with pytest.raises(OSError):
        run([*fast, "-k", "^(ok_mlp|slow_1)$", "--no-isolate", "--output", str(out_csv), "--overwrite"],
            capsys)
    assert _kept_as_they_were(earlier)
    assert store.read_rows(store.partial_path(out_csv))["name"].tolist() == ["ok_mlp"]
    assert "stopped by OSError; the earlier run's files are kept" in capsys.readouterr().err


def test_a_timed_out_workers_log_keeps_its_output_and_says_why(tmp_path, fast, capsys, monkeypatch):
    sleeper = tmp_path / "sleeper.py"
    sleeper.write_text(textwrap.dedent("""
        import time
        print("worker: loading ok_mlp")  # no flush: the runner runs workers unbuffered
        time.sleep(120)
    """))
    monkeypatch.setattr(orchestrate, "WORKER", (str(sleeper),))
    out_csv = tmp_path / "run.csv"
    code, console, err = run([*fast, "--only", "ok_mlp", "--timeout", "3", "--output", str(out_csv)], capsys)
    assert code == 0, err
    log = store.logs_path(out_csv) / "ok_mlp.log"
    text = log.read_text()
    assert "worker: loading ok_mlp" in text and "timed out: no result after 3 s" in text
    assert f"failed: ok_mlp / eager: timeout: no result after 3 s (log: {log})" in console


def test_configs_are_read_once_when_the_run_starts(tmp_path, fast, capsys):
    """Every model and worker sees configs/ as the run read it at its start,
    even if the file changes while the run goes on."""
    configs = fast[fast.index("--configs") + 1]
    config = cli.make_config(cli.build_parser().parse_args(
        [*fast, "--only", "ok_mlp", "--output", str(tmp_path / "run.csv")]))
    with open(configs, "a") as f:
        f.write("models:\n  ok_mlp:\n    batch_size: {cpu: 3, accelerator: 3}\n")
    assert cli.make_config(cli.build_parser().parse_args(
        [*fast, "--only", "ok_mlp", "--output", str(tmp_path / "other.csv")])).settings() \
        .for_model("ok_mlp").batch_size("cpu", False) == 3  # a new run reads the new file
    from benchmarks.run import rows
    from benchmarks.run.config import RunConfig

    in_worker = RunConfig.from_json(config.to_json())  # what the worker's job holds
    assert not in_worker.settings().lists("ok_mlp")
    # Not listed when the run started: TorchBench's own batch size, not the new 3.
    assert [b["batch_size"] for b in rows.row_bases(in_worker, "ok_mlp")] == [None]


def test_a_signal_while_a_worker_forks_is_kept_for_the_run_to_stop_on():
    """Python drops an exception raised in an at-fork hook: a Ctrl-C or
    SIGTERM landing while a worker is forked would be lost and the run go
    on. Within ``deferred`` it is remembered; ``check`` raises it after."""
    import os
    import signal
    import time

    from benchmarks.run import signals

    before = signal.getsignal(signal.SIGTERM)
    with signals.stop_on_signals():
        signals.check()  # nothing received: nothing raised
        with signals.deferred():
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.2)  # the handler has run by now, and raised nothing
        with pytest.raises(signals.Terminated) as stop:
            signals.check()
        assert signals.exit_status(stop.value) == 143
    with signals.stop_on_signals():
        with pytest.raises(KeyboardInterrupt) as stop:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(5)
        assert not isinstance(stop.value, signals.Terminated) and signals.exit_status(stop.value) == 130
    assert signal.getsignal(signal.SIGTERM) is before
