/**
 * Container garbage collection (upstream kuberuntime containerGC.GarbageCollect): dead containers
 * by the GC policy, dead sandboxes, and the log directories of deleted pods. It only ever removes
 * what is not running, and nothing of a pod unless the kubelet says it is deleted or the policy
 * says an instance is surplus.
 */
import type { Dirent } from 'node:fs';
import { readdir, rm } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, relative } from 'node:path';
import type { Logger } from '../util/logger.ts';
import { abortReason, combineSignals } from '../util/abort.ts';
import { describeError } from '../util/errors.ts';
import {
  ANNOTATION_POD_TERMINATION_GRACE_PERIOD,
  LABEL_CONTAINER_NAME,
  LABEL_POD_NAME,
  LABEL_POD_NAMESPACE,
  LABEL_POD_UID,
} from '../config/defaults.ts';
import { isCriNotFound } from '../runtime/cri/errors.ts';
import { singleFlight } from '../util/single-flight.ts';
import type { CallOptions, Container, PodSandbox, RuntimeService } from '../runtime/cri/types.ts';
import { intAnnotation } from '../runtime/labels.ts';
import { gracePeriodFor } from '../runtime/pod-killer.ts';
import {
  containersToEvict,
  sandboxesToEvict,
  type ContainerGCPolicy,
  type DeadContainer,
  type EvictContext,
  type GCSandbox,
} from './evict.ts';

/** Deadline of each CRI call of a pass (a StopContainer gets the grace period on top). */
const CALL_TIMEOUT_MS = 60_000;
/** A pass that takes longer stops where it is; the next one (a period later) carries on. */
const PASS_TIMEOUT_MS = 5 * 60_000;

export interface ContainerGCDeps {
  runtime: RuntimeService;
  policy: ContainerGCPolicy;
  /** podLogsDir: pod log directories `<namespace>_<name>_<uid>` live here. */
  podLogsDir: string;
  /** Every pod source has been seen; until then no pod counts as deleted. */
  sourcesReady(): boolean;
  /**
   * Upstream PodStateProvider.IsPodDeleted: the pod is gone for good and nothing (no pod worker)
   * will run or stop its containers any more. Asked only once sources are ready.
   */
  isPodDeleted(uid: string): boolean;
  /** Upstream IsPodTerminated (for deleteAllUnused): the pod finished or is gone. Default: deleted. */
  isPodTerminated?(uid: string): boolean;
  /** Aborted when the kubelet stops: the pass in flight ends at once. */
  signal: AbortSignal;
  logger: Logger;
  now?: () => number;
  callTimeoutMs?: number;
  passTimeoutMs?: number;
}

/** What one pass did. */
export interface GCPassResult {
  removedContainers: number;
  removedSandboxes: number;
  removedLogDirs: number;
  /** One line per item or listing that failed (each was logged with its pod and container). */
  errors: string[];
  /** The pass was stopped (kubelet stop or its deadline) before it finished. */
  aborted: boolean;
}

/**
 * Upstream kubecontainer.GC. Each pass: (1) dead (not running) containers per the policy, and
 * every one of a deleted pod; (2) sandboxes that are not ready and have no container left, of a
 * deleted pod all of them, of any other pod all but the newest; (3) the log directories of deleted
 * pods with no container left. A failing item is logged and skipped (retried next pass).
 */
export interface ContainerGC {
  /** One pass, or joins the one in flight (the timer fires whether or not it has finished). Never rejects. */
  collect(): Promise<GCPassResult>;
  /** Resolves when no pass is running. */
  idle(): Promise<void>;
  /**
   * Upstream DeleteAllUnusedContainers (the eviction manager's reclaim under disk pressure): one
   * pass after any pass in flight, in which terminated pods' containers and sandboxes go as well as
   * deleted pods'.
   */
  deleteAllUnused(): Promise<GCPassResult>;
}

function toDeadContainer(c: Container): DeadContainer | undefined {
  const labels = c.labels ?? {};
  const podUID = labels[LABEL_POD_UID];
  // Not created by a kubelet (e.g. crictl): never ours to remove.
  if (podUID === undefined) return undefined;
  let state: DeadContainer['state'];
  switch (c.state) {
    case 'CONTAINER_RUNNING':
      return undefined;
    case 'CONTAINER_CREATED':
      state = 'created';
      break;
    case 'CONTAINER_EXITED':
      state = 'exited';
      break;
    case 'CONTAINER_UNKNOWN':
      state = 'unknown';
      break;
  }
  return {
    id: c.id,
    podUID,
    podName: labels[LABEL_POD_NAME] ?? '',
    podNamespace: labels[LABEL_POD_NAMESPACE] ?? '',
    name: labels[LABEL_CONTAINER_NAME] ?? c.metadata.name,
    createdAt: Math.floor(c.createdAt / 1e6),
    attempt: c.metadata.attempt,
    state,
    terminationGracePeriodSeconds: intAnnotation(
      c.annotations ?? {},
      ANNOTATION_POD_TERMINATION_GRACE_PERIOD,
    ),
  };
}

function toGCSandbox(s: PodSandbox, withContainers: ReadonlySet<string>): GCSandbox | undefined {
  const labels = s.labels ?? {};
  const podUID = labels[LABEL_POD_UID];
  if (podUID === undefined) return undefined;
  return {
    id: s.id,
    podUID,
    podName: labels[LABEL_POD_NAME] ?? s.metadata.name,
    podNamespace: labels[LABEL_POD_NAMESPACE] ?? s.metadata.namespace,
    createdAt: Math.floor(s.createdAt / 1e6),
    attempt: s.metadata.attempt,
    active: s.state === 'SANDBOX_READY' || withContainers.has(s.id),
  };
}

/** `<namespace>_<name>_<uid>` (upstream BuildPodLogsDirectory); names and namespaces have no `_`. */
function podUIDOfLogDir(name: string): string | undefined {
  const parts = name.split('_');
  return parts.length === 3 && parts.every((p) => p !== '') ? parts[2] : undefined;
}

const isENOENT = (err: unknown): boolean =>
  err instanceof Error && (err as NodeJS.ErrnoException).code === 'ENOENT';

export function createContainerGC(deps: ContainerGCDeps): ContainerGC {
  const { runtime, policy, logger: log } = deps;
  const now = deps.now ?? Date.now;
  const callTimeoutMs = deps.callTimeoutMs ?? CALL_TIMEOUT_MS;
  const passTimeoutMs = deps.passTimeoutMs ?? PASS_TIMEOUT_MS;

  const call = (signal: AbortSignal): CallOptions => ({ signal, timeoutMs: callTimeoutMs });

  /**
   * Upstream removeContainerLog: the container's CRI log and its rotated files (`<log>.*`), before
   * the container goes. Only under podLogsDir: a log path elsewhere is the runtime's business.
   * Resolves false when the container is already gone.
   */
  async function removeContainerLogs(id: string, signal: AbortSignal): Promise<boolean> {
    let logPath: string;
    try {
      logPath = (await runtime.containerStatus(id, call(signal))).logPath ?? '';
    } catch (err) {
      if (isCriNotFound(err)) return false;
      throw err;
    }
    if (logPath === '') return true;
    const rel = relative(deps.podLogsDir, logPath);
    if (!isAbsolute(logPath) || rel === '' || rel.startsWith('..') || isAbsolute(rel)) {
      log.debug('container log outside podLogsDir; left alone', { containerID: id, logPath });
      return true;
    }
    const dir = dirname(logPath);
    const base = basename(logPath);
    let names: string[];
    try {
      names = await readdir(dir);
    } catch (err) {
      if (isENOENT(err)) return true;
      throw err;
    }
    for (const n of names) {
      if (n === base || n.startsWith(`${base}.`)) await rm(join(dir, n), { force: true });
    }
    return true;
  }

  /** Upstream removeOldestN for one container: stop it if its state is unknown, logs, remove. */
  async function removeDeadContainer(c: DeadContainer, signal: AbortSignal): Promise<boolean> {
    if (c.state === 'unknown') {
      // It may still run; upstream kills it (grace period from its annotations) first.
      const grace = gracePeriodFor(undefined, c.terminationGracePeriodSeconds);
      try {
        await runtime.stopContainer(c.id, grace, { signal, timeoutMs: grace * 1000 + callTimeoutMs });
      } catch (err) {
        if (isCriNotFound(err)) return false;
        throw err;
      }
    }
    if (!(await removeContainerLogs(c.id, signal))) return false;
    await runtime.removeContainer(c.id, call(signal));
    return true;
  }

  /** Upstream DeleteSandbox: stop (releases the network, which killPod may have failed to) then remove. */
  async function removeSandbox(s: GCSandbox, signal: AbortSignal): Promise<boolean> {
    try {
      await runtime.stopPodSandbox(s.id, call(signal));
    } catch (err) {
      if (isCriNotFound(err)) return false;
      throw err;
    }
    await runtime.removePodSandbox(s.id, call(signal));
    return true;
  }

  async function pass(signal: AbortSignal, result: GCPassResult, evictTerminated: boolean): Promise<void> {
    const terminated = (uid: string): boolean =>
      deps.isPodTerminated ? deps.isPodTerminated(uid) : deps.isPodDeleted(uid);
    const ctx: EvictContext = {
      now: now(),
      allSourcesReady: deps.sourcesReady(),
      isPodDeleted: evictTerminated
        ? (uid) => deps.isPodDeleted(uid) || terminated(uid)
        : (uid) => deps.isPodDeleted(uid),
    };
    /** Runs one step; a failure is logged and counted unless the pass itself was stopped. */
    const attempt = async <T>(
      what: string,
      fields: Record<string, unknown>,
      step: () => Promise<T>,
    ): Promise<T | undefined> => {
      if (signal.aborted) throw abortReason(signal);
      try {
        return await step();
      } catch (err) {
        if (signal.aborted) throw abortReason(signal);
        log.warn(`container GC: failed to ${what}; retried next pass`, {
          ...fields,
          err: describeError(err),
        });
        result.errors.push(`${what}: ${describeError(err)}`);
        return undefined;
      }
    };

    // 1. Dead containers (upstream evictContainers).
    const listed = await attempt('list containers', {}, () =>
      runtime.listContainers(undefined, call(signal)),
    );
    const dead = (listed ?? []).map(toDeadContainer).filter((c): c is DeadContainer => c !== undefined);
    for (const c of containersToEvict(dead, policy, ctx)) {
      const fields = {
        pod: `${c.podNamespace}/${c.podName}`,
        podUID: c.podUID,
        container: c.name,
        containerID: c.id,
      };
      const removed = await attempt('remove dead container', fields, () => removeDeadContainer(c, signal));
      if (removed) {
        result.removedContainers++;
        log.debug('container GC: removed dead container', fields);
      }
    }

    // 2. Sandboxes (upstream evictSandboxes), from a fresh listing: step 1 changed what is left.
    const [containers, sandboxes] = await Promise.all([
      attempt('list containers', {}, () => runtime.listContainers(undefined, call(signal))),
      attempt('list sandboxes', {}, () => runtime.listPodSandbox(undefined, call(signal))),
    ]);
    if (containers && sandboxes) {
      const withContainers = new Set(containers.map((c) => c.podSandboxId));
      const all = sandboxes
        .map((s) => toGCSandbox(s, withContainers))
        .filter((s): s is GCSandbox => s !== undefined);
      for (const s of sandboxesToEvict(all, ctx)) {
        const fields = { pod: `${s.podNamespace}/${s.podName}`, podUID: s.podUID, sandboxID: s.id };
        const removed = await attempt('remove dead sandbox', fields, () => removeSandbox(s, signal));
        if (removed) {
          result.removedSandboxes++;
          log.debug('container GC: removed dead sandbox', fields);
        }
      }
    }

    // 3. Pod log directories of deleted pods (upstream evictPodLogsDirectories), when it is known
    // that no container (which might still write there) is left.
    if (ctx.allSourcesReady && containers) {
      const podsWithContainers = new Set(containers.map((c) => c.labels?.[LABEL_POD_UID]));
      const entries = await attempt('read the pod logs directory', { dir: deps.podLogsDir }, async () => {
        try {
          return await readdir(deps.podLogsDir, { withFileTypes: true });
        } catch (err) {
          if (isENOENT(err)) return [] as Dirent[];
          throw err;
        }
      });
      for (const e of entries ?? []) {
        const uid = e.isDirectory() ? podUIDOfLogDir(e.name) : undefined;
        if (uid === undefined || podsWithContainers.has(uid) || !deps.isPodDeleted(uid)) continue;
        const dir = join(deps.podLogsDir, e.name);
        const fields = { podUID: uid, dir };
        const done = await attempt('remove pod log directory', fields, async () => {
          await rm(dir, { recursive: true, force: true });
          return true;
        });
        if (done) {
          result.removedLogDirs++;
          log.debug('container GC: removed pod log directory', fields);
        }
      }
    }
  }

  const emptyResult = (): GCPassResult => ({
    removedContainers: 0,
    removedSandboxes: 0,
    removedLogDirs: 0,
    errors: [],
    aborted: false,
  });

  async function run(evictTerminated: boolean): Promise<GCPassResult> {
    const signal = combineSignals([deps.signal], passTimeoutMs);
    const started = now();
    const result = emptyResult();
    try {
      await pass(signal, result, evictTerminated);
    } catch (err) {
      if (!signal.aborted) throw err;
      result.aborted = true;
      if (!deps.signal.aborted) {
        log.warn('container GC: pass stopped at its deadline; the next pass carries on', {
          deadlineMs: passTimeoutMs,
          containers: result.removedContainers,
          sandboxes: result.removedSandboxes,
        });
      }
      return result;
    }
    const removed = result.removedContainers + result.removedSandboxes + result.removedLogDirs;
    const summary = {
      containers: result.removedContainers,
      sandboxes: result.removedSandboxes,
      logDirs: result.removedLogDirs,
      durationMs: now() - started,
    };
    if (result.errors.length > 0) {
      // Upstream: "Container garbage collection failed" with the aggregated errors.
      log.error('container garbage collection failed', { ...summary, errors: result.errors.slice(0, 10) });
    } else if (removed > 0) {
      log.info('container garbage collection removed dead containers', summary);
    } else {
      log.debug('container garbage collection succeeded', summary);
    }
    return result;
  }

  // A pass that rejects is a bug (each step catches its own errors): logged, answered as a failed pass.
  const failed =
    (what: string) =>
    (err: unknown): GCPassResult => {
      log.error(`${what}: pass failed`, { err: describeError(err) });
      return { ...emptyResult(), errors: [describeError(err)] };
    };
  const regular = singleFlight<GCPassResult>();
  const all = singleFlight<GCPassResult>();
  return {
    collect: () => regular.run(() => run(false).catch(failed('container GC'))),
    async idle() {
      await Promise.all([regular.idle(), all.idle()]);
    },
    async deleteAllUnused() {
      await regular.idle();
      return all.run(() => run(true).catch(failed('container GC (all unused)')));
    },
  };
}
