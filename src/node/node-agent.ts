/**
 * The kubelet's presence in the cluster: registers the Node (or adopts one of the same name), keeps
 * its status fresh and renews its Lease (upstream registerWithAPIServer + syncNodeStatus loop +
 * nodelease controller). This file wires the parts and owns their lifecycle.
 */
import type { OwnerReference } from '../api/types.ts';
import {
  DEFAULT_NODE_LEASE_DURATION_SECONDS,
  NODE_LEASE_NAMESPACE,
  NODE_LEASE_RENEW_INTERVAL_FRACTION,
} from '../config/defaults.ts';
import { KubeletError } from '../util/errors.ts';
import { createAgentContext, type NodeAgentDeps } from './agent-context.ts';
import { createLeaseController } from './lease.ts';
import { createRegistrar } from './node-registration.ts';
import { createStatusLoop } from './node-status-loop.ts';
import type { Lease, Node } from './types.ts';

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

export function createNodeAgent(deps: NodeAgentDeps): NodeAgent {
  const ctx = createAgentContext(deps);
  const { log, nodePath, now, sleep, state } = ctx;
  const random = deps.random ?? Math.random;
  const leaseDurationSeconds = deps.nodeLeaseDurationSeconds ?? DEFAULT_NODE_LEASE_DURATION_SECONDS;

  let everRegistered = false;
  let controller: AbortController | undefined;
  let loops: Promise<void> | undefined;
  const waiters = new Set<{ resolve: () => void; reject: (err: Error) => void }>();

  const status = createStatusLoop(
    ctx,
    createRegistrar(ctx, () => {
      // The lease may have waited for this Node (its owner): create or re-own it now, not at the
      // next renewal 10 s on (upstream's controller waits for that next round).
      leaseController.wake();
      if (everRegistered) return;
      everRegistered = true;
      for (const w of waiters) w.resolve();
      waiters.clear();
    }),
  );

  // ---- lease ----

  /**
   * upstream SetNodeOwnerFunc: the lease is owned by the Node, so it goes when the Node goes. Unlike
   * upstream, an owner reference to an earlier Node of this name (deleted and registered again) is
   * replaced: kept, it would make the garbage collector delete the lease we are renewing.
   */
  async function setLeaseOwner(lease: Lease, signal: AbortSignal): Promise<void> {
    const refs = lease.metadata.ownerReferences ?? [];
    const current = state.registration.state === 'registered' ? state.registration.uid : '';
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
      ctx.record('Normal', 'Starting', 'Starting kubelet.');
      loops = Promise.all([status.run(signal), leaseController.run(signal)]).then(() => undefined);
    },
    async stop() {
      if (!controller) return;
      controller.abort(new KubeletError('Canceled', 'node agent', 'stopping'));
      for (const w of waiters)
        w.reject(new KubeletError('Canceled', 'wait for node registration', 'stopping'));
      waiters.clear();
      await loops;
    },
    node: () => state.lastNode,
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
    syncNodeStatus: (signal) => status.sync(signal),
    syncLease: (signal) => leaseController.sync(signal),
  };
}
