#!/usr/bin/env bash
# `make demo`: start the embedded control plane, run a real 2-node PyTorch job (torchrun, gloo on CPU) to
# completion while a second TrainJob that needs the whole cluster waits as a gang, then runs after it.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-.venv/bin}
export GANGPLANE_HOME=${GANGPLANE_HOME:-$PWD/.demo}
PORT=${GANGPLANE_DEMO_PORT:-7543}
gp() { "$BIN/gangplane" "$@"; }
step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

rm -rf "$GANGPLANE_HOME"
trap 'gp down >/dev/null 2>&1 || true' EXIT
step "gangplane up: an embedded cluster of two nodes (clusters/demo.yaml)"
gp up --config clusters/demo.yaml --port "$PORT"
gp get nodes

step "a gang-scheduled torch runtime, then two TrainJobs: tiny-ddp (half the cluster), whole-cluster (all of it)"
gp apply -f examples/demo/runtime.yaml
gp apply -f examples/demo/trainjob.yaml
gp apply -f examples/demo/whole-cluster.yaml
sleep 3

step "whole-cluster waits as a gang: no pod of it starts while tiny-ddp holds half the cluster"
gp get pods -o wide
gp describe trainjob whole-cluster

step "following tiny-ddp to completion (real torchrun processes, one per node)"
gp run -f examples/demo/trainjob.yaml --no-live --timeout 170

step "whole-cluster now has the cluster to itself"
gp run -f examples/demo/whole-cluster.yaml --no-live --timeout 170
gp get trainjobs
