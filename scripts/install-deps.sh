#!/usr/bin/env bash
# Installs everything tskubelet and its tests need on a fresh Debian 12 machine, idempotently:
# system packages (scripts/setup.sh) and the npm dependencies, which include Node.js 24 itself
# (the `node` devDependency puts node 24 at node_modules/.bin/node).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh

# npm ci only when the lockfile changed since the last install (it takes ~15 s otherwise).
stamp=node_modules/.tskubelet-installed
if [[ ! -f "$stamp" || package-lock.json -nt "$stamp" || "${CI:-}" == "true" ]]; then
  npm ci --no-audit --no-fund
  touch "$stamp"
fi
node_modules/.bin/node --version >/dev/null
# dist/: the bundle bin/tskubelet runs (it also rebuilds by itself when src/ changes).
bash scripts/build.sh --if-stale

# --cluster: also the control plane for cluster tests (kube-apiserver & co., built once from
# Debian's kubernetes source package and cached outside the repository; ~8 min the first time) and
# the node VM image for the node tests (Debian 12 + systemd + cgroup v2; ~2-7 min the first time).
if [[ "${1:-}" == "--cluster" ]]; then
  bash scripts/build-kubernetes.sh
  bash scripts/build-node-vm.sh
fi
