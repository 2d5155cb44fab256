/**
 * Container log rotation (upstream pkg/kubelet/logs ContainerLogManager, 1.20): every 10 s, for
 * each running container, rotate its CRI log file once it reaches `maxSizeBytes`, keeping at most
 * `maxFiles` files (see rotate-log.ts for the steps).
 */
import { lstat } from 'node:fs/promises';
import {
  LABEL_CONTAINER_NAME,
  LABEL_POD_NAME,
  LABEL_POD_NAMESPACE,
  LABEL_POD_UID,
} from '../config/defaults.ts';
import type { CallOptions, Container, RuntimeService } from '../runtime/cri/types.ts';
import { combineSignals, untilAborted } from '../util/abort.ts';
import { describeError, isNotFound, KubeletError } from '../util/errors.ts';
import type { Logger } from '../util/logger.ts';
import { singleFlight } from '../util/single-flight.ts';
import {
  LOG_MONITOR_PERIOD_MS,
  LOG_SIZE_CHECK_INTERVAL_MS,
  LOG_ROTATION_CRI_TIMEOUT_MS,
  LOG_ROTATION_PASS_TIMEOUT_MS,
  MAX_ROTATIONS_PER_PASS,
} from './constants.ts';
import { fsError } from './fs-error.ts';
import { rotateLog } from './rotate-log.ts';

export interface ContainerLogManagerDeps {
  /** The CRI calls rotation needs. */
  runtime: Pick<RuntimeService, 'listContainers' | 'containerStatus' | 'reopenContainerLog'>;
  /** containerLogMaxSize in bytes: a live log file this big or bigger is rotated. */
  maxSizeBytes: number;
  /** containerLogMaxFiles: files kept per container, the live one included; at least 2. */
  maxFiles: number;
  logger: Logger;
  /** Unix milliseconds, for the rotated files' names. Defaults to Date.now. */
  now?: () => number;
  /** Time between the end of one pass and the start of the next (upstream logMonitorPeriod, 10 s). */
  intervalMs?: number;
  /** Deadline of each CRI call. */
  criTimeoutMs?: number;
  /** At most this many rotations per pass; the remaining containers are looked at next pass. */
  maxRotationsPerPass?: number;
  /** A pass still running after this long is cancelled. */
  passTimeoutMs?: number;
  /**
   * Between passes, the live log files found by the last pass are stat'ed this often and an
   * oversized one is rotated at once, so a chatty container overshoots containerLogMaxSize by at
   * most this long's output (upstream only looks every 10 s). 0 disables it. Default 1 s.
   */
  sizeCheckIntervalMs?: number;
}

/** What one pass did. */
export interface RotationPassSummary {
  /** Running containers whose log file was looked at. */
  checked: number;
  rotated: number;
  /** Containers whose status or rotation failed (each logged). */
  failed: number;
  /** Running containers left for the next pass (the rotation bound was reached). */
  deferred: number;
}

/**
 * Rotates container log files in the background. Constructing it starts nothing; `start()` does.
 * Passes never overlap; a failure for one container is logged with its pod and container and
 * never stops the others. It never deletes the live log file and never compresses the newest
 * rotated one.
 */
export interface ContainerLogManager {
  /** Runs a pass now and then one every interval until `stop()`. Idempotent. */
  start(): void;
  /** Stops the loop, cancelling a pass in flight (a half-written `.tmp` is removed), and waits for it. */
  stop(): Promise<void>;
  /**
   * One pass now, or the one already in flight. Rejects with a KubeletError when the containers
   * cannot be listed (or after `stop()`); per-container failures are counted, not thrown.
   */
  rotateNow(): Promise<RotationPassSummary>;
  /** Not ok when the last pass could not list containers. */
  healthy(): { ok: boolean; message: string };
}

export function createContainerLogManager(deps: ContainerLogManagerDeps): ContainerLogManager {
  if (!Number.isInteger(deps.maxFiles) || deps.maxFiles < 2) {
    throw new KubeletError(
      'InvalidArgument',
      'create container log manager',
      `invalid MaxFiles ${deps.maxFiles}, must be > 1`,
    );
  }
  if (!Number.isSafeInteger(deps.maxSizeBytes) || deps.maxSizeBytes < 0) {
    throw new KubeletError(
      'InvalidArgument',
      'create container log manager',
      `invalid max log size ${deps.maxSizeBytes}, must be a non-negative number of bytes`,
    );
  }
  const log = deps.logger;
  const now = deps.now ?? Date.now;
  const intervalMs = deps.intervalMs ?? LOG_MONITOR_PERIOD_MS;
  const timeoutMs = deps.criTimeoutMs ?? LOG_ROTATION_CRI_TIMEOUT_MS;
  const maxRotations = Math.max(1, deps.maxRotationsPerPass ?? MAX_ROTATIONS_PER_PASS);
  const passTimeoutMs = deps.passTimeoutMs ?? LOG_ROTATION_PASS_TIMEOUT_MS;
  const stopping = new AbortController();
  let started = false;
  let timer: NodeJS.Timeout | undefined;
  /** The full passes and the quick size checks' rotations share one slot: never two at once. */
  const inFlight = singleFlight<RotationPassSummary>();
  let lastListError: string | undefined;
  /** Where the last pass stopped for the rotation bound: the next one starts after it. */
  let resumeAfter: string | undefined;
  const sizeCheckMs = deps.sizeCheckIntervalMs ?? LOG_SIZE_CHECK_INTERVAL_MS;
  let sizeTimer: NodeJS.Timeout | undefined;
  /** The running containers' live log files as the last pass saw them, for the quick size checks. */
  const known = new Map<string, { container: Container; path: string }>();

  /**
   * One CRI call with its own deadline; a runtime (or fake) that ignores its signal still cannot
   * hold the pass past it.
   */
  async function cri<T>(name: string, signal: AbortSignal, call: (o: CallOptions) => Promise<T>): Promise<T> {
    const s = combineSignals([signal], timeoutMs);
    try {
      return await untilAborted(call({ signal: s, timeoutMs }), s);
    } catch (err) {
      if (s.aborted && !signal.aborted) {
        throw new KubeletError('DeadlineExceeded', `CRI ${name}`, `no answer within ${timeoutMs} ms`, {
          cause: err,
        });
      }
      throw err;
    }
  }

  async function checkContainer(c: Container, signal: AbortSignal, clog: Logger): Promise<boolean> {
    const status = await cri('ContainerStatus', signal, (o) => deps.runtime.containerStatus(c.id, o));
    const path = status.logPath;
    if (!path) return false;
    known.set(c.id, { container: c, path });
    let size: number;
    try {
      size = (await lstat(path)).size;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw fsError(err, 'stat container log', path);
      // A rotation whose reopen and roll-back both failed leaves no live file: ask the runtime
      // to create it again (upstream does the same).
      clog.info('container log file is missing, asking the runtime to reopen it', { path });
      await cri('ReopenContainerLog', signal, (o) => deps.runtime.reopenContainerLog(c.id, o));
      try {
        size = (await lstat(path)).size;
      } catch (err2) {
        throw fsError(err2, 'stat container log after reopening it', path);
      }
    }
    if (size < deps.maxSizeBytes) return false;
    const { rotatedTo, removed } = await rotateLog({
      path,
      maxFiles: deps.maxFiles,
      now: now(),
      reopen: (s) => cri('ReopenContainerLog', s, (o) => deps.runtime.reopenContainerLog(c.id, o)),
      signal,
      logger: clog,
    });
    clog.info('rotated container log', { path, rotatedTo, size, removed });
    return true;
  }

  async function pass(): Promise<RotationPassSummary> {
    const signal = combineSignals([stopping.signal], passTimeoutMs);
    const summary: RotationPassSummary = { checked: 0, rotated: 0, failed: 0, deferred: 0 };
    let listed: Container[];
    try {
      listed = await cri('ListContainers', signal, (o) =>
        deps.runtime.listContainers({ state: { state: 'CONTAINER_RUNNING' } }, o),
      );
      lastListError = undefined;
    } catch (err) {
      lastListError = describeError(err);
      throw err;
    }
    // Only running containers write; a stopped one would be left with an empty live file.
    const running = listed.filter((c) => c.state === 'CONTAINER_RUNNING').sort((a, b) => cmp(a.id, b.id));
    const runningIds = new Set(running.map((c) => c.id));
    for (const id of known.keys()) if (!runningIds.has(id)) known.delete(id);
    const from = resumeAfter === undefined ? 0 : running.findIndex((c) => c.id > resumeAfter!);
    const order = from <= 0 ? running : [...running.slice(from), ...running.slice(0, from)];
    resumeAfter = undefined;
    for (let i = 0; i < order.length; i++) {
      const c = order[i]!;
      if (signal.aborted || summary.rotated >= maxRotations) {
        summary.deferred = order.length - i;
        if (summary.rotated >= maxRotations) resumeAfter = order[i - 1]?.id;
        break;
      }
      if (!(await checkCounted(c, signal, summary))) break;
    }
    return summary;
  }

  /**
   * Checks (and maybe rotates) one container's log, counting the outcome in `summary`; a failure is
   * logged with the container. False when the manager is stopping: the caller ends its pass.
   */
  async function checkCounted(
    c: Container,
    signal: AbortSignal,
    summary: RotationPassSummary,
  ): Promise<boolean> {
    const clog = log.child(identity(c));
    summary.checked++;
    try {
      if (await checkContainer(c, signal, clog)) summary.rotated++;
    } catch (err) {
      if (stopping.signal.aborted) return false;
      if (gone(c, err, clog)) return true;
      summary.failed++;
      clog.error('failed to rotate container log', { err: describeError(err) });
    }
    return true;
  }

  /** A container removed since it was listed is not a failure: forget it, quietly. */
  function gone(c: Container, err: unknown, clog: Logger): boolean {
    if (!isNotFound(err)) return false;
    known.delete(c.id);
    clog.debug('container went away before its log was checked', { err: describeError(err) });
    return true;
  }

  function rotateNow(): Promise<RotationPassSummary> {
    if (stopping.signal.aborted) {
      return Promise.reject(new KubeletError('Canceled', 'rotate container logs', 'the manager is stopped'));
    }
    return inFlight.run(pass);
  }

  /** Stats the known live files; rotates the oversized ones unless a pass is already running. */
  async function quickCheck(): Promise<void> {
    if (inFlight.busy || known.size === 0) return;
    const over: Container[] = [];
    for (const { container, path } of known.values()) {
      try {
        if ((await lstat(path)).size >= deps.maxSizeBytes) over.push(container);
      } catch {
        // Gone or rotated meanwhile: the next full pass looks at it again.
      }
    }
    if (over.length === 0 || inFlight.busy || stopping.signal.aborted) return;
    const signal = combineSignals([stopping.signal], passTimeoutMs);
    await inFlight.run(async () => {
      const summary: RotationPassSummary = { checked: 0, rotated: 0, failed: 0, deferred: 0 };
      for (const c of over.slice(0, maxRotations)) if (!(await checkCounted(c, signal, summary))) break;
      return summary;
    });
  }

  function loop(): void {
    timer = undefined;
    rotateNow()
      .then(
        (s) => {
          if (s.failed > 0 || s.deferred > 0) log.debug('container log rotation pass', { ...s });
        },
        (err: unknown) => {
          if (!stopping.signal.aborted)
            log.error('failed to rotate container logs', { err: describeError(err) });
        },
      )
      .finally(() => {
        if (!stopping.signal.aborted) timer = setTimeout(loop, intervalMs);
      });
  }

  return {
    start() {
      if (started || stopping.signal.aborted) return;
      started = true;
      loop();
      if (sizeCheckMs > 0 && deps.maxSizeBytes > 0) {
        sizeTimer = setInterval(() => {
          quickCheck().catch((err: unknown) =>
            log.debug('quick log size check failed', { err: describeError(err) }),
          );
        }, sizeCheckMs);
        sizeTimer.unref();
      }
    },
    async stop() {
      stopping.abort(new KubeletError('Canceled', 'rotate container logs', 'the manager is stopping'));
      if (timer) clearTimeout(timer);
      timer = undefined;
      if (sizeTimer) clearInterval(sizeTimer);
      sizeTimer = undefined;
      // The loop has logged a failure not caused by stopping; one caused by stopping is expected.
      await inFlight.idle();
    },
    rotateNow,
    healthy() {
      if (lastListError !== undefined) {
        return { ok: false, message: `container log rotation cannot list containers: ${lastListError}` };
      }
      return { ok: true, message: '' };
    },
  };
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Who a container is, for log lines (from the CRI labels the kubelet sets). */
function identity(c: Container): Record<string, string> {
  const l = c.labels ?? {};
  const ns = l[LABEL_POD_NAMESPACE];
  const name = l[LABEL_POD_NAME];
  return {
    pod: ns !== undefined && name !== undefined ? `${ns}/${name}` : '',
    podUID: l[LABEL_POD_UID] ?? '',
    container: l[LABEL_CONTAINER_NAME] ?? c.metadata?.name ?? '',
    containerID: c.id,
  };
}
