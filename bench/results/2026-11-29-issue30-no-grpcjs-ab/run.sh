#!/usr/bin/env bash
# Issue 30, same-run table with upstream, and an A/B: the kubelet without @grpc/grpc-js (events
# stream and gRPC probes on src/util/grpc-h2.ts too; the candidate's worktree, CAND) against main
# before it (bdcb980: CRI and CSI on grpc-h2, events and probes on grpc-js; BASE), and upstream
# 1.20.2: static N=10,30,90 and steady 0 and 110 pods, REPS reps, the order rotating per rep.
#   bash run.sh CAND BASE [REPS]
set -u
cand=${1:?candidate worktree} base=${2:?base worktree} reps=${3:-3}
out="$(cd "$(dirname "$0")" && pwd)"
cd "$cand"
orders=(tskubelet,tskubelet-base,upstream upstream,tskubelet-base,tskubelet tskubelet-base,upstream,tskubelet)
for ((i = 1; i <= reps; i++)); do
  order=${orders[$(((i - 1) % 3))]}
  flock /tmp/tskubelet-bed.lock node_modules/.bin/node bench/run.ts --scenario static,steady --n 10,30,90 \
    --steady-pods 0,110 --window 30 --kubelets "$order" --base-tree "$base" \
    --out "$out/rep-$i.md" > "$out/rep-$i.log" 2>&1
  echo "rep $i done $(date +%T) rc=$?"
done
