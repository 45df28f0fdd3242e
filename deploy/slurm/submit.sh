#!/bin/bash
# One night of the nightly on a Slurm cluster: one install job, then the shard
# array, then the merge once every task has ended, however it ended.
#
#   deploy/slurm/submit.sh [--shards N] [--date YYYY-MM-DD] [--array INDICES]
#
# Run it on a login node, in a checkout every node sees (a shared filesystem):
# the venv (VENV, default .venv), the nights (NIGHTLY_ROOT, default
# results/nightly), the site (SITE_DIR, default results/site) and the jobs' logs
# (slurm/DATE/ beside NIGHTLY_ROOT: results/slurm/DATE/) live there. The night is fixed here, once: its plan
# (`python -m benchmarks.nightly plan`: the date, today in UTC unless --date,
# and the shard count, --shards or NIGHTLY_SHARDS, default 4) is written to
# NIGHTLY_ROOT/DATE/plan.txt, and every job of the night reads its date and
# shard count from that file, so a merge that starts after midnight merges the
# night the shards ran. Array task I runs shard I of the plan's count.
#
# A lost shard is run again by submitting the same night for its index alone:
#   deploy/slurm/submit.sh --date 2026-01-02 --array 2
# runs shard 2 of the plan's count (not 0 of 1), and the merge after it.
#
# The night's settings reach the jobs through the environment (--export=ALL):
# NIGHTLY_FILTER, NIGHTLY_BACKENDS, NIGHTLY_REPEAT, NIGHTLY_SUITE, NIGHTLY_ARGS,
# GATE_ARGS, TORCH_INDEX_URL (the install), and sbatch's own SBATCH_* (a
# partition, an account).
set -euo pipefail

usage="usage: deploy/slurm/submit.sh [--shards N] [--date YYYY-MM-DD] [--array INDICES]"
die() { echo "deploy/slurm/submit.sh: $*" >&2; exit 2; }

shards=${NIGHTLY_SHARDS:-} date="" array=""
while [ $# -gt 0 ]; do
    case $1 in
        -h|--help) echo "$usage"; exit 0 ;;
        --shards|--date|--array)
            [ $# -ge 2 ] || die "$1 needs a value ($usage)"
            declare "${1#--}=$2"; shift 2 ;;
        --shards=*|--date=*|--array=*)
            option=${1%%=*}; declare "${option#--}=${1#*=}"; shift ;;
        *) die "unknown argument '$1' ($usage)" ;;
    esac
done

cd "$(dirname "$0")/../.."  # the checkout: every job's SLURM_SUBMIT_DIR
root=${NIGHTLY_ROOT:-results/nightly}
case $root in /*) ;; *) root=$PWD/$root ;; esac
date=${date:-$(date -u +%F)}
case $date in
    [0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]) ;;
    *) die "--date must be YYYY-MM-DD, got '$date'" ;;
esac
plan=$root/$date/plan.txt

if [ -f "$plan" ]; then
    count=$(sed -n 's/^count=//p' "$plan")
    if [ -n "$shards" ] && [ "$shards" != "$count" ]; then
        die "the night $date was planned with $count shards, not $shards ($plan)"
    fi
else
    [ -z "$array" ] || die "no plan for the night $date ($plan): submit the whole night first"
    mkdir -p "$root/$date"
    # The plan (make nightly-plan's) checks the shard count and NIGHTLY_REPEAT.
    "${PYTHON:-python3}" -m benchmarks.nightly plan --shards "${shards:-4}" --date "$date" \
        --repeat "${NIGHTLY_REPEAT:-}" > "$plan.new" || { rm -f "$plan.new"; exit 2; }
    mv "$plan.new" "$plan"
    count=$(sed -n 's/^count=//p' "$plan")
fi
array=${array:-0-$((count - 1))}

logs=$(dirname "$root")/slurm/$date
mkdir -p "$logs"
export NIGHTLY_ROOT=$root NIGHTLY_PLAN=$plan
job() {  # sbatch --parsable prints "ID" or "ID;CLUSTER"
    local id
    id=$(sbatch --parsable --export=ALL "$@")
    echo "${id%%;*}"
}
install=$(job --output="$logs/%x-%j.out" deploy/slurm/install.sbatch)
tasks=$(job --array="$array" --dependency="afterok:$install" --kill-on-invalid-dep=yes \
    --output="$logs/%x-%A_%a.out" deploy/slurm/shard.sbatch)
merge=$(job --dependency="afterany:$tasks" --output="$logs/%x-%j.out" deploy/slurm/merge.sbatch)
echo "night $date ($count shards): install $install, shards $tasks (array $array), merge $merge"
echo "logs: $logs; the gate's status: sacct -j $merge"
