/**
 * Semantic validation of a defaulted pod: the subset of upstream ValidatePodCreate
 * (pkg/apis/core/validation) that catches malformed manifests with a message naming the field.
 * It runs after {@link checkPodShape} (types are right) and after defaulting (as upstream does).
 * Containers are checked in container-validation.ts, volumes in volume-validation.ts; this file
 * holds the metadata, the pod-level fields and the whole.
 */
import type { Pod, Toleration } from '../api/types.ts';
import { isLabelValue } from '../api/names.ts';
import { validateContainer } from './container-validation.ts';
import { child, index, type FieldError } from './field-errors.ts';
import { atLeast, dnsLabel, dnsSubdomain, oneOf, qualifiedName } from './field-checks.ts';
import { validateVolumes } from './volume-validation.ts';

const MAX_ANNOTATIONS_BYTES = 256 * 1024; // TotalAnnotationSizeLimitB

function validateMeta(pod: Pod, errs: FieldError[]): void {
  const m = pod.metadata;
  if (!m.name)
    errs.push({ path: 'metadata.name', type: 'Required', detail: 'name or generateName is required' });
  else dnsSubdomain('metadata.name', m.name, errs);
  if (m.namespace !== undefined) dnsLabel('metadata.namespace', m.namespace, errs);
  for (const [k, v] of Object.entries(m.labels ?? {})) {
    const p = `metadata.labels[${JSON.stringify(k)}]`;
    qualifiedName('metadata.labels', k, errs);
    if (!isLabelValue(v)) {
      errs.push({
        path: p,
        type: 'Invalid',
        value: v,
        detail:
          "a valid label value must be an empty string or consist of at most 63 alphanumeric characters, '-', '_' or '.'",
      });
    }
  }
  let size = 0;
  for (const [k, v] of Object.entries(m.annotations ?? {})) {
    qualifiedName('metadata.annotations', k.toLowerCase(), errs);
    size += Buffer.byteLength(k) + Buffer.byteLength(v);
  }
  if (size > MAX_ANNOTATIONS_BYTES) {
    errs.push({
      path: 'metadata.annotations',
      type: 'TooLong',
      detail: `must have at most ${MAX_ANNOTATIONS_BYTES} bytes`,
    });
  }
}

function validateTolerations(tolerations: Toleration[], errs: FieldError[]): void {
  tolerations.forEach((t, i) => {
    const p = index('spec.tolerations', i);
    oneOf(child(p, 'operator'), t.operator, ['Equal', 'Exists'], errs);
    oneOf(child(p, 'effect'), t.effect, ['NoExecute', 'NoSchedule', 'PreferNoSchedule'], errs);
    if (t.operator === 'Exists' && t.value) {
      errs.push({
        path: child(p, 'operator'),
        type: 'Invalid',
        value: t.value,
        detail: "value must be empty when `operator` is 'Exists'",
      });
    }
    if (!t.key && t.operator !== 'Exists') {
      errs.push({
        path: child(p, 'operator'),
        type: 'Invalid',
        value: t.operator ?? '',
        detail: 'operator must be Exists when `key` is empty, which means "match all values and all keys"',
      });
    }
    if (t.key) qualifiedName(child(p, 'key'), t.key, errs);
  });
}

/** Returns every problem found; an empty list means the pod is acceptable. */
export function validatePod(pod: Pod): FieldError[] {
  const errs: FieldError[] = [];
  validateMeta(pod, errs);
  const spec = pod.spec;
  const volumes = validateVolumes(spec.volumes ?? [], errs);
  const hostNetwork = spec.hostNetwork === true;
  if (spec.containers.length === 0) errs.push({ path: 'spec.containers', type: 'Required' });
  const names = new Set<string>();
  const groups = [
    ['spec.initContainers', spec.initContainers ?? [], 'init'],
    ['spec.containers', spec.containers, 'regular'],
  ] as const;
  for (const [field, list, kind] of groups) {
    list.forEach((c, i) => {
      const p = index(field, i);
      validateContainer(p, c, kind, volumes, hostNetwork, errs);
      if (c.name) {
        if (names.has(c.name)) errs.push({ path: child(p, 'name'), type: 'Duplicate', value: c.name });
        names.add(c.name);
      }
    });
  }
  oneOf('spec.restartPolicy', spec.restartPolicy, ['Always', 'Never', 'OnFailure'], errs);
  oneOf(
    'spec.dnsPolicy',
    spec.dnsPolicy,
    ['ClusterFirst', 'ClusterFirstWithHostNet', 'Default', 'None'],
    errs,
  );
  if (spec.dnsPolicy === 'None' && !spec.dnsConfig) {
    errs.push({
      path: 'spec.dnsConfig',
      type: 'Required',
      detail: 'must provide `dnsConfig` when `dnsPolicy` is None',
    });
  }
  atLeast('spec.terminationGracePeriodSeconds', spec.terminationGracePeriodSeconds, 0, errs);
  atLeast('spec.activeDeadlineSeconds', spec.activeDeadlineSeconds, 1, errs);
  if (spec.hostname !== undefined) dnsLabel('spec.hostname', spec.hostname, errs);
  if (spec.subdomain !== undefined) dnsLabel('spec.subdomain', spec.subdomain, errs);
  validateTolerations(spec.tolerations ?? [], errs);
  return errs;
}
