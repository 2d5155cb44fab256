/**
 * The kubelet's cache of Services (upstream NewMainKubelet's service informer), read when building
 * service-link environment variables. Lists and watches `/api/v1/services` in every namespace
 * through a `Reflector` and keeps, per namespace and name, only what the variables need: the
 * cluster IP and the ports. Services without a cluster IP (headless, ExternalName) are not kept;
 * upstream filters them server-side with a `spec.clusterIP!=None` field selector, which a 1.20 API
 * server refuses, so the filter runs here.
 */
import type { ApiClient } from './client-types.ts';
import type { Logger } from '../util/logger.ts';
import { createReflector, type ReflectorOptions } from './reflector.ts';

/** The fields of a Service that service-link variables read (runtime/service-env.ts `Service` accepts it). */
export interface ServiceSummary {
  metadata: { name: string; namespace: string };
  spec: { clusterIP: string; ports: { name?: string; port: number; protocol?: string }[] };
}

/** A Service as the API sends it; only the fields the summary reads. */
interface WireService {
  metadata?: { name?: string; namespace?: string; resourceVersion?: string };
  spec?: {
    clusterIP?: string;
    ports?: { name?: string; port?: number; protocol?: string }[];
  };
}

export interface ServiceInformer {
  /** Starts listing and watching; idempotent. */
  start(): void;
  /** Stops the watch; the cache keeps its last contents. */
  stop(): Promise<void>;
  /** True once the first LIST has completed (stays true across relists). */
  hasSynced(): boolean;
  /** The services of one namespace that have a cluster IP, in no particular order. */
  list(namespace: string): ServiceSummary[];
  /** How many services are cached (all namespaces). */
  size(): number;
}

export type ServiceInformerOptions = { api: ApiClient; logger: Logger } & Pick<
  ReflectorOptions<WireService>,
  'minWatchTimeoutSeconds' | 'quietWatchMs' | 'backoffInitialMs' | 'backoffMaxMs'
>;

/** Upstream IsServiceIPSet. */
function hasClusterIP(ip: string | undefined): ip is string {
  return ip !== undefined && ip !== '' && ip !== 'None';
}

function summarize(s: WireService): ServiceSummary | undefined {
  const name = s.metadata?.name;
  const namespace = s.metadata?.namespace;
  const clusterIP = s.spec?.clusterIP;
  if (!name || !namespace || !hasClusterIP(clusterIP)) return undefined;
  const ports = (s.spec?.ports ?? []).flatMap((p) =>
    typeof p.port === 'number'
      ? [
          {
            port: p.port,
            ...(p.name ? { name: p.name } : {}),
            ...(p.protocol ? { protocol: p.protocol } : {}),
          },
        ]
      : [],
  );
  return { metadata: { name, namespace }, spec: { clusterIP, ports } };
}

export function createServiceInformer(opts: ServiceInformerOptions): ServiceInformer {
  /** namespace → name → summary; empty namespaces are dropped, so the maps shrink with the API. */
  const byNamespace = new Map<string, Map<string, ServiceSummary>>();
  let count = 0;

  function remove(namespace: string, name: string): void {
    const ns = byNamespace.get(namespace);
    if (ns?.delete(name)) {
      count--;
      if (ns.size === 0) byNamespace.delete(namespace);
    }
  }

  function put(s: ServiceSummary): void {
    const { namespace, name } = s.metadata;
    let ns = byNamespace.get(namespace);
    if (!ns) {
      ns = new Map();
      byNamespace.set(namespace, ns);
    }
    if (!ns.has(name)) count++;
    ns.set(name, s);
  }

  const reflector = createReflector<WireService>({
    ...opts,
    path: '/api/v1/services',
    resource: 'services',
    replace(items) {
      byNamespace.clear();
      count = 0;
      for (const item of items) {
        const s = summarize(item);
        if (s) put(s);
      }
    },
    apply(type, obj) {
      const namespace = obj.metadata?.namespace ?? '';
      const name = obj.metadata?.name ?? '';
      const s = type === 'DELETED' ? undefined : summarize(obj);
      // A MODIFIED that lost its cluster IP (e.g. turned ExternalName) leaves the cache too.
      if (s) put(s);
      else remove(namespace, name);
    },
  });

  return {
    start: () => reflector.start(),
    stop: () => reflector.stop(),
    hasSynced: () => reflector.hasSynced(),
    list: (namespace) => [...(byNamespace.get(namespace)?.values() ?? [])],
    size: () => count,
  };
}
