"""``runner.py merge``: CI shards -> one run's CSV, samples and report.

The first tests run two real shards (``--total-partitions 2``) of a few
models of the fake TorchBench package of ``tests/fault_models``, both at
once, and merge them through the command line; a shard is a run of its own,
so its files are what the merged ones must look like. The rest call
``merge.main`` in-process on small hand-written result files.
"""
import csv
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from benchmarks.results import merge, store
from conftest import FAULT_MODELS

REPO = Path(__file__).resolve().parent.parent
MODELS = ("ok_mlp", "ok_tiny", "raise_on_load")  # one failure, for the Failures section
# In the runner's process, without cold starts: what a shard writes is the point here.
RUN_ARGS = ("--suite", "torchbench", "--backend", "eager", "--repeat", "2", "--warmup", "1",
            "--no-isolate", "--no-cold-start", "-k", "^(" + "|".join(MODELS) + ")$")


def runner(*args: str, **popen) -> subprocess.Popen:
    env = {**os.environ, "PJRT_DEVICE": "CPU", "PYTHONPATH": str(FAULT_MODELS)}
    return subprocess.Popen([sys.executable, "runner.py", *args], cwd=REPO, env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **popen)


def finish(proc: subprocess.Popen, what: str) -> tuple[str, str]:
    try:
        out, err = proc.communicate(timeout=420)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
    assert proc.returncode == 0, f"{what}: exit code {proc.returncode}\n{err[-3000:]}"
    return out, err


@pytest.fixture(scope="module")
def sharded(tmp_path_factory):
    """Two shards of MODELS, run at once; then the merge."""
    base = tmp_path_factory.mktemp("merge")
    paths = {"shard0": base / "shard0" / "run.csv", "shard1": base / "shard1" / "run.csv",
             "merged": base / "merged" / "run.csv"}
    procs = {
        "shard0": runner(*RUN_ARGS, "--total-partitions", "2", "--partition-id", "0",
                         "--output", str(paths["shard0"])),
        "shard1": runner(*RUN_ARGS, "--total-partitions", "2", "--partition-id", "1",
                         "--output", str(paths["shard1"])),
    }
    for name, proc in procs.items():
        finish(proc, name)
    out, err = finish(runner("merge", str(paths["merged"]), str(paths["shard0"]),
                             str(paths["shard1"])), "merge")
    return paths, out, err


def data_lines(path: Path) -> list[str]:
    return path.read_text().splitlines()[1:]


@pytest.mark.slow
def test_shards_split_the_models(sharded):
    paths, _, _ = sharded
    names = [set(store.read_rows(paths[s])["name"]) for s in ("shard0", "shard1")]
    assert not names[0] & names[1]
    assert names[0] | names[1] == set(MODELS)


@pytest.mark.slow
def test_merged_csv_is_the_union_of_the_shards(sharded):
    paths, out, err = sharded
    merged = paths["merged"]
    lines = data_lines(merged)
    # Every shard line, copied byte for byte, exactly once; nothing else.
    assert sorted(lines) == sorted(data_lines(paths["shard0"]) + data_lines(paths["shard1"]))
    assert merged.read_text().splitlines()[0] == paths["shard0"].read_text().splitlines()[0]
    assert list(next(csv.reader([merged.read_text().splitlines()[0]]))) == store.CSV_COLUMNS
    df = store.read_rows(merged)
    assert sorted(df["name"]) == sorted(MODELS)
    assert "ok_mlp" in out and "merged 3 row(s)" in err


@pytest.mark.slow
def test_merged_rows_come_in_the_order_of_a_single_run(sharded):
    paths, _, _ = sharded
    merged = store.read_rows(paths["merged"])
    # A single run runs its models sorted by name; the shards interleave them.
    assert list(merged["name"]) == sorted(MODELS)
    assert list(store.read_rows(paths["shard0"])["name"]) == ["ok_mlp", "raise_on_load"]
    statuses = dict(zip(merged["name"], merged["status"]))
    assert statuses == {"ok_mlp": "pass", "ok_tiny": "pass", "raise_on_load": "model_fail_to_load"}


@pytest.mark.slow
def test_samples_are_merged(sharded):
    paths, _, _ = sharded
    lines = {k: store.samples_path(paths[k]).read_text().splitlines() for k in paths}
    assert sorted(lines["merged"]) == sorted(lines["shard0"] + lines["shard1"])
    records = store.read_samples(store.samples_path(paths["merged"]))
    pairs = sorted((r["name"], r["backend"], r["role"]) for r in records)
    assert pairs == [(m, "eager", role) for m in ("ok_mlp", "ok_tiny") for role in ("backend", "baseline")]


def _form(path: Path) -> dict:
    """What the report at ``path`` looks like, without its measured numbers:
    title, headings, the speedup table's header and first column, the
    failures (a kept log named relative to the report's folder).
    (Whether a speedup is flagged unstable is noise, so not compared.)"""
    md = path.read_text().replace(str(path.parent), "<folder>")
    lines = md.splitlines()
    headings = [ln for ln in lines if ln.startswith("#") and "Unstable" not in ln]
    first_table = md.split("\n## ", 1)[0]
    rows = [[c.strip() for c in ln.strip().strip("|").split("|")]
            for ln in first_table.splitlines() if ln.startswith("|")]
    failures = md.partition("\n## Failures\n")[2].split("\n## ", 1)[0]
    return {"headings": headings, "header": rows[0], "models": [r[0] for r in rows[2:]],
            "caption": lines[2], "images": [ln for ln in lines if ln.startswith("![")],
            "failures": failures}


@pytest.mark.slow
def test_report_has_the_form_of_a_single_runs(sharded):
    paths, _, _ = sharded
    merged, single = (_form(store.markdown_path(paths[k])) for k in ("merged", "shard0"))
    assert merged.pop("models") == [*MODELS, "geomean"]
    assert single.pop("models") == ["ok_mlp", "raise_on_load", "geomean"]
    assert merged == single  # same title, headings, columns, failures, plot
    assert "raise_on_load" in merged["failures"]
    assert "raise_on_load.log" in merged["failures"]  # the shard's kept log, beside the merge
    assert (store.logs_path(paths["merged"]) / "raise_on_load.log").is_file()
    assert paths["merged"].with_suffix(".png").exists()


# --------------------------------------------------------------------------
# In-process, on hand-written files


def row(name, backend="eager", **extra):
    return {"dev": "cpu", "name": name, "batch_size": 1, "backend": backend, "baseline": "eager",
            "status": "pass", "speedup": 1.25, "abs_latency": 2.0, "baseline_latency": 2.5,
            "speedup_ci_low": 1.1, "speedup_ci_high": 1.4, "compilation_latency": 0.5, **extra}


def shard(path: Path, *rows: dict, samples: bool = True) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    store.append_rows(path, list(rows))
    if samples:
        store.append_samples(store.samples_path(path), [
            store.sample_record(r["name"], r["backend"], role, [0.002, 0.0021])
            for r in rows for role in ("baseline", "backend")])
    return path


def run_merge(capsys, *argv) -> tuple[int, str, str]:
    code = merge.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


def assert_one_line_error(code, err, *expected):
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("runner.py merge: error: ")
    for text in expected:
        assert str(text) in lines[0], lines[0]


@pytest.fixture
def two(tmp_path):
    a = shard(tmp_path / "a" / "run.csv", row("alpha"), row("gamma"))
    b = shard(tmp_path / "b" / "run.csv", row("beta"), row("beta", "other"))
    return a, b


def test_merge_in_process(two, tmp_path, capsys):
    out = tmp_path / "out" / "all.csv"
    code, _, err = run_merge(capsys, out, *two)
    assert code == 0, err
    df = store.read_rows(out)
    assert list(zip(df["name"], df["backend"])) == [
        ("alpha", "eager"), ("beta", "eager"), ("beta", "other"), ("gamma", "eager")]
    assert len(store.read_samples(store.samples_path(out))) == 8
    assert store.markdown_path(out).read_text().startswith("# Speedup over baseline: all (")


def test_duplicates_are_an_error_naming_them(two, tmp_path, capsys):
    a, _ = two
    again = tmp_path / "again" / "run.csv"
    again.parent.mkdir()
    shutil.copy(a, again)
    shutil.copy(store.samples_path(a), store.samples_path(again))
    out = tmp_path / "out.csv"
    code, _, err = run_merge(capsys, out, *two, again)
    assert_one_line_error(code, err, "2 result(s) in more than one input", "alpha/eager",
                          "gamma/eager", a, again)
    assert not out.exists() and not store.samples_path(out).exists()


def test_a_rerun_within_one_input_is_kept(tmp_path, capsys):
    a = shard(tmp_path / "a.csv", row("alpha", status="fail_to_run"), row("alpha"))
    out = tmp_path / "out.csv"
    assert run_merge(capsys, out, a)[0] == 0
    assert list(store.read_rows(out)["status"]) == ["fail_to_run", "pass"]  # the report reads the last


def test_refuses_to_overwrite_without_the_flag(two, tmp_path, capsys):
    out = tmp_path / "out.csv"
    out.write_text("keep me\n")
    code, _, err = run_merge(capsys, out, *two)
    assert_one_line_error(code, err, out, "exists", "--overwrite")
    assert out.read_text() == "keep me\n"
    assert not store.samples_path(out).exists()
    code, _, err = run_merge(capsys, out, *two, "--overwrite")
    assert code == 0, err
    assert len(store.read_rows(out)) == 4


def test_refuses_an_existing_samples_file_too(two, tmp_path, capsys):
    out = tmp_path / "out.csv"
    store.samples_path(out).write_text("{}\n")
    code, _, err = run_merge(capsys, out, *two)
    assert_one_line_error(code, err, store.samples_path(out), "--overwrite")


def test_accuracy_and_performance_runs_are_not_merged(tmp_path, capsys):
    def verdict_shard(path, *rows):  # an accuracy run times nothing: no samples
        shard(path, *rows, samples=False)
        store.append_samples(store.samples_path(path), [])
        return path

    speedups = shard(tmp_path / "perf" / "run.csv", row("alpha"))
    verdicts = verdict_shard(tmp_path / "acc" / "run.csv", row("beta", speedup=None, accuracy="pass"))
    out = tmp_path / "out.csv"
    code, _, err = run_merge(capsys, out, speedups, verdicts)
    assert_one_line_error(code, err, verdicts, "--accuracy", speedups, "--performance")
    assert not out.exists() and not store.samples_path(out).exists()
    # Verdicts only (a failed row holds neither) merge.
    failed = verdict_shard(tmp_path / "failed" / "run.csv",
                           row("gamma", speedup=None, status="crashed", accuracy="crashed"))
    code, _, err = run_merge(capsys, out, verdicts, failed)
    assert code == 0, err
    assert list(store.read_rows(out)["accuracy"]) == ["pass", "crashed"]


def test_overlapping_runs_of_two_modes_get_the_modes_message(tmp_path, capsys):
    """The same experiment measured for speed and for accuracy: what is
    wrong is the modes, not that the runs overlap."""
    speedups = shard(tmp_path / "perf" / "run.csv", row("alpha"))
    verdicts = shard(tmp_path / "acc" / "run.csv", row("alpha", speedup=None, accuracy="pass"),
                     samples=False)
    store.append_samples(store.samples_path(verdicts), [])
    out = tmp_path / "out.csv"
    code, _, err = run_merge(capsys, out, speedups, verdicts)
    assert_one_line_error(code, err, verdicts, "--accuracy", speedups, "--performance")
    assert "more than one input" not in err
    assert not out.exists()


def test_empty_shards_merge(tmp_path, capsys):
    # What a shard with no models (more partitions than models) leaves.
    empty = tmp_path / "empty.csv"
    store.append_rows(empty, [])
    store.append_samples(store.samples_path(empty), [])
    full = shard(tmp_path / "full" / "run.csv", row("alpha"))
    out = tmp_path / "out.csv"
    assert run_merge(capsys, out, empty, full)[0] == 0
    assert list(store.read_rows(out)["name"]) == ["alpha"]
    out2 = tmp_path / "out2.csv"
    assert run_merge(capsys, out2, empty)[0] == 0
    assert store.read_rows(out2).empty
    assert "_No results._" in store.markdown_path(out2).read_text()


def test_missing_samples_file_is_a_warning(tmp_path, capsys):
    a = shard(tmp_path / "a.csv", row("alpha"), samples=False)
    out = tmp_path / "out.csv"
    code, _, err = run_merge(capsys, out, a)
    assert code == 0
    assert "warning" in err and str(store.samples_path(a)) in err
    assert store.read_samples(store.samples_path(out)) == []


def test_torn_last_line_is_dropped_with_a_warning(tmp_path, capsys):
    a = shard(tmp_path / "a.csv", row("alpha"), row("beta"))
    text = a.read_text()
    a.write_text(text[: text.rindex("beta") + 10])  # cut inside the last row
    out = tmp_path / "out.csv"
    code, _, err = run_merge(capsys, out, a)
    assert code == 0
    assert f"runner.py merge: warning: {a}:3: cut mid-row: the row of beta lost" in err
    assert list(store.read_rows(out)["name"]) == ["alpha"]


def test_older_file_without_optional_columns(tmp_path, capsys):
    required = [c.name for c in store.COLUMNS if c.required]
    old = tmp_path / "old.csv"
    values = {**{c: "" for c in required}, "dev": "cpu", "name": "alpha", "batch_size": "1",
              "backend": "eager", "baseline": "eager", "status": "pass", "speedup": "1.5",
              "schema_version": "1"}
    old.write_text(",".join(required) + "\n" + ",".join(values[c] for c in required) + "\n")
    out = tmp_path / "out.csv"
    assert run_merge(capsys, out, old)[0] == 0
    df = store.read_rows(out)
    assert df.loc[0, "speedup"] == 1.5 and pd.isna(df.loc[0, "error"])
    assert out.read_text().splitlines()[0].split(",") == store.CSV_COLUMNS


def test_bad_samples_line_is_an_error(tmp_path, capsys):
    a = shard(tmp_path / "a.csv", row("alpha"))
    with open(store.samples_path(a), "a") as f:
        f.write("{not json\n")
    out = tmp_path / "out.csv"
    code, _, err = run_merge(capsys, out, a)
    assert_one_line_error(code, err, f"{store.samples_path(a)}:3", "invalid JSON")
    assert not out.exists()


@pytest.mark.parametrize("case", ["missing", "not_results", "binary", "ragged", "unknown_column",
                                  "twice", "out_is_input", "out_under_a_file", "out_not_csv",
                                  "no_inputs"])
def test_bad_input_is_one_line_and_exit_code_2(case, tmp_path, capsys):
    good = shard(tmp_path / "good.csv", row("alpha"))
    bad = tmp_path / "bad.csv"
    out = tmp_path / "out" / "merged.csv"
    argv, expected = {
        "missing": ([out, good, tmp_path / "nowhere.csv"], ["nowhere.csv", "no such file"]),
        "not_results": ([out, bad], [bad, "missing required columns"]),
        "binary": ([out, bad], [bad, "UTF-8"]),
        "ragged": ([out, bad], [f"{bad}:3", "fields"]),
        "unknown_column": ([out, bad], [bad, "doesn't know", "mystery"]),
        "twice": ([out, good, tmp_path / "." / "good.csv"], ["given twice"]),
        "out_is_input": ([good, good], ["also an input"]),
        "out_under_a_file": ([good / "x.csv", good], ["cannot create output folder", good]),
        "out_not_csv": ([tmp_path / "out.txt", good], [".csv"]),
        "no_inputs": ([out], ["required", "IN.csv"]),
    }[case]
    text = good.read_text()
    if case == "not_results":
        bad.write_text("hello,world\n1,2\n")
    elif case == "binary":
        bad.write_bytes(b"\xff\xfe\x00binary")
    elif case == "ragged":
        bad.write_text(text + "cpu,beta\n")
    elif case == "unknown_column":
        header, first = text.splitlines()[:2]
        bad.write_text(f"{header},mystery\n{first},42\n")
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    code, out_text, err = run_merge(capsys, *argv)
    assert_one_line_error(code, err, *expected)
    assert out_text == ""
    after = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    assert after == before  # nothing written, not even the output folder
    assert good.read_text() == text


def test_help_exits_0(capsys):
    assert merge.main(["--help"]) == 0
    assert "--overwrite" in capsys.readouterr().out


def test_dispatched_by_the_cli(two, tmp_path, capsys):
    from benchmarks import cli

    assert cli.main(["merge", str(tmp_path / "out.csv"), *map(str, two)]) == 0
    assert len(store.read_rows(tmp_path / "out.csv")) == 4
