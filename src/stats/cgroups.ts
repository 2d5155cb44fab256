/**
 * CPU, memory and task counts of cgroups, read the way cadvisor reads them (cgroup v1 and v2), for
 * the node's system containers and for pods whose runtime does not report pod-level stats.
 */
import { readFile, readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { detectLayout, parsePodCgroupDirName, type CgroupLayout, type QOSCgroupNames } from '../cm/index.ts';
import { parseKeyValues } from './procfs.ts';

/** cadvisor treats a memory limit above 2^62 as no limit (v1 writes 2^63 − page size). */
const UNLIMITED_MEMORY = 2 ** 62;

export interface CgroupMemory {
  usageBytes: number;
  workingSetBytes: number;
  rssBytes: number | undefined;
  cacheBytes: number | undefined;
  pageFaults: number | undefined;
  majorPageFaults: number | undefined;
  /** undefined when unlimited. */
  limitBytes: number | undefined;
}

export interface CgroupSample {
  /** ms since the epoch, when read. */
  time: number;
  /** When the cgroup directory was made (ms), as far as the filesystem tells. */
  startTime: number | undefined;
  cpuUsageNs: number | undefined;
  memory: CgroupMemory | undefined;
  /** Tasks in the cgroup and below (pids.current). */
  tasks: number | undefined;
}

/** Reads cgroups by name (`/kubepods/burstable/pod<uid>`), whichever cgroup version the node runs. */
export interface CgroupReader {
  readonly version: 1 | 2;
  /** undefined when the cgroup does not exist. */
  read(cgroup: string): Promise<CgroupSample | undefined>;
  /** Pod cgroups below the kubepods cgroup and its QoS tiers, by pod UID. */
  podCgroups(qos: QOSCgroupNames): Promise<Map<string, string>>;
  /** Some process directly in `cgroup` (its cgroup.procs), e.g. a sandbox's pause process. */
  anyPid(cgroup: string): Promise<number | undefined>;
}

async function text(file: string): Promise<string | undefined> {
  try {
    return await readFile(file, 'utf8');
  } catch {
    // Missing file (controller not mounted, cgroup gone, root cgroup without the file): no value.
    return undefined;
  }
}

async function num(file: string): Promise<number | undefined> {
  const t = (await text(file))?.trim();
  if (t === undefined || t === '' || t === 'max') return undefined;
  const n = Number(t);
  return Number.isFinite(n) ? n : undefined;
}

function memoryFrom(
  usage: number | undefined,
  statText: string | undefined,
  limit: number | undefined,
  v1: boolean,
): CgroupMemory | undefined {
  if (usage === undefined) return undefined;
  const s = parseKeyValues(statText ?? '');
  const get = (key: string): number | undefined => s.get(v1 ? `total_${key}` : key);
  const inactiveFile = get('inactive_file') ?? 0;
  return {
    usageBytes: usage,
    workingSetBytes: usage > inactiveFile ? usage - inactiveFile : 0,
    rssBytes: v1 ? get('rss') : get('anon'),
    cacheBytes: v1 ? get('cache') : get('file'),
    pageFaults: get('pgfault'),
    majorPageFaults: get('pgmajfault'),
    limitBytes: limit !== undefined && limit < UNLIMITED_MEMORY ? limit : undefined,
  };
}

async function createdAt(dir: string): Promise<number | undefined> {
  try {
    const s = await stat(dir);
    return s.birthtimeMs > 0 ? s.birthtimeMs : s.ctimeMs;
  } catch {
    // The cgroup went away between listing and reading: no start time.
    return undefined;
  }
}

function readerFor(layout: CgroupLayout, now: () => number): CgroupReader | undefined {
  const v2 = layout.hierarchies.find((h) => h.kind === 'v2' && !h.hybrid);
  const v1 = (controller: string): string | undefined =>
    layout.hierarchies.find((h) => h.kind === 'v1' && h.controllers.has(controller))?.dir;
  const cpuDir = v2?.dir ?? v1('cpuacct');
  const memDir = v2?.dir ?? v1('memory');
  const pidsDir = v2?.dir ?? v1('pids');
  const listDir = cpuDir ?? memDir;
  if (!listDir) return undefined;
  const isV1 = v2 === undefined;
  const at = (base: string | undefined, cgroup: string, file: string): string | undefined =>
    base === undefined ? undefined : path.join(base, cgroup, file);
  const maybe = async <T>(file: string | undefined, fn: (f: string) => Promise<T>): Promise<T | undefined> =>
    file === undefined ? undefined : fn(file);

  return {
    version: isV1 ? 1 : 2,
    async read(cgroup) {
      const startTime = await createdAt(path.join(listDir, cgroup));
      if (startTime === undefined) return undefined;
      const time = now();
      const [cpu, usage, memStat, limit, tasks] = await Promise.all([
        isV1
          ? maybe(at(cpuDir, cgroup, 'cpuacct.usage'), num)
          : maybe(at(cpuDir, cgroup, 'cpu.stat'), async (f) => {
              const usec = parseKeyValues((await text(f)) ?? '').get('usage_usec');
              return usec === undefined ? undefined : usec * 1000;
            }),
        maybe(at(memDir, cgroup, isV1 ? 'memory.usage_in_bytes' : 'memory.current'), num),
        maybe(at(memDir, cgroup, 'memory.stat'), text),
        maybe(at(memDir, cgroup, isV1 ? 'memory.limit_in_bytes' : 'memory.max'), num),
        maybe(at(pidsDir, cgroup, 'pids.current'), num),
      ]);
      return { time, startTime, cpuUsageNs: cpu, memory: memoryFrom(usage, memStat, limit, isV1), tasks };
    },
    async podCgroups(qos) {
      const out = new Map<string, string>();
      for (const parent of [qos.guaranteed, qos.burstable, qos.besteffort]) {
        let names: string[];
        try {
          names = await readdir(path.join(listDir, parent));
        } catch {
          // No such QoS tier (cgroupsPerQOS off, or not made yet): no pods there.
          continue;
        }
        for (const name of names) {
          const uid = parsePodCgroupDirName(name, qos.driver);
          if (uid !== undefined) out.set(uid, path.posix.join(parent, name));
        }
      }
      return out;
    },
    async anyPid(cgroup) {
      const t = await text(path.join(memDir ?? listDir, cgroup, 'cgroup.procs'));
      const pid = Number(t?.split('\n')[0]);
      return Number.isInteger(pid) && pid > 0 ? pid : undefined;
    },
  };
}

/** A reader for the cgroup filesystem mounted at `root`; undefined when none is there. */
export async function createCgroupReader(root: string, now: () => number): Promise<CgroupReader | undefined> {
  let layout: CgroupLayout;
  try {
    layout = await detectLayout(root);
  } catch {
    // No cgroup filesystem (a container without one, a test without a fake tree): host stats only.
    return undefined;
  }
  return readerFor(layout, now);
}
