"""A fake ``kubectl`` and Job controller for the night's driver
(deploy/kubernetes/night.sh): one machine, no API server.

``install_command(bin_dir, state_dir, src, volumes)`` writes an executable
``kubectl`` into ``bin_dir`` that does what the driver asks of the real one,
and refuses anything else:

* ``patch --local -f FILE --type=strategic -p PATCH -o json``: the manifest
  with PATCH merged as a strategic merge patch merges it (maps merged key by
  key, lists of named items, such as containers and env, merged by name,
  other lists replaced);
* ``create -f -``: a Job from stdin; ``AlreadyExists`` (exit 1) for a name
  taken. The Job then runs in a process of its own: an Indexed Job runs its
  ``completions`` indices (``parallelism`` at a time) as separate processes
  with ``JOB_COMPLETION_INDEX``, retrying a failed index up to
  ``backoffLimitPerIndex`` times, and ends ``Complete``, or ``Failed`` when an
  index stays failed (after every index has ended, as the real controller does
  with a per-index backoff limit); a plain Job runs its pod up to
  ``backoffLimit`` + 1 times;
* ``get job/NAME -o jsonpath=...`` with the driver's one jsonpath: the types
  of the Job's conditions that are True, each followed by a space.

A pod is its first container's command, run in ``src`` for the container's
``workingDir``, with the container's environment; a persistent volume claim
is the folder ``volumes/CLAIM``, and an environment value under a mount path
is rewritten to that folder (as the mount makes the path lead there). Its
environment is the container's, plus the node's PATH, HOME and LANG and the
stand-ins' ``STANDIN_*`` (tests/slurm_standins.py). Each
pod leaves a line in ``STATE/pods.log``: the Job, the index, the attempt and
the exit status.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
CONDITIONS = '{range .status.conditions[?(@.status=="True")]}{.type}{" "}{end}'


class Refused(Exception):
    pass


def install_command(bin_dir: Path, state: Path, src: Path, volumes: Path) -> None:
    bin_dir.mkdir(parents=True, exist_ok=True)
    (state / "jobs").mkdir(parents=True, exist_ok=True)
    (state / "config.json").write_text(json.dumps({"src": str(src), "volumes": str(volumes)}))
    path = bin_dir / "kubectl"
    path.write_text(f"#!{sys.executable}\nimport sys\nsys.path.insert(0, {str(HERE)!r})\n"
                    f"import fake_kubectl\nsys.exit(fake_kubectl.main({str(state)!r}, sys.argv[1:]))\n")
    path.chmod(0o755)


def main(state: str, argv: list[str]) -> int:
    try:
        return command(Path(state), argv)
    except Refused as err:
        print(f"error: {err}", file=sys.stderr)
        return 1


def _options(argv: list[str]) -> tuple[list[str], dict[str, str | bool]]:
    words, options, i = [], {}, 0
    while i < len(argv):
        word = argv[i]
        if word.startswith("-") and word != "-":
            name, has_value, value = word.lstrip("-").partition("=")
            if name == "local":
                options[name] = True
            elif has_value:
                options[name] = value
            else:
                i += 1
                options[name] = argv[i]
        else:
            words.append(word)
        i += 1
    return words, options


def command(state: Path, argv: list[str]) -> int:
    words, options = _options(argv)
    verb = words[0] if words else ""
    if verb == "patch" and options.get("local") is True and options.get("type") == "strategic" \
            and options.get("o") == "json":
        manifest = yaml.safe_load(Path(str(options["f"])).read_text())
        print(json.dumps(strategic_merge(manifest, json.loads(str(options["p"])))))
        return 0
    if verb == "create" and options.get("f") == "-":
        return create(state, json.loads(sys.stdin.read()))
    if verb == "get" and len(words) == 2 and words[1].startswith("job/") and options.get("o") == f"jsonpath={CONDITIONS}":
        path = state / "jobs" / f"{words[1][4:]}.json"
        if not path.exists():
            raise Refused(f'jobs.batch "{words[1][4:]}" not found')
        status = json.loads(path.read_text()).get("status", {})
        print("".join(f"{c['type']} " for c in status.get("conditions", []) if c["status"] == "True"), end="")
        return 0
    raise Refused(f"this fake does not do: kubectl {' '.join(argv)}")


def strategic_merge(base, patch):
    if isinstance(base, dict) and isinstance(patch, dict):
        merged = dict(base)
        for key, value in patch.items():
            merged[key] = strategic_merge(base[key], value) if key in base else value
        return merged
    if isinstance(base, list) and isinstance(patch, list) and all(isinstance(i, dict) and "name" in i
                                                                    for i in [*base, *patch]):
        merged = list(base)
        for item in patch:
            at = next((n for n, old in enumerate(merged) if old["name"] == item["name"]), None)
            if at is None:
                merged.append(item)
            else:
                merged[at] = strategic_merge(merged[at], item)
        return merged
    return patch


def create(state: Path, job: dict) -> int:
    if job.get("kind") != "Job":
        raise Refused(f"this fake creates Jobs only, not {job.get('kind')}")
    name = job["metadata"]["name"]
    path = state / "jobs" / f"{name}.json"
    try:
        with open(path, "x") as out:
            json.dump(job, out)
    except FileExistsError:
        raise Refused(f'jobs.batch "{name}" already exists') from None
    subprocess.Popen([sys.executable, __file__, str(state), name], start_new_session=True,
                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    print(f"job.batch/{name} created")
    return 0


# --------------------------------------------------------------------------
# The Job controller


def _pod(state: Path, job: dict, index: int | None, attempt: int) -> int:
    config = json.loads((state / "config.json").read_text())
    pod = job["spec"]["template"]["spec"]
    container = pod["containers"][0]
    claims = {v["name"]: v["persistentVolumeClaim"]["claimName"] for v in pod.get("volumes", [])}
    mounts = {m["mountPath"]: Path(config["volumes"]) / claims[m["name"]] for m in container.get("volumeMounts", [])}
    for folder in mounts.values():
        folder.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG") or k.startswith("STANDIN_")}
    for item in container.get("env", []):
        value = item["value"]
        for mount, folder in mounts.items():
            if value == mount or value.startswith(mount + "/"):
                value = str(folder) + value[len(mount):]
        env[item["name"]] = value
    if index is not None:
        env["JOB_COMPLETION_INDEX"] = str(index)
    name = job["metadata"]["name"]
    log = state / f"{name}-{'' if index is None else index}-{attempt}.log"
    with open(log, "wb") as out:
        code = subprocess.run(container["command"], cwd=config["src"], env=env, stdin=subprocess.DEVNULL,
                              stdout=out, stderr=subprocess.STDOUT, start_new_session=True).returncode
    with open(state / "pods.log", "a") as out:
        out.write(json.dumps({"job": name, "index": index, "attempt": attempt, "exit": code}) + "\n")
    return code


def _finish(state: Path, name: str, condition: str) -> None:
    path = state / "jobs" / f"{name}.json"
    job = json.loads(path.read_text())
    job["status"] = {"conditions": [{"type": condition, "status": "True"}]}
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(job))
    tmp.replace(path)


def run(state: Path, name: str) -> None:
    job = json.loads((state / "jobs" / f"{name}.json").read_text())
    spec = job["spec"]
    if spec.get("completionMode") == "Indexed":
        retries = spec.get("backoffLimitPerIndex", 0)

        def index_ok(index: int) -> bool:
            return any(_pod(state, job, index, attempt) == 0 for attempt in range(retries + 1))

        with ThreadPoolExecutor(max_workers=spec.get("parallelism", 1)) as pool:
            ok = list(pool.map(index_ok, range(spec["completions"])))
        _finish(state, name, "Complete" if all(ok) else "Failed")
    else:
        attempts = spec.get("backoffLimit", 6) + 1
        ok = any(_pod(state, job, None, attempt) == 0 for attempt in range(attempts))
        _finish(state, name, "Complete" if ok else "Failed")


def pods(state: Path) -> list[dict]:
    path = state / "pods.log"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


if __name__ == "__main__":
    run(Path(sys.argv[1]), sys.argv[2])
