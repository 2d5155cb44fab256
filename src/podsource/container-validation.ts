/**
 * Validation of one container (upstream validateContainers / validateInitContainers and what they
 * call): name and image, ports, env names, volume mounts (mount propagation included), probes and
 * lifecycle handlers.
 */
import type { Container, ContainerPort, LifecycleHandler, Probe } from '../api/types.ts';
import { child, index, type FieldError } from './field-errors.ts';
import { atLeast, dnsLabel, isIanaSvcName, namedOrNumberedPort, oneOf, portNumber } from './field-checks.ts';

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

/** Upstream's supported mount propagations, sorted as its sets.List prints them. */
const MOUNT_PROPAGATIONS = ['Bidirectional', 'HostToContainer', 'None'] as const;

/**
 * Upstream validateMountPropagation: a known mode, and Bidirectional (mounts made in the container
 * propagate back to the host) only for a privileged container.
 */
function validateMountPropagation(path: string, mode: string, c: Container, errs: FieldError[]): void {
  oneOf(path, mode, MOUNT_PROPAGATIONS, errs);
  if (mode === 'Bidirectional' && c.securityContext?.privileged !== true) {
    errs.push({
      path,
      type: 'Forbidden',
      detail: 'Bidirectional mount propagation is available only to privileged containers',
    });
  }
}

/** Appends the problems of container `c` at `path`; `volumes` are the pod's volume names. */
export function validateContainer(
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
    // Upstream's path for this one is the list's, without the index (fldPath.Child("mountPropagation")).
    if (m.mountPropagation !== undefined)
      validateMountPropagation(
        child(child(path, 'volumeMounts'), 'mountPropagation'),
        m.mountPropagation,
        c,
        errs,
      );
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
