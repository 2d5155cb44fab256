/**
 * The CsiVolume the mounter takes, from the API objects the volume manager holds (upstream
 * pkg/volume/csi csi_plugin.go NewMounter and csi_util.go getSourceFromSpec, with the volume
 * manager's NewSpecFromPersistentVolume(pv, claim.readOnly)): a PV with `spec.csi`, or a pod
 * volume with `csi:` (an inline ephemeral volume). Shapes are checked here, once: a malformed
 * object is an InvalidArgument error naming the field, never a crash later.
 */
import { KubeletError } from '../../util/errors.ts';
import type { CsiVolume } from './volume-types.ts';

/** The parts of a core/v1 PersistentVolume this reads. */
export interface PersistentVolumeLike {
  metadata: { name: string };
  spec?: { csi?: unknown; accessModes?: unknown; mountOptions?: unknown };
}

type Obj = Record<string, unknown>;

function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function bad(field: string, what: string): KubeletError {
  return new KubeletError('InvalidArgument', 'CSI volume source', `${field}: ${what}`);
}

function str(o: Obj, key: string, field: string, required: boolean): string | undefined {
  const v = o[key];
  if (v === undefined || v === null) {
    if (required) throw bad(`${field}.${key}`, 'Required value');
    return undefined;
  }
  if (typeof v !== 'string') throw bad(`${field}.${key}`, 'must be a string');
  if (required && v === '') throw bad(`${field}.${key}`, 'Required value');
  return v;
}

function strMap(v: unknown, field: string): Record<string, string> | undefined {
  if (v === undefined || v === null) return undefined;
  if (!isObj(v) || !Object.values(v).every((x) => typeof x === 'string'))
    throw bad(field, 'must be a map of strings');
  return v as Record<string, string>;
}

function strList(v: unknown, field: string): string[] | undefined {
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v) || !v.every((x) => typeof x === 'string'))
    throw bad(field, 'must be a list of strings');
  return v;
}

function secretRef(
  v: unknown,
  field: string,
  withNamespace: boolean,
): { name: string; namespace?: string } | undefined {
  if (v === undefined || v === null) return undefined;
  if (!isObj(v)) throw bad(field, 'must be an object');
  const name = str(v, 'name', field, true) ?? '';
  const namespace = withNamespace ? str(v, 'namespace', field, false) : undefined;
  return namespace ? { name, namespace } : { name };
}

function bool(v: unknown, field: string): boolean | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'boolean') throw bad(field, 'must be a boolean');
  return v;
}

/**
 * A PV's CSI source for a pod; `claimReadOnly` is the pod's `persistentVolumeClaim.readOnly`, which
 * upstream 1.20 alone passes to NodePublish (the PV's own `csi.readOnly` is the attacher's).
 * Undefined when the PV has no `spec.csi`.
 */
export function csiVolumeFromPersistentVolume(
  pv: PersistentVolumeLike,
  claimReadOnly: boolean,
): CsiVolume | undefined {
  const csi = pv.spec?.csi;
  if (csi === undefined || csi === null) return undefined;
  const f = 'spec.csi';
  if (!isObj(csi)) throw bad(f, 'must be an object');
  const fsType = str(csi, 'fsType', f, false);
  const readOnly = bool(csi.readOnly, `${f}.readOnly`);
  const volumeAttributes = strMap(csi.volumeAttributes, `${f}.volumeAttributes`);
  const nodeStageSecretRef = secretRef(csi.nodeStageSecretRef, `${f}.nodeStageSecretRef`, true);
  const nodePublishSecretRef = secretRef(csi.nodePublishSecretRef, `${f}.nodePublishSecretRef`, true);
  const accessModes = strList(pv.spec?.accessModes, 'spec.accessModes');
  const mountOptions = strList(pv.spec?.mountOptions, 'spec.mountOptions');
  return {
    kind: 'persistent',
    pvName: pv.metadata.name,
    source: {
      driver: str(csi, 'driver', f, true) ?? '',
      volumeHandle: str(csi, 'volumeHandle', f, true) ?? '',
      ...(readOnly !== undefined ? { readOnly } : {}),
      ...(fsType !== undefined ? { fsType } : {}),
      ...(volumeAttributes ? { volumeAttributes } : {}),
      ...(nodeStageSecretRef ? { nodeStageSecretRef } : {}),
      ...(nodePublishSecretRef ? { nodePublishSecretRef } : {}),
    },
    ...(accessModes ? { accessModes } : {}),
    ...(mountOptions ? { mountOptions } : {}),
    readOnly: claimReadOnly,
  };
}

/** A pod volume's inline `csi:` source; undefined when the volume has none. */
export function csiVolumeFromPodVolume(volume: { name: string; csi?: unknown }): CsiVolume | undefined {
  const csi = volume.csi;
  if (csi === undefined || csi === null) return undefined;
  const f = `volumes[${volume.name}].csi`;
  if (!isObj(csi)) throw bad(f, 'must be an object');
  const fsType = str(csi, 'fsType', f, false);
  const readOnly = bool(csi.readOnly, `${f}.readOnly`);
  const volumeAttributes = strMap(csi.volumeAttributes, `${f}.volumeAttributes`);
  const nodePublishSecretRef = secretRef(csi.nodePublishSecretRef, `${f}.nodePublishSecretRef`, false);
  return {
    kind: 'ephemeral',
    volumeName: volume.name,
    source: {
      driver: str(csi, 'driver', f, true) ?? '',
      ...(readOnly !== undefined ? { readOnly } : {}),
      ...(fsType !== undefined ? { fsType } : {}),
      ...(volumeAttributes ? { volumeAttributes } : {}),
      ...(nodePublishSecretRef ? { nodePublishSecretRef: { name: nodePublishSecretRef.name } } : {}),
    },
  };
}
