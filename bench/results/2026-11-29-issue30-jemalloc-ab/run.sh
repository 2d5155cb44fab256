#!/usr/bin/env bash
# Issue 30 A/B: jemalloc (Debian's libjemalloc2, LD_PRELOAD by the launcher; /work/wt-jemalloc) against
# glibc malloc with MALLOC_ARENA_MAX=2 (main, --base-tree /work/main), and upstream in the same run:
# static N=10,30,90 and steady 0 and 110 pods, 3 reps, order rotating per rep.
set -u
out=/work/main/bench/results/2026-11-29-issue30-jemalloc-ab
cd /work/wt-jemalloc
orders=(tskubelet,tskubelet-base,upstream upstream,tskubelet-base,tskubelet tskubelet-base,upstream,tskubelet)
for i in 1 2 3; do
  order=${orders[$((i - 1))]}
  flock /tmp/tskubelet-bed.lock node_modules/.bin/node bench/run.ts --scenario static,steady --n 10,30,90 \
    --steady-pods 0,110 --window 30 --kubelets "$order" --base-tree /work/main \
    --out "$out/rep-$i.md" > "$out/rep-$i.log" 2>&1
  echo "rep $i done $(date +%T) rc=$?"
done
