/**
 * The kubelet under test: tskubelet or the upstream kubelet 1.20.2, on the default kubelet ports
 * (10250 API, 10248 healthz) because the API server reaches a node's kubelet at InternalIP:10250,
 * joined to the cluster bed as its only node, with authentication and authorization that accept the
 * API server's client certificate (x509 against the bed CA, webhook authz) and nothing anonymous.
 */
import { spawn } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { readFile, readdir, rm } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { networkInterfaces } from 'node:os';
import type { Logger } from '../../../src/util/logger.ts';
import { KubeletError, describeError } from '../../../src/util/errors.ts';
import { sleep } from '../../../src/util/abort.ts';
import { run } from '../exec.ts';
import { BED_PATHS } from '../containerd.ts';
import { PAUSE_IMAGE } from '../images.ts';
import { kubernetesBinary } from '../cluster/index.ts';
import { portInUse } from '../cluster/daemon.ts';
import { within } from './within.ts';

export type KubeletKind = 'tskubelet' | 'upstream';
export const KUBELET_KINDS: readonly KubeletKind[] = ['upstream', 'tskubelet'];

const REPO = join(import.meta.dirname, '..', '..', '..');
const KUBELET_PORTS = [10250, 10248] as const;
const STOP_GRACE_MS = 20_000;

export interface KubeletSpec {
  kind: KubeletKind;
  nodeName: string;
  kubeconfig: string;
  caFile: string;
  /** unix:///path of the containerd socket. */
  endpoint: string;
  /** The node's InternalIP: where the API server reaches the kubelet (:10250). Not loopback, see `hostIp`. */
  nodeIp: string;
  rootDir: string;
  logFile: string;
  /** Appended to the command line (e.g. `--v=4`). */
  extraArgs?: readonly string[];
}

/** What a kubelet is told about its node, wherever it runs (the host bed or the node VM). */
export type KubeletNode = Pick<
  KubeletSpec,
  'kind' | 'nodeName' | 'kubeconfig' | 'nodeIp' | 'endpoint' | 'rootDir'
>;

const flag = ([k, v]: readonly [string, string]): string => `--${k}=${v}`;

/**
 * The flags a kubelet gets wherever it runs, in `--name=value` form: the node's name, address and
 * credentials, the runtime and the root dir; for upstream also what tskubelet does without a flag
 * (bench/README.md explains each): the remote runtime and cAdvisor's containerd socket, a plugin
 * dir under the root dir, no swap check, the bed's pause image, and the API rates tskubelet
 * defaults to (upstream's since 1.27; 1.20's 5/10 would throttle the suite). One list for both
 * placements, so the host run and the node VM run give upstream the same settings.
 */
export function nodeFlags(s: KubeletNode): string[] {
  const common: [string, string][] = [
    ['kubeconfig', s.kubeconfig],
    ['hostname-override', s.nodeName],
    ['node-ip', s.nodeIp],
    ['container-runtime-endpoint', s.endpoint],
    ['root-dir', s.rootDir],
    ['v', '2'],
  ];
  if (s.kind === 'tskubelet') return common.map(flag);
  const upstream: [string, string][] = [
    ['container-runtime', 'remote'],
    ['containerd', s.endpoint.replace(/^unix:\/\//, '')],
    ['volume-plugin-dir', join(s.rootDir, 'volume-plugins')],
    ['fail-swap-on', 'false'],
    ['pod-infra-container-image', PAUSE_IMAGE],
    ['kube-api-qps', '50'],
    ['kube-api-burst', '100'],
    ['event-qps', '50'],
    ['event-burst', '100'],
  ];
  return [...common, ...upstream].map(flag);
}

/**
 * Upstream's flags on the host bed only: no QoS cgroups and the cgroupfs driver (the host's
 * hybrid cgroup v1 tree has no systemd), and the kubelet API for the API server's client
 * certificate only (in the node VM both kubelets read that from their config file).
 */
const UPSTREAM_HOST_FLAGS = (caFile: string): [string, string][] => [
  ['cgroups-per-qos', 'false'],
  ['enforce-node-allocatable', ''],
  ['cgroup-driver', 'cgroupfs'],
  ['client-ca-file', caFile],
  ['anonymous-auth', 'false'],
  ['authentication-token-webhook', 'true'],
  ['authorization-mode', 'Webhook'],
  ['read-only-port', '0'],
];

/** The command line of a kubelet on the host bed; `extraArgs` last. */
export function kubeletCommand(s: KubeletSpec): { cmd: string; args: string[] } {
  const extra = s.extraArgs ?? [];
  if (s.kind === 'tskubelet') {
    return {
      cmd: join(REPO, 'bin', 'tskubelet'),
      args: ['run', ...nodeFlags(s), flag(['client-ca-file', s.caFile]), ...extra],
    };
  }
  return {
    cmd: kubernetesBinary('kubelet'),
    args: [...nodeFlags(s), ...UPSTREAM_HOST_FLAGS(s.caFile).map(flag), ...extra],
  };
}

/**
 * The host's own address (the source of its default route): the node IP for both kubelets. The
 * upstream kubelet 1.20 refuses a loopback one ("nodeIP can't be loopback address": the Node gets
 * no addresses, so no hostIP for pods and no InternalIP for the API server to reach it by).
 */
export async function hostIp(): Promise<string> {
  const { stdout } = await run('ip', ['-4', '-o', 'route', 'get', '1.1.1.1'], { timeoutMs: 5_000 }).catch(
    () => ({ stdout: '' }), // no default route: fall back to the interfaces below
  );
  const fromRoute = /\bsrc (\d+\.\d+\.\d+\.\d+)/.exec(stdout)?.[1];
  if (fromRoute) return fromRoute;
  for (const [name, addrs] of Object.entries(networkInterfaces())) {
    if (name.startsWith('tskbed') || name.startsWith('cni') || name.startsWith('veth')) continue;
    const a = addrs?.find((x) => x.family === 'IPv4' && !x.internal);
    if (a) return a.address;
  }
  throw new KubeletError(
    'NotFound',
    'node IP',
    'no non-loopback IPv4 address on this machine (give --node-ip)',
  );
}

async function argvOf(pid: string): Promise<string[]> {
  const raw = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
  return raw === '' ? [] : raw.replace(/\0$/, '').split('\0');
}

/** The script a node (or shell) command line runs: its first argument that is not an option. */
function scriptOf(argv: readonly string[]): string {
  return argv.slice(1).find((a) => !a.startsWith('-')) ?? '';
}

/** tskubelet's node CLI verbs: they read a running kubelet, they do not run one. */
const CLI_VERBS = new Set(['get', 'describe', 'logs', 'exec', 'timeline', 'why', 'version', 'help']);
const BED_ENDPOINTS = new Set([BED_PATHS.socket, `unix://${BED_PATHS.socket}`]);

/**
 * Whether a tskubelet command line (after the script) may run pods on the bed: not a node CLI verb,
 * not `--help`/`--version`, and no runtime endpoint other than the bed's (a kubelet that another
 * engineer points at a socket of their own, to try a flag or a failure, does not touch the bed).
 */
function tskubeletOnBed(args: readonly string[]): boolean {
  const verb = args.find((a) => !a.startsWith('-'));
  if (verb !== undefined && CLI_VERBS.has(verb)) return false;
  if (args.some((a) => a === '--help' || a === '-h' || a === '--version' || a.startsWith('--version='))) {
    return false;
  }
  const i = args.findIndex((a) => a === '--container-runtime-endpoint');
  const endpoint =
    i >= 0 ? args[i + 1] : args.find((a) => a.startsWith('--container-runtime-endpoint='))?.split('=')[1];
  return endpoint === undefined || BED_ENDPOINTS.has(endpoint);
}

/**
 * What makes a process a kubelet, or an integration test run or benchmark that may host or start
 * one: judged by the program and the script it runs, not by any argument (an `eslint` or `prettier`
 * run over test/integration files is no test run). Unit test runs (`node --test src/…`) do not
 * touch the bed and do not count.
 */
export function kubeletLike(argv: readonly string[]): boolean {
  const program = basename(argv[0] ?? '');
  if (program === 'kubelet') return true;
  if (!['node', 'bash', 'sh'].includes(program)) return false;
  const script = scriptOf(argv);
  if (
    script.endsWith('bin/tskubelet') ||
    script.endsWith('bin/kubelet') ||
    script.endsWith('dist/js/cli/main.js') ||
    script.endsWith('src/cli/main.ts')
  ) {
    return tskubeletOnBed(argv.slice(argv.indexOf(script) + 1));
  }
  if (script.endsWith('bench/run.ts') || (script.includes('test/integration/') && script.endsWith('.ts'))) {
    return true;
  }
  return argv.includes('--test') && argv.some((a) => a.includes('test/integration/'));
}

/**
 * Kubelet processes (or test runs, benchmarks) other than `except`, and busy kubelet ports (unless
 * `ports` is false: while the kubelet under test runs, they are its own).
 */
export async function otherKubelets(except: readonly number[] = [], ports = true): Promise<string[]> {
  const found: string[] = [];
  for (const pid of await readdir('/proc')) {
    if (!/^\d+$/.test(pid) || Number(pid) === process.pid || except.includes(Number(pid))) continue;
    const argv = await argvOf(pid);
    if (kubeletLike(argv)) found.push(`pid ${pid}: ${argv.join(' ').slice(0, 160)}`);
  }
  if (ports)
    for (const port of KUBELET_PORTS) if (await portInUse(port)) found.push(`port ${port} is in use`);
  return found;
}

const IDLE_POLL_MS = 5_000;

/**
 * Waits until no other kubelet or test run has been seen for `quietMs` (someone iterating restarts
 * their kubelet every few seconds; a gap is not a free bed). The bed is shared with other engineers.
 */
export async function waitForIdleBed(
  logger: Logger,
  opts: { timeoutMs: number; quietMs: number },
  signal?: AbortSignal,
): Promise<void> {
  const deadline = Date.now() + opts.timeoutMs;
  let idleSince: number | undefined;
  let said = '';
  for (;;) {
    const others = await otherKubelets();
    if (others.length === 0) {
      idleSince ??= Date.now();
      if (Date.now() - idleSince >= opts.quietMs) return;
    } else {
      idleSince = undefined;
      const now = others.join('; ');
      if (now !== said) logger.info('another kubelet (or test run) is using the bed; waiting', { others });
      said = now;
    }
    if (Date.now() > deadline) {
      throw new KubeletError(
        'DeadlineExceeded',
        'wait for the bed',
        `not free for ${opts.quietMs / 1000} s in a row within ${opts.timeoutMs / 60_000} min; last seen: ${said}`,
      );
    }
    await sleep(IDLE_POLL_MS, signal);
  }
}

export interface RunningKubelet {
  spec: KubeletSpec;
  pid: number;
  /** Exit code or signal once it has exited. */
  exit(): string | undefined;
  /** SIGTERM, SIGKILL after 20 s; resolves when the process is gone. */
  stop(): Promise<void>;
}

export function startKubelet(spec: KubeletSpec, logger: Logger): RunningKubelet {
  const { cmd, args } = kubeletCommand(spec);
  const fd = openSync(spec.logFile, 'a');
  let child;
  try {
    child = spawn(cmd, args, { stdio: ['ignore', fd, fd], cwd: REPO });
  } finally {
    closeSync(fd);
  }
  const pid = child.pid;
  if (pid === undefined) throw new KubeletError('NotFound', `start ${spec.kind}`, `cannot run ${cmd}`);
  let exit: string | undefined;
  const exited = new Promise<void>((resolve) =>
    child.once('exit', (code, sig) => {
      exit = sig ?? `exit ${code}`;
      resolve();
    }),
  );
  logger.info(`started ${spec.kind}`, {
    pid,
    node: spec.nodeName,
    log: spec.logFile,
    command: `${cmd} ${args.join(' ')}`,
  });
  return {
    spec,
    pid,
    exit: () => exit,
    async stop() {
      if (exit !== undefined) return;
      child.kill('SIGTERM');
      if ((await within(exited, STOP_GRACE_MS)) === 'timeout') {
        logger.warn(`${spec.kind} ignored SIGTERM for ${STOP_GRACE_MS} ms; killing it`, { pid });
        child.kill('SIGKILL');
        await exited;
      }
    },
  };
}

export function kubectl(admin: string, args: readonly string[], timeoutMs = 60_000): Promise<string> {
  return run('kubectl', ['--kubeconfig', admin, ...args], { timeoutMs }).then((r) => r.stdout);
}

/** Resolves once the Node reports Ready=True; rejects if the kubelet exits first or on timeout. */
export async function waitNodeReady(admin: string, k: RunningKubelet, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const jsonpath = '{.status.conditions[?(@.type=="Ready")].status}';
  for (;;) {
    const exit = k.exit();
    if (exit !== undefined) {
      const tail = (await readFile(k.spec.logFile, 'utf8').catch(() => ''))
        .trimEnd()
        .split('\n')
        .slice(-25)
        .join('\n');
      throw new KubeletError(
        'Unavailable',
        `start ${k.spec.kind}`,
        `exited (${exit}) before its node was Ready:\n${tail}`,
      );
    }
    const ready = await kubectl(
      admin,
      ['get', 'node', k.spec.nodeName, '-o', `jsonpath=${jsonpath}`],
      15_000,
    ).catch(
      () => '', // not registered yet
    );
    if (ready === 'True') return;
    if (Date.now() > deadline) {
      throw new KubeletError(
        'DeadlineExceeded',
        `start ${k.spec.kind}`,
        `node ${k.spec.nodeName} not Ready within ${timeoutMs} ms (log: ${k.spec.logFile})`,
      );
    }
    await sleep(1_000);
  }
}

/**
 * Before a run: deletes every Node (the e2e framework waits for all nodes to be schedulable, and a
 * stale object of the node under test carries old status), and the namespaces, e2e StorageClasses
 * and Released PersistentVolumes an earlier e2e run left.
 */
export async function cleanClusterObjects(admin: string, logger: Logger): Promise<void> {
  const nodes = lines(await kubectl(admin, ['get', 'nodes', '-o', 'name']));
  if (nodes.length > 0) {
    logger.info('deleting Node objects', { nodes });
    await kubectl(admin, ['delete', ...nodes, '--wait=true'], 120_000);
  }
  await deleteLeftovers(
    admin,
    logger,
    'namespaces',
    lines(await kubectl(admin, ['get', 'namespaces', '-l', 'e2e-run', '-o', 'name'])),
  );
  // Cluster-scoped objects of e2e specs that were cut short (a run's time limit) outlive their
  // namespaces: the local-volume specs' StorageClass is named after the spec's namespace, whose
  // random number recurs, and a leftover one fails a later spec's set-up with AlreadyExists.
  await deleteLeftovers(
    admin,
    logger,
    'StorageClasses',
    lines(await kubectl(admin, ['get', 'storageclasses', '-o', 'name'])).filter((l) =>
      l.startsWith(`storageclass.storage.k8s.io/${E2E_STORAGE_CLASS_PREFIX}`),
    ),
  );
  const released = await kubectl(admin, [
    'get',
    'persistentvolumes',
    '-o',
    'jsonpath={range .items[?(@.status.phase=="Released")]}{.metadata.name}{"\\n"}{end}',
  ]);
  await deleteLeftovers(
    admin,
    logger,
    'Released PersistentVolumes',
    lines(released).map((n) => `persistentvolume/${n}`),
  );
}

function lines(out: string): string[] {
  return out.split('\n').filter((l) => l !== '');
}

/** Deletes `objects` (kubectl `kind/name`), if any, without waiting, with a log line naming `what`. */
async function deleteLeftovers(
  admin: string,
  logger: Logger,
  what: string,
  objects: string[],
): Promise<void> {
  if (objects.length === 0) return;
  logger.info(`deleting ${what} an earlier e2e run left`, { count: objects.length });
  await kubectl(admin, ['delete', ...objects, '--wait=false'], 120_000);
}

/** The e2e local-volume specs' StorageClass: this prefix, then the spec's namespace. */
const E2E_STORAGE_CLASS_PREFIX = 'local-volume-test-storageclass-';

/** Unmounts whatever a kubelet left mounted under `dir` (deepest first), then removes it. */
export async function removeKubeletDir(dir: string, logger: Logger): Promise<void> {
  const info = await readFile('/proc/self/mountinfo', 'utf8');
  const mounts = info
    .split('\n')
    .map((l) => (l.split(' ')[4] ?? '').replace(/\\040/g, ' '))
    .filter((p) => p === dir || p.startsWith(`${dir}/`))
    .sort((a, b) => b.length - a.length);
  for (const m of mounts) {
    await run('umount', ['-l', m], { timeoutMs: 10_000 }).catch((err: unknown) =>
      logger.warn('cannot unmount', { mount: m, err: describeError(err) }),
    );
  }
  await rm(dir, { recursive: true, force: true });
}
