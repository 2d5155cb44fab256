import { isRestartableInitContainer } from '../api/pod-util.ts';
import type { Container, KubeletPod, Pod, Probe } from '../api/types.ts';
import { podFullName } from '../api/types.ts';
import { PROBE_MAX_RETRIES } from '../config/defaults.ts';
import { abortReason } from '../util/abort.ts';
import { deepEqual } from '../util/json.ts';
import { describeError } from '../util/errors.ts';
import type { Logger } from '../util/logger.ts';
import type { ProbeOutcome } from './outcome.ts';
import { runProbe } from './run-probe.ts';
import type {
  ProbeContainer,
  ProbeManager,
  ProbeManagerDeps,
  ProbeMetricLabels,
  ProbeState,
  ProbeType,
  RestartReason,
} from './types.ts';
import { startWorker, type ProbeResult, type Worker } from './worker.ts';
import { monotonicNow } from '../util/clock.ts';

const PROBE_TYPES: readonly ProbeType[] = ['startup', 'readiness', 'liveness'];
/** The last probe output kept per worker for `why` (upstream events keep 10 KiB; a few lines will do). */
const LAST_OUTPUT_CHARS = 1024;

interface LastProbe {
  containerId: string;
  result: 'success' | 'failure' | 'error';
  output: string;
  /** Wall ms. */
  at: number;
}

const TITLE: Record<ProbeType, ProbeMetricLabels['probeType']> = {
  liveness: 'Liveness',
  readiness: 'Readiness',
  startup: 'Startup',
};

interface PodEntry {
  pod: KubeletPod;
  logger: Logger;
  /** The current instance of each container name, from the last updateContainers. */
  containers: Map<string, ProbeContainer>;
  /** Keyed by `${containerName}/${probeType}`. */
  workers: Map<string, Worker>;
  /** Liveness and startup were stopped for termination: addPod must not start them again. */
  terminating: boolean;
  /** Read-only for `why`: each worker's last concluded or errored probe, keyed like `workers`. */
  last: Map<string, LastProbe>;
}

function workerKey(containerName: string, type: ProbeType): string {
  return `${containerName}/${type}`;
}

function probeOf(c: Container, type: ProbeType): Probe | undefined {
  switch (type) {
    case 'liveness':
      return c.livenessProbe;
    case 'readiness':
      return c.readinessProbe;
    case 'startup':
      return c.startupProbe;
  }
}

/** Containers that get probe workers: regular ones, and sidecar init containers (upstream 1.28+). */
function probedContainers(pod: Pod): { container: Container; sidecar: boolean }[] {
  const out = pod.spec.containers.map((container) => ({ container, sidecar: false }));
  for (const c of pod.spec.initContainers ?? []) {
    if (isRestartableInitContainer(c)) out.push({ container: c, sidecar: true });
  }
  return out;
}

function findContainer(pod: Pod, name: string): Container | undefined {
  return (
    pod.spec.containers.find((c) => c.name === name) ?? pod.spec.initContainers?.find((c) => c.name === name)
  );
}

export function createProbeManager(deps: ProbeManagerDeps): ProbeManager {
  const now = deps.now ?? Date.now;
  const monotonic = deps.monotonic ?? monotonicNow;
  const random = deps.random ?? Math.random;
  const timers = deps.timers ?? {
    setTimeout: (fn: () => void, ms: number): unknown => setTimeout(fn, ms),
    clearTimeout: (h: unknown) => clearTimeout(h as NodeJS.Timeout),
  };
  const managerStartedAt = monotonic();
  const pods = new Map<string, PodEntry>();
  /** Loops still winding down after stop(), so the manager's stop() can wait for them. */
  const running = new Set<Promise<void>>();
  const metrics = deps.metrics;
  /** Metrics only: the labels of each live worker; a stopped worker is removed and counts no more. */
  const metricLabels = new WeakMap<Worker, ProbeMetricLabels>();
  let stopped = false;

  function notify(uid: string): void {
    try {
      deps.onChange(uid);
    } catch (err) {
      deps.logger.error('probe result handler failed', { podUID: uid, error: describeError(err) });
    }
  }

  /** One probe with retries on error, reported as upstream's prober reports it (events, logs). */
  async function probeWithEvents(
    entry: PodEntry,
    uid: string,
    type: ProbeType,
    spec: Probe,
    c: ProbeContainer,
    signal: AbortSignal,
  ): Promise<'success' | 'failure'> {
    const outcome = await probeOnce(entry, uid, type, spec, c, signal).catch((err: unknown) => {
      if (!signal.aborted) remember(entry, c, type, 'error', describeError(err));
      throw err;
    });
    remember(entry, c, type, outcome.result, outcome.output);
    return outcome.result;
  }

  function remember(
    entry: PodEntry,
    c: ProbeContainer,
    type: ProbeType,
    result: LastProbe['result'],
    output: string,
  ): void {
    entry.last.set(workerKey(c.name, type), {
      containerId: c.containerId,
      result,
      output: output.length > LAST_OUTPUT_CHARS ? output.slice(0, LAST_OUTPUT_CHARS) : output,
      at: now(),
    });
  }

  async function probeOnce(
    entry: PodEntry,
    uid: string,
    type: ProbeType,
    spec: Probe,
    c: ProbeContainer,
    signal: AbortSignal,
  ): Promise<{ result: 'success' | 'failure'; output: string }> {
    const container = findContainer(entry.pod, c.name);
    const log = entry.logger.child({ container: c.name, probeType: type });
    const warn = (reason: string, message: string) =>
      deps.recorder.event(entry.pod, 'Warning', reason, `${TITLE[type]} probe ${message}`);
    let outcome: ProbeOutcome | undefined;
    let lastErr: unknown;
    for (let attempt = 0; attempt < PROBE_MAX_RETRIES && outcome === undefined; attempt++) {
      if (signal.aborted) throw abortReason(signal);
      try {
        if (!container) throw new Error(`container ${c.name} is not in the pod spec`);
        outcome = await runProbe(
          spec,
          { container, containerId: c.containerId, podIP: deps.podIP(uid), exec: deps.exec },
          signal,
        );
      } catch (err) {
        lastErr = err;
      }
    }
    if (outcome === undefined) {
      if (signal.aborted) throw lastErr;
      log.info('probe errored', { error: describeError(lastErr) });
      warn('Unhealthy', `errored: ${describeError(lastErr)}`);
      throw lastErr;
    }
    switch (outcome.result) {
      case 'success':
        log.trace('probe succeeded');
        return { result: 'success', output: outcome.output };
      case 'warning':
        log.debug('probe succeeded with a warning', { output: outcome.output });
        warn('ProbeWarning', `warning: ${outcome.output}`);
        return { result: 'success', output: outcome.output };
      case 'failure':
        log.info('probe failed', { output: outcome.output });
        warn('Unhealthy', `failed: ${outcome.output}`);
        return { result: 'failure', output: outcome.output };
    }
  }

  function isStartedIn(entry: PodEntry | undefined, name: string): boolean {
    const c = entry?.containers.get(name);
    if (c && c.state !== 'running') return false;
    const w = entry?.workers.get(workerKey(name, 'startup'));
    if (!w) return true;
    if (!c) return false;
    return w.resultFor(c.containerId) === 'success';
  }

  function stopWorker(w: Worker): void {
    const labels = metricLabels.get(w);
    if (labels && metrics) {
      metricLabels.delete(w);
      metrics.workerStopped(labels);
    }
    w.stop();
    running.add(w.done);
    void w.done.finally(() => running.delete(w.done));
  }

  function newWorker(
    uid: string,
    entry: PodEntry,
    container: Container,
    sidecar: boolean,
    type: ProbeType,
    spec: Probe,
  ): Worker {
    const name = container.name;
    const logger = entry.logger.child({ container: name, probeType: type });
    const worker: Worker = startWorker(type, spec, sidecar, {
      pod: () => pods.get(uid)?.pod,
      container: () => pods.get(uid)?.containers.get(name),
      isStarted: () => isStartedIn(pods.get(uid), name),
      probe: metrics
        ? async (c, signal) => {
            const result = await probeWithEvents(entry, uid, type, spec, c, signal);
            const labels = metricLabels.get(worker);
            if (labels) metrics.probed(labels, result === 'success' ? 'successful' : 'failed');
            return result;
          }
        : (c, signal) => probeWithEvents(entry, uid, type, spec, c, signal),
      resultChanged: (result: ProbeResult, containerId) => {
        if (entry.workers.get(workerKey(name, type)) !== worker) return; // replaced or removed meanwhile
        logger.debug('probe result changed', { result, containerID: containerId });
        if (type === 'startup' && result === 'success') {
          deps.timeline?.record(uid, 'startup-probe-passed', { container: name });
          entry.workers.get(workerKey(name, 'readiness'))?.trigger();
        }
        notify(uid);
      },
      now,
      monotonic,
      random,
      timers,
      managerStartedAt,
      logger,
    });
    if (metrics) {
      metricLabels.set(worker, {
        probeType: TITLE[type],
        container: name,
        pod: entry.pod.metadata.name,
        namespace: entry.pod.metadata.namespace,
        podUID: uid,
      });
    }
    return worker;
  }

  function removePod(uid: string): void {
    const entry = pods.get(uid);
    if (!entry) return;
    pods.delete(uid);
    for (const w of entry.workers.values()) stopWorker(w);
    entry.workers.clear();
  }

  return {
    removePod,

    stopLivenessAndStartup(uid) {
      const entry = pods.get(uid);
      if (!entry) return;
      entry.terminating = true;
      for (const w of entry.workers.values()) if (w.type !== 'readiness') stopWorker(w);
    },

    addPod(pod) {
      const uid = pod.metadata.uid;
      if (stopped) return;
      let entry = pods.get(uid);
      if (!entry) {
        entry = {
          pod,
          logger: deps.logger.child({ pod: podFullName(pod), podUID: uid }),
          containers: new Map(),
          workers: new Map(),
          terminating: false,
          last: new Map(),
        };
        pods.set(uid, entry);
      }
      entry.pod = pod;
      const wanted = new Set<string>();
      for (const { container, sidecar } of probedContainers(pod)) {
        for (const type of PROBE_TYPES) {
          const spec = probeOf(container, type);
          if (!spec) continue;
          const key = workerKey(container.name, type);
          wanted.add(key);
          const existing = entry.workers.get(key);
          if (entry.terminating && type !== 'readiness') continue;
          // Pod specs are immutable in the API, but a static pod's may be replaced: a changed probe
          // gets a fresh worker.
          if (existing && deepEqual(existing.spec, spec)) continue;
          if (existing) stopWorker(existing);
          entry.workers.set(key, newWorker(uid, entry, container, sidecar, type, spec));
        }
      }
      for (const [key, w] of entry.workers) {
        if (wanted.has(key)) continue;
        stopWorker(w);
        entry.workers.delete(key);
      }
    },

    updateContainers(uid, containers) {
      const entry = pods.get(uid);
      if (!entry) return;
      const previous = entry.containers;
      entry.containers = new Map(containers.map((c) => [c.name, c]));
      for (const c of containers) {
        const before = previous.get(c.name);
        const startedRunning =
          c.state === 'running' && (before?.containerId !== c.containerId || before.state !== 'running');
        // Upstream triggers a readiness probe whenever a started container is not ready yet; a new
        // running instance is when that matters.
        if (startedRunning) entry.workers.get(workerKey(c.name, 'readiness'))?.trigger();
      }
    },

    isReady(uid, containerName) {
      const entry = pods.get(uid);
      const c = entry?.containers.get(containerName);
      if (c && c.state !== 'running') return false;
      if (!isStartedIn(entry, containerName)) return false;
      const w = entry?.workers.get(workerKey(containerName, 'readiness'));
      if (!w) return true;
      if (!c) return false;
      return w.resultFor(c.containerId) === 'success';
    },

    isStarted(uid, containerName) {
      return isStartedIn(pods.get(uid), containerName);
    },

    restartReason(uid, containerName): RestartReason | undefined {
      const entry = pods.get(uid);
      const c = entry?.containers.get(containerName);
      if (!entry || !c || c.state !== 'running') return undefined;
      for (const type of ['liveness', 'startup'] as const) {
        const w = entry.workers.get(workerKey(containerName, type));
        if (w?.resultFor(c.containerId) !== 'failure') continue;
        const spec = findContainer(entry.pod, containerName);
        const sidecar = spec !== undefined && isRestartableInitContainer(spec);
        const restarts = sidecar || entry.pod.spec.restartPolicy !== 'Never';
        const grace = w.spec.terminationGracePeriodSeconds;
        return {
          probe: type,
          message: `Container ${containerName} failed ${type} probe${restarts ? ', will be restarted' : ''}`,
          ...(grace !== undefined && grace !== null ? { terminationGracePeriodSeconds: grace } : {}),
        };
      }
      return undefined;
    },

    describe(uid) {
      const entry = pods.get(uid);
      if (!entry) return [];
      const out: ProbeState[] = [];
      for (const [key, w] of entry.workers) {
        const name = key.slice(0, key.lastIndexOf('/'));
        const c = entry.containers.get(name);
        const cur = w.current();
        const same = cur !== undefined && c !== undefined && cur.containerId === c.containerId;
        const last = entry.last.get(key);
        out.push({
          container: name,
          probe: w.type,
          result: same ? cur.result : undefined,
          consecutiveFailures: same && cur.run?.result === 'failure' ? cur.run.count : 0,
          failureThreshold: w.failureThreshold,
          ...(last && c && last.containerId === c.containerId
            ? { lastResult: last.result, lastOutput: last.output, lastAt: last.at }
            : {}),
        });
      }
      return out;
    },

    async stop() {
      stopped = true;
      for (const uid of [...pods.keys()]) removePod(uid);
      await Promise.all([...running]);
    },
  };
}
