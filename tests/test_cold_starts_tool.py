"""``python -m benchmarks.tools.cold_starts CSV``: the harness's cold first
calls of ours beside the other backends', from hand-made rows."""
import pytest

from benchmarks.results import store
from benchmarks.tools import cold_starts


def _row(name, backend, seconds, low, high, kind="cold", status="pass", n=3):
    return {"dev": "cpu", "name": name, "batch_size": 1, "speedup": 1.0, "abs_latency": 10.0,
            "compilation_latency": seconds, "backend": backend, "baseline": "xla",
            "baseline_latency": 10.0, "speedup_ci_low": 0.9, "speedup_ci_high": 1.1, "status": status,
            "compilation_latency_low": low, "compilation_latency_high": high, "cold_starts": n,
            "compilation_kind": kind, "first_call_compiles": 1, "first_call_compile_s": seconds / 2,
            "suite": "seed", "mode": "inference", "dtype": "fp32", "dynamic": "static"}


ROWS = [
    _row("alexnet", "torchxla_trace_once", 1.0, 0.9, 1.2),
    _row("alexnet", "openxla_eval", 2.0, 1.5, 2.5),  # ranges apart: ours faster
    _row("alexnet", "torchxla_trivial", 1.0, 0.8, 1.1),
    _row("resnet18", "torchxla_trace_once", 3.0, 2.0, 4.0),
    _row("resnet18", "openxla_eval", 2.0, 1.8, 3.0),  # ours slower, ranges overlap
    _row("resnet18", "torchxla_trivial", 1.5, 1.0, 2.0, kind="in_process"),  # not cold: left out
    _row("vgg16", "torchxla_trace_once", 1.0, 1.0, 1.0, status="fail_to_run"),  # no passing row of ours
    _row("vgg16", "openxla_eval", 1.0, 1.0, 1.0),
]


@pytest.fixture
def csv(tmp_path):
    path = tmp_path / "run.csv"
    store.append_rows(path, ROWS)
    return path


def test_ratios_ranges_and_summary_from_the_rows(csv):
    table, summary = cold_starts.comparison(store.read_rows(csv))
    assert [(r["model"], r.get("ours/openxla_eval"), r.get("ours/torchxla_trivial")) for r in table] == [
        ("alexnet", "0.500", "1.000"), ("resnet18", "1.500", None)]
    assert table[0]["ours s"] == "1.00 [0.90, 1.20]" and table[0]["processes"] == 3
    assert table[0]["openxla_eval XLA"] == "1.00 s / 1"
    assert table[1]["torchxla_trivial s"] is None
    assert summary == [
        "torchxla_trace_once against openxla_eval: geomean ours/openxla_eval 0.866; no slower on 1 of 2 "
        "models (slower: resnet18); ranges overlap on resnet18",
        "torchxla_trace_once against torchxla_trivial: geomean ours/torchxla_trivial 1.000; no slower on "
        "1 of 1 models; ranges overlap on alexnet",
    ]


def test_the_command_prints_the_table(csv, capsys):
    assert cold_starts.main([str(csv)]) == 0
    out = capsys.readouterr().out
    assert "alexnet" in out and "resnet18" in out and "vgg16" not in out
    assert "geomean ours/openxla_eval 0.866" in out


@pytest.mark.parametrize("argv, message", [
    (["no/such.csv"], "no/such.csv: no such file"),
    (["CSV", "--ours", "inductor"], "no passing row of inductor with a cold first call"),
    (["CSV", "--bogus"], "unrecognized arguments: --bogus"),
])
def test_bad_input_is_one_line_and_2(csv, capsys, argv, message):
    argv = [str(csv) if a == "CSV" else a for a in argv]
    assert cold_starts.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err
