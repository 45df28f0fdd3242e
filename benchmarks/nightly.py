"""The nightly job, in one go or step by step on several machines.

In one go (``make nightly``)::

    python -m benchmarks.nightly [--root results/nightly] [--date D] [--backends B] [-- RUNNER FLAGS]

runs every backend on the full suite into ``ROOT/<date>/performance.csv``
(raw samples, markdown report and plot beside it, ``night.json`` saying
whether it finished), then gates it (``benchmarks.results.gate``): against the
paired ratios of the last 7 complete nights under ROOT pooled, slower rows
measured again before they fail it, writing ``compare.md``, ``compare.json``
and ``compare.png`` beside it.  Exit status: the gate's (0 pass -- also on
the first night, which says it had no baseline --, 1 fail, 2 bad input).
Rerunning the same date completes that night (``--resume``) instead of
starting over.

Step by step, as the CI workflow (``.github/workflows/nightly.yml``) runs it
through ``make nightly-*`` targets::

    plan  --shards N             print "date=D", "count=N", "shards=[0, ..., N-1]" (GitHub step outputs)
    shard --shards N --shard I   shard I of N into ROOT/D/shards/shard-I.csv (resumes a partial one)
                                 and shard-I.json (its models, settings, whether it finished)
    merge [--shards N]           ROOT/D/shards/shard-*.csv -> ROOT/D/performance.csv, and
                                 ROOT/D/night.json: partial when a shard is lost or unfinished
                                 (and, in GitHub Actions, the run's URL)
    gate [COMPARE FLAGS]         judge the night, as above (--baseline-nights K, --pin DATE,
                                 --previous CSV, --no-confirm)
    summary                      why a night was not judged, for $GITHUB_STEP_SUMMARY
    fetch-history                check out the results branch as ROOT (a git worktree)
    publish                      commit ROOT/D's merged files to the results branch and push
    light-requirements           the packages merge, gate and the dashboard need (no torch)

A shard job on another job runner finds its place in the environment when
``--shard``/``--shards`` are not given: ``NIGHTLY_SHARD``/``NIGHTLY_SHARDS``,
else a Slurm job array's ``SLURM_ARRAY_TASK_ID``/``SLURM_ARRAY_TASK_COUNT``
(counted from ``SLURM_ARRAY_TASK_MIN`` in steps of ``SLURM_ARRAY_TASK_STEP``),
else a Kubernetes Indexed Job's ``JOB_COMPLETION_INDEX`` with
``JOB_COMPLETIONS`` (the job's ``completions``, which Kubernetes does not
pass on: set it in the pod's environment).

The git steps talk to the remote with the token in ``NIGHTLY_GIT_TOKEN``
when it is set (the workflow's own token, as ``actions/checkout`` sends it),
without writing it anywhere: the checkouts keep no credentials.

``plan`` needs only the standard library (the workflow runs it before
installing anything); the heavy modules are imported by the steps that use
them.  The previous nights live on a git branch (default ``nightly-results``)
holding ``<date>/performance.{csv,jsonl,md,png}`` and ``<date>/compare.*``:
the gate needs the previous night and the dashboard needs them all, and
workflow artifacts expire, so a branch is the durable home.

One module, though over 400 lines: it is the job's script, one small step
function per CI step, and every step shares the night's paths, records and
command line; the work itself is elsewhere (the run in ``benchmarks.cli``,
the judging in ``benchmarks.results.gate``, the store in ``results``).
"""
from __future__ import annotations

import argparse
import base64
import configparser
import datetime
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Mapping, Sequence

from benchmarks.usage import Parser, UsageError, guarded

NIGHTLY_BACKENDS = ("torchxla_trivial", "torchxla_trace_once", "openxla_eval", "inductor")
RESULT = "performance.csv"
SHARDS_DIR = "shards"
MAX_SHARDS = 64
DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
SHARD_NAME = re.compile(r"^shard-\d+\.csv$")
RESULTS_BRANCH = "nightly-results"
# What a night keeps on the results branch (shard files and worker logs go to
# the run's artifacts only).
PUBLISHED = ("performance.csv", "performance.jsonl", "performance.md", "performance.png",
             "performance_graph_breaks.csv", "night.json", "compare.md", "compare.json", "compare.png")
NIGHT_META = "night.json"  # what is known of the night beyond its rows: the CI run that made it
# What every night's runner is given (the rest: backends, selection, output, runner_args).
NIGHT_FLAGS = ("--performance", "--use-xla-baseline", "--randomize-input")
# Runner flags each step sets itself.
OWNED_FLAGS = {"--output", "--output-directory", "--resume", "--overwrite", "--backend",
               "--total-partitions", "--partition-id"}
PROG = "python -m benchmarks.nightly"
# Where a shard finds its place when not told: (index, count) variables of
# each job runner, in order of preference.
SHARD_VARIABLES = (("NIGHTLY_SHARD", "NIGHTLY_SHARDS"),
                   ("SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT"),
                   ("JOB_COMPLETION_INDEX", "JOB_COMPLETIONS"))
# Distributions the run needs but merge, gate and the dashboard never import.
HEAVY = frozenset({"torch", "torchvision", "torch_xla", "timm", "transformers"})
PROJECT_ROOT = Path(__file__).resolve().parent.parent
SUMMARY_LIMIT = 1024 * 1024  # GitHub's limit on one step's summary


# --------------------------------------------------------------------------
# Paths


def night_dir(root: Path, date: str) -> Path:
    return root / date


def shard_csv(root: Path, date: str, shard: int) -> Path:
    return night_dir(root, date) / SHARDS_DIR / f"shard-{shard}.csv"


# --------------------------------------------------------------------------
# Arguments


def _date(text: str) -> str:
    """A night's name: YYYY-MM-DD, today (UTC) when empty."""
    if not text:
        return datetime.datetime.now(datetime.timezone.utc).date().isoformat()
    try:
        datetime.date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a date (YYYY-MM-DD): {text!r}") from None
    if not DATE.match(text):
        raise argparse.ArgumentTypeError(f"not a date (YYYY-MM-DD): {text!r}")
    return text


def _nights(text: str) -> int:
    if not text.strip().isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number of nights >= 1, got {text!r}")
    return int(text)


def _shards(text: str) -> int:
    if not text.strip().isdigit() or not 1 <= int(text) <= MAX_SHARDS:
        raise argparse.ArgumentTypeError(f"must be a whole number from 1 to {MAX_SHARDS}, got {text!r}")
    return int(text)


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--root", default="results/nightly", type=Path, help="folder of the dated nights")
    p.add_argument("--date", default="", type=_date, help="this night's folder name (default: today, UTC)")


def _run_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--backends", default=",".join(NIGHTLY_BACKENDS),
                   help=f"comma-separated (default {','.join(NIGHTLY_BACKENDS)})")
    p.add_argument("--filter", action="append", default=[], metavar="REGEX",
                   help="only models matching REGEX (runner.py -k; repeatable)")
    p.add_argument("runner_args", nargs="*", help="extra runner.py flags, after --")


def _parser(step: str | None) -> argparse.ArgumentParser:
    prog = f"{PROG} {step}" if step else PROG
    p = Parser(prog=prog, description=__doc__.splitlines()[0])
    if step == "light-requirements":
        return p
    if step == "plan":
        p.add_argument("--shards", type=_shards, default=4, help="number of shard jobs")
        p.add_argument("--date", default="", type=_date, help="the night (default: today, UTC)")
        return p
    _common(p)
    if step in (None, "shard"):
        _run_flags(p)
    if step == "shard":
        p.add_argument("--shards", type=_shards, help="number of shards (default: from the environment)")
        p.add_argument("--shard", type=int, help="this shard, 0-based (default: from the environment)")
    if step == "merge":
        p.add_argument("--shards", type=_shards, help="the shards the plan made (default: what the "
                                                      "shards' records say)")
    if step in (None, "gate"):
        from benchmarks.results import history
        from benchmarks.cli import compare as compare_cli

        p.add_argument("--baseline-nights", type=_nights, default=history.DEFAULT_NIGHTS, metavar="K",
                       help="judge against the paired ratios of the last K complete nights pooled "
                            f"(default {history.DEFAULT_NIGHTS}; 1: night to night)")
        p.add_argument("--pin", type=_date, metavar="DATE", help="judge against this complete night alone")
        p.add_argument("--previous", type=Path, metavar="CSV", help="judge against this run alone")
        p.add_argument("--no-confirm", dest="confirm", action="store_false",
                       help="fail on slower rows without measuring them again first")
        compare_cli.add_policy(p)
    if step in ("fetch-history", "publish"):
        p.add_argument("--branch", default=RESULTS_BRANCH, help=f"results branch (default {RESULTS_BRANCH})")
        p.add_argument("--remote", default="origin", help="git remote (default origin)")
    return p


# --------------------------------------------------------------------------
# Steps


def plan(args: argparse.Namespace) -> int:
    """The night and the shard matrix, as GitHub step-output lines."""
    print(f"date={args.date}")
    print(f"count={args.shards}")
    print(f"shards={json.dumps(list(range(args.shards)))}")
    return 0


def _check_runner_args(args: argparse.Namespace) -> None:
    clash = sorted(OWNED_FLAGS.intersection(a.split("=")[0] for a in args.runner_args))
    if clash:
        raise UsageError(f"the nightly job sets {', '.join(clash)} itself")


def _measure(args: argparse.Namespace, csv_path: Path, partition: tuple[int, int] | None = None) -> int:
    """The night's runner on its backends and selection into ``csv_path``;
    a rerun (a retried CI job) completes what is there."""
    from benchmarks import cli

    runner = _runner_record(args)
    return cli.run_benchmarks(runner["flags"], [runner["backends"]], filters=runner["filter"],
                              output=csv_path, partition=partition, resume=csv_path.exists())


def _runner_record(args: argparse.Namespace) -> dict:
    """The night's runner settings as night.json keeps them: a confirmation
    re-run repeats ``flags`` for one model (``benchmarks.results.gate``)."""
    return {"flags": [*NIGHT_FLAGS, *args.runner_args], "backends": args.backends, "filter": args.filter}


def planned_models(runner: dict, shards: int, shard: int) -> list[str] | None:
    """The models shard ``shard`` of ``shards`` runs with these settings
    (the runner's own selection); None when they cannot be worked out here."""
    from benchmarks import cli

    try:
        return cli.planned_models(runner["flags"], [runner["backends"]], filters=runner["filter"],
                                  partition=(shard, shards))
    except (UsageError, ImportError, OSError):
        return None


def remeasure(night, keys: Sequence, out: Path) -> str:
    """The gate's confirmation re-run: the experiments ``keys`` measured
    again into ``out``, a model at a time, with the settings the night's
    ``night.json`` records (its runner flags; ``--only`` the model, not the
    night's filters); "" once measured, else why not."""
    from benchmarks import cli
    from benchmarks.results import history

    if not night.runner:
        return f"no re-run: {night.folder / history.NIGHT_FILE} does not record the runner's settings"
    by_model: dict[str, list[str]] = {}
    for key in keys:
        by_model.setdefault(key.name, [])
        if key.backend not in by_model[key.name]:
            by_model[key.name].append(key.backend)
    for index, (model, backends) in enumerate(by_model.items()):
        print(f"nightly gate: measuring {model} ({', '.join(backends)}) again", file=sys.stderr)
        code = cli.run_benchmarks(night.runner.get("flags", []), backends, only=[model], output=out,
                                  overwrite=index == 0, resume=index > 0)
        if code != 0:
            return f"the re-run of {model} exited with status {code}"
    return ""


def _shard_record(args: argparse.Namespace, shards: int, shard: int) -> dict:
    """What a shard is to run, before it runs (``finished: false`` until it has)."""
    runner = _runner_record(args)
    return {"shard": shard, "shards": shards, "runner": runner,
            "models": planned_models(runner, shards, shard) or [], "finished": False}


def shard_from_env(env: dict[str, str]) -> tuple[int | None, int | None]:
    """(index, count) from the first job runner's variables that give an
    index (see the module's docstring); (None, None) when none does."""
    for index_var, count_var in SHARD_VARIABLES:
        index = env.get(index_var, "").strip()
        if not index:
            continue
        count = env.get(count_var, "").strip()
        try:
            position = int(index)
            if index_var == "SLURM_ARRAY_TASK_ID":
                low, step = int(env.get("SLURM_ARRAY_TASK_MIN") or 0), int(env.get("SLURM_ARRAY_TASK_STEP") or 1)
                if (position - low) % step:
                    raise ValueError
                position = (position - low) // step
        except ValueError:
            raise UsageError(f"{index_var}={index!r} does not name a shard") from None
        return position, _count(count_var, env)
    for _, count_var in SHARD_VARIABLES:  # a count without an index (the index given as a flag)
        if env.get(count_var, "").strip():
            return None, _count(count_var, env)
    return None, None


def _count(variable: str, env: dict[str, str]) -> int | None:
    text = env.get(variable, "").strip()
    try:
        return _shards(text) if text else None
    except argparse.ArgumentTypeError as err:
        raise UsageError(f"{variable}: {err}") from None


def _place(args: argparse.Namespace) -> tuple[int, int]:
    index, count = shard_from_env(dict(os.environ))
    shard_, shards = (args.shard if args.shard is not None else index,
                      args.shards if args.shards is not None else count)
    if shards is None:
        raise UsageError("--shards is needed: give it, or set NIGHTLY_SHARDS (SLURM_ARRAY_TASK_COUNT "
                         "in a Slurm array, JOB_COMPLETIONS in a Kubernetes Indexed Job)")
    if shard_ is None:
        raise UsageError("--shard is needed: give it, or set NIGHTLY_SHARD (a Slurm array and a "
                         "Kubernetes Indexed Job set theirs)")
    return shard_, shards


def shard(args: argparse.Namespace) -> int:
    """Shard ``--shard`` of ``--shards`` into ROOT/D/shards/shard-I.csv, and
    its record shard-I.json (a job killed on the way leaves ``finished: false``)."""
    args.shard, args.shards = _place(args)
    if not 0 <= args.shard < args.shards:
        raise UsageError(f"--shard must be in [0, {args.shards - 1}], got {args.shard}")
    csv_path = shard_csv(args.root, args.date, args.shard)
    _check_runner_args(args)
    from benchmarks.results import history

    meta, record = history.shard_meta_path(csv_path.parent, args.shard), _shard_record(args, args.shards, args.shard)
    history.write_json(meta, record)
    code = _measure(args, csv_path, (args.shard, args.shards))
    history.write_json(meta, {**record, "finished": code == 0, "exit_code": code})
    return code


def merge(args: argparse.Namespace) -> int:
    """Join the night's shards into its performance.csv (replacing an earlier merge)."""
    # Only the shards' result CSVs: other CSVs beside them (graph breaks) are theirs to merge.
    shards = sorted(p for p in night_dir(args.root, args.date).glob(f"{SHARDS_DIR}/shard-*.csv")
                    if SHARD_NAME.match(p.name))
    if not shards:
        raise UsageError(f"no shards under {night_dir(args.root, args.date) / SHARDS_DIR}")
    from benchmarks.results import merge as merge_mod

    out = night_dir(args.root, args.date) / RESULT
    print(f"nightly: merging {len(shards)} shard(s) into {out}", file=sys.stderr)
    code = merge_mod.main([str(out), *map(str, shards), "--overwrite"])
    if code == 0:
        record_ci_run(night_dir(args.root, args.date), os.environ)
        merged = [int(p.stem.split("-")[1]) for p in shards]
        _record_night(args.root, args.date, history_records(args.root, args.date), merged, args.shards)
    return code


def ci_run(env: Mapping[str, str]) -> dict[str, str]:
    """The CI run this job belongs to, from GitHub Actions' variables: its
    URL and the repository's (the dashboard links both); empty elsewhere."""
    server, repository, run = (env.get(v, "").strip() for v in
                               ("GITHUB_SERVER_URL", "GITHUB_REPOSITORY", "GITHUB_RUN_ID"))
    if not (server and repository and run):
        return {}
    repository_url = f"{server.rstrip('/')}/{repository}"
    return {"run_url": f"{repository_url}/actions/runs/{run}", "repository_url": repository_url}


def record_ci_run(folder: Path, env: Mapping[str, str]) -> None:
    """Add the CI run (``ci_run``) to the night's metadata, ``night.json``."""
    found = ci_run(env)
    if not found:
        return
    path = folder / NIGHT_META
    try:
        meta = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    except ValueError:
        raise UsageError(f"{path}: not JSON") from None
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps({**meta, **found}, indent=1) + "\n", encoding="utf-8")
    tmp.replace(path)


def history_records(root: Path, date: str) -> dict[int, dict]:
    from benchmarks.results import history

    return history.shard_records(night_dir(root, date) / SHARDS_DIR)


def _record_night(root: Path, date: str, records: dict[int, dict], merged: list[int],
                  expected: int | None) -> None:
    """Write the night's night.json; say loudly when the night is partial."""
    from benchmarks.results import history, store

    rows = store.read_rows(night_dir(root, date) / RESULT)
    count = expected or next((r["shards"] for r in records.values() if isinstance(r.get("shards"), int)), None)
    runner = next((r["runner"] for r in records.values() if isinstance(r.get("runner"), dict)), None)
    lost = [i for i in range(count or 0) if i not in merged]
    planned = {i: planned_models(runner, count, i) or [] for i in lost} if runner and count else {}
    record = history.night_record(date, records, merged, set(rows["name"].dropna()), expected, planned)
    history.update_json(night_dir(root, date) / history.NIGHT_FILE, record)
    if record["partial"]:
        print(f"nightly: PARTIAL NIGHT {date}: {record['partial']}; it will never be a baseline",
              file=sys.stderr)


def gate(args: argparse.Namespace) -> int:
    """Judge the night (``benchmarks.results.gate``): against ``--previous``, a
    ``--pin``-ned night or the last ``--baseline-nights`` complete nights."""
    from benchmarks.results import gate as gating
    from benchmarks.cli import compare as compare_cli

    compare_cli.check_policy(args)
    policy = gating.Policy(args.threshold, args.alpha, args.min_samples, args.latency_criterion,
                           args.allow_removed, args.fail_on_inconclusive)
    return gating.run(args.root, args.date, policy, window=args.baseline_nights, pin=args.pin,
                      previous=args.previous,
                      remeasure=remeasure if args.confirm else None)


def run_all(args: argparse.Namespace) -> int:
    """The whole night on this machine (recorded in night.json as one
    shard), then the gate."""
    from benchmarks.results import history

    folder = night_dir(args.root, args.date)
    _check_runner_args(args)
    record = _shard_record(args, 1, 0)
    # Partial until the runner has finished: a night killed on the way is never a baseline.
    history.update_json(folder / history.NIGHT_FILE, history.night_record(args.date, {0: record}, [0], set(), 1))
    code = _measure(args, folder / RESULT)
    if (folder / RESULT).is_file():
        _record_night(args.root, args.date, {0: {**record, "finished": code == 0, "exit_code": code}}, [0], 1)
        record_ci_run(folder, os.environ)
    return code if code != 0 else gate(args)


def summary(args: argparse.Namespace) -> int:
    """Why a night has no judgement, on the run's first page: appended to
    the file ``$GITHUB_STEP_SUMMARY`` names (the gate puts its own report
    there when it judges), or printed with the gate's report without it.
    Standard library only."""
    tonight = night_dir(args.root, args.date)
    compared = tonight / "compare.md"
    target = os.environ.get("GITHUB_STEP_SUMMARY")
    if compared.is_file():
        if target:
            return 0  # the gate wrote its report there
        text = compared.read_text()
    elif not (tonight / RESULT).is_file():
        text = f"# Nightly {args.date}: no results\n\nThe shards were not merged: see the merge step's log.\n"
    else:
        text = f"# Nightly {args.date}: not judged\n\nThe gate wrote no report: see its log.\n"
    if len(text.encode()) > SUMMARY_LIMIT:
        cut = text.encode()[:SUMMARY_LIMIT - 200].decode(errors="ignore")
        text = f"{cut}\n\n(cut at GitHub's summary limit: the whole report is compare.md in the run's artifacts)\n"
    if target:
        with open(target, "a", encoding="utf-8") as out:
            out.write(text)
    else:
        sys.stdout.write(text)
    return 0


def light_requirements(args: argparse.Namespace) -> int:
    """The project's requirements (setup.cfg) less the heavy ones, one a line:
    what ``make install-light`` installs for merge, gate and the dashboard."""
    for requirement in _light_requirements(PROJECT_ROOT / "setup.cfg"):
        print(requirement)
    return 0


def _light_requirements(setup_cfg: Path) -> list[str]:
    config = configparser.ConfigParser()
    config.read(setup_cfg)
    wanted = [line.strip() for line in config["options"]["install_requires"].splitlines() if line.strip()]
    return [r for r in wanted if re.split(r"[<>=!~\[; ]", r, maxsplit=1)[0].lower() not in HEAVY]


# --------------------------------------------------------------------------
# The results branch


def git_env(env: dict[str, str]) -> dict[str, str]:
    """``env`` plus, when it holds ``NIGHTLY_GIT_TOKEN``, that token as the
    authorization header for the git server (``GITHUB_SERVER_URL``), given to
    git as command-line configuration through ``GIT_CONFIG_COUNT``: never on
    a command line or in a config file."""
    token = env.get("NIGHTLY_GIT_TOKEN", "")
    if not token:
        return env
    server = env.get("GITHUB_SERVER_URL", "https://github.com").rstrip("/")
    count = int(env.get("GIT_CONFIG_COUNT") or 0)
    basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
    return {**env, "GIT_CONFIG_COUNT": str(count + 1),
            f"GIT_CONFIG_KEY_{count}": f"http.{server}/.extraheader",
            f"GIT_CONFIG_VALUE_{count}": f"AUTHORIZATION: basic {basic}"}


def _git(*args: str, cwd: Path | None = None, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True,
                          env=git_env(dict(os.environ)))
    if check and done.returncode != 0:
        detail = (done.stderr.strip() or done.stdout.strip()).splitlines()
        raise UsageError(f"git {' '.join(args)}: {detail[-1] if detail else f'exit {done.returncode}'}")
    return done


def fetch_history(args: argparse.Namespace) -> int:
    """Check the results branch out as ROOT (a worktree of this repository);
    on the very first night, when the branch does not exist yet, ROOT
    becomes an empty worktree that ``publish`` turns into the branch."""
    root = args.root
    if root.exists() and any(root.iterdir()):
        raise UsageError(f"{root} exists and is not empty; fetch the history into a fresh folder")
    from benchmarks.results import history

    found = _git("fetch", "--depth=1", args.remote, f"refs/heads/{args.branch}", check=False)
    if found.returncode == 0:
        _git("worktree", "add", "--detach", str(root), "FETCH_HEAD")
        history.write_state(root, branch=args.branch, remote=args.remote, exists=True)
        nights = sorted(p.name for p in root.iterdir() if DATE.match(p.name))
        print(f"nightly: {len(nights)} earlier night(s) from {args.remote}/{args.branch} in {root}",
              file=sys.stderr)
        return 0
    if _git("ls-remote", "--exit-code", "--heads", args.remote, args.branch, check=False).returncode != 2:
        # The gate reads this: a night judged without the history it exists
        # to be judged against must fail, not pass as a first night.
        error = f"cannot fetch {args.branch} from {args.remote}: {found.stderr.strip()}"
        history.write_state(root, branch=args.branch, remote=args.remote, exists=True,
                            error=(error.splitlines() or [error])[-1])
        raise UsageError(error)
    _git("worktree", "add", "--detach", str(root), "HEAD")
    _git("checkout", "--orphan", f"{args.branch}-new", cwd=root)
    _git("rm", "-r", "-q", "--cached", ".", cwd=root, check=False)
    for path in root.iterdir():
        if path.name != ".git":
            _remove(path)
    history.write_state(root, branch=args.branch, remote=args.remote, exists=False)
    print(f"nightly: {args.remote} has no branch {args.branch} yet; {root} starts it", file=sys.stderr)
    return 0


def _remove(path: Path) -> None:
    import shutil

    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()


def publish(args: argparse.Namespace) -> int:
    """Commit the night's merged files (not its shards or logs) to the
    results branch and push them."""
    tonight = night_dir(args.root, args.date)
    files = [f"{args.date}/{name}" for name in PUBLISHED if (tonight / name).is_file()]
    if RESULT not in {Path(f).name for f in files}:
        raise UsageError(f"{tonight / RESULT} not found: nothing to publish")
    _git("add", "--", *files, cwd=args.root)
    if _git("diff", "--cached", "--quiet", cwd=args.root, check=False).returncode == 0:
        print(f"nightly: {args.date} is already on {args.branch} as it is; nothing to publish",
              file=sys.stderr)
        return 0
    _git("-c", "user.name=nightly", "-c", "user.email=nightly@localhost",
         "commit", "-q", "-m", f"nightly {args.date}", cwd=args.root)
    _git("push", "-q", args.remote, f"HEAD:refs/heads/{args.branch}", cwd=args.root)
    print(f"nightly: pushed {len(files)} file(s) of {args.date} to {args.remote}/{args.branch}",
          file=sys.stderr)
    return 0


STEPS = {"plan": plan, "shard": shard, "merge": merge, "gate": gate, "summary": summary,
         "fetch-history": fetch_history, "publish": publish, "light-requirements": light_requirements}


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    step = argv[0] if argv and argv[0] in STEPS else None
    rest = argv[1:] if step else argv

    def body() -> int:
        args = _parser(step).parse_args(rest)
        return STEPS[step](args) if step else run_all(args)

    return guarded(f"{PROG}{' ' + step if step else ''}", body)

if __name__ == "__main__":
    sys.exit(main())
