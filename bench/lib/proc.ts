/**
 * Resource use of a process from /proc: resident memory (VmRSS) and CPU time (utime + stime, all
 * threads), sampled on a timer. CPU is reported in cores: CPU time used per interval / interval.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { summarize } from './stats.ts';

export const CLK_TCK = ((): number => {
  try {
    const n = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());
    return n > 0 ? n : 100;
  } catch {
    return 100; // Linux's USER_HZ on every architecture the benchmark runs on
  }
})();

export interface ProcSample {
  t: number;
  rssKiB: number;
  /** utime + stime in seconds. */
  cpuSec: number;
  /**
   * The main thread's share of cpuSec (JavaScript, and the GC work done on it); the rest is the
   * other threads': libuv's pool (file system, DNS, crypto), V8's compiler and GC helpers.
   */
  mainCpuSec: number;
}

/** utime + stime of a /proc stat line, in seconds. */
function statCpuSec(stat: string): number {
  // Fields after the parenthesised comm: state is field 3, utime 14, stime 15.
  const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(rest[11]) + Number(rest[12])) / CLK_TCK;
}

/** One reading, or undefined when the process is gone. */
export function readProc(pid: number): ProcSample | undefined {
  try {
    const cpuSec = statCpuSec(readFileSync(`/proc/${pid}/stat`, 'utf8'));
    const mainCpuSec = statCpuSec(readFileSync(`/proc/${pid}/task/${pid}/stat`, 'utf8'));
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return { t: Date.now(), rssKiB: m ? Number(m[1]) : 0, cpuSec, mainCpuSec };
  } catch {
    return undefined;
  }
}

export interface UsageSummary {
  samples: number;
  rssMaxKiB: number;
  rssLastKiB: number;
  cpuP50: number;
  cpuP95: number;
  cpuMax: number;
  /** CPU seconds used between the first and last sample. */
  cpuSecTotal: number;
  /** The main thread's part of cpuSecTotal. */
  mainCpuSecTotal: number;
  seconds: number;
}

export interface ProcSampler {
  /** Summary of the samples taken since `since` (ms epoch; default: all). */
  summary(since?: number, until?: number): UsageSummary;
  stop(): void;
}

export function sampleProc(pid: number, intervalMs: number): ProcSampler {
  const samples: ProcSample[] = [];
  const take = (): void => {
    const s = readProc(pid);
    if (s) samples.push(s);
  };
  take();
  const timer = setInterval(take, intervalMs);
  return {
    summary(since = 0, until = Infinity) {
      const w = samples.filter((s) => s.t >= since && s.t <= until);
      const rates: number[] = [];
      for (let i = 1; i < w.length; i++) {
        const a = w[i - 1];
        const b = w[i];
        if (a && b && b.t > a.t) rates.push((b.cpuSec - a.cpuSec) / ((b.t - a.t) / 1000));
      }
      const r = summarize(rates);
      const first = w[0];
      const last = w[w.length - 1];
      return {
        samples: w.length,
        rssMaxKiB: Math.max(0, ...w.map((s) => s.rssKiB)),
        rssLastKiB: last?.rssKiB ?? NaN,
        cpuP50: r.p50,
        cpuP95: r.p95,
        cpuMax: r.max,
        cpuSecTotal: first && last ? last.cpuSec - first.cpuSec : NaN,
        mainCpuSecTotal: first && last ? last.mainCpuSec - first.mainCpuSec : NaN,
        seconds: first && last ? (last.t - first.t) / 1000 : NaN,
      };
    },
    stop() {
      clearInterval(timer);
    },
  };
}

/** Machine-wide CPU time: busy (everything but idle and iowait) and total, in seconds. */
export function hostCpu(): { busySec: number; t: number } {
  const first = readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '';
  const f = first.trim().split(/\s+/).slice(1).map(Number);
  const idle = (f[3] ?? 0) + (f[4] ?? 0);
  // user nice system idle iowait irq softirq steal (guest time is already inside user/nice)
  const total = f.slice(0, 8).reduce((a, b) => a + b, 0);
  return { busySec: (total - idle) / CLK_TCK, t: Date.now() };
}

/** The process's open file descriptors (/proc/<pid>/fd); NaN when it is gone. */
export function fdCount(pid: number | 'self'): number {
  try {
    return readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    return NaN; // the process is gone
  }
}
