/** Test helpers for this folder (not exported from index.ts). */
import type { Pod } from '../api/types.ts';
import type { Logger, LogFields } from '../util/logger.ts';

/** Collects snapshots a source sends and lets a test wait for one that satisfies a predicate. */
export function snapshotRecorder() {
  const seen: Pod[][] = [];
  let waiters: { pred: (pods: Pod[]) => boolean; resolve: (pods: Pod[]) => void }[] = [];
  return {
    seen,
    send: (pods: Pod[]): void => {
      seen.push(pods);
      const ready = waiters.filter((w) => w.pred(pods));
      waiters = waiters.filter((w) => !ready.includes(w));
      for (const w of ready) w.resolve(pods);
    },
    /**
     * Resolves with the first snapshot, from now on, matching `pred`. The guard timeout only keeps a
     * broken test from hanging; it is not what the test measures.
     */
    next(pred: (pods: Pod[]) => boolean = () => true, guardMs = 10_000): Promise<Pod[]> {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('no matching snapshot arrived')), guardMs);
        waiters.push({
          pred,
          resolve: (pods) => {
            clearTimeout(timer);
            resolve(pods);
          },
        });
      });
    },
  };
}

export interface LogLine {
  level: 'error' | 'warn' | 'info' | 'debug' | 'trace';
  msg: string;
  fields: LogFields;
}

/** A Logger that records every line (child fields merged in). */
export function recordingLogger(lines: LogLine[] = [], base: LogFields = {}): Logger & { lines: LogLine[] } {
  const at =
    (level: LogLine['level']) =>
    (msg: string, fields?: LogFields): void => {
      lines.push({ level, msg, fields: { ...base, ...fields } });
    };
  return {
    lines,
    error: at('error'),
    warn: at('warn'),
    info: at('info'),
    debug: at('debug'),
    trace: at('trace'),
    child: (f) => recordingLogger(lines, { ...base, ...f }),
    isDebugEnabled: () => true,
  };
}

/** A minimal valid manifest (before static-pod defaulting). */
export function manifest(name: string, image = 'busybox:1.29', extra: Record<string, unknown> = {}) {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name },
    spec: { containers: [{ name: 'main', image }] },
    ...extra,
  };
}

/** A pod as a source would hand it to the storage. */
export function pod(name: string, uid: string, patch: (p: Pod) => void = () => {}): Pod {
  const p: Pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default', uid, annotations: { 'kubernetes.io/config.hash': uid } },
    spec: { containers: [{ name: 'main', image: 'busybox:1.29' }] },
    status: { phase: 'Pending' },
  };
  patch(p);
  return p;
}
