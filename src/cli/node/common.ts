/**
 * What the node commands share: the connection, the pod list and lookup by namespace and name,
 * kubectl's default-container rule, and the per-pod debug documents.
 */
import type { Pod, PodList } from '../../api/types.ts';
import { NodeApiError, connectNode, type ConnectionOptions, type NodeClient } from './client.ts';

export interface GlobalOptions extends ConnectionOptions {
  namespace?: string;
}

export const DEFAULT_NAMESPACE = 'default';

export function namespaceOf(opts: GlobalOptions): string {
  return opts.namespace || DEFAULT_NAMESPACE;
}

export { connectNode, type NodeClient };

export async function listPods(client: NodeClient, signal: AbortSignal): Promise<Pod[]> {
  const list = await client.getJSON<PodList>('/pods', signal);
  return Array.isArray(list.items) ? list.items : [];
}

/** The pod, or an error worded as kubectl's: `pods "NAME" not found in namespace NS`. */
export async function getPod(
  client: NodeClient,
  namespace: string,
  name: string,
  signal: AbortSignal,
): Promise<Pod> {
  const pods = await listPods(client, signal);
  const pod = pods.find((p) => p.metadata.name === name && (p.metadata.namespace ?? 'default') === namespace);
  if (!pod) {
    const elsewhere = pods
      .filter((p) => p.metadata.name === name)
      .map((p) => p.metadata.namespace ?? 'default');
    throw new Error(
      `pods "${name}" not found in namespace ${namespace}` +
        (elsewhere.length > 0 ? ` (it exists in: ${elsewhere.join(', ')}; use -n)` : ''),
    );
  }
  return pod;
}

const DEFAULT_CONTAINER_ANNOTATION = 'kubectl.kubernetes.io/default-container';

/**
 * The container to use: the one asked for (an app or init container), else kubectl's default
 * (the annotation, else the first container, with a note on stderr when there was a choice).
 */
export function chooseContainer(pod: Pod, asked: string | undefined, note: (line: string) => void): string {
  const app = (pod.spec.containers ?? []).map((c) => c.name);
  const all = [...app, ...(pod.spec.initContainers ?? []).map((c) => c.name)];
  if (asked) {
    if (!all.includes(asked)) {
      throw new Error(
        `container ${asked} is not valid for pod ${pod.metadata.name ?? ''}; choose one of: [${all.join(' ')}]`,
      );
    }
    return asked;
  }
  const annotated = pod.metadata.annotations?.[DEFAULT_CONTAINER_ANNOTATION];
  if (annotated && all.includes(annotated)) return annotated;
  const first = app[0];
  if (!first) throw new Error(`pod ${pod.metadata.name ?? ''} has no containers`);
  if (app.length > 1) note(`Defaulted container "${first}" out of: ${app.join(', ')}`);
  return first;
}

/**
 * `/debug/pods/{ns}/{name}/{what}`; a 404 that is not about the pod (an older kubelet without the
 * route) is reported as such.
 */
export async function getDebugDocument<T>(
  client: NodeClient,
  namespace: string,
  name: string,
  what: 'timeline' | 'why',
  signal: AbortSignal,
): Promise<T> {
  const e = encodeURIComponent;
  try {
    return await client.getJSON<T>(`/debug/pods/${e(namespace)}/${e(name)}/${what}`, signal);
  } catch (err) {
    if (err instanceof NodeApiError && err.status === 404) {
      if (/404 page not found/.test(err.message)) {
        throw new Error(
          `the kubelet at ${client.target} does not serve /debug/pods/…/${what} (an older tskubelet?)`,
        );
      }
      throw new Error(`pods "${name}" not found in namespace ${namespace}`);
    }
    throw err;
  }
}
