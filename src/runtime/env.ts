/**
 * The container environment as Kubernetes specifies it (upstream kubelet_pods.go
 * makeEnvironmentVariables, podFieldSelectorRuntimeValue, containerResourceRuntimeValue and
 * pkg/kubelet/envvars for service links).
 *
 * Precedence, lowest first: service-link variables, then `envFrom` sources in order, then `env` in
 * order (a later entry of the same name wins). A literal `value` may reference, with `$(NAME)`, any
 * variable defined before it (envFrom, earlier env) or a service variable; `$$` escapes a `$`, and an
 * unknown reference stays verbatim.
 */
import { isIPv4, isIPv6 } from 'node:net';
import type { Container, EnvVar, KubeletPod, Pod } from '../api/types.ts';
import type { Logger } from '../util/logger.ts';
import { abortReason, combineSignals, untilAborted } from '../util/abort.ts';
import { ANNOTATION_CONFIG_SOURCE } from '../config/defaults.ts';
import { KubeletError, describeError, isKubeletError, type ErrorCode } from '../util/errors.ts';
import type { ConfigMap, Secret, VolumeObjectSource } from '../volume/index.ts';
import { containerResourceValue, podFieldValue } from '../volume/downward-api.ts';
import type { KeyValue } from './cri/types.ts';
import { expandVars } from './expand.ts';

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

/** Something about the environment worth an Event on the pod, that does not stop the container. */
export interface EnvWarning {
  /** Upstream event reason, e.g. `InvalidEnvironmentVariableNames`. */
  reason: string;
  message: string;
}

export interface EnvContext {
  pod: KubeletPod;
  container: Container;
  /** status.hostIP at container start (the node's primary IP). */
  hostIP?: string;
  /** status.hostIPs; defaults to `[hostIP]`. */
  hostIPs?: string[];
  /** status.podIPs at container start (the sandbox IPs; the host IPs for a host-network pod). */
  podIPs: string[];
  nodeName: string;
  /** Secrets/ConfigMaps from the API (cluster mode); undefined standalone → valueFrom of those fails clearly. */
  objects?: VolumeObjectSource;
  /** Node allocatable for resourceFieldRef when the container has no limit. */
  nodeAllocatable: { cpu: string; memory: string; 'ephemeral-storage'?: string };
  /**
   * Services for service-link env vars. Cluster mode passes the Service informer; omitted
   * (standalone, no API server) the pod gets no service variables, and no error (as upstream).
   */
  services?: ServiceLister;
  /** Where warnings go (an Event on the pod, typically); without it they are logged through `logger`. */
  onWarning?: (warning: EnvWarning) => void;
  logger?: Logger;
  signal?: AbortSignal;
}

/** Upstream metav1.NamespaceDefault (the kubelet's masterServiceNamespace) and masterServices. */
const MASTER_SERVICE_NAMESPACE = 'default';
const MASTER_SERVICES = new Set(['kubernetes']);
const REASON_INVALID_ENV_NAMES = 'InvalidEnvironmentVariableNames';
/** How long one ConfigMap/Secret read may take before the container start fails (and is retried). */
const OBJECT_READ_TIMEOUT_MS = 30_000;

const OP = (name: string) => `env ${name}`;

function fail(code: ErrorCode, name: string, message: string, cause?: unknown): KubeletError {
  return new KubeletError(code, OP(name), message, cause === undefined ? undefined : { cause });
}

// ---- service links (upstream pkg/kubelet/envvars) ----

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

/** Upstream kubetypes.IsStaticPod: a config source annotation other than the API server's. */
function isStaticPod(pod: Pod): boolean {
  const source = pod.metadata.annotations?.[ANNOTATION_CONFIG_SOURCE];
  return source !== undefined && source !== 'api';
}

/**
 * The service-link variables of a pod (upstream makeEnvironmentVariables + getServiceEnvVarMap):
 * none without a lister (standalone); with one, a pod from the API fails while the services have
 * never been listed, so that a kubelet restart does not start pods without KUBERNETES_SERVICE_HOST.
 * Static pods do not wait (they run before, and without, an API server).
 */
function serviceEnvFor(ctx: EnvContext, namespace: string): Map<string, string> {
  const lister = ctx.services;
  if (lister === undefined) return new Map();
  if (!isStaticPod(ctx.pod) && !lister.hasSynced()) {
    throw fail(
      'Unavailable',
      'services',
      'services have not yet been read at least once, cannot construct envvars',
    );
  }
  const enableServiceLinks = ctx.pod.spec.enableServiceLinks ?? true;
  const candidates = [...lister.list(MASTER_SERVICE_NAMESPACE)];
  if (enableServiceLinks && namespace !== MASTER_SERVICE_NAMESPACE)
    candidates.push(...lister.list(namespace));
  return serviceEnvMap(candidates, namespace, enableServiceLinks);
}

// ---- names (upstream validation.IsEnvVarName, as the 1.20 kubelet applied it to envFrom keys) ----

const ENV_VAR_NAME = /^[-._a-zA-Z][-._a-zA-Z0-9]*$/;

export function isEnvVarName(s: string): boolean {
  return ENV_VAR_NAME.test(s) && s !== '.' && !s.startsWith('..');
}

// ---- fieldRef (upstream podFieldSelectorRuntimeValue + ConvertDownwardAPIFieldLabel) ----

/** Field paths the API accepts for a pod (downward API conversion); others are rejected. */
const CONVERTIBLE = new Set([
  'metadata.annotations',
  'metadata.labels',
  'metadata.name',
  'metadata.namespace',
  'metadata.uid',
  'spec.nodeName',
  'spec.restartPolicy',
  'spec.serviceAccountName',
  'spec.schedulerName',
  'status.phase',
  'status.hostIP',
  'status.hostIPs',
  'status.podIP',
  'status.podIPs',
  'spec.terminationGracePeriodSeconds',
]);

/** Upstream sortPodIPs: at most one IP per family, the node's family first. */
export function sortPodIPs(podIPs: string[], hostIP: string | undefined): string[] {
  const v6First = hostIP !== undefined && isIPv6(hostIP);
  const [primary, secondary] = v6First ? [isIPv6, isIPv4] : [isIPv4, isIPv6];
  const out: string[] = [];
  const a = podIPs.find((ip) => primary(ip));
  const b = podIPs.find((ip) => secondary(ip));
  if (a !== undefined) out.push(a);
  if (b !== undefined) out.push(b);
  return out;
}

function fieldRefValue(ctx: EnvContext, name: string, ref: Record<string, unknown>): string {
  const apiVersion = str(ref.apiVersion) || 'v1'; // the API server defaults it to v1
  let path = str(ref.fieldPath);
  if (apiVersion !== 'v1') throw fail('InvalidArgument', name, `unsupported pod version: ${apiVersion}`);
  const sub = /^(.+?)\['(.*)'\]$/s.exec(path);
  if (sub) {
    if (sub[1] !== 'metadata.annotations' && sub[1] !== 'metadata.labels') {
      throw fail('InvalidArgument', name, `field label does not support subscript: ${path}`);
    }
  } else if (path === 'spec.host') {
    path = 'spec.nodeName'; // backwards compatibility with old v1 clients
  } else if (!CONVERTIBLE.has(path)) {
    throw fail('InvalidArgument', name, `field label not supported: ${path}`);
  }
  const { pod } = ctx;
  const podIPs = sortPodIPs(ctx.podIPs, ctx.hostIP);
  const hostIPs = ctx.hostIPs ?? (ctx.hostIP !== undefined ? [ctx.hostIP] : []);
  switch (path) {
    case 'spec.nodeName':
      return pod.spec.nodeName || ctx.nodeName;
    case 'spec.serviceAccountName':
      return pod.spec.serviceAccountName ?? pod.spec.serviceAccount ?? '';
    case 'status.hostIP':
    case 'status.hostIPs':
      if (hostIPs.length === 0) {
        throw fail('FailedPrecondition', name, `${path}: the node's IP address is not known`);
      }
      return path === 'status.hostIP' ? (hostIPs[0] ?? '') : hostIPs.join(',');
    case 'status.podIP':
      return podIPs[0] ?? '';
    case 'status.podIPs':
      return podIPs.join(',');
  }
  try {
    return podFieldValue(pod, path);
  } catch (err) {
    throw fail('InvalidArgument', name, describeError(err), err);
  }
}

// ---- resourceFieldRef (upstream containerResourceRuntimeValue with node-allocatable defaults) ----

function resourceFieldRefValue(ctx: EnvContext, name: string, ref: Record<string, unknown>): string {
  const containerName = str(ref.containerName);
  const d = ref.divisor;
  const divisor = typeof d === 'string' || typeof d === 'number' ? String(d) : undefined;
  // No containerName: the container being started (which may not be in pod.spec, e.g. a copy).
  const pod: Pod =
    containerName === ''
      ? { ...ctx.pod, spec: { ...ctx.pod.spec, containers: [ctx.container], initContainers: [] } }
      : ctx.pod;
  try {
    return containerResourceValue(
      pod,
      containerName === '' ? ctx.container.name : containerName,
      str(ref.resource),
      divisor,
      () => ctx.nodeAllocatable,
    );
  } catch (err) {
    throw fail('InvalidArgument', name, describeError(err), err);
  }
}

// ---- ConfigMaps and Secrets ----

type Kind = 'configMap' | 'secret';

/** Per call, each object is read once however many variables name it (as upstream). */
class ObjectCache {
  readonly #ctx: EnvContext;
  readonly #namespace: string;
  readonly #configMaps = new Map<string, ConfigMap | undefined>();
  readonly #secrets = new Map<string, Secret | undefined>();

  constructor(ctx: EnvContext, namespace: string) {
    this.#ctx = ctx;
    this.#namespace = namespace;
  }

  /**
   * The object, or undefined when NotFound. Standalone (no API) fails with FailedPrecondition naming
   * what needed the API; any other read failure is rethrown naming the variable.
   */
  async get(
    kind: Kind,
    objName: string,
    varName: string,
    what: string,
  ): Promise<Record<string, string> | undefined> {
    const { objects, signal } = this.#ctx;
    const ref = `${this.#namespace}/${objName}`;
    if (objects === undefined) {
      throw fail(
        'FailedPrecondition',
        varName,
        `${what} needs an API server (cluster mode): couldn't get ${kind} ${ref}`,
      );
    }
    const cache = kind === 'configMap' ? this.#configMaps : this.#secrets;
    if (!cache.has(objName)) {
      const readSignal = combineSignals([signal], OBJECT_READ_TIMEOUT_MS);
      try {
        const read =
          kind === 'configMap'
            ? objects.getConfigMap(this.#namespace, objName, readSignal)
            : objects.getSecret(this.#namespace, objName, readSignal);
        cache.set(objName, await untilAborted(read, readSignal));
      } catch (err) {
        if (signal?.aborted) throw abortReason(signal);
        const code = readSignal.aborted ? 'DeadlineExceeded' : isKubeletError(err) ? err.code : 'Unavailable';
        throw fail(code, varName, `couldn't get ${kind} ${ref}: ${describeError(err)}`, err);
      }
    }
    const obj = cache.get(objName);
    if (obj === undefined) return undefined;
    const data = obj.data ?? {};
    if (kind === 'configMap') return data;
    return Object.fromEntries(
      Object.entries(data).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]),
    );
  }
}

/** Upstream's NotFound wording from the kubelet's configmap/secret managers. */
function notFound(kind: Kind, objName: string): string {
  return `${kind === 'configMap' ? 'configmap' : 'secret'} "${objName}" not found`;
}

function str(v: unknown): string {
  return typeof v === 'string' ? v : '';
}

function obj(v: unknown): Record<string, unknown> | undefined {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
    ? (v as Record<string, unknown>)
    : undefined;
}

async function keyRefValue(
  cache: ObjectCache,
  namespace: string,
  kind: Kind,
  name: string,
  ref: Record<string, unknown>,
): Promise<string | undefined> {
  const objName = str(ref.name);
  const key = str(ref.key);
  const optional = ref.optional === true;
  const what = kind === 'configMap' ? 'configMapKeyRef' : 'secretKeyRef';
  const data = await cache.get(kind, objName, name, what);
  if (data === undefined) {
    if (optional) return undefined;
    throw fail('NotFound', name, notFound(kind, objName));
  }
  if (!Object.hasOwn(data, key)) {
    if (optional) return undefined;
    const label = kind === 'configMap' ? 'ConfigMap' : 'Secret';
    throw fail('NotFound', name, `couldn't find key ${key} in ${label} ${namespace}/${objName}`);
  }
  return data[key];
}

// ---- the whole environment ----

/**
 * Resolves the environment of `ctx.container`, returning warnings (invalid envFrom keys, skipped as
 * the 1.20 kubelet did) instead of reporting them. Throws a KubeletError naming the variable (or the
 * envFrom source) on any failure; the runtime turns that into CreateContainerConfigError.
 */
export async function resolveEnvironment(
  ctx: EnvContext,
): Promise<{ envs: KeyValue[]; warnings: EnvWarning[] }> {
  ctx.signal?.throwIfAborted();
  const { pod, container } = ctx;
  const namespace = pod.metadata.namespace || 'default';
  const serviceEnv = serviceEnvFor(ctx, namespace);
  const cache = new ObjectCache(ctx, namespace);
  const env = new Map<string, string>();
  const warnings: EnvWarning[] = [];

  for (const [i, raw] of (container.envFrom ?? []).entries()) {
    const src = obj(raw) ?? {};
    const prefix = str(src.prefix);
    const cmRef = obj(src.configMapRef);
    const secRef = obj(src.secretRef);
    const ref = cmRef ?? secRef;
    if (ref === undefined) {
      throw fail('InvalidArgument', `envFrom[${i}]`, 'needs configMapRef or secretRef');
    }
    const kind: Kind = cmRef ? 'configMap' : 'secret';
    const objName = str(ref.name);
    const data = await cache.get(kind, objName, `envFrom[${i}]`, `envFrom ${kind}Ref`);
    if (data === undefined) {
      if (ref.optional === true) continue;
      throw fail('NotFound', `envFrom[${i}]`, notFound(kind, objName));
    }
    const invalid: string[] = [];
    for (const k of Object.keys(data).sort()) {
      const key = prefix + k;
      if (!isEnvVarName(key)) {
        invalid.push(key);
        continue;
      }
      env.set(key, data[k] ?? '');
    }
    if (invalid.length > 0) {
      warnings.push({
        reason: REASON_INVALID_ENV_NAMES,
        message: `Keys [${invalid.join(', ')}] from the EnvFrom ${kind} ${namespace}/${objName} were skipped since they are considered invalid environment variable names.`,
      });
    }
  }

  const lookup = (n: string) => env.get(n) ?? serviceEnv.get(n);
  for (const e of container.env ?? []) {
    const value = await envVarValue(ctx, cache, namespace, e, lookup);
    if (value !== undefined) env.set(e.name, value);
  }

  const envs = [...env].map(([key, value]) => ({ key, value }));
  for (const [key, value] of serviceEnv) if (!env.has(key)) envs.push({ key, value });
  return { envs, warnings };
}

async function envVarValue(
  ctx: EnvContext,
  cache: ObjectCache,
  namespace: string,
  e: EnvVar,
  lookup: (name: string) => string | undefined,
): Promise<string | undefined> {
  // As upstream: a non-empty literal wins over valueFrom (validation forbids having both).
  if (e.value !== undefined && e.value !== '') return expandVars(e.value, lookup);
  const from = e.valueFrom;
  if (from === undefined) return '';
  const fieldRef = obj(from.fieldRef);
  if (fieldRef) return fieldRefValue(ctx, e.name, fieldRef);
  const resourceFieldRef = obj(from.resourceFieldRef);
  if (resourceFieldRef) return resourceFieldRefValue(ctx, e.name, resourceFieldRef);
  const cmRef = obj(from.configMapKeyRef);
  if (cmRef) return keyRefValue(cache, namespace, 'configMap', e.name, cmRef);
  const secRef = obj(from.secretKeyRef);
  if (secRef) return keyRefValue(cache, namespace, 'secret', e.name, secRef);
  // Upstream would set "" for a source it does not know; say so instead of hiding it.
  const kinds = Object.keys(from).join(', ') || '(empty)';
  throw fail('Unimplemented', e.name, `valueFrom source not supported: ${kinds}`);
}

/**
 * The container environment (upstream makeEnvironmentVariables). Warnings go to `ctx.onWarning`, or
 * are logged when it is absent. Throws a KubeletError naming the variable on errors.
 */
export async function makeEnvironment(ctx: EnvContext): Promise<KeyValue[]> {
  const { envs, warnings } = await resolveEnvironment(ctx);
  for (const w of warnings) {
    if (ctx.onWarning) ctx.onWarning(w);
    else
      ctx.logger?.warn(w.message, {
        pod: `${ctx.pod.metadata.namespace}/${ctx.pod.metadata.name}`,
        podUID: ctx.pod.metadata.uid,
        container: ctx.container.name,
        reason: w.reason,
      });
  }
  return envs;
}

/**
 * Literal values only, synchronously: what can be computed without the runtime context (no service
 * links, no valueFrom, no envFrom). Anything else fails with Unimplemented rather than silently
 * dropping a variable. The fallback of generateContainerConfig when no computed env is given.
 */
export function literalEnvironment(container: Container): KeyValue[] {
  const env = new Map<string, string>();
  for (const e of container.env ?? []) {
    if (e.valueFrom !== undefined && !(e.value !== undefined && e.value !== '')) {
      throw fail(
        'Unimplemented',
        e.name,
        `valueFrom needs the runtime's environment context (container ${container.name})`,
      );
    }
    env.set(
      e.name,
      expandVars(e.value ?? '', (n) => env.get(n)),
    );
  }
  if ((container.envFrom ?? []).length > 0) {
    throw fail(
      'Unimplemented',
      'envFrom',
      `envFrom needs the runtime's environment context (container ${container.name})`,
    );
  }
  return [...env].map(([key, value]) => ({ key, value }));
}
