/**
 * The kubelet under test inside the node VM (Debian 12, systemd, pure cgroup v2, containerd with
 * `SystemdCgroup = true`): the control plane and the e2e suite stay on the host, the kubelet runs in
 * the guest as a systemd unit from a kubeadm-style config (`cgroupDriver: systemd`), the way a
 * joined node runs it. Upstream runs its node suites on cloud VMs (test/e2e_node/remote); this is
 * the same shape on one machine.
 *
 * Networking, through QEMU's user mode: the guest reaches the host's loopback as 10.0.2.2 (the API
 * server's certificate names it); the host's 127.0.0.1:10250 is forwarded to the guest's kubelet
 * API, so the node's InternalIP is 127.0.0.1 (the API server dials it for logs, exec, port-forward);
 * the guest's 127.0.0.1:5000/5001 are forwarded to the host's e2e registries, so the specs' image
 * references and pull secrets work unchanged. Only tskubelet: the upstream kubelet 1.20 refuses a
 * loopback node IP, and its baseline is the host run.
 */
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { Logger } from '../../../src/util/logger.ts';
import { KubeletError, describeError } from '../../../src/util/errors.ts';
import { run } from '../exec.ts';
import { bootNodeVm, CHECKOUT, type NodeVm } from '../node-vm.ts';
import { defaultShares } from '../node-vm-host.ts';
import { guestKubeconfig, importBedImages, installGuestUnit, writeGuestFiles } from '../node-vm-guest.ts';
import { NODE_VM_HOST_ADDRESS } from '../cluster/index.ts';
import { E2E_REGISTRY_PORTS } from './e2e-images.ts';
import type { KubeletSpec, RunningKubelet } from './kubelet.ts';

/** The node's InternalIP as the host's API server reaches it: the forwarded loopback port. */
export const VM_NODE_IP = '127.0.0.1';
const KUBELET_API_PORT = 10250;
const UNIT = 'tskubelet.service';
const FORWARD_UNIT = 'tskubelet-registry-forward';
const GUEST = {
  kubeconfig: '/etc/kubernetes/kubelet.conf',
  ca: '/etc/kubernetes/pki/ca.crt',
  config: '/var/lib/kubelet/config.yaml',
  rootDir: '/var/lib/kubelet',
  endpoint: 'unix:///run/containerd/containerd.sock',
} as const;
const STOP_UNIT_TIMEOUT_MS = 90_000;
const POWEROFF_TIMEOUT_MS = 180_000;

/** The kubeadm-style configuration (what `kubeadm join` writes, for the fields it sets that tskubelet reads). */
function kubeletConfig(): string {
  return `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: systemd
staticPodPath: /etc/kubernetes/manifests
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

function execStart(spec: KubeletSpec): string {
  return [
    join(CHECKOUT, 'bin', 'tskubelet'),
    'run',
    `--config=${GUEST.config}`,
    `--kubeconfig=${GUEST.kubeconfig}`,
    `--hostname-override=${spec.nodeName}`,
    `--node-ip=${VM_NODE_IP}`,
    `--container-runtime-endpoint=${GUEST.endpoint}`,
    `--root-dir=${GUEST.rootDir}`,
    '--v=2',
    ...(spec.extraArgs ?? []),
  ].join(' ');
}

async function prepareGuest(vm: NodeVm, spec: KubeletSpec, logger: Logger): Promise<void> {
  await importBedImages(vm, logger);
  const node = join(CHECKOUT, 'node_modules', '.bin', 'node');
  const forward = join(CHECKOUT, 'test', 'harness', 'node-vm-forward.ts');
  await vm.run(
    `systemd-run --unit=${FORWARD_UNIT} -p Restart=always ${node} ${forward} ${NODE_VM_HOST_ADDRESS} ${E2E_REGISTRY_PORTS.join(' ')}`,
  );
  await writeGuestFiles(vm, [
    [GUEST.kubeconfig, guestKubeconfig(await readFile(spec.kubeconfig, 'utf8'))],
    [GUEST.ca, await readFile(spec.caFile, 'utf8')],
    [GUEST.config, kubeletConfig()],
  ]);
  await installGuestUnit(vm, {
    unit: UNIT,
    unitFile: await readFile(join(CHECKOUT, 'deploy', 'systemd', UNIT), 'utf8'),
    execStart: execStart(spec),
    logFile: spec.logFile,
  });
}

/**
 * Boots the node VM (dist/ made current first: the guest runs bin/tskubelet from the read-only
 * share) and starts tskubelet in it as its unit; its log goes to `spec.logFile` through a
 * read-write share of that folder. `spec.endpoint`, `nodeIp` and `rootDir` are the host's and
 * are not used: the guest has its own. `stop()` stops the unit, then powers the VM off.
 */
export async function startVmKubelet(
  spec: KubeletSpec,
  logger: Logger,
  signal: AbortSignal,
): Promise<RunningKubelet> {
  if (spec.kind !== 'tskubelet') {
    throw new KubeletError(
      'InvalidArgument',
      'start the kubelet in the node VM',
      'only tskubelet: the upstream kubelet 1.20 refuses the loopback node IP the VM is reached by',
    );
  }
  await run('bash', [join(CHECKOUT, 'scripts', 'build.sh'), '--if-stale'], { timeoutMs: 300_000 });
  const vm = await bootNodeVm({
    logger,
    signal,
    shares: [...(await defaultShares()), { hostPath: dirname(spec.logFile), readOnly: false }],
    forwardPorts: [KUBELET_API_PORT],
  });
  try {
    await prepareGuest(vm, spec, logger);
  } catch (err) {
    await vm.stop();
    throw err;
  }
  let exit: string | undefined;
  void vm.exited.then((e) => (exit = `node VM ${e}`));
  logger.info('started tskubelet in the node VM', {
    node: spec.nodeName,
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
        await vm.run(`systemctl stop ${UNIT}`, { timeoutMs: STOP_UNIT_TIMEOUT_MS }).catch((err: unknown) =>
          logger.warn('cannot stop the kubelet unit in the node VM; powering off anyway', {
            err: describeError(err),
          }),
        );
      }
      // The poweroff stops the containers the suite left (under emulation): more than the default 90 s.
      await vm.stop({ timeoutMs: POWEROFF_TIMEOUT_MS });
    },
  };
}
