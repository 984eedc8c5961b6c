#!/usr/bin/env bash
# Install Debian's Slurm (slurmctld, slurmd, client) and munge, idempotently, without starting any daemon.
#
# Usage: scripts/slurm/install.sh          (as root, Debian 12 or another apt-based system)
# Does nothing when every binary is already present. Never starts or enables services: a policy-rc.d that
# refuses service starts is put in place for the duration of apt-get if none exists (removed afterwards).
# See docs/slurm.md "A real Slurm on one host" and reference slurm.md §C2.
set -euo pipefail

PACKAGES=(slurmctld slurmd slurm-client munge)
BINARIES=(slurmctld slurmd sbatch squeue scontrol scancel sinfo munged munge unmunge)

all_installed() {
    local binary
    for binary in "${BINARIES[@]}"; do
        command -v "$binary" >/dev/null 2>&1 || [ -x "/usr/sbin/$binary" ] || return 1
    done
}

if all_installed; then
    echo "slurm: already installed ($(slurmd -V))"
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "slurm: install.sh must run as root" >&2
    exit 1
fi

policy=/usr/sbin/policy-rc.d
created_policy=0
if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy"
    chmod 755 "$policy"
    created_policy=1
fi
cleanup() { if [ "$created_policy" = 1 ]; then rm -f "$policy"; fi; }
trap cleanup EXIT

export DEBIAN_FRONTEND=noninteractive
install() { apt-get install -y -qq --no-install-recommends "${PACKAGES[@]}" >/dev/null; }
# Refresh the package index only when it does not know slurmctld, or when a stale one makes install fail.
if ! apt-cache policy slurmctld 2>/dev/null | grep -q 'Candidate: [0-9]'; then
    apt-get update -qq
fi
install || { apt-get update -qq && install; }
echo "slurm: installed ($(slurmd -V))"
