/**
 * The impure edge of `why`: reads one pod's state from the kubelet's managers into a WhySnapshot
 * (monotonic stamps made wall times), reads the last lines of the containers that failed from their
 * CRI log files (bounded lines, bytes and time), and hands the snapshot to `explainPod`.
 */
import { Writable } from 'node:stream';
import type { KubeletPod, PodStatus } from '../api/types.ts';
import { podFullName } from '../api/types.ts';
import { readContainerLogs } from '../logs/index.ts';
import type { ProbeState } from '../prober/index.ts';
import { type ImagePullState, backoffKey, gracePeriodFor, type RuntimePodStatus } from '../runtime/index.ts';
import type { WaitingReason } from '../status/index.ts';
import { combineSignals } from '../util/abort.ts';
import { describeError } from '../util/errors.ts';
import type { Logger } from '../util/logger.ts';
import { explainPod } from './explain.ts';
import type { PodWhy, WhySnapshot } from './types.ts';

/** Lines and bytes of a container's log `why` shows, and how long it may take to read them. */
export const LOG_TAIL_LINES = 5;
export const LOG_TAIL_BYTES = 4096;
export const LOG_TAIL_TIMEOUT_MS = 2_000;
/** At most this many containers' logs are read for one answer. */
const MAX_LOG_TAILS = 4;

/** What the gatherer reads; each is a read-only accessor of one of the kubelet's managers. */
export interface WhySources {
  findPod(namespace: string, name: string): KubeletPod | undefined;
  status(uid: string): PodStatus | undefined;
  /** Refused at admission (its status then carries the predicate and message). */
  rejected(uid: string): boolean;
  /** A sync of the pod has finished at least once (PodState.lastSyncEnd). */
  synced(uid: string): boolean;
  workerPhase(uid: string): 'syncing' | 'terminating' | 'terminated' | undefined;
  /** PodState.statusOverrides: eviction, node shutdown. */
  stoppedBy(uid: string): { reason: string; message: string } | undefined;
  /** PodState.syncErrors (monotonic `at`). */
  syncError(uid: string): { step: 'volumes' | 'sandbox' | 'sync'; message: string; at: number } | undefined;
  /** PodState.killStarted (monotonic `at`). */
  killStarted(uid: string): { at: number; gracePeriodOverride: number | undefined } | undefined;
  waitingReasons(uid: string): ReadonlyMap<string, WaitingReason> | undefined;
  /** The PLEG's cached runtime status. */
  runtimeStatus(uid: string): RuntimePodStatus | undefined;
  /** The crash-loop back-off's current delay for a key (0: none). */
  crashLoopDelayMs(key: string): number;
  /** Monotonic stamps. */
  imagePulls(uid: string): ImagePullState[];
  /** Monotonic `since`. */
  preStopsRunning(uid: string): { container: string; since: number }[];
  probes(uid: string): ProbeState[];
  /** CRI ContainerStatus's log path. */
  logPath(containerId: string, signal: AbortSignal): Promise<string>;
  /** Wall ms. */
  now(): number;
  /** Monotonic ms (the clock of the stamps above). */
  monotonic(): number;
  logger: Logger;
}

export interface WhyGatherer {
  /** The pod's `why`, or undefined when the kubelet has no pod of that namespace and name. */
  podWhy(namespace: string, name: string, signal: AbortSignal): Promise<PodWhy | undefined>;
  /** The snapshot alone (tests, debugging). */
  snapshot(namespace: string, name: string, signal: AbortSignal): Promise<WhySnapshot | undefined>;
}

export function createWhyGatherer(src: WhySources): WhyGatherer {
  async function snapshot(
    namespace: string,
    name: string,
    signal: AbortSignal,
  ): Promise<WhySnapshot | undefined> {
    const pod = src.findPod(namespace, name);
    if (!pod) return undefined;
    const uid = pod.metadata.uid;
    const now = src.now();
    const mono = src.monotonic();
    const wall = (m: number): number => now - (mono - m);
    const status = src.status(uid);
    const rs = src.runtimeStatus(uid);
    const specs = [...(pod.spec.initContainers ?? []), ...pod.spec.containers];

    const crashLoop: WhySnapshot['crashLoop'] = {};
    const failed: { name: string; id: string }[] = [];
    for (const c of specs) {
      const newest = rs?.containers.find((r) => r.name === c.name);
      if (!newest) continue;
      if (newest.state === 'exited') {
        const delayMs = src.crashLoopDelayMs(backoffKey(pod, c, newest.hash));
        if (delayMs > 0) {
          crashLoop[c.name] = {
            delayMs,
            ...(newest.finishedAt > 0 ? { nextRetryAt: newest.finishedAt + delayMs } : {}),
          };
        }
        if (newest.exitCode !== 0 || delayMs > 0) failed.push({ name: c.name, id: newest.id });
      } else if (
        newest.state === 'running' &&
        pod.spec.initContainers?.includes(c) &&
        c.restartPolicy !== 'Always'
      ) {
        failed.push({ name: c.name, id: newest.id });
      }
    }

    const admission =
      src.rejected(uid) && status
        ? { reason: status.reason ?? 'Rejected', message: status.message ?? '' }
        : undefined;
    const stoppedBy = src.stoppedBy(uid);
    const syncError = src.syncError(uid);
    const worker = src.workerPhase(uid);
    const kill = src.killStarted(uid);
    const terminating =
      worker === 'terminating' || (pod.metadata.deletionTimestamp !== undefined && worker !== 'terminated');
    const logTails = await readTails(pod, failed.slice(0, MAX_LOG_TAILS), signal);

    return {
      now,
      pod,
      status,
      synced: src.synced(uid),
      worker,
      ...(admission ? { admission } : {}),
      ...(stoppedBy ? { stoppedBy } : {}),
      ...(syncError ? { syncError: { ...syncError, at: wall(syncError.at) } } : {}),
      waiting: Object.fromEntries(src.waitingReasons(uid) ?? []),
      crashLoop,
      imagePulls: src.imagePulls(uid).map((p) => ({
        image: p.image,
        container: p.container,
        ...(p.pullingSince !== undefined ? { pullingSince: wall(p.pullingSince) } : {}),
        ...(p.backOffLeftMs !== undefined ? { backOffLeftMs: p.backOffLeftMs } : {}),
        ...(p.backOffMs !== undefined ? { backOffMs: p.backOffMs } : {}),
        ...(p.lastError !== undefined ? { lastError: p.lastError } : {}),
      })),
      probes: src.probes(uid),
      logTails,
      ...(terminating || kill
        ? {
            termination: {
              ...(kill ? { startedAt: wall(kill.at) } : {}),
              gracePeriodSeconds: gracePeriodFor(pod, undefined, kill?.gracePeriodOverride),
              preStopRunning: src
                .preStopsRunning(uid)
                .map((h) => ({ container: h.container, since: wall(h.since) })),
            },
          }
        : {}),
    };
  }

  /** The last lines of each container's CRI log; a log that cannot be read is left out (and logged). */
  async function readTails(
    pod: KubeletPod,
    containers: { name: string; id: string }[],
    signal: AbortSignal,
  ): Promise<Record<string, string[]>> {
    const out: Record<string, string[]> = {};
    await Promise.all(
      containers.map(async ({ name, id }) => {
        const bounded = combineSignals([signal, AbortSignal.timeout(LOG_TAIL_TIMEOUT_MS)]);
        try {
          const path = await src.logPath(id, bounded);
          out[name] = await tailLines(path, bounded);
        } catch (err) {
          if (signal.aborted) throw err;
          src.logger.debug('why: container log not read', {
            pod: podFullName(pod),
            podUID: pod.metadata.uid,
            container: name,
            err: describeError(err),
          });
        }
      }),
    );
    return out;
  }

  return {
    snapshot,
    async podWhy(namespace, name, signal) {
      const snap = await snapshot(namespace, name, signal);
      return snap ? explainPod(snap) : undefined;
    },
  };
}

/**
 * The last LOG_TAIL_LINES lines of a CRI log file (both streams), at most LOG_TAIL_BYTES of them
 * counted from the end (a longer last line is cut at its start). At most 16 × LOG_TAIL_BYTES are read.
 */
export async function tailLines(path: string, signal: AbortSignal): Promise<string[]> {
  const chunks: Buffer[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      chunks.push(chunk);
      cb();
    },
  });
  await readContainerLogs({
    path,
    options: {
      follow: false,
      previous: false,
      timestamps: false,
      tailLines: LOG_TAIL_LINES,
      limitBytes: 16 * LOG_TAIL_BYTES,
    },
    stdout: sink,
    stderr: sink,
    signal,
    isRunning: () => Promise.resolve(false),
  });
  const lines = Buffer.concat(chunks).toString('utf8').split('\n');
  if (lines.at(-1) === '') lines.pop();
  const out: string[] = [];
  let left = LOG_TAIL_BYTES;
  for (let i = lines.length - 1; i >= 0 && out.length < LOG_TAIL_LINES && left > 0; i--) {
    const line = lines[i] ?? '';
    const kept = line.length > left ? `…${line.slice(line.length - left + 1)}` : line;
    out.unshift(kept);
    left -= kept.length + 1;
  }
  return out;
}
