"""Every subcommand on bad input: one line on stderr, exit code 2, no
traceback, no Python warning, and nothing already written changed.

One table (``CASES``): id -> (command, arguments, text the line must hold).
``{d}`` is the case's folder, holding a whole run (``good.csv``), damaged
copies of it and other bad files (``_files``). Commands run in-process
(``cli.main`` is what runner.py calls, ``nightly.main`` what ``python -m
benchmarks.nightly`` calls): torch is imported once for the whole table.
"""
import os
import warnings
from pathlib import Path

import pytest

from benchmarks import cli
from benchmarks.nightly import cli as nightly
from benchmarks.results import store

REPO = Path(__file__).resolve().parent.parent


def _row(name: str, backend: str = "eager") -> dict:
    return dict(dev="cpu", name=name, batch_size=1, backend=backend, baseline="eager", speedup=1.0,
                abs_latency=1.0, compilation_latency=0.1, baseline_latency=1.0, status="pass",
                suite="builtin", mode="inference", dtype="fp32")


def _files(d: Path) -> None:
    good = d / "good.csv"
    store.append_rows(good, [_row("resnet18"), _row("alexnet")])
    store.append_samples(store.samples_path(good), [store.sample_record("resnet18", "eager", "backend", [1e-3] * 5)])
    text = good.read_text()
    header, first, second = text.splitlines(keepends=True)
    (d / "garbage.csv").write_text(header + first + "this,is,garbage\n" + second)
    (d / "short.csv").write_text(header + "cpu,resnet18\n" + second)
    (d / "badnum.csv").write_text(header + first.replace("cpu,resnet18,1,", "cpu,resnet18,one,") + second)
    (d / "cut.csv").write_text(text[:-25])
    (d / "empty.csv").write_bytes(b"")
    (d / "binary.csv").write_bytes(bytes(range(256)) * 4)
    (d / "othercols.csv").write_text("a,b,c\n1,2,3\n")
    (d / "badjson.csv").write_text(text)
    (d / "badjson.jsonl").write_text('{"name": "resnet18"}\n{not json\n{"name": "alexnet"}\n')
    (d / "dir.csv").mkdir()
    (d / "a_file").write_text("not a folder\n")
    (d / "binary.yaml").write_bytes(b"\xff\xfe\x00\x01")
    (d / "nights").mkdir()  # a history root with no nights


RUN = ("--output", "{d}/run.csv")
# id -> (command, arguments, what the one line must say)
CASES = {
    # runner.py (a run)
    "run_unknown_model": ("runner", ("--only", "nosuchmodel", *RUN), "unknown model 'nosuchmodel'"),
    "run_only_and_exclude_the_same": ("runner", ("--only", "resnet18", "-x", "resnet18", *RUN),
                                      "nothing left to run"),
    "run_partition_id_alone": ("runner", ("--partition-id", "0", *RUN), "--partition-id needs --total-partitions"),
    "run_negative_repeat": ("runner", ("--repeat", "-1", *RUN), "--repeat must be at least 1"),
    "run_repeat_not_a_number": ("runner", ("--repeat", "x", *RUN), "invalid int value: 'x'"),
    "run_unknown_backend": ("runner", ("--only", "resnet18", "--backend", "nosuch", *RUN), "unknown backend 'nosuch'"),
    "run_unknown_flag": ("runner", ("--repeats", "3", *RUN), "unrecognized arguments: --repeats"),
    "run_cold_start_repeat_beside_no_cold_start": ("runner", ("--no-cold-start", "--cold-start-repeat", "3", *RUN),
                                                   "give one of them"),
    "run_timeout_zero": ("runner", ("--timeout", "0", *RUN), "--timeout must be positive"),
    "run_bad_batch_sizes": ("runner", ("--batch-sizes", "1,x", *RUN), "--batch-sizes takes positive integers"),
    "run_bad_cpu_affinity": ("runner", ("--cpu-affinity", "a-b", *RUN), "--cpu-affinity takes CPU numbers"),
    "run_output_is_a_folder": ("runner", ("--only", "resnet18", "--output", "{d}/dir.csv"), "is a directory"),
    "run_output_under_a_file": ("runner", ("--only", "resnet18", "--output", "{d}/a_file/run.csv"),
                                "cannot create output folder"),
    "run_output_exists": ("runner", ("--only", "resnet18", "--output", "{d}/good.csv"), "good.csv exists"),
    "run_configs_missing": ("runner", ("--configs", "{d}/nowhere.yaml", *RUN), "nowhere.yaml"),
    "run_configs_binary": ("runner", ("--configs", "{d}/binary.yaml", *RUN), "binary.yaml"),
    "resume_garbage_row": ("runner", ("--only", "resnet18", "--resume", "--output", "{d}/garbage.csv"),
                           "{d}/garbage.csv:3: a row of 3 fields"),
    "resume_short_row": ("runner", ("--only", "resnet18", "--resume", "--output", "{d}/short.csv"),
                         "{d}/short.csv:2: a row of 2 fields"),
    "resume_bad_number": ("runner", ("--only", "resnet18", "--resume", "--output", "{d}/badnum.csv"),
                          "{d}/badnum.csv:2: batch_size is 'one', not a number"),
    "resume_binary": ("runner", ("--only", "resnet18", "--resume", "--output", "{d}/binary.csv"),
                      "{d}/binary.csv"),
    "resume_other_columns": ("runner", ("--only", "resnet18", "--resume", "--output", "{d}/othercols.csv"),
                             "othercols.csv"),
    # compare
    "compare_new_missing": ("runner", ("compare", "{d}/good.csv", "{d}/nosuch.csv"), "{d}/nosuch.csv"),
    "compare_old_missing": ("runner", ("compare", "{d}/nosuch.csv", "{d}/good.csv"), "{d}/nosuch.csv"),
    "compare_new_binary": ("runner", ("compare", "{d}/good.csv", "{d}/binary.csv"), "{d}/binary.csv: not UTF-8"),
    "compare_old_binary": ("runner", ("compare", "{d}/binary.csv", "{d}/good.csv"), "{d}/binary.csv: not UTF-8"),
    "compare_new_garbage_row": ("runner", ("compare", "{d}/good.csv", "{d}/garbage.csv"), "{d}/garbage.csv:3:"),
    "compare_old_garbage_row": ("runner", ("compare", "{d}/garbage.csv", "{d}/good.csv"), "{d}/garbage.csv:3:"),
    "compare_short_row": ("runner", ("compare", "{d}/good.csv", "{d}/short.csv"), "{d}/short.csv:2:"),
    "compare_bad_number": ("runner", ("compare", "{d}/good.csv", "{d}/badnum.csv"),
                           "{d}/badnum.csv:2: batch_size is 'one'"),
    "compare_other_columns": ("runner", ("compare", "{d}/good.csv", "{d}/othercols.csv"),
                              "missing required columns"),
    "compare_bad_json_line": ("runner", ("compare", "{d}/good.csv", "{d}/badjson.csv"), "{d}/badjson.jsonl:2:"),
    "compare_a_folder": ("runner", ("compare", "{d}/good.csv", "{d}/dir.csv"), "dir.csv"),
    "compare_same_file": ("runner", ("compare", "{d}/good.csv", "{d}/good.csv"), "the same file"),
    "compare_one_file": ("runner", ("compare", "{d}/good.csv"), "NEW"),
    "compare_bad_threshold": ("runner", ("compare", "{d}/good.csv", "{d}/cut.csv", "--threshold", "-1"),
                              "--threshold must be a number >= 0"),
    "compare_bad_alpha": ("runner", ("compare", "{d}/good.csv", "{d}/cut.csv", "--alpha", "2"),
                          "--alpha must be between 0 and 1"),
    # merge
    "merge_garbage_row": ("runner", ("merge", "{d}/out.csv", "{d}/garbage.csv"), "{d}/garbage.csv:3:"),
    "merge_binary": ("runner", ("merge", "{d}/out.csv", "{d}/binary.csv"), "{d}/binary.csv"),
    "merge_missing": ("runner", ("merge", "{d}/out.csv", "{d}/nosuch.csv"), "{d}/nosuch.csv"),
    "merge_bad_json_line": ("runner", ("merge", "{d}/out.csv", "{d}/badjson.csv"), "{d}/badjson.jsonl:2:"),
    "merge_an_experiment_twice": ("runner", ("merge", "{d}/out.csv", "{d}/good.csv", "{d}/good.csv"), "good.csv"),
    "merge_no_inputs": ("runner", ("merge", "{d}/out.csv"), "IN.csv"),
    # dashboard
    "dashboard_missing_root": ("runner", ("dashboard", "{d}/nowhere", "-o", "{d}/site"), "{d}/nowhere"),
    "dashboard_no_nights": ("runner", ("dashboard", "{d}/nights", "-o", "{d}/site"), "no nights"),
    "dashboard_site_in_the_history": ("runner", ("dashboard", "{d}/nights", "-o", "{d}/nights/site"),
                                      "inside the history"),
    # bisect: checked before any worktree is made
    "bisect_unknown_model": ("runner", ("bisect", "HEAD~1", "HEAD", "--only", "nosuchmodel",
                                        "--backend", "torchxla_trace_once"), "unknown model 'nosuchmodel'"),
    "bisect_unknown_backend": ("runner", ("bisect", "HEAD~1", "HEAD", "--only", "resnet18", "--backend", "nosuch"),
                               "unknown backend 'nosuch'"),
    "bisect_bad_repeat": ("runner", ("bisect", "HEAD~1", "HEAD", "--repeat", "0"), "--repeat must be at least 1"),
    "bisect_no_such_commit": ("runner", ("bisect", "nosuchrev", "HEAD", "--only", "resnet18"), "'nosuchrev'"),
    "bisect_one_commit": ("runner", ("bisect", "HEAD"), "give GOOD and BAD first"),
    "bisect_no_rounds": ("runner", ("bisect", "HEAD~1", "HEAD", "--rounds", "0"), "--rounds must be at least 1"),
    # update-expected
    "update_expected_garbage_row": ("runner", ("update-expected", "{d}/garbage.csv", "--expected", "{d}/exp"),
                                    "{d}/garbage.csv:3:"),
    "update_expected_cut_row": ("runner", ("update-expected", "{d}/cut.csv", "--expected", "{d}/exp"),
                                "{d}/cut.csv:3: cut mid-row"),
    "update_expected_bad_number": ("runner", ("update-expected", "{d}/badnum.csv", "--expected", "{d}/exp"),
                                   "{d}/badnum.csv:2:"),
    "update_expected_binary": ("runner", ("update-expected", "{d}/binary.csv", "--expected", "{d}/exp"),
                               "{d}/binary.csv: not UTF-8"),
    "update_expected_empty": ("runner", ("update-expected", "{d}/empty.csv", "--expected", "{d}/exp"),
                              "EMPTY (0 bytes)"),
    "update_expected_missing": ("runner", ("update-expected", "{d}/nosuch.csv", "--expected", "{d}/exp"),
                                "nosuch.csv not found"),
    "update_expected_into_a_file": ("runner", ("update-expected", "{d}/good.csv", "--expected", "{d}/a_file"),
                                    "is not a folder"),
    # explain
    "explain_missing": ("runner", ("explain", "{d}/nosuch.csv"), "nosuch.csv"),
    "explain_garbage_row": ("runner", ("explain", "{d}/garbage.csv"), "{d}/garbage.csv:3:"),
    "explain_binary": ("runner", ("explain", "{d}/binary.csv"), "{d}/binary.csv: not UTF-8"),
    "explain_a_folder": ("runner", ("explain", "{d}/dir.csv"), "give a run's CSV"),
    "explain_no_file": ("runner", ("explain",), "RUN.csv"),
    # the nightly steps
    "nightly_gate_no_root": ("nightly", ("gate", "--root", "{d}/nowhere", "--date", "2026-01-02"), "nowhere"),
    "nightly_merge_no_night": ("nightly", ("merge", "--root", "{d}/nights", "--date", "2026-01-02"), "2026-01-02"),
    "nightly_plan_bad_shards": ("nightly", ("plan", "--shards", "x"), "--shards"),
    "nightly_bad_date": ("nightly", ("summary", "--root", "{d}/nights", "--date", "yesterday"), "yesterday"),
    "nightly_shard_bad_index": ("nightly", ("shard", "--root", "{d}/nights", "--shards", "2", "--shard", "5"),
                                "--shard"),
}


def _snapshot(folder: Path) -> dict[str, bytes | None]:
    return {str(p.relative_to(folder)): (p.read_bytes() if p.is_file() else None) for p in sorted(folder.rglob("*"))}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input_is_one_line_exit_2_and_nothing_changed(case, tmp_path, capsys, monkeypatch):
    command, argv, expected = CASES[case]
    _files(tmp_path)
    monkeypatch.chdir(REPO)  # bisect reads this repository's commits
    before = _snapshot(tmp_path)
    argv = [a.format(d=tmp_path) for a in argv]
    main = cli.main if command == "runner" else nightly.main
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RuntimeWarning)
        code = main(argv)
    out, err = capsys.readouterr()
    assert "Traceback" not in err, err
    assert [str(w.message) for w in caught if w.category is RuntimeWarning] == []
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert ": error: " in lines[0], lines[0]
    assert expected.format(d=tmp_path) in lines[0], lines[0]
    assert code == 2, (code, err)
    assert _snapshot(tmp_path) == before  # nothing written, nothing lost
    if os.environ.get("BAD_INPUT_TABLE"):  # a file to collect the table in: input, line, status
        with open(os.environ["BAD_INPUT_TABLE"], "a", encoding="utf-8") as table:
            shown = lines[0].replace(str(tmp_path) + "/", "")
            table.write(f"| `{' '.join(a.replace(str(tmp_path) + '/', '') for a in argv)}` | `{shown[:160]}` | {code} |\n")


def test_the_table_covers_every_subcommand():
    covered = {argv[0] for command, argv, _ in CASES.values() if command == "runner" and argv[0] in cli.SUBCOMMANDS}
    assert covered == set(cli.SUBCOMMANDS)
    assert len(CASES) >= 40


# --------------------------------------------------------------------------
# Damage readers can read past: every command says it the same way


def _cut_run(d: Path) -> tuple[Path, str]:
    """A run whose CSV a kill cut mid-row, and the line every command gives it."""
    _files(d)
    cut = d / "night" / "2026-01-01" / "performance.csv"
    cut.parent.mkdir(parents=True)
    cut.write_text((d / "good.csv").read_text()[:-25])
    store.samples_path(cut).write_text(store.samples_path(d / "good.csv").read_text())
    [damage] = store.damage(cut)
    return cut, damage.describe()


def test_a_cut_row_is_reported_alike_by_every_command(tmp_path, capsys):
    cut, line = _cut_run(tmp_path)
    assert line == f"{cut}:3: cut mid-row: the row of alexnet / eager lost"
    said = {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RuntimeWarning)
        for name, argv in {
            "compare": ["compare", str(tmp_path / "good.csv"), str(cut)],
            "merge": ["merge", str(tmp_path / "merged.csv"), str(cut)],
            "explain": ["explain", str(cut)],
            "update-expected": ["update-expected", str(cut), "--expected", str(tmp_path / "exp")],
            "dashboard": ["dashboard", str(cut.parent.parent), "-o", str(tmp_path / "site")],
            "resume": ["--only", "resnet18", "--resume", "--dry-run", "--output", str(cut)],
        }.items():
            code = cli.main(argv)
            out, err = capsys.readouterr()
            said[name] = (code, out + err)
    assert [str(w.message) for w in caught if w.category is RuntimeWarning] == []
    for name, (code, text) in said.items():
        assert line in text, (name, text)
        assert "Traceback" not in text and "RuntimeWarning" not in text, (name, text)
    assert said["update-expected"][0] == 2  # a damaged run is never the expected one
    assert not (tmp_path / "exp").exists()


def test_an_empty_file_gets_the_same_note_on_either_side_of_compare(tmp_path, capsys):
    _files(tmp_path)
    good, empty = tmp_path / "good.csv", tmp_path / "empty.csv"
    cli.main(["compare", str(empty), str(good)])
    as_old = capsys.readouterr().out
    cli.main(["compare", str(good), str(empty)])
    as_new = capsys.readouterr().out
    assert f"DAMAGED: OLD {empty}: EMPTY (0 bytes): no header and no rows" in as_old
    assert f"DAMAGED: NEW {empty}: EMPTY (0 bytes): no header and no rows" in as_new
