import { hasPodIdentity, missingPodIdentity, podFullName, type KubeletPod, type Pod } from '../api/types.ts';
import type { ApiClient } from '../api/client-types.ts';
import { createReflector, type ReflectorOptions } from '../api/reflector.ts';
import type { Logger } from '../util/logger.ts';
import { ANNOTATION_CONFIG_MIRROR } from '../config/defaults.ts';
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

export function isMirrorPod(pod: Pod): boolean {
  return pod.metadata.annotations?.[ANNOTATION_CONFIG_MIRROR] !== undefined;
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

  /** The API server always sets these; a pod without them cannot be run or even keyed, so it is skipped. */
  function identified(pod: Pod): pod is KubeletPod {
    if (hasPodIdentity(pod)) return true;
    logger.warn('Ignoring pod from the API server without identity', {
      pod: podFullName(pod),
      missing: missingPodIdentity(pod).join(','),
    });
    return false;
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
      for (const p of items) if (identified(p)) store.set(p.metadata.uid, p);
      // At once, not coalesced: even an empty first list tells the pod config this source is ready.
      flush();
    },
    apply(type, pod) {
      if (!identified(pod)) return;
      if (type === 'DELETED') store.delete(pod.metadata.uid);
      else store.set(pod.metadata.uid, pod);
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
