/**
 * Host-wide numbers from procfs. Every reader takes the proc root (`/proc` by default) so tests
 * can point it at a directory of fixture files; parsers are exported separately for unit tests.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { InterfaceStats } from './types.ts';

/** USER_HZ: the unit of /proc/stat's CPU times on every Linux architecture Kubernetes runs on. */
const USER_HZ = 100;

/** Interfaces cadvisor leaves out of network stats (libcontainer handler's ignored prefixes). */
const IGNORED_INTERFACE_PREFIXES = ['lo', 'veth', 'docker'];

export interface ProcStat {
  /** Busy CPU time of all cores (everything but idle and iowait), in nanoseconds. */
  cpuBusyNs: number;
  /** Boot time, ms since the epoch (`btime`). */
  bootTimeMs: number | undefined;
}

export function parseProcStat(text: string): ProcStat {
  let cpuBusyNs = 0;
  let bootTimeMs: number | undefined;
  for (const line of text.split('\n')) {
    const f = line.trim().split(/\s+/);
    if (f[0] === 'cpu') {
      // user nice system idle iowait irq softirq steal (guest is already inside user)
      const n = f.slice(1).map(Number);
      const busy = [0, 1, 2, 5, 6, 7].reduce((sum, i) => sum + (Number.isFinite(n[i]) ? (n[i] ?? 0) : 0), 0);
      cpuBusyNs = (busy * 1e9) / USER_HZ;
    } else if (f[0] === 'btime') {
      bootTimeMs = Number(f[1]) * 1000;
    }
  }
  return { cpuBusyNs, bootTimeMs };
}

/** `Key: value [kB]` lines (/proc/meminfo) → bytes; bare values (/proc/vmstat) as they are. */
export function parseKeyValues(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    const m = /^([^:\s]+):?\s+(\d+)(\s+kB)?\s*$/.exec(line);
    if (m?.[1] && m[2]) out.set(m[1], Number(m[2]) * (m[3] ? 1024 : 1));
  }
  return out;
}

/** /proc/net/dev: every interface with its counters. */
export function parseNetDev(text: string): InterfaceStats[] {
  const out: InterfaceStats[] = [];
  for (const line of text.split('\n').slice(2)) {
    const colon = line.indexOf(':');
    if (colon < 0) continue;
    const name = line.slice(0, colon).trim();
    const f = line
      .slice(colon + 1)
      .trim()
      .split(/\s+/)
      .map(Number);
    if (f.length < 16) continue;
    out.push({ name, rxBytes: f[0], rxErrors: f[2], txBytes: f[8], txErrors: f[10] });
  }
  return out;
}

/** The interfaces cadvisor would report (no loopback, veth or docker devices). */
export function reportedInterfaces(all: InterfaceStats[]): InterfaceStats[] {
  return all.filter((i) => !IGNORED_INTERFACE_PREFIXES.some((p) => i.name.startsWith(p)));
}

/** The cgroup paths of a process (/proc/<pid>/cgroup): by controller (v1) and `''` for the v2 entry. */
export function parseProcCgroup(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of text.split('\n')) {
    const m = /^\d+:([^:]*):(.*)$/.exec(line.trim());
    if (!m) continue;
    const controllers = m[1] ?? '';
    const p = m[2] ?? '';
    if (controllers === '') out.set('', p);
    for (const c of controllers.split(',')) if (c !== '') out.set(c.replace(/^name=/, ''), p);
  }
  return out;
}

async function read(procRoot: string, file: string): Promise<string> {
  return readFile(path.join(procRoot, file), 'utf8');
}

export async function readProcStat(procRoot: string): Promise<ProcStat> {
  return parseProcStat(await read(procRoot, 'stat'));
}

/** /proc/meminfo in bytes. */
export async function readMeminfo(procRoot: string): Promise<Map<string, number>> {
  return parseKeyValues(await read(procRoot, 'meminfo'));
}

export async function readVmstat(procRoot: string): Promise<Map<string, number>> {
  return parseKeyValues(await read(procRoot, 'vmstat'));
}

/** Interfaces of the network namespace of `pid` ('self': the kubelet's, i.e. the host's). */
export async function readNetDev(procRoot: string, pid: number | 'self' = 'self'): Promise<InterfaceStats[]> {
  return parseNetDev(await read(procRoot, `${pid}/net/dev`));
}

/** kernel.pid_max (upstream 1.20 rlimit maxpid). */
export async function readPidMax(procRoot: string): Promise<number | undefined> {
  const n = Number((await read(procRoot, 'sys/kernel/pid_max')).trim());
  return Number.isInteger(n) && n > 0 ? n : undefined;
}

/**
 * Tasks (threads) on the node: the second number of /proc/loadavg's `running/total` field, the
 * kernel count that sysinfo(2) reports as procs (upstream 1.20 rlimit curproc).
 */
export async function readTaskCount(procRoot: string): Promise<number | undefined> {
  const total = Number((await read(procRoot, 'loadavg')).split(/\s+/)[3]?.split('/')[1]);
  return Number.isInteger(total) ? total : undefined;
}

export async function readProcCgroup(
  procRoot: string,
  pid: number | 'self' = 'self',
): Promise<Map<string, string>> {
  return parseProcCgroup(await read(procRoot, `${pid}/cgroup`));
}
