/**
 * Recognises OOM kills in the kernel log, as cadvisor's utils/oomparser (StreamOoms) does: a report
 * starts at a line containing `invoked oom-killer:` and ends at the first line that names the kill.
 *
 * - Kernels 5.0 and later print one summary line,
 *   `oom-kill:constraint=…,nodemask=…,cpuset=…,mems_allowed=…,oom_memcg=<cgroup>,task_memcg=<cgroup>,task=<comm>,pid=<pid>,uid=<uid>`,
 *   which ends the report: `oom_memcg` is the cgroup whose limit was hit (the victim container),
 *   `task_memcg` the killed task's own cgroup.
 * - Older kernels print `Task in <cgroup> killed as a result of limit of <cgroup>` (task's cgroup,
 *   then the one whose limit was hit) and, later, `Killed process <pid> (<comm>) …`, which ends it.
 * - A report that names no cgroup (a system OOM on an old kernel) keeps `/` for both, as cadvisor.
 *
 * Differences from cadvisor 0.38.6 (the one vendored by Kubernetes 1.20), on purpose:
 * - The summary-line pattern has no stray space after `oom_memcg=`: 0.38.6's pattern needed one,
 *   never matched a real kernel line and so reported every container OOM as a system OOM on 5.x
 *   kernels (cadvisor issue #2813, fixed by PR #2817 in 0.39).
 * - A summary line without `oom_memcg` (the kernel writes `global_oom` instead) also ends the
 *   report, with victim `/` and the task's cgroup: cadvisor reaches the same victim one line later,
 *   through `Killed process`.
 * - A new `invoked oom-killer:` line inside a report starts a new report, and a report longer than
 *   `maxReportLines` is abandoned (counted), where cadvisor would read on until some later kill line.
 */

/** One OOM kill (cadvisor's OomInstance). */
export interface OomInstance {
  /** The killed process; 0 when the report did not say. */
  pid: number;
  /** The killed process's name (comm); '' when the report did not say. */
  processName: string;
  /** When the kernel logged the kill (the report's last line; its first line until then). */
  timeOfDeath: Date;
  /** The killed task's cgroup; `/` when the report did not say. */
  containerName: string;
  /** The cgroup whose memory limit was hit; `/` for a system (whole-node) OOM. */
  victimContainerName: string;
  /** CONSTRAINT_NONE, CONSTRAINT_CPUSET, CONSTRAINT_MEMORY_POLICY or CONSTRAINT_MEMCG; '' on old kernels. */
  constraint: string;
}

/** The victim cgroup of a system OOM (upstream recordEventContainerName). */
export const ROOT_CGROUP = '/';

const START = /invoked oom-killer:/;
const MEMCG_SUMMARY =
  /oom-kill:constraint=(.*),nodemask=(.*),cpuset=(.*),mems_allowed=(.*),oom_memcg=(.*),task_memcg=(.*),task=(.*),pid=([0-9]+),uid=(.*)/;
const GLOBAL_SUMMARY =
  /oom-kill:constraint=(.*?),.*,global_oom(?:,task_memcg=(.*))?,task=(.*),pid=([0-9]+),uid=/;
const LEGACY_CGROUPS = /Task in (.*) killed as a result of limit of (.*)/;
const KILLED_PROCESS = /Killed process ([0-9]+) \((.+)\)/;

/** Default bound on a report's length in records (a report lists every task of the cgroup or node). */
const MAX_REPORT_LINES = 100_000;

/** Go's path.Join("/", p): rooted, cleaned, no trailing slash. */
function rooted(p: string): string {
  const parts: string[] = [];
  for (const seg of p.split('/')) {
    if (seg === '' || seg === '.') continue;
    if (seg === '..') parts.pop();
    else parts.push(seg);
  }
  return `/${parts.join('/')}`;
}

export interface OomParser {
  /**
   * Feeds one kernel log message with its time; returns the OOM kill this message completes.
   * Never throws.
   */
  push(message: string, time: Date): OomInstance | undefined;
  /** Reports dropped unfinished: too long, or interrupted by the next report. */
  readonly abandonedReports: number;
}

export function createOomParser(opts: { maxReportLines?: number } = {}): OomParser {
  const maxLines = opts.maxReportLines ?? MAX_REPORT_LINES;
  let current: OomInstance | undefined;
  let lines = 0;
  let abandoned = 0;

  const begin = (time: Date): void => {
    current = {
      pid: 0,
      processName: '',
      timeOfDeath: time,
      containerName: ROOT_CGROUP,
      victimContainerName: ROOT_CGROUP,
      constraint: '',
    };
    lines = 0;
  };

  /** Reads one line of a report into `oom`; true when it ends the report. */
  const readLine = (oom: OomInstance, message: string): boolean => {
    const memcg = MEMCG_SUMMARY.exec(message);
    if (memcg) {
      oom.constraint = memcg[1] ?? '';
      oom.victimContainerName = memcg[5] ?? ROOT_CGROUP;
      oom.containerName = memcg[6] ?? ROOT_CGROUP;
      oom.processName = memcg[7] ?? '';
      oom.pid = Number(memcg[8]);
      return true;
    }
    const global = GLOBAL_SUMMARY.exec(message);
    if (global) {
      oom.constraint = global[1] ?? '';
      oom.victimContainerName = ROOT_CGROUP;
      oom.containerName = global[2] ?? ROOT_CGROUP;
      oom.processName = global[3] ?? '';
      oom.pid = Number(global[4]);
      return true;
    }
    const legacy = LEGACY_CGROUPS.exec(message);
    if (legacy) {
      oom.containerName = rooted(legacy[1] ?? '');
      oom.victimContainerName = rooted(legacy[2] ?? '');
      return false;
    }
    const killed = KILLED_PROCESS.exec(message);
    if (killed) {
      oom.pid = Number(killed[1]);
      oom.processName = killed[2] ?? '';
      return true;
    }
    return false;
  };

  return {
    push(message, time) {
      if (START.test(message)) {
        if (current) abandoned++;
        begin(time);
        return undefined;
      }
      const oom = current;
      if (!oom) return undefined;
      if (++lines > maxLines) {
        abandoned++;
        current = undefined;
        return undefined;
      }
      if (!readLine(oom, message)) return undefined;
      oom.timeOfDeath = time;
      current = undefined;
      return oom;
    },
    get abandonedReports() {
      return abandoned;
    },
  };
}
