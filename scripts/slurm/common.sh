# shellcheck shell=bash disable=SC2034  # sourced: the variables are used by start.sh and stop.sh
# Shared settings for start.sh / stop.sh (sourced, not run). Every knob is an environment variable with the
# GANGPLANE_SLURM_ prefix: Slurm's own clients read SLURM_* variables (sbatch honours SLURM_NNODES, ...), so
# the scripts must never set those.
#
# GANGPLANE_SLURM_STATE_DIR   where everything lives (config, munge key and socket, spool, logs, pid files);
#                             the first positional argument overrides it. Default /tmp/gangplane-slurm.
# GANGPLANE_SLURM_NODES       number of fake nodes (default 4), named ${PREFIX}1..${PREFIX}N
# GANGPLANE_SLURM_NODE_PREFIX node name prefix (default n)
# GANGPLANE_SLURM_CPUS        CPUs per node (default 4; may exceed the real cores)
# GANGPLANE_SLURM_MEMORY_MB   RealMemory per node in MB (default 16384; checked at submit, not enforced)
# GANGPLANE_SLURM_GPUS        fake GPUs per node (default 2; 0 = no GRES)
# GANGPLANE_SLURM_PARTITION   the one partition, holding every node (default slurm-bridge, slurm-bridge's
#                             Helm default)
# GANGPLANE_SLURM_CTLD_PORT   slurmctld port (default 6817)
# GANGPLANE_SLURM_SLURMD_PORT node i listens on this + i (default 17000)
# GANGPLANE_SLURM_TIMEOUT     seconds to wait for the controller and for the nodes to turn idle (default 60)

slurm_settings() {
    STATE_DIR="${1:-${GANGPLANE_SLURM_STATE_DIR:-/tmp/gangplane-slurm}}"
    STATE_DIR="$(mkdir -p "$STATE_DIR" && cd "$STATE_DIR" && pwd -P)"
    NODES="${GANGPLANE_SLURM_NODES:-4}"
    PREFIX="${GANGPLANE_SLURM_NODE_PREFIX:-n}"
    CPUS="${GANGPLANE_SLURM_CPUS:-4}"
    MEMORY_MB="${GANGPLANE_SLURM_MEMORY_MB:-16384}"
    GPUS="${GANGPLANE_SLURM_GPUS:-2}"
    PARTITION="${GANGPLANE_SLURM_PARTITION:-slurm-bridge}"
    CTLD_PORT="${GANGPLANE_SLURM_CTLD_PORT:-6817}"
    SLURMD_PORT="${GANGPLANE_SLURM_SLURMD_PORT:-17000}"
    TIMEOUT="${GANGPLANE_SLURM_TIMEOUT:-60}"
    CONF="$STATE_DIR/etc/slurm.conf"
    MUNGE_DIR="$STATE_DIR/munge"
    MUNGE_SOCKET="$MUNGE_DIR/munge.socket"
    RUN_DIR="$STATE_DIR/run"
    LOG_DIR="$STATE_DIR/log"
    export SLURM_CONF="$CONF"
}

# Print the pid in pid file $1 if that process is alive and its command line contains $2 (pids wrap).
live_pid() {
    local pid
    [ -s "$1" ] || return 1
    pid="$(tr -dc 0-9 <"$1")"
    [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] || return 1
    tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -- "$2" || return 1
    echo "$pid"
}

# Wait until command "$@" succeeds, polling every 0.1 s for at most $WAIT_SECONDS.
wait_for() {
    local deadline=$((SECONDS + WAIT_SECONDS))
    until "$@" >/dev/null 2>&1; do
        [ "$SECONDS" -lt "$deadline" ] || return 1
        sleep 0.1
    done
}
