#!/usr/bin/env bash
# Issue 29 CPU A/B: static N=30, tskubelet (main) vs tskubelet-base (339af72), order alternating.
cd /work/main
for i in 1 2 3 4 5 6 7 8; do
  if (( i % 2 )); then order=tskubelet,tskubelet-base; else order=tskubelet-base,tskubelet; fi
  flock /tmp/tskubelet-bed.lock node_modules/.bin/node bench/run.ts --scenario static --n 30 --kubelets $order \
    --base-tree /work/base-339af72 --out /work/ab30/static-$i.md > /work/ab30/static-$i.log 2>&1
  echo "rep $i done $(date +%T)"
done
