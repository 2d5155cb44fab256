/**
 * The one PV-and-claim builder of the cluster tests: a PersistentVolume pre-bound to its claim
 * (claimRef) and the claim naming it (volumeName), so the bed's PV controller binds the two at once
 * with no provisioner. ReadWriteOnce, reclaim policy Retain, no storage class, 64Mi, the claim in
 * `default`, unless told. Upstream counterpart: the e2e framework's MakePersistentVolume and
 * MakePersistentVolumeClaim with a pre-bound pair (test/e2e/framework/pv/pv.go, createPVPVC).
 */
import type { Kubectl } from './kubectl.ts';
import { eventually } from './poll.ts';

export interface BoundClaimOptions {
  /** The PV's source: its one volume-type field (`csi`, `hostPath`, `nfs`…), with any nodeAffinity. */
  source: Record<string, unknown>;
  /** The claim's namespace: `default` unless given. */
  namespace?: string;
  /** Both objects' volumeMode; left out (the API's Filesystem) unless given. */
  volumeMode?: 'Filesystem' | 'Block';
  /** The PV's capacity and the claim's request: `64Mi` unless given. */
  storage?: string;
}

/** A core/v1 object as kubectl applies it (JSON is YAML). */
export interface ManifestObject {
  apiVersion: 'v1';
  kind: string;
  metadata: { name: string; namespace?: string };
  spec: Record<string, unknown>;
}

/** PV `pv` pre-bound to claim `claim`, and that claim: one `List` for one `kubectl apply -f -`. */
export function buildBoundClaim(
  pv: string,
  claim: string,
  opts: BoundClaimOptions,
): { apiVersion: 'v1'; kind: 'List'; items: [ManifestObject, ManifestObject] } {
  const namespace = opts.namespace ?? 'default';
  const storage = opts.storage ?? '64Mi';
  const mode = opts.volumeMode ? { volumeMode: opts.volumeMode } : {};
  const common = { accessModes: ['ReadWriteOnce'], storageClassName: '', ...mode };
  const volume: ManifestObject = {
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: { name: pv },
    spec: {
      capacity: { storage },
      persistentVolumeReclaimPolicy: 'Retain',
      ...common,
      claimRef: { namespace, name: claim },
      ...opts.source,
    },
  };
  const pvc: ManifestObject = {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name: claim, namespace },
    spec: { ...common, volumeName: pv, resources: { requests: { storage } } },
  };
  return { apiVersion: 'v1', kind: 'List', items: [volume, pvc] };
}

/** A local PV's source on `path`, with the node affinity to `node` a local PV needs. */
export function localPvSource(path: string, node: string): Record<string, unknown> {
  return {
    local: { path },
    nodeAffinity: {
      required: {
        nodeSelectorTerms: [
          { matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: [node] }] },
        ],
      },
    },
  };
}

/** Applies {@link buildBoundClaim}'s pair and waits (30 s) until the PV controller reports the claim Bound. */
export async function applyBoundClaim(
  kubectl: Kubectl,
  pv: string,
  claim: string,
  opts: BoundClaimOptions,
): Promise<void> {
  await kubectl.ok(['apply', '-f', '-'], JSON.stringify(buildBoundClaim(pv, claim, opts)));
  const namespace = opts.namespace ?? 'default';
  await eventually(`claim ${claim} Bound`, async () => {
    const r = await kubectl.run(['get', 'pvc', claim, '-n', namespace, '-o', 'jsonpath={.status.phase}']);
    return r.stdout === 'Bound' ? true : undefined;
  });
}
