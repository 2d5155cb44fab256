/**
 * The node status loop (upstream syncNodeStatus / updateNodeStatus / tryUpdateNodeStatus): register
 * if needed, then compute the status and patch it when it changed or the report frequency elapsed,
 * every nodeStatusUpdateFrequency, over the heartbeat client.
 */
import {
  DEFAULT_NODE_STATUS_REPORT_FREQUENCY_MS,
  DEFAULT_NODE_STATUS_UPDATE_FREQUENCY_MS,
  NODE_STATUS_UPDATE_RETRY,
} from '../config/defaults.ts';
import { describeError, isNotFound } from '../util/errors.ts';
import type { AgentContext } from './agent-context.ts';
import { nodeStatusHasChanged, setNodeStatus } from './node-status.ts';
import { nodeStatusPatch } from './patch.ts';
import type { NodeImageList } from './status-inputs.ts';
import type { Node } from './types.ts';

export interface StatusLoop {
  /** One round: register if needed, then update; 'gone' when the Node was found deleted. */
  sync(signal: AbortSignal): Promise<'ok' | 'gone' | 'failed'>;
  /** Rounds until `signal` aborts; never rejects. */
  run(signal: AbortSignal): Promise<void>;
}

export function createStatusLoop(
  ctx: AgentContext,
  register: (signal: AbortSignal) => Promise<void>,
): StatusLoop {
  const { deps, log, nodePath, now, monotonic, sleep } = ctx;
  const updateFrequencyMs = deps.nodeStatusUpdateFrequencyMs ?? DEFAULT_NODE_STATUS_UPDATE_FREQUENCY_MS;
  const reportFrequencyMs = deps.nodeStatusReportFrequencyMs ?? DEFAULT_NODE_STATUS_REPORT_FREQUENCY_MS;
  /** When the status was last written (monotonic ms: a wall step neither skips nor forces a report). */
  let lastStatusReportMs: number | undefined;
  let lastUnschedulable = false;

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
    const info = ctx.state.machine ?? (await ctx.readMachine());
    const nowMs = now();
    const { events, warnings } = setNodeStatus(node, ctx.config(), info, deps.inputs, nowMs, images);
    for (const w of warnings) log.warn('failed to set some node status fields', { reason: w });

    // upstream recordNodeSchedulableEvent (cordon / uncordon)
    const unschedulable = node.spec?.unschedulable === true;
    if (unschedulable !== lastUnschedulable) {
      lastUnschedulable = unschedulable;
      const reason = unschedulable ? 'NodeNotSchedulable' : 'NodeSchedulable';
      ctx.record('Normal', reason, `Node ${deps.nodeName} status is now: ${reason}`);
    }

    const due = lastStatusReportMs === undefined || monotonic() >= lastStatusReportMs + reportFrequencyMs;
    if (!due && !nodeStatusHasChanged(got.status, node.status)) {
      ctx.state.lastNode = got;
      return;
    }
    const updated = await deps.leaseApi.request<Node>({
      method: 'PATCH',
      path: `${nodePath}/status`,
      body: nodeStatusPatch(got, node),
      contentType: 'application/strategic-merge-patch+json',
      signal,
    });
    lastStatusReportMs = monotonic();
    ctx.state.lastNode = updated;
    // Recorded after the write, so a failed attempt retried does not repeat them.
    ctx.recordAll(events);
  }

  async function updateNodeStatus(signal: AbortSignal): Promise<'ok' | 'gone' | 'failed'> {
    // One list per update: the retries below reuse it (upstream reads a cached list).
    const images = await ctx.listImages(signal);
    for (let i = 0; i < NODE_STATUS_UPDATE_RETRY; i++) {
      try {
        await tryUpdateNodeStatus(i, images, signal);
        return 'ok';
      } catch (err) {
        if (signal.aborted) throw err;
        // A 404 from the cache may only mean it lags a fresh create; one from etcd means deleted.
        if (isNotFound(err) && i > 0) {
          log.warn('the Node object was deleted from the API server; registering again');
          ctx.state.registration = { state: 'unregistered' };
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
    if (ctx.state.registration.state === 'unregistered') await register(signal);
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

  return { sync: syncNodeStatus, run: statusLoop };
}
