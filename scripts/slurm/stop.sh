#!/usr/bin/env bash
# Stop the cluster start.sh started in STATE_DIR: cancel its jobs, shut down slurmctld and every slurmd, then
# the private munged. Safe to run when nothing is running. Only processes named in STATE_DIR's pid files are
# signalled, and only after /proc/<pid>/cmdline confirms what they are (pids wrap).
#
# Usage: scripts/slurm/stop.sh [STATE_DIR] [--clean]     (--clean also removes STATE_DIR)
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source-path=SCRIPTDIR source=common.sh
source "$HERE/common.sh"
clean=0
args=()
for arg in "$@"; do
    if [ "$arg" = --clean ]; then clean=1; else args+=("$arg"); fi
done
slurm_settings "${args[@]}"
WAIT_SECONDS=30

no_active_jobs() { [ -z "$(squeue -h -t PD,R,S,CG,CF -o %i)" ]; }

cancel_jobs() {
    local jobs
    jobs="$(squeue -h -t PD,R,S,CG,CF -o %i 2>/dev/null || true)"
    [ -n "$jobs" ] || return 0
    # shellcheck disable=SC2086
    scancel $jobs || true
    wait_for no_active_jobs || echo "slurm: jobs still active after ${WAIT_SECONDS}s: $(squeue -h -o %i)" >&2
}

daemon_pids() {
    local file
    for file in "$RUN_DIR"/slurmctld.pid "$RUN_DIR"/slurmd-*.pid; do
        if [ -e "$file" ]; then live_pid "$file" slurm || true; fi
    done
}

none_alive() { [ -z "$(daemon_pids)" ]; }

stop_daemons() {
    local pids
    [ -z "$(daemon_pids)" ] && return 0
    pids="$(daemon_pids)"
    # shellcheck disable=SC2086
    kill -TERM $pids 2>/dev/null || true
    if ! wait_for none_alive; then
        echo "slurm: daemons survived SIGTERM, killing: $(daemon_pids | tr '\n' ' ')" >&2
        # shellcheck disable=SC2046
        kill -KILL $(daemon_pids) 2>/dev/null || true
    fi
}

munge_stopped() { ! live_pid "$MUNGE_DIR/munged.pid" munged; }

stop_munge() {
    local pid
    pid="$(live_pid "$MUNGE_DIR/munged.pid" munged)" || return 0
    kill -TERM "$pid" 2>/dev/null || true
    wait_for munge_stopped || kill -KILL "$pid" 2>/dev/null || true
}

if [ -f "$CONF" ] && live_pid "$RUN_DIR/slurmctld.pid" slurmctld >/dev/null; then
    cancel_jobs
    scontrol shutdown >/dev/null 2>&1 || true
fi
stop_daemons
rm -f "$RUN_DIR"/*.pid
stop_munge
if [ "$clean" = 1 ]; then
    rm -rf "$STATE_DIR"
fi
echo "slurm: stopped ($STATE_DIR)"
