/**
 * CPU time and resident memory of one process, sampled from /proc every `intervalMs`: enough to say
 * how much of a core it used over a window and whether its memory kept growing.
 */
import { readFile } from 'node:fs/promises';

export interface ProcessSample {
  /** ms since the epoch */
  at: number;
  /** user + system CPU time so far, seconds */
  cpuSeconds: number;
  rssBytes: number;
}

/** USER_HZ: /proc/<pid>/stat counts CPU time in clock ticks of 1/100 s on Linux. */
const CLOCK_TICKS_PER_SECOND = 100;

export async function sampleProcess(pid: number): Promise<ProcessSample> {
  const [stat, status] = await Promise.all([
    readFile(`/proc/${pid}/stat`, 'utf8'),
    readFile(`/proc/${pid}/status`, 'utf8'),
  ]);
  // Fields after the command name (which may hold spaces) start at state: utime and stime are
  // fields 14 and 15 of the line, i.e. 11 and 12 after the closing parenthesis.
  const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(rest[11]) + Number(rest[12]);
  const rssKiB = Number(/^VmRSS:\s+(\d+) kB$/m.exec(status)?.[1] ?? NaN);
  return { at: Date.now(), cpuSeconds: ticks / CLOCK_TICKS_PER_SECOND, rssBytes: rssKiB * 1024 };
}

export interface ProcessSampler {
  /** Samples so far, oldest first. */
  samples(): readonly ProcessSample[];
  /** Takes one sample now (also recorded). */
  now(): Promise<ProcessSample>;
  /** Average share of one core between two samples. */
  cpuShare(a: ProcessSample, b: ProcessSample): number;
  /** The largest RSS seen in [from, to]. */
  maxRss(from: number, to: number): number;
  stop(): void;
}

/** Samples `pid` every `intervalMs` (at most `capacity` samples are kept). */
export function startSampler(pid: number, intervalMs = 1_000, capacity = 10_000): ProcessSampler {
  const samples: ProcessSample[] = [];
  const take = async () => {
    const s = await sampleProcess(pid);
    samples.push(s);
    if (samples.length > capacity) samples.shift();
    return s;
  };
  // A process that exited cannot be sampled: the scenario's liveness check says so, not the sampler.
  const timer = setInterval(() => void take().catch(() => undefined), intervalMs);
  return {
    samples: () => samples,
    now: take,
    cpuShare: (a, b) => (b.at > a.at ? (b.cpuSeconds - a.cpuSeconds) / ((b.at - a.at) / 1000) : 0),
    maxRss(from, to) {
      let max = 0;
      for (const s of samples) if (s.at >= from && s.at <= to) max = Math.max(max, s.rssBytes);
      return max;
    },
    stop: () => clearInterval(timer),
  };
}

export const MiB = 2 ** 20;
