#!/usr/bin/env bash
# The main job: install what is needed, start the private containerd of the test bed, and run
# tskubelet standalone on this machine with the static pods in examples/. Ctrl-C stops tskubelet
# (the pods keep running, as with any kubelet; `bash scripts/run-example.sh --clean` removes them).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh
export PATH="$PWD/node_modules/.bin:$PATH"

node test/harness/bed.ts up
endpoint=unix:///run/tskubelet-bed/containerd.sock

if [[ "${1:-}" == "--clean" ]]; then
  node test/harness/bed.ts clean
  exit 0
fi

root_dir=/var/lib/tskubelet
socket="$root_dir/tskubelet.sock"

# Once the example web pod runs, say where to reach it. The pods are read from the kubelet API on
# its root-only local socket (the healthz port serves /healthz only).
(
  for _ in $(seq 1 60); do
    sleep 1
    ip="$(curl -fsS --unix-socket "$socket" http://localhost/pods 2>/dev/null |
      node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{const l=JSON.parse(s);const p=l.items.find(i=>i.metadata.name.startsWith("web-")&&i.status&&i.status.phase==="Running");if(p)console.log(p.status.podIP)})' || true)"
    if [[ -n "$ip" ]]; then
      echo
      echo ">>> example web pod is running: curl http://$ip:8080/   (pods: bin/tskubelet get pods --socket $socket)"
      echo
      break
    fi
  done
) &

exec bin/tskubelet run \
  --pod-manifest-path "$PWD/examples" \
  --container-runtime-endpoint "$endpoint" \
  --root-dir "$root_dir" \
  --log-format text "$@"
