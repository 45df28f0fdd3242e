"""The plan freezes the whole night: its date, shard count and settings
(model filter, backends, repeat, suite, extra runner arguments, the image,
and where asked the installed distributions' digest); a shard or a merge
with other settings is refused in one line (exit status 2), before it
writes anything."""
import json

import pytest

from benchmarks import nightly
from benchmarks.nightly import plan as night_plan
from benchmarks.nightly.plan import plan_lines, read_plan
from test_nightly import FIXTURES, split_into_shards

DATE = "2026-01-02"
SETTINGS = {"filter": "", "backends": "openxla_eval,inductor", "repeat": "5", "suite": "builtin", "args": "",
            "image": ""}


@pytest.fixture
def clean_env(monkeypatch):
    for variable in [*night_plan.SETTINGS.values(), "NIGHTLY_PLAN"]:
        monkeypatch.delenv(variable, raising=False)
    return monkeypatch


def test_the_plan_freezes_the_nights_settings(clean_env, capsys, tmp_path):
    clean_env.setenv("NIGHTLY_BACKENDS", "openxla_eval,inductor")
    clean_env.setenv("NIGHTLY_SUITE", "builtin")
    clean_env.setenv("NIGHTLY_ARGS", "--warmup 1")
    clean_env.setenv("NIGHTLY_IMAGE", "registry.example/bench@sha256:" + "a" * 64)
    plan = tmp_path / "plan.txt"
    assert nightly.main(["plan", "--shards", "2", "--date", DATE, "--repeat", "5", "--file", str(plan)]) == 0
    out = capsys.readouterr().out
    assert out == plan.read_text() and out.startswith(f"date={DATE}\ncount=2\nshards=[0, 1]\nsettings=")
    assert read_plan(plan)["settings"] == {**SETTINGS, "args": "--warmup 1",
                                           "image": "registry.example/bench@sha256:" + "a" * 64}


def test_a_plan_kept_in_a_file_is_read_back_whatever_the_clock_and_variables(clean_env, capsys, tmp_path):
    plan = tmp_path / "plan.txt"
    plan.write_text(plan_lines(DATE, 3, SETTINGS))
    clean_env.setenv("NIGHTLY_BACKENDS", "inductor")
    assert nightly.main(["plan", "--shards", "4", "--date", "2026-01-03", "--file", str(plan)]) == 0
    assert capsys.readouterr().out == plan_lines(DATE, 3, SETTINGS)


def test_the_dependencies_digest_follows_every_version():
    versions = {"numpy": "2.1.0", "pandas": "2.2.3"}
    same = night_plan.dependencies_digest(dict(reversed(versions.items())))
    assert night_plan.dependencies_digest(versions) == same
    assert night_plan.dependencies_digest({**versions, "pandas": "2.2.4"}) != same
    found = night_plan.installed_versions()
    assert found["torch"].startswith("2.9.0") and "pandas" in found


def test_the_plan_in_the_venv_freezes_the_dependencies(clean_env, capsys, tmp_path):
    assert nightly.main(["plan", "--date", DATE, "--dependencies", "--file", str(tmp_path / "p")]) == 0
    digest = read_plan(tmp_path / "p")["settings"]["dependencies"]
    assert digest == night_plan.dependencies_digest(night_plan.installed_versions())


def _shard(tmp_path, *extra):
    return nightly.main(["shard", "--root", str(tmp_path / "nightly"), "--date", DATE, "--shards", "2",
                         "--shard", "1", *extra])


@pytest.mark.parametrize("variable, value, says", [
    ("NIGHTLY_BACKENDS", "openxla_eval,inductor,torchxla_trivial",
     "backends 'openxla_eval,inductor,torchxla_trivial' (plan: 'openxla_eval,inductor')"),
    ("NIGHTLY_REPEAT", "7", "repeat '7' (plan: '5')"),
    ("NIGHTLY_FILTER", "resnet", "filter 'resnet' (plan: '')"),
])
def test_a_shard_with_other_settings_than_the_plan_is_refused(clean_env, capsys, tmp_path, variable, value, says):
    """The issue's re-submitted shard (an extra backend, --repeat 7): refused
    before it runs or writes its record."""
    night = tmp_path / "nightly" / DATE
    night.mkdir(parents=True)
    (night / "plan.txt").write_text(plan_lines(DATE, 2, SETTINGS))
    for key, setting in SETTINGS.items():
        if setting:
            clean_env.setenv(night_plan.SETTINGS[key], setting)
    clean_env.setenv(variable, value)
    assert _shard(tmp_path, "--backends", "openxla_eval") == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "shard 1 does not run the night's plan" in err and says in err
    assert not (night / "shards").exists()


def test_a_shard_of_another_count_than_the_plan_is_refused(clean_env, capsys, tmp_path):
    night = tmp_path / "nightly" / DATE
    night.mkdir(parents=True)
    (night / "plan.txt").write_text(plan_lines(DATE, 3, SETTINGS))
    assert _shard(tmp_path) == 2
    assert "of 2 shard(s) (plan: night 2026-01-02 of 3)" in capsys.readouterr().err


def _shards(tmp_path, settings):
    """Two shards' CSVs, samples and records, shard I having run ``settings[I]``."""
    folder = tmp_path / "nightly" / DATE / "shards"
    split_into_shards(FIXTURES / "new.csv", folder, 2)
    for index, own in enumerate(settings):
        (folder / f"shard-{index}.json").write_text(json.dumps({
            "shard": index, "shards": 2, "finished": True, "models": [], "settings": own,
            "runner": {"flags": ["--performance"], "backends": own["backends"], "filter": []}}))
    return folder.parent


def test_a_merge_of_shards_with_mixed_settings_is_refused(clean_env, capsys, tmp_path):
    night = _shards(tmp_path, [SETTINGS, {**SETTINGS, "repeat": "7", "dependencies": "0123"}])
    assert nightly.main(["merge", "--root", str(tmp_path / "nightly"), "--date", DATE]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    assert "shard 1 ran other settings than shard 0: dependencies '0123' (shard 0: None); repeat '7' (shard 0: '5')" in err
    assert not (night / "performance.csv").exists()


def test_a_merge_of_shards_that_did_not_run_the_plan_is_refused(clean_env, capsys, tmp_path):
    night = _shards(tmp_path, [SETTINGS, SETTINGS])
    (night / "plan.txt").write_text(plan_lines(DATE, 2, {**SETTINGS, "backends": "inductor"}))
    assert nightly.main(["merge", "--root", str(tmp_path / "nightly"), "--date", DATE]) == 2
    assert "shard 0 did not run the night's plan" in capsys.readouterr().err
    assert not (night / "performance.csv").exists()


def test_a_merge_of_one_nights_shards_records_its_settings_and_versions(clean_env, capsys, tmp_path):
    night = _shards(tmp_path, [SETTINGS, SETTINGS])
    (night / "plan.txt").write_text(plan_lines(DATE, 2, SETTINGS))
    assert nightly.main(["merge", "--root", str(tmp_path / "nightly"), "--date", DATE]) == 0
    assert json.loads((night / "night.json").read_text())["settings"] == SETTINGS


def test_a_shard_records_every_dependencys_version(clean_env, tmp_path, monkeypatch):
    from benchmarks.nightly import shard as step

    monkeypatch.setattr(step, "measure", lambda args, csv_path, partition=None: 0)
    assert _shard(tmp_path) == 0
    record = json.loads((tmp_path / "nightly" / DATE / "shards" / "shard-1.json").read_text())
    assert record["dependencies"]["torch"].startswith("2.9.0")
    assert record["settings"]["dependencies"] == night_plan.dependencies_digest(record["dependencies"])
