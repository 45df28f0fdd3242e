"""The nightly job, in one go or step by step on several machines.

In one go (``make nightly``)::

    python -m benchmarks.nightly [--root results/nightly] [--date D] [--backends B] [-- RUNNER FLAGS]

runs every backend on the full suite into ``ROOT/<date>/performance.csv``
(raw samples, markdown report and plot beside it, ``night.json`` saying
whether it finished), then gates it: against the paired ratios of the last
7 complete nights under ROOT pooled, slower rows measured again before they
fail it, writing ``compare.md``, ``compare.json`` and ``compare.png`` beside
it.  Exit status: the gate's (0 pass -- also on the first night, which says
it had no baseline --, 1 fail, 2 bad input).  Rerunning the same date
completes that night (``--resume``) instead of starting over.

Step by step, as the CI workflow (``.github/workflows/nightly.yml``), a
Slurm array (``ci/slurm/``) or a Kubernetes Indexed Job (``ci/k8s/``) run
it through ``make nightly-*`` targets::

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
    notify [--label L]           a red night: open a GitHub issue, or comment on the open one
    light-requirements           the packages merge, gate and the dashboard need (no torch)

The modules, one concern each:

* ``night``: a night on disk -- its files' names, ``night.json``, ``Night``
  (standard library only; the dashboard reads nights through it too);
* ``cli``: the command line, importing only the step that runs;
* ``plan``: the shard matrix and the light install's requirements;
* ``shard``: the night's runner settings, where a shard finds its place,
  one shard's run;
* ``merge``: the shards into one night, and what ``night.json`` says of it;
* ``history``: the baseline a night is judged against;
* ``gate``: the judgement, with confirmation re-runs;
* ``summary``: the run's first page when the gate wrote none;
* ``publish``: the results branch (fetch-history, publish);
* ``notify``: a red night's GitHub issue and annotations (standard library only);
* ``whole``: the whole night on one machine.

The previous nights live on a git branch (default ``nightly-results``)
holding ``<date>/performance.{csv,jsonl,md,png}``, ``<date>/night.json`` and
``<date>/compare.*``: the gate needs the previous nights and the dashboard
needs them all, and workflow artifacts expire, so a branch is the durable
home.
"""
from benchmarks.nightly.cli import main

__all__ = ["main"]
