#!/usr/bin/env bash
# Start a real N-node Slurm cluster on this host: one munged, one slurmctld and N `slurmd -N <node>` daemons,
# each node with its own port and fake GPUs. Needs root and the packages from install.sh.
#
# Usage: scripts/slurm/start.sh [STATE_DIR]      (settings: see common.sh; defaults 4 nodes x 4 CPUs x 2 GPUs)
# Then:  export SLURM_CONF=STATE_DIR/etc/slurm.conf   (also written to STATE_DIR/env) and use sinfo, sbatch, ...
#
# Everything lives under STATE_DIR: slurm.conf and gres.conf, a private munge key, socket and daemon, spool
# directories, logs, pid files and the fake GPU device nodes. Nothing is written to /etc or /run; the only
# shared resources are the TCP ports (slurmctld 6817, slurmd 17001..) on 127.0.0.1.
# Job state is wiped on every start (job ids restart at 1) unless GANGPLANE_SLURM_KEEP_STATE=1.
# Ready means: `scontrol ping` reports UP and `sinfo` shows all N nodes idle; otherwise exit 1 with log tails.
# Recipe and pitfalls: reference slurm.md §C (the daemons fork and exit 0 even when they die at once, GRES
# files must be character devices, SlurmdParameters=config_overrides, EnforcePartLimits=ALL).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source-path=SCRIPTDIR source=common.sh
source "$HERE/common.sh"
slurm_settings "$@"
WAIT_SECONDS="$TIMEOUT"
started_at=$(date +%s.%N)

fail() {
    echo "slurm: $*" >&2
    local log
    for log in "$LOG_DIR"/*.log; do
        [ -s "$log" ] && { echo "--- tail of $log" >&2; tail -n 15 "$log" >&2; }
    done
    exit 1
}

[ "$(id -u)" -eq 0 ] || { echo "slurm: start.sh must run as root" >&2; exit 1; }
command -v slurmctld >/dev/null || { echo "slurm: not installed; run scripts/slurm/install.sh" >&2; exit 1; }
# slurmd's step sockets live at spool/slurmd/<node>/<node>_<job>.<step> (the batch step is 4294967291). A Unix
# socket path has at most 107 bytes; past that every job fails while the daemons look healthy. Refuse up front.
step_socket="$STATE_DIR/spool/slurmd/${PREFIX}99/${PREFIX}99_9999999.4294967291"
if [ "${#step_socket}" -gt 107 ]; then
    echo "slurm: STATE_DIR is too long for Unix socket paths (${#step_socket} > 107 bytes): $STATE_DIR" >&2
    exit 1
fi
if live_pid "$RUN_DIR/slurmctld.pid" slurmctld >/dev/null; then
    echo "slurm: already running in $STATE_DIR; run scripts/slurm/stop.sh first" >&2
    exit 1
fi

prepare_dirs() {
    mkdir -p "$STATE_DIR/etc" "$RUN_DIR" "$LOG_DIR" "$STATE_DIR/spool/slurmctld" "$STATE_DIR/dev" "$MUNGE_DIR"
    chmod 755 "$STATE_DIR"
    if [ "${GANGPLANE_SLURM_KEEP_STATE:-0}" != 1 ]; then
        rm -rf "$STATE_DIR/spool/slurmctld/"* "$STATE_DIR/spool/slurmd" "${LOG_DIR:?}/"*
    fi
    rm -f "$RUN_DIR/"*.pid
}

start_munge() {
    # A private munged (own key and socket) run as root, like every daemon here (SlurmUser=root). --force
    # turns munged's "socket path must be world-executable" check into a warning, so STATE_DIR may sit
    # under a private parent such as pytest's 0700 temp root (then only root can submit jobs).
    local key="$MUNGE_DIR/munge.key"
    if [ ! -s "$key" ]; then
        dd if=/dev/urandom of="$key" bs=1024 count=1 status=none
    fi
    chmod 755 "$MUNGE_DIR"
    chmod 400 "$key"
    if ! live_pid "$MUNGE_DIR/munged.pid" munged >/dev/null; then
        rm -f "$MUNGE_SOCKET" "$MUNGE_SOCKET.lock"
        /usr/sbin/munged --force --socket="$MUNGE_SOCKET" --key-file="$key" --pid-file="$MUNGE_DIR/munged.pid" \
            --log-file="$MUNGE_DIR/munged.log" --seed-file="$MUNGE_DIR/munged.seed" </dev/null >/dev/null 2>&1 ||
            fail "munged did not start: $(tail -n 3 "$MUNGE_DIR/munged.log" 2>/dev/null)"
    fi
    wait_for munge_works || fail "munge -n | unmunge fails on $MUNGE_SOCKET"
}

munge_works() { munge -S "$MUNGE_SOCKET" -n | unmunge -S "$MUNGE_SOCKET"; }

make_fake_gpus() {
    local gpu
    for ((gpu = 0; gpu < GPUS; gpu++)); do
        # A clone of /dev/null: slurmd accepts only character or block devices as GRES files.
        [ -c "$STATE_DIR/dev/gpu$gpu" ] || mknod -m 666 "$STATE_DIR/dev/gpu$gpu" c 1 3
    done
}

write_config() {
    local nodes="${PREFIX}[1-$NODES]" gres="" ports="$((SLURMD_PORT + 1))-$((SLURMD_PORT + NODES))"
    [ "$NODES" -gt 1 ] || { nodes="${PREFIX}1"; ports="$((SLURMD_PORT + 1))"; }
    [ "$GPUS" -gt 0 ] && gres=" Gres=gpu:$GPUS"
    sed -e "s|@STATE_DIR@|$STATE_DIR|g" -e "s|@CTLD_PORT@|$CTLD_PORT|g" -e "s|@MUNGE_SOCKET@|$MUNGE_SOCKET|g" \
        "$HERE/slurm.conf.in" >"$CONF"
    {
        [ "$GPUS" -gt 0 ] && echo "GresTypes=gpu"
        echo "NodeName=$nodes NodeHostname=localhost NodeAddr=127.0.0.1 Port=$ports CPUs=$CPUS" \
            "RealMemory=$MEMORY_MB$gres State=UNKNOWN"
        echo "PartitionName=$PARTITION Nodes=$nodes Default=YES MaxTime=INFINITE State=UP"
    } >>"$CONF"
    : >"$STATE_DIR/etc/plugstack.conf" # no SPANK plugins (the Debian default pulls in /etc/slurm's)
    echo "AutoDetect=off" >"$STATE_DIR/etc/gres.conf"
    if [ "$GPUS" -gt 0 ]; then
        echo "NodeName=$nodes Name=gpu File=$STATE_DIR/dev/gpu[0-$((GPUS - 1))]" >>"$STATE_DIR/etc/gres.conf"
    fi
    echo "export SLURM_CONF=$CONF" >"$STATE_DIR/env"
}

controller_up() { scontrol ping | grep -q 'is UP'; }

idle_count() { sinfo -h -t idle -o %D | awk '{ n += $1 } END { print n + 0 }'; }

all_idle() { [ "$(idle_count)" -eq "$NODES" ]; }

start_daemons() {
    slurmctld -f "$CONF" </dev/null >>"$LOG_DIR/slurmctld.out" 2>&1 || fail "slurmctld exited with $?"
    wait_for controller_up || fail "slurmctld is not UP after ${TIMEOUT}s"
    local i
    for ((i = 1; i <= NODES; i++)); do
        mkdir -p "$STATE_DIR/spool/slurmd/$PREFIX$i"
        slurmd -f "$CONF" -N "$PREFIX$i" </dev/null >>"$LOG_DIR/slurmd.out" 2>&1 || fail "slurmd $PREFIX$i exited"
    done
    wait_for all_idle || fail "only $(idle_count) of $NODES nodes idle after ${TIMEOUT}s"
}

prepare_dirs
start_munge
make_fake_gpus
write_config
start_daemons
sinfo -o '%P %a %D %t %N %c %m %G'
elapsed=$(awk -v a="$started_at" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
echo "slurm: $NODES nodes ready in ${elapsed}s; export SLURM_CONF=$CONF"
