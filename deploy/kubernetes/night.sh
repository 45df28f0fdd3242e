#!/bin/bash
# The night's driver on Kubernetes: the one pod of the Job the CronJob
# (cronjob.yaml) creates each night, in the nightly's image, as the
# ServiceAccount of rbac.yaml.
#
# 1. Fixes the night once: its plan (`python -m benchmarks.nightly plan`: the
#    date, today in UTC, and NIGHTLY_SHARDS, default 4) in
#    NIGHTLY_ROOT/DATE/plan.txt; every Job of the night gets its date and shard
#    count from here, so a merge after midnight merges the night the shards ran.
# 2. Creates the shards' Indexed Job from shards-job.yaml, named
#    JOB_NAME-shards (JOB_NAME: this pod's Job, unique per scheduled time), and
#    waits until it is Complete or Failed: a lost shard does not stop the night.
# 3. Creates the merge Job from merge-job.yaml (JOB_NAME-merge), waits for it,
#    and ends as it did: 0 when the gate passed, 1 when the night is red,
#    partial, or the merge failed (`kubectl logs job/JOB_NAME-merge` says which).
#
# The night's settings (NIGHTLY_FILTER, NIGHTLY_BACKENDS, NIGHTLY_REPEAT,
# NIGHTLY_SUITE, NIGHTLY_ARGS; GATE_ARGS for the merge) are passed on from this
# pod's environment. POLL_SECONDS (default 60) paces the waiting.
set -euo pipefail

say() { echo "deploy/kubernetes/night.sh: $*" >&2; }
if [ -z "${JOB_NAME:-}" ]; then
    say "JOB_NAME is not set: cronjob.yaml gives it this pod's Job's name"
    exit 2
fi
here=deploy/kubernetes
root=${NIGHTLY_ROOT:-/results/nightly}
python=${VENV:-.venv}/bin/python

date=$(date -u +%F)
mkdir -p "$root/$date"
"$python" -m benchmarks.nightly plan --shards "${NIGHTLY_SHARDS:-4}" --date "$date" \
    --repeat "${NIGHTLY_REPEAT:-}" > "$root/$date/plan.txt"
count=$(sed -n 's/^count=//p' "$root/$date/plan.txt")
say "night $date: $count shards"

# patch NAME CONTAINER [VARIABLE...]: a strategic merge patch naming the Job,
# sizing it to the plan (shards only) and adding the night's variables that are
# set to the container's environment.
patch() {
    NIGHT_DATE=$date NIGHT_COUNT=$count "$python" - "$@" <<'PY'
import json, os, sys
name, container, *variables = sys.argv[1:]
env = {"NIGHTLY_DATE": os.environ["NIGHT_DATE"], "NIGHTLY_SHARDS": os.environ["NIGHT_COUNT"]}
env.update({v: os.environ[v] for v in variables if os.environ.get(v)})
spec = {"template": {"spec": {"containers": [
    {"name": container, "env": [{"name": k, "value": v} for k, v in env.items()]}]}}}
if container == "shard":
    spec.update(completions=int(env["NIGHTLY_SHARDS"]), parallelism=int(env["NIGHTLY_SHARDS"]))
print(json.dumps({"metadata": {"name": name, "labels": {"nightly-date": env["NIGHTLY_DATE"]}}, "spec": spec}))
PY
}

# run_job FILE NAME CONTAINER [VARIABLE...]: create the Job, then print how it
# ended (Complete or Failed) once it has.
run_job() {
    local file=$1 name=$2 conditions
    shift 2
    kubectl patch --local -f "$file" --type=strategic -p "$(patch "$name" "$@")" -o json \
        | kubectl create -f - >&2
    while :; do
        conditions=$(kubectl get "job/$name" \
            -o jsonpath='{range .status.conditions[?(@.status=="True")]}{.type}{" "}{end}')
        case " $conditions " in
            *" Complete "*) echo Complete; return ;;
            *" Failed "*) echo Failed; return ;;
        esac
        sleep "${POLL_SECONDS:-60}"
    done
}

settings=(NIGHTLY_FILTER NIGHTLY_BACKENDS NIGHTLY_REPEAT NIGHTLY_SUITE NIGHTLY_ARGS)
shards=$(run_job "$here/shards-job.yaml" "$JOB_NAME-shards" shard "${settings[@]}")
say "shards: $shards (the merge judges a night with failed shards as partial)"
merge=$(run_job "$here/merge-job.yaml" "$JOB_NAME-merge" merge GATE_ARGS)
say "merge: $merge"
[ "$merge" = Complete ]
