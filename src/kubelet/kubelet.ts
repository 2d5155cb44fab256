import { join } from 'node:path';
import type { KubeletPod } from '../api/types.ts';
import { AsyncQueue } from '../util/async-queue.ts';
import { createBackoff } from '../util/backoff.ts';
import { createBackoffStore } from '../util/backoff-store.ts';
import {
  CONTAINER_GC_PERIOD_MS,
  HOUSEKEEPING_PERIOD_MS,
  IMAGE_GC_PERIOD_MS,
  RUNTIME_STATUS_PERIOD_MS,
  SYNC_LOOP_TICK_MS,
} from '../config/defaults.ts';
import { createPodConfig, describeSourceProblem, type PodSourceName } from '../podsource/index.ts';
import { createQosUpdater } from '../cm/index.ts';
import { createPodWorkers } from './pod-workers.ts';
import { createWorkQueue } from './work-queue.ts';
import { createPodState } from './pod-state.ts';
import { createRuntimeHealth } from './runtime-health.ts';
import { createSyncHandler } from './sync-handler.ts';
import { createHousekeeping } from './housekeeping.ts';
import { createSyncLoop, type LoopEvent } from './sync-loop.ts';
import {
  buildEviction,
  buildGCs,
  buildManagers,
  buildShutdown,
  buildStatusSyncer,
  defaultAdmitHandlers,
} from './managers.ts';
import { createStopPod } from './stop-pod.ts';
import { createOomWatcher, describeOom, ROOT_CGROUP } from '../oom/index.ts';
import { runOnce } from './run-once.ts';
import { STATE_DIR_NAME, setupDataDirs } from './data-dirs.ts';
import type { KubeletConfig } from '../config/index.ts';
import type { Kubelet, KubeletDependencies } from './types.ts';
import { monotonicNow } from '../util/clock.ts';
import { describeError } from '../util/errors.ts';
import { createWhyGatherer } from '../why/index.ts';
import { noopTimeline } from '../timeline/index.ts';

export type { LoopEvent } from './sync-loop.ts';
export type { KubeletManagers } from './managers.ts';
export type { Kubelet, KubeletDependencies, NodeEventSink, PodView } from './types.ts';

/** Loop queue capacity (upstream plegChannelCapacity is 1000; config updates share it here). */
const LOOP_QUEUE_CAPACITY = 4096;
/** The sync loop counts as stalled (healthz) after this long without handling an event. */
const LOOP_STALL_MS = 3 * 60_000;

/**
 * The kubelet core: wires the managers from the compiled config; starts nothing (upstream
 * NewMainKubelet). `run()` (or `runOnce()`) starts. Assembled by `newKubelet` (new-kubelet.ts),
 * which builds the dependencies; nothing else calls it.
 */
export function createKubelet(config: KubeletConfig, deps: KubeletDependencies): Kubelet {
  const now = deps.now ?? Date.now;
  const monotonic = deps.monotonic ?? monotonicNow;
  const log = deps.logger;
  const timeline = deps.timeline ?? noopTimeline;
  const stopSignal = new AbortController();
  const queue = new AsyncQueue<LoopEvent>(LOOP_QUEUE_CAPACITY);
  const backoff = createBackoff();
  const backoffStore = createBackoffStore(
    backoff,
    join(config.rootDir, STATE_DIR_NAME, 'container-backoff.json'),
    log,
    { now, monotonic },
  );
  const cm = deps.containerManager?.enabled ? deps.containerManager : undefined;
  let cgroupsStarted = false;
  const { volumes, runtime, pleg, probes, statuses, csi } = buildManagers(config, deps, {
    backoff,
    onProbeChange: (uid) => queue.push({ kind: 'probe', uid }),
    // Only once the container manager started (run, run-once): until then the runtime's default.
    ...(cm ? { podCgroupParent: (pod: KubeletPod) => (cgroupsStarted ? cm.podCgroupParent(pod) : '') } : {}),
  });
  deps.metrics?.setRuntimePodsProvider(() => pleg.runtimePods());
  const health = createRuntimeHealth(deps.runtimeService, monotonic);
  const state = createPodState();
  const workQueue = createWorkQueue(monotonic);
  const expectedSources = new Set<PodSourceName>(deps.sources.map((s) => s.name));
  const qos = createQosUpdater({
    cm,
    activePods: () => loop.activePods(),
    signal: stopSignal.signal,
    logger: log,
    monotonic,
  });
  const cluster = deps.cluster;
  const statusSyncer = buildStatusSyncer(deps, statuses, state.desired);
  const handler = createSyncHandler({
    runtime,
    cache: pleg.cache,
    probes,
    statuses,
    volumes,
    state,
    workQueue,
    backoff,
    qos,
    cgroups: () => cm,
    ...(statusSyncer
      ? { deletePod: (pod: KubeletPod, signal: AbortSignal) => statusSyncer.deletePod(pod, signal) }
      : {}),
    recorder: deps.recorder,
    nodeEvent: deps.nodeEvent,
    rootDir: config.rootDir,
    logger: log,
    ...(deps.metrics ? { metrics: deps.metrics } : {}),
    nodeIP: deps.nodeIP,
    syncFrequencyMs: config.syncFrequencyMs,
    now,
    monotonic,
    ...(deps.random ? { random: deps.random } : {}),
  });
  const workers = createPodWorkers(handler, log, {
    ...(deps.metrics ? { metrics: deps.metrics.podWorkers } : {}),
    timeline,
  });
  const podConfig = createPodConfig({
    sources: deps.sources,
    logger: log,
    // Two sources naming the same pod: the one dropped is a Warning event on the Node, as a source's.
    onProblem: (p) => deps.nodeEvent('Warning', p.reason, describeSourceProblem(p)),
    onUpdate: (update) => {
      if (update.op === 'ADD') {
        for (const p of update.pods) {
          timeline.begin(p.metadata.uid, p.metadata.namespace, p.metadata.name, update.source);
        }
      }
      if (!queue.push({ kind: 'config', update })) {
        // Never drop a config update: the loop is far behind; log loudly and retry shortly.
        log.error('sync loop queue full; config update delayed', { source: update.source, op: update.op });
        setTimeout(() => queue.push({ kind: 'config', update }), 100);
      }
    },
  });
  const sourcesReady = (): boolean => podConfig.seenAllSources(expectedSources);
  const housekeeping = createHousekeeping({
    state,
    workers,
    runtimePods: () => pleg.runtimePods(),
    sourcesReady,
    backoff,
    backoffStore,
    ...(cluster
      ? { reconcileMirrors: (statics, signal) => cluster.mirrorPods.reconcile(statics, signal) }
      : {}),
    volumes,
    rootDir: config.rootDir,
    cm,
    qos,
    signal: stopSignal.signal,
    logger: log,
    monotonic,
    nodeEvent: deps.nodeEvent,
  });
  const { containerGC, imageGC } = buildGCs(config, deps, {
    sourcesReady,
    isPodDeleted: (uid) => state.isDeleted(uid, workers.phase(uid)),
    // Upstream IsPodTerminated: gone from every source, or its worker finished it.
    isPodTerminated: (uid) => !state.desired.has(uid) || workers.phase(uid) === 'terminated',
    signal: stopSignal.signal,
  });
  // Upstream oomWatcher: SystemOOM node events from the kernel log; container OOMs are logged.
  const oomWatcher = createOomWatcher({
    nodeEvent: deps.nodeEvent,
    onOom: (oom) => {
      if (oom.victimContainerName !== ROOT_CGROUP) log.info('container OOM kill', describeOom(oom));
    },
    logger: log,
    ...(deps.openKmsg ? { openKmsg: deps.openKmsg } : {}),
  });
  const stopPod = createStopPod(queue, workers, stopSignal.signal);
  const shutdown = buildShutdown(config, deps, { activePods: () => loop.activePods(), killPod: stopPod });
  const eviction = buildEviction(config, deps, {
    activePods: () => loop.activePods(),
    killPod: stopPod,
    podCleanedUp: (uid) => workers.settled(uid),
    containerGC,
    imageGC,
  });
  const loop = createSyncLoop({
    queue,
    state,
    workers,
    workQueue,
    statuses,
    cache: pleg.cache,
    handler,
    admitHandlers: defaultAdmitHandlers(config, deps.node, eviction, shutdown),
    housekeeping,
    qos,
    ...(cluster && statusSyncer
      ? { mirrors: { pods: cluster.mirrorPods, markDirty: (uids: string[]) => statusSyncer.markDirty(uids) } }
      : {}),
    recorder: deps.recorder,
    timeline,
    logger: log,
    monotonic,
  });

  const why = createWhyGatherer({
    findPod: (namespace, name) =>
      [...state.desired.values()].find((p) => p.metadata.namespace === namespace && p.metadata.name === name),
    status: (uid) => statuses.get(uid),
    rejected: (uid) => state.rejected.has(uid),
    synced: (uid) => state.lastSyncEnd.has(uid),
    workerPhase: (uid) => workers.phase(uid),
    stoppedBy: (uid) => state.statusOverrides.get(uid),
    syncError: (uid) => state.syncErrors.get(uid),
    killStarted: (uid) => state.killStarted.get(uid),
    waitingReasons: (uid) => state.waitingReasons.get(uid),
    runtimeStatus: (uid) => pleg.cache.get(uid),
    crashLoopDelayMs: (key) => backoff.get(key),
    imagePulls: (uid) => runtime.imagePulls?.(uid) ?? [],
    preStopsRunning: (uid) => runtime.preStopsRunning?.(uid) ?? [],
    probes: (uid) => probes.describe(uid),
    logPath: async (id, signal) => (await deps.runtimeService.containerStatus(id, { signal })).logPath,
    now,
    monotonic,
    logger: log,
  });

  let droppedEvents = 0;
  let stopping: Promise<void> | undefined;
  let loopDone: Promise<void> | undefined;
  const timers: NodeJS.Timeout[] = [];

  /** Directories, saved back-off, cgroups: what both run modes need before the first sync. */
  async function prepare(): Promise<void> {
    await setupDataDirs({ rootDir: config.rootDir, podLogsDir: config.podLogsDir }, log);
    await backoffStore.load();
    if (cm) {
      await cm.start(stopSignal.signal);
      cgroupsStarted = true;
      void qos.update();
    }
  }

  return {
    async run() {
      log.info('starting tskubelet', { nodeName: config.nodeName, nodeIP: deps.nodeIP });
      await prepare();
      void shutdown?.start(stopSignal.signal);
      oomWatcher.start();
      // Upstream starts the plugin manager with the kubelet's other runtime-dependent modules.
      csi.start(stopSignal.signal).catch((err: unknown) =>
        log.error('CSI plugin watcher failed to start; no CSI driver can register', {
          error: describeError(err),
        }),
      );
      loopDone = loop.run();
      // The sync loop syncs the pod, whatever the event. A relist emits a pod's events one after
      // another without yielding (a new pod: its sandbox and its containers started): one sync
      // for them, not one per event, or the second queues behind the first and re-reads CRI for
      // nothing. The next relist's events, a yield later, sync again.
      let lastUid: string | undefined;
      pleg.start((event) => {
        if (event.uid === lastUid) return;
        if (lastUid === undefined) queueMicrotask(() => (lastUid = undefined));
        lastUid = event.uid;
        if (queue.push({ kind: 'pleg', event })) return;
        const dropped = ++droppedEvents;
        log.error('sync loop queue full; dropped a PLEG event (the next relist catches up)', { dropped });
      });
      podConfig.start();
      statusSyncer?.start();
      const every = (ms: number, fn: () => unknown) => timers.push(setInterval(fn, ms));
      every(SYNC_LOOP_TICK_MS, () => queue.push({ kind: 'tick' }));
      every(HOUSEKEEPING_PERIOD_MS, () => queue.push({ kind: 'housekeeping' }));
      void health.check();
      every(RUNTIME_STATUS_PERIOD_MS, () => health.check());
      // Upstream StartGarbageCollection; before all sources are seen no pod can be known deleted.
      every(CONTAINER_GC_PERIOD_MS, () => sourcesReady() && containerGC.collect());
      // Upstream's wait.Until runs the first image GC pass at once, then one every ImageGCPeriod.
      void imageGC.collect();
      every(IMAGE_GC_PERIOD_MS, () => imageGC.collect());
      eviction?.start();
      await loopDone;
    },
    async runOnce(runOpts) {
      await prepare();
      try {
        return await runOnce(
          {
            startSources: () => podConfig.start(),
            stopSources: () => podConfig.stop(),
            sourcesReady,
            pods: () => podConfig.allPods(),
            admit: (pod, admitted) => loop.admit(pod, admitted),
            syncPod: (pod, signal) => handler.syncPod(pod, signal),
            podStatus: (pod, signal) =>
              runtime.getPodStatus(pod.metadata.uid, pod.metadata.name, pod.metadata.namespace, signal),
          },
          log,
          runOpts,
        );
      } finally {
        stopSignal.abort();
        await probes.stop();
        await qos.idle();
      }
    },
    stop() {
      stopping ??= (async () => {
        for (const t of timers) clearInterval(t);
        // The inhibitor lock goes first: a kubelet that stops must not hold a shutdown up.
        await shutdown?.stop();
        stopSignal.abort();
        await eviction?.stop();
        await podConfig.stop();
        await statusSyncer?.stop();
        await housekeeping.idle();
        await oomWatcher.stop();
        await csi.stop();
        await Promise.all([containerGC.idle(), imageGC.idle(), qos.idle()]);
        await pleg.stop();
        await probes.stop();
        await workers.stop();
        await backoffStore.save();
        queue.close();
        await loopDone;
        log.info('tskubelet stopped');
      })();
      return stopping;
    },
    pods: () => [...state.desired.values()].map((pod) => ({ pod, status: statuses.get(pod.metadata.uid) })),
    measuredVolumes: (uid) => volumes.measuredVolumes(uid),
    runningPods: (signal) => runtime.listPods(signal),
    podTimeline(namespace, name) {
      for (const [uid, p] of state.desired) {
        if (p.metadata.namespace === namespace && p.metadata.name === name) {
          const t = timeline.get(uid);
          if (t) return t;
        }
      }
      return timeline.findByName(namespace, name);
    },
    healthz() {
      const p = pleg.healthy();
      if (!p.ok) return p;
      const idle = monotonic() - loop.lastActivity();
      if (loopDone && idle > LOOP_STALL_MS) {
        return { ok: false, message: `sync loop stalled for ${Math.round(idle / 1000)}s` };
      }
      return { ok: true, message: 'ok' };
    },
    sourcesReady,
    runtimeReady() {
      const problems = [health.state(), pleg.healthy()].filter((s) => !s.ok).map((s) => s.message);
      return problems.length === 0 ? { ok: true, message: '' } : { ok: false, message: problems.join('; ') };
    },
    runtimeVersion: () => health.version(),
    nodeShutdownError: () => shutdown?.readyConditionError(),
    pressure: () => eviction?.pressure() ?? { memory: false, disk: false, pid: false },
    podWhy: (namespace, name, signal) => why.podWhy(namespace, name, signal),
    setMirrorPods(pods) {
      queue.push({ kind: 'mirrors', pods });
    },
  };
}
