"""Files of schema version 8 (tests/fixtures/v8/, a performance run spread
over four worker processes, written by the version-8 harness) are still read,
compared per process and resumed: the processes each sample came from are
kept, compare tests the processes' median ratios, and --resume with the flags
that wrote them finds nothing left to run."""
import shutil
from pathlib import Path

import pytest

from benchmarks import cli
from benchmarks.results import compare, pairing, store
from benchmarks.run import orchestrate
from conftest import copy_fixture_run

V8 = Path(__file__).parent / "fixtures" / "v8"
FLAGS = ["--performance", "--suite", "torchbench", "-k", "^ok_mlp$", "--backend", "torchxla_trace_once,eager",
         "--use-xla-baseline", "--randomize-input", "--processes", "4", "--repeat", "5", "--warmup", "1",
         "--no-cold-start"]


@pytest.fixture
def v8_run(tmp_path):
    return copy_fixture_run(V8, tmp_path)


def test_the_fixture_is_version_8():
    header = (V8 / "run.csv").read_text().splitlines()[0].split(",")
    assert header[-1] == "processes"
    df = store.read_rows(V8 / "run.csv")
    assert set(df["schema_version"]) == {8}
    assert list(df["processes"]) == [4, 4] and list(df["repeat"]) == [5, 5]


def test_version_8_samples_keep_their_processes():
    run, _ = pairing.load_run(V8 / "run.csv")
    assert len(run) == 2
    for side in run.values():
        assert side.process_repeats == (5, 5, 5, 5) and side.by_process
        assert len(side.ratios) == 20 and len(side.process_ratios) == 4


def test_version_8_run_is_compared_per_process(v8_run, tmp_path):
    same = compare.compare(v8_run, v8_run)
    assert {(row.mark, row.unit, row.n_old, row.n_new) for row in same.rows} == {
        (compare.NO_CHANGE, compare.UNIT_PROCESS, 20, 20)}
    slowed = tmp_path / "slowed" / "run.csv"
    slowed.parent.mkdir()
    shutil.copy(v8_run, slowed)
    # The fixture's processes differ by up to 200x (tiny models on a loaded
    # machine): only a change beyond that puts every new process above every old.
    records = [{**r, "samples_s": [s * 1000 for s in r["samples_s"]]} if r["role"] == "backend" else r
               for r in store.read_samples(store.samples_path(v8_run))]
    store.append_samples(store.samples_path(slowed), records)
    found = compare.compare(v8_run, slowed)
    assert {(row.mark, row.unit) for row in found.rows} == {(compare.SLOWER, compare.UNIT_PROCESS)}
    assert all(row.change == pytest.approx(999.0) for row in found.rows)


def test_version_8_run_resumed_with_its_flags_has_nothing_left(v8_run, fault_models, capsys):
    args = [*FLAGS, "--output", str(v8_run), "--resume"]
    assert cli.main([*args, "--dry-run"]) == 0, capsys.readouterr().err
    config = cli.make_config(cli.build_parser().parse_args(args))
    assert orchestrate.pending_work(config) == []
    assert orchestrate.pending_work(config.replace(randomize_input=False)) == [
        ("ok_mlp", ("torchxla_trace_once", "eager"))]
