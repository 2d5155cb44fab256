/**
 * The two kubelets the benchmarks compare (tskubelet and the upstream kubelet 1.20.2), started as
 * their own processes with the same settings wherever both have them; the security suite starts its
 * upstream node here too. The upstream flag list (and why each flag is there) is in bench/README.md.
 * No upstream counterpart.
 */
import { readFile, rm, readdir } from 'node:fs/promises';
import { connect } from 'node:net';
import { join } from 'node:path';
import { KubeletError } from '../../src/util/errors.ts';
import { sleep } from '../../src/util/abort.ts';
import { run } from '../harness/exec.ts';
import { PAUSE_IMAGE } from '../harness/images.ts';
import { kubernetesBinary } from '../harness/cluster/index.ts';
import { spawnLogged } from './process.ts';

/**
 * `tskubelet-unpaced` is tskubelet with `--runtime-pacing=false`: the pacing lever off, in the same
 * run (issue 14). It is benchmarked only when asked for (`--kubelets tskubelet,tskubelet-unpaced`).
 * `tskubelet-base` is another build of tskubelet with the same flags — `bin/tskubelet` of the tree
 * named by `TSKUBELET_BASE_TREE` (`bench/run.ts --base-tree DIR`, e.g. a worktree at the commit
 * before a change) — to compare two builds in one run.
 */
export type KubeletKind = 'tskubelet' | 'tskubelet-unpaced' | 'tskubelet-base' | 'upstream';
export const KUBELETS: readonly KubeletKind[] = ['tskubelet', 'upstream'];
export const KNOWN_KUBELETS: readonly KubeletKind[] = [
  'tskubelet',
  'tskubelet-unpaced',
  'tskubelet-base',
  'upstream',
];

/** The `bin/tskubelet` of the base tree (`TSKUBELET_BASE_TREE`) for kind `tskubelet-base`. */
export function baseTreeBin(): string {
  const tree = process.env.TSKUBELET_BASE_TREE;
  if (!tree) {
    throw new KubeletError(
      'InvalidArgument',
      'start kubelet tskubelet-base',
      'no base tree: give --base-tree DIR (or TSKUBELET_BASE_TREE)',
    );
  }
  return join(tree, 'bin', 'tskubelet');
}

/** Whether this kind runs tskubelet (with whatever switches). */
export function isTskubelet(kind: KubeletKind): boolean {
  return kind !== 'upstream';
}

/** Ports chosen away from the defaults (10248/10250/10255) so a kubelet run by a test never collides. */
export const BENCH_HEALTHZ_PORT = 10358;
export const BENCH_UPSTREAM_PORT = 10350;
export const BENCH_TSKUBELET_PORT = 10351;
/** The plain-HTTP read-only API (`/pods`) when a benchmark asks for it (the churn benchmark does). */
export const BENCH_READONLY_PORT = 10359;

/** The kubelet API's HTTPS port (`--port`); the Node reports it, so the API server dials it. */
export function kubeletApiPort(kind: KubeletKind): number {
  return isTskubelet(kind) ? BENCH_TSKUBELET_PORT : BENCH_UPSTREAM_PORT;
}

const REPO = join(import.meta.dirname, '..', '..');
/**
 * The probe as compiled into dist/ by scripts/build.sh (bin/tskubelet builds it before node starts):
 * preloading the .ts would bring Node's type stripping (~17 MiB resident) back into the kubelet.
 */
const ELD_PROBE = join(REPO, 'dist', 'bench', 'lib', 'eld-probe.js');

export interface KubeletSpec {
  kind: KubeletKind;
  nodeName: string;
  /** containerd endpoint, unix:///path */
  endpoint: string;
  rootDir: string;
  /** Static pod directory (standalone mode, or static pods in cluster mode). */
  manifestDir?: string;
  /** Node kubeconfig: cluster mode. */
  kubeconfig?: string;
  logFile: string;
  /** tskubelet only: event-loop delay lines are appended here (see eld-probe.ts). */
  eldFile?: string;
  /** tskubelet only: extra NODE_OPTIONS (e.g. --cpu-prof). */
  nodeOptions?: string;
  /**
   * tskubelet only: another tree's `bin/tskubelet` (e.g. a worktree at an older commit, to compare
   * two builds in one run); default this repository's.
   */
  bin?: string;
  /** tskubelet only: the node flags `bin/tskubelet` gives node (`TSKUBELET_NODE_FLAGS`); default its own. */
  nodeFlags?: string;
  /**
   * The kubelet API secured as kubeadm sets it up (scenario apiload): client certificates verified
   * against this CA, bearer tokens by TokenReview, every request authorized by SubjectAccessReview.
   */
  clientCAFile?: string;
  /** The read-only port (`/pods` over plain HTTP); 0 or absent: off, as in the other scenarios. */
  readOnlyPort?: number;
  /** `--max-pods` for both kubelets (default 110, upstream's); raised for runs of more pods. */
  maxPods?: number;
  /**
   * Pod cgroups per QoS class under /kubepods with the pods' allocatable enforced: both kubelets'
   * default (`--cgroups-per-qos`, `--enforce-node-allocatable=pods`). Off by default here: a kubelet
   * with them removes other kubelets' pod cgroups there as orphans, so only a run that has the bed
   * to itself (the benchmark, under the bed lock, on a fresh containerd) turns them on.
   */
  qosCgroups?: boolean;
  /**
   * More flags after the common ones, for either kubelet (e.g. tskubelet's `--evented-pleg true`,
   * upstream's `--node-ip=…`; a flag given twice takes its last value in both).
   */
  extraArgs?: readonly string[];
}

/** Upstream's default maxPods; runs of more pods raise it to their pod count (`maxPodsFor`). */
export const DEFAULT_BENCH_MAX_PODS = 110;

/** `--max-pods` for a run of `pods` pods: the default, or the pod count when that is larger. */
export function maxPodsFor(pods: number): number {
  return Math.max(DEFAULT_BENCH_MAX_PODS, pods);
}

/** Settings both kubelets get, with the same value (all of them upstream 1.20's defaults). */
function commonFlags(s: KubeletSpec): [string, string][] {
  const f: [string, string][] = [
    ['container-runtime-endpoint', s.endpoint],
    ['root-dir', s.rootDir],
    ['hostname-override', s.nodeName],
    ['node-ip', '127.0.0.1'],
    ['healthz-port', String(BENCH_HEALTHZ_PORT)],
    ['sync-frequency', '1m0s'],
    ['file-check-frequency', '20s'],
    ['runtime-request-timeout', '2m0s'],
    ['node-status-update-frequency', '10s'],
    ['max-pods', String(s.maxPods ?? DEFAULT_BENCH_MAX_PODS)],
    ['v', '0'],
    // Both kubelets with or without pod cgroups alike (see KubeletSpec.qosCgroups).
    ...((s.qosCgroups
      ? [
          ['cgroups-per-qos', 'true'],
          ['enforce-node-allocatable', 'pods'],
        ]
      : [
          ['cgroups-per-qos', 'false'],
          ['enforce-node-allocatable', ''],
        ]) as [string, string][]),
  ];
  if (s.manifestDir) f.push(['pod-manifest-path', s.manifestDir]);
  if (s.clientCAFile) {
    f.push(
      ['client-ca-file', s.clientCAFile],
      ['anonymous-auth', 'false'],
      ['authentication-token-webhook', 'true'],
      ['authorization-mode', 'Webhook'],
    );
  }
  if (s.kubeconfig) {
    f.push(
      ['kubeconfig', s.kubeconfig],
      // Upstream's defaults since 1.27 (1.20 had 5/10, which throttles a batch): tskubelet's defaults.
      ['kube-api-qps', '50'],
      ['kube-api-burst', '100'],
      ['event-qps', '50'],
      ['event-burst', '100'],
    );
  }
  return f;
}

/** What the upstream kubelet 1.20.2 additionally needs on these VMs (see bench/README.md). */
export function upstreamOnlyFlags(
  s: Pick<KubeletSpec, 'endpoint' | 'rootDir' | 'readOnlyPort'>,
): [string, string][] {
  return [
    ['container-runtime', 'remote'],
    ['fail-swap-on', 'false'],
    ['cgroup-driver', 'cgroupfs'],
    ['pod-infra-container-image', PAUSE_IMAGE],
    ['containerd', s.endpoint.replace(/^unix:\/\//, '')],
    ['port', String(BENCH_UPSTREAM_PORT)],
    ['read-only-port', String(s.readOnlyPort ?? 0)],
    ['volume-plugin-dir', join(s.rootDir, 'volume-plugins')],
  ];
}

export function kubeletArgv(s: KubeletSpec): { cmd: string; args: string[] } {
  const flags = commonFlags(s);
  if (isTskubelet(s.kind)) {
    // The kubelet API away from 10250 (a test's kubelet may hold it), as upstream's below.
    flags.push(['port', String(BENCH_TSKUBELET_PORT)], ['read-only-port', String(s.readOnlyPort ?? 0)]);
    if (s.kind === 'tskubelet-unpaced') flags.push(['runtime-pacing', 'false']);
    return {
      cmd: s.bin ?? (s.kind === 'tskubelet-base' ? baseTreeBin() : join(REPO, 'bin', 'tskubelet')),
      args: ['run', ...flags.flatMap(([k, v]) => [`--${k}`, v]), ...(s.extraArgs ?? [])],
    };
  }
  return {
    cmd: kubernetesBinary('kubelet'),
    args: [...[...flags, ...upstreamOnlyFlags(s)].map(([k, v]) => `--${k}=${v}`), ...(s.extraArgs ?? [])],
  };
}

function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = connect({ host: '127.0.0.1', port });
    sock.once('connect', () => {
      sock.destroy();
      resolve(true);
    });
    sock.once('error', () => resolve(false));
  });
}

async function healthz(): Promise<boolean> {
  try {
    const res = await fetch(`http://127.0.0.1:${BENCH_HEALTHZ_PORT}/healthz`, {
      signal: AbortSignal.timeout(2_000),
    });
    return res.status === 200;
  } catch {
    return false; // not listening yet
  }
}

export interface RunningKubelet {
  spec: KubeletSpec;
  pid: number;
  /** Resolves when /healthz answers 200; rejects if the process exits or after `timeoutMs`. */
  ready(timeoutMs: number): Promise<void>;
  /** SIGTERM, SIGKILL after 15 s; resolves when the process is gone. */
  stop(): Promise<void>;
  exited(): boolean;
}

export async function startKubelet(spec: KubeletSpec): Promise<RunningKubelet> {
  const ports = [
    BENCH_HEALTHZ_PORT,
    kubeletApiPort(spec.kind),
    ...(spec.readOnlyPort ? [spec.readOnlyPort] : []),
  ];
  for (const port of ports) {
    if (await portOpen(port)) {
      throw new KubeletError(
        'AlreadyExists',
        'start kubelet',
        `port ${port} is in use (a kubelet left running?)`,
      );
    }
  }
  const { cmd, args } = kubeletArgv(spec);
  const env: NodeJS.ProcessEnv = { ...process.env };
  if (isTskubelet(spec.kind)) {
    const opts = [`--import=${ELD_PROBE}`, spec.nodeOptions ?? ''].filter(Boolean).join(' ');
    env.NODE_OPTIONS = opts;
    if (spec.eldFile) env.TSKUBELET_BENCH_ELD_FILE = spec.eldFile;
    if (spec.nodeFlags !== undefined) env.TSKUBELET_NODE_FLAGS = spec.nodeFlags;
  }
  const proc = spawnLogged(cmd, args, { logFile: spec.logFile, env, cwd: REPO });
  const exitCode = () => proc.child.exitCode ?? (proc.child.signalCode ? -1 : null);
  return {
    spec,
    pid: proc.pid,
    exited: () => proc.exited(),
    async ready(timeoutMs) {
      const deadline = Date.now() + timeoutMs;
      while (!(await healthz())) {
        if (proc.exited()) {
          const tail = (await readFile(spec.logFile, 'utf8')).split('\n').slice(-20).join('\n');
          throw new KubeletError('Unavailable', `start ${spec.kind}`, `exited (${exitCode()}):\n${tail}`);
        }
        if (Date.now() > deadline) {
          throw new KubeletError(
            'DeadlineExceeded',
            `start ${spec.kind}`,
            `no /healthz within ${timeoutMs} ms`,
          );
        }
        await sleep(100);
      }
    },
    stop: () => proc.stop(15_000),
  };
}

/** Unmounts whatever a kubelet left mounted under `dir` (deepest first), then removes it. */
export async function removeKubeletDir(dir: string): Promise<void> {
  const info = await readFile('/proc/self/mountinfo', 'utf8');
  const mounts = info
    .split('\n')
    .map((l) => l.split(' ')[4] ?? '')
    .map((p) => p.replace(/\\040/g, ' '))
    .filter((p) => p === dir || p.startsWith(`${dir}/`))
    .sort((a, b) => b.length - a.length);
  for (const m of mounts) await run('umount', ['-l', m], { timeoutMs: 10_000 });
  await rm(dir, { recursive: true, force: true });
}

/** Removes the pod log directories (/var/log/pods/<namespace>_<name>_<uid>) of the benchmark's pods. */
export async function removePodLogDirs(podPrefix: string, logsDir = '/var/log/pods'): Promise<void> {
  const entries = await readdir(logsDir).catch(() => [] as string[]);
  for (const e of entries) {
    const name = e.split('_')[1] ?? '';
    if (name.startsWith(podPrefix)) await rm(join(logsDir, e), { recursive: true, force: true });
  }
}
