/**
 * What the node agent's parts share: the agent's dependencies, the settings and helpers derived
 * from them (status config, image listing, machine info, event recording), and the mutable state
 * registration and the status loop both read and write.
 */
import type { ApiClient } from '../api/client-types.ts';
import type { EventType } from '../api/events.ts';
import {
  DEFAULT_EVICTION_HARD_MEMORY_AVAILABLE,
  DEFAULT_EVICTION_HARD_NODEFS_AVAILABLE,
  DEFAULT_NODE_STATUS_MAX_IMAGES,
} from '../config/defaults.ts';
import { sleep as realSleep } from '../util/abort.ts';
import { describeError } from '../util/errors.ts';
import type { Logger } from '../util/logger.ts';
import { detectNodeIP } from '../util/net.ts';
import { readMachineInfo, type MachineInfo } from './machine-info.ts';
import type {
  NodeImageInfo,
  NodeImageList,
  NodeStatusConfig,
  NodeStatusEvent,
  NodeStatusInputs,
} from './status-inputs.ts';
import type { Node, NodeEventRecorder, NodeObjectReference, Taint } from './types.ts';
import { monotonicNow } from '../util/clock.ts';

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
  /**
   * Create the Node when it does not exist (upstream registerNode, default true). False: only an
   * existing Node of this name is adopted; until one exists the agent waits (and says so).
   */
  registerNode?: boolean;
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
  /** systemReserved + kubeReserved summed per resource (cpu in cores, bytes, counts); none by default. */
  reserved?: Record<string, number>;
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
  /** Wall ms (status times, renewTime); default Date.now. */
  now?: () => number;
  /** Monotonic ms (the status report period); default util/clock's. */
  monotonic?: () => number;
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
  random?: () => number;
  machineInfo?: () => Promise<MachineInfo>;
  detectNodeIP?: () => string | undefined;
}

export type Registration = { state: 'unregistered' } | { state: 'registered'; uid: string };

/** State shared by registration, the status loop and the lease owner. */
export interface AgentState {
  registration: Registration;
  /** The last Node object seen or written; undefined before registration. */
  lastNode: Node | undefined;
  /** Machine info as last read (at registration, or at the first status update without one). */
  machine: MachineInfo | undefined;
}

export interface AgentContext {
  readonly deps: NodeAgentDeps;
  readonly log: Logger;
  readonly now: () => number;
  readonly monotonic: () => number;
  readonly sleep: (ms: number, signal: AbortSignal) => Promise<void>;
  /** `/api/v1/nodes/<name>`. */
  readonly nodePath: string;
  readonly state: AgentState;
  /** The setters' settings, the node IP detected once when not given. */
  config(): NodeStatusConfig;
  /** This round's image list; a failure is returned (the setter keeps the last list), not thrown. */
  listImages(signal: AbortSignal): Promise<NodeImageList | undefined>;
  /** Reads machine info afresh and remembers it in `state.machine`. */
  readMachine(): Promise<MachineInfo>;
  /** Records a Node event (logged when there is no recorder). */
  record(type: EventType, reason: string, message: string): void;
  recordAll(events: NodeStatusEvent[]): void;
}

export function createAgentContext(deps: NodeAgentDeps): AgentContext {
  const log = deps.logger.child({ node: deps.nodeName });
  // upstream kubelet nodeRef: the node name doubles as UID
  const nodeRef: NodeObjectReference = {
    apiVersion: 'v1',
    kind: 'Node',
    name: deps.nodeName,
    uid: deps.nodeName,
  };
  const state: AgentState = {
    registration: { state: 'unregistered' },
    lastNode: undefined,
    machine: undefined,
  };
  let detectedIP: string | undefined;

  function nodeIP(): string | undefined {
    if (deps.nodeIP !== undefined && deps.nodeIP !== '') return deps.nodeIP;
    detectedIP ??= (deps.detectNodeIP ?? detectNodeIP)();
    return detectedIP;
  }

  function record(type: EventType, reason: string, message: string): void {
    if (deps.recorder) deps.recorder.eventFor(nodeRef, type, reason, message);
    else log.info(message, { event: reason, type });
  }

  return {
    deps,
    log,
    now: deps.now ?? Date.now,
    monotonic: deps.monotonic ?? monotonicNow,
    sleep: deps.sleep ?? realSleep,
    nodePath: `/api/v1/nodes/${deps.nodeName}`,
    state,
    config() {
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
    },
    async listImages(signal) {
      if (!deps.listImages) return undefined;
      try {
        return { ok: true, images: await deps.listImages(signal) };
      } catch (err) {
        if (signal.aborted) throw err;
        return { ok: false, error: describeError(err) };
      }
    },
    async readMachine() {
      state.machine = await (deps.machineInfo ?? (() => readMachineInfo(deps.rootDir, undefined, log)))();
      return state.machine;
    },
    record,
    recordAll(events) {
      for (const e of events) record(e.type, e.reason, e.message);
    },
  };
}
