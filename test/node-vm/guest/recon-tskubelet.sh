#!/usr/bin/env bash
# Run inside the node VM by test/node-vm/recon-tskubelet.ts: starts tskubelet from the shared
# checkout as a transient systemd service (standalone, static pods: one per QoS class and one that
# exceeds its memory limit) against the guest's containerd with the given runc cgroup driver, waits
# for the pods to run or fail, prints what it finds (pod states, the kubelet's warnings, every
# container's cgroup, the pod cgroups' v2 limits, /stats/summary), then stops the kubelet and
# removes the pods. Reconnaissance for issue 26, not a test: it asserts nothing.
#
#   recon-tskubelet.sh CONTAINERD_DRIVER(systemd|cgroupfs) CGROUPS_PER_QOS(true|false) [WAIT_SECONDS]
set -uo pipefail

driver="$1"
per_qos="$2"
wait_s="${3:-240}"
checkout="$(cd "$(dirname "$(readlink -f "$0")")/../../.." && pwd)"
node="$checkout/node_modules/.bin/node"
unit="recon-tskubelet"
manifests=/etc/recon/manifests
root_dir="/var/lib/recon-$driver-$per_qos"
sock=/run/containerd/containerd.sock

section() { printf '\n## %s\n' "$*"; }

remove_pods() {
  "$node" --input-type=module -e "
    import { listPodSandboxes, stopPodSandbox, removePodSandbox } from '$checkout/test/harness/cri-mini.ts';
    for (const sb of await listPodSandboxes('$sock')) {
      await stopPodSandbox('$sock', sb.id);
      await removePodSandbox('$sock', sb.id);
    }"
  if [[ -d /sys/fs/cgroup/kubepods ]]; then
    find /sys/fs/cgroup/kubepods -depth -type d -exec rmdir {} \; 2>/dev/null ||
      echo "(kubepods cgroups left: $(find /sys/fs/cgroup/kubepods -type d | wc -l))"
  fi
}

# --- containerd with the wanted runc cgroup driver ------------------------------------------------------
want=$([[ "$driver" == systemd ]] && echo true || echo false)
if ! grep -q "SystemdCgroup = $want" /etc/containerd/config.toml; then
  sed -i -E "s/SystemdCgroup = (true|false)/SystemdCgroup = $want/" /etc/containerd/config.toml
  systemctl restart containerd
fi
systemctl stop "$unit" 2>/dev/null
systemctl reset-failed "$unit" 2>/dev/null
remove_pods

# --- static pods -----------------------------------------------------------------------------------------
rm -rf "$manifests" && mkdir -p "$manifests"
pod() { # pod NAME RESTART COMMAND RESOURCES
  cat >"$manifests/$1.yaml" <<EOF
apiVersion: v1
kind: Pod
metadata: {name: recon-$1, namespace: default}
spec:
  restartPolicy: $2
  containers:
  - name: c
    image: docker.io/library/busybox:1.29
    command: [sh, -c, '$3']
    resources: $4
EOF
}
loop='trap "exit 0" TERM; while :; do sleep 1; done'
pod besteffort Always "$loop" '{}'
pod burstable Always "$loop" '{requests: {cpu: 100m, memory: 32Mi}}'
pod guaranteed Always "$loop" '{requests: {cpu: 200m, memory: 64Mi}, limits: {cpu: 200m, memory: 64Mi}}'
pod oom Never 'dd if=/dev/zero of=/dev/shm/fill bs=1M count=64; echo dd-ended; sleep 2' \
  '{limits: {cpu: 100m, memory: 16Mi}}'

# --- tskubelet ---------------------------------------------------------------------------------------------
flags=(run --pod-manifest-path="$manifests" --container-runtime-endpoint="unix://$sock"
  --root-dir="$root_dir" --hostname-override=node-vm --cgroup-driver=cgroupfs
  --cgroups-per-qos="$per_qos" --read-only-port=10255 --logging-format=text -v 2 --file-check-frequency=5s)
[[ "$per_qos" == false ]] && flags+=(--enforce-node-allocatable=)
started=$(date +%s)
systemd-run --quiet --unit="$unit" --property=KillMode=process "$checkout/bin/tskubelet" "${flags[@]}"

pods_json() { curl -s --max-time 10 localhost:10255/pods; }
summary() {
  "$node" -e '
    let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => {
      let pods; try { pods = JSON.parse(s).items; } catch { console.log("no /pods answer"); return; }
      for (const p of pods) {
        const st = (p.status.containerStatuses ?? []).map((c) => JSON.stringify(c.state)).join(" ");
        console.log(`${p.metadata.name} ${p.status.phase} ${p.status.qosClass ?? ""} ${st}`);
      }
    });'
}
settled() { # every long-running pod Running and the oom pod finished, or a sandbox failure seen
  local s
  s="$(pods_json | summary)"
  [[ "$(grep -c 'Running' <<<"$s")" -ge 3 && "$s" == *recon-oom*terminated* ]] && return 0
  journalctl -u "$unit" --since "@$started" --no-pager -q | grep -q FailedCreatePodSandBox
}
while (($(date +%s) - started < wait_s)); do
  settled && break
  sleep 5
done
sleep 5

section "tskubelet (containerd SystemdCgroup=$want, tskubelet --cgroup-driver=cgroupfs --cgroups-per-qos=$per_qos), $(($(date +%s) - started)) s after start: $(systemctl is-active "$unit")"
echo "first log line after $(journalctl -u "$unit" --since "@$started" -o short-unix --no-pager -q | awk -v s="$started" '/tskubelet\[/ { printf "%.0f s", $1 - s; exit }')"
section "pods"
pods_json | summary
section "warnings and errors (distinct, first 150 chars)"
journalctl -u "$unit" --since "@$started" --no-pager -q -o cat | grep -E '^[WE][0-9]{4} ' | grep -v MissingClusterDNS |
  cut -d' ' -f3- | cut -c1-150 | sort | uniq -c | sort -rn | head -15
section "container cgroups"
ctr -n k8s.io task ls | awk 'NR > 1 { print $1, $2 }' | while read -r id pid; do
  echo "${id:0:12} $(cat "/proc/$pid/cgroup" 2>/dev/null)"
done
section "kubepods cgroups (v2 files)"
if [[ -d /sys/fs/cgroup/kubepods ]]; then
  (cd /sys/fs/cgroup && find kubepods -maxdepth 3 -type d -regex '.*\(kubepods\|burstable\|besteffort\|pod[0-9a-f-]*\)$' | sort |
    while read -r d; do
      echo "$d: cpu.weight=$(cat "$d/cpu.weight") cpu.max=[$(cat "$d/cpu.max")] memory.max=$(cat "$d/memory.max") pids.max=$(cat "$d/pids.max") memory.oom.group=$(cat "$d/memory.oom.group")"
    done)
else
  echo "(no /sys/fs/cgroup/kubepods)"
fi
section "OOM kills (kernel)"
journalctl -k --no-pager -q --since "@$started" | grep -E 'oom-kill:|Killed process' | sed -E 's/.*(oom_memcg=[^,]*).*/\1/; s/.*(Killed process [0-9]+ \([^)]*\)).*/\1/'
section "/stats/summary (usageNanoCores, workingSetBytes)"
curl -s --max-time 30 localhost:10255/stats/summary | "$node" -e '
  let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => {
    let j; try { j = JSON.parse(s); } catch { console.log("no /stats/summary answer"); return; }
    const f = (x) => `${x?.cpu?.usageNanoCores ?? "-"} ${x?.memory?.workingSetBytes ?? "-"}`;
    console.log(`node ${f(j.node)}`);
    for (const c of j.node.systemContainers ?? []) console.log(`  system ${c.name} ${f(c)}`);
    for (const p of j.pods ?? []) console.log(`${p.podRef.name} ${f(p)} | ${p.containers.map((c) => `${c.name} ${f(c)}`).join(", ")}`);
  });'

systemctl stop "$unit"
remove_pods
