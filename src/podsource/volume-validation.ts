/**
 * Validation of the pod's volumes (upstream ValidateVolumes): unique DNS-label names and exactly one
 * volume source each.
 */
import type { Volume } from '../api/types.ts';
import { child, index, type FieldError } from './field-errors.ts';
import { dnsLabel } from './field-checks.ts';

/** Volume source fields of core/v1 VolumeSource: a volume must set exactly one. */
const VOLUME_SOURCES = [
  'hostPath',
  'emptyDir',
  'gcePersistentDisk',
  'awsElasticBlockStore',
  'gitRepo',
  'secret',
  'nfs',
  'iscsi',
  'glusterfs',
  'persistentVolumeClaim',
  'rbd',
  'flexVolume',
  'cinder',
  'cephfs',
  'flocker',
  'downwardAPI',
  'fc',
  'azureFile',
  'configMap',
  'vsphereVolume',
  'quobyte',
  'azureDisk',
  'photonPersistentDisk',
  'projected',
  'portworxVolume',
  'scaleIO',
  'storageos',
  'csi',
  'ephemeral',
  'image',
] as const;

/** Appends the problems of `spec.volumes`; returns the volume names (for the mounts to refer to). */
export function validateVolumes(volumes: Volume[], errs: FieldError[]): Set<string> {
  const names = new Set<string>();
  volumes.forEach((v, i) => {
    const p = index('spec.volumes', i);
    if (!v.name) errs.push({ path: child(p, 'name'), type: 'Required' });
    else {
      dnsLabel(child(p, 'name'), v.name, errs);
      if (names.has(v.name)) errs.push({ path: child(p, 'name'), type: 'Duplicate', value: v.name });
      names.add(v.name);
    }
    const sources = VOLUME_SOURCES.filter((s) => v[s] !== undefined);
    if (sources.length === 0) errs.push({ path: p, type: 'Required', detail: 'must specify a volume type' });
    else if (sources.length > 1) {
      errs.push({
        path: child(p, sources[1] ?? ''),
        type: 'Forbidden',
        detail: 'may not specify more than 1 volume type',
      });
    }
    if (v.hostPath && !v.hostPath.path)
      errs.push({ path: child(child(p, 'hostPath'), 'path'), type: 'Required' });
  });
  return names;
}
