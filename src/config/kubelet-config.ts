/**
 * KubeletConfiguration (kubelet.config.k8s.io/v1beta1): the file format, upstream defaulting,
 * validation, and the frozen `KubeletConfig` the rest of the kubelet reads.
 *
 * Pipeline: YAML/JSON file → `decodeKubeletConfiguration` (schema: types, unknown fields) →
 * `compileConfig` (upstream zero-value defaulting of file values, explicit flags on top, validation of
 * the merged result, every problem reported at once) → deep-frozen `KubeletConfig`.
 */
import { readFile } from 'node:fs/promises';
import { isIP } from 'node:net';
import { hostname as osHostname } from 'node:os';
import path from 'node:path';
import { LineCounter, parseDocument } from 'yaml';
import { KubeletError, describeError, type ErrorCode } from '../util/errors.ts';
import {
  CLIENT_GO_DEFAULT_BURST,
  CLIENT_GO_DEFAULT_QPS,
  DEFAULT_ADDRESS,
  DEFAULT_CONTAINER_RUNTIME_ENDPOINT,
  DEFAULT_EVENT_BURST,
  DEFAULT_EVENT_RECORD_QPS,
  DEFAULT_FILE_CHECK_FREQUENCY_MS,
  DEFAULT_HEALTHZ_BIND_ADDRESS,
  DEFAULT_HEALTHZ_PORT,
  DEFAULT_HTTP_CHECK_FREQUENCY_MS,
  DEFAULT_KUBE_API_BURST,
  DEFAULT_KUBE_API_QPS,
  DEFAULT_MAX_PARALLEL_IMAGE_PULLS,
  DEFAULT_MAX_PODS,
  DEFAULT_NODE_LEASE_DURATION_SECONDS,
  DEFAULT_NODE_STATUS_MAX_IMAGES,
  DEFAULT_NODE_STATUS_REPORT_FREQUENCY_MS,
  DEFAULT_NODE_STATUS_UPDATE_FREQUENCY_MS,
  DEFAULT_POD_LOGS_DIR,
  DEFAULT_PORT,
  DEFAULT_READ_ONLY_PORT,
  DEFAULT_REGISTER_NODE,
  DEFAULT_REGISTRY_BURST,
  DEFAULT_REGISTRY_PULL_QPS,
  DEFAULT_ROOT_DIR,
  DEFAULT_RUNTIME_REQUEST_TIMEOUT_MS,
  DEFAULT_SECCOMP_DEFAULT,
  DEFAULT_SYNC_FREQUENCY_MS,
  RUN_ONCE_MAX_RETRIES,
  RUN_ONCE_RETRY_DELAY_BACKOFF,
  RUN_ONCE_RETRY_DELAY_MS,
} from './defaults.ts';
import { tryParseGoDuration } from './duration.ts';
import {
  DEFAULT_CGROUP_DRIVER,
  DEFAULT_CGROUP_ROOT,
  DEFAULT_CGROUPS_PER_QOS,
  DEFAULT_CPU_CFS_QUOTA,
  DEFAULT_CPU_CFS_QUOTA_PERIOD_MS,
  DEFAULT_ENFORCE_NODE_ALLOCATABLE,
  DEFAULT_POD_PIDS_LIMIT,
} from './defaults.ts';
import { sysctlPatternProblems } from '../kubelet/sysctl-admission.ts';
import {
  compileServerSettings,
  decodeAuthFields,
  type RawServerConfiguration,
  type ServerFlagValues,
  type ServerSettings,
} from './server-config.ts';

export const KUBELET_CONFIG_API_VERSION = 'kubelet.config.k8s.io/v1beta1';
export const KUBELET_CONFIG_KIND = 'KubeletConfiguration';

export type LogFormat = 'json' | 'text';

export type TaintEffect = 'NoSchedule' | 'PreferNoSchedule' | 'NoExecute';

/** The effects a node taint may have (core/v1 TaintEffect). */
export const TAINT_EFFECTS: readonly TaintEffect[] = ['NoSchedule', 'PreferNoSchedule', 'NoExecute'];

/** A taint the kubelet puts on its Node when it registers it (core/v1 Taint without timeAdded). */
export interface Taint {
  readonly key: string;
  /** Absent when empty. */
  readonly value?: string;
  readonly effect: TaintEffect;
}

/** A taint as written in the file or on the command line, before validation. */
export interface RawTaint {
  key: string;
  value?: string;
  /** Empty when the file leaves it out (validation then rejects it). */
  effect: string;
}

/** Ours, not upstream's (upstream defaults to "text"): DESIGN.md asks for JSON logs by default. */
export const DEFAULT_LOG_FORMAT: LogFormat = 'json';

/**
 * Upstream run-once keeps checking each pod with a delay that starts at runOnceRetryDelay and
 * doubles, at most runOnceMaxRetries times: 1+2+…+512 s ≈ 17 min is the longest it waits for a pod.
 */
export const DEFAULT_RUN_ONCE_TIMEOUT_MS = Array.from(
  { length: RUN_ONCE_MAX_RETRIES },
  (_, i) => RUN_ONCE_RETRY_DELAY_MS * RUN_ONCE_RETRY_DELAY_BACKOFF ** i,
).reduce((a, b) => a + b, 0);

/**
 * The fields of a KubeletConfiguration file that tskubelet implements, as written in the file:
 * durations are Go duration strings, absent fields are `undefined`. Relative `staticPodPath` and
 * `podLogsDir` are already resolved against the file's directory (upstream does the same).
 */
export interface RawKubeletConfiguration extends RawServerConfiguration {
  staticPodPath?: string;
  staticPodURL?: string;
  staticPodURLHeader?: Record<string, string[]>;
  syncFrequency?: string;
  fileCheckFrequency?: string;
  httpCheckFrequency?: string;
  nodeStatusUpdateFrequency?: string;
  runtimeRequestTimeout?: string;
  maxPods?: number;
  healthzPort?: number;
  healthzBindAddress?: string;
  containerRuntimeEndpoint?: string;
  podLogsDir?: string;
  address?: string;
  port?: number;
  readOnlyPort?: number;
  runOnce?: boolean;
  seccompDefault?: boolean;
  allowedUnsafeSysctls?: string[];
  logging?: { format?: string; verbosity?: number };
  kubeAPIQPS?: number;
  kubeAPIBurst?: number;
  eventRecordQPS?: number;
  eventBurst?: number;
  nodeStatusReportFrequency?: string;
  nodeLeaseDurationSeconds?: number;
  registerNode?: boolean;
  registerWithTaints?: RawTaint[];
  clusterDomain?: string;
  clusterDNS?: string[];
  cgroupsPerQOS?: boolean;
  cgroupRoot?: string;
  cgroupDriver?: string;
  podPidsLimit?: number;
  cpuCFSQuota?: boolean;
  cpuCFSQuotaPeriod?: string;
  enforceNodeAllocatable?: string[];
  serializeImagePulls?: boolean;
  maxParallelImagePulls?: number;
  registryPullQPS?: number;
  registryBurst?: number;
  nodeStatusMaxImages?: number;
}

/** A decoded configuration file and what was accepted but ignored in it. */
export interface DecodedConfigFile {
  readonly path: string;
  readonly raw: RawKubeletConfiguration;
  /** Known upstream fields tskubelet does not implement yet (accepted, ignored), one line each. */
  readonly warnings: readonly string[];
}

/**
 * Values given explicitly on the command line. A key is present only when its flag was given;
 * present keys override the file, absent keys never do. Durations are Go duration strings.
 */
export type FlagValues = Omit<
  RawKubeletConfiguration,
  // Serving and auth settings come as `server` (their flags are shaped differently).
  | keyof RawServerConfiguration
  // File-only: upstream has no flag for these.
  | 'podLogsDir'
  | 'logging'
  | 'nodeStatusReportFrequency'
  | 'nodeLeaseDurationSeconds'
  | 'maxParallelImagePulls'
> & {
  // Flag-only (not KubeletConfiguration fields upstream).
  rootDir?: string;
  /** `--node-labels`: labels for the Node when it registers. */
  nodeLabels?: Record<string, string>;
  hostnameOverride?: string;
  nodeIP?: string;
  kubeconfig?: string;
  verbosity?: number;
  logFormat?: string;
  /** tskubelet-only: how long run-once mode waits for pods to run. */
  runOnceTimeout?: string;
  /** The kubelet API's flags (`--anonymous-auth`, `--client-ca-file`, `--tls-cert-file`, …). */
  server?: ServerFlagValues;
};

/** The compiled configuration: everything defaulted and validated, durations in ms, deep-frozen. */
export interface KubeletConfig {
  /** The `--config` file this came from, if any. */
  readonly configFile?: string;
  readonly staticPodPath?: string;
  readonly staticPodURL?: string;
  readonly staticPodURLHeader: Readonly<Record<string, readonly string[]>>;
  readonly fileCheckFrequencyMs: number;
  readonly httpCheckFrequencyMs: number;
  readonly syncFrequencyMs: number;
  readonly maxPods: number;
  /** 0 disables the healthz server. */
  readonly healthzPort: number;
  readonly healthzBindAddress: string;
  /** Always `unix:///absolute/path`. */
  readonly containerRuntimeEndpoint: string;
  readonly runtimeRequestTimeoutMs: number;
  readonly nodeStatusUpdateFrequencyMs: number;
  readonly podLogsDir: string;
  /** The kubelet API: HTTPS on address:port; plain-HTTP read-only endpoints on readOnlyPort (0 = off). */
  readonly address: string;
  readonly port: number;
  readonly readOnlyPort: number;
  /** TLS, authentication, authorization, debugging handlers and container log rotation. */
  readonly server: ServerSettings;
  /** Absolute. */
  readonly rootDir: string;
  readonly hostnameOverride?: string;
  /** hostnameOverride or the machine's hostname, trimmed and lowercased (upstream nodeutil.GetHostname). */
  readonly nodeName: string;
  /** One IP, or two of different families (dual-stack), comma-separated as given. */
  readonly nodeIP?: string;
  readonly runOnce: boolean;
  readonly runOnceTimeoutMs: number;
  /** Containers that set no seccomp profile run with RuntimeDefault instead of Unconfined. */
  readonly seccompDefault: boolean;
  /** Unsafe sysctls pods may set besides the safe ones: names or `prefix*`, all namespaced. */
  readonly allowedUnsafeSysctls: readonly string[];
  readonly verbosity: number;
  readonly logFormat: LogFormat;
  readonly kubeconfig?: string;
  /**
   * Request rate and burst of the main API client (everything except events and node heartbeats).
   * Always > 0: a configured 0 means client-go's fallback (5 QPS / burst 10), which is what an
   * upstream kubelet gets for 0, since it hands the value to client-go unchanged.
   */
  readonly kubeAPIQPS: number;
  readonly kubeAPIBurst: number;
  /** Rate and burst of event creation; same rules as kubeAPIQPS (0 → 5 QPS / burst 10, as upstream). */
  readonly eventRecordQPS: number;
  readonly eventBurst: number;
  /** How often node status is posted when nothing changed (it is posted at once on a change). */
  readonly nodeStatusReportFrequencyMs: number;
  /** Duration set on the node's Lease in kube-node-lease; > 0. */
  readonly nodeLeaseDurationSeconds: number;
  /** Create the Node object in the API server (cluster mode only). */
  readonly registerNode: boolean;
  /** Taints the Node is created with; validated, no duplicate key+effect. */
  readonly registerWithTaints: readonly Taint[];
  /** Labels the Node is created with (`--node-labels`); validated, namespace rules applied. */
  readonly nodeLabels: Readonly<Record<string, string>>;
  /** DNS domain of the cluster (e.g. `cluster.local`) for ClusterFirst pods' search list; '' = none. */
  readonly clusterDomain: string;
  /** Nameserver IPs of ClusterFirst pods; empty: they fall back to the host's resolv.conf. */
  readonly clusterDNS: readonly string[];
  /** Pod cgroups per QoS class under `<cgroupRoot>/kubepods`; off: the runtime's default parent. */
  readonly cgroupsPerQOS: boolean;
  /** Absolute cgroupfs name the kubepods hierarchy is created under ('/' when not set). */
  readonly cgroupRoot: string;
  /** Only cgroupfs is implemented; systemd is refused by validation. */
  readonly cgroupDriver: 'cgroupfs';
  /** pids.max of each pod cgroup; 0 or less means none (-1 by default). */
  readonly podPidsLimit: number;
  /** CFS quota on pod cgroups for cpu limits (upstream cpuCFSQuota). */
  readonly cpuCFSQuota: boolean;
  /** CFS period of pod cgroups; 1 ms to 1 s. */
  readonly cpuCFSQuotaPeriodMs: number;
  /** Node allocatable enforcement: ['pods'] or [] ('none' is stored as []). */
  readonly enforceNodeAllocatable: readonly string[];
  /** Pull one image at a time (then maxParallelImagePulls is 1). */
  readonly serializeImagePulls: boolean;
  /**
   * Image pulls running at once across all pods. Absent: no limit (serializeImagePulls false and
   * no maxParallelImagePulls, as upstream). Neither field set: DEFAULT_MAX_PARALLEL_IMAGE_PULLS,
   * tskubelet's deliberate default (upstream pulls one at a time).
   */
  readonly maxParallelImagePulls?: number;
  /** Image pulls started per second; 0 = no limit. */
  readonly registryPullQPS: number;
  readonly registryBurst: number;
  /** Images reported in the Node's status.images, largest first; -1 = all. */
  readonly nodeStatusMaxImages: number;
}

export interface CompiledConfig {
  readonly config: KubeletConfig;
  /** Things the operator should know but that do not stop the kubelet; log each at warn level. */
  readonly warnings: readonly string[];
}

export interface CompileOptions {
  /** The machine's hostname; defaults to `os.hostname()`. */
  hostname?: () => string;
  /** Base for relative flag paths (`--root-dir`); defaults to `process.cwd()`. */
  cwd?: string;
}

/** The fields we implement; `satisfies` keeps this list and `RawKubeletConfiguration` in step. */
const SUPPORTED_FIELDS = new Set<string>(
  Object.keys({
    staticPodPath: true,
    staticPodURL: true,
    staticPodURLHeader: true,
    syncFrequency: true,
    fileCheckFrequency: true,
    httpCheckFrequency: true,
    nodeStatusUpdateFrequency: true,
    runtimeRequestTimeout: true,
    maxPods: true,
    healthzPort: true,
    healthzBindAddress: true,
    containerRuntimeEndpoint: true,
    podLogsDir: true,
    address: true,
    port: true,
    readOnlyPort: true,
    runOnce: true,
    seccompDefault: true,
    allowedUnsafeSysctls: true,
    logging: true,
    kubeAPIQPS: true,
    kubeAPIBurst: true,
    eventRecordQPS: true,
    eventBurst: true,
    nodeStatusReportFrequency: true,
    nodeLeaseDurationSeconds: true,
    registerNode: true,
    registerWithTaints: true,
    clusterDomain: true,
    clusterDNS: true,
    cgroupsPerQOS: true,
    cgroupRoot: true,
    cgroupDriver: true,
    podPidsLimit: true,
    cpuCFSQuota: true,
    cpuCFSQuotaPeriod: true,
    enforceNodeAllocatable: true,
    serializeImagePulls: true,
    maxParallelImagePulls: true,
    registryPullQPS: true,
    registryBurst: true,
    nodeStatusMaxImages: true,
    enableServer: true,
    tlsCertFile: true,
    tlsPrivateKeyFile: true,
    tlsCipherSuites: true,
    tlsMinVersion: true,
    authentication: true,
    authorization: true,
    enableDebuggingHandlers: true,
    enableContentionProfiling: true,
    enableSystemLogHandler: true,
    streamingConnectionIdleTimeout: true,
    containerLogMaxSize: true,
    containerLogMaxFiles: true,
  } satisfies Record<keyof RawKubeletConfiguration, true>),
);

/**
 * KubeletConfiguration v1beta1 fields (k8s.io/kubelet/config/v1beta1 types.go) that tskubelet does
 * not implement yet. Upstream's strict decoding accepts them, so a real config file carrying them
 * loads here too, with a warning; anything not in either list is a typo and fails.
 */
const NOT_IMPLEMENTED_FIELDS: ReadonlySet<string> = new Set([
  'tlsCurvePreferences',
  'rotateCertificates',
  'serverTLSBootstrap',
  'imagePullCredentialsVerificationPolicy',
  'preloadedImagesVerificationAllowlist',
  'oomScoreAdj',
  'imageMinimumGCAge',
  'imageMaximumGCAge',
  'imageGCHighThresholdPercent',
  'imageGCLowThresholdPercent',
  'volumeStatsAggPeriod',
  'kubeletCgroups',
  'systemCgroups',
  'cpuManagerPolicy',
  'singleProcessOOMKill',
  'cpuManagerPolicyOptions',
  'cpuManagerReconcilePeriod',
  'draManagerReconcilePeriod',
  'memoryManagerPolicy',
  'topologyManagerPolicy',
  'topologyManagerScope',
  'topologyManagerPolicyOptions',
  'qosReserved',
  'hairpinMode',
  'podCIDR',
  'resolvConf',
  'maxOpenFiles',
  'contentType',
  'evictionHard',
  'evictionSoft',
  'evictionSoftGracePeriod',
  'evictionPressureTransitionPeriod',
  'evictionMaxPodGracePeriod',
  'evictionMinimumReclaim',
  'mergeDefaultEvictionSettings',
  'podsPerCore',
  'enableControllerAttachDetach',
  'protectKernelDefaults',
  'makeIPTablesUtilChains',
  'iptablesMasqueradeBit',
  'iptablesDropBit',
  'featureGates',
  'failSwapOn',
  'memorySwap',
  'containerLogMaxWorkers',
  'containerLogMonitorInterval',
  'configMapAndSecretChangeDetectionStrategy',
  'systemReserved',
  'kubeReserved',
  'reservedSystemCPUs',
  'showHiddenMetricsForVersion',
  'systemReservedCgroup',
  'kubeReservedCgroup',
  'volumePluginDir',
  'providerID',
  'kernelMemcgNotification',
  'enableSystemLogQuery',
  'shutdownGracePeriod',
  'shutdownGracePeriodCriticalPods',
  'shutdownGracePeriodByPodPriority',
  'crashLoopBackOff',
  'reservedMemory',
  'enableProfilingHandler',
  'enableDebugFlagsHandler',
  'memoryThrottlingFactor',
  'memoryReservationPolicy',
  'tracing',
  'localStorageCapacityIsolation',
  'imageServiceEndpoint',
  'failCgroupV1',
  'userNamespaces',
]);

/** component-base LoggingConfiguration fields; we implement `format` and `verbosity`. */
const LOGGING_NOT_IMPLEMENTED: ReadonlySet<string> = new Set(['flushFrequency', 'vmodule', 'options']);

// ---------------------------------------------------------------------------------------------
// Loading and decoding

/**
 * Reads a KubeletConfiguration file (YAML 1.2 or JSON). Throws `KubeletError` with op
 * `load config <path>`: `NotFound` when the file is missing, `InvalidArgument` for a syntax error
 * (with file:line:column), a wrong apiVersion/kind, an unknown field or a field of the wrong type
 * (every field problem is listed, each naming its field).
 */
export async function loadConfigFile(filePath: string): Promise<DecodedConfigFile> {
  const op = `load config ${filePath}`;
  let text: string;
  try {
    text = await readFile(filePath, 'utf8');
  } catch (err) {
    const code: ErrorCode = (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'NotFound' : 'InvalidArgument';
    throw new KubeletError(code, op, describeError(err), { cause: err });
  }
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { strict: true, uniqueKeys: true, prettyErrors: false, lineCounter });
  const [firstError] = doc.errors;
  if (firstError) {
    const { line, col } = lineCounter.linePos(firstError.pos[0]);
    throw new KubeletError('InvalidArgument', op, `line ${line}, column ${col}: ${firstError.message}`, {
      cause: firstError,
    });
  }
  let value: unknown;
  try {
    value = doc.toJS({ maxAliasCount: 100 });
  } catch (err) {
    throw new KubeletError('InvalidArgument', op, describeError(err), { cause: err });
  }
  const decoded = decodeKubeletConfiguration(value, filePath);
  const yamlWarnings = doc.warnings.map((w) => {
    const { line, col } = lineCounter.linePos(w.pos[0]);
    return `${filePath}:${line}:${col}: ${w.message}`;
  });
  return { ...decoded, warnings: [...yamlWarnings, ...decoded.warnings] };
}

/**
 * Checks a parsed document against the schema and returns the fields we implement. `filePath`
 * names the source in errors and is the base for relative paths in the file.
 */
export function decodeKubeletConfiguration(doc: unknown, filePath: string): DecodedConfigFile {
  const op = `load config ${filePath}`;
  if (!isPlainObject(doc)) {
    throw new KubeletError(
      'InvalidArgument',
      op,
      `expected a ${KUBELET_CONFIG_KIND} object, got ${typeName(doc)}`,
    );
  }
  const errors: string[] = [];
  const warnings: string[] = [];

  const { apiVersion, kind } = doc;
  if (apiVersion === undefined) {
    errors.push(`missing field "apiVersion" (want "${KUBELET_CONFIG_API_VERSION}")`);
  } else if (apiVersion !== KUBELET_CONFIG_API_VERSION) {
    errors.push(
      `apiVersion ${JSON.stringify(apiVersion)} is not supported (want "${KUBELET_CONFIG_API_VERSION}")`,
    );
  }
  if (kind === undefined) {
    errors.push(`missing field "kind" (want "${KUBELET_CONFIG_KIND}")`);
  } else if (kind !== KUBELET_CONFIG_KIND) {
    errors.push(`kind ${JSON.stringify(kind)} is not supported (want "${KUBELET_CONFIG_KIND}")`);
  }

  for (const key of Object.keys(doc)) {
    if (key === 'apiVersion' || key === 'kind' || SUPPORTED_FIELDS.has(key)) continue;
    if (NOT_IMPLEMENTED_FIELDS.has(key)) {
      warnings.push(`${filePath}: field "${key}" is not implemented by tskubelet yet and is ignored`);
    } else {
      errors.push(`unknown field "${key}"`);
    }
  }

  const r = new FieldReader(doc, errors);
  const raw: RawKubeletConfiguration = {
    staticPodPath: r.string('staticPodPath'),
    staticPodURL: r.string('staticPodURL'),
    staticPodURLHeader: r.headerMap('staticPodURLHeader'),
    syncFrequency: r.duration('syncFrequency'),
    fileCheckFrequency: r.duration('fileCheckFrequency'),
    httpCheckFrequency: r.duration('httpCheckFrequency'),
    nodeStatusUpdateFrequency: r.duration('nodeStatusUpdateFrequency'),
    runtimeRequestTimeout: r.duration('runtimeRequestTimeout'),
    maxPods: r.int32('maxPods'),
    healthzPort: r.int32('healthzPort'),
    healthzBindAddress: r.string('healthzBindAddress'),
    containerRuntimeEndpoint: r.string('containerRuntimeEndpoint'),
    podLogsDir: r.string('podLogsDir'),
    address: r.string('address'),
    port: r.int32('port'),
    readOnlyPort: r.int32('readOnlyPort'),
    runOnce: r.bool('runOnce'),
    seccompDefault: r.bool('seccompDefault'),
    allowedUnsafeSysctls: r.stringList('allowedUnsafeSysctls'),
    logging: decodeLogging(doc.logging, errors, warnings, filePath),
    kubeAPIQPS: r.int32('kubeAPIQPS'),
    kubeAPIBurst: r.int32('kubeAPIBurst'),
    eventRecordQPS: r.int32('eventRecordQPS'),
    eventBurst: r.int32('eventBurst'),
    nodeStatusReportFrequency: r.duration('nodeStatusReportFrequency'),
    nodeLeaseDurationSeconds: r.int32('nodeLeaseDurationSeconds'),
    registerNode: r.bool('registerNode'),
    registerWithTaints: r.taints('registerWithTaints'),
    clusterDomain: r.string('clusterDomain'),
    clusterDNS: r.stringList('clusterDNS'),
    cgroupsPerQOS: r.bool('cgroupsPerQOS'),
    cgroupRoot: r.string('cgroupRoot'),
    cgroupDriver: r.string('cgroupDriver'),
    podPidsLimit: r.int64('podPidsLimit'),
    cpuCFSQuota: r.bool('cpuCFSQuota'),
    cpuCFSQuotaPeriod: r.duration('cpuCFSQuotaPeriod'),
    enforceNodeAllocatable: r.stringList('enforceNodeAllocatable'),
    serializeImagePulls: r.bool('serializeImagePulls'),
    maxParallelImagePulls: r.int32('maxParallelImagePulls'),
    registryPullQPS: r.int32('registryPullQPS'),
    registryBurst: r.int32('registryBurst'),
    nodeStatusMaxImages: r.int32('nodeStatusMaxImages'),
    enableServer: r.bool('enableServer'),
    tlsCertFile: r.string('tlsCertFile'),
    tlsPrivateKeyFile: r.string('tlsPrivateKeyFile'),
    tlsCipherSuites: r.stringList('tlsCipherSuites'),
    tlsMinVersion: r.string('tlsMinVersion'),
    ...decodeAuthFields(doc, errors, (obj, prefix) => new FieldReader(obj, errors, prefix)),
    enableDebuggingHandlers: r.bool('enableDebuggingHandlers'),
    enableContentionProfiling: r.bool('enableContentionProfiling'),
    enableSystemLogHandler: r.bool('enableSystemLogHandler'),
    streamingConnectionIdleTimeout: r.duration('streamingConnectionIdleTimeout'),
    containerLogMaxSize: r.string('containerLogMaxSize'),
    containerLogMaxFiles: r.int32('containerLogMaxFiles'),
  };
  if (errors.length > 0) throw new KubeletError('InvalidArgument', op, errors.join('; '));

  // Upstream resolves relative paths in the file against the file's directory.
  const baseDir = path.dirname(path.resolve(filePath));
  if (raw.staticPodPath && !path.isAbsolute(raw.staticPodPath)) {
    raw.staticPodPath = path.resolve(baseDir, raw.staticPodPath);
  }
  if (raw.podLogsDir && !path.isAbsolute(raw.podLogsDir))
    raw.podLogsDir = path.resolve(baseDir, raw.podLogsDir);
  const resolve = (p: string | undefined) => (p && !path.isAbsolute(p) ? path.resolve(baseDir, p) : p);
  raw.tlsCertFile = resolve(raw.tlsCertFile);
  raw.tlsPrivateKeyFile = resolve(raw.tlsPrivateKeyFile);
  const x509 = raw.authentication?.x509;
  if (x509?.clientCAFile) x509.clientCAFile = resolve(x509.clientCAFile);

  return { path: filePath, raw: withoutUndefined(raw), warnings };
}

function decodeLogging(
  value: unknown,
  errors: string[],
  warnings: string[],
  filePath: string,
): RawKubeletConfiguration['logging'] {
  if (value === undefined || value === null) return undefined;
  if (!isPlainObject(value)) {
    errors.push(`field "logging": expected an object, got ${typeName(value)}`);
    return undefined;
  }
  for (const key of Object.keys(value)) {
    if (key === 'format' || key === 'verbosity') continue;
    if (LOGGING_NOT_IMPLEMENTED.has(key)) {
      warnings.push(`${filePath}: field "logging.${key}" is not implemented by tskubelet yet and is ignored`);
    } else {
      errors.push(`unknown field "logging.${key}"`);
    }
  }
  const r = new FieldReader(value, errors, 'logging.');
  return withoutUndefined({ format: r.string('format'), verbosity: r.int32('verbosity') });
}

/** Reads typed fields of one object, recording a message naming the field for each wrong type. */
class FieldReader {
  readonly #obj: Record<string, unknown>;
  readonly #errors: string[];
  readonly #prefix: string;

  constructor(obj: Record<string, unknown>, errors: string[], prefix = '') {
    this.#obj = obj;
    this.#errors = errors;
    this.#prefix = prefix;
  }

  string(key: string): string | undefined {
    return this.#take(key, 'a string', (v): v is string => typeof v === 'string');
  }

  /** []string */
  stringList(key: string): string[] | undefined {
    const value = this.#obj[key];
    if (value === undefined || value === null) return undefined;
    if (Array.isArray(value) && value.every((v): v is string => typeof v === 'string')) return [...value];
    this.#wrong(key, 'a list of strings', value);
    return undefined;
  }

  bool(key: string): boolean | undefined {
    return this.#take(key, 'a boolean', (v): v is boolean => typeof v === 'boolean');
  }

  int32(key: string): number | undefined {
    return this.#take(
      key,
      'an integer',
      (v): v is number => typeof v === 'number' && Number.isInteger(v) && v >= -(2 ** 31) && v < 2 ** 31,
    );
  }

  /** int64 (within JavaScript's safe integers). */
  int64(key: string): number | undefined {
    return this.#take(
      key,
      'an integer',
      (v): v is number => typeof v === 'number' && Number.isSafeInteger(v),
    );
  }

  /** metav1.Duration: a Go duration string, never a number. Syntax is checked when compiling. */
  duration(key: string): string | undefined {
    return this.#take(key, 'a duration string such as "1m30s"', (v): v is string => typeof v === 'string');
  }

  /** map[string][]string */
  headerMap(key: string): Record<string, string[]> | undefined {
    const value = this.#obj[key];
    if (value === undefined || value === null) return undefined;
    if (!isPlainObject(value)) {
      this.#wrong(key, 'a map of header name to a list of strings', value);
      return undefined;
    }
    const out: Record<string, string[]> = {};
    let ok = true;
    for (const [name, values] of Object.entries(value)) {
      if (Array.isArray(values) && values.every((v) => typeof v === 'string')) {
        out[name] = [...values];
      } else {
        this.#wrong(`${key}.${name}`, 'a list of strings', values);
        ok = false;
      }
    }
    return ok ? out : undefined;
  }

  /** []core/v1.Taint; `timeAdded` is refused (upstream validation does the same). */
  taints(key: string): RawTaint[] | undefined {
    const value = this.#obj[key];
    if (value === undefined || value === null) return undefined;
    if (!Array.isArray(value)) {
      this.#wrong(key, 'a list of taints ({key, value, effect})', value);
      return undefined;
    }
    const out: RawTaint[] = [];
    let ok = true;
    value.forEach((item: unknown, i) => {
      const at = `${key}[${i}]`;
      if (!isPlainObject(item)) {
        this.#wrong(at, 'a taint ({key, value, effect})', item);
        ok = false;
        return;
      }
      const before = this.#errors.length;
      for (const sub of Object.keys(item)) {
        if (sub === 'timeAdded') {
          this.#errors.push(`field "${this.#prefix}${at}.timeAdded": must not be set`);
        } else if (sub !== 'key' && sub !== 'value' && sub !== 'effect') {
          this.#errors.push(`unknown field "${this.#prefix}${at}.${sub}"`);
        }
      }
      const r = new FieldReader(item, this.#errors, `${this.#prefix}${at}.`);
      const taint: RawTaint = { key: r.string('key') ?? '', effect: r.string('effect') ?? '' };
      const taintValue = r.string('value');
      if (taintValue !== undefined) taint.value = taintValue;
      if (this.#errors.length > before) ok = false;
      else out.push(taint);
    });
    return ok ? out : undefined;
  }

  #take<T>(key: string, want: string, is: (v: unknown) => v is T): T | undefined {
    const value = this.#obj[key];
    // As in Go's JSON decoding, an explicit null leaves the field unset.
    if (value === undefined || value === null) return undefined;
    if (is(value)) return value;
    this.#wrong(key, want, value);
    return undefined;
  }

  #wrong(key: string, want: string, got: unknown): void {
    this.#errors.push(
      `field "${this.#prefix}${key}": expected ${want}, got ${typeName(got)} ${preview(got)}`,
    );
  }
}

// ---------------------------------------------------------------------------------------------
// Defaulting, merging, validation

/**
 * Merges a decoded file (may be undefined: flags and defaults only) and explicitly given flags into
 * the compiled configuration. File values get upstream's v1beta1 defaulting (a zero or empty value
 * means "use the default"); explicit flags are applied after defaulting, so `--max-pods=0` means 0.
 * Every invalid value is collected and thrown together as one `KubeletError('InvalidArgument')`
 * naming each field (`syncFrequency` when it came from the file, `--sync-frequency` from a flag).
 */
export function compileConfig(
  file: DecodedConfigFile | undefined,
  flags: FlagValues = {},
  options: CompileOptions = {},
): CompiledConfig {
  const raw = file?.raw ?? {};
  const errors: string[] = [];
  const warnings: string[] = [...(file?.warnings ?? [])];

  /** A flag value if given, else the file value (zero/empty → default), else the default. */
  function choose<T>(
    flagValue: T | undefined,
    flagName: string,
    fileValue: T | undefined,
    field: string,
    fallback: T,
    isZero: (v: T) => boolean,
  ): { value: T; label: string } {
    if (flagValue !== undefined) return { value: flagValue, label: `--${flagName}` };
    if (fileValue !== undefined && !isZero(fileValue)) return { value: fileValue, label: field };
    return { value: fallback, label: field };
  }
  const emptyString = (v: string): boolean => v === '';
  const zeroNumber = (v: number): boolean => v === 0;
  const never = (): boolean => false;

  /** Durations: parse, default a zero file value, and require > 0. */
  function duration(
    flagValue: string | undefined,
    flagName: string,
    fileValue: string | undefined,
    field: string,
    fallbackMs: number,
  ): number {
    const chosen = flagValue !== undefined ? flagValue : fileValue;
    const label = flagValue !== undefined ? `--${flagName}` : field;
    if (chosen === undefined) return fallbackMs;
    const parsed = tryParseGoDuration(chosen);
    if (!parsed.ok) {
      errors.push(`${label}: ${parsed.reason}`);
      return fallbackMs;
    }
    if (flagValue === undefined && parsed.ms === 0) return fallbackMs;
    if (parsed.ms <= 0) errors.push(`${label}: ${JSON.stringify(chosen)} must be greater than 0`);
    return parsed.ms;
  }

  const syncFrequencyMs = duration(
    flags.syncFrequency,
    'sync-frequency',
    raw.syncFrequency,
    'syncFrequency',
    DEFAULT_SYNC_FREQUENCY_MS,
  );
  const fileCheckFrequencyMs = duration(
    flags.fileCheckFrequency,
    'file-check-frequency',
    raw.fileCheckFrequency,
    'fileCheckFrequency',
    DEFAULT_FILE_CHECK_FREQUENCY_MS,
  );
  const httpCheckFrequencyMs = duration(
    flags.httpCheckFrequency,
    'http-check-frequency',
    raw.httpCheckFrequency,
    'httpCheckFrequency',
    DEFAULT_HTTP_CHECK_FREQUENCY_MS,
  );
  const nodeStatusUpdateFrequencyMs = duration(
    flags.nodeStatusUpdateFrequency,
    'node-status-update-frequency',
    raw.nodeStatusUpdateFrequency,
    'nodeStatusUpdateFrequency',
    DEFAULT_NODE_STATUS_UPDATE_FREQUENCY_MS,
  );
  const runtimeRequestTimeoutMs = duration(
    flags.runtimeRequestTimeout,
    'runtime-request-timeout',
    raw.runtimeRequestTimeout,
    'runtimeRequestTimeout',
    DEFAULT_RUNTIME_REQUEST_TIMEOUT_MS,
  );
  const runOnceTimeoutMs = duration(
    flags.runOnceTimeout,
    'runonce-timeout',
    undefined,
    'runOnceTimeout',
    DEFAULT_RUN_ONCE_TIMEOUT_MS,
  );

  // maxPods: int32, zero in the file means the default; must not be negative.
  const maxPods = choose(flags.maxPods, 'max-pods', raw.maxPods, 'maxPods', DEFAULT_MAX_PODS, zeroNumber);
  if (maxPods.value < 0) errors.push(`${maxPods.label}: ${maxPods.value} must not be a negative number`);

  // healthzPort is a pointer upstream: an explicit 0 in the file disables the endpoint.
  const healthzPort = choose(
    flags.healthzPort,
    'healthz-port',
    raw.healthzPort,
    'healthzPort',
    DEFAULT_HEALTHZ_PORT,
    never,
  );
  checkPort(healthzPort, true, errors);
  const port = choose(flags.port, 'port', raw.port, 'port', DEFAULT_PORT, zeroNumber);
  checkPort(port, false, errors);
  const readOnlyPort = choose(
    flags.readOnlyPort,
    'read-only-port',
    raw.readOnlyPort,
    'readOnlyPort',
    DEFAULT_READ_ONLY_PORT,
    never,
  );
  checkPort(readOnlyPort, true, errors);

  const healthzBindAddress = choose(
    flags.healthzBindAddress,
    'healthz-bind-address',
    raw.healthzBindAddress,
    'healthzBindAddress',
    DEFAULT_HEALTHZ_BIND_ADDRESS,
    emptyString,
  );
  checkIP(healthzBindAddress, errors);
  const address = choose(flags.address, 'address', raw.address, 'address', DEFAULT_ADDRESS, emptyString);
  checkIP(address, errors);

  const endpoint = choose(
    flags.containerRuntimeEndpoint,
    'container-runtime-endpoint',
    raw.containerRuntimeEndpoint,
    'containerRuntimeEndpoint',
    DEFAULT_CONTAINER_RUNTIME_ENDPOINT,
    emptyString,
  );
  const containerRuntimeEndpoint = normalizeRuntimeEndpoint(endpoint, errors, warnings);

  const podLogsDir = raw.podLogsDir ? raw.podLogsDir : DEFAULT_POD_LOGS_DIR;
  checkPodLogsDir(podLogsDir, errors);

  const staticPodPath = choose(
    flags.staticPodPath,
    'pod-manifest-path',
    raw.staticPodPath,
    'staticPodPath',
    '',
    never,
  );
  const staticPodURL = choose(
    flags.staticPodURL,
    'manifest-url',
    raw.staticPodURL,
    'staticPodURL',
    '',
    never,
  );
  if (staticPodURL.value !== '') checkURL(staticPodURL, errors);
  const headers = choose(
    flags.staticPodURLHeader,
    'manifest-url-header',
    raw.staticPodURLHeader,
    'staticPodURLHeader',
    {},
    never,
  );
  checkHeaders(headers, errors);

  const cwd = options.cwd ?? process.cwd();
  let rootDir = DEFAULT_ROOT_DIR;
  if (flags.rootDir !== undefined) {
    if (flags.rootDir.trim() === '') errors.push('--root-dir: must not be empty');
    else rootDir = path.resolve(cwd, flags.rootDir);
  }

  // nodeutil.GetHostname: the override if given, else the hostname; trimmed, lowercased, non-empty.
  const hostnameOverride = flags.hostnameOverride;
  const nameSource =
    hostnameOverride !== undefined && hostnameOverride !== '' ? '--hostname-override' : 'hostname';
  const rawName = nameSource === 'hostname' ? (options.hostname ?? osHostname)() : (hostnameOverride ?? '');
  const nodeName = rawName.trim().toLowerCase();
  if (nodeName === '') {
    errors.push(`${nameSource}: empty node name is invalid`);
  } else if (!isDNS1123Subdomain(nodeName)) {
    warnings.push(
      `node name ${JSON.stringify(nodeName)} (from ${nameSource}) is not a valid DNS-1123 subdomain; ` +
        'the API server will reject its Node and mirror pods',
    );
  }

  if (flags.nodeIP !== undefined) checkNodeIP(flags.nodeIP, errors);

  const verbosity = flags.verbosity ?? raw.logging?.verbosity ?? 0;
  const verbosityLabel = flags.verbosity !== undefined ? '--v' : 'logging.verbosity';
  if (!Number.isInteger(verbosity) || verbosity < 0) {
    errors.push(`${verbosityLabel}: ${verbosity} must be a non-negative integer`);
  }
  const formatValue = flags.logFormat ?? (raw.logging?.format || DEFAULT_LOG_FORMAT);
  const formatLabel = flags.logFormat !== undefined ? '--logging-format' : 'logging.format';
  let logFormat: LogFormat = DEFAULT_LOG_FORMAT;
  if (formatValue === 'json' || formatValue === 'text') logFormat = formatValue;
  else errors.push(`${formatLabel}: ${JSON.stringify(formatValue)} is not supported (want "json" or "text")`);

  if (flags.kubeconfig !== undefined && flags.kubeconfig.trim() === '') {
    errors.push('--kubeconfig: must not be empty when given');
  }

  // API client limits. The QPS fields are pointers upstream (an explicit 0 in the file stays 0),
  // the bursts are not (0 in the file means the default). Upstream hands all four to client-go
  // unchanged, and client-go replaces a 0 with its own fallback; that is resolved here.
  const kubeAPIQPS = clientLimit(
    choose(flags.kubeAPIQPS, 'kube-api-qps', raw.kubeAPIQPS, 'kubeAPIQPS', DEFAULT_KUBE_API_QPS, never),
    CLIENT_GO_DEFAULT_QPS,
    errors,
  );
  const kubeAPIBurst = clientLimit(
    choose(
      flags.kubeAPIBurst,
      'kube-api-burst',
      raw.kubeAPIBurst,
      'kubeAPIBurst',
      DEFAULT_KUBE_API_BURST,
      zeroNumber,
    ),
    CLIENT_GO_DEFAULT_BURST,
    errors,
  );
  const eventRecordQPS = clientLimit(
    choose(
      flags.eventRecordQPS,
      'event-qps',
      raw.eventRecordQPS,
      'eventRecordQPS',
      DEFAULT_EVENT_RECORD_QPS,
      never,
    ),
    CLIENT_GO_DEFAULT_QPS,
    errors,
  );
  const eventBurst = clientLimit(
    choose(flags.eventBurst, 'event-burst', raw.eventBurst, 'eventBurst', DEFAULT_EVENT_BURST, zeroNumber),
    CLIENT_GO_DEFAULT_BURST,
    errors,
  );

  // Upstream defaulting: a file that sets nodeStatusUpdateFrequency but not
  // nodeStatusReportFrequency gets the update frequency as report frequency (backward
  // compatibility). Flags are applied after defaulting upstream, so the flag does not do this.
  const fileUpdate =
    raw.nodeStatusUpdateFrequency === undefined
      ? undefined
      : tryParseGoDuration(raw.nodeStatusUpdateFrequency);
  const reportFallbackMs =
    fileUpdate?.ok && fileUpdate.ms > 0 ? fileUpdate.ms : DEFAULT_NODE_STATUS_REPORT_FREQUENCY_MS;
  const nodeStatusReportFrequencyMs = duration(
    undefined,
    '',
    raw.nodeStatusReportFrequency,
    'nodeStatusReportFrequency',
    reportFallbackMs,
  );

  const nodeLeaseDurationSeconds = choose(
    undefined,
    '',
    raw.nodeLeaseDurationSeconds,
    'nodeLeaseDurationSeconds',
    DEFAULT_NODE_LEASE_DURATION_SECONDS,
    zeroNumber,
  ).value;
  if (nodeLeaseDurationSeconds <= 0) {
    errors.push(`nodeLeaseDurationSeconds: ${nodeLeaseDurationSeconds} must be greater than 0`);
  }

  // registerNode is a pointer upstream: an explicit false in the file is kept.
  const registerNode = flags.registerNode ?? raw.registerNode ?? DEFAULT_REGISTER_NODE;
  const registerWithTaints = checkTaints(
    choose(
      flags.registerWithTaints,
      'register-with-taints',
      raw.registerWithTaints,
      'registerWithTaints',
      [],
      never,
    ),
    errors,
  );
  const nodeLabels = flags.nodeLabels ?? {};
  checkNodeLabels(nodeLabels, errors);
  const clusterDomain = choose(
    flags.clusterDomain,
    'cluster-domain',
    raw.clusterDomain,
    'clusterDomain',
    '',
    emptyString,
  );
  const clusterDNS = choose(flags.clusterDNS, 'cluster-dns', raw.clusterDNS, 'clusterDNS', [], never);
  checkClusterDNS(clusterDomain, clusterDNS, errors);
  const podCgroups = podCgroupSettings(flags, raw, errors);
  const seccompDefault = flags.seccompDefault ?? raw.seccompDefault ?? DEFAULT_SECCOMP_DEFAULT;
  const unsafeSysctls = choose(
    flags.allowedUnsafeSysctls,
    'allowed-unsafe-sysctls',
    raw.allowedUnsafeSysctls,
    'allowedUnsafeSysctls',
    [],
    never,
  );
  // Upstream refuses to start with such a list (sysctl.NewAllowlist); reported with the rest here.
  for (const problem of sysctlPatternProblems(unsafeSysctls.value)) {
    errors.push(`${unsafeSysctls.label}: ${problem}`);
  }

  const imagePulls = imagePullSettings(flags, raw, errors, warnings);
  // nodeStatusMaxImages is a pointer upstream: an explicit 0 in the file (report none) is kept.
  const nodeStatusMaxImages = choose(
    flags.nodeStatusMaxImages,
    'node-status-max-images',
    raw.nodeStatusMaxImages,
    'nodeStatusMaxImages',
    DEFAULT_NODE_STATUS_MAX_IMAGES,
    never,
  );
  if (nodeStatusMaxImages.value < -1) {
    errors.push(`${nodeStatusMaxImages.label}: ${nodeStatusMaxImages.value} must be -1 or greater`);
  }

  const server = compileServerSettings(flags.server ?? {}, raw, errors, warnings);

  if (errors.length > 0) {
    const op = file ? `validate kubelet configuration (file ${file.path}, flags)` : 'validate kubelet flags';
    throw new KubeletError('InvalidArgument', op, errors.join('; '));
  }

  const config: KubeletConfig = withoutUndefined({
    configFile: file?.path,
    staticPodPath: staticPodPath.value || undefined,
    staticPodURL: staticPodURL.value || undefined,
    staticPodURLHeader: headers.value,
    fileCheckFrequencyMs,
    httpCheckFrequencyMs,
    syncFrequencyMs,
    maxPods: maxPods.value,
    healthzPort: healthzPort.value,
    healthzBindAddress: healthzBindAddress.value,
    containerRuntimeEndpoint,
    runtimeRequestTimeoutMs,
    nodeStatusUpdateFrequencyMs,
    podLogsDir,
    address: address.value,
    port: port.value,
    readOnlyPort: readOnlyPort.value,
    server,
    rootDir,
    hostnameOverride: hostnameOverride?.trim() || undefined,
    nodeName,
    nodeIP: flags.nodeIP,
    runOnce: flags.runOnce ?? raw.runOnce ?? false,
    runOnceTimeoutMs,
    seccompDefault,
    allowedUnsafeSysctls: unsafeSysctls.value,
    verbosity,
    logFormat,
    kubeconfig: flags.kubeconfig,
    kubeAPIQPS,
    kubeAPIBurst,
    eventRecordQPS,
    eventBurst,
    nodeStatusReportFrequencyMs,
    nodeLeaseDurationSeconds,
    registerNode,
    registerWithTaints,
    nodeLabels,
    clusterDomain: clusterDomain.value,
    clusterDNS: clusterDNS.value,
    ...podCgroups,
    ...imagePulls,
    nodeStatusMaxImages: nodeStatusMaxImages.value,
  });
  return { config: deepFreeze(structuredClone(config)), warnings };
}

/**
 * clusterDNS entries must be IP addresses and clusterDomain a DNS-1123 subdomain. Stricter than
 * upstream, which skips a bad clusterDNS entry with a log line and takes any domain: a typo here
 * would otherwise reach every pod's resolv.conf silently.
 */
function checkClusterDNS(
  domain: { value: string; label: string },
  servers: { value: string[]; label: string },
  errors: string[],
): void {
  if (domain.value !== '' && !isDNS1123Subdomain(domain.value)) {
    errors.push(
      `${domain.label}: ${JSON.stringify(domain.value)} is not a valid DNS domain (lowercase DNS-1123 subdomain)`,
    );
  }
  for (const ip of servers.value) {
    if (isIP(ip) === 0) errors.push(`${servers.label}: ${JSON.stringify(ip)} is not a valid IP address`);
  }
}

type ImagePullSettings = Pick<
  KubeletConfig,
  'serializeImagePulls' | 'maxParallelImagePulls' | 'registryPullQPS' | 'registryBurst'
>;

/**
 * serializeImagePulls, maxParallelImagePulls, registryPullQPS and registryBurst (upstream v1beta1
 * defaulting and validation). serializeImagePulls and maxParallelImagePulls are pointers defaulted
 * together: an unset serializeImagePulls is true when maxParallelImagePulls is unset or below 2,
 * else false; serializeImagePulls false without maxParallelImagePulls means no limit. The one
 * deliberate difference: with neither field (nor --serialize-image-pulls) set, pulls run in
 * parallel, at most DEFAULT_MAX_PARALLEL_IMAGE_PULLS at once (upstream: one at a time).
 * registryPullQPS is a pointer (an explicit 0 = no limit), registryBurst is not (0 = default).
 */
function imagePullSettings(
  flags: FlagValues,
  raw: RawKubeletConfiguration,
  errors: string[],
  warnings: string[],
): ImagePullSettings {
  const maxParallel = raw.maxParallelImagePulls;
  if (maxParallel !== undefined && maxParallel < 1) {
    errors.push(`maxParallelImagePulls: ${maxParallel} must be a positive number`);
  }
  const serializeGiven = flags.serializeImagePulls ?? raw.serializeImagePulls;
  const serializeLabel =
    flags.serializeImagePulls !== undefined ? '--serialize-image-pulls' : 'serializeImagePulls';
  const serializeImagePulls = serializeGiven ?? (maxParallel !== undefined && maxParallel < 2);
  if (serializeImagePulls && maxParallel !== undefined && maxParallel > 1) {
    errors.push(
      `maxParallelImagePulls: ${maxParallel} cannot be larger than 1 unless ${serializeLabel} is set to false`,
    );
  }
  let maxParallelImagePulls: number | undefined;
  if (serializeImagePulls) maxParallelImagePulls = 1;
  else if (maxParallel !== undefined) maxParallelImagePulls = maxParallel;
  else if (serializeGiven === undefined) maxParallelImagePulls = DEFAULT_MAX_PARALLEL_IMAGE_PULLS;

  const qpsFlag = flags.registryPullQPS;
  const qps = qpsFlag ?? raw.registryPullQPS ?? DEFAULT_REGISTRY_PULL_QPS;
  const qpsLabel = qpsFlag !== undefined ? '--registry-qps' : 'registryPullQPS';
  if (qps < 0) errors.push(`${qpsLabel}: ${qps} must not be a negative number`);
  const burstFlag = flags.registryBurst;
  const burst = burstFlag ?? (raw.registryBurst || DEFAULT_REGISTRY_BURST);
  const burstLabel = burstFlag !== undefined ? '--registry-burst' : 'registryBurst';
  if (burst < 0) errors.push(`${burstLabel}: ${burst} must not be a negative number`);
  if (burst === 0 && qps > 0) {
    warnings.push(
      `${burstLabel}: 0 with ${qpsLabel} ${qps} would refuse every pull upstream ("pull QPS exceeded"); ` +
        'tskubelet uses a burst of 1',
    );
  }
  return {
    serializeImagePulls,
    ...(maxParallelImagePulls !== undefined ? { maxParallelImagePulls } : {}),
    registryPullQPS: qps,
    registryBurst: burst,
  };
}

/**
 * cgroupsPerQOS, cgroupRoot, cgroupDriver, podPidsLimit, cpuCFSQuota, cpuCFSQuotaPeriod and
 * enforceNodeAllocatable: upstream defaults (pointer fields keep an explicit false, 0 or [] from
 * the file) and validation. The systemd driver and system-reserved/kube-reserved enforcement are
 * refused: tskubelet does not implement them. cpuCFSQuotaPeriod is accepted in upstream's range
 * (1ms–1s) without upstream's CustomCPUCFSQuotaPeriod feature gate.
 */
function podCgroupSettings(
  flags: FlagValues,
  raw: RawKubeletConfiguration,
  errors: string[],
): Pick<
  KubeletConfig,
  | 'cgroupsPerQOS'
  | 'cgroupRoot'
  | 'cgroupDriver'
  | 'podPidsLimit'
  | 'cpuCFSQuota'
  | 'cpuCFSQuotaPeriodMs'
  | 'enforceNodeAllocatable'
> {
  const label = (flag: string, field: string, fromFlag: boolean) => (fromFlag ? `--${flag}` : field);
  const cgroupsPerQOS = flags.cgroupsPerQOS ?? raw.cgroupsPerQOS ?? DEFAULT_CGROUPS_PER_QOS;

  const driver = flags.cgroupDriver ?? (raw.cgroupDriver || DEFAULT_CGROUP_DRIVER);
  const driverLabel = label('cgroup-driver', 'cgroupDriver', flags.cgroupDriver !== undefined);
  if (driver === 'systemd') {
    errors.push(
      `${driverLabel}: "systemd" is not supported by tskubelet, only "cgroupfs" is ` +
        "(the container runtime must use cgroupfs too, e.g. containerd's SystemdCgroup = false)",
    );
  } else if (driver !== 'cgroupfs') {
    errors.push(`${driverLabel}: ${JSON.stringify(driver)} is not a cgroup driver (want "cgroupfs")`);
  }

  // cmd/kubelet: an empty cgroup root becomes "/" (with cgroupsPerQOS; without, it is unused).
  const rootValue = flags.cgroupRoot ?? raw.cgroupRoot ?? '';
  const rootLabel = label('cgroup-root', 'cgroupRoot', flags.cgroupRoot !== undefined);
  if (rootValue !== '' && !rootValue.startsWith('/')) {
    errors.push(
      `${rootLabel}: ${JSON.stringify(rootValue)} must be an absolute cgroup name such as "/" or "/pods"`,
    );
  }
  const cgroupRoot = rootValue === '' ? DEFAULT_CGROUP_ROOT : cleanPath(rootValue);

  const periodValue = flags.cpuCFSQuotaPeriod ?? raw.cpuCFSQuotaPeriod;
  const periodLabel = label(
    'cpu-cfs-quota-period',
    'cpuCFSQuotaPeriod',
    flags.cpuCFSQuotaPeriod !== undefined,
  );
  let cpuCFSQuotaPeriodMs = DEFAULT_CPU_CFS_QUOTA_PERIOD_MS;
  if (periodValue !== undefined) {
    const parsed = tryParseGoDuration(periodValue);
    if (!parsed.ok) errors.push(`${periodLabel}: ${parsed.reason}`);
    else if (parsed.ms < 1 || parsed.ms > 1000) {
      errors.push(`${periodLabel}: ${JSON.stringify(periodValue)} must be between 1ms and 1s, inclusive`);
    } else cpuCFSQuotaPeriodMs = parsed.ms;
  }

  // A nil list gets the default; an explicit empty one (file `[]`, flag `--enforce-node-allocatable=`) stays.
  const enforce = flags.enforceNodeAllocatable ??
    raw.enforceNodeAllocatable ?? [...DEFAULT_ENFORCE_NODE_ALLOCATABLE];
  const enforceLabel = label(
    'enforce-node-allocatable',
    'enforceNodeAllocatable',
    flags.enforceNodeAllocatable !== undefined,
  );
  for (const v of enforce) {
    if (v === 'pods') continue;
    if (v === 'none') {
      if (enforce.length > 1)
        errors.push(`${enforceLabel}: may not contain additional enforcements when "none" is specified`);
    } else if (v === 'system-reserved' || v === 'kube-reserved') {
      errors.push(
        `${enforceLabel}: ${JSON.stringify(v)} is not supported by tskubelet (systemReserved and kubeReserved ` +
          'are not implemented); use "pods" or "none"',
      );
    } else {
      errors.push(
        `${enforceLabel}: option ${JSON.stringify(v)} is not valid; valid options are "pods", ` +
          '"system-reserved", "kube-reserved" or "none"',
      );
    }
  }
  if (!cgroupsPerQOS && enforce.length > 0) {
    errors.push(
      `${enforceLabel}: enforcing node allocatable is not supported unless cgroupsPerQOS (--cgroups-per-qos) ` +
        'is set to true; with cgroups per QoS off, set it empty (--enforce-node-allocatable=)',
    );
  }
  return {
    cgroupsPerQOS,
    cgroupRoot,
    cgroupDriver: 'cgroupfs',
    podPidsLimit: flags.podPidsLimit ?? raw.podPidsLimit ?? DEFAULT_POD_PIDS_LIMIT,
    cpuCFSQuota: flags.cpuCFSQuota ?? raw.cpuCFSQuota ?? DEFAULT_CPU_CFS_QUOTA,
    cpuCFSQuotaPeriodMs,
    enforceNodeAllocatable: [...new Set(enforce.filter((v) => v !== 'none'))],
  };
}

/**
 * Only unix sockets are supported (as upstream on Linux). A bare absolute path is accepted and
 * rewritten to `unix://<path>` with a warning, as upstream's fallback-protocol parsing does.
 */
function normalizeRuntimeEndpoint(
  chosen: { value: string; label: string },
  errors: string[],
  warnings: string[],
): string {
  const { value, label } = chosen;
  if (value === '') {
    errors.push(`${label}: must not be empty`);
    return value;
  }
  if (value.startsWith('unix://')) {
    const socketPath = value.slice('unix://'.length);
    if (!path.isAbsolute(socketPath)) {
      errors.push(
        `${label}: ${JSON.stringify(value)} must name an absolute socket path, e.g. unix:///run/x.sock`,
      );
    }
    return value;
  }
  if (path.isAbsolute(value)) {
    const normalized = `unix://${value}`;
    warnings.push(
      `${label}: ${JSON.stringify(value)} has no scheme (deprecated upstream); using "${normalized}"`,
    );
    return normalized;
  }
  errors.push(`${label}: ${JSON.stringify(value)} is not supported; use unix:///absolute/path/to/socket`);
  return value;
}

function checkPort(chosen: { value: number; label: string }, zeroAllowed: boolean, errors: string[]): void {
  const { value, label } = chosen;
  if (zeroAllowed && value === 0) return;
  if (!Number.isInteger(value) || value < 1 || value > 65535) {
    errors.push(
      `${label}: ${value} must be between ${zeroAllowed ? '0 (disabled)' : '1'} and 65535, inclusive`,
    );
  }
}

function checkIP(chosen: { value: string; label: string }, errors: string[]): void {
  if (isIP(chosen.value) === 0)
    errors.push(`${chosen.label}: ${JSON.stringify(chosen.value)} is not a valid IP address`);
}

/** One IP, or a dual-stack pair (one IPv4, one IPv6), comma-separated (upstream --node-ip). */
function checkNodeIP(value: string, errors: string[]): void {
  const parts = value.split(',').map((p) => p.trim());
  const families = parts.map((p) => isIP(p));
  if (parts.length > 2 || families.some((f) => f === 0)) {
    errors.push(
      `--node-ip: ${JSON.stringify(value)} must be an IP address or a comma-separated IPv4/IPv6 pair`,
    );
  } else if (parts.length === 2 && families[0] === families[1]) {
    errors.push(`--node-ip: ${JSON.stringify(value)}: a dual-stack pair needs one IPv4 and one IPv6 address`);
  }
}

function checkURL(chosen: { value: string; label: string }, errors: string[]): void {
  let url: URL;
  try {
    url = new URL(chosen.value);
  } catch {
    errors.push(`${chosen.label}: ${JSON.stringify(chosen.value)} is not a valid URL`);
    return;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    errors.push(`${chosen.label}: ${JSON.stringify(chosen.value)} must be an http or https URL`);
  }
}

/** RFC 9110 token characters for header names; values must not carry line breaks or NUL. */
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const BAD_HEADER_VALUE = /[\r\n\0]/;

function checkHeaders(chosen: { value: Record<string, string[]>; label: string }, errors: string[]): void {
  for (const [name, values] of Object.entries(chosen.value)) {
    if (!HEADER_NAME.test(name))
      errors.push(`${chosen.label}: ${JSON.stringify(name)} is not a valid HTTP header name`);
    if (!Array.isArray(values) || !values.every((v) => typeof v === 'string')) {
      errors.push(`${chosen.label}: values of ${JSON.stringify(name)} must be a list of strings`);
    } else if (values.some((v) => BAD_HEADER_VALUE.test(v))) {
      errors.push(`${chosen.label}: a value of ${JSON.stringify(name)} contains a line break or NUL`);
    }
  }
}

/** Upstream: podLogsDir must be absolute, normalized (filepath.Clean) and ASCII-only. */
function checkPodLogsDir(dir: string, errors: string[]): void {
  if (!path.isAbsolute(dir)) errors.push(`podLogsDir: ${JSON.stringify(dir)} must be an absolute path`);
  else if (cleanPath(dir) !== dir) errors.push(`podLogsDir: ${JSON.stringify(dir)} must be normalized`);
  // eslint-disable-next-line no-control-regex
  if (!/^[\x00-\x7f]*$/.test(dir))
    errors.push(`podLogsDir: ${JSON.stringify(dir)} must contain ASCII characters only`);
}

/** Go's filepath.Clean for absolute POSIX paths: normalized, no trailing slash except the root. */
function cleanPath(p: string): string {
  const n = path.posix.normalize(p);
  return n.length > 1 && n.endsWith('/') ? n.slice(0, -1) : n;
}

/** A QPS or burst: must not be negative; 0 becomes client-go's fallback, as upstream. */
function clientLimit(
  chosen: { value: number; label: string },
  clientGoFallback: number,
  errors: string[],
): number {
  const { value, label } = chosen;
  if (value < 0) errors.push(`${label}: ${value} must not be a negative number`);
  return value === 0 ? clientGoFallback : value;
}

/**
 * Validates taints from the file or `--register-with-taints` (upstream CheckTaintValidation, plus
 * what the API server would refuse at registration: a missing effect, a duplicate key+effect).
 */
function checkTaints(chosen: { value: RawTaint[]; label: string }, errors: string[]): Taint[] {
  const fromFlag = chosen.label.startsWith('--');
  const seen = new Set<string>();
  const out: Taint[] = [];
  chosen.value.forEach((raw, i) => {
    const where = fromFlag
      ? `${chosen.label}: taint ${JSON.stringify(formatTaint(raw))}`
      : `${chosen.label}[${i}]`;
    for (const problem of qualifiedNameProblems(raw.key)) errors.push(`${where}: key ${problem}`);
    const value = raw.value ?? '';
    for (const problem of labelValueProblems(value)) errors.push(`${where}: value ${problem}`);
    const effect = TAINT_EFFECTS.find((e) => e === raw.effect);
    if (raw.effect === '') {
      errors.push(`${where}: effect is required (one of ${TAINT_EFFECTS.join(', ')})`);
    } else if (effect === undefined) {
      errors.push(`${where}: effect ${JSON.stringify(raw.effect)} is not one of ${TAINT_EFFECTS.join(', ')}`);
    }
    const identity = `${raw.key}:${raw.effect}`;
    if (seen.has(identity)) errors.push(`${where}: duplicate taint (same key and effect as an earlier one)`);
    seen.add(identity);
    if (effect !== undefined) {
      out.push(value === '' ? { key: raw.key, effect } : { key: raw.key, value, effect });
    }
  });
  return out;
}

function formatTaint(t: RawTaint): string {
  return `${t.key}${t.value ? `=${t.value}` : ''}:${t.effect}`;
}

/**
 * Label keys a kubelet may set on its own Node inside the kubernetes.io / k8s.io namespaces
 * (k8s.io/kubelet/pkg/apis well_known_labels.go: kubeletLabels, kubeletLabelNamespaces).
 */
const KUBELET_LABELS: ReadonlySet<string> = new Set([
  'kubernetes.io/hostname',
  'kubernetes.io/os',
  'kubernetes.io/arch',
  'beta.kubernetes.io/os',
  'beta.kubernetes.io/arch',
  'beta.kubernetes.io/instance-type',
  'node.kubernetes.io/instance-type',
  'topology.kubernetes.io/zone',
  'topology.kubernetes.io/region',
  'failure-domain.beta.kubernetes.io/zone',
  'failure-domain.beta.kubernetes.io/region',
]);
const KUBELET_LABEL_NAMESPACES: readonly string[] = ['kubelet.kubernetes.io', 'node.kubernetes.io'];

/** The part of a label key before the first `/`, or '' when there is none. */
function labelNamespace(key: string): string {
  const slash = key.indexOf('/');
  return slash < 0 ? '' : key.slice(0, slash);
}

function inNamespace(namespace: string, domain: string): boolean {
  return namespace === domain || namespace.endsWith(`.${domain}`);
}

/** Upstream isKubernetesLabel: the key's namespace is (a subdomain of) kubernetes.io or k8s.io. */
function isKubernetesLabel(key: string): boolean {
  const ns = labelNamespace(key);
  return inNamespace(ns, 'kubernetes.io') || inNamespace(ns, 'k8s.io');
}

/** Upstream IsKubeletLabel: a well-known node label, or in an allowed kubelet namespace. */
function isKubeletLabel(key: string): boolean {
  if (KUBELET_LABELS.has(key)) return true;
  const ns = labelNamespace(key);
  return KUBELET_LABEL_NAMESPACES.some((allowed) => inNamespace(ns, allowed));
}

/** Upstream ValidateKubeletFlags for --node-labels: syntax, and the kubernetes.io/k8s.io rule. */
function checkNodeLabels(labels: Record<string, string>, errors: string[]): void {
  const restricted: string[] = [];
  for (const [key, value] of Object.entries(labels)) {
    if (isKubernetesLabel(key) && !isKubeletLabel(key)) restricted.push(key);
    const where = `--node-labels: label ${JSON.stringify(`${key}=${value}`)}`;
    for (const problem of qualifiedNameProblems(key)) errors.push(`${where}: key ${problem}`);
    for (const problem of labelValueProblems(value)) errors.push(`${where}: value ${problem}`);
  }
  if (restricted.length > 0) {
    errors.push(
      `--node-labels: ${restricted.map((k) => JSON.stringify(k)).join(', ')} ` +
        `${restricted.length === 1 ? 'is' : 'are'} in the kubernetes.io or k8s.io namespace; a kubelet ` +
        `may only set labels there under ${KUBELET_LABEL_NAMESPACES.map((n) => `[*.]${n}/`).join(' or ')}, ` +
        `or one of ${[...KUBELET_LABELS].sort().join(', ')}`,
    );
  }
}

const LABEL_NAME = /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;

/**
 * What is wrong with a qualified name (label key, taint key): an optional DNS-1123 subdomain
 * prefix and `/`, then a name of at most 63 characters (apimachinery IsQualifiedName).
 */
function qualifiedNameProblems(key: string): string[] {
  const parts = key.split('/');
  const name = parts[parts.length - 1] ?? '';
  const problems: string[] = [];
  if (parts.length > 2) {
    return [`${JSON.stringify(key)} has more than one "/" (want [prefix/]name)`];
  }
  if (parts.length === 2) {
    const prefix = parts[0] ?? '';
    if (prefix === '') problems.push(`${JSON.stringify(key)} has an empty prefix before "/"`);
    else if (!isDNS1123Subdomain(prefix)) {
      problems.push(`prefix ${JSON.stringify(prefix)} is not a lowercase DNS-1123 subdomain`);
    }
  }
  if (name === '') problems.push(`${JSON.stringify(key)} has an empty name`);
  else if (name.length > 63) problems.push(`name ${JSON.stringify(name)} is longer than 63 characters`);
  else if (!LABEL_NAME.test(name)) {
    problems.push(
      `name ${JSON.stringify(name)} may only hold letters, digits, "-", "_" and "." ` +
        'and must begin and end with a letter or digit',
    );
  }
  return problems;
}

/** What is wrong with a label value (apimachinery IsValidLabelValue); empty is valid. */
function labelValueProblems(value: string): string[] {
  if (value === '') return [];
  if (value.length > 63) return ['is longer than 63 characters'];
  if (!LABEL_NAME.test(value)) {
    return ['may only hold letters, digits, "-", "_" and "." and must begin and end with a letter or digit'];
  }
  return [];
}

function isDNS1123Subdomain(name: string): boolean {
  return (
    name.length <= 253 &&
    name.split('.').every((label) => /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(label) && label.length <= 63)
  );
}

// ---------------------------------------------------------------------------------------------
// Helpers

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function typeName(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'list';
  if (typeof v === 'object') return 'map';
  if (typeof v === 'number' && !Number.isInteger(v)) return 'number';
  return typeof v;
}

function preview(v: unknown): string {
  const s = JSON.stringify(v) ?? String(v);
  return s.length > 40 ? `${s.slice(0, 37)}...` : s;
}

function withoutUndefined<T extends object>(obj: T): T {
  for (const key of Object.keys(obj) as (keyof T)[]) {
    if (obj[key] === undefined) delete obj[key];
  }
  return obj;
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}
