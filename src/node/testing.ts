/** Test helpers for this folder (not exported from index.ts): a fake API server, a fake clock. */
import type { ApiClient, ApiRequest } from '../api/client-types.ts';
import { FakeApi, apiError, applyStrategicMergePatch, type RecordedRequest } from '../api/testing.ts';
import { KubeletError } from '../util/errors.ts';
import { flush, recordingLogger } from '../util/testing.ts';
import type { NodeAgentDeps } from './agent-context.ts';
import type { MachineInfo } from './machine-info.ts';
import { createNodeAgent } from './node-agent.ts';
import type { NodeStatusConfig, NodeStatusInputs } from './status-inputs.ts';
import type { Lease, Node, NodeEventRecorder } from './types.ts';

const METHODS: readonly ApiRequest['method'][] = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];

type Handler = (req: ApiRequest) => unknown;

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * A tiny in-memory API server for Nodes and Leases, served through the shared `FakeApi`: create
 * (409 AlreadyExists), get (404), PATCH of the node status (strategic merge), lease PUT with
 * optimistic concurrency (409 Conflict). Tests inject failures with `failNext`.
 */
export class FakeCluster {
  nodes = new Map<string, Node>();
  leases = new Map<string, Lease>();
  /** The client every caller shares; it records every request. */
  readonly api = new FakeApi();
  private rv = 100;
  private uidSeq = 0;

  constructor() {
    for (const method of METHODS) this.api.respond(method, /^\//, this.handle);
  }

  /** The next request matching method (and path prefix) fails with `error`. */
  failNext(method: ApiRequest['method'], pathPrefix: string, error: Error): void {
    this.api.respondOnce(method, new RegExp(`^${escapeRegExp(pathPrefix)}`), error);
  }

  /** Every request made so far (since the last `clearRecorded`). */
  get requests(): readonly RecordedRequest[] {
    return this.api.requests;
  }

  /** Requests as `METHOD path` lines, for assertions. */
  calls(): string[] {
    return this.api.calls();
  }

  /** Forgets recorded requests. */
  clearRecorded(): void {
    this.api.clearRecorded();
  }

  nextRV(): string {
    return String(++this.rv);
  }

  client(): ApiClient {
    return this.api;
  }

  private handle: Handler = (req) => {
    const nodeM = /^\/api\/v1\/nodes(?:\/([^/]+))?(\/status)?$/.exec(req.path);
    if (nodeM) return this.handleNode(req, nodeM[1], nodeM[2] !== undefined);
    const leaseM = /^\/apis\/coordination\.k8s\.io\/v1\/namespaces\/([^/]+)\/leases(?:\/([^/]+))?$/.exec(
      req.path,
    );
    if (leaseM) return this.handleLease(req, leaseM[1] ?? '', leaseM[2]);
    throw apiError(404, 'NotFound', `no route for ${req.method} ${req.path}`);
  };

  private handleNode(req: ApiRequest, name: string | undefined, status: boolean): unknown {
    if (req.method === 'POST' && name === undefined) {
      const node = structuredClone(req.body) as Node;
      const n = node.metadata.name ?? '';
      if (this.nodes.has(n)) throw apiError(409, 'AlreadyExists', `nodes "${n}" already exists`);
      node.metadata.uid = `uid-${++this.uidSeq}`;
      node.metadata.resourceVersion = this.nextRV();
      node.metadata.creationTimestamp = '2026-11-22T00:00:00Z';
      this.nodes.set(n, node);
      return node;
    }
    const node = this.nodes.get(name ?? '');
    if (!node) throw apiError(404, 'NotFound', `nodes "${name}" not found`);
    if (req.method === 'GET') return node;
    if (req.method === 'PATCH' && status) {
      const patched = applyStrategicMergePatch(node, req.body) as Node;
      patched.spec = node.spec; // the status subresource ignores spec
      patched.metadata.resourceVersion = this.nextRV();
      this.nodes.set(name ?? '', patched);
      return patched;
    }
    throw apiError(405, 'MethodNotAllowed', `${req.method} ${req.path}`);
  }

  private handleLease(req: ApiRequest, ns: string, name: string | undefined): unknown {
    if (req.method === 'POST' && name === undefined) {
      const lease = structuredClone(req.body) as Lease;
      const key = `${ns}/${lease.metadata.name ?? ''}`;
      if (this.leases.has(key)) throw apiError(409, 'AlreadyExists', 'lease exists');
      lease.metadata.resourceVersion = this.nextRV();
      lease.metadata.uid = `lease-uid-${++this.uidSeq}`;
      this.leases.set(key, lease);
      return lease;
    }
    const key = `${ns}/${name ?? ''}`;
    const lease = this.leases.get(key);
    if (!lease) throw apiError(404, 'NotFound', `leases "${name}" not found`);
    if (req.method === 'GET') return lease;
    if (req.method === 'PUT') {
      const next = structuredClone(req.body) as Lease;
      if (next.metadata.resourceVersion !== lease.metadata.resourceVersion) {
        throw apiError(409, 'Conflict', 'the object has been modified');
      }
      next.metadata.resourceVersion = this.nextRV();
      this.leases.set(key, next);
      return next;
    }
    throw apiError(405, 'MethodNotAllowed', `${req.method} ${req.path}`);
  }
}

/** A clock whose sleeps end only when the test advances it. */
export class FakeClock {
  nowMs = Date.parse('2026-11-22T01:00:00.000Z');
  /** Every sleep requested, in order. */
  sleeps: number[] = [];
  private waiters: { at: number; resolve: () => void }[] = [];

  /** Wall ms steps by `stepWall`; `nowMs` (monotonic, and the sleeps' clock) only moves forward. */
  wallOffsetMs = 0;

  now = (): number => this.nowMs + this.wallOffsetMs;
  monotonic = (): number => this.nowMs;
  /** The wall clock steps by `ms` (negative: back); monotonic time and sleeps do not move. */
  stepWall = (ms: number): void => {
    this.wallOffsetMs += ms;
  };

  sleep = (ms: number, signal: AbortSignal): Promise<void> => {
    this.sleeps.push(ms);
    return new Promise((resolve, reject) => {
      if (signal.aborted) {
        reject(new KubeletError('Canceled', 'sleep', 'aborted'));
        return;
      }
      const w = {
        at: this.nowMs + ms,
        resolve: () => {
          signal.removeEventListener('abort', onAbort);
          resolve();
        },
      };
      const onAbort = () => {
        this.waiters = this.waiters.filter((x) => x !== w);
        reject(new KubeletError('Canceled', 'sleep', 'aborted'));
      };
      signal.addEventListener('abort', onAbort, { once: true });
      this.waiters.push(w);
    });
  };

  pendingSleeps(): number {
    return this.waiters.length;
  }

  /** Moves time forward by `ms`, waking due sleepers one at a time in deadline order. */
  async advance(ms: number): Promise<void> {
    const target = this.nowMs + ms;
    for (;;) {
      await flush(30);
      const due = this.waiters.filter((w) => w.at <= target).sort((a, b) => a.at - b.at)[0];
      if (!due) break;
      this.waiters = this.waiters.filter((w) => w !== due);
      this.nowMs = Math.max(this.nowMs, due.at);
      due.resolve();
    }
    this.nowMs = target;
    await flush(30);
  }
}

export function sampleMachine(over: Partial<MachineInfo> = {}): MachineInfo {
  return {
    numCores: 2,
    memoryCapacityBytes: 24576000 * 1024,
    machineID: 'm-123',
    systemUUID: 'sys-uuid',
    bootID: 'boot-1',
    kernelVersion: '6.1.0-test-amd64',
    osImage: 'Debian GNU/Linux 12 (bookworm)',
    rootfsCapacityBytes: 4096 * 66053021,
    hugePages: [
      { pageSizeKiB: 1048576, numPages: 0 },
      { pageSizeKiB: 2048, numPages: 0 },
    ],
    ...over,
  };
}

/** The status setters' settings for node `node-a` (upstream default hard eviction thresholds). */
export function statusConfig(over: Partial<NodeStatusConfig> = {}): NodeStatusConfig {
  return {
    nodeName: 'node-a',
    hostname: 'node-a',
    nodeIP: '10.0.0.5',
    maxPods: 110,
    kubeletVersion: 'v1.20.2',
    kubeletPort: 10250,
    reserved: {},
    evictionHard: { memoryAvailable: '100Mi', nodefsAvailable: '10%' },
    ...over,
  };
}

/** Inputs the test flips. */
export function fakeInputs(): NodeStatusInputs & {
  ready: { ok: boolean; message: string };
  pressures: { memory: boolean; disk: boolean; pid: boolean };
} {
  const s = {
    ready: { ok: true, message: '' },
    pressures: { memory: false, disk: false, pid: false },
    runtimeReady: () => s.ready,
    runtimeVersion: () => 'containerd://1.6.20~ds1',
    pressure: () => s.pressures,
  };
  return s;
}

export function memoryRecorder(): NodeEventRecorder & {
  events: { type: string; reason: string; message: string }[];
} {
  const events: { type: string; reason: string; message: string }[] = [];
  return {
    events,
    eventFor: (_ref, type, reason, message) => events.push({ type, reason, message }),
  };
}

/**
 * A node agent for node `node-a` on a FakeCluster, with a fake clock, inputs, recorder and logger;
 * `round()` runs one status round, advancing the clock through registration back-off.
 */
export function nodeAgentHarness(over: Partial<NodeAgentDeps> = {}) {
  const cluster = new FakeCluster();
  const clock = new FakeClock();
  const inputs = fakeInputs();
  const recorder = memoryRecorder();
  const logger = recordingLogger();
  const agent = createNodeAgent({
    api: cluster.client(),
    leaseApi: cluster.client(),
    logger,
    recorder,
    nodeName: 'node-a',
    nodeIP: '10.0.0.5',
    maxPods: 110,
    rootDir: '/var/lib/kubelet',
    kubeletVersion: 'v1.20.2',
    kubeletPort: 10250,
    labels: { 'example.com/pool': 'blue' },
    taints: [{ key: 'dedicated', value: 'ci', effect: 'NoSchedule' }],
    inputs,
    now: clock.now,
    monotonic: clock.monotonic,
    sleep: clock.sleep,
    random: () => 0,
    machineInfo: () => Promise.resolve(sampleMachine()),
    ...over,
  });
  const signal = new AbortController().signal;
  /** Runs one status round, advancing the fake clock through registration back-off. */
  async function round(): Promise<string> {
    const r = agent.syncNodeStatus(signal);
    for (let i = 0; i < 20; i++) await clock.advance(100);
    return r;
  }
  return { cluster, clock, inputs, recorder, logger, agent, signal, round };
}

/** The Ready condition of a Node. */
export function readyOf(n: Node | undefined) {
  return n?.status?.conditions?.find((c) => c.type === 'Ready');
}
