/**
 * Validation of the pod's volumes (upstream ValidateVolumes): unique DNS-label names, exactly one
 * volume source each, and a hostPath that is a path without `..` and of a known type
 * (validateHostPathVolumeSource).
 */
import type { Volume } from '../api/types.ts';
import { child, index, type FieldError } from './field-errors.ts';
import { dnsLabel, oneOf } from './field-checks.ts';

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
    if (v.hostPath) validateHostPath(child(p, 'hostPath'), v.hostPath, errs);
  });
  return names;
}

/** Upstream supportedHostPathTypes, sorted as upstream's sets.List prints them. */
const HOST_PATH_TYPES = [
  '',
  'BlockDevice',
  'CharDevice',
  'Directory',
  'DirectoryOrCreate',
  'File',
  'FileOrCreate',
  'Socket',
] as const;

/** Upstream validateHostPathVolumeSource: a path, without a `..` element, and a known type. */
function validateHostPath(path: string, hostPath: { path: string; type?: string }, errs: FieldError[]): void {
  if (!hostPath.path) {
    errs.push({ path: child(path, 'path'), type: 'Required' });
    return;
  }
  pathNoBacksteps(child(path, 'path'), hostPath.path, errs);
  oneOf(child(path, 'type'), hostPath.type, HOST_PATH_TYPES, errs);
}

/** Upstream validatePathNoBacksteps: one error, however many `..` elements. */
function pathNoBacksteps(path: string, value: string, errs: FieldError[]): void {
  if (value.split('/').includes('..')) {
    errs.push({ path, type: 'Invalid', value, detail: "must not contain '..'" });
  }
}
