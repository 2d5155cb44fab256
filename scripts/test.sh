#!/usr/bin/env bash
# The whole test suite, as CI runs it (.ci/run calls this): install what is missing, typecheck,
# lint, format check, then every test (unit + integration on a real containerd) in one node:test run,
# whose summary ends the output.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh --cluster
export PATH="$PWD/node_modules/.bin:$PATH"

echo "== typecheck"; tsc --noEmit -p .
echo "== lint"; eslint .
echo "== format"; prettier --check . >/dev/null || { prettier --check .; exit 1; }

echo "== tests"
# Integration tests share one containerd and one control plane (test/harness), so test files run
# one at a time. The node-VM quick mode (test/node-vm/systemd-node.test.ts: one boot of the systemd +
# cgroup v2 node VM, ~3 min) runs here; the rest of test/node-vm has its own commands (README).
exec node --test --test-concurrency=1 --test-timeout=600000 \
  'src/**/*.test.ts' 'bench/**/*.test.ts' 'test/harness/**/*.test.ts' 'test/kit/**/*.test.ts' 'test/integration/**/*.test.ts' \
  'test/reliability/**/*.test.ts' 'test/security/**/*.test.ts' 'test/node-vm/systemd-node.test.ts'
