"""A workflow run, rehearsed here as GitHub would run it, for the tests.

``Run`` takes a workflow file, an event and an origin repository
(``gha_workspace.make_origin``) and runs jobs the way the runner does:

* jobs in the order their ``needs`` allow, each ``if:`` evaluated
  (``gha_expressions``) against the event's contexts (``gha_events``), the
  needed jobs' results and outputs; a matrix job once per combination;
* each job in a folder of its own, checked out by the runner's user (uid
  1001) and run as root -- a workspace git refuses unless told to trust it;
* each job's ``run:`` steps in order with ``bash -e``, the environment the
  workflow, job and step set (plus GitHub's own ``GITHUB_*`` variables),
  ``$GITHUB_OUTPUT``/``$GITHUB_ENV``/``$GITHUB_STEP_SUMMARY`` files read back;
  ``continue-on-error``, step outcomes and job outputs as documented;
* the actions the workflows use, emulated: ``checkout`` (a clone of the
  origin, or of a stand-in for another repository), ``setup-python`` and
  ``cache`` (by default nothing to do: every checkout of this repository
  gets the venv the tests run in, its install stamps current, as a cache hit
  would restore it; with ``caches``, a real cache: ``setup-python`` lays the
  runner image's Python (``python``, this machine's interpreter under that
  version) in a tool cache whose path names the version, puts it first on
  ``PATH`` and says its version; ``cache`` restores a saved folder by its
  exact key and saves one after a job that succeeded, and pip stands in for
  the package index by linking the tests' venv into the venv it installs
  into), ``upload-artifact``/``download-artifact`` (a folder per artifact, one
  store per run, a name that exists refused unless ``overwrite``, as GitHub
  answers 409; a download without ``run-id`` and ``github-token`` sees only
  what the run's current attempt uploaded, as the runtime API does, and one
  with them needs ``actions: read``), ``upload-pages-artifact`` and
  ``deploy-pages``;
* "Re-run job": ``run_job`` of a job that ran already starts a new attempt
  of the run (``github.run_attempt``), keeping the run's artifacts;
* a job that outlives its ``timeout-minutes`` (``overrun`` names the step
  during which its time runs out): GitHub cancels it, the step is stopped
  (SIGINT, then SIGKILL), later steps run only under ``always()`` or
  ``cancelled()``, and the job's result is ``cancelled``.

Two things stand in for the machine: ``PYTHONPATH`` names the job's checkout
(the editable install points at the workspace on a runner), and a job can run
under ``faketime`` (the runner's clock on another day).
"""
from __future__ import annotations

import contextlib
import itertools
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import yaml

import gha_events
from gha_expressions import Evaluator, Open, Status, to_string
from gha_workspace import RUNNER_UID, chown_tree, git

STEP_TIMEOUT = 1800


@dataclass
class StepRecord:
    name: str
    outcome: str  # success, failure, skipped
    conclusion: str
    log: str = ""
    seconds: float = 0.0


@dataclass
class JobRecord:
    name: str
    result: str  # success, failure, skipped
    outputs: dict[str, str] = field(default_factory=dict)
    steps: list[StepRecord] = field(default_factory=list)
    workspace: Path | None = None
    summary: str = ""
    legs: list = field(default_factory=list)  # a matrix job's runs, one per combination

    def step(self, name: str) -> StepRecord:
        return next(s for s in self.steps if s.name == name)

    def log(self) -> str:
        return "\n".join(f"--- {s.name}: {s.outcome} ({s.seconds:.1f} s)\n{s.log}" for s in self.steps)


class Run:
    """One workflow run: its event, its artifacts, its jobs' results."""

    def __init__(self, workflow: Path, origin: Path, folder: Path, *, event: str = "schedule",
                 run_id: int = 1, variables: dict | None = None, inputs: dict | None = None,
                 repositories: dict[str, Path] | None = None, venv: Path = Path(sys.prefix),
                 clock: dict[str, str] | None = None, uid: int = RUNNER_UID, api_url: str | None = None,
                 python: str = "3.11.7", caches: Path | None = None, tool_cache: Path | None = None,
                 overrun: dict[str, str] | None = None):
        self.workflow = yaml.safe_load(workflow.read_text())
        self.origin, self.folder, self.event, self.run_id = origin, folder, event, run_id
        self.vars, self.inputs = dict(variables or {}), dict(inputs or {})
        self.repositories = dict(repositories or {})  # "owner/name" -> a local repository standing in
        self.checked_out: list[tuple[str, str | None]] = []  # (repository, ref) of each checkout
        self.venv, self.clock, self.uid = venv, dict(clock or {}), uid
        self.api_url = api_url  # GitHub's REST API as the steps see it (a fake standing in)
        self.artifacts = folder / "artifacts"
        self.pages = folder / "pages"
        self.jobs: dict[str, JobRecord] = {}
        self.attempts: dict[str, int] = {}  # per job: how many times it ran
        self.run_attempt = 1  # the run's attempt: each "Re-run job" starts one
        self.uploaded_in: dict[str, int] = {}  # artifact -> the attempt that uploaded it
        self.permissions: dict = {}  # the running job's token permissions
        # The runner image's Python (a version name for this machine's
        # interpreter), the tool cache it lives in, and the Actions cache
        # (None: every checkout gets the tests' venv, as a cache hit).
        self.python, self.caches = python, caches
        self.tool_cache = tool_cache or folder / "toolcache"
        self.overrun = dict(overrun or {})  # job -> the step during which its time runs out
        self._path: list[str] = []  # what the running job's steps put first on PATH
        self._post: list[Callable[[], str]] = []  # the running job's post steps (actions/cache's save)
        self.artifacts.mkdir(parents=True, exist_ok=True)

    # -- jobs ----------------------------------------------------------------

    def run_all(self, stand_ins: dict[str, Callable[["Run", dict], JobRecord]] | None = None) -> dict:
        """Every job in order; ``stand_ins`` replaces a job by a function
        (given the run and the job's contexts) that does what it would."""
        for name in self.workflow["jobs"]:
            self.run_job(name, stand_in=(stand_ins or {}).get(name))
        return self.jobs

    def run_job(self, name: str, stand_in=None) -> JobRecord:
        """The job (again, as "Re-run job" does: a new attempt, the artifacts
        of the run kept)."""
        job = self.workflow["jobs"][name]
        if name in self.attempts:
            self.run_attempt += 1
        attempt = self.attempts[name] = self.attempts.get(name, 0) + 1
        needs = _needs(job)
        needs_ctx = {n: {"result": self.jobs[n].result, "outputs": dict(self.jobs[n].outputs)} for n in needs}
        failed = any(self.jobs[n].result != "success" for n in needs)
        contexts = self._contexts(name, self.run_attempt, needs_ctx, workspace=None)
        if not Evaluator(contexts, status=Status(failed=failed)).condition(job.get("if")):
            self.jobs[name] = JobRecord(name, "skipped")
            return self.jobs[name]
        if stand_in is not None:
            self.jobs[name] = stand_in(self, contexts)
            return self.jobs[name]
        records = []
        for leg, matrix in enumerate(self._matrix(job, contexts)):
            records.append(self._run_leg(name, job, attempt, leg, matrix, needs_ctx))
        results = {r.result for r in records}
        result = "cancelled" if "cancelled" in results else "failure" if "failure" in results else "success"
        record = JobRecord(name, result, records[-1].outputs, [s for r in records for s in r.steps],
                           records[-1].workspace, "".join(r.summary for r in records), records)
        self.jobs[name] = record
        return record

    def _matrix(self, job: dict, contexts: dict) -> list[dict]:
        matrix = (job.get("strategy") or {}).get("matrix")
        if matrix is None:
            return [{}]
        values = Evaluator(contexts).interpolate(matrix)
        keys = [k for k in values if k not in ("include", "exclude")]
        return [dict(zip(keys, combo)) for combo in itertools.product(*(values[k] for k in keys))]

    def _contexts(self, name: str, attempt: int, needs: dict, workspace: Path | None) -> dict:
        return {
            "github": gha_events.github(self.event, inputs=self.inputs, workspace=str(workspace or ""),
                                        run_id=self.run_id, run_attempt=attempt, job=name),
            "inputs": gha_events.inputs_context(self.event, self.workflow, self.inputs),
            "vars": dict(self.vars), "secrets": {"GITHUB_TOKEN": "***"}, "env": {},
            "runner": {**gha_events.runner(), "temp": str(self.folder / "runner-temp")},
            "needs": needs, "job": {"status": "success"}, "steps": {}, "strategy": {}, "matrix": {},
        }

    def _run_leg(self, name, job, attempt, leg, matrix, needs) -> JobRecord:
        base = self.folder / f"{name}-{leg}-attempt{attempt}"
        workspace = base / "work"
        temp = base / "temp"
        workspace.mkdir(parents=True)
        temp.mkdir()
        chown_tree(base, self.uid)
        contexts = self._contexts(name, self.run_attempt, needs, workspace)
        contexts["matrix"] = matrix
        self.permissions = job.get("permissions", self.workflow.get("permissions", {})) or {}
        contexts["runner"]["temp"] = str(temp)
        record = JobRecord(name, "success", workspace=workspace)
        env = {}
        for level in (self.workflow, job):  # workflow, then job env: each sees the one above
            env = _evaluated_env(level.get("env"), contexts, env)
        steps: dict[str, dict] = {}
        failed = cancelled = False
        self._path, self._post = [], []
        for index, step in enumerate(job.get("steps", [])):
            step_ctx = {**contexts, "env": dict(env), "steps": steps}
            label = to_string(Evaluator(step_ctx).interpolate(step.get("name") or step.get("uses") or step["run"]))
            if not Evaluator(step_ctx, status=Status(failed=failed, cancelled=cancelled)).condition(step.get("if")):
                record.steps.append(StepRecord(label, "skipped", "skipped"))
                if "id" in step:
                    steps[step["id"]] = {"outcome": "skipped", "conclusion": "skipped", "outputs": Open()}
                continue
            step_env = _evaluated_env(step.get("env"), step_ctx, env)
            files = {key: temp / f"{key.lower()}-{index}" for key in ("GITHUB_OUTPUT", "GITHUB_ENV")}
            for path in files.values():
                path.write_text("")
            summary = temp / f"summary-{index}"
            summary.write_text("")
            started = time.monotonic()
            # The job's time runs out during this step: GitHub stops it and cancels the job.
            overruns = not cancelled and self.overrun.get(name) == label
            if "run" in step:
                ok, log = self._shell(step, workspace, {**step_env, **{k: str(v) for k, v in files.items()},
                                                        "GITHUB_STEP_SUMMARY": str(summary)},
                                      contexts, name, overruns=overruns)
            else:
                with_ = Evaluator(step_ctx).interpolate(step.get("with") or {})
                ok, log = self._action(step["uses"].split("@")[0], with_, workspace, contexts, files)
            record.summary += summary.read_text()
            outcome = "cancelled" if overruns else "success" if ok else "failure"
            conclusion = outcome if ok or overruns or not step.get("continue-on-error") else "success"
            record.steps.append(StepRecord(label, outcome, conclusion, log, time.monotonic() - started))
            if "id" in step:
                steps[step["id"]] = {"outcome": outcome, "conclusion": conclusion,
                                     "outputs": Open(_key_values(files["GITHUB_OUTPUT"].read_text()))}
            env.update(_key_values(files["GITHUB_ENV"].read_text()))
            failed = failed or conclusion == "failure"
            cancelled = cancelled or overruns
        record.result = "cancelled" if cancelled else "failure" if failed else "success"
        if record.result == "success":  # post steps: actions/cache saves after a job that succeeded
            for post in self._post:
                record.steps.append(StepRecord("Post " + post.__doc__, "success", "success", post()))
        outputs = Evaluator({**contexts, "env": dict(env), "steps": steps}).interpolate(job.get("outputs") or {})
        record.outputs = {k: to_string(v) for k, v in outputs.items()}
        return record

    # -- run: steps ----------------------------------------------------------

    def _shell(self, step: dict, workspace: Path, step_env: dict, contexts: dict, job: str,
               overruns: bool = False) -> tuple[bool, str]:
        script = workspace.parent / "temp" / "step.sh"
        script.write_text(step["run"] + "\n")
        github = contexts["github"]
        env = {
            "PATH": os.pathsep.join([*self._path, os.environ["PATH"]]), "HOME": str(workspace.parent / "home"),
            "LANG": "C.UTF-8",
            "CI": "true", "GITHUB_ACTIONS": "true", "GITHUB_WORKSPACE": str(workspace),
            "GITHUB_SHA": github["sha"], "GITHUB_REF": github["ref"], "GITHUB_REF_NAME": github["ref_name"],
            "GITHUB_EVENT_NAME": self.event, "GITHUB_RUN_ID": github["run_id"],
            "GITHUB_RUN_ATTEMPT": github["run_attempt"], "GITHUB_REPOSITORY": github["repository"],
            "GITHUB_SERVER_URL": github["server_url"], "GITHUB_API_URL": self.api_url or github["api_url"],
            "GITHUB_JOB": job, "RUNNER_OS": "Linux",
            "RUNNER_TEMP": contexts["runner"]["temp"],
            # The editable install of the checkout (the venv stands in for it).
            "PYTHONPATH": str(workspace),
            **step_env,
        }
        if self.caches is not None:  # pip: the tests' venv stands in for the package index
            env["PYTHONPATH"] += os.pathsep + str(self._pip_stand_in())
            env.update(REHEARSAL_SITE_PACKAGES=str(_site_packages(self.venv)),
                       REHEARSAL_PIP_LOG=str(self.folder / "pip.log"), REHEARSAL_JOB=job)
        command = ["bash", "-e", str(script)]
        if job in self.clock:  # the runner's clock on another day
            command = ["faketime", "-f", self.clock[job], *command]
            env["FAKETIME_DONT_FAKE_MONOTONIC"] = "1"
        cwd = workspace / step.get("working-directory", ".")
        if overruns:
            return False, _stopped(command, cwd, env)
        try:
            done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True,
                                  timeout=STEP_TIMEOUT)
        except subprocess.TimeoutExpired as err:
            return False, f"timed out after {err.timeout}s"
        return done.returncode == 0, done.stdout + done.stderr + f"\n(exit {done.returncode})"

    def _pip_stand_in(self) -> Path:
        folder = self.folder / "pip-stand-in"
        if not folder.exists():
            (folder / "pip").mkdir(parents=True)
            (folder / "pip" / "__init__.py").write_text("")
            (folder / "pip" / "__main__.py").write_text(PIP_STAND_IN)
        return folder

    # -- uses: steps ---------------------------------------------------------

    def _action(self, action: str, with_: dict, workspace: Path, contexts: dict, files) -> tuple[bool, str]:
        if action == "actions/setup-python" and self.caches is not None:
            return self._setup_python(with_, files)
        if action == "actions/cache" and self.caches is not None:
            return self._cache(with_, workspace, files)
        handler = {
            "actions/checkout": self._checkout,
            "actions/setup-python": lambda w, ws: (True, f"python {w.get('python-version')}: the system's"),
            "actions/cache": lambda w, ws: (True, f"cache {w.get('key')}: the venv is in place"),
            "actions/upload-artifact": self._upload,
            "actions/download-artifact": self._download,
            "actions/upload-pages-artifact": self._upload_pages,
            "actions/deploy-pages": self._deploy_pages,
        }.get(action)
        if handler is None:
            raise AssertionError(f"the rehearsal cannot run {action}")
        ok, log = handler(with_, workspace)
        if action == "actions/deploy-pages" and ok:
            files["GITHUB_OUTPUT"].write_text(f"page_url=https://{gha_events.OWNER}.github.io/{gha_events.NAME}/\n")
        return ok, log

    def _checkout(self, with_: dict, workspace: Path) -> tuple[bool, str]:
        repository = with_.get("repository") or f"{gha_events.OWNER}/{gha_events.NAME}"
        ref = with_.get("ref") or None
        self.checked_out.append((repository, ref))
        dest = workspace / (with_.get("path") or ".")
        own = repository == f"{gha_events.OWNER}/{gha_events.NAME}"
        source = self.origin if own else self.repositories.get(repository)
        if source is None:
            return False, f"no stand-in for {repository}"
        git("clone", "-q", str(source), str(dest))
        if own and self.caches is None:
            lay_venv(dest / ".venv", self.venv)
        chown_tree(dest, self.uid)
        return True, f"checked out {repository} at {ref or 'its default branch'}"

    def _setup_python(self, with_: dict, files) -> tuple[bool, str]:
        """The image's Python in the tool cache, at a path that names its
        version (the only one of its minor version the image carries): first
        on PATH, its version and path as the step's outputs."""
        wanted = str(with_.get("python-version"))
        if not self.python.startswith(wanted + ".") and self.python != wanted:
            return False, f"the image has Python {self.python}, not {wanted}"
        versions = self.tool_cache / "Python"
        versions.mkdir(parents=True, exist_ok=True)
        for other in versions.iterdir():
            if other.name != self.python:
                shutil.rmtree(other)  # the image moved on: the old version is gone
        home = versions / self.python / "x64"
        if not home.exists():
            home.parent.mkdir()
            home.symlink_to(Path(sys.base_prefix))
        self._path.insert(0, str(home / "bin"))
        python = home / "bin" / "python3"
        with open(files["GITHUB_OUTPUT"], "a") as out:
            out.write(f"python-version={self.python}\npython-path={python}\n")
        return True, f"python {self.python} at {python}"

    def _cache(self, with_: dict, workspace: Path, files) -> tuple[bool, str]:
        """Restore the folder saved under exactly this key, or save it after
        the job (only if the job succeeds, and never over a saved key)."""
        key, path = str(with_["key"]), workspace / str(with_["path"])
        saved = self.caches / key
        if saved.exists():
            shutil.copytree(saved, path, symlinks=True)  # as tar restores it: links as links, mtimes kept
            with open(files["GITHUB_OUTPUT"], "a") as out:
                out.write("cache-hit=true\n")
            return True, f"Cache restored from key: {key}"

        def save() -> str:
            """Save the cache"""
            if saved.exists() or not path.exists():
                return f"not saved: {key}"
            shutil.copytree(path, saved, symlinks=True)
            return f"Cache saved with key: {key}"

        self._post.append(save)
        return True, f"Cache not found for input keys: {key}"

    def artifact(self, name: str) -> Path:
        """A new artifact's folder, uploaded by the current attempt (for a
        job's stand-in)."""
        self.uploaded_in[name] = self.run_attempt
        (self.artifacts / name).mkdir()
        return self.artifacts / name

    def _visible(self, with_: dict) -> tuple[set[str] | None, str]:
        """The artifacts a download sees (None: refused, with why)."""
        names = {p.name for p in self.artifacts.iterdir()}
        if not (with_.get("run-id") and with_.get("github-token")):
            return {n for n in names if self.uploaded_in.get(n) == self.run_attempt}, ""
        if str(with_["run-id"]) != str(self.run_id):
            return None, f"Unable to download artifact(s): workflow run {with_['run-id']} not found"
        granted = self.permissions
        if not (granted in ("read-all", "write-all")
                or (isinstance(granted, dict) and granted.get("actions") in ("read", "write"))):
            return None, "Unable to download artifact(s): Resource not accessible by integration (actions: read)"
        return names, ""

    def _upload(self, with_: dict, workspace: Path) -> tuple[bool, str]:
        name = with_["name"]
        target = self.artifacts / name
        if target.exists() and with_.get("overwrite") is not True:
            return False, f"Failed to CreateArtifact: (409) Conflict: an artifact with this name already exists: {name}"
        paths = [workspace / p for p in str(with_["path"]).split("\n") if p.strip()]
        present = [p for p in paths if p.exists()]
        if not present:
            ok = with_.get("if-no-files-found", "warn") != "error"
            return ok, f"no files found at {with_['path']}"
        root = Path(os.path.commonpath(present)) if len(present) > 1 else present[0]
        if root.is_file():
            root = root.parent
        if target.exists():
            shutil.rmtree(target)
        target.mkdir()
        self.uploaded_in[name] = self.run_attempt
        for path in present:
            dest = target / path.relative_to(root) if path != root else target
            if path.is_dir():
                shutil.copytree(path, dest, dirs_exist_ok=True)
            else:
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, dest)
        return True, f"uploaded {name}"

    def _download(self, with_: dict, workspace: Path) -> tuple[bool, str]:
        dest = workspace / (with_.get("path") or ".")
        visible, why = self._visible(with_)
        if visible is None:
            return False, why
        if "name" in with_:
            source = self.artifacts / with_["name"]
            if with_["name"] not in visible:
                return False, f"Unable to download artifact(s): Artifact not found for name: {with_['name']}"
            shutil.copytree(source, dest, dirs_exist_ok=True)  # as root: actions run as the steps do
            return True, f"downloaded {with_['name']}"
        pattern = re.compile(re.escape(with_["pattern"]).replace(r"\*", ".*") + "$")
        found = sorted(self.artifacts / n for n in visible if pattern.match(n))
        for source in found:
            shutil.copytree(source, dest if with_.get("merge-multiple") else dest / source.name, dirs_exist_ok=True)
        return True, f"downloaded {[p.name for p in found]}"

    def _upload_pages(self, with_: dict, workspace: Path) -> tuple[bool, str]:
        name = with_.get("name", "github-pages")
        if (self.artifacts / name).exists():
            return False, f"Failed to CreateArtifact: (409) Conflict: an artifact with this name already exists: {name}"
        site = workspace / with_["path"]
        if not (site / "index.html").is_file():
            return False, f"no site at {site}"
        shutil.copytree(site, self.artifacts / name)
        self.uploaded_in[name] = self.run_attempt
        return True, f"uploaded the site as {name}"

    def _deploy_pages(self, with_: dict, workspace: Path) -> tuple[bool, str]:
        name = with_.get("artifact_name", "github-pages")
        if not (self.artifacts / name).is_dir() or self.uploaded_in.get(name) != self.run_attempt:
            return False, f"No artifacts named {name} were found for this workflow run"
        if self.pages.exists():
            shutil.rmtree(self.pages)
        shutil.copytree(self.artifacts / name, self.pages)
        return True, f"deployed {name}"


# --------------------------------------------------------------------------


def lay_venv(dest: Path, source: Path) -> None:
    """A venv at ``dest`` that is ``source`` (the tests' venv) under another
    name: its own pyvenv.cfg, the same bin/ and lib/, and install stamps that
    hold the checkout's package metadata (``make install-metadata``), so make
    installs nothing."""
    dest.mkdir()
    shutil.copy2(source / "pyvenv.cfg", dest / "pyvenv.cfg")
    for part in ("bin", "lib"):
        (dest / part).symlink_to(source / part)
    metadata = subprocess.run(["make", "-s", "install-metadata"], cwd=dest.parent, capture_output=True,
                              text=True, check=True, timeout=60).stdout
    for stamp in (".installed", ".installed-light"):
        (dest / stamp).write_text(metadata)


PIP_STAND_IN = '''"""pip, as the rehearsal has it: an install links the tests' venv into
the running venv (a .pth file) instead of downloading, and is logged."""
import os, sys, sysconfig
with open(os.environ["REHEARSAL_PIP_LOG"], "a") as log:
    log.write(f"{os.environ.get('REHEARSAL_JOB', '')}: {sys.prefix}: pip {' '.join(sys.argv[1:])}\\n")
if sys.argv[1:2] == ["install"]:
    with open(os.path.join(sysconfig.get_paths()["purelib"], "rehearsal-packages.pth"), "w") as pth:
        pth.write(f"import site; site.addsitedir({os.environ['REHEARSAL_SITE_PACKAGES']!r})\\n")
'''


def _site_packages(venv: Path) -> Path:
    return venv / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"


def _default_signals() -> None:
    """A runner starts a step with every signal at its default; a test run
    from a background shell would hand down SIGINT ignored, and the step
    would run on through the interrupt."""
    for signum in (signal.SIGINT, signal.SIGQUIT):
        signal.signal(signum, signal.SIG_DFL)


def _stopped(command: list[str], cwd: Path, env: dict) -> str:
    """The step, stopped as a cancelled job's step: SIGINT, then SIGKILL if
    it is still running 7.5 s later.  GitHub sends its SIGINT (and SIGTERM
    7.5 s later) to the step's shell alone and kills the process tree 2.5 s
    after that; here every process of the step gets the SIGINT at once.  A
    step with more than those 10 s left ends unfinished either way, which is
    what the rehearsal checks; one closer to its end may finish on GitHub."""
    proc = subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True, preexec_fn=_default_signals)
    time.sleep(0.5)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGINT)
    try:
        out, _ = proc.communicate(timeout=7.5)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
    return out + "\nError: The operation was canceled (the job has exceeded the maximum execution time)"


def _needs(job: dict) -> list[str]:
    needs = job.get("needs", [])
    return [needs] if isinstance(needs, str) else list(needs)


def _evaluated_env(env: dict | None, contexts: dict, above: dict) -> dict[str, str]:
    out = dict(above)
    evaluator = Evaluator({**contexts, "env": dict(above)})
    for key, value in (env or {}).items():
        out[key] = to_string(evaluator.interpolate(value))
    return out


def _key_values(text: str) -> dict[str, str]:
    """The lines of a $GITHUB_OUTPUT / $GITHUB_ENV file: NAME=VALUE, or
    NAME<<DELIMITER ... DELIMITER."""
    values, lines = {}, iter(text.splitlines())
    for line in lines:
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            key, delimiter = line.split("<<", 1)
            body = list(itertools.takewhile(lambda l: l != delimiter, lines))
            values[key] = "\n".join(body)
        elif "=" in line:
            key, value = line.split("=", 1)
            values[key] = value
    return values


def push_night(origin: Path, branch: str, files: dict[str, Path], work: Path) -> None:
    """Put files on ``branch`` of ``origin`` (a night published before)."""
    git("init", "-q", "-b", branch, str(work))
    for rel, source in files.items():
        (work / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, work / rel)
    git("add", "-A", cwd=work)
    git("-c", "user.name=nightly", "-c", "user.email=nightly@localhost", "commit", "-q", "-m", "earlier night",
        cwd=work)
    git("push", "-q", str(origin), f"HEAD:refs/heads/{branch}", cwd=work)


def branch_files(origin: Path, branch: str) -> list[str]:
    done = git("ls-tree", "-r", "--name-only", branch, cwd=origin, check=False)
    return done.stdout.split() if done.returncode == 0 else []
