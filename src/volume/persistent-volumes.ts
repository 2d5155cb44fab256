/**
 * A pod's persistentVolumeClaim volume resolved to its bound PersistentVolume, as upstream's
 * desiredStateOfWorldPopulator does it (pkg/kubelet/volumemanager/populator/
 * desired_state_of_world_populator.go: createVolumeSpec, getPVCExtractPV, getPVSpec), with its
 * messages; and the PV checks upstream makes before mounting (the node-affinity check of
 * operation_generator.go checkNodeAffinity / pkg/volume/util CheckNodeAffinity).
 */
import type { Container, KubeletPod, Volume } from '../api/types.ts';
import { matchesNodeSelectorTerms } from '../api/node-selector.ts';
import { KubeletError, describeError, isKubeletError } from '../util/errors.ts';
import type { PersistentVolume, PersistentVolumeClaim, VolumeObjectSource } from './objects.ts';

export type VolumeMode = 'Filesystem' | 'Block';

export interface ResolvedClaim {
  claimName: string;
  pvc: PersistentVolumeClaim;
  pv: PersistentVolume;
  pvName: string;
  /** The claim reference's readOnly (upstream NewSpecFromPersistentVolume(pv, pvcSource.ReadOnly)). */
  readOnly: boolean;
  volumeMode: VolumeMode;
  /** The PV's source field (`hostPath`, `local`, `csi`, `nfs`, …), or '' when it names none. */
  sourceKind: string;
}

/** Fields of PersistentVolumeSpec that are not the volume source. */
const PV_SPEC_FIELDS = new Set([
  'accessModes',
  'capacity',
  'claimRef',
  'mountOptions',
  'nodeAffinity',
  'persistentVolumeReclaimPolicy',
  'storageClassName',
  'volumeMode',
]);

/** The PV's source type: the one spec field that is neither metadata nor a binding field. */
export function pvSourceKind(pv: PersistentVolume): string {
  const spec = (pv.spec ?? {}) as Record<string, unknown>;
  return (
    Object.keys(spec).find((k) => !PV_SPEC_FIELDS.has(k) && spec[k] !== undefined && spec[k] !== null) ?? ''
  );
}

/** The claim a pod volume names, or undefined when it is not a persistentVolumeClaim volume. */
export function claimSource(v: Volume): { claimName: string; readOnly: boolean } | undefined {
  const raw = v.persistentVolumeClaim;
  if (raw === undefined || raw === null) return undefined;
  const o = (typeof raw === 'object' ? raw : {}) as Record<string, unknown>;
  const claimName = typeof o.claimName === 'string' ? o.claimName : '';
  if (claimName === '') {
    throw new KubeletError(
      'InvalidArgument',
      `mount volume ${v.name}`,
      'persistentVolumeClaim.claimName: required',
    );
  }
  return { claimName, readOnly: o.readOnly === true };
}

/** Every container of the pod (init and app), for the volumeMode checks (upstream GetPodVolumeNames). */
function podContainers(pod: KubeletPod): Container[] {
  return [...(pod.spec.initContainers ?? []), ...pod.spec.containers];
}

function notFound(resource: string, name: string): string {
  return `${resource} "${name}" not found`;
}

/**
 * Reads the claim and its PV and checks the binding both ways; rejects with upstream's
 * `error processing PVC <ns>/<claim>: …` message (a KubeletError whose op names the pod volume), and
 * with the cause's code for an API failure (so a transient error is never taken for a missing claim).
 */
export async function resolveClaim(
  objects: VolumeObjectSource | undefined,
  pod: KubeletPod,
  v: Volume,
  signal?: AbortSignal,
): Promise<ResolvedClaim> {
  const op = `mount volume ${v.name}`;
  const source = claimSource(v);
  if (!source) throw new KubeletError('InvalidArgument', op, 'not a persistentVolumeClaim volume');
  const ns = pod.metadata.namespace;
  const prefix = `error processing PVC ${ns}/${source.claimName}`;
  if (!objects?.getPersistentVolumeClaim || !objects.getPersistentVolume) {
    throw new KubeletError(
      'Unimplemented',
      op,
      `${prefix}: persistentVolumeClaim volumes need the API server (no claims without one: standalone mode)`,
    );
  }
  const fail = (msg: string, cause?: unknown): never => {
    const code = cause === undefined ? 'FailedPrecondition' : isKubeletError(cause) ? cause.code : 'Unknown';
    throw new KubeletError(code, op, `${prefix}: ${msg}`, cause === undefined ? undefined : { cause });
  };

  let pvc: PersistentVolumeClaim | undefined;
  try {
    pvc = await objects.getPersistentVolumeClaim(ns, source.claimName, signal);
  } catch (err) {
    fail(`failed to fetch PVC from API server: ${describeError(err)}`, err);
  }
  if (!pvc) {
    throw new KubeletError(
      'NotFound',
      op,
      `${prefix}: failed to fetch PVC from API server: ${notFound('persistentvolumeclaims', source.claimName)}`,
    );
  }
  if (pvc.metadata.deletionTimestamp) fail('PVC is being deleted');
  if (pvc.status?.phase !== 'Bound') fail('PVC is not bound');
  const pvName = pvc.spec?.volumeName ?? '';
  if (pvName === '') fail('PVC has empty pvc.Spec.VolumeName');

  let pv: PersistentVolume | undefined;
  try {
    pv = await objects.getPersistentVolume(pvName, signal);
  } catch (err) {
    fail(`failed to fetch PV ${pvName} from API server: ${describeError(err)}`, err);
  }
  if (!pv) {
    throw new KubeletError(
      'NotFound',
      op,
      `${prefix}: failed to fetch PV ${pvName} from API server: ${notFound('persistentvolumes', pvName)}`,
    );
  }
  const claimRef = pv.spec?.claimRef;
  if (!claimRef) {
    fail(
      `found PV object ${pvName} but it has a nil pv.Spec.ClaimRef indicating it is not yet bound to the claim`,
    );
  }
  const claimUID = pvc.metadata.uid ?? '';
  if ((claimRef?.uid ?? '') !== claimUID) {
    fail(
      `found PV object ${pvName} but its pv.Spec.ClaimRef.UID ${claimRef?.uid ?? ''} does not point to claim.UID ${claimUID}`,
    );
  }

  // Upstream createVolumeSpec: the mode must match how the containers use the volume.
  const volumeMode: VolumeMode = pv.spec?.volumeMode === 'Block' ? 'Block' : 'Filesystem';
  const containers = podContainers(pod);
  if (volumeMode !== 'Filesystem' && containers.some((c) => c.volumeMounts?.some((m) => m.name === v.name))) {
    throw new KubeletError(
      'FailedPrecondition',
      op,
      `volume ${v.name} has volumeMode ${volumeMode}, but is specified in volumeMounts`,
    );
  }
  if (volumeMode !== 'Block' && containers.some((c) => c.volumeDevices?.some((d) => d.name === v.name))) {
    throw new KubeletError(
      'FailedPrecondition',
      op,
      `volume ${v.name} has volumeMode ${volumeMode}, but is specified in volumeDevices`,
    );
  }
  return {
    claimName: source.claimName,
    pvc,
    pv,
    pvName,
    readOnly: source.readOnly,
    volumeMode,
    sourceKind: pvSourceKind(pv),
  };
}

/**
 * Upstream checkNodeAffinity before MountVolume/MapVolume: a PV whose required node affinity does
 * not match this node (labels, and `metadata.name` for matchFields) is never mounted here.
 */
export function checkNodeAffinity(
  volume: string,
  pvName: string,
  pv: PersistentVolume,
  node: { name: string; labels: Record<string, string> },
  prefix: 'MountVolume' | 'MapVolume',
): void {
  const required = pv.spec?.nodeAffinity?.required;
  if (!required) return;
  if (!matchesNodeSelectorTerms(required.nodeSelectorTerms ?? [], node)) {
    throw new KubeletError(
      'FailedPrecondition',
      `mount volume ${volume}`,
      `${prefix}.NodeAffinity check failed for volume "${pvName}" : no matching NodeSelectorTerms`,
    );
  }
}
