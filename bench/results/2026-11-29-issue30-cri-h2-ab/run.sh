#!/usr/bin/env bash
# Issue 30 A/B: the CRI transport on node:http2 (the candidate tree's bin/tskubelet) against
# @grpc/grpc-js (the base tree, `--base-tree`): static N = 10, 30 and the idle kubelet, order
# alternating per rep, each rep under the bed lock.
#   run.sh OUT_DIR REPS CANDIDATE_TREE BASE_TREE
# under-load/: run.sh … 4 /work/wt-h2 /work/main (main then at 2f653d3, grpc-js);
# idle-host/:  run.sh … 4 /work/main /work/base-grpcjs (a worktree at 2f653d3 with its own node_modules).
set -u
out=$1
reps=$2
candidate=$3
base=$4
cd "$candidate"
for i in $(seq 1 "$reps"); do
  if ((i % 2)); then order=tskubelet,tskubelet-base; else order=tskubelet-base,tskubelet; fi
  flock /tmp/tskubelet-bed.lock node_modules/.bin/node bench/run.ts --scenario static,steady --n 10,30 \
    --steady-pods 0 --window 20 --kubelets "$order" --base-tree "$base" \
    --out "$out/rep-$i.md" > "$out/rep-$i.log" 2>&1
  echo "rep $i done $(date +%T) rc=$?"
done
