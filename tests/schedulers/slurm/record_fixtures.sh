#!/usr/bin/env bash
# Re-record the Slurm command outputs the parser tests read, from a fresh local cluster (root; 1-2 min: the
# TIMEOUT job needs Slurm's one-minute time-limit granularity). Usage: tests/schedulers/slurm/record_fixtures.sh
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../../.." && pwd)"
OUT="$HERE/fixtures"
STATE="$(mktemp -d /tmp/gangplane-slurm-record.XXXXXX)"
export GANGPLANE_SLURM_CTLD_PORT=6917 GANGPLANE_SLURM_SLURMD_PORT=17100
trap '"$ROOT/scripts/slurm/stop.sh" "$STATE" --clean >/dev/null' EXIT
"$ROOT/scripts/slurm/start.sh" "$STATE" >/dev/null
export SLURM_CONF="$STATE/etc/slurm.conf"
hold() { sbatch --parsable --chdir=/tmp --output=/dev/null "$@" --wrap 'exec sleep infinity'; }

sinfo --json >"$OUT/sinfo.json"
hold -J ns/gone -N2 --exclusive --comment 'gangplane:ns/gone:uid-3' >/dev/null     # job 1: CANCELLED
sleep 0.5
scancel 1
sleep 1
hold -J timeout --time=1 -N1 --comment 'gangplane:ns/late:uid-t' >/dev/null       # job 2: TIMEOUT later
hold -J ns/train -N3 --exclusive --ntasks-per-node=1 --cpus-per-task=2 --mem=1024 --gres=gpu:1 \
    --comment 'gangplane:ns/train:uid-1' >/dev/null                                # job 3: RUNNING n[2-4]
hold -J ns/waits -N3 --exclusive --comment 'gangplane:ns/waits:uid-2' >/dev/null  # job 4: PENDING
hold -J gpu3 -N1 --gres=gpu:3 2>"$OUT/sbatch-reject-gres.txt" || true              # job 5: FAILED
hold -J big -N5 --exclusive 2>"$OUT/sbatch-reject-nodes.txt" || true                # rejected, no id
sleep 1
squeue --json >"$OUT/squeue-mixed.json"
scontrol show job -o 3 >"$OUT/scontrol-running.txt"
scontrol show job -o 4 >"$OUT/scontrol-pending.txt"
scontrol show job -o 999 >"$OUT/scontrol-invalid.txt" 2>&1 || true
scontrol show hostnames 'n[2-4]' >"$OUT/hostnames.txt"
for _ in $(seq 150); do
    [ "$(squeue -h -t all -j 2 -o %T)" = TIMEOUT ] && break
    sleep 1
done
squeue --json >"$OUT/squeue-timeout.json"
echo "recorded into $OUT"
