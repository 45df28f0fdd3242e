"""The shipped Kubernetes manifests (deploy/kubernetes/) and the image's
Dockerfile (deploy/Dockerfile): valid for the Kubernetes version the image's
kubectl is, strictly (``kubernetes-validate --strict``, whose schemas ship with
it: no network), and holding what a night needs: a CronJob whose Job names
are unique per night, an Indexed Job of shards with Guaranteed QoS, a merge
after Complete or Failed, the history on a persistent volume. The image is not
built here (the network, and 8 GB); its pins are checked against the
workflows' and setup.cfg's.
"""
import datetime
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import fake_kubectl
import slurm_standins
import test_slurm

ROOT = Path(__file__).resolve().parent.parent
KUBE = ROOT / "deploy" / "kubernetes"
MANIFESTS = sorted(KUBE.glob("*.yaml"))
DOCKERFILE = ROOT / "deploy" / "Dockerfile"
BIN = Path(sys.executable).parent
SHELLCHECK = BIN / "shellcheck"


def kubernetes_version():
    """The version the manifests target: the image's kubectl."""
    return re.search(r"^ARG KUBECTL_VERSION=v(\d+\.\d+\.\d+)$", DOCKERFILE.read_text(), re.M).group(1)


def _validate(*paths):
    return subprocess.run([str(BIN / "kubernetes-validate"), "--strict", "--kubernetes-version",
                           kubernetes_version(), *map(str, paths)], capture_output=True, text=True, timeout=120)


def _resources():
    return {doc["kind"] + "/" + doc["metadata"]["name"]: doc
            for path in MANIFESTS for doc in yaml.safe_load_all(path.read_text()) if doc}


def test_manifests_pass_kubernetes_validate_strict():
    done = _validate(*MANIFESTS)
    assert done.returncode == 0, done.stdout + done.stderr
    passed = re.findall(r"passed for resource (\S+) against version (\S+)", done.stdout + done.stderr)
    assert len(passed) == len(_resources()) == 7, done.stdout + done.stderr
    assert {version for _, version in passed} == {kubernetes_version().rsplit(".", 1)[0]}


def test_the_validation_is_strict(tmp_path):
    """The check is decisive: a misspelt field fails it."""
    text = (KUBE / "shards-job.yaml").read_text()
    assert "  completionMode: Indexed\n" in text
    path = tmp_path / "job.yaml"
    path.write_text(text.replace("  completionMode: Indexed\n", "  completionsMode: Indexed\n"))
    done = _validate(path)
    assert done.returncode != 0 and "completionsMode" in done.stdout + done.stderr


def _pod(resource):
    spec = resource["spec"]
    template = spec["jobTemplate"]["spec"]["template"] if resource["kind"] == "CronJob" else spec["template"]
    return template["spec"]


def test_every_pod_is_guaranteed_qos_with_whole_cpus_for_timing():
    """requests == limits for CPU and memory in every container (Guaranteed),
    whole CPUs where anything is timed (the static CPU manager pins those)."""
    for name, resource in _resources().items():
        if resource["kind"] not in ("Job", "CronJob"):
            continue
        for container in _pod(resource)["containers"]:
            limits, requests = container["resources"]["limits"], container["resources"]["requests"]
            assert set(limits) == set(requests) == {"cpu", "memory"} and limits == requests, name
            if resource["kind"] == "Job":  # the shards and the merge (its gate measures again)
                assert re.fullmatch(r"[1-9]\d*", limits["cpu"]), (name, limits["cpu"])


def test_the_cronjob_makes_one_uniquely_named_night_of_an_indexed_job():
    resources = _resources()
    cron = resources["CronJob/nightly"]
    assert cron["spec"]["concurrencyPolicy"] == "Forbid" and cron["spec"]["timeZone"] == "Etc/UTC"
    job = cron["spec"]["jobTemplate"]["spec"]
    assert job["backoffLimit"] == 0 and job["ttlSecondsAfterFinished"] > 0
    driver = _pod(cron)["containers"][0]
    assert driver["command"] == ["deploy/kubernetes/night.sh"]
    job_name = next(e for e in driver["env"] if e["name"] == "JOB_NAME")
    assert job_name["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.labels['batch.kubernetes.io/job-name']"
    shards = resources["Job/nightly-shards"]["spec"]
    assert shards["completionMode"] == "Indexed" and shards["ttlSecondsAfterFinished"] > 0
    assert shards["backoffLimitPerIndex"] >= 1  # one failed index does not fail the others
    merge = resources["Job/nightly-merge"]["spec"]
    assert merge["backoffLimit"] == 0 and merge["ttlSecondsAfterFinished"] > 0
    assert _pod(resources["Job/nightly-merge"])["containers"][0]["command"] == ["deploy/merge.sh"]
    night = (KUBE / "night.sh").read_text()
    for job_file, suffix in (("shards-job.yaml", "shards"), ("merge-job.yaml", "merge")):
        assert f'run_job "$here/{job_file}" "$JOB_NAME-{suffix}"' in night
    # The merge follows a Failed shards' Job as well as a Complete one.
    assert '*" Complete "*)' in night and '*" Failed "*)' in night


def test_the_history_and_the_site_live_on_the_persistent_volume():
    resources = _resources()
    claim = resources["PersistentVolumeClaim/nightly-results"]
    assert claim["spec"]["accessModes"] == ["ReadWriteMany"]
    for name in ("CronJob/nightly", "Job/nightly-shards", "Job/nightly-merge"):
        pod = _pod(resources[name])
        assert pod["volumes"] == [{"name": "results", "persistentVolumeClaim": {"claimName": "nightly-results"}}]
        container = pod["containers"][0]
        assert container["volumeMounts"] == [{"name": "results", "mountPath": "/results"}], name
        env = {e["name"]: e.get("value") for e in container["env"]}
        assert env["NIGHTLY_ROOT"] == "/results/nightly", name
    merge_env = {e["name"]: e["value"] for e in _pod(resources["Job/nightly-merge"])["containers"][0]["env"]}
    assert merge_env["SITE_DIR"] == "/results/site"


def test_the_driver_may_only_create_and_read_jobs():
    role = _resources()["Role/nightly-driver"]
    assert role["rules"] == [{"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["create", "get"]}]


def test_the_driver_is_strict_shell():
    path = KUBE / "night.sh"
    assert path.read_text().startswith("#!/bin/bash\n") and "\nset -euo pipefail\n" in path.read_text()
    for command in (["bash", "-n", str(path)], [str(SHELLCHECK), "--shell=bash", "--severity=style", str(path)]):
        done = subprocess.run(command, capture_output=True, text=True)
        assert done.returncode == 0, done.stdout + done.stderr


# --------------------------------------------------------------------------
# The image


def _workflow_python_and_index():
    nightly = yaml.safe_load((ROOT / ".github" / "workflows" / "nightly.yml").read_text())
    versions = {step["with"]["python-version"] for job in nightly["jobs"].values() for step in job["steps"]
                if step.get("uses", "").startswith("actions/setup-python")}
    return versions, nightly["env"]["TORCH_INDEX_URL"]


def test_the_image_installs_as_the_workflows_do():
    """The image's Python is the workflows', torch comes from their CPU-only
    index, and `make install` installs setup.cfg's pins (torch, torchvision
    and the rest: the Dockerfile names no version of its own)."""
    text = DOCKERFILE.read_text()
    versions, index = _workflow_python_and_index()
    assert re.findall(r"^FROM python:(\S+)-slim$", text, re.M) == sorted(versions) == ["3.11"]
    assert f"TORCH_INDEX_URL={index}" in text
    assert re.findall(r"^RUN make install$", text, re.M) == ["RUN make install"]
    assert not re.search(r"pip install|torch==|torchvision==", text)
    setup = (ROOT / "setup.cfg").read_text()
    assert re.search(r"^\s*torch==\S+$", setup, re.M) and re.search(r"^\s*torchvision==\S+$", setup, re.M)
    assert "python_requires = >=3.10" in setup  # 3.11 satisfies it


def test_the_images_kubectl_is_the_validated_version():
    """kubectl's minor version is one the schemas know, and the CronJob's
    fields (timeZone, backoffLimitPerIndex) are stable in it."""
    major, minor, _ = map(int, kubernetes_version().split("."))
    assert (major, minor) >= (1, 33)  # backoffLimitPerIndex is GA from 1.33


def test_the_image_runs_as_the_pods_user():
    text = DOCKERFILE.read_text()
    assert text.rstrip().splitlines()[-1] == "USER 1000"
    for name, resource in _resources().items():
        if resource["kind"] in ("Job", "CronJob"):
            assert _pod(resource)["securityContext"]["runAsUser"] == 1000, name


@pytest.mark.parametrize("line", [".venv", "results"])
def test_the_build_leaves_out_the_local_venv_and_results(line):
    assert line in (ROOT / "deploy" / "Dockerfile.dockerignore").read_text().splitlines()


# --------------------------------------------------------------------------
# A night through the driver, on a fake kubectl


@pytest.mark.xfail(strict=True, reason="written for the old gate's verdict and exit codes; not yet re-checked against the judge's states and the frozen plan (issue #50)")
def test_a_night_on_kubernetes_with_a_failed_index(tmp_path):
    """The driver (night.sh, as the CronJob's pod runs it) on a fake kubectl
    and Job controller (tests/fake_kubectl.py), with stand-in shards: three
    indices, index 1 killed on both of its attempts. The shards' Job ends
    Failed, the merge runs anyway, finds the night partial, the gate fails
    it, the merge Job is Failed and the driver exits 1; the site is drawn on
    the volume."""
    state, volumes = tmp_path / "kube", tmp_path / "volumes"
    bin_dir = tmp_path / "bin"
    fake_kubectl.install_command(bin_dir, state, ROOT, volumes)
    slurm_standins.install_make(bin_dir, tmp_path / "make.log")
    results = volumes / "nightly-results"
    today = datetime.datetime.now(datetime.timezone.utc).date()
    test_slurm._last_night(results / "nightly" / str(today - datetime.timedelta(days=1)))
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}", "HOME": str(tmp_path), "JOB_NAME": "nightly-29400000",
           "NIGHTLY_ROOT": str(results / "nightly"), "NIGHTLY_SHARDS": "3", "POLL_SECONDS": "0.2",
           "NIGHTLY_FILTER": ".", "STANDIN_SHARDS": "1", "STANDIN_KILL": "1"}
    done = subprocess.run([str(KUBE / "night.sh")], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 1, done.stderr
    assert "shards: Failed" in done.stderr and "merge: Failed" in done.stderr, done.stderr
    night = results / "nightly" / str(today)
    assert (night / "plan.txt").read_text().startswith(f"date={today}\ncount=3\nshards=[0, 1, 2]\nsettings={{")
    ran = fake_kubectl.pods(state)
    shard_pods = sorted((p["index"], p["attempt"], p["exit"]) for p in ran if p["job"] == "nightly-29400000-shards")
    assert shard_pods == [(0, 0, 0), (1, 0, -9), (1, 1, -9), (2, 0, 0)]  # index 1 retried once
    assert [p["exit"] for p in ran if p["job"] == "nightly-29400000-merge"] == [1]  # the gate's status
    shard_env = [json.loads(line)["env"] for line in (tmp_path / "make.log").read_text().splitlines()
                 if json.loads(line)["targets"] == ["nightly-shard"]]
    assert {(e["NIGHTLY_DATE"], e["NIGHTLY_SHARDS"], e["NIGHTLY_FILTER"]) for e in shard_env} == {(str(today), "3", ".")}
    record = json.loads((night / "night.json").read_text())
    assert record["shards_lost"] == [1] and record["partial"].startswith("shard 1 of 3 lost"), record
    assert json.loads((night / "compare.json").read_text())["verdict"].startswith("FAIL")
    assert (results / "site" / "index.html").exists()
