import type { KubeletPod, Volume, VolumeMount } from '../api/types.ts';
import { buildPod, type PodOptions } from '../../test/kit/pod.ts';
import type {
  ConfigMap,
  ObjectChange,
  PersistentVolume,
  PersistentVolumeClaim,
  Secret,
  VolumeObjectSource,
} from './objects.ts';
import type { ServiceAccountTokenSource, TokenRequestSpec } from './token-manager.ts';
import type { VolumeManager } from './volume-manager.ts';

/**
 * A pod in `ns` with `volumes`, whose one container `c` mounts `mounts` (the kit's builder); by
 * default every volume at `/v/<name>`, as the kubelet sets up only the volumes a container uses.
 */
export function volumePod(
  name: string,
  uid: string,
  volumes: Volume[],
  mounts: VolumeMount[] = volumes.map((v) => ({ name: v.name, mountPath: `/v/${v.name}` })),
  opts: PodOptions = {},
): KubeletPod {
  return buildPod(name, {
    namespace: 'ns',
    uid,
    volumes,
    containers: [{ name: 'c', volumeMounts: mounts }],
    ...opts,
  });
}

/** An in-memory VolumeObjectSource for tests: objects by `namespace/name`, with a call log. */
export interface FakeObjectSource extends VolumeObjectSource {
  secrets: Map<string, Secret>;
  configMaps: Map<string, ConfigMap>;
  /** Claims by `namespace/name`. */
  claims: Map<string, PersistentVolumeClaim>;
  /** PersistentVolumes by name. */
  pvs: Map<string, PersistentVolume>;
  calls: string[];
  /** When set, every read rejects with it (an API outage). */
  failWith?: Error;
  /** When true, reads never settle and ignore their signal (a hung API). */
  hang?: boolean;
  /** Tells the subscribers (as the Watch strategy does) that an object changed. */
  changed(change: ObjectChange): void;
}

export const b64 = (s: string) => Buffer.from(s).toString('base64');

export function fakeObjectSource(): FakeObjectSource {
  const listeners = new Set<(change: ObjectChange) => void>();
  const src: FakeObjectSource = {
    secrets: new Map(),
    configMaps: new Map(),
    claims: new Map(),
    pvs: new Map(),
    calls: [],
    onObjectChange(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    changed(change) {
      for (const l of listeners) l(change);
    },
    getSecret(namespace, name) {
      src.calls.push(`secret ${namespace}/${name}`);
      if (src.hang) return new Promise<never>(() => {});
      if (src.failWith) return Promise.reject(src.failWith);
      return Promise.resolve(src.secrets.get(`${namespace}/${name}`));
    },
    getConfigMap(namespace, name) {
      src.calls.push(`configMap ${namespace}/${name}`);
      if (src.hang) return new Promise<never>(() => {});
      if (src.failWith) return Promise.reject(src.failWith);
      return Promise.resolve(src.configMaps.get(`${namespace}/${name}`));
    },
    getPersistentVolumeClaim(namespace, name) {
      src.calls.push(`pvc ${namespace}/${name}`);
      if (src.hang) return new Promise<never>(() => {});
      if (src.failWith) return Promise.reject(src.failWith);
      return Promise.resolve(src.claims.get(`${namespace}/${name}`));
    },
    getPersistentVolume(name) {
      src.calls.push(`pv ${name}`);
      if (src.hang) return new Promise<never>(() => {});
      if (src.failWith) return Promise.reject(src.failWith);
      return Promise.resolve(src.pvs.get(name));
    },
  };
  return src;
}

/** A ServiceAccountTokenSource for tests: hands out `token`, records every call. */
export interface FakeTokenSource extends ServiceAccountTokenSource {
  token: string;
  calls: { namespace: string; serviceAccount: string; spec: TokenRequestSpec }[];
  forgotten: string[];
  /** When set, every getToken rejects with it. */
  failWith?: Error;
}

export function fakeTokenSource(token = 'jwt-1'): FakeTokenSource {
  const src: FakeTokenSource = {
    token,
    calls: [],
    forgotten: [],
    getToken(namespace, serviceAccount, spec) {
      src.calls.push({ namespace, serviceAccount, spec: structuredClone(spec) });
      if (src.failWith) return Promise.reject(src.failWith);
      return Promise.resolve({ token: src.token, expiresAt: Date.now() + spec.expirationSeconds * 1000 });
    },
    forgetPod(uid) {
      src.forgotten.push(uid);
    },
  };
  return src;
}

/** A claim `ns/name` Bound to `pvName`, and that PV (spec given) bound back to it; both stored in `src`. */
export function bindClaim(
  src: FakeObjectSource,
  claim: string,
  pvName: string,
  spec: NonNullable<PersistentVolume['spec']>,
): { pvc: PersistentVolumeClaim; pv: PersistentVolume } {
  const uid = `claim-uid-${claim}`;
  const pvc: PersistentVolumeClaim = {
    metadata: { name: claim, namespace: 'ns', uid },
    spec: { volumeName: pvName },
    status: { phase: 'Bound' },
  };
  const pv: PersistentVolume = {
    metadata: { name: pvName },
    spec: { claimRef: { namespace: 'ns', name: claim, uid }, ...spec },
  };
  src.claims.set(`ns/${claim}`, pvc);
  src.pvs.set(pvName, pv);
  return { pvc, pv };
}

/**
 * A volume manager that sets up nothing and has nothing to tear down, with `overrides` in place of
 * its methods: for kubelet tests about something else (counting syncs, a teardown that fails).
 */
export function nullVolumeManager(overrides: Partial<VolumeManager> = {}): VolumeManager {
  return {
    setUpPodVolumes: () => Promise.resolve(),
    mountsFor: () => Promise.resolve([]),
    devicesFor: () => Promise.resolve([]),
    extraSupplementalGroups: () => [],
    measuredVolumes: () => [],
    cleanUpPod: () => Promise.resolve(),
    tearDownVolumes: () => Promise.resolve(),
    ...overrides,
  };
}
