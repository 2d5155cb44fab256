/** Test fakes for the stats provider: a CRI runtime that answers the stats calls, and fixture trees. */
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type {
  CallOptions,
  Container,
  ContainerStats,
  FilesystemUsage,
  ImageService,
  PodSandbox,
  PodSandboxStats,
  RuntimeService,
} from '../runtime/cri/types.ts';
import { KubeletError } from '../util/errors.ts';

/** Writes `files` (relative path → content) below `root`, making directories as needed. */
export async function writeTree(root: string, files: Record<string, string>): Promise<void> {
  for (const [rel, content] of Object.entries(files)) {
    const p = path.join(root, rel);
    await mkdir(path.dirname(p), { recursive: true });
    await writeFile(p, content);
  }
}

export interface FakeCriState {
  sandboxes: PodSandbox[];
  containers: Container[];
  /** undefined: ListPodSandboxStats is Unimplemented. */
  sandboxStats: PodSandboxStats[] | undefined;
  containerStats: ContainerStats[];
  imageFs: FilesystemUsage[];
}

export interface FakeCri {
  runtime: RuntimeService;
  images: ImageService;
  state: FakeCriState;
  /** Every call by method name, with its options. */
  calls: { method: string; opts: CallOptions | undefined }[];
  /** Makes the next calls of a method fail with this error. */
  failures: Map<string, Error>;
}

export function fakeCri(state: Partial<FakeCriState> = {}): FakeCri {
  const s: FakeCriState = {
    sandboxes: [],
    containers: [],
    sandboxStats: [],
    containerStats: [],
    imageFs: [],
    ...state,
  };
  const calls: FakeCri['calls'] = [];
  const failures = new Map<string, Error>();
  const answer = <T>(method: string, opts: CallOptions | undefined, value: () => T): Promise<T> => {
    calls.push({ method, opts });
    const err = failures.get(method);
    if (err) return Promise.reject(err);
    return Promise.resolve(structuredClone(value()));
  };
  const handlers: Record<string, (...args: unknown[]) => Promise<unknown>> = {
    listPodSandbox: (_f, o) => answer('listPodSandbox', o as CallOptions, () => s.sandboxes),
    listContainers: (_f, o) => answer('listContainers', o as CallOptions, () => s.containers),
    listContainerStats: (_f, o) => answer('listContainerStats', o as CallOptions, () => s.containerStats),
    listPodSandboxStats: (_f, o) => {
      if (s.sandboxStats === undefined) {
        calls.push({ method: 'listPodSandboxStats', opts: o as CallOptions });
        return Promise.reject(new KubeletError('Unimplemented', 'CRI ListPodSandboxStats', 'unknown method'));
      }
      const stats = s.sandboxStats;
      return answer('listPodSandboxStats', o as CallOptions, () => stats);
    },
    imageFsInfo: (o) => answer('imageFsInfo', o as CallOptions, () => s.imageFs),
  };
  const unexpected = (name: string) => () => Promise.reject(new Error(`unexpected CRI call ${name}`));
  const proxy = <T extends object>(): T =>
    new Proxy({} as T, { get: (_t, key: string) => handlers[key] ?? unexpected(key) });
  return { runtime: proxy<RuntimeService>(), images: proxy<ImageService>(), state: s, calls, failures };
}

const NS = 1e6;

/** A ready sandbox, a running container in it, and their stats at `timeMs` with `cpuNs` used. */
export function criPod(
  uid: string,
  opts: { name?: string; container?: string; timeMs: number; cpuNs: number; workingSet: number },
): { sandbox: PodSandbox; container: Container; stats: ContainerStats } {
  const name = opts.name ?? `pod-${uid}`;
  const cname = opts.container ?? 'app';
  const sandbox: PodSandbox = {
    id: `sb-${uid}`,
    metadata: { name, namespace: 'default', uid, attempt: 0 },
    state: 'SANDBOX_READY',
    createdAt: 1_000 * NS,
    labels: {},
    annotations: {},
  };
  const container: Container = {
    id: `ctr-${uid}-${cname}`,
    podSandboxId: sandbox.id,
    metadata: { name: cname, attempt: 0 },
    image: { image: 'docker.io/library/busybox:1.29' },
    imageRef: 'sha256:abc',
    state: 'CONTAINER_RUNNING',
    createdAt: 2_000 * NS,
    labels: {},
    annotations: {},
  };
  const stats: ContainerStats = {
    attributes: { id: container.id, metadata: { name: cname, attempt: 0 }, labels: {}, annotations: {} },
    cpu: { timestamp: opts.timeMs * NS, usageCoreNanoSeconds: { value: opts.cpuNs } },
    memory: { timestamp: opts.timeMs * NS, workingSetBytes: { value: opts.workingSet } },
    writableLayer: {
      timestamp: opts.timeMs * NS,
      fsId: { mountpoint: '/' },
      usedBytes: { value: 8192 },
      inodesUsed: { value: 5 },
    },
  };
  return { sandbox, container, stats };
}

/** A fake procfs with the files the provider reads. */
export function procFiles(o: {
  cpuTicks: number;
  memTotalKb: number;
  memFreeKb: number;
}): Record<string, string> {
  return {
    stat: `cpu  ${o.cpuTicks} 0 0 5000 10 0 0 0 0 0\ncpu0 ${o.cpuTicks} 0 0 5000 10 0 0 0 0 0\nbtime 1700000000\n`,
    meminfo: `MemTotal:       ${o.memTotalKb} kB\nMemFree:        ${o.memFreeKb} kB\nInactive(file):   1000 kB\nAnonPages:        2000 kB\n`,
    vmstat: 'pgfault 1234\npgmajfault 5\n',
    loadavg: '0.10 0.20 0.30 2/345 6789\n',
    'sys/kernel/pid_max': '4194304\n',
    'self/net/dev':
      'Inter-|   Receive                                                |  Transmit\n' +
      ' face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n' +
      '    lo:  100 1 0 0 0 0 0 0 100 1 0 0 0 0 0 0\n' +
      '  eth0: 5000 10 1 0 0 0 0 0 7000 12 2 0 0 0 0 0\n' +
      'veth12: 9 1 0 0 0 0 0 0 9 1 0 0 0 0 0 0\n',
    'self/cgroup':
      '4:memory:/system.slice/kubelet.service\n3:pids:/\n2:cpu,cpuacct:/system.slice/kubelet.service\n',
    'self/mountinfo': '22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n',
  };
}

export interface FakeCgroup {
  cpuNs: number;
  usage: number;
  inactiveFile?: number;
  /** Absent: unlimited (v1 writes 2^63 − 4096). */
  limit?: number;
  tasks?: number;
  /** The cgroup's own processes (cgroup.procs). */
  procs?: number[];
}

/** A cgroup v1 tree (cpu,cpuacct + memory + pids hierarchies) with the given cgroups in it. */
export function cgroupV1Files(cgroups: Record<string, FakeCgroup>): Record<string, string> {
  const files: Record<string, string> = {
    'cpu,cpuacct/cgroup.procs': '',
    'memory/cgroup.procs': '',
    'pids/cgroup.procs': '',
  };
  for (const [cg, c] of Object.entries(cgroups)) {
    const p = cg === '/' ? '' : cg;
    files[`cpu,cpuacct${p}/cpuacct.usage`] = `${c.cpuNs}\n`;
    files[`memory${p}/memory.usage_in_bytes`] = `${c.usage}\n`;
    files[`memory${p}/memory.limit_in_bytes`] = `${c.limit ?? 9223372036854771712}\n`;
    files[`memory${p}/memory.stat`] =
      `cache 1\nrss 2\ntotal_cache 300\ntotal_rss 400\ntotal_inactive_file ${c.inactiveFile ?? 0}\n` +
      'total_pgfault 77\ntotal_pgmajfault 3\n';
    files[`memory${p}/cgroup.procs`] = (c.procs ?? []).map((x) => `${x}\n`).join('');
    if (c.tasks !== undefined) files[`pids${p}/pids.current`] = `${c.tasks}\n`;
  }
  return files;
}
