#!/usr/bin/env bash
# Issue 30 A/B: the CRI transport on node:http2 (dev/cri-h2, /work/wt-h2) against @grpc/grpc-js
# (main, --base-tree /work/main): static N = 10, 30 and the idle kubelet, order alternating per rep.
# Usage: run.sh OUT_DIR REPS
set -u
out=$1
reps=$2
cd /work/wt-h2
for i in $(seq 1 "$reps"); do
  if ((i % 2)); then order=tskubelet,tskubelet-base; else order=tskubelet-base,tskubelet; fi
  flock /tmp/tskubelet-bed.lock node_modules/.bin/node bench/run.ts --scenario static,steady --n 10,30 \
    --steady-pods 0 --window 20 --kubelets "$order" --base-tree /work/main \
    --out "$out/rep-$i.md" > "$out/rep-$i.log" 2>&1
  echo "rep $i done $(date +%T) rc=$?"
done
