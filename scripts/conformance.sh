#!/usr/bin/env bash
# Kubernetes node conformance (issue 10): the official 1.20.2 e2e suite's [NodeConformance] specs
# against tskubelet or the upstream kubelet, on the test bed (containerd + etcd/kube-apiserver & co.).
#
#   bash scripts/conformance.sh                      # tskubelet, the whole focused suite (~tens of minutes)
#   bash scripts/conformance.sh --kubelet upstream   # the upstream kubelet 1.20.2 (the baseline)
#   bash scripts/conformance.sh --compare            # both in turn; the specs whose outcome differs
#   bash scripts/conformance.sh --focus 'Pods should get a host IP'   # one spec (inner loop)
#   bash scripts/conformance.sh --help               # every option
#
# Builds e2e.test, ginkgo and the test images' binaries once (~3 min, cached beside the control-plane
# binaries in /var/cache/tskubelet-bed), and the e2e images. Results (JUnit, ginkgo's output, the
# kubelet's log, summary.md) go to /var/tmp/tskubelet-conformance/<date>-<kubelet>/. Not part of
# scripts/test.sh or CI: it takes tens of minutes. Run as root; it waits while another kubelet or
# integration test run uses the bed. docs/conformance.md has the results and how to read them.
set -euo pipefail
cd "$(dirname "$0")/.."

case " $* " in
  *" --help "* | *" -h "* | *" --report "*) ;;
  *) bash scripts/install-deps.sh --cluster ;;
esac
exec node_modules/.bin/node test/harness/conformance/main.ts "$@"
