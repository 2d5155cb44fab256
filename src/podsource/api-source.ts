import { hasPodIdentity, missingPodIdentity, podFullName, type KubeletPod, type Pod } from '../api/types.ts';
import type { ApiClient } from '../api/client-types.ts';
import { createReflector, type ReflectorOptions } from '../api/reflector.ts';
import type { Logger } from '../util/logger.ts';
import { isMirrorPod } from '../api/pod-source.ts';
import { isObject, stripNulls } from '../util/json.ts';
import { formatFieldErrors, type FieldError } from './field-errors.ts';
import { MAX_DOCUMENT_DEPTH, tooDeepAt } from '../api/nesting.ts';
import { checkPodShape } from './pod-shape.ts';
import type { PodSource } from './types.ts';

export type ApiSourceOptions = {
  api: ApiClient;
  nodeName: string;
  logger: Logger;
  /** Mirror pods (static pods' API copies) are not desired pods; they go here instead. */
  onMirrorPods?: (pods: KubeletPod[]) => void;
} & Pick<
  ReflectorOptions<Pod>,
  'minWatchTimeoutSeconds' | 'quietWatchMs' | 'backoffInitialMs' | 'backoffMaxMs'
>;

/**
 * Why an object from the API server cannot be taken as a pod, or undefined when it can: upstream's
 * decoder refuses wrong JSON types for the fields it knows, and everything downstream of this
 * source reads pods as src/api/types.ts types them, so the same shape check as for static pods
 * (without their validation: the API server validated these) stands in for that decoder. Numeric
 * quantities are normalized to strings in place, as the decoder reads them.
 */
export function apiPodProblem(obj: unknown): string | undefined {
  if (!isObject(obj))
    return `expected a Pod object, got ${Array.isArray(obj) ? 'a list' : JSON.stringify(obj)}`;
  const deep = tooDeepAt(obj);
  if (deep !== undefined) return `${deep}: nested more than ${MAX_DOCUMENT_DEPTH} levels deep`;
  const errs: FieldError[] = [];
  checkPodShape(obj, errs);
  return errs.length > 0 ? formatFieldErrors(errs) : undefined;
}

/** The UID of what may not be a well-formed pod (for DELETED events). */
function uidOf(obj: unknown): string | undefined {
  const uid = isObject(obj) && isObject(obj.metadata) ? obj.metadata.uid : undefined;
  return typeof uid === 'string' && uid !== '' ? uid : undefined;
}

function nameOf(obj: unknown): string {
  const m = isObject(obj) && isObject(obj.metadata) ? obj.metadata : {};
  return `${typeof m.namespace === 'string' ? m.namespace : ''}/${typeof m.name === 'string' ? m.name : ''}`;
}

/**
 * The API server pod source (upstream NewSourceApiserver: a reflector on pods with
 * `spec.nodeName=<node>`), on the shared `Reflector` (resumed watches, relist only on 410 Gone,
 * jittered back-off, quiet-watch restarts). Sends a full snapshot after every LIST and after each
 * burst of watch events.
 */
export function createApiSource(opts: ApiSourceOptions): PodSource {
  const { api, nodeName, logger, onMirrorPods, ...tuning } = opts;
  const store = new Map<string, KubeletPod>();
  let send: ((pods: KubeletPod[]) => void) | undefined;
  let flushScheduled = false;
  let stopped = false;

  function flush(): void {
    flushScheduled = false;
    if (stopped) return; // deliver nothing after stop()
    const desired: KubeletPod[] = [];
    const mirrors: KubeletPod[] = [];
    for (const p of store.values()) (isMirrorPod(p) ? mirrors : desired).push(p);
    send?.(desired);
    onMirrorPods?.(mirrors);
  }

  /** Coalesces a burst of watch events into one snapshot. */
  function scheduleFlush(): void {
    if (flushScheduled) return;
    flushScheduled = true;
    setImmediate(flush);
  }

  /**
   * A pod that does not decode (wrong JSON types, see apiPodProblem) or lacks identity (the API
   * server always sets uid, name and namespace; without them a pod cannot be run or even keyed)
   * is skipped with a warning naming the field.
   */
  function usable(obj: unknown): KubeletPod | undefined {
    const problem = apiPodProblem(obj);
    if (problem !== undefined) {
      logger.warn('Ignoring pod from the API server that does not decode', {
        pod: nameOf(obj),
        error: problem,
      });
      return undefined;
    }
    // As for static pods (and Go's decoder), a null field is an unset one.
    const pod = stripNulls(obj) as Pod;
    if (hasPodIdentity(pod)) return pod;
    const missing = missingPodIdentity(pod);
    logger.warn('Ignoring pod from the API server without identity', {
      pod: podFullName(pod),
      missing: missing.join(','),
      error: `pod has no ${missing.map((f) => `metadata.${f}`).join(', ')}`,
    });
    return undefined;
  }

  const reflector = createReflector<Pod>({
    ...tuning,
    api,
    logger,
    path: '/api/v1/pods',
    resource: 'pods',
    selector: { fieldSelector: `spec.nodeName=${nodeName}` },
    replace(items) {
      store.clear();
      for (const item of items) {
        const p = usable(item);
        if (p) store.set(p.metadata.uid, p);
      }
      // At once, not coalesced: even an empty first list tells the pod config this source is ready.
      flush();
    },
    apply(type, pod) {
      if (type === 'DELETED') {
        // Deleted is deleted, however malformed the last state the server sends.
        const uid = uidOf(pod);
        if (uid !== undefined && store.delete(uid)) scheduleFlush();
        return;
      }
      // A malformed update leaves the last good version in place (upstream's watch would fail to
      // decode it and keep the cache as it was).
      const p = usable(pod);
      if (!p) return;
      store.set(p.metadata.uid, p);
      scheduleFlush();
    },
  });

  return {
    name: 'api',
    start(s) {
      send = s;
      reflector.start();
    },
    async stop() {
      stopped = true;
      await reflector.stop();
    },
  };
}
