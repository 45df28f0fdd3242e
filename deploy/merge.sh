#!/bin/bash
# The end of a night on a cluster: merge the shards, gate the night, draw the
# site, in that order; its exit status is the state the gate recorded (0 pass,
# 1 a regression, a lost shard or a new failure, 3 unjudged, 4 suspected;
# 2 bad input), so the job that runs it fails in the scheduler's accounting
# whenever the night is not a clean pass. A failed
# gate still draws the site; a failed merge stops here (nothing to gate).
#
# The night comes from the environment, fixed once by whoever started it
# (deploy/slurm/submit.sh, deploy/kubernetes/night.sh): NIGHTLY_DATE and
# NIGHTLY_SHARDS; NIGHTLY_ROOT (default results/nightly), SITE_DIR (default
# results/site), VENV (default .venv) and GATE_ARGS (extra gate flags) as the
# Makefile reads them. Run from the repository's root; installs nothing.
set -euo pipefail

say() { echo "deploy/merge.sh: $*" >&2; }
for variable in NIGHTLY_DATE NIGHTLY_SHARDS; do
    if [ -z "${!variable:-}" ]; then
        say "$variable is not set: the night's date and shard count are fixed when it is submitted"
        exit 2
    fi
done
venv=${VENV:-.venv}
export NIGHTLY_ROOT=${NIGHTLY_ROOT:-results/nightly}

# -o: the venv is installed before the night starts, never from here.
make -s -o "$venv/.installed" nightly-merge
read -r -a gate_args <<< "${GATE_ARGS:-}"
status=0
"$venv/bin/python" -m benchmarks.nightly gate --root "$NIGHTLY_ROOT" --date "$NIGHTLY_DATE" \
    "${gate_args[@]}" || status=$?
make -s -o "$venv/.installed" dashboard
case $status in
    2|130|143) ;;  # bad input, or the gate was interrupted: its own status
    *)  # only a pass is green: the status of the state the gate recorded (0, 1, 3 unjudged, 4 suspected)
        status=0
        "$venv/bin/python" -m benchmarks.nightly state --root "$NIGHTLY_ROOT" --date "$NIGHTLY_DATE" \
            > /dev/null || status=$? ;;
esac
say "night $NIGHTLY_DATE: exit status $status"
exit "$status"
