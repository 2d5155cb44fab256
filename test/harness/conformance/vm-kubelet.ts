/**
 * The kubelet under test inside the node VM (Debian 12, systemd, pure cgroup v2, containerd with
 * `SystemdCgroup = true`): the control plane and the e2e suite stay on the host, the kubelet runs in
 * the guest as a systemd unit from a kubeadm-style config (`cgroupDriver: systemd`), the way a
 * joined node runs it. Upstream runs its node suites on cloud VMs (test/e2e_node/remote); this is
 * the same shape on one machine. Either kubelet: tskubelet from the checkout's share, or the
 * upstream kubelet 1.20.2 from the bed's build cache (shared read-only), with the same config file
 * and the same node flags as on the host (kubelet.ts `nodeFlags`), so `--compare` is fair.
 *
 * Networking, through QEMU's user mode: the guest reaches the host's loopback as 10.0.2.2 (the API
 * server's certificate names it). The node's InternalIP is the guest's own address, 10.0.2.15:
 * upstream 1.20 refuses a loopback node IP (validateNodeIP in pkg/kubelet/kubelet_node_status.go)
 * and wants one on an interface, which 10.0.2.15 is in the guest. On the host, the same address is
 * routed locally (on `lo`, with 127.0.0.1 as source: node-vm-host.ts `ensureLoopbackAddress` says
 * why) and QEMU forwards its port 10250 to the guest's kubelet API, so the API server dials the
 * InternalIP for logs, exec, port-forward and lands in the guest (the API server runs without
 * --kubelet-certificate-authority: the kubelet's serving certificate is not checked). The
 * guest's 127.0.0.1:5000/5001 are forwarded to the host's e2e registries, so the specs' image
 * references and pull secrets work unchanged.
 */
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { Logger } from '../../../src/util/logger.ts';
import { KubeletError, describeError } from '../../../src/util/errors.ts';
import { run } from '../exec.ts';
import { bootNodeVm, CHECKOUT, NODE_VM_GUEST_ADDRESS, type NodeVm } from '../node-vm.ts';
import { defaultShares, type NodeVmShare } from '../node-vm-host.ts';
import { guestKubeconfig, importBedImages, installGuestUnit, writeGuestFiles } from '../node-vm-guest.ts';
import { NODE_VM_HOST_ADDRESS, kubernetesBinary } from '../cluster/index.ts';
import { E2E_REGISTRY_PORTS } from './e2e-images.ts';
import { nodeFlags, type KubeletKind, type KubeletSpec, type RunningKubelet } from './kubelet.ts';

/** The node's InternalIP: the guest's own address, which the host forwards from (see the header). */
export const VM_NODE_IP = NODE_VM_GUEST_ADDRESS;
const KUBELET_API_PORT = 10250;
const FORWARD_UNIT = 'tskubelet-registry-forward';
export const GUEST = {
  kubeconfig: '/etc/kubernetes/kubelet.conf',
  ca: '/etc/kubernetes/pki/ca.crt',
  config: '/var/lib/kubelet/config.yaml',
  manifests: '/etc/kubernetes/manifests',
  rootDir: '/var/lib/kubelet',
  endpoint: 'unix:///run/containerd/containerd.sock',
} as const;
const STOP_UNIT_TIMEOUT_MS = 90_000;
const POWEROFF_TIMEOUT_MS = 180_000;

/** Each kubelet's systemd unit in the guest (both from deploy/systemd/tskubelet.service's shape). */
export const VM_UNITS: Record<KubeletKind, string> = {
  tskubelet: 'tskubelet.service',
  upstream: 'kubelet.service',
};

/**
 * The kubeadm-style configuration (what `kubeadm join` writes, for the fields it sets that tskubelet
 * reads), the same file for both kubelets.
 */
export function kubeletConfig(): string {
  return `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: systemd
staticPodPath: ${GUEST.manifests}
readOnlyPort: 0
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: ${GUEST.ca}
authorization:
  mode: Webhook
`;
}

/**
 * The unit's command line in the guest: the binary, the config file, the node flags both
 * placements share (with the guest's kubeconfig, runtime and root dir), then `spec.extraArgs`.
 * `upstreamKubelet` is the upstream binary's path (the same in the guest: its folder is shared).
 */
export function vmExecStart(spec: KubeletSpec, upstreamKubelet: string): string {
  const node = {
    kind: spec.kind,
    nodeName: spec.nodeName,
    kubeconfig: GUEST.kubeconfig,
    nodeIp: VM_NODE_IP,
    endpoint: GUEST.endpoint,
    rootDir: GUEST.rootDir,
  };
  const binary = spec.kind === 'tskubelet' ? [join(CHECKOUT, 'bin', 'tskubelet'), 'run'] : [upstreamKubelet];
  return [...binary, `--config=${GUEST.config}`, ...nodeFlags(node), ...(spec.extraArgs ?? [])].join(' ');
}

/** The host folders the guest needs for `kind`: the checkout, the log's folder (read-write), upstream's binaries. */
async function sharesFor(spec: KubeletSpec, upstreamKubelet: string): Promise<NodeVmShare[]> {
  return [
    ...(await defaultShares()),
    { hostPath: dirname(spec.logFile), readOnly: false },
    ...(spec.kind === 'upstream' ? [{ hostPath: dirname(upstreamKubelet) }] : []),
  ];
}

async function prepareGuest(
  vm: NodeVm,
  spec: KubeletSpec,
  upstreamKubelet: string,
  logger: Logger,
): Promise<void> {
  // The node IP must be the guest's: upstream refuses one no interface has.
  const addrs = await vm.run('ip -4 -o addr show');
  if (!addrs.stdout.includes(` inet ${VM_NODE_IP}/`)) {
    throw new KubeletError(
      'FailedPrecondition',
      'prepare the node VM',
      `the guest lacks ${VM_NODE_IP}, the node IP the host forwards to:\n${addrs.stdout.trim()}`,
    );
  }
  await importBedImages(vm, logger);
  const node = join(CHECKOUT, 'node_modules', '.bin', 'node');
  const forward = join(CHECKOUT, 'test', 'harness', 'node-vm-forward.ts');
  await vm.run(
    `systemd-run --unit=${FORWARD_UNIT} -p Restart=always ${node} ${forward} ${NODE_VM_HOST_ADDRESS} ${E2E_REGISTRY_PORTS.join(' ')}`,
  );
  // kubeadm makes the static pod folder; without it upstream logs an error every second.
  await vm.run(`mkdir -p ${GUEST.manifests}`);
  await writeGuestFiles(vm, [
    [GUEST.kubeconfig, guestKubeconfig(await readFile(spec.kubeconfig, 'utf8'))],
    [GUEST.ca, await readFile(spec.caFile, 'utf8')],
    [GUEST.config, kubeletConfig()],
  ]);
  await installGuestUnit(vm, {
    unit: VM_UNITS[spec.kind],
    unitFile: await readFile(join(CHECKOUT, 'deploy', 'systemd', 'tskubelet.service'), 'utf8'),
    execStart: vmExecStart(spec, upstreamKubelet),
    logFile: spec.logFile,
  });
}

/**
 * Boots the node VM (for tskubelet, dist/ made current first: the guest runs bin/tskubelet from
 * the read-only share) and starts the kubelet in it as its unit; its log goes to `spec.logFile`
 * through a read-write share of that folder. `spec.endpoint`, `nodeIp` and `rootDir` are the host's
 * and are not used: the guest has its own. `stop()` stops the unit, then powers the VM off.
 */
export async function startVmKubelet(
  spec: KubeletSpec,
  logger: Logger,
  signal: AbortSignal,
): Promise<RunningKubelet> {
  const upstreamKubelet = kubernetesBinary('kubelet');
  if (spec.kind === 'tskubelet') {
    await run('bash', [join(CHECKOUT, 'scripts', 'build.sh'), '--if-stale'], { timeoutMs: 300_000 });
  }
  const vm = await bootNodeVm({
    logger,
    signal,
    shares: await sharesFor(spec, upstreamKubelet),
    forwardPorts: [{ port: KUBELET_API_PORT, hostAddress: VM_NODE_IP }],
  });
  try {
    await prepareGuest(vm, spec, upstreamKubelet, logger);
  } catch (err) {
    await vm.stop();
    throw err;
  }
  let exit: string | undefined;
  void vm.exited.then((e) => (exit = `node VM ${e}`));
  const unit = VM_UNITS[spec.kind];
  logger.info(`started ${spec.kind} in the node VM`, {
    node: spec.nodeName,
    nodeIp: VM_NODE_IP,
    unit,
    log: spec.logFile,
    ssh: vm.sshPort,
  });
  return {
    spec,
    // The kubelet runs in the guest: the host process that stands for it is this one.
    pid: process.pid,
    exit: () => exit,
    async stop() {
      if (exit === undefined) {
        await vm.run(`systemctl stop ${unit}`, { timeoutMs: STOP_UNIT_TIMEOUT_MS }).catch((err: unknown) =>
          logger.warn('cannot stop the kubelet unit in the node VM; powering off anyway', {
            unit,
            err: describeError(err),
          }),
        );
      }
      // The poweroff stops the containers the suite left (under emulation): more than the default 90 s.
      await vm.stop({ timeoutMs: POWEROFF_TIMEOUT_MS });
    },
  };
}
