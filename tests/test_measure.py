"""The timing loop, driven by a fake clock: what is timed, in which order."""
from collections import Counter

import pytest

from benchmarks.run.measure import Contender, measure, turn_order


class FakeClock:
    """A clock that only moves when a step says how long it took."""

    def __init__(self):
        self.now = 0.0
        self.log = []

    def __call__(self):
        return self.now

    def runner(self, name, durations, fail_at=None):
        """A runner whose n-th step takes ``durations[n]`` (the last repeats)."""
        calls = []

        def step(inputs):
            n = len(calls)
            calls.append(inputs)
            self.log.append((name, inputs))
            if fail_at is not None and n == fail_at:
                raise RuntimeError(f"{name} failed")
            self.now += durations[min(n, len(durations) - 1)]

        return Contender(name, step, prepare=lambda inputs: inputs)


def test_first_call_timed_alone_then_warmup_untimed():
    clock = FakeClock()
    base = clock.runner("base", [5.0, 1.0, 1.0, 2.0])
    back = clock.runner("back", [9.0, 0.5, 0.5, 1.0])
    timings = measure([base, back], lambda i, shape: ("x",), warmup=3, repeat=4, clock=clock)
    assert timings["base"].first_call_s == 5.0
    assert timings["back"].first_call_s == 9.0
    # 3 warm-up calls, then 4 timed ones at the steady duration.
    assert timings["base"].samples_s == [2.0] * 4
    assert timings["back"].samples_s == [1.0] * 4


def test_repeats_interleave_and_rotate():
    clock = FakeClock()
    runners = [clock.runner(n, [1.0]) for n in ("a", "b", "c")]
    measure(runners, lambda i, shape: (i,), warmup=1, repeat=3, clock=clock)
    timed = [name for name, _ in clock.log[3:]]
    # Every repeat runs each runner once, starting from a different one.
    assert timed == ["a", "b", "c", "b", "c", "a", "c", "a", "b"]


@pytest.mark.parametrize("n", range(1, 9))
def test_turn_order_is_balanced_for_what_came_before(n):
    """Over a cycle of rounds (n, or 2n for odd n) every item takes every
    place equally often and directly follows every other equally often;
    plain rotation fails the second for n >= 3 (ABC BCA CAB: B follows A
    twice, A never follows B)."""
    items = [chr(ord("a") + k) for k in range(n)]
    cycle = n if n % 2 == 0 or n == 1 else 2 * n
    rounds = [turn_order(items, i) for i in range(cycle)]
    assert all(sorted(r) == items for r in rounds)
    places = Counter((k, item) for r in rounds for k, item in enumerate(r))
    assert set(places.values()) == {cycle // n}
    follows = Counter(pair for r in rounds for pair in zip(r, r[1:]))
    if n > 1:
        assert len(follows) == n * (n - 1) and len(set(follows.values())) == 1
    assert [turn_order(items, i + cycle) for i in range(cycle)] == rounds


def test_six_repeats_of_three_contenders_run_each_order_once():
    clock = FakeClock()
    runners = [clock.runner(n, [1.0]) for n in ("a", "b", "c")]
    timings = measure(runners, lambda i, shape: (i,), warmup=1, repeat=6, clock=clock)
    timed = [name for name, _ in clock.log[3:]]
    rounds = [timed[k:k + 3] for k in range(0, 18, 3)]
    assert rounds == [list("abc"), list("bca"), list("cab"), list("cba"), list("acb"), list("bac")]
    assert all(len(t.samples_s) == 6 for t in timings.values())


def test_randomize_draws_fresh_inputs_each_repeat():
    clock = FakeClock()
    runner = clock.runner("a", [1.0])
    measure([runner], lambda i, shape: (f"draw{i}",), warmup=2, repeat=3, randomize=True, clock=clock)
    assert [inputs for _, inputs in clock.log] == [
        ("draw0",), ("draw0",), ("draw1",), ("draw2",), ("draw3",)]


def test_fixed_inputs_without_randomize():
    clock = FakeClock()
    runner = clock.runner("a", [1.0])
    draws = []
    measure([runner], lambda i, shape: draws.append(i) or (i,), warmup=1, repeat=3, clock=clock)
    assert draws == [0]


def test_prepare_runs_outside_the_timer():
    clock = FakeClock()
    runner = clock.runner("a", [1.0])

    def slow_prepare(inputs):
        clock.now += 100.0
        return inputs

    runner.prepare = slow_prepare
    timings = measure([runner], lambda i, shape: (i,), warmup=1, repeat=2, randomize=True, clock=clock)
    assert timings["a"].first_call_s == 1.0
    assert timings["a"].samples_s == [1.0, 1.0]


@pytest.mark.parametrize("fail_at", [0, 1, 3])
def test_a_failing_runner_stops_alone(fail_at):
    clock = FakeClock()
    good = clock.runner("good", [1.0])
    bad = clock.runner("bad", [1.0], fail_at=fail_at)
    timings = measure([good, bad], lambda i, shape: (i,), warmup=2, repeat=3, clock=clock)
    assert not timings["bad"].ok and "bad failed" in str(timings["bad"].error)
    assert timings["good"].ok and timings["good"].samples_s == [1.0] * 3
    assert len(timings["bad"].samples_s) == max(0, fail_at - 2)


def test_a_cycle_of_shapes_warms_each_up_and_keeps_samples_apart():
    clock = FakeClock()
    # A backend whose first call at each shape compiles (10 s), then runs in
    # as many seconds as the shape is large.
    seen = set()

    def step(inputs):
        shape = inputs[0]
        clock.log.append(("back", inputs))
        clock.now += 10.0 if shape not in seen else float(shape)
        seen.add(shape)

    back = Contender("back", step)
    draws = []

    def draw(i, shape):
        draws.append((i, shape))
        return (shape,)

    timings = measure([back], draw, warmup=2, repeat=3, shapes=(1, 2, 4), clock=clock)
    t = timings["back"]
    assert t.first_calls_s == {1: 10.0, 2: 10.0, 4: 10.0}
    assert t.shape_samples_s == {1: [1.0] * 3, 2: [2.0] * 3, 4: [4.0] * 3}
    # Warm-up shape by shape (first call, then one more), then each repeat
    # runs the whole cycle.
    order = [inputs[0] for _, inputs in clock.log]
    assert order == [1, 1, 2, 2, 4, 4] + [1, 2, 4] * 3
    assert draws == [(0, 1), (0, 2), (0, 4)]  # inputs drawn once per shape
    assert t.at(2).first_call_s == 10.0 and t.at(2).samples_s == [2.0] * 3
    assert t.first_call_s == 10.0 and t.samples_s == [1.0] * 3  # the first shape's


def test_randomize_draws_per_shape_and_repeat():
    clock = FakeClock()
    runner = clock.runner("a", [1.0])
    draws = []
    measure([runner], lambda i, shape: draws.append((i, shape)) or (i, shape), warmup=1, repeat=2,
            randomize=True, shapes=("s", "l"), clock=clock)
    assert draws == [(0, "s"), (0, "l"), (1, "s"), (1, "l"), (2, "s"), (2, "l")]


def test_probe_is_told_phase_and_shape():
    clock = FakeClock()
    told = []

    class Probe:
        def before(self):
            pass

        def after(self, call, shape=None):
            told.append((call, shape))

    runner = clock.runner("a", [1.0])
    runner.probe = Probe()
    measure([runner], lambda i, shape: (shape,), warmup=2, repeat=1, shapes=(8, 16), clock=clock)
    assert told == [("first", 8), ("warmup", 8), ("first", 16), ("warmup", 16),
                    ("timed", 8), ("timed", 16)]


def test_fixed_repeats_say_so():
    clock = FakeClock()
    timings = measure([clock.runner("a", [1.0])], lambda i, shape: (i,), warmup=1, repeat=4, clock=clock)
    assert timings["a"].stop == "fixed" and len(timings["a"].samples_s) == 4


def test_adaptive_repeats_stop_once_precise_enough():
    clock = FakeClock()
    asked = []

    def enough(timings):
        n = len(timings["a"].samples_s)
        asked.append(n)
        return n >= 7

    timings = measure([clock.runner("a", [1.0]), clock.runner("b", [2.0])], lambda i, shape: (i,),
                      warmup=1, repeat=100, max_time=1e9, min_repeat=5, enough=enough, clock=clock)
    assert timings["a"].stop == timings["b"].stop == "target"
    assert len(timings["a"].samples_s) == len(timings["b"].samples_s) == 7
    assert asked == [5, 6, 7]  # not asked before min_repeat


def test_adaptive_repeats_stop_when_the_time_is_spent():
    clock = FakeClock()
    # Each repeat takes 3 s (1 s + 2 s); the budget is 10 s of repeats: the
    # fourth repeat starts at 9 s, the fifth would start at 12 s.
    timings = measure([clock.runner("a", [5.0, 1.0]), clock.runner("b", [5.0, 2.0])],
                      lambda i, shape: (i,), warmup=1, repeat=100, max_time=10.0, min_repeat=2,
                      enough=lambda t: False, clock=clock)
    assert timings["a"].stop == "time" and len(timings["a"].samples_s) == 4


def test_adaptive_repeats_keep_the_minimum_even_past_the_time():
    clock = FakeClock()
    timings = measure([clock.runner("a", [50.0])], lambda i, shape: (i,), warmup=1, repeat=100,
                      max_time=1.0, min_repeat=3, enough=lambda t: True, clock=clock)
    assert len(timings["a"].samples_s) == 3 and timings["a"].stop == "target"


def test_adaptive_repeats_stop_at_the_most():
    clock = FakeClock()
    timings = measure([clock.runner("a", [1.0])], lambda i, shape: (i,), warmup=1, repeat=6,
                      max_time=1e9, min_repeat=2, enough=lambda t: False, clock=clock)
    assert timings["a"].stop == "max" and len(timings["a"].samples_s) == 6


def test_iterations_per_run_times_them_together_and_reports_per_iteration():
    """--iterations-per-run 3: each timed sample is three iterations run back
    to back (through the contender's ``run``, one device wait), divided by three;
    the first call and warm-up stay single iterations."""
    clock = FakeClock()
    runs = []

    def step(inputs):
        clock.now += 10.0

    def run(inputs, n):
        runs.append(n)
        clock.now += 1.0 * n + 3.0  # three iterations overlap: 1 s each plus one wait of 3 s

    contender = Contender("back", step, run=run)
    timings = measure([contender], lambda i, shape: ("x",), warmup=2, repeat=4, clock=clock,
                      iterations_per_run=3)
    assert runs == [3, 3, 3, 3]
    assert timings["back"].first_call_s == 10.0
    assert timings["back"].samples_s == [2.0] * 4  # (3 * 1 + 3) / 3
    plain = clock.runner("plain", [4.0])
    assert measure([plain], lambda i, shape: ("x",), warmup=1, repeat=2, clock=clock,
                   iterations_per_run=2)["plain"].samples_s == [4.0, 4.0]  # no run: two steps, per step
