/**
 * The kubelet's presence in the cluster: registers the Node (or adopts one of the same name), keeps
 * its status fresh and renews its Lease (upstream registerWithAPIServer + syncNodeStatus loop +
 * nodelease controller).
 */
import type { ApiClient } from '../api/client-types.ts';
import { isAlreadyExists } from '../api/client-types.ts';
import type { EventType } from '../api/events.ts';
import type { OwnerReference } from '../api/types.ts';
import {
  DEFAULT_EVICTION_HARD_MEMORY_AVAILABLE,
  DEFAULT_EVICTION_HARD_NODEFS_AVAILABLE,
  DEFAULT_NODE_LEASE_DURATION_SECONDS,
  DEFAULT_NODE_STATUS_MAX_IMAGES,
  DEFAULT_NODE_STATUS_REPORT_FREQUENCY_MS,
  DEFAULT_NODE_STATUS_UPDATE_FREQUENCY_MS,
  NODE_LEASE_NAMESPACE,
  NODE_LEASE_RENEW_INTERVAL_FRACTION,
  NODE_REGISTER_INITIAL_STEP_MS,
  NODE_REGISTER_MAX_STEP_MS,
  NODE_STATUS_UPDATE_RETRY,
} from '../config/defaults.ts';
import { sleep as realSleep } from '../util/abort.ts';
import { describeError, isNotFound, KubeletError } from '../util/errors.ts';
import type { Logger } from '../util/logger.ts';
import { detectNodeIP } from '../util/net.ts';
import { createLeaseController } from './lease.ts';
import { readMachineInfo, type MachineInfo } from './machine-info.ts';
import {
  initialNode,
  nodeStatusHasChanged,
  reconcileExistingNode,
  setNodeStatus,
  type NodeImageInfo,
  type NodeImageList,
  type NodeStatusConfig,
  type NodeStatusEvent,
  type NodeStatusInputs,
} from './node-status.ts';
import { nodeStatusPatch } from './patch.ts';
import type { Lease, Node, NodeEventRecorder, NodeObjectReference, Taint } from './types.ts';

export interface NodeAgentDeps {
  /** Registration (create / get / reconcile the Node). */
  api: ApiClient;
  /**
   * Heartbeats: the node status GET + PATCH and the Lease, as upstream's heartbeatClient, so
   * they never queue behind pod traffic in the main client's rate limiter.
   */
  leaseApi: ApiClient;
  logger: Logger;
  /** Node events (Starting, NodeReady, …); logged only when absent. */
  recorder?: NodeEventRecorder;
  nodeName: string;
  /** `kubernetes.io/hostname` label and Hostname address; defaults to nodeName. */
  hostname?: string;
  /** --node-ip; detected (first non-container interface IPv4) when absent. */
  nodeIP?: string;
  maxPods: number;
  /** The kubelet root dir: its filesystem's size is the ephemeral-storage capacity. */
  rootDir: string;
  /** e.g. `v1.20.2`; also reported as kubeProxyVersion, as upstream. */
  kubeletVersion: string;
  /** daemonEndpoints.kubeletEndpoint.Port (the kubelet API port). */
  kubeletPort: number;
  /** --node-labels (override the default labels, with a warning). */
  labels?: Record<string, string>;
  /** --register-with-taints. */
  taints?: Taint[];
  /** systemReserved + kubeReserved summed per resource (quantities); none by default. */
  reserved?: Record<string, string>;
  /** Hard eviction thresholds reserved from allocatable; upstream defaults 100Mi and 10%. */
  evictionHard?: { memoryAvailable?: string; nodefsAvailable?: string };
  nodeStatusUpdateFrequencyMs?: number;
  nodeStatusReportFrequencyMs?: number;
  nodeLeaseDurationSeconds?: number;
  /** Images reported in status.images, largest first; -1 = all. Default 50 (upstream). */
  nodeStatusMaxImages?: number;
  /**
   * The images on the node (CRI ImageService ListImages). Called once per status update (once per
   * registration attempt, and once per update however many times its write is retried). Absent:
   * status.images is left as the server has it.
   */
  listImages?: (signal: AbortSignal) => Promise<readonly NodeImageInfo[]>;
  inputs: NodeStatusInputs;
  /** Called when heartbeats fail repeatedly (upstream: close the heartbeat client's connections). */
  onRepeatedHeartbeatFailure?: () => void;
  // ---- for tests ----
  now?: () => number;
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
  random?: () => number;
  machineInfo?: () => Promise<MachineInfo>;
  detectNodeIP?: () => string | undefined;
}

/**
 * Registers the node and keeps it and its lease fresh. start() returns at once; nothing it starts
 * ever rejects unhandled; stop() aborts requests in flight and waits for the loops to end.
 */
export interface NodeAgent {
  /** Registers (create, or adopt an existing Node with the same name), then keeps status and lease fresh. */
  start(): void;
  stop(): Promise<void>;
  /** The last Node object seen or written (for admission: allocatable, labels); undefined before registration. */
  node(): Node | undefined;
  /** Resolves once registered the first time; rejects when `signal` aborts or the agent stops first. */
  registered(signal?: AbortSignal): Promise<void>;
  /** The lease as last written (for tests and diagnostics). */
  lease(): Lease | undefined;
  /** One node status round: register if needed, then update (for tests). */
  syncNodeStatus(signal: AbortSignal): Promise<'ok' | 'gone' | 'failed'>;
  /** One lease round (for tests). */
  syncLease(signal: AbortSignal): Promise<void>;
}

type Registration = { state: 'unregistered' } | { state: 'registered'; uid: string };

export function createNodeAgent(deps: NodeAgentDeps): NodeAgent {
  const log = deps.logger.child({ node: deps.nodeName });
  const now = deps.now ?? Date.now;
  const sleep = deps.sleep ?? realSleep;
  const random = deps.random ?? Math.random;
  const updateFrequencyMs = deps.nodeStatusUpdateFrequencyMs ?? DEFAULT_NODE_STATUS_UPDATE_FREQUENCY_MS;
  const reportFrequencyMs = deps.nodeStatusReportFrequencyMs ?? DEFAULT_NODE_STATUS_REPORT_FREQUENCY_MS;
  const leaseDurationSeconds = deps.nodeLeaseDurationSeconds ?? DEFAULT_NODE_LEASE_DURATION_SECONDS;
  const nodePath = `/api/v1/nodes/${deps.nodeName}`;
  // upstream kubelet nodeRef: the node name doubles as UID
  const nodeRef: NodeObjectReference = {
    apiVersion: 'v1',
    kind: 'Node',
    name: deps.nodeName,
    uid: deps.nodeName,
  };

  let registration: Registration = { state: 'unregistered' };
  let everRegistered = false;
  let machine: MachineInfo | undefined;
  let lastNode: Node | undefined;
  let lastStatusReportMs: number | undefined;
  let lastUnschedulable = false;
  let detectedIP: string | undefined;
  let controller: AbortController | undefined;
  let loops: Promise<void> | undefined;
  const waiters = new Set<{ resolve: () => void; reject: (err: Error) => void }>();

  function nodeIP(): string | undefined {
    if (deps.nodeIP !== undefined && deps.nodeIP !== '') return deps.nodeIP;
    detectedIP ??= (deps.detectNodeIP ?? detectNodeIP)();
    return detectedIP;
  }

  function config(): NodeStatusConfig {
    return {
      nodeName: deps.nodeName,
      hostname: deps.hostname ?? deps.nodeName,
      nodeIP: nodeIP(),
      maxPods: deps.maxPods,
      kubeletVersion: deps.kubeletVersion,
      kubeletPort: deps.kubeletPort,
      reserved: deps.reserved ?? {},
      evictionHard: deps.evictionHard ?? {
        memoryAvailable: DEFAULT_EVICTION_HARD_MEMORY_AVAILABLE,
        nodefsAvailable: DEFAULT_EVICTION_HARD_NODEFS_AVAILABLE,
      },
      maxImages: deps.nodeStatusMaxImages ?? DEFAULT_NODE_STATUS_MAX_IMAGES,
    };
  }

  /** This round's image list; a failure is returned (the setter keeps the last list), not thrown. */
  async function listImages(signal: AbortSignal): Promise<NodeImageList | undefined> {
    if (!deps.listImages) return undefined;
    try {
      return { ok: true, images: await deps.listImages(signal) };
    } catch (err) {
      if (signal.aborted) throw err;
      return { ok: false, error: describeError(err) };
    }
  }

  async function readMachine(): Promise<MachineInfo> {
    machine = await (deps.machineInfo ?? (() => readMachineInfo(deps.rootDir, undefined, log)))();
    return machine;
  }

  function record(type: EventType, reason: string, message: string): void {
    if (deps.recorder) deps.recorder.eventFor(nodeRef, type, reason, message);
    else log.info(message, { event: reason, type });
  }

  function recordAll(events: NodeStatusEvent[]): void {
    for (const e of events) record(e.type, e.reason, e.message);
  }

  function markRegistered(node: Node): void {
    lastNode = node;
    registration = { state: 'registered', uid: node.metadata.uid ?? '' };
    if (!everRegistered) {
      everRegistered = true;
      for (const w of waiters) w.resolve();
      waiters.clear();
    }
  }

  // ---- registration (upstream registerWithAPIServer / tryRegisterWithAPIServer) ----

  async function tryRegister(signal: AbortSignal): Promise<boolean> {
    let built: ReturnType<typeof initialNode>;
    const images = await listImages(signal);
    try {
      built = initialNode(
        config(),
        { labels: deps.labels ?? {}, taints: deps.taints ?? [] },
        await readMachine(),
        deps.inputs,
        now(),
        images,
      );
    } catch (err) {
      log.error('unable to construct the Node object for this kubelet', { err: describeError(err) });
      return false;
    }
    for (const w of built.warnings) log.warn(w);
    log.info('attempting to register node');
    try {
      const created = await deps.api.request<Node>({
        method: 'POST',
        path: '/api/v1/nodes',
        body: built.node,
        signal,
      });
      markRegistered(created);
      recordAll(built.events);
      return true;
    } catch (err) {
      if (signal.aborted) throw err;
      if (!isAlreadyExists(err)) {
        log.error('unable to register node with the API server', { err: describeError(err) });
        return false;
      }
    }
    let existing: Node;
    try {
      existing = await deps.api.request<Node>({ method: 'GET', path: nodePath, signal });
    } catch (err) {
      if (signal.aborted) throw err;
      log.error('unable to register node with the API server: error getting the existing node', {
        err: describeError(err),
      });
      return false;
    }
    log.info('node was previously registered; adopting it', { uid: existing.metadata.uid });
    const original = structuredClone(existing);
    if (reconcileExistingNode(built.node, existing)) {
      try {
        existing = await deps.api.request<Node>({
          method: 'PATCH',
          path: `${nodePath}/status`,
          body: nodeStatusPatch(original, existing),
          contentType: 'application/strategic-merge-patch+json',
          signal,
        });
      } catch (err) {
        if (signal.aborted) throw err;
        log.error('unable to reconcile the existing node with the API server', { err: describeError(err) });
        return false;
      }
    }
    markRegistered(existing);
    recordAll(built.events);
    return true;
  }

  async function registerWithBackoff(signal: AbortSignal): Promise<void> {
    let step = NODE_REGISTER_INITIAL_STEP_MS;
    for (;;) {
      await sleep(step, signal);
      step = Math.min(step * 2, NODE_REGISTER_MAX_STEP_MS);
      if (await tryRegister(signal)) {
        log.info('successfully registered node', { uid: lastNode?.metadata.uid });
        return;
      }
    }
  }

  // ---- status (upstream updateNodeStatus / tryUpdateNodeStatus) ----

  async function tryUpdateNodeStatus(
    attempt: number,
    images: NodeImageList | undefined,
    signal: AbortSignal,
  ): Promise<void> {
    // The first attempt reads from the API server's cache (resourceVersion=0), retries from etcd.
    const got = await deps.leaseApi.request<Node>({
      method: 'GET',
      path: nodePath,
      query: attempt === 0 ? { resourceVersion: '0' } : undefined,
      signal,
    });
    const node = structuredClone(got);
    const info = machine ?? (await readMachine());
    const nowMs = now();
    const { events, warnings } = setNodeStatus(node, config(), info, deps.inputs, nowMs, images);
    for (const w of warnings) log.warn('failed to set some node status fields', { reason: w });

    // upstream recordNodeSchedulableEvent (cordon / uncordon)
    const unschedulable = node.spec?.unschedulable === true;
    if (unschedulable !== lastUnschedulable) {
      lastUnschedulable = unschedulable;
      const reason = unschedulable ? 'NodeNotSchedulable' : 'NodeSchedulable';
      record('Normal', reason, `Node ${deps.nodeName} status is now: ${reason}`);
    }

    const due = lastStatusReportMs === undefined || nowMs >= lastStatusReportMs + reportFrequencyMs;
    if (!due && !nodeStatusHasChanged(got.status, node.status)) {
      lastNode = got;
      return;
    }
    const updated = await deps.leaseApi.request<Node>({
      method: 'PATCH',
      path: `${nodePath}/status`,
      body: nodeStatusPatch(got, node),
      contentType: 'application/strategic-merge-patch+json',
      signal,
    });
    lastStatusReportMs = nowMs;
    lastNode = updated;
    // Recorded after the write, so a failed attempt retried does not repeat them.
    recordAll(events);
  }

  async function updateNodeStatus(signal: AbortSignal): Promise<'ok' | 'gone' | 'failed'> {
    // One list per update: the retries below reuse it (upstream reads a cached list).
    const images = await listImages(signal);
    for (let i = 0; i < NODE_STATUS_UPDATE_RETRY; i++) {
      try {
        await tryUpdateNodeStatus(i, images, signal);
        return 'ok';
      } catch (err) {
        if (signal.aborted) throw err;
        // A 404 from the cache may only mean it lags a fresh create; one from etcd means deleted.
        if (isNotFound(err) && i > 0) {
          log.warn('the Node object was deleted from the API server; registering again');
          registration = { state: 'unregistered' };
          lastStatusReportMs = undefined;
          return 'gone';
        }
        if (i > 0) deps.onRepeatedHeartbeatFailure?.();
        log.error('error updating node status, will retry', { attempt: i + 1, err: describeError(err) });
      }
    }
    log.error('unable to update node status: retry count exceeded', { retries: NODE_STATUS_UPDATE_RETRY });
    return 'failed';
  }

  async function syncNodeStatus(signal: AbortSignal): Promise<'ok' | 'gone' | 'failed'> {
    if (registration.state === 'unregistered') await registerWithBackoff(signal);
    return updateNodeStatus(signal);
  }

  async function statusLoop(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      try {
        const r = await syncNodeStatus(signal);
        if (r === 'gone') continue; // register again right away
        await sleep(updateFrequencyMs, signal);
      } catch (err) {
        if (signal.aborted) return;
        log.error('node status round failed', { err: describeError(err) });
        try {
          await sleep(updateFrequencyMs, signal);
        } catch {
          return; // aborted while waiting: stopping
        }
      }
    }
  }

  // ---- lease ----

  /**
   * upstream SetNodeOwnerFunc: the lease is owned by the Node, so it goes when the Node goes. Unlike
   * upstream, an owner reference to an earlier Node of this name (deleted and registered again) is
   * replaced: kept, it would make the garbage collector delete the lease we are renewing.
   */
  async function setLeaseOwner(lease: Lease, signal: AbortSignal): Promise<void> {
    const refs = lease.metadata.ownerReferences ?? [];
    const current = registration.state === 'registered' ? registration.uid : '';
    const stale = refs.some(
      (r) => r.kind === 'Node' && r.name === deps.nodeName && current !== '' && r.uid !== current,
    );
    if (refs.length > 0 && !stale) return;
    let uid = current;
    if (uid === '') {
      const node = await deps.leaseApi.request<Node>({ method: 'GET', path: nodePath, signal });
      uid = node.metadata.uid ?? '';
    }
    if (uid === '')
      throw new KubeletError('FailedPrecondition', 'set node lease owner', 'node has no UID yet');
    const owner: OwnerReference = { apiVersion: 'v1', kind: 'Node', name: deps.nodeName, uid };
    lease.metadata.ownerReferences = [owner];
  }

  const leaseController = createLeaseController({
    api: deps.leaseApi,
    logger: log,
    holderIdentity: deps.nodeName,
    namespace: NODE_LEASE_NAMESPACE,
    leaseDurationSeconds,
    renewIntervalMs: leaseDurationSeconds * 1000 * NODE_LEASE_RENEW_INTERVAL_FRACTION,
    now,
    sleep,
    random,
    postProcess: setLeaseOwner,
    onRepeatedHeartbeatFailure: deps.onRepeatedHeartbeatFailure,
  });

  return {
    start() {
      if (controller) {
        log.warn('node agent already started');
        return;
      }
      controller = new AbortController();
      const signal = controller.signal;
      record('Normal', 'Starting', 'Starting kubelet.');
      loops = Promise.all([statusLoop(signal), leaseController.run(signal)]).then(() => undefined);
    },
    async stop() {
      if (!controller) return;
      controller.abort(new KubeletError('Canceled', 'node agent', 'stopping'));
      for (const w of waiters)
        w.reject(new KubeletError('Canceled', 'wait for node registration', 'stopping'));
      waiters.clear();
      await loops;
    },
    node: () => lastNode,
    registered(signal) {
      if (everRegistered) return Promise.resolve();
      if (controller?.signal.aborted) {
        return Promise.reject(new KubeletError('Canceled', 'wait for node registration', 'stopped'));
      }
      return new Promise<void>((resolve, reject) => {
        const onAbort = () => {
          waiters.delete(w);
          reject(new KubeletError('Canceled', 'wait for node registration', 'aborted'));
        };
        const w = {
          resolve: () => {
            signal?.removeEventListener('abort', onAbort);
            resolve();
          },
          reject: (err: Error) => {
            signal?.removeEventListener('abort', onAbort);
            reject(err);
          },
        };
        if (signal?.aborted) {
          onAbort();
          return;
        }
        waiters.add(w);
        signal?.addEventListener('abort', onAbort, { once: true });
      });
    },
    lease: () => leaseController.latest(),
    syncNodeStatus,
    syncLease: (signal) => leaseController.sync(signal),
  };
}
