#!/usr/bin/env bash
# Issue 30 A/B: the bundle (dev/bundle, /work/ab-bundle) against main's tsc-compiled dist/ (base tree),
# static N=10 and N=30 plus idle (steady, 0 pods), order alternating per rep.
set -u
cd /work/ab-bundle
for i in 1 2 3 4 5 6; do
  if (( i % 2 )); then order=tskubelet,tskubelet-base; else order=tskubelet-base,tskubelet; fi
  flock /tmp/tskubelet-bed.lock node_modules/.bin/node bench/run.ts --scenario static,steady --n 10,30 --steady-pods 0 --window 30 \
    --kubelets $order --base-tree /work/base-339af72 --out /work/ab-bnd/rep-$i.md > /work/ab-bnd/rep-$i.log 2>&1
  echo "rep $i done $(date +%T) rc=$?"
done
