import type { KubeletPod, Pod } from '../api/types.ts';
import { hasPodIdentity, podFullName } from '../api/types.ts';
import type { ApiClient } from '../api/client-types.ts';
import { isAlreadyExists } from '../api/client-types.ts';
import type { Logger } from '../util/logger.ts';
import type { StatusTarget } from '../status/api-syncer.ts';
import { describeError, isNotFound } from '../util/errors.ts';
import { isStaticPod } from '../api/pod-source.ts';
import {
  ANNOTATION_CONFIG_HASH,
  ANNOTATION_CONFIG_MIRROR,
  ANNOTATION_CONFIG_SEEN,
} from '../config/defaults.ts';

/**
 * Keeps one mirror pod in the API per static pod (upstream pod.MirrorClient + the pod manager's
 * mirror bookkeeping): created when missing, replaced when the static pod changed (its config hash no
 * longer matches the mirror's `kubernetes.io/config.mirror`), deleted when the static pod is gone.
 * Static pods keep running whatever happens here; failures are logged and retried on the next sync.
 */
export interface MirrorPods {
  /** The mirror pods currently bound to this node, as the API source last saw them. */
  setMirrors(pods: KubeletPod[]): void;
  /** The mirror pod of a static pod, if it exists and matches. */
  mirrorFor(staticPod: KubeletPod): KubeletPod | undefined;
  /** Makes the mirrors match `staticPods` (create/replace/delete); one pass, bounded by the API limiter. */
  reconcile(staticPods: KubeletPod[], signal?: AbortSignal): Promise<void>;
}

export interface MirrorPodDeps {
  api: ApiClient;
  logger: Logger;
  nodeName: string;
  /** The Node's UID, for the owner reference NodeRestriction requires (undefined until registered). */
  nodeUID(): string | undefined;
}

function configHash(pod: KubeletPod): string {
  return pod.metadata.annotations?.[ANNOTATION_CONFIG_HASH] ?? pod.metadata.uid;
}

/**
 * The API object that mirrors a static pod: same name, spec, labels; annotated with the hash. A
 * plain Pod: the API server gives it its UID on creation.
 */
export function mirrorPodFor(staticPod: KubeletPod, nodeName: string, nodeUID: string): Pod {
  const annotations = { ...(staticPod.metadata.annotations ?? {}) };
  delete annotations[ANNOTATION_CONFIG_SEEN];
  annotations[ANNOTATION_CONFIG_MIRROR] = configHash(staticPod);
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: staticPod.metadata.name,
      namespace: staticPod.metadata.namespace,
      labels: staticPod.metadata.labels,
      annotations,
      ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: nodeName, uid: nodeUID, controller: true }],
    },
    spec: { ...staticPod.spec, nodeName },
  };
}

export function createMirrorPods(deps: MirrorPodDeps): MirrorPods {
  let mirrors = new Map<string, KubeletPod>();

  async function remove(mirror: KubeletPod, why: string, signal?: AbortSignal): Promise<void> {
    const log = deps.logger.child({ pod: podFullName(mirror), podUID: mirror.metadata.uid });
    try {
      await deps.api.request({
        method: 'DELETE',
        path: `/api/v1/namespaces/${mirror.metadata.namespace}/pods/${mirror.metadata.name}`,
        body: {
          kind: 'DeleteOptions',
          apiVersion: 'v1',
          gracePeriodSeconds: 0,
          preconditions: { uid: mirror.metadata.uid },
        },
        signal,
      });
      log.info('deleted mirror pod', { reason: why });
    } catch (err) {
      if (!isNotFound(err)) {
        // Keep it known: the next pass tries the delete again.
        log.warn('failed to delete mirror pod', { reason: why, err: describeError(err) });
        return;
      }
    }
    mirrors.delete(podFullName(mirror));
  }

  async function create(staticPod: KubeletPod, signal?: AbortSignal): Promise<void> {
    const nodeUID = deps.nodeUID();
    if (!nodeUID) return; // not registered yet: next pass
    const log = deps.logger.child({ pod: podFullName(staticPod), podUID: staticPod.metadata.uid });
    try {
      const created = await deps.api.request<Pod>({
        method: 'POST',
        path: `/api/v1/namespaces/${staticPod.metadata.namespace}/pods`,
        body: mirrorPodFor(staticPod, deps.nodeName, nodeUID),
        signal,
      });
      // The API server always names the object it created; should it not, the watch brings it later.
      if (hasPodIdentity(created)) mirrors.set(podFullName(created), created);
      log.info('created mirror pod', { mirrorUID: created.metadata.uid });
    } catch (err) {
      if (isAlreadyExists(err)) return; // the watch will tell us about it
      log.warn('failed to create mirror pod', { err: describeError(err) });
    }
  }

  return {
    setMirrors(pods) {
      mirrors = new Map(pods.map((p) => [podFullName(p), p]));
    },
    mirrorFor(staticPod) {
      const m = mirrors.get(podFullName(staticPod));
      if (!m || m.metadata.deletionTimestamp) return undefined;
      return m.metadata.annotations?.[ANNOTATION_CONFIG_MIRROR] === configHash(staticPod) ? m : undefined;
    },
    async reconcile(staticPods, signal) {
      const wanted = new Map(staticPods.map((p) => [podFullName(p), p]));
      for (const [name, mirror] of [...mirrors]) {
        const sp = wanted.get(name);
        if (!sp) await remove(mirror, 'static pod is gone', signal);
        else if (mirror.metadata.annotations?.[ANNOTATION_CONFIG_MIRROR] !== configHash(sp)) {
          await remove(mirror, 'static pod changed', signal);
        }
      }
      for (const [name, sp] of wanted) {
        const m = mirrors.get(name);
        if (!m) await create(sp, signal);
        else if (m.metadata.deletionTimestamp) await remove(m, 'mirror pod is being deleted', signal);
      }
    },
  };
}

/**
 * Where a desired pod's status is written in the API: a static pod's mirror pod (none yet: nowhere),
 * any other pod itself. Carries the object as last seen, the base of the status patch.
 */
export function statusTargetFor(pod: KubeletPod, mirrors: MirrorPods): StatusTarget {
  const target = isStaticPod(pod) ? mirrors.mirrorFor(pod) : pod;
  if (!target) return undefined;
  return {
    namespace: target.metadata.namespace,
    name: target.metadata.name,
    uid: target.metadata.uid,
    ...(target.status ? { status: target.status } : {}),
    ...(target.metadata.resourceVersion ? { resourceVersion: target.metadata.resourceVersion } : {}),
  };
}
