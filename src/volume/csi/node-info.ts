/**
 * Keeps the node's CSI information in the API (upstream pkg/volume/csi/nodeinfomanager
 * nodeinfomanager.go): on a driver's registration, the Node gets the driver's node ID in the
 * `csi.volume.kubernetes.io/nodeid` annotation (a JSON map driver → ID) and its topology segments as
 * labels (a label with another value is a collision: an error), and the node's CSINode object
 * (storage.k8s.io/v1, named after the node, owned by the Node) gets the driver's entry: name, nodeID,
 * topologyKeys (sorted) and allocatable.count when the driver reported a limit. On deregistration the
 * CSINode entry and the annotation's key go (labels stay, as upstream). Each update is retried with
 * upstream's updateBackoff (4 tries, 10 ms × 5ⁿ apart).
 */
import type { ApiClient } from '../../api/client-types.ts';
import { isApiStatus } from '../../api/client-types.ts';
import { sleep } from '../../util/abort.ts';
import { backoffSteps, type BackoffShape } from '../../util/backoff.ts';
import { KubeletError, describeError } from '../../util/errors.ts';
import type { Logger } from '../../util/logger.ts';

export const ANNOTATION_NODE_ID = 'csi.volume.kubernetes.io/nodeid';
/** Upstream updateBackoff (nodeinfomanager.go). */
const UPDATE_BACKOFF: Retries = { tries: 4, initialMs: 10, factor: 5 };
/** Upstream initBackoff (csi_plugin.go): waiting for the kubelet to register its Node, ~23 s of sleeps in all (upstream's comment says 140 s). */
const INIT_BACKOFF: Retries = { tries: 6, initialMs: 15, factor: 6 };
/** Upstream truncates a larger attach limit to MaxInt32. */
const MAX_INT32 = 2 ** 31 - 1;

interface ObjectMeta {
  name: string;
  uid?: string;
  resourceVersion?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: { apiVersion: string; kind: string; name: string; uid: string }[];
}

interface NodeObject {
  metadata: ObjectMeta;
}

/** storage.k8s.io/v1 CSINodeDriver. */
export interface CSINodeDriver {
  name: string;
  nodeID: string;
  topologyKeys?: string[] | null;
  allocatable?: { count?: number };
}

/** storage.k8s.io/v1 CSINode. */
export interface CSINode {
  apiVersion: 'storage.k8s.io/v1';
  kind: 'CSINode';
  metadata: ObjectMeta;
  spec: { drivers: CSINodeDriver[] | null };
}

export interface NodeInfoManager {
  /** Upstream InstallCSIDriver: the Node's annotation and labels, then the CSINode entry. */
  installDriver(
    driver: string,
    nodeId: string,
    maxVolumesPerNode: number,
    topology: Record<string, string>,
  ): Promise<void>;
  /** Upstream UninstallCSIDriver: the CSINode entry, then the annotation's key. */
  uninstallDriver(driver: string): Promise<void>;
  /**
   * Upstream initializeCSINode, at start-up: waits for the Node to be registered, then makes sure
   * the node's CSINode exists (empty, owned by the Node), before any driver registers. Rejects
   * with the reason when the Node never appears or the CSINode cannot be made.
   */
  initialize(signal: AbortSignal): Promise<void>;
}

export interface NodeInfoManagerOptions {
  api: ApiClient;
  nodeName: string;
  logger: Logger;
  /** Tests: no waiting between tries. */
  retryDelayMs?: number;
}

const CSINODES = '/apis/storage.k8s.io/v1/csinodes';

/** Upstream wait.Backoff without jitter: at most `tries` calls, initialMs × factorⁿ apart. */
type Retries = BackoffShape & { tries: number; signal?: AbortSignal };

/**
 * Upstream wait.ExponentialBackoff: calls `fn` until it resolves, at most `tries` times, with
 * util/backoff's delays between calls (none after the last); then rejects with `giveUp` of every
 * call's error. Rejects at once when `signal` aborts (with fn's error, or the abort's in a wait).
 */
async function retry(r: Retries, fn: () => Promise<unknown>, giveUp: (errors: unknown[]) => Error) {
  const delays = backoffSteps(r);
  const errors: unknown[] = [];
  for (;;) {
    try {
      await fn();
      return;
    } catch (err) {
      if (r.signal?.aborted) throw err;
      errors.push(err);
      if (errors.length >= r.tries) throw giveUp(errors);
    }
    await sleep(delays.step(), r.signal);
  }
}

function sameSet(a: readonly string[], b: readonly string[]): boolean {
  const sa = new Set(a);
  return sa.size === new Set(b).size && b.every((x) => sa.has(x));
}

function nodeIdMap(node: NodeObject): Record<string, string> {
  const raw = node.metadata.annotations?.[ANNOTATION_NODE_ID];
  if (!raw) return {};
  try {
    const parsed = JSON.parse(raw) as unknown;
    if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed))
      return parsed as Record<string, string>;
  } catch (err) {
    throw new KubeletError(
      'Internal',
      'CSI node info',
      `failed to parse node annotation ${ANNOTATION_NODE_ID} ${JSON.stringify(raw)}: ${describeError(err)}`,
    );
  }
  throw new KubeletError(
    'Internal',
    'CSI node info',
    `node annotation ${ANNOTATION_NODE_ID} is not a JSON object: ${raw}`,
  );
}

export function createNodeInfoManager(opts: NodeInfoManagerOptions): NodeInfoManager {
  const { api, nodeName } = opts;
  const log = opts.logger.child({ component: 'csi-nodeinfo' });
  const nodePath = `/api/v1/nodes/${encodeURIComponent(nodeName)}`;
  const csiNodePath = `${CSINODES}/${encodeURIComponent(nodeName)}`;
  // One update of the Node at a time (upstream nodeInfoManager.lock).
  let nodeLock: Promise<unknown> = Promise.resolve();

  /** The tries with the tests' first delay when they set one. */
  const retries = (r: Retries, signal?: AbortSignal): Retries => ({
    ...r,
    initialMs: opts.retryDelayMs ?? r.initialMs,
    signal,
  });

  /** Upstream wait.ExponentialBackoff(updateBackoff, …): all tries' errors in the final one. */
  const withRetries = (op: string, fn: () => Promise<void>) =>
    retry(retries(UPDATE_BACKOFF), fn, (errors) => {
      const all = errors.map(describeError).join(', ');
      return new KubeletError('Unavailable', op, `timed out waiting for the condition; caused by: [${all}]`);
    });

  /** Reads the Node, applies `change` to a copy of its labels and annotations, patches what differs. */
  function updateNode(
    op: string,
    change: (labels: Record<string, string>, annotations: Record<string, string>, node: NodeObject) => void,
  ) {
    const run = async () => {
      const node = await api.request<NodeObject>({ method: 'GET', path: nodePath });
      const labels = { ...(node.metadata.labels ?? {}) };
      const annotations = { ...(node.metadata.annotations ?? {}) };
      change(labels, annotations, node);
      const patch: { labels?: Record<string, string | null>; annotations?: Record<string, string | null> } =
        {};
      const diff = (before: Record<string, string>, after: Record<string, string>) => {
        const d: Record<string, string | null> = {};
        for (const [k, v] of Object.entries(after)) if (before[k] !== v) d[k] = v;
        for (const k of Object.keys(before)) if (!(k in after)) d[k] = null;
        return Object.keys(d).length ? d : undefined;
      };
      const l = diff(node.metadata.labels ?? {}, labels);
      const a = diff(node.metadata.annotations ?? {}, annotations);
      if (l) patch.labels = l;
      if (a) patch.annotations = a;
      if (!l && !a) return;
      // Upstream PatchNodeStatus: the status subresource, which takes metadata changes too.
      await api.request({
        method: 'PATCH',
        path: `${nodePath}/status`,
        contentType: 'application/strategic-merge-patch+json',
        body: { metadata: patch },
      });
    };
    const p = nodeLock.then(() => withRetries(op, run));
    nodeLock = p.catch(() => undefined);
    return p;
  }

  async function getCSINode(): Promise<CSINode | undefined> {
    try {
      return await api.request<CSINode>({ method: 'GET', path: csiNodePath });
    } catch (err) {
      if (isApiStatus(err, 404)) return undefined;
      throw err;
    }
  }

  /** Upstream CreateCSINode: an empty CSINode owned by the Node. */
  async function createCSINode(): Promise<CSINode> {
    const node = await api.request<NodeObject>({ method: 'GET', path: nodePath });
    const body: CSINode = {
      apiVersion: 'storage.k8s.io/v1',
      kind: 'CSINode',
      metadata: {
        name: nodeName,
        ownerReferences: [
          { apiVersion: 'v1', kind: 'Node', name: node.metadata.name, uid: node.metadata.uid ?? '' },
        ],
      },
      spec: { drivers: [] },
    };
    const created = await api.request<CSINode>({ method: 'POST', path: CSINODES, body });
    log.info('created the CSINode object', { node: nodeName });
    return created;
  }

  return {
    async initialize(signal) {
      const getNode = () => api.request<NodeObject>({ method: 'GET', path: nodePath, signal });
      await retry(retries(INIT_BACKOFF, signal), getNode, (errors) => {
        const last = errors.at(-1);
        const why = `the Node ${nodeName} was not found: ${describeError(last)}`;
        return new KubeletError('Unavailable', 'initialize CSINode', why, { cause: last });
      });
      await withRetries('initialize CSINode', async () => {
        if (!(await getCSINode())) await createCSINode();
      });
    },

    async installDriver(driver, nodeId, maxVolumesPerNode, topology) {
      if (!nodeId)
        throw new KubeletError(
          'InvalidArgument',
          'CSI node info',
          'error adding CSI driver node info: driverNodeID must not be empty',
        );
      try {
        await updateNode('update Node with CSI driver node info', (labels, annotations, node) => {
          const ids = nodeIdMap(node);
          ids[driver] = nodeId;
          annotations[ANNOTATION_NODE_ID] = JSON.stringify(ids);
          for (const [k, v] of Object.entries(topology))
            if (labels[k] !== undefined && labels[k] !== v)
              throw new KubeletError(
                'FailedPrecondition',
                'CSI topology labels',
                `detected topology value collision: driver reported ${JSON.stringify(k)}:${JSON.stringify(v)} but existing label is ${JSON.stringify(k)}:${JSON.stringify(labels[k])}`,
              );
          Object.assign(labels, topology);
        });
      } catch (err) {
        throw new KubeletError(
          'Unavailable',
          'CSI node info',
          `error updating Node object with CSI driver node info: ${describeError(err)}`,
          { cause: err },
        );
      }
      const keys = Object.keys(topology).sort();
      try {
        await withRetries('update CSINode', async () => {
          const csiNode = (await getCSINode()) ?? (await createCSINode());
          const drivers = csiNode.spec.drivers ?? [];
          const current = drivers.find((d) => d.name === driver);
          if (current && current.nodeID === nodeId && sameSet(current.topologyKeys ?? [], keys)) return;
          const entry: CSINodeDriver = { name: driver, nodeID: nodeId, topologyKeys: keys };
          if (maxVolumesPerNode > 0) entry.allocatable = { count: Math.min(maxVolumesPerNode, MAX_INT32) };
          else
            log.warn('invalid attach limit: not added to the CSINode object', { driver, maxVolumesPerNode });
          csiNode.spec.drivers = [...drivers.filter((d) => d.name !== driver), entry];
          await api.request({ method: 'PUT', path: csiNodePath, body: csiNode });
        });
      } catch (err) {
        throw new KubeletError(
          'Unavailable',
          'CSI node info',
          `error updating CSINode object with CSI driver node info: ${describeError(err)}`,
          { cause: err },
        );
      }
      log.info('CSI driver installed on the node', { driver, nodeId, topologyKeys: keys, maxVolumesPerNode });
    },

    async uninstallDriver(driver) {
      try {
        await withRetries('update CSINode', async () => {
          const csiNode = await getCSINode();
          const drivers = csiNode?.spec.drivers ?? [];
          if (!csiNode || !drivers.some((d) => d.name === driver)) return;
          csiNode.spec.drivers = drivers.filter((d) => d.name !== driver);
          await api.request({ method: 'PUT', path: csiNodePath, body: csiNode });
        });
      } catch (err) {
        throw new KubeletError(
          'Unavailable',
          'CSI node info',
          `error uninstalling CSI driver from CSINode object ${describeError(err)}`,
          { cause: err },
        );
      }
      try {
        await updateNode('remove CSI driver node info from Node', (_labels, annotations, node) => {
          const ids = nodeIdMap(node);
          if (!(driver in ids)) return;
          delete ids[driver];
          if (Object.keys(ids).length === 0) delete annotations[ANNOTATION_NODE_ID];
          else annotations[ANNOTATION_NODE_ID] = JSON.stringify(ids);
        });
      } catch (err) {
        throw new KubeletError(
          'Unavailable',
          'CSI node info',
          `error removing CSI driver node info from Node object ${describeError(err)}`,
          { cause: err },
        );
      }
      log.info('CSI driver uninstalled from the node', { driver });
    },
  };
}
