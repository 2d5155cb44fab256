/**
 * The system OOM watcher (upstream pkg/kubelet/oom realWatcher): follows the kernel log and, for
 * every OOM kill whose victim cgroup is the root (`/`, a whole-node OOM), records a Warning event
 * `SystemOOM` on the Node, worded as upstream: `System OOM encountered, victim process: <name>,
 * pid: <pid>` (just `System OOM encountered` when the report named no process). Every kill, system
 * or container, also goes to `onOom` and the counters.
 *
 * Unlike upstream, which fails kubelet start-up when `/dev/kmsg` cannot be opened, an unreadable
 * kernel log is logged and retried every `retryIntervalMs`; the watcher never throws.
 */
import { uptime } from 'node:os';
import type { Logger } from '../util/logger.ts';
import { sleep } from '../util/abort.ts';
import { describeError } from '../util/errors.ts';
import { devKmsgOpener, type KmsgSource, type OpenKmsg } from './dev-kmsg.ts';
import { LineSplitter, parseKmsgRecord } from './kmsg-record.ts';
import { createOomParser, ROOT_CGROUP, type OomInstance } from './oom-parser.ts';

/** Upstream systemOOMEvent. */
export const SYSTEM_OOM_EVENT = 'SystemOOM';

/** How often the kernel log is checked for new records. */
const POLL_INTERVAL_MS = 1_000;
/** After the kernel log could not be opened or read, the next attempt. */
const RETRY_INTERVAL_MS = 60_000;
/** Reads per poll at most, so a flood of kernel messages cannot starve the event loop. */
const MAX_READS_PER_POLL = 1_000;
/** A line longer than this is dropped (a kmsg record is at most 8 KiB). */
const MAX_LINE_BYTES = 64 * 1024;

export interface OomWatcherDeps {
  /** Records an event on the Node (KubeletDependencies.nodeEvent). */
  nodeEvent(type: 'Normal' | 'Warning', reason: string, message: string): void;
  /** Called for every OOM kill, system or container (e.g. to log per-container OOMs). */
  onOom?: (oom: OomInstance) => void;
  logger: Logger;
  /** The kernel log; absent: `/dev/kmsg`, non-blocking, from its end. */
  openKmsg?: OpenKmsg;
  /** Wall-clock time of boot in ms (kmsg timestamps count from it); absent: now − uptime. */
  bootTimeMs?: () => number;
  pollIntervalMs?: number;
  retryIntervalMs?: number;
}

export interface OomWatcherStats {
  /** Kills whose victim cgroup is the root: each made a SystemOOM event. */
  systemOOMs: number;
  /** Kills inside a cgroup (a container's or a pod's limit). */
  containerOOMs: number;
  /** Kernel log lines that were not records (`pri,seq,ts,flags;msg`); continuation lines not counted. */
  malformedLines: number;
  /** Lines longer than the bound, dropped. */
  droppedLines: number;
  /** OOM reports that never named their kill (see createOomParser). */
  abandonedReports: number;
}

/** Upstream oom.Watcher, with its counters and health. */
export interface OomWatcher {
  /** Starts following the kernel log in the background; a second call does nothing. */
  start(): void;
  /** Stops following and closes the kernel log; idempotent. */
  stop(): Promise<void>;
  stats(): OomWatcherStats;
  /** Not ok while the kernel log cannot be opened or read (the message says why). */
  health(): { ok: boolean; message: string };
}

/** Upstream's event message for a system OOM. */
export function systemOOMMessage(oom: Pick<OomInstance, 'processName' | 'pid'>): string {
  const msg = 'System OOM encountered';
  return oom.processName !== '' && oom.pid !== 0
    ? `${msg}, victim process: ${oom.processName}, pid: ${oom.pid}`
    : msg;
}

/** Now minus the machine's uptime (kmsgparser's getBootTime does the same with sysinfo). */
function defaultBootTimeMs(): number {
  return Date.now() - Math.round(uptime() * 1000);
}

export function createOomWatcher(deps: OomWatcherDeps): OomWatcher {
  const log = deps.logger;
  const openKmsg = deps.openKmsg ?? devKmsgOpener({ logger: log });
  const pollMs = deps.pollIntervalMs ?? POLL_INTERVAL_MS;
  const retryMs = deps.retryIntervalMs ?? RETRY_INTERVAL_MS;
  const bootTimeMs = deps.bootTimeMs ?? defaultBootTimeMs;
  const parser = createOomParser();
  const stopSignal = new AbortController();
  const counts = { systemOOMs: 0, containerOOMs: 0, malformedLines: 0 };
  let splitter = new LineSplitter(MAX_LINE_BYTES);
  let droppedBefore = 0;
  let source: KmsgSource | undefined;
  let problem: string | undefined = 'not started';
  let lastLoggedProblem: string | undefined;
  let loop: Promise<void> | undefined;
  let stopping: Promise<void> | undefined;

  const report = (oom: OomInstance): void => {
    if (oom.victimContainerName === ROOT_CGROUP) {
      counts.systemOOMs++;
      log.info('OOM watcher: system OOM', { ...describeOom(oom) });
      try {
        deps.nodeEvent('Warning', SYSTEM_OOM_EVENT, systemOOMMessage(oom));
      } catch (err) {
        log.error('OOM watcher: recording the SystemOOM event failed', { err: describeError(err) });
      }
    } else {
      counts.containerOOMs++;
    }
    try {
      deps.onOom?.(oom);
    } catch (err) {
      log.error('OOM watcher: the OOM callback failed', { err: describeError(err) });
    }
  };

  const feed = (chunk: Uint8Array, boot: number): void => {
    for (const line of splitter.push(chunk)) {
      if (line === '' || line.startsWith(' ')) continue; // a record's dictionary (KEY=value)
      const rec = parseKmsgRecord(line);
      if (!rec) {
        counts.malformedLines++;
        log.debug('OOM watcher: not a kernel log record', { line: line.slice(0, 200) });
        continue;
      }
      const oom = parser.push(rec.message, new Date(boot + rec.timestampUs / 1000));
      if (oom) report(oom);
    }
  };

  /** Logs a failure at warn when it is new, at debug when it repeats; marks the watcher unhealthy. */
  const failed = (what: string, err: unknown): void => {
    problem = `${what}: ${describeError(err)}`;
    const fields = { err: describeError(err), retryInMs: retryMs };
    if (problem !== lastLoggedProblem) log.warn(`OOM watcher: ${what}; system OOMs go unreported`, fields);
    else log.debug(`OOM watcher: ${what} again`, fields);
    lastLoggedProblem = problem;
  };

  const closeSource = async (): Promise<void> => {
    const s = source;
    source = undefined;
    droppedBefore += splitter.droppedLines;
    splitter = new LineSplitter(MAX_LINE_BYTES);
    if (!s) return;
    await s
      .close()
      .catch((err: unknown) =>
        log.warn('OOM watcher: closing the kernel log failed', { err: describeError(err) }),
      );
  };

  /** One poll: opens the log if needed, reads what is new. Returns how long to wait before the next. */
  const poll = async (): Promise<number> => {
    if (!source) {
      try {
        source = await openKmsg();
      } catch (err) {
        failed('cannot open the kernel log', err);
        return retryMs;
      }
      if (stopSignal.signal.aborted) return 0;
      if (problem !== undefined && lastLoggedProblem !== undefined) {
        log.info('OOM watcher: reading the kernel log again');
      }
      problem = undefined;
      lastLoggedProblem = undefined;
    }
    const boot = bootTimeMs();
    try {
      for (let reads = 0; reads < MAX_READS_PER_POLL; reads++) {
        const chunk = await source.read();
        if (chunk.length === 0) return pollMs;
        feed(chunk, boot);
        if (stopSignal.signal.aborted) return 0;
      }
      return 0; // more to read: go on at once (after other work had its turn)
    } catch (err) {
      failed('cannot read the kernel log', err);
      await closeSource();
      return retryMs;
    }
  };

  const run = async (): Promise<void> => {
    while (!stopSignal.signal.aborted) {
      const waitMs = await poll();
      try {
        await (waitMs > 0 ? sleep(waitMs, stopSignal.signal) : new Promise<void>((r) => setImmediate(r)));
      } catch {
        // sleep rejects only when stop() aborts it: the loop ends.
        break;
      }
    }
    await closeSource();
  };

  return {
    start() {
      if (loop || stopping) return;
      log.info('OOM watcher: following the kernel log for OOM kills');
      loop = run().catch((err: unknown) => {
        // poll() catches its own failures; reaching this is a bug, not a reason to crash the kubelet.
        problem = `stopped: ${describeError(err)}`;
        log.error('OOM watcher stopped unexpectedly; OOMs go unreported', { err: describeError(err) });
      });
    },
    stop() {
      stopping ??= (async () => {
        stopSignal.abort();
        await loop;
        await closeSource();
        problem = 'stopped';
      })();
      return stopping;
    },
    stats: () => ({
      ...counts,
      droppedLines: droppedBefore + splitter.droppedLines,
      abandonedReports: parser.abandonedReports,
    }),
    health: () => (problem === undefined ? { ok: true, message: '' } : { ok: false, message: problem }),
  };
}

/** Log fields of one kill. */
export function describeOom(oom: OomInstance): Record<string, string | number> {
  return {
    victimCgroup: oom.victimContainerName,
    taskCgroup: oom.containerName,
    process: oom.processName,
    pid: oom.pid,
    constraint: oom.constraint,
    time: oom.timeOfDeath.toISOString(),
  };
}
