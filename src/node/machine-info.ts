import { readdir, readFile, statfs } from 'node:fs/promises';
import { availableParallelism, cpus, release, totalmem } from 'node:os';
import { join } from 'node:path';
import type { Logger } from '../util/logger.ts';
import { describeError } from '../util/errors.ts';
import { parseCPUList } from '../util/cpuset.ts';

/**
 * What the node reports about the machine (upstream cadvisor MachineInfo + VersionInfo + rootfs
 * info). Read once per registration attempt and cached; a field that cannot be read is empty, as
 * upstream, except memory (falls back to os.totalmem) and the root filesystem (left out, which
 * makes the node NotReady with "Missing node capacity for resources: ephemeral-storage").
 */
export interface MachineInfo {
  numCores: number;
  memoryCapacityBytes: number;
  machineID: string;
  systemUUID: string;
  bootID: string;
  kernelVersion: string;
  osImage: string;
  /** Size of the filesystem holding the kubelet root dir; undefined when statfs failed. */
  rootfsCapacityBytes: number | undefined;
  /** One entry per huge page size the kernel supports (`/sys/kernel/mm/hugepages`). */
  hugePages: { pageSizeKiB: number; numPages: number }[];
}

/** The host, behind an interface so tests feed sample files. */
export interface MachineReaders {
  readFile(path: string): Promise<string>;
  readDir(path: string): Promise<string[]>;
  statfs(path: string): Promise<{ bsize: number; blocks: number }>;
  cpuCount(): number;
  kernelRelease(): string;
  totalMemBytes(): number;
}

export const hostReaders: MachineReaders = {
  readFile: (path) => readFile(path, 'utf8'),
  readDir: (path) => readdir(path),
  statfs: async (path) => {
    const s = await statfs(path);
    // cadvisor: capacity = fragment size × blocks (f_frsize, usually equal to f_bsize).
    return { bsize: s.frsize || s.bsize, blocks: s.blocks };
  },
  // cadvisor counts every online CPU of the machine, not the process affinity mask.
  cpuCount: () => cpus().length || availableParallelism(),
  kernelRelease: () => release(),
  totalMemBytes: () => totalmem(),
};

/** `MemTotal:       24576000 kB` from /proc/meminfo, in bytes. */
export function parseMemTotal(meminfo: string): number | undefined {
  const m = /^MemTotal:\s+(\d+)\s*kB\s*$/m.exec(meminfo);
  return m?.[1] === undefined ? undefined : Number(m[1]) * 1024;
}

/** /etc/os-release as key → value, quotes and backslash escapes removed. */
export function parseOsRelease(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const eq = line.indexOf('=');
    if (eq <= 0) continue;
    let value = line.slice(eq + 1);
    const q = value[0];
    if ((q === '"' || q === "'") && value.endsWith(q) && value.length >= 2) {
      value = value.slice(1, -1);
      if (q === '"') value = value.replace(/\\(.)/g, '$1');
    }
    out[line.slice(0, eq)] = value;
  }
  return out;
}

/** The OS image name as cadvisor reports it: PRETTY_NAME, or `Linux`. */
export function osImageFrom(osRelease: string | undefined): string {
  if (osRelease === undefined) return 'Linux';
  return parseOsRelease(osRelease)['PRETTY_NAME'] || 'Linux';
}

/** `hugepages-2048kB` → 2048. */
function hugePageSizeKiB(dirName: string): number | undefined {
  const m = /^hugepages-(\d+)kB$/.exec(dirName);
  return m?.[1] === undefined ? undefined : Number(m[1]);
}

const HUGEPAGES_DIR = '/sys/kernel/mm/hugepages';

/**
 * The huge page sizes the kernel supports and how many pages of each are allocated (cadvisor
 * GetHugePagesInfo): one entry per `/sys/kernel/mm/hugepages/hugepages-<size>kB`, none when the
 * directory cannot be read; an unreadable `nr_hugepages` counts 0.
 */
export async function readHugePages(
  readers: Pick<MachineReaders, 'readFile' | 'readDir'> = hostReaders,
  logger?: Logger,
): Promise<MachineInfo['hugePages']> {
  const hugePages: MachineInfo['hugePages'] = [];
  let dirs: string[] = [];
  try {
    dirs = await readers.readDir(HUGEPAGES_DIR);
  } catch (err) {
    logger?.debug('machine info: no huge page sizes', { path: HUGEPAGES_DIR, err: describeError(err) });
  }
  for (const d of dirs.sort()) {
    const pageSizeKiB = hugePageSizeKiB(d);
    if (pageSizeKiB === undefined) continue;
    const file = join(HUGEPAGES_DIR, d, 'nr_hugepages');
    let n = Number.NaN;
    try {
      n = Number((await readers.readFile(file)).trim());
    } catch (err) {
      logger?.debug('machine info: file not readable', { path: file, err: describeError(err) });
    }
    hugePages.push({ pageSizeKiB, numPages: Number.isFinite(n) ? n : 0 });
  }
  return hugePages;
}

export async function readMachineInfo(
  rootDir: string,
  readers: MachineReaders = hostReaders,
  logger?: Logger,
): Promise<MachineInfo> {
  const optional = async (path: string): Promise<string | undefined> => {
    try {
      return (await readers.readFile(path)).trim();
    } catch (err) {
      logger?.debug('machine info: file not readable', { path, err: describeError(err) });
      return undefined;
    }
  };

  const meminfo = await optional('/proc/meminfo');
  let memoryCapacityBytes = meminfo === undefined ? undefined : parseMemTotal(meminfo);
  if (memoryCapacityBytes === undefined) {
    logger?.warn('MemTotal not found in /proc/meminfo; using os.totalmem()');
    memoryCapacityBytes = readers.totalMemBytes();
  }

  let rootfsCapacityBytes: number | undefined;
  try {
    const s = await readers.statfs(rootDir);
    rootfsCapacityBytes = s.bsize * s.blocks;
  } catch (err) {
    logger?.error('cannot stat the root dir filesystem; ephemeral-storage capacity is unknown', {
      rootDir,
      err: describeError(err),
    });
  }

  const hugePages = await readHugePages(readers, logger);

  return {
    numCores: readers.cpuCount(),
    memoryCapacityBytes,
    machineID: (await optional('/etc/machine-id')) ?? (await optional('/var/lib/dbus/machine-id')) ?? '',
    systemUUID: (await optional('/sys/class/dmi/id/product_uuid')) ?? '',
    bootID: (await optional('/proc/sys/kernel/random/boot_id')) ?? '',
    kernelVersion: readers.kernelRelease(),
    osImage: osImageFrom(await optional('/etc/os-release')),
    rootfsCapacityBytes,
    hugePages,
  };
}

/**
 * The online CPUs (`/sys/devices/system/cpu/online`, what cadvisor's topology lists); when the
 * file cannot be read, CPUs 0…n−1 of os.cpus(), with a log line.
 */
export async function readOnlineCPUs(
  log: Logger,
  readers: Pick<MachineReaders, 'readFile' | 'cpuCount'> = hostReaders,
): Promise<number[]> {
  const file = '/sys/devices/system/cpu/online';
  try {
    const parsed = parseCPUList(await readers.readFile(file));
    if (parsed.ok) return parsed.cpus;
    log.warn('cannot parse the online CPU list; assuming CPUs 0…n−1', { file, err: parsed.error });
  } catch (err) {
    log.warn('cannot read the online CPU list; assuming CPUs 0…n−1', { file, err: describeError(err) });
  }
  return Array.from({ length: readers.cpuCount() }, (_, i) => i);
}
