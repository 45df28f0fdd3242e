"""``python -m benchmarks.tools.overhead --first-calls-only``: first calls of ours
and openxla_eval in fresh interpreters, per model, with medians and ratios."""
import pytest

from benchmarks.tools import overhead


def _tries(seconds, compiles=1, runs=1):
    return [{"seconds": s, "compiles": compiles, "compile_s": s / 2, "executions": runs,
             "execute_s": s / 4} for s in seconds]


def test_first_call_rows_take_medians_and_ratios(monkeypatch):
    fake = {"m1": {"ours": _tries([1.0, 3.0, 2.0]), "openxla_eval": _tries([4.0, 4.0, 5.0], 2, 3)},
            "m2": {"ours": _tries([2.0]), "openxla_eval": _tries([1.0])},
            "broken": {"ours": _tries([1.0]), "openxla_eval": []}}
    monkeypatch.setattr(overhead, "first_calls_of", lambda graph, how, repeat, variants: fake[graph])
    table = overhead.first_call_rows(["m1", "m2", "broken"], 3)
    assert [row["model"] for row in table] == ["m1", "m2"]  # a failed backend: no row
    m1 = table[0]
    assert (m1["ours s"], m1["openxla_eval s"], m1["ours/openxla_eval"]) == (2.0, 4.0, 0.5)
    assert m1["ours range s"] == "1.00-3.00" and m1["openxla_eval XLA"] == "2 compiles (2.00 s), 3 runs"
    # Outside XLA's compiles and runs: a quarter of each call here.
    assert (m1["ours host s"], m1["openxla_eval host s"]) == (0.5, 1.0)
    (line,) = overhead.first_call_summary(table)
    assert line == "first call no slower than openxla_eval's on 1 of 2 models; geomean ours/openxla_eval 1.000"
    assert "m1" in overhead.render(table, overhead.FIRST_CALL_COLUMNS)


def test_host_seconds_take_out_xla_and_accept_tries_without_execute_seconds():
    tries = [{"seconds": 3.0, "compile_s": 1.0, "execute_s": 0.5},
             {"seconds": 2.0, "compile_s": 1.0}]
    assert overhead._host_seconds(tries) == pytest.approx(1.25)


@pytest.mark.parametrize("argv, message", [
    (["--first-calls-only", "--graphs", "no_such_model"], "unknown graph(s) no_such_model"),
    (["--graphs", ",", "--first-calls", "skip"], "--graphs names no graph"),
    (["--repeat", "-2", "--first-calls", "skip"], "--repeat must be at least 1, got -2"),
    (["--first-calls-only", "--first-call-repeat", "0"], "--first-call-repeat must be at least 1"),
    (["--json", ".", "--first-calls", "skip"], "--json . is a folder"),
    (["--bogus"], "unrecognized arguments: --bogus"),
    (["--first-calls-only", "--busy", "-1"], "--busy must be 0 or more, got -1"),
    (["--busy", "2", "--first-calls", "skip"], "--busy needs --first-calls-only"),
])
def test_bad_input_is_one_line_and_2(capsys, argv, message):
    assert overhead.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err


@pytest.mark.slow
def test_first_calls_of_a_seed_model_in_fresh_interpreters(capsys):
    assert overhead.main(["--first-calls-only", "--graphs", "squeezenet1_1", "--quick"]) == 0
    out = capsys.readouterr().out
    assert "squeezenet1_1" in out and "of 1 models" in out


def test_fresh_tries_alternate_which_backend_goes_first(monkeypatch):
    order = []
    monkeypatch.setattr(overhead, "first_call_fresh",
                        lambda graph, variant: order.append(variant) or {"seconds": 1.0})
    tries = overhead.first_calls_of("m", "fresh", 3)
    assert order == ["ours", "openxla_eval", "openxla_eval", "ours", "ours", "openxla_eval"]
    assert {v: len(t) for v, t in tries.items()} == {"ours": 3, "openxla_eval": 3}


def test_three_variants_take_turns_going_first(monkeypatch):
    order = []
    monkeypatch.setattr(overhead, "first_call_fresh",
                        lambda graph, variant: order.append(variant) or {"seconds": 1.0})
    overhead.first_calls_of("m", "fresh", 3, ("a", "b", "c"))
    assert order == ["a", "b", "c", "b", "c", "a", "c", "a", "b"]


def test_at_call_rows_compare_ours_with_its_graph_built_on_the_first_call(monkeypatch):
    fake = {"ours": _tries([1.8, 2.0, 1.9]), "openxla_eval": _tries([2.0, 2.2]),
            overhead.AT_CALL: _tries([2.0, 2.1, 2.5])}
    asked = []
    monkeypatch.setattr(overhead, "first_calls_of",
                        lambda graph, how, repeat, variants: asked.append(variants) or fake)
    table = overhead.first_call_rows(["m"], 3, at_call=True)
    assert asked == [("ours", "openxla_eval", overhead.AT_CALL)]
    row = table[0]
    assert row["ours at call s"] == 2.1 and row["ours/ours at call"] == pytest.approx(1.9 / 2.1)
    assert overhead.first_call_summary(table)[1] == (
        "compiled ahead against at the call: faster on 1 of 1 models; geomean ours/ours at call 0.905")


def test_at_call_without_first_calls_only_is_refused(capsys):
    assert overhead.main(["--at-call"]) == 2
    assert "--at-call needs --first-calls-only" in capsys.readouterr().err


def test_at_call_builds_nothing_ahead_of_the_first_call(xla):
    """The ``AT_CALL`` variant times what it says: nothing is traced or
    compiled when dynamo hands the graph over."""
    import torch

    from xla_backends.trace_once import TraceOnce

    # (XLA's in-memory cache may already hold this graph from another test.)
    assert overhead.first_call("tiny_mlp", overhead.AT_CALL)["seconds"] > 0
    runner = overhead.at_call_backend(torch.fx.symbolic_trace(lambda x: x + 1),
                                      [torch.ones(2, device=xla)])
    assert isinstance(runner, TraceOnce) and runner.runners == []


def test_busy_loops_spin_while_the_block_runs_and_stop_after():
    import psutil

    me = psutil.Process()
    before = {p.pid for p in me.children()}
    with overhead.busy_loops(2):
        spinning = [p for p in me.children() if p.pid not in before]
        assert len(spinning) == 2
        assert all(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in spinning)
    assert not any(p.is_running() for p in spinning)
