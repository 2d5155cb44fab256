/**
 * PodConfig (upstream config.PodConfig + config.Mux): starts the sources, runs every snapshot
 * through one {@link PodStorage}, and hands the resulting updates to `onUpdate` in order.
 * JavaScript runs one callback at a time, so merges are naturally serialized; no locks needed.
 */
import type { KubeletPod } from '../api/types.ts';
import { describeError, KubeletError } from '../util/errors.ts';
import type { Logger } from '../util/logger.ts';
import { createPodStorage, type PodStorage } from './storage.ts';
import type { PodSource, PodSourceName, PodUpdate, SourceProblem } from './types.ts';

export interface PodConfig {
  /** Starts every source; updates flow to onUpdate in order. */
  start(): void;
  /** Stops every source (timers, watchers, in-flight fetches) and resolves when all are done. No update is delivered afterwards. */
  stop(): Promise<void>;
  /**
   * Upstream SeenAllSources: true when `seen` (the sources the caller has received updates from)
   * includes every configured source, and each configured source has delivered a snapshot.
   * Passing the set of configured source names asks simply "has every source reported?".
   */
  seenAllSources(seen: ReadonlySet<PodSourceName>): boolean;
  /** The current merged pods of all sources (copies). */
  allPods(): KubeletPod[];
}

export interface PodConfigOptions {
  sources: PodSource[];
  onUpdate: (u: PodUpdate) => void;
  logger: Logger;
  onProblem?: (p: SourceProblem) => void;
  /** Replaces the storage (tests); by default one is created with the logger and onProblem. */
  storage?: PodStorage;
}

export function createPodConfig(opts: PodConfigOptions): PodConfig {
  const log = opts.logger.child({ component: 'podconfig' });
  const storage = opts.storage ?? createPodStorage({ logger: log, onProblem: opts.onProblem });
  const names = opts.sources.map((s) => s.name);
  if (new Set(names).size !== names.length) {
    throw new KubeletError(
      'InvalidArgument',
      'create pod config',
      `sources must be unique, got ${names.join(', ')}`,
    );
  }
  let state: 'new' | 'running' | 'stopped' = 'new';

  function receive(source: PodSourceName, pods: KubeletPod[]): void {
    if (state !== 'running') {
      log.debug('Dropping snapshot that arrived while not running', { source, pods: pods.length });
      return;
    }
    log.trace('Setting pods for source', { source, pods: pods.length });
    for (const update of storage.merge(source, pods)) {
      try {
        opts.onUpdate(update);
      } catch (err) {
        // The consumer's bug must not stop the other updates of this merge from being delivered.
        log.error('Pod update handler threw', { source, op: update.op, error: describeError(err) });
      }
    }
  }

  return {
    start() {
      if (state !== 'new')
        throw new KubeletError('FailedPrecondition', 'start pod config', `already ${state}`);
      state = 'running';
      for (const source of opts.sources) source.start((pods) => receive(source.name, pods));
    },
    async stop() {
      if (state === 'stopped') return;
      state = 'stopped';
      const results = await Promise.allSettled(opts.sources.map((s) => s.stop()));
      results.forEach((r, i) => {
        if (r.status === 'rejected') {
          log.error('Pod source did not stop cleanly', { source: names[i], error: describeError(r.reason) });
        }
      });
    },
    seenAllSources(seen) {
      return names.every((n) => seen.has(n)) && storage.seenSources(names);
    },
    allPods() {
      return storage.allPods();
    },
  };
}
