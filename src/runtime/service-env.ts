/**
 * Service-link variables (upstream pkg/kubelet/envvars FromServices and kubelet_pods.go
 * getServiceEnvVarMap): the Docker-link style variables of the master services and, with
 * enableServiceLinks, of the services of the pod's namespace.
 */
import type { Pod } from '../api/types.ts';
import { isStaticPod } from '../api/pod-source.ts';
import type { KeyValue } from './cri/types.ts';
import { envError } from './env-context.ts';

/** A Service in its wire shape; only what service-link variables read (a client-node V1Service fits). */
export interface Service {
  metadata?: { name?: string; namespace?: string };
  spec?: {
    clusterIP?: string;
    ports?: { name?: string; port: number; protocol?: string }[];
  };
}

/**
 * Where service-link variables come from: in cluster mode the Service informer
 * (src/api/service-informer.ts), whose summaries fit `Service`.
 */
export interface ServiceLister {
  /** False until the services were listed once; pods from the API then cannot start (as upstream). */
  hasSynced(): boolean;
  /** The services of one namespace (those without a cluster IP may be left out). */
  list(namespace: string): readonly Service[];
}

/** Upstream metav1.NamespaceDefault (the kubelet's masterServiceNamespace) and masterServices. */
const MASTER_SERVICE_NAMESPACE = 'default';
const MASTER_SERVICES = new Set(['kubernetes']);

/** Upstream makeEnvVariableName: upper case, `-` → `_`. */
function envVariableName(s: string): string {
  return s.replaceAll('-', '_').toUpperCase();
}

/** Upstream IsServiceIPSet: a cluster IP that is neither empty nor `None`. */
function serviceIPSet(s: Service): boolean {
  const ip = s.spec?.clusterIP ?? '';
  return ip !== '' && ip !== 'None';
}

/** Go net.JoinHostPort: brackets around an IPv6 host. */
function joinHostPort(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

/** Upstream envvars.FromServices: the Docker-link style variables of each service, in order. */
export function serviceEnvVars(services: Service[]): KeyValue[] {
  const out: KeyValue[] = [];
  for (const s of services) {
    if (!serviceIPSet(s)) continue;
    const ip = s.spec?.clusterIP ?? '';
    const prefix = envVariableName(s.metadata?.name ?? '');
    const ports = s.spec?.ports ?? [];
    out.push({ key: `${prefix}_SERVICE_HOST`, value: ip });
    const first = ports[0];
    if (first === undefined) continue; // validation forbids it; upstream would index out of range
    out.push({ key: `${prefix}_SERVICE_PORT`, value: String(first.port) });
    for (const p of ports) {
      if (p.name)
        out.push({ key: `${prefix}_SERVICE_PORT_${envVariableName(p.name)}`, value: String(p.port) });
    }
    ports.forEach((p, i) => {
      const proto = (p.protocol || 'TCP').toLowerCase();
      const url = `${proto}://${joinHostPort(ip, p.port)}`;
      if (i === 0) out.push({ key: `${prefix}_PORT`, value: url });
      const pp = `${prefix}_PORT_${p.port}_${proto.toUpperCase()}`;
      out.push(
        { key: pp, value: url },
        { key: `${pp}_PROTO`, value: proto },
        { key: `${pp}_PORT`, value: String(p.port) },
        { key: `${pp}_ADDR`, value: ip },
      );
    });
  }
  return out;
}

/**
 * Upstream getServiceEnvVarMap: the master services of `default` always, and the services of the
 * pod's own namespace when enableServiceLinks (a same-named service of the pod's namespace wins over
 * the master one). Services are taken in name order so the result is deterministic.
 */
export function serviceEnvMap(
  services: Service[],
  namespace: string,
  enableServiceLinks: boolean,
): Map<string, string> {
  const byName = new Map<string, Service>();
  for (const s of services) {
    if (!serviceIPSet(s)) continue;
    const name = s.metadata?.name ?? '';
    const ns = s.metadata?.namespace ?? '';
    if (ns === MASTER_SERVICE_NAMESPACE && MASTER_SERVICES.has(name)) {
      if (!byName.has(name)) byName.set(name, s);
    } else if (ns === namespace && enableServiceLinks) {
      byName.set(name, s);
    }
  }
  const ordered = [...byName.keys()].sort().map((n) => byName.get(n) as Service);
  return new Map(serviceEnvVars(ordered).map((e) => [e.key, e.value]));
}

/**
 * The service-link variables of a pod (upstream makeEnvironmentVariables + getServiceEnvVarMap):
 * none without a lister (standalone); with one, a pod from the API fails while the services have
 * never been listed, so that a kubelet restart does not start pods without KUBERNETES_SERVICE_HOST.
 * Static pods do not wait (they run before, and without, an API server).
 */
export function serviceEnvFor(
  pod: Pod,
  lister: ServiceLister | undefined,
  namespace: string,
): Map<string, string> {
  if (lister === undefined) return new Map();
  if (!isStaticPod(pod) && !lister.hasSynced()) {
    throw envError(
      'Unavailable',
      'services',
      'services have not yet been read at least once, cannot construct envvars',
    );
  }
  const enableServiceLinks = pod.spec.enableServiceLinks ?? true;
  const candidates = [...lister.list(MASTER_SERVICE_NAMESPACE)];
  if (enableServiceLinks && namespace !== MASTER_SERVICE_NAMESPACE)
    candidates.push(...lister.list(namespace));
  return serviceEnvMap(candidates, namespace, enableServiceLinks);
}
