/**
 * Semantic validation of a defaulted pod: the subset of upstream ValidatePodCreate
 * (pkg/apis/core/validation) that catches malformed manifests with a message naming the field.
 * It runs after {@link checkPodShape} (types are right) and after defaulting (as upstream does).
 */
import type {
  Container,
  ContainerPort,
  LifecycleHandler,
  Pod,
  Probe,
  Toleration,
  Volume,
} from '../api/types.ts';
import { isDNS1123Label, isDNS1123Subdomain, isLabelValue, isQualifiedNamePart } from '../api/names.ts';
import { child, index, type FieldError } from './field-errors.ts';

const IANA_SVC_NAME = /^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/;
const MAX_ANNOTATIONS_BYTES = 256 * 1024; // TotalAnnotationSizeLimitB

const LABEL_MSG =
  "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const SUBDOMAIN_MSG =
  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

function dnsLabel(path: string, v: string, errs: FieldError[]): void {
  if (v.length > 63)
    errs.push({ path, type: 'Invalid', value: v, detail: 'must be no more than 63 characters' });
  else if (!isDNS1123Label(v)) errs.push({ path, type: 'Invalid', value: v, detail: LABEL_MSG });
}

function dnsSubdomain(path: string, v: string, errs: FieldError[]): void {
  if (v.length > 253)
    errs.push({ path, type: 'Invalid', value: v, detail: 'must be no more than 253 characters' });
  else if (!isDNS1123Subdomain(v)) errs.push({ path, type: 'Invalid', value: v, detail: SUBDOMAIN_MSG });
}

function qualifiedName(path: string, key: string, errs: FieldError[]): void {
  const slash = key.indexOf('/');
  const name = slash >= 0 ? key.slice(slash + 1) : key;
  if (slash >= 0) {
    const prefix = key.slice(0, slash);
    if (prefix === '' || !isDNS1123Subdomain(prefix)) {
      errs.push({
        path,
        type: 'Invalid',
        value: key,
        detail: 'prefix part must be a lowercase RFC 1123 subdomain',
      });
      return;
    }
  }
  if (!isQualifiedNamePart(name)) {
    errs.push({
      path,
      type: 'Invalid',
      value: key,
      detail:
        "name part must consist of at most 63 alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
    });
  }
}

function isIanaSvcName(v: string): boolean {
  return v.length <= 15 && IANA_SVC_NAME.test(v) && /[a-z]/.test(v) && !v.includes('--');
}

function oneOf(path: string, v: string | undefined, allowed: readonly string[], errs: FieldError[]): void {
  if (v === undefined) return;
  if (!allowed.includes(v)) {
    errs.push({
      path,
      type: 'Unsupported',
      value: v,
      detail: `supported values: ${allowed.map((a) => JSON.stringify(a)).join(', ')}`,
    });
  }
}

function atLeast(path: string, v: number | undefined, min: number, errs: FieldError[]): void {
  if (v !== undefined && v < min) {
    errs.push({ path, type: 'Invalid', value: v, detail: `must be greater than or equal to ${min}` });
  }
}

function portNumber(path: string, v: number, errs: FieldError[]): void {
  if (v < 1 || v > 65535)
    errs.push({ path, type: 'Invalid', value: v, detail: 'must be between 1 and 65535, inclusive' });
}

function namedOrNumberedPort(path: string, v: number | string, errs: FieldError[]): void {
  if (typeof v === 'number') portNumber(path, v, errs);
  else if (!isIanaSvcName(v)) {
    errs.push({
      path,
      type: 'Invalid',
      value: v,
      detail: 'must contain at least one letter and be a valid IANA_SVC_NAME',
    });
  }
}

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

const HANDLER_KINDS = ['exec', 'httpGet', 'tcpSocket', 'grpc', 'sleep'] as const;

function validateHandler(
  path: string,
  h: Probe | LifecycleHandler,
  allowed: readonly (typeof HANDLER_KINDS)[number][],
  errs: FieldError[],
): void {
  const set = HANDLER_KINDS.filter((k) => (h as Record<string, unknown>)[k] !== undefined);
  const usable = set.filter((k) => allowed.includes(k));
  for (const k of set) {
    if (!allowed.includes(k))
      errs.push({ path: child(path, k), type: 'Forbidden', detail: 'not supported here' });
  }
  if (usable.length === 0 && set.length === 0) {
    errs.push({ path, type: 'Required', detail: 'must specify a handler type' });
  } else if (usable.length > 1) {
    errs.push({
      path: child(path, usable[1] ?? ''),
      type: 'Forbidden',
      detail: 'may not specify more than 1 handler type',
    });
  }
  if (h.httpGet) {
    namedOrNumberedPort(child(child(path, 'httpGet'), 'port'), h.httpGet.port, errs);
    oneOf(child(child(path, 'httpGet'), 'scheme'), h.httpGet.scheme, ['HTTP', 'HTTPS'], errs);
  }
  if (h.tcpSocket) namedOrNumberedPort(child(child(path, 'tcpSocket'), 'port'), h.tcpSocket.port, errs);
  if (h.exec && !h.exec.command?.length) {
    errs.push({ path: child(child(path, 'exec'), 'command'), type: 'Required' });
  }
}

function validateProbe(
  path: string,
  p: Probe,
  kind: 'liveness' | 'readiness' | 'startup',
  errs: FieldError[],
): void {
  validateHandler(path, p, ['exec', 'httpGet', 'tcpSocket', 'grpc'], errs);
  if ('grpc' in p && p.grpc) portNumber(child(child(path, 'grpc'), 'port'), p.grpc.port, errs);
  atLeast(child(path, 'initialDelaySeconds'), p.initialDelaySeconds, 0, errs);
  atLeast(child(path, 'timeoutSeconds'), p.timeoutSeconds, 1, errs);
  atLeast(child(path, 'periodSeconds'), p.periodSeconds, 1, errs);
  atLeast(child(path, 'successThreshold'), p.successThreshold, 1, errs);
  atLeast(child(path, 'failureThreshold'), p.failureThreshold, 1, errs);
  atLeast(child(path, 'terminationGracePeriodSeconds'), p.terminationGracePeriodSeconds, 1, errs);
  if (kind !== 'readiness' && p.successThreshold !== undefined && p.successThreshold !== 1) {
    errs.push({
      path: child(path, 'successThreshold'),
      type: 'Invalid',
      value: p.successThreshold,
      detail: 'must be 1',
    });
  }
  if (kind === 'readiness' && p.terminationGracePeriodSeconds !== undefined) {
    errs.push({
      path: child(path, 'terminationGracePeriodSeconds'),
      type: 'Invalid',
      value: p.terminationGracePeriodSeconds,
      detail: 'must not be set for readinessProbes',
    });
  }
}

function validatePorts(path: string, ports: ContainerPort[], hostNetwork: boolean, errs: FieldError[]): void {
  const names = new Set<string>();
  ports.forEach((port, i) => {
    const p = index(path, i);
    if (port.name !== undefined) {
      if (!isIanaSvcName(port.name)) {
        errs.push({
          path: child(p, 'name'),
          type: 'Invalid',
          value: port.name,
          detail:
            "must contain at least one letter and be a valid IANA_SVC_NAME (at most 15 characters, lowercase alphanumeric or '-')",
        });
      } else if (names.has(port.name)) {
        errs.push({ path: child(p, 'name'), type: 'Duplicate', value: port.name });
      }
      names.add(port.name);
    }
    if (port.containerPort === undefined) errs.push({ path: child(p, 'containerPort'), type: 'Required' });
    else portNumber(child(p, 'containerPort'), port.containerPort, errs);
    if (port.hostPort !== undefined && port.hostPort !== 0)
      portNumber(child(p, 'hostPort'), port.hostPort, errs);
    oneOf(child(p, 'protocol'), port.protocol, ['SCTP', 'TCP', 'UDP'], errs);
    if (hostNetwork && port.hostPort !== undefined && port.hostPort !== port.containerPort) {
      errs.push({
        path: child(p, 'hostPort'),
        type: 'Invalid',
        value: port.hostPort,
        detail: 'must match `containerPort` when `hostNetwork` is true',
      });
    }
  });
}

function validateContainer(
  path: string,
  c: Container,
  kind: 'init' | 'regular',
  volumes: ReadonlySet<string>,
  hostNetwork: boolean,
  errs: FieldError[],
): void {
  if (!c.name) errs.push({ path: child(path, 'name'), type: 'Required' });
  else dnsLabel(child(path, 'name'), c.name, errs);
  if (!c.image || c.image.trim() === '') errs.push({ path: child(path, 'image'), type: 'Required' });
  else if (c.image !== c.image.trim()) {
    errs.push({
      path: child(path, 'image'),
      type: 'Invalid',
      value: c.image,
      detail: 'must not have leading or trailing whitespace',
    });
  }
  oneOf(child(path, 'imagePullPolicy'), c.imagePullPolicy, ['Always', 'IfNotPresent', 'Never'], errs);
  oneOf(
    child(path, 'terminationMessagePolicy'),
    c.terminationMessagePolicy,
    ['File', 'FallbackToLogsOnError'],
    errs,
  );
  if (c.restartPolicy !== undefined) {
    if (kind === 'init') oneOf(child(path, 'restartPolicy'), c.restartPolicy, ['Always'], errs);
    else
      errs.push({
        path: child(path, 'restartPolicy'),
        type: 'Forbidden',
        detail: 'may not be set for non-init containers',
      });
  }
  validatePorts(child(path, 'ports'), c.ports ?? [], hostNetwork, errs);
  (c.env ?? []).forEach((env, i) => {
    const p = index(child(path, 'env'), i);
    if (!env.name) errs.push({ path: child(p, 'name'), type: 'Required' });
    else if (env.name.includes('=') || !/^[\x20-\x7e]+$/.test(env.name)) {
      errs.push({
        path: child(p, 'name'),
        type: 'Invalid',
        value: env.name,
        detail:
          "a valid environment variable name must consist only of printable ASCII characters other than '='",
      });
    }
    if (env.value && env.valueFrom) {
      errs.push({
        path: child(p, 'valueFrom'),
        type: 'Invalid',
        value: '',
        detail: 'may not be specified when `value` is not empty',
      });
    }
  });
  const mountPaths = new Set<string>();
  (c.volumeMounts ?? []).forEach((m, i) => {
    const p = index(child(path, 'volumeMounts'), i);
    if (!m.name) errs.push({ path: child(p, 'name'), type: 'Required' });
    else if (!volumes.has(m.name)) errs.push({ path: child(p, 'name'), type: 'NotFound', value: m.name });
    if (!m.mountPath) errs.push({ path: child(p, 'mountPath'), type: 'Required' });
    else if (mountPaths.has(m.mountPath)) {
      errs.push({
        path: child(p, 'mountPath'),
        type: 'Invalid',
        value: m.mountPath,
        detail: 'must be unique',
      });
    } else mountPaths.add(m.mountPath);
  });
  const regularInit = kind === 'init' && c.restartPolicy !== 'Always';
  for (const [field, probeKind] of [
    ['livenessProbe', 'liveness'],
    ['readinessProbe', 'readiness'],
    ['startupProbe', 'startup'],
  ] as const) {
    const probe = c[field];
    if (!probe) continue;
    if (regularInit) {
      errs.push({
        path: child(path, field),
        type: 'Forbidden',
        detail: 'may not be set for init containers without restartPolicy=Always',
      });
      continue;
    }
    validateProbe(child(path, field), probe, probeKind, errs);
  }
  if (c.lifecycle) {
    if (regularInit) {
      errs.push({
        path: child(path, 'lifecycle'),
        type: 'Forbidden',
        detail: 'may not be set for init containers without restartPolicy=Always',
      });
    } else {
      for (const h of ['postStart', 'preStop'] as const) {
        const handler = c.lifecycle[h];
        if (handler)
          validateHandler(
            child(child(path, 'lifecycle'), h),
            handler,
            ['exec', 'httpGet', 'tcpSocket', 'sleep'],
            errs,
          );
      }
    }
  }
}

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

function validateVolumes(volumes: Volume[], errs: FieldError[]): Set<string> {
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
