import type { KubeletPod, Volume } from '../api/types.ts';
import { KubeletError, describeError, isKubeletError } from '../util/errors.ts';
import { untilAborted, abortReason, combineSignals } from '../util/abort.ts';
import type { FileProjection } from './atomic-writer.ts';
import type { ConfigMap, Secret, VolumeObjectSource } from './objects.ts';
import type { ServiceAccountTokenSource } from './token-manager.ts';
import { downwardAPIPayload, type NodeAllocatable } from './downward-api.ts';
import {
  configMapSource,
  downwardAPISource,
  projectedSource,
  secretSource,
  type KeyToPath,
  type ServiceAccountTokenProjection,
} from './volume-sources.ts';

/** How long one secret/configMap read may take before the mount counts as failed (not upstream). */
export const VOLUME_OBJECT_FETCH_TIMEOUT_MS = 10_000;

/** The volume kinds whose files the kubelet writes with the atomic writer. */
export type ProjectionKind = 'secret' | 'configMap' | 'downwardAPI' | 'projected';

export function isProjectionKind(kind: string): kind is ProjectionKind {
  return kind === 'secret' || kind === 'configMap' || kind === 'downwardAPI' || kind === 'projected';
}

/** Upstream plugin directory names under `pods/<uid>/volumes/`. */
export const PLUGIN_DIR: Record<ProjectionKind, string> = {
  secret: 'kubernetes.io~secret',
  configMap: 'kubernetes.io~configmap',
  downwardAPI: 'kubernetes.io~downward-api',
  projected: 'kubernetes.io~projected',
};

/** Upstream wraps secret, downwardAPI and projected in a memory-medium emptyDir; configMap on disk. */
export const MEMORY_BACKED: Record<ProjectionKind, boolean> = {
  secret: true,
  configMap: false,
  downwardAPI: true,
  projected: true,
};

export interface ProjectionDeps {
  objects?: VolumeObjectSource;
  /** Service-account tokens (cluster mode); absent: serviceAccountToken sources fail clearly. */
  tokens?: ServiceAccountTokenSource;
  allocatable: NodeAllocatable;
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

function decodeBase64(value: string, what: string, op: string): Buffer {
  const compact = value.replace(/\s+/g, '');
  if (compact.length % 4 !== 0 || !BASE64.test(compact)) {
    throw new KubeletError('InvalidArgument', op, `${what} is not valid base64`);
  }
  return Buffer.from(compact, 'base64');
}

/**
 * Files for a key/value object (upstream secret/configmap MakePayload): every key when `items` is
 * empty, else exactly the listed keys at their paths. A listed key that is missing is skipped when the
 * volume is optional and an error otherwise.
 */
function keyedPayload(
  keys: Map<string, () => Buffer>,
  items: KeyToPath[] | undefined,
  defaultMode: number,
  optional: boolean,
  missingKey: (key: string) => KubeletError,
): Map<string, FileProjection> {
  const payload = new Map<string, FileProjection>();
  if (!items) {
    for (const [key, data] of keys) payload.set(key, { data: data(), mode: defaultMode });
    return payload;
  }
  for (const item of items) {
    const data = keys.get(item.key);
    if (!data) {
      if (optional) continue;
      throw missingKey(item.key);
    }
    payload.set(item.path, { data: data(), mode: item.mode ?? defaultMode });
  }
  return payload;
}

export function secretPayload(
  secret: Secret | undefined,
  ref: { namespace: string; name: string; items?: KeyToPath[]; optional: boolean },
  defaultMode: number,
  op: string,
): Map<string, FileProjection> {
  const keys = new Map<string, () => Buffer>();
  for (const [k, v] of Object.entries(secret?.data ?? {})) {
    keys.set(k, () => decodeBase64(v, `secret ${ref.namespace}/${ref.name} key ${k}`, op));
  }
  return keyedPayload(
    keys,
    ref.items,
    defaultMode,
    ref.optional,
    (key) => new KubeletError('NotFound', op, `secret ${ref.namespace}/${ref.name} has no key "${key}"`),
  );
}

export function configMapPayload(
  cm: ConfigMap | undefined,
  ref: { namespace: string; name: string; items?: KeyToPath[]; optional: boolean },
  defaultMode: number,
  op: string,
): Map<string, FileProjection> {
  const keys = new Map<string, () => Buffer>();
  for (const [k, v] of Object.entries(cm?.data ?? {})) keys.set(k, () => Buffer.from(v, 'utf8'));
  for (const [k, v] of Object.entries(cm?.binaryData ?? {})) {
    if (keys.has(k)) continue; // the API server rejects a key in both; text wins if one slips through
    keys.set(k, () => decodeBase64(v, `configMap ${ref.namespace}/${ref.name} key ${k}`, op));
  }
  return keyedPayload(
    keys,
    ref.items,
    defaultMode,
    ref.optional,
    (key) => new KubeletError('NotFound', op, `configMap ${ref.namespace}/${ref.name} has no key "${key}"`),
  );
}

type ObjectKind = 'secret' | 'configMap';

/**
 * Reads one object through the source with a timeout. undefined when it does not exist and the
 * volume is optional; a missing required object is a NotFound error naming it.
 */
async function fetchObject<T>(
  deps: ProjectionDeps,
  kind: ObjectKind,
  ref: { namespace: string; name: string; optional: boolean },
  op: string,
  signal: AbortSignal | undefined,
  get: (objects: VolumeObjectSource, signal: AbortSignal) => Promise<T | undefined>,
): Promise<T | undefined> {
  const { namespace, name } = ref;
  const objects = deps.objects;
  if (!objects) {
    throw new KubeletError('FailedPrecondition', op, `${kind} volumes need an API server (cluster mode)`);
  }
  const sig = combineSignals([signal], VOLUME_OBJECT_FETCH_TIMEOUT_MS);
  let obj: T | undefined;
  try {
    obj = await untilAborted(get(objects, sig), sig);
  } catch (err) {
    if (signal?.aborted) throw abortReason(signal);
    const timedOut = sig.aborted;
    const code = timedOut ? 'DeadlineExceeded' : isKubeletError(err) ? err.code : 'Unavailable';
    const why = timedOut ? `no answer within ${VOLUME_OBJECT_FETCH_TIMEOUT_MS} ms` : describeError(err);
    throw new KubeletError(code, op, `get ${kind} ${namespace}/${name}: ${why}`, { cause: err });
  }
  if (obj === undefined && !ref.optional) {
    throw new KubeletError('NotFound', op, `${kind} "${name}" not found in namespace ${namespace}`);
  }
  return obj;
}

/**
 * Upstream projected collectData for a serviceAccountToken source: a token bound to the pod for its
 * service account, at `path`. The mode is the volume's defaultMode, or 0600 with an fsGroup (made
 * 0640 by the group ownership the volume manager applies, as upstream SetVolumeOwnership does).
 */
async function tokenPayload(
  pod: KubeletPod,
  source: ServiceAccountTokenProjection,
  defaultMode: number,
  deps: ProjectionDeps,
  op: string,
  signal: AbortSignal | undefined,
): Promise<Map<string, FileProjection>> {
  const tokens = deps.tokens;
  if (!tokens) {
    throw new KubeletError(
      'FailedPrecondition',
      op,
      'serviceAccountToken volumes need an API server (cluster mode)',
    );
  }
  const { namespace, name, uid } = pod.metadata;
  // The API server defaults serviceAccountName (from the deprecated serviceAccount, else "default").
  const account = pod.spec.serviceAccountName || pod.spec.serviceAccount || 'default';
  const spec = {
    audiences: source.audience === '' ? [] : [source.audience],
    expirationSeconds: source.expirationSeconds,
    boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name, uid } as const,
  };
  let token: string;
  try {
    // The token source bounds its own API calls: its timeout is a failed refresh, which may still
    // leave a valid cached token to hand out, so no shorter guard here.
    ({ token } = await untilAborted(tokens.getToken(namespace, account, spec, signal), signal));
  } catch (err) {
    if (signal?.aborted) throw abortReason(signal);
    const code = isKubeletError(err) ? err.code : 'Unavailable';
    // The token source's errors name the service account already.
    throw new KubeletError(code, op, describeError(err), { cause: err });
  }
  const mode = pod.spec.securityContext?.fsGroup !== undefined ? 0o600 : defaultMode;
  return new Map([[source.path, { data: Buffer.from(token, 'utf8'), mode }]]);
}

const getSecret = (ref: { namespace: string; name: string }) => (o: VolumeObjectSource, s: AbortSignal) =>
  o.getSecret(ref.namespace, ref.name, s);
const getConfigMap = (ref: { namespace: string; name: string }) => (o: VolumeObjectSource, s: AbortSignal) =>
  o.getConfigMap(ref.namespace, ref.name, s);

/**
 * The files a secret/configMap/downwardAPI/projected volume should hold right now (fetching the API
 * objects it names). Throws KubeletError naming the volume; nothing is written here.
 */
export async function buildPayload(
  pod: KubeletPod,
  volume: Volume,
  kind: ProjectionKind,
  deps: ProjectionDeps,
  signal?: AbortSignal,
): Promise<Map<string, FileProjection>> {
  const op = `mount volume ${volume.name}`;
  const namespace = pod.metadata.namespace;
  switch (kind) {
    case 'secret': {
      const src = secretSource(volume);
      const ref = { namespace, name: src.secretName, ...src };
      const obj = await fetchObject(deps, 'secret', ref, op, signal, getSecret(ref));
      return secretPayload(obj, ref, src.defaultMode, op);
    }
    case 'configMap': {
      const src = configMapSource(volume);
      const ref = { namespace, ...src };
      const obj = await fetchObject(deps, 'configMap', ref, op, signal, getConfigMap(ref));
      return configMapPayload(obj, ref, src.defaultMode, op);
    }
    case 'downwardAPI': {
      const src = downwardAPISource(volume);
      return downwardAPIPayload(pod, src.items, src.defaultMode, deps.allocatable, op);
    }
    case 'projected': {
      const src = projectedSource(volume);
      const payload = new Map<string, FileProjection>();
      for (const s of src.sources) {
        let part: Map<string, FileProjection>;
        switch (s.kind) {
          case 'secret': {
            const ref = { namespace, ...s };
            const obj = await fetchObject(deps, 'secret', ref, op, signal, getSecret(ref));
            part = secretPayload(obj, ref, src.defaultMode, op);
            break;
          }
          case 'configMap': {
            const ref = { namespace, ...s };
            const obj = await fetchObject(deps, 'configMap', ref, op, signal, getConfigMap(ref));
            part = configMapPayload(obj, ref, src.defaultMode, op);
            break;
          }
          case 'downwardAPI':
            part = downwardAPIPayload(pod, s.items, src.defaultMode, deps.allocatable, op);
            break;
          case 'serviceAccountToken':
            part = await tokenPayload(pod, s, src.defaultMode, deps, op, signal);
            break;
          case 'unsupported':
            throw new KubeletError(
              'Unimplemented',
              op,
              `projected ${s.source} sources are not supported yet`,
            );
        }
        for (const [p, f] of part) payload.set(p, f);
      }
      return payload;
    }
  }
}
