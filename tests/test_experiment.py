"""The experiment as a type: every setting that changes what is measured is
declared once (``schema.SETTINGS``), written on the row, part of the key,
the default output name and the caption; rows of different experiments are
never paired, completed or merged as one."""
import json
from pathlib import Path

import pytest

from benchmarks import cli
from benchmarks.cli import flags
from benchmarks.nightly import night as nightly_night
from benchmarks.results import compare, merge, schema, store
from benchmarks.run import orchestrate, rows, worker
from benchmarks.run.config import RunConfig

BASE = ["--backend=eager", "--only", "resnet18", "--suite", "seed"]


def _config(*argv):
    return cli.make_config(cli.build_parser().parse_args([*BASE, *argv]))


def _long_flags(parser=None):
    """The first long spelling of each flag of runner.py (argparse's help
    and hidden flags included), less PyTorch's harness's flags that are
    refused with a line naming ours."""
    found = []
    for action in (parser or cli.build_parser())._actions:
        if isinstance(action, flags._Refused):
            continue
        found.append(next(o for o in action.option_strings if o.startswith("--")))
    return found


def _unclassified(parser=None):
    """Flags neither declared as a setting of the experiment nor listed as changing nothing measured."""
    declared = {flag for setting in schema.SETTINGS for flag in setting.flags} | set(schema.MEASURE_FLAGS)
    return [f for f in _long_flags(parser) if f not in declared and f not in flags.NOT_MEASURED]


def test_every_flag_sets_a_declared_setting_or_says_why_it_changes_nothing_measured():
    declared = {flag for setting in schema.SETTINGS for flag in setting.flags} | set(schema.MEASURE_FLAGS)
    unclassified = _unclassified()
    assert unclassified == [], ("declare each in schema.SETTINGS if it changes what is measured, "
                                f"else in cli/flags.py's NOT_MEASURED: {unclassified}")
    both = sorted(declared & set(flags.NOT_MEASURED))
    assert both == []
    stale = sorted(set(flags.NOT_MEASURED) - set(_long_flags()))
    assert stale == []
    for flag, (column, _) in flags.NOT_MEASURED.items():
        assert column is None or column in store.CSV_COLUMNS, flag


@pytest.mark.parametrize("hidden", [False, True])
def test_a_new_flag_without_a_declaration_is_caught(hidden):
    import argparse

    parser = cli.build_parser()
    parser.add_argument("--new-knob", type=int, help=argparse.SUPPRESS if hidden else "changes the step")
    assert _unclassified(parser) == ["--new-knob"]


# A value other than the default for each setting a run decides as a whole.
OTHER_VALUE = {
    "suite": ["--suite", "builtin"],
    "baseline": ["--use-xla-baseline"],
    "dev": ["--device", "tpu"],
    "mode": ["--training"],
    "dtype": ["--bfloat16"],
    "dynamic": ["--dynamic-shapes"],
    "inputs": ["--randomize-input"],
    "iterations_per_run": ["--iterations-per-run", "2"],
    "repeat": ["--repeat", "7"],
    "warmup": ["--warmup", "2"],
    "seed": ["--seed", "5"],
}


# --profile applies to PyTorch's suites only: its own test below.
APART = ("profile",)


def test_each_setting_a_flag_changes_is_on_the_row_and_in_the_key_when_it_changes_what_is_measured():
    run_wide = [s for s in schema.SETTINGS if s.of and s.column not in APART]
    assert sorted(OTHER_VALUE) == sorted(s.column for s in run_wide)
    default = _config()
    default_row = {**rows.row_base(default, "resnet18", 1), "backend": "eager"}
    for setting in run_wide:
        assert setting.column in store.CSV_COLUMNS
        other = _config(*OTHER_VALUE[setting.column])
        row = {**rows.row_base(other, "resnet18", 1), "backend": "eager"}
        assert row[setting.column] != default_row[setting.column], setting.column
        if setting.key:
            assert setting.column in store.KEY_COLUMNS
            if setting.column != "suite":  # seed is ten of builtin's models: one experiment, one file
                assert store.experiment_key(row) != store.experiment_key(default_row), setting.column
                assert other.output != default.output, setting.column
        else:
            assert store.experiment_key(row) == store.experiment_key(default_row), setting.column


def test_the_small_profile_is_on_the_row_in_the_key_and_the_file_name():
    argv = ["--backend=eager", "--only", "BertForMaskedLM", "--suite", "huggingface"]
    default = cli.make_config(cli.build_parser().parse_args(argv))
    small = cli.make_config(cli.build_parser().parse_args([*argv, "--profile", "small"]))
    default_row = {**rows.row_base(default, "BertForMaskedLM"), "backend": "eager"}
    small_row = {**rows.row_base(small, "BertForMaskedLM"), "backend": "eager"}
    assert (default_row["profile"], small_row["profile"]) == (None, "small")
    assert (default_row["batch_size"], small_row["batch_size"]) == (16, 1)  # PyTorch's CPU list; small
    assert store.experiment_key(small_row) != store.experiment_key({**small_row, "profile": None})
    assert Path(small.output).name == "performance_inference_cpu_huggingface_small.csv"
    assert Path(default.output).name == "performance_inference_cpu_huggingface.csv"


def test_randomized_inputs_are_a_column_part_of_the_key_and_of_the_file_name():
    fixed, random = _config(), _config("--randomize-input")
    assert rows.row_base(fixed, "resnet18", 1)["inputs"] == "fixed"
    assert rows.row_base(random, "resnet18", 1)["inputs"] == "random"
    assert Path(random.output).name == "performance_inference_cpu_seed_random_inputs.csv"
    assert Path(fixed.output).name == "performance_inference_cpu_seed.csv"
    assert "random inputs" in random.experiment.caption(brief=True)
    assert "inputs" not in fixed.experiment.caption(brief=True)


def _run(path: Path, inputs: str | None, speedup: float = 2.0, version: int | None = None) -> Path:
    row = dict(dev="cpu", name="ok_mlp", batch_size=1, backend="eager", baseline="xla", speedup=speedup,
               abs_latency=1.0, baseline_latency=2.0, status="pass", suite="builtin", mode="inference",
               dtype="fp32", dynamic="static", inputs=inputs)
    if version is not None:
        row["schema_version"] = version
    store.append_rows(path, [row])
    key = {c: row.get(c) for c in store.SETTING_COLUMNS}
    records = [store.sample_record("ok_mlp", "eager", role, [0.002 / speedup ** (role == "backend")] * 6,
                                   0.1, **key) for role in store.SAMPLE_ROLES]
    store.append_samples(store.samples_path(path),
                         [{**r, "schema_version": version or r["schema_version"]} for r in records])
    return path


def test_compare_never_pairs_randomized_with_fixed_inputs(tmp_path):
    old, new = _run(tmp_path / "old.csv", "fixed"), _run(tmp_path / "new.csv", "random")
    (row,) = compare.compare(old, new).rows
    assert row.mark == compare.NOT_COMPARABLE
    assert "inputs fixed -> random" in row.note


def test_resume_does_not_take_fixed_input_rows_for_a_randomized_run(tmp_path):
    config = RunConfig(backends=("eager",), models=("ok_mlp",), batch_size=1, resume=True,
                       use_xla_baseline=True, output=str(tmp_path / "run.csv"))
    store.append_rows(config.csv_path, [{**rows.row_base(config, "ok_mlp"), "backend": "eager",
                                         "status": "pass", "speedup": 1.0}])
    assert orchestrate.pending_work(config) == []  # its own rows complete it
    randomized = config.replace(randomize_input=True)
    assert orchestrate.pending_work(randomized) == [("ok_mlp", ("eager",))]


def test_merge_keeps_randomized_and_fixed_runs_apart(tmp_path):
    a, b = _run(tmp_path / "a.csv", "fixed"), _run(tmp_path / "b.csv", "random")
    out = tmp_path / "out.csv"
    merge.run(out, [a, b])
    merged = store.read_rows(out)
    assert sorted(merged["inputs"]) == ["fixed", "random"]
    assert len({store.experiment_key(r) for r in merged.to_dict("records")}) == 2
    with pytest.raises(merge.UsageError, match="ok_mlp"):  # the same experiment twice is still refused
        merge.run(tmp_path / "twice.csv", [a, _run(tmp_path / "c.csv", "fixed")])


def test_a_version_5_file_reads_as_its_recorded_flags_imply_or_as_unknown(tmp_path):
    (tmp_path / "loose").mkdir()
    loose = _run(tmp_path / "loose" / "run.csv", None, version=5)
    df = store.read_rows(loose)
    assert df["inputs"].isna().all()  # nothing says which: unknown
    (record, _) = store.read_samples(store.samples_path(loose))
    assert store.experiment_key(record) == store.experiment_key(df.iloc[0])

    night = tmp_path / "2026-11-30"
    night.mkdir()
    (night / schema.NIGHT_FILE).write_text(json.dumps(
        {"runner": {"flags": ["--performance", "--use-xla-baseline", "--randomize-input"]}}))
    old = _run(night / "performance.csv", None, version=5)
    df = store.read_rows(old)
    assert set(df["inputs"]) == {"random"}
    assert {r.get("inputs") for r in store.read_samples(store.samples_path(old))} == {"random"}
    shard = tmp_path / "shards"
    shard.mkdir()
    (shard / "shard-0.json").write_text(json.dumps({"runner": {"flags": ["--performance"]}}))
    assert set(store.read_rows(_run(shard / "shard-0.csv", None, version=5))["inputs"]) == {"fixed"}

    assert schema.NIGHT_FILE == nightly_night.NIGHT_FILE  # the night's record, as the nightly writes it
    # The night pairs with a randomized night of today; the unknown file with neither kind.
    new = _run(tmp_path / "new.csv", "random")
    (row,) = compare.compare(old, new).rows
    assert row.mark != compare.NOT_COMPARABLE
    (row,) = compare.compare(loose, new).rows
    assert row.mark == compare.NOT_COMPARABLE
    (row,) = compare.compare(loose, _run(tmp_path / "fixed.csv", "fixed")).rows
    assert row.mark == compare.NOT_COMPARABLE


def test_the_hlo_dump_builds_the_step_the_run_timed(monkeypatch):
    seen = []

    def contender(module, backend, training=False, precision="fp32", on_graph=None, compile_step=None,
                  grad=False):
        seen.append(compile_step)
        raise RuntimeError("stop here")

    monkeypatch.setattr(worker.placement, "backend_contender", contender)
    monkeypatch.setattr(worker.torch._dynamo, "reset", lambda: None)
    config = RunConfig(backends=("torchxla_trace_once",), training=True, compile_step="whole")

    class Bench:
        name, module = "m", None

    with pytest.raises(RuntimeError, match="stop here"):
        worker._dump_hlo(config, Bench, ())
    assert seen == ["whole"]
    with pytest.raises(RuntimeError, match="stop here"):
        worker._contender_of(config.replace(compile_step="graphs"), None, "torchxla_trace_once")
    assert seen[-1] == "graphs"
