/**
 * A kubelet on the node VM with the same static pods, whichever kubelet it is (tskubelet or the
 * upstream 1.20.2 binary): the pods (one per QoS class that records SIGTERM and preStop in a results
 * folder shared with the host, and one that outgrows its memory limit), a kubeadm-style config, the
 * kubelet installed as a systemd unit logging to the results folder, and the readers the tests
 * compare: the pods over the read-only port, their slices' cgroup v2 values. Upstream's node e2e
 * suite has the same shape (test/e2e_node: a kubelet per run, pods, files read back).
 */
import path from 'node:path';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import type { NodeVm } from '../../harness/node-vm.ts';
import {
  bootNodeVm,
  CHECKOUT,
  importBedImages,
  installGuestUnit,
  writeGuestFiles,
  type GuestUnit,
} from '../../harness/index.ts';

import { defaultShares, type NodeVmShare } from '../../harness/node-vm-host.ts';
import { run } from '../../harness/exec.ts';
import { buildManifest } from '../../kit/pod.ts';
import { until } from '../../kit/poll.ts';
import { createLogger, nullLogger, type Logger } from '../../../src/util/logger.ts';
import type { Pod } from '../../../src/api/types.ts';

export { writeGuestFiles };

export const MANIFESTS = '/etc/kubernetes/manifests';
export const SOCKET = 'unix:///run/containerd/containerd.sock';
export const GUEST_TIMEOUT_MS = 180_000;
/** Node's first start in the guest reads its binary over 9p and compiles under TCG. */
const PODS_TIMEOUT_MS = 8 * 60_000;
export const LONG_RUNNING = ['besteffort', 'burstable', 'guaranteed'] as const;
export const POD_NAMES = [...LONG_RUNNING, 'oom'] as const;
export type PodName = (typeof POD_NAMES)[number];

export interface NodeSettings {
  shutdownGraceS: number;
  criticalGraceS: number;
}

/** The kubeadm-style configuration file (what `kubeadm join` writes, for the fields it sets). */
export function kubeletConfig(s: NodeSettings, extra = ''): string {
  return `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: systemd
staticPodPath: ${MANIFESTS}
readOnlyPort: 10255
fileCheckFrequency: 5s
shutdownGracePeriod: ${s.shutdownGraceS}s
shutdownGracePeriodCriticalPods: ${s.criticalGraceS}s
${extra}`;
}

/** A pod that records SIGTERM and its preStop hook in the results folder, then exits. */
export function markingPod(
  name: string,
  resources: Record<string, Record<string, string>>,
  results: string,
): Pod {
  const mark = (what: string) => `echo ${what} $(date +%s) >> /results/${name}`;
  return buildManifest(name, {
    image: 'docker.io/library/busybox:1.29',
    containers: [
      {
        name: 'c',
        command: ['sh', '-c', `trap '${mark('TERM')}; exit 0' TERM; while :; do sleep 1; done`],
        resources,
        volumeMounts: [{ name: 'results', mountPath: '/results' }],
        lifecycle: { preStop: { exec: { command: ['sh', '-c', mark('preStop')] } } },
      },
    ],
    volumes: [{ name: 'results', hostPath: { path: results, type: 'Directory' } }],
  });
}

export function nodePods(results: string): [PodName, Pod][] {
  return [
    ['besteffort', markingPod('besteffort', {}, results)],
    ['burstable', markingPod('burstable', { requests: { cpu: '100m', memory: '32Mi' } }, results)],
    [
      'guaranteed',
      markingPod(
        'guaranteed',
        { requests: { cpu: '200m', memory: '64Mi' }, limits: { cpu: '200m', memory: '64Mi' } },
        results,
      ),
    ],
    [
      'oom',
      buildManifest('oom', {
        image: 'docker.io/library/busybox:1.29',
        restartPolicy: 'Never',
        // tail buffers /dev/zero looking for a line and outgrows the limit; it is the shell's
        // child, so only memory.oom.group (the whole container killed) ends the container.
        containers: [
          {
            name: 'c',
            command: ['sh', '-c', 'tail /dev/zero; sleep 3600'],
            resources: { limits: { memory: '16Mi' } },
          },
        ],
      }),
    ],
  ];
}

export interface PodView {
  metadata: { name: string; uid: string };
  status?: {
    phase?: string;
    reason?: string;
    message?: string;
    qosClass?: string;
    containerStatuses?: {
      containerID?: string;
      state?: { running?: object; terminated?: { reason?: string; exitCode?: number } };
    }[];
  };
}

/** Runs a shell command in the guest and returns its trimmed stdout. */
export async function sh(vm: NodeVm, command: string): Promise<string> {
  return (await vm.run(command, { timeoutMs: GUEST_TIMEOUT_MS })).stdout.trim();
}

/** Imports the bed's images (busybox, pause) into the guest's containerd. */
export const importImages = importBedImages;

/**
 * The static pods by manifest name (static pods are named `<manifest name>-<node name>`), of
 * `names` (default: the pods of nodePods).
 */
export async function podsByName<N extends string = PodName>(
  vm: NodeVm,
  names: readonly N[] = POD_NAMES as readonly string[] as readonly N[],
): Promise<Map<N, PodView>> {
  const text = await sh(vm, 'curl -s --max-time 20 localhost:10255/pods');
  const items = (JSON.parse(text) as { items: PodView[] }).items;
  const byName = new Map<N, PodView>();
  for (const p of items) {
    const name = names.find((n) => p.metadata.name.startsWith(`${n}-`));
    if (name) byName.set(name, p);
  }
  return byName;
}

/** A kubelet's unit: its log goes to `<results>/<unit>.log`. */
export type KubeletUnit = Omit<GuestUnit, 'logFile'>;

/**
 * Installs the manifests and the kubelet unit (ExecStart replaced in a drop-in, its output appended
 * to `<results>/<unit>.log`), starts it, and waits until the three long-running pods run and the
 * OOM pod ended (with `oomEnds: false`, until it has a state: a kubelet without the OOM group kill
 * leaves its shell running). Resolves the pods.
 */
export async function startKubeletUnit(
  vm: NodeVm,
  k: KubeletUnit,
  results: string,
  opts: { oomEnds?: boolean } = {},
): Promise<Map<PodName, PodView>> {
  const oomEnds = opts.oomEnds ?? true;
  await installKubeletUnit(vm, k, results, nodePods(results));
  return until(
    `${k.unit}: every pod running and the OOM pod ended`,
    async () => {
      const pods = await podsByName(vm).catch(() => undefined);
      if (!pods) return undefined;
      const running = LONG_RUNNING.every((n) => pods.get(n)?.status?.containerStatuses?.[0]?.state?.running);
      const oom = pods.get('oom')?.status?.containerStatuses?.[0]?.state;
      return running && (oomEnds ? oom?.terminated : oom) ? pods : undefined;
    },
    { timeoutMs: PODS_TIMEOUT_MS, intervalMs: 3_000, describe: () => unitState(vm, k.unit, results) },
  );
}

/** The unit's status line and the tail of its log, for a failure message. */
export async function unitState(vm: NodeVm, unit: string, results: string): Promise<Record<string, string>> {
  return {
    unit: await sh(vm, `systemctl status ${unit} --no-pager -n 0 || true`),
    log: await sh(vm, `tail -n 30 ${results}/${unit}.log || true`),
  };
}

/** Writes the manifests and the kubelet unit (ExecStart replaced in a drop-in), and starts it. */
export async function installKubeletUnit(
  vm: NodeVm,
  k: KubeletUnit,
  results: string,
  pods: readonly [string, Pod][],
): Promise<void> {
  await writeGuestFiles(
    vm,
    pods.map(([name, pod]): [string, string] => [`${MANIFESTS}/${name}.yaml`, JSON.stringify(pod)]),
  );
  await installGuestUnit(vm, { ...k, logFile: `${results}/${k.unit}.log` });
}

/** Stops the unit and removes the manifests; waits until containerd runs no pod sandbox. */
export async function stopKubeletUnit(vm: NodeVm, unit: string): Promise<void> {
  await vm.run(`rm -f ${MANIFESTS}/*.yaml`);
  // The kubelet removes the pods of deleted manifests; then it is stopped.
  await until('the pods gone', async () => (await sh(vm, 'ctr -n k8s.io task ls -q | wc -l')) === '0', {
    timeoutMs: 180_000,
    intervalMs: 2_000,
  });
  await vm.run(`systemctl disable --now ${unit}`);
  // The next kubelet starts from no pod cgroups at all (the transient slices go with their stop).
  await vm.run('systemctl stop kubepods.slice');
}

/** The slice (under /sys/fs/cgroup) of a pod of a QoS class, by its UID. */
export function podSlice(qos: 'besteffort' | 'burstable' | '', uid: string): string {
  const u = uid.replaceAll('-', '_');
  return qos === ''
    ? `kubepods.slice/kubepods-pod${u}.slice`
    : `kubepods.slice/kubepods-${qos}.slice/kubepods-${qos}-pod${u}.slice`;
}

/** cpu.weight|cpu.max|memory.max|pids.max of a cgroup directory under /sys/fs/cgroup. */
export function cgroupValues(vm: NodeVm, dir: string): Promise<string> {
  return sh(
    vm,
    `cd /sys/fs/cgroup/${dir} && echo "$(cat cpu.weight)|$(cat cpu.max)|$(cat memory.max)|$(cat pids.max)"`,
  );
}

/** The v2 values of kubepods, its tiers and each long-running pod's slice. */
export async function qosValues(vm: NodeVm, pods: Map<PodName, PodView>): Promise<Record<string, string>> {
  const uid = (n: PodName): string => pods.get(n)?.metadata.uid ?? 'missing';
  return {
    kubepods: await cgroupValues(vm, 'kubepods.slice'),
    burstableTier: await cgroupValues(vm, 'kubepods.slice/kubepods-burstable.slice'),
    besteffortTier: await cgroupValues(vm, 'kubepods.slice/kubepods-besteffort.slice'),
    besteffort: await cgroupValues(vm, podSlice('besteffort', uid('besteffort'))),
    burstable: await cgroupValues(vm, podSlice('burstable', uid('burstable'))),
    guaranteed: await cgroupValues(vm, podSlice('', uid('guaranteed'))),
  };
}

/** The logger of the node-VM tests: quiet unless TSKUBELET_TEST_VERBOSE is set. */
export function testLogger(): Logger {
  return process.env.TSKUBELET_TEST_VERBOSE ? createLogger({ verbosity: 4, format: 'text' }) : nullLogger;
}

/** A booted node VM with a results folder the guest writes and the host reads after a poweroff. */
export interface NodeBed {
  vm: NodeVm;
  results: string;
}

/**
 * Makes dist/ current (the guest runs bin/tskubelet from the read-only share), makes a results
 * folder shared read-write, boots the VM with `extraShares` too, and imports the bed's images.
 */
export async function bootNodeBed(extraShares: NodeVmShare[] = []): Promise<NodeBed> {
  const logger = testLogger();
  await run('bash', [`${CHECKOUT}/scripts/build.sh`, '--if-stale'], { timeoutMs: 300_000 });
  const results = await mkdtemp(path.join(tmpdir(), 'tskubelet-node-vm-results-'));
  await chmod(results, 0o777);
  const vm = await bootNodeVm({
    logger,
    shares: [...(await defaultShares()), { hostPath: results, readOnly: false }, ...extraShares],
  });
  await importImages(vm, logger);
  return { vm, results };
}

/** Powers the VM off (if still up) and removes the results folder. */
export async function stopNodeBed(bed: NodeBed | undefined): Promise<void> {
  await bed?.vm.stop();
  if (bed) await rm(bed.results, { recursive: true, force: true });
}
