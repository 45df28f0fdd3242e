"""The timing loop, driven by a fake clock: what is timed, in which order."""
import pytest

from benchmarks.measure import Runner, measure


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

        return Runner(name, step, prepare=lambda inputs: inputs)


def test_first_call_timed_alone_then_warmup_untimed():
    clock = FakeClock()
    base = clock.runner("base", [5.0, 1.0, 1.0, 2.0])
    back = clock.runner("back", [9.0, 0.5, 0.5, 1.0])
    timings = measure([base, back], lambda i: ("x",), warmup=3, repeat=4, clock=clock)
    assert timings["base"].first_call_s == 5.0
    assert timings["back"].first_call_s == 9.0
    # 3 warm-up calls, then 4 timed ones at the steady duration.
    assert timings["base"].samples_s == [2.0] * 4
    assert timings["back"].samples_s == [1.0] * 4


def test_repeats_interleave_and_rotate():
    clock = FakeClock()
    runners = [clock.runner(n, [1.0]) for n in ("a", "b", "c")]
    measure(runners, lambda i: (i,), warmup=1, repeat=3, clock=clock)
    timed = [name for name, _ in clock.log[3:]]
    # Every repeat runs each runner once, starting from a different one.
    assert timed == ["a", "b", "c", "b", "c", "a", "c", "a", "b"]


def test_randomize_draws_fresh_inputs_each_repeat():
    clock = FakeClock()
    runner = clock.runner("a", [1.0])
    measure([runner], lambda i: (f"draw{i}",), warmup=2, repeat=3, randomize=True, clock=clock)
    assert [inputs for _, inputs in clock.log] == [
        ("draw0",), ("draw0",), ("draw1",), ("draw2",), ("draw3",)]


def test_fixed_inputs_without_randomize():
    clock = FakeClock()
    runner = clock.runner("a", [1.0])
    draws = []
    measure([runner], lambda i: draws.append(i) or (i,), warmup=1, repeat=3, clock=clock)
    assert draws == [0]


def test_prepare_runs_outside_the_timer():
    clock = FakeClock()
    runner = clock.runner("a", [1.0])

    def slow_prepare(inputs):
        clock.now += 100.0
        return inputs

    runner.prepare = slow_prepare
    timings = measure([runner], lambda i: (i,), warmup=1, repeat=2, randomize=True, clock=clock)
    assert timings["a"].first_call_s == 1.0
    assert timings["a"].samples_s == [1.0, 1.0]


@pytest.mark.parametrize("fail_at", [0, 1, 3])
def test_a_failing_runner_stops_alone(fail_at):
    clock = FakeClock()
    good = clock.runner("good", [1.0])
    bad = clock.runner("bad", [1.0], fail_at=fail_at)
    timings = measure([good, bad], lambda i: (i,), warmup=2, repeat=3, clock=clock)
    assert not timings["bad"].ok and "bad failed" in str(timings["bad"].error)
    assert timings["good"].ok and timings["good"].samples_s == [1.0] * 3
    assert len(timings["bad"].samples_s) == max(0, fail_at - 2)
