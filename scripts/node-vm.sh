#!/usr/bin/env bash
# The node VM suites: tskubelet on a node as operators run them in 2026 (Debian 12, systemd as PID 1,
# pure cgroup v2, containerd with SystemdCgroup = true, logind), a nested VM this project builds and
# caches (scripts/build-node-vm.sh; QEMU under TCG, so everything CPU-bound is ~7-9x slower).
#
#   bash scripts/node-vm.sh           quick mode: the suite scripts/test.sh also runs (~3 min)
#   bash scripts/node-vm.sh --full    full mode (~40-60 min): every node-VM suite one VM at a time
#                                     (boot facts, quick mode, upstream 1.20.2 baseline in the same VM,
#                                     node allocatable + memory-pressure eviction), then the node
#                                     conformance selection with tskubelet in the VM and the control
#                                     plane on the host (scripts/conformance.sh --node-vm)
#
# Output is node:test's (and the conformance harness'); docs/status.md and docs/conformance.md keep
# the results, bench/results/node-vm/ the raw output. Run as root, with nothing else heavy running:
# two cores shared with an emulated VM make every timing in it longer.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh --cluster
node=node_modules/.bin/node
case "${1:-}" in
  "")
    exec "$node" --test --test-timeout=1800000 test/node-vm/systemd-node.test.ts
    ;;
  --full)
    # One VM at a time: two emulated VMs on two cores starve each other.
    "$node" --test --test-concurrency=1 --test-timeout=3600000 test/node-vm/*.test.ts
    exec bash scripts/conformance.sh --node-vm
    ;;
  *)
    echo "usage: scripts/node-vm.sh [--full]" >&2
    exit 2
    ;;
esac
