"""A fake Slurm for the shipped batch scripts (deploy/slurm/): ``sbatch`` and
``sacct`` on PATH, one machine, no daemon.

``install_commands(bin_dir, state_dir)`` writes executables ``sbatch`` and
``sacct`` into ``bin_dir``. ``sbatch`` behaves as Slurm's does for what the
scripts use, and refuses any option it does not know (as sbatch does):

* the script is copied at submission (a later edit does not change the job),
  its ``#SBATCH`` lines read as options before the command line's;
* it returns at once: ``Submitted batch job ID``, or ``ID`` with ``--parsable``;
  a process of its own (a new session) waits for the job's dependencies and
  runs it, so jobs run while the submitter goes on;
* ``--dependency=afterany:ID[:ID]`` (after they ended, however they ended) and
  ``afterok:ID`` (after all their tasks exited 0; else the job never runs and
  ends as ``CANCELLED`` with reason ``DependencyNeverSatisfied``, as with
  ``--kill-on-invalid-dep=yes``); an array's id stands for all its tasks;
* ``--array=0-3``, ``2``, ``0,2``, ``0-7:2`` (``%N`` limits ignored): every
  task runs at once, each as a separate process in its own process group,
  with the variables a real array sets: ``SLURM_JOB_ID`` (the task's own),
  ``SLURM_ARRAY_JOB_ID``, ``SLURM_ARRAY_TASK_ID``, ``_MIN``, ``_MAX``,
  ``_COUNT``, ``_STEP``, plus ``SLURM_SUBMIT_DIR`` and ``SLURM_JOB_NAME``;
* ``--export=ALL[,VAR=value...]`` (the default) passes the submitter's
  environment; ``NONE`` or a list passes only what it names;
* ``--output`` with ``%j``, ``%A``, ``%a``, ``%x`` (default
  ``slurm-%j.out``/``slurm-%A_%a.out`` in the submit folder).

Each job (and each array task) leaves ``STATE/ID.json``: its name, array job,
task, state (``PENDING``, ``RUNNING``, ``COMPLETED``, ``FAILED``,
``CANCELLED``), exit code and signal; ``sacct -j ID`` prints them as
``sacct --parsable2 --noheader --format=JobID,JobName,State,ExitCode`` does
(``ID_TASK`` for a task, exit code ``CODE:SIGNAL``). ``wait_all(state_dir)``
waits until every job has ended.
"""
from __future__ import annotations

import fcntl
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ENDED = ("COMPLETED", "FAILED", "CANCELLED")
# sbatch's options the scripts may use: long name -> (short name, takes a value).
OPTIONS = {"array": ("a", True), "dependency": ("d", True), "export": (None, True),
           "output": ("o", True), "error": ("e", True), "job-name": ("J", True),
           "chdir": ("D", True), "parsable": (None, False), "kill-on-invalid-dep": (None, True),
           "exclusive": (None, False), "nodes": ("N", True), "ntasks": ("n", True),
           "cpus-per-task": ("c", True), "time": ("t", True), "mem": (None, True),
           "partition": ("p", True), "account": ("A", True), "hint": (None, True)}
SHORT = {short: name for name, (short, _) in OPTIONS.items() if short}


class Refused(Exception):
    """sbatch's own error: one line on stderr, exit status 1."""


def install_commands(bin_dir: Path, state_dir: Path) -> None:
    """Write ``sbatch`` and ``sacct`` into ``bin_dir``, keeping jobs in ``state_dir``."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    state_dir.mkdir(parents=True, exist_ok=True)
    for command in ("sbatch", "sacct"):
        path = bin_dir / command
        path.write_text(f"#!{sys.executable}\nimport sys\nsys.path.insert(0, {str(HERE)!r})\n"
                        f"import fake_slurm\nsys.exit(fake_slurm.main({command!r}, {str(state_dir)!r}, "
                        "sys.argv[1:]))\n")
        path.chmod(0o755)


def main(command: str, state_dir: str, argv: list[str]) -> int:
    state = Path(state_dir)
    try:
        if command == "sbatch":
            return sbatch(state, argv, dict(os.environ))
        if command == "sacct":
            return sacct(state, argv)
        if command == "run-job":
            return run_job(state, argv[0])
    except Refused as err:
        print(f"{command}: error: {err}", file=sys.stderr)
        return 1
    raise SystemExit(f"fake_slurm: no command {command}")


# --------------------------------------------------------------------------
# sbatch


def parse_options(words: list[str], options: dict[str, str | bool]) -> list[str]:
    """Options from ``words`` into ``options`` (later ones win); the words
    left from the first non-option on (the script and its arguments)."""
    i = 0
    while i < len(words) and words[i].startswith("-"):
        word = words[i]
        if word.startswith("--"):
            name, has_value, value = word[2:].partition("=")
        else:
            name, value, has_value = SHORT.get(word[1:2], word[1:2]), word[2:], bool(word[2:])
        if name not in OPTIONS:
            raise Refused(f"unrecognized option '{word}'")
        if OPTIONS[name][1]:
            if not has_value:
                i += 1
                if i == len(words):
                    raise Refused(f"option '{word}' requires an argument")
                value = words[i]
            options[name] = value
        else:
            if has_value:
                raise Refused(f"option '--{name}' doesn't allow an argument")
            options[name] = True
        i += 1
    return words[i:]


def script_options(script: str) -> dict[str, str | bool]:
    """The ``#SBATCH`` lines before the script's first command."""
    options: dict[str, str | bool] = {}
    for line in script.splitlines()[1:]:
        if line.startswith("#SBATCH"):
            parse_options(shlex.split(line[len("#SBATCH"):]), options)
        elif line.strip() and not line.startswith("#"):
            break
    return options


def array_indices(spec: str) -> list[int]:
    indices: set[int] = set()
    for part in spec.split("%")[0].split(","):
        try:
            span, _, step = part.partition(":")
            low, _, high = span.partition("-")
            indices.update(range(int(low), int(high or low) + 1, int(step or 1)))
        except ValueError:
            raise Refused(f"Invalid job array specification: {spec}") from None
    return sorted(indices)


def dependencies(spec: str) -> list[tuple[str, str]]:
    found = []
    for part in filter(None, spec.split(",")):
        kind, _, ids = part.partition(":")
        if kind not in ("afterany", "afterok") or not ids:
            raise Refused(f"Job dependency problem: {spec}")
        found += [(kind, job) for job in ids.split(":")]
    return found


def job_environment(export: str, env: dict[str, str]) -> dict[str, str]:
    parts = export.split(",")
    if parts[0] == "ALL":
        base, parts = dict(env), parts[1:]
    elif parts[0] == "NONE":
        base, parts = {}, parts[1:]
    else:
        base = {}
    for part in parts:
        name, has_value, value = part.partition("=")
        if has_value:
            base[name] = value
        elif name in env:
            base[name] = env[name]
    return base


def _next_id(state: Path) -> int:
    with open(state / "next-id", "a+") as counter:
        fcntl.flock(counter, fcntl.LOCK_EX)
        counter.seek(0)
        job = int(counter.read() or 1000) + 1
        counter.seek(0)
        counter.truncate()
        counter.write(str(job))
    return job


def sbatch(state: Path, argv: list[str], env: dict[str, str]) -> int:
    command_line: dict[str, str | bool] = {}
    rest = parse_options(argv, command_line)
    if not rest:
        raise Refused("a batch script is needed (this fake reads no script from stdin)")
    script_path = Path(rest[0])
    if not script_path.is_file():
        raise Refused(f"Unable to open file {script_path}")
    text = script_path.read_text()
    if not text.startswith("#!"):
        raise Refused("This does not look like a batch script.  The first line must start with #!")
    options = {**script_options(text), **command_line}
    for kind, job in dependencies(str(options.get("dependency", ""))):
        if not (state / f"{job}.json").exists():
            raise Refused(f"Job dependency problem: no job {job}")
    job = _next_id(state)
    tasks = array_indices(str(options["array"])) if "array" in options else None
    submit_dir = Path(str(options.get("chdir", os.getcwd()))).resolve()
    job_dir = state / str(job)
    job_dir.mkdir()
    (job_dir / "script").write_text(text)
    (job_dir / "script").chmod(0o755)
    name = str(options.get("job-name", script_path.name))
    spec = {"job": job, "name": name, "args": rest[1:], "options": options, "tasks": tasks,
            "submit_dir": str(submit_dir), "env": job_environment(str(options.get("export", "ALL")), env)}
    (job_dir / "spec.json").write_text(json.dumps(spec))
    _write_state(state, job, {"job": job, "name": name, "state": "PENDING", "tasks": tasks})
    subprocess.Popen([sys.executable, __file__, "run-job", str(state), str(job)], start_new_session=True,
                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    print(job if options.get("parsable") else f"Submitted batch job {job}")
    return 0


# --------------------------------------------------------------------------
# Running a job


def _write_state(state: Path, job: int | str, record: dict) -> None:
    tmp = state / f".{job}.json.tmp"
    tmp.write_text(json.dumps(record))
    tmp.replace(state / f"{job}.json")


def read_state(state: Path, job: int | str) -> dict:
    return json.loads((state / f"{job}.json").read_text())


def _job_ended(state: Path, job: str) -> tuple[bool, bool]:
    """(ended, every task exited 0) of job ``job`` (all its tasks, for an array)."""
    record = read_state(state, job)
    if record["state"] not in ENDED:
        return False, False
    parts = [read_state(state, t) for t in record.get("task_jobs", [])] or [record]
    return True, all(p["state"] == "COMPLETED" for p in parts)


def _output_path(options: dict, submit_dir: Path, job: int, array_job: int | None, task: int | None,
                 name: str) -> Path:
    pattern = str(options.get("output") or ("slurm-%A_%a.out" if task is not None else "slurm-%j.out"))
    for key, value in (("%A", array_job or job), ("%a", task if task is not None else ""), ("%j", job),
                       ("%x", name)):
        pattern = pattern.replace(key, str(value))
    path = Path(pattern)
    return path if path.is_absolute() else submit_dir / path


def run_job(state: Path, job_id: str) -> int:
    spec = json.loads((state / job_id / "spec.json").read_text())
    job, name, options, tasks = spec["job"], spec["name"], spec["options"], spec["tasks"]
    submit_dir = Path(spec["submit_dir"])
    for kind, other in dependencies(str(options.get("dependency", ""))):
        while True:
            ended, ok = _job_ended(state, other)
            if ended:
                break
            time.sleep(0.05)
        if kind == "afterok" and not ok:
            _write_state(state, job, {"job": job, "name": name, "state": "CANCELLED", "tasks": tasks,
                                      "reason": "DependencyNeverSatisfied", "exit_code": 0, "signal": 0})
            return 0
    base = {**spec["env"], "SLURM_SUBMIT_DIR": str(submit_dir), "SLURM_JOB_NAME": name}
    if "cpus-per-task" in options:
        base["SLURM_CPUS_PER_TASK"] = str(options["cpus-per-task"])
    running = []
    if tasks is None:
        running.append((job, None, {**base, "SLURM_JOB_ID": str(job)}))
    else:
        span = str(options["array"]).split("%")[0]
        step = int(span.partition(":")[2] or 1) if "," not in span else 1
        array = {"SLURM_ARRAY_JOB_ID": str(job), "SLURM_ARRAY_TASK_MIN": str(tasks[0]),
                 "SLURM_ARRAY_TASK_MAX": str(tasks[-1]), "SLURM_ARRAY_TASK_COUNT": str(len(tasks)),
                 "SLURM_ARRAY_TASK_STEP": str(step)}
        for task in tasks:
            own = _next_id(state)
            running.append((own, task, {**base, **array, "SLURM_JOB_ID": str(own),
                                        "SLURM_ARRAY_TASK_ID": str(task)}))
    _write_state(state, job, {"job": job, "name": name, "state": "RUNNING", "tasks": tasks,
                              "task_jobs": [own for own, task, _ in running if task is not None]})
    processes = []
    for own, task, env in running:
        out = _output_path(options, submit_dir, own, job if task is not None else None, task, name)
        out.parent.mkdir(parents=True, exist_ok=True)
        with open(out, "ab") as log:
            process = subprocess.Popen([str(state / job_id / "script"), *spec["args"]], cwd=submit_dir,
                                       env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                       start_new_session=True)
        if task is not None:
            _write_state(state, own, {"job": own, "name": name, "array_job": job, "task": task,
                                      "state": "RUNNING", "pid": process.pid})
        else:
            _write_state(state, job, {"job": job, "name": name, "state": "RUNNING", "pid": process.pid})
        processes.append((own, task, process))
    results = []
    for own, task, process in processes:
        code = process.wait()
        exit_code, sig = (code, 0) if code >= 0 else (0, -code)
        record = {"job": own, "name": name, "state": "COMPLETED" if code == 0 else "FAILED",
                  "exit_code": exit_code, "signal": sig}
        if task is not None:
            _write_state(state, own, {**record, "array_job": job, "task": task})
        results.append(record)
    worst = next((r for r in results if r["state"] != "COMPLETED"), results[0])
    _write_state(state, job, {"job": job, "name": name, "tasks": tasks, "state": worst["state"],
                              "exit_code": worst["exit_code"], "signal": worst["signal"],
                              "task_jobs": [own for own, task, _ in processes if task is not None]})
    return 0


# --------------------------------------------------------------------------
# sacct, and waiting


def sacct(state: Path, argv: list[str]) -> int:
    """``sacct -j ID[,ID]``: JobID|JobName|State|ExitCode per job and task."""
    jobs = [j for flag, value in zip(argv, [*argv[1:], ""]) if flag in ("-j", "--jobs") for j in value.split(",")]
    jobs += [j for a in argv if a.startswith("--jobs=") for j in a.split("=", 1)[1].split(",")]
    for job in jobs:
        if not (state / f"{job}.json").exists():
            continue
        record = read_state(state, job)
        parts = [read_state(state, t) for t in record.get("task_jobs", [])]
        for part in parts or [record]:
            label = f"{job}_{part['task']}" if "task" in part else str(job)
            code = f"{part.get('exit_code', 0)}:{part.get('signal', 0)}"
            print("|".join([label, part["name"], part["state"], code]))
    return 0


def all_jobs(state: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(state.glob("*.json"))]


def wait_all(state: Path, timeout: float) -> list[dict]:
    """Every job's record once all have ended; kills what still runs after ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        jobs = all_jobs(state)
        if all(j["state"] in ENDED for j in jobs):
            return jobs
        time.sleep(0.1)
    for record in all_jobs(state):
        if record.get("pid") and record["state"] == "RUNNING":
            try:
                os.killpg(record["pid"], signal.SIGKILL)
            except ProcessLookupError:
                pass
    raise TimeoutError(f"jobs still running after {timeout} s: "
                       f"{[j['job'] for j in all_jobs(state) if j['state'] not in ENDED]}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], sys.argv[3:]))
