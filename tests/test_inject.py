"""The slowed copy the gate's evaluation runs (``benchmarks.tools.inject``):
a worktree whose bridge replays each compiled graph ``factor`` times as long."""
import importlib.util
import shutil
import subprocess
import time

from benchmarks.tools import inject


def _repo(tmp_path):
    """A git repository holding the bridge's ``_xlac.py`` as the project has it."""
    repo = tmp_path / "repo"
    (repo / inject.TARGET).parent.mkdir(parents=True)
    shutil.copy(inject.REPO / inject.TARGET, repo / inject.TARGET)
    for cmd in (["init", "-q"], ["add", "."], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x"]):
        subprocess.run(["git", "-C", str(repo), *cmd], check=True)
    return repo


class _FakeXLA:
    def __init__(self, clock, seconds):
        self.clock, self.seconds, self.waited = clock, seconds, 0

    def _run_cached_graph(self, graph_hash, inputs):
        self.clock[0] += self.seconds  # the replay takes this long
        return [graph_hash, *inputs]

    def _xla_wait_device_ops(self, devices):
        self.waited += 1


def test_the_copys_replays_take_factor_times_as_long(tmp_path, monkeypatch):
    target = inject.make(tmp_path / "slowed", 1.05, repo=_repo(tmp_path))
    assert inject.MARKER in target.read_text()
    spec = importlib.util.spec_from_file_location("slowed_xlac", target)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    clock, slept = [100.0], []
    fake = _FakeXLA(clock, 0.2)
    monkeypatch.setattr(module, "_X", lambda: fake)
    monkeypatch.setattr(time, "perf_counter", lambda: clock[0])
    monkeypatch.setattr(time, "sleep", slept.append)
    run = module.run_cached_graph()
    assert run("h", [1, 2]) == ["h", 1, 2]
    assert fake.waited == 1 and len(slept) == 1 and abs(slept[0] - 0.01) < 1e-9  # 5% of 0.2 s


def test_the_project_itself_is_not_slowed():
    assert inject.MARKER not in (inject.REPO / inject.TARGET).read_text()


def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys):
    assert inject.main(["--factor", "0.9", str(tmp_path / "x")]) == 2
    assert inject.main(["--factor", "1.1", str(tmp_path)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2 and "at least 1" in err[0] and "exists" in err[1]


def test_a_share_of_processes_is_drawn_once_per_process(tmp_path):
    target = inject.make(tmp_path / "half", 1.1, repo=_repo(tmp_path), share=0.5)
    drawn = []
    for index in range(40):
        spec = importlib.util.spec_from_file_location(f"half_{index}", target)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        drawn.append(module._SLOWED)
    assert 5 < sum(drawn) < 35  # a random half: outside 6..34 has chance about 1e-6


def test_a_share_outside_zero_to_one_is_bad_input(tmp_path, capsys):
    assert inject.main(["--factor", "1.1", "--share", "0", str(tmp_path / "x")]) == 2
    assert "--share must be in (0, 1]" in capsys.readouterr().err
