/**
 * Registration with the API server (upstream registerWithAPIServer / tryRegisterWithAPIServer):
 * create the Node, or adopt an existing Node of the same name and reconcile it with ours, retried
 * with a doubling back-off until it succeeds.
 */
import { isAlreadyExists } from '../api/client-types.ts';
import { NODE_REGISTER_INITIAL_STEP_MS, NODE_REGISTER_MAX_STEP_MS } from '../config/defaults.ts';
import { describeError, isNotFound } from '../util/errors.ts';
import type { AgentContext } from './agent-context.ts';
import { initialNode, reconcileExistingNode } from './initial-node.ts';
import { nodeStatusPatch } from './patch.ts';
import type { Node } from './types.ts';
import { backoffSteps } from '../util/backoff.ts';

/**
 * Returns `register(signal)`: resolves once the node is registered (then `ctx.state` holds the Node
 * and its UID, and `onRegistered` has been called), rejects only when `signal` aborts.
 */
export function createRegistrar(
  ctx: AgentContext,
  onRegistered: () => void,
): (signal: AbortSignal) => Promise<void> {
  const { deps, log, nodePath } = ctx;

  function markRegistered(node: Node): void {
    ctx.state.lastNode = node;
    ctx.state.registration = { state: 'registered', uid: node.metadata.uid ?? '' };
    onRegistered();
  }

  async function tryRegister(signal: AbortSignal): Promise<boolean> {
    let built: ReturnType<typeof initialNode>;
    const images = await ctx.listImages(signal);
    try {
      built = initialNode(
        ctx.config(),
        { labels: deps.labels ?? {}, taints: deps.taints ?? [] },
        await ctx.readMachine(),
        deps.inputs,
        ctx.now(),
        images,
      );
    } catch (err) {
      log.error('unable to construct the Node object for this kubelet', { err: describeError(err) });
      return false;
    }
    for (const w of built.warnings) log.warn(w);
    if (deps.registerNode === false) return adoptOnly(built, signal);
    log.info('attempting to register node');
    try {
      const created = await deps.api.request<Node>({
        method: 'POST',
        path: '/api/v1/nodes',
        body: built.node,
        signal,
      });
      markRegistered(created);
      ctx.recordAll(built.events);
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
    ctx.recordAll(built.events);
    return true;
  }

  /** registerNode false: the Node must exist; it is adopted as it is (its status is ours to keep). */
  async function adoptOnly(built: ReturnType<typeof initialNode>, signal: AbortSignal): Promise<boolean> {
    try {
      const existing = await deps.api.request<Node>({ method: 'GET', path: nodePath, signal });
      log.info('registerNode is false: adopting the existing node', { uid: existing.metadata.uid });
      markRegistered(existing);
      ctx.recordAll(built.events);
      return true;
    } catch (err) {
      if (signal.aborted) throw err;
      if (isNotFound(err)) {
        log.error('registerNode is false and the Node does not exist; waiting for it to be created', {
          node: deps.nodeName,
        });
      } else {
        log.error('unable to get the node from the API server', { err: describeError(err) });
      }
      return false;
    }
  }

  async function registerWithBackoff(signal: AbortSignal): Promise<void> {
    const steps = backoffSteps({
      initialMs: NODE_REGISTER_INITIAL_STEP_MS,
      maxMs: NODE_REGISTER_MAX_STEP_MS,
    });
    for (;;) {
      await ctx.sleep(steps.step(), signal);
      if (await tryRegister(signal)) {
        log.info('successfully registered node', { uid: ctx.state.lastNode?.metadata.uid });
        return;
      }
    }
  }

  return registerWithBackoff;
}
