/**
 * The one table of KubeletConfiguration settings: per setting its file field, its flag, its kind,
 * its default, what a zero or empty value in the file means, its check and its help text.
 *
 * It drives: decoding of the file (known fields, types, nested objects, relative paths), the `run`
 * command's options and help, flag-over-file precedence and defaulting (`resolveField`), and the
 * "not implemented" warnings for upstream fields and flags (`NOT_IMPLEMENTED`, not-implemented.ts). What a setting
 * compiles to (`KubeletConfig`) is written out in `compile.ts`. See docs/config-fields.md.
 */
import * as d from './defaults.ts';
import { NODE_RESOURCE_FIELDS } from './node-resource-fields.ts';
import { POD_CGROUP_FIELDS } from './cgroup-fields.ts';
import { SERVER_FIELDS } from './server-fields.ts';
import { formatGoDuration as dur } from './duration.ts';
import { checkNodeLabels } from './labels.ts';
import { checkConsoleAddress } from './console-address.ts';
import type { RawFieldPath, RawTaint } from './raw.ts';
import {
  checkChangeDetectionStrategy,
  checkDomain,
  checkHeaders,
  checkIP,
  checkIPs,
  checkLogFormat,
  checkVmodule,
  checkNodeIP,
  checkPodLogsDir,
  checkPort,
  checkSysctlPatterns,
  checkTaints,
  checkURL,
  nonNegative,
  positive,
  positiveDuration,
  type Check,
} from './validate.ts';

/** Each kind's value as written (file or flag). */
export interface KindValues {
  string: string;
  bool: boolean;
  int32: number;
  /** Within JavaScript's safe integers. */
  int64: number;
  /** A Go duration string such as "1m30s" (never a number in the file). */
  duration: string;
  stringList: string[];
  /** map[string][]string, e.g. HTTP headers. */
  headerMap: Record<string, string[]>;
  taints: RawTaint[];
  /** Flag only: `key=value,…`. */
  labels: Record<string, string>;
  /** map[string]string; the flag is `key=value,…` (upstream MapStringString). */
  stringMap: Record<string, string>;
  /** map[string]string; the flag is `key<value,…` (upstream LangleSeparatedMapStringString). */
  thresholdMap: Record<string, string>;
  /** map[string]bool; the flag is `Name=true,…` (upstream MapStringBool, the feature gates). */
  boolMap: Record<string, boolean>;
}
export type FieldKind = keyof KindValues;

/** Each kind's value once chosen: durations in milliseconds, the rest as written. */
export type CompiledKind<K extends FieldKind> = K extends 'duration' ? number : KindValues[K];

export interface FlagSpec {
  /** Without the dashes: `max-pods`. */
  readonly name: string;
  /** One-letter form with its dash, e.g. `-v`. */
  readonly short?: string;
  /** The value placeholder in help, e.g. `<duration>`; bool flags have none. */
  readonly arg?: string;
  readonly choices?: readonly string[];
  /** A second spelling; giving both with different values is an error. */
  readonly alias?: string;
}

interface FieldSpecOf<K extends FieldKind> {
  readonly kind: K;
  /** The KubeletConfiguration field (dotted for nested ones); absent: flag only. */
  readonly file?: RawFieldPath;
  /** Absent: file only (upstream has no flag either). */
  readonly flag?: FlagSpec;
  /**
   * What a zero or empty value (0, "", "0s") in the file means: `default` for upstream's plain
   * fields (v1beta1 defaulting replaces it), `kept` for its pointer fields and lists. A flag is
   * always taken as given.
   */
  readonly fileZero: 'default' | 'kept';
  /** Absent: the setting is optional (undefined when neither flag nor file gives it). */
  readonly default?: CompiledKind<K>;
  /** Resolve a relative path in the file against the file's directory (as upstream). */
  readonly relativeToFile?: true;
  readonly check?: Check<CompiledKind<K>>;
  /** The flag's help, or what the file field is for. */
  readonly help: string;
}

export type FieldSpec = { [K in FieldKind]: FieldSpecOf<K> }[FieldKind];

/** Flag values keyed by setting: one optional key per setting that has a flag. */
export type FlagValuesOf<T extends Readonly<Record<string, FieldSpec>>> = {
  -readonly [K in keyof T as T[K] extends { readonly flag: FlagSpec } ? K : never]?: KindValues[T[K]['kind']];
};

const QPS_ZERO_HELP = `0 means ${d.CLIENT_GO_DEFAULT_QPS}`;

/** The kubelet's settings, in the order of `run --help`. Keys are the keys of `FlagValues`. */
export const KUBELET_FIELDS = {
  kubeconfig: {
    kind: 'string',
    flag: { name: 'kubeconfig', arg: '<file>' },
    fileZero: 'kept',
    check: (c, errors) => {
      if (c.value.trim() === '') errors.push(`${c.label}: must not be empty when given`);
    },
    help: 'kubeconfig for the API server; omit for standalone mode',
  },
  bootstrapKubeconfig: {
    kind: 'string',
    // The alias is upstream's deprecated spelling, still accepted by 1.20.
    flag: { name: 'bootstrap-kubeconfig', arg: '<file>', alias: 'experimental-bootstrap-kubeconfig' },
    fileZero: 'kept',
    check: (c, errors) => {
      if (c.value.trim() === '') errors.push(`${c.label}: must not be empty when given`);
    },
    help:
      'kubeconfig used to get a client certificate (TLS bootstrap) when --kubeconfig does not exist or its ' +
      'certificate is expired; the result is written to --kubeconfig and --cert-dir',
  },
  certDirectory: {
    kind: 'string',
    flag: { name: 'cert-dir', arg: '<dir>' },
    fileZero: 'kept',
    check: (c, errors) => {
      if (c.value.trim() === '') errors.push(`${c.label}: must not be empty when given`);
    },
    help: 'directory of the bootstrapped and rotated certificates (default <root-dir>/pki)',
  },
  rotateCertificates: {
    kind: 'bool',
    file: 'rotateCertificates',
    flag: { name: 'rotate-certificates' },
    fileZero: 'kept',
    default: d.DEFAULT_ROTATE_CERTIFICATES,
    help: 'renew the client certificate from the API server as it nears expiry (rotateCertificates)',
  },
  serverTLSBootstrap: {
    kind: 'bool',
    file: 'serverTLSBootstrap',
    flag: { name: 'rotate-server-certificates' },
    fileZero: 'kept',
    default: d.DEFAULT_SERVER_TLS_BOOTSTRAP,
    help: 'request the serving certificate from the API server (signer kubernetes.io/kubelet-serving) and renew it (serverTLSBootstrap)',
  },
  staticPodPath: {
    kind: 'string',
    file: 'staticPodPath',
    flag: { name: 'pod-manifest-path', arg: '<path>' },
    fileZero: 'kept',
    default: '',
    relativeToFile: true,
    help: 'directory of static pod files to run, or a single static pod file (staticPodPath)',
  },
  staticPodURL: {
    kind: 'string',
    file: 'staticPodURL',
    flag: { name: 'manifest-url', arg: '<url>' },
    fileZero: 'kept',
    default: '',
    check: checkURL,
    help: 'URL of additional pod specifications to run (staticPodURL)',
  },
  staticPodURLHeader: {
    kind: 'headerMap',
    file: 'staticPodURLHeader',
    flag: { name: 'manifest-url-header', arg: '<key:value,...>' },
    fileZero: 'kept',
    default: {},
    check: checkHeaders,
    help: "HTTP headers for --manifest-url, e.g. 'a:hello,b:again'; repeatable, same names accumulate",
  },
  syncFrequency: {
    kind: 'duration',
    file: 'syncFrequency',
    flag: { name: 'sync-frequency', arg: '<duration>' },
    fileZero: 'default',
    default: d.DEFAULT_SYNC_FREQUENCY_MS,
    check: positiveDuration,
    help: `max period between syncing running pods (default ${dur(d.DEFAULT_SYNC_FREQUENCY_MS)})`,
  },
  fileCheckFrequency: {
    kind: 'duration',
    file: 'fileCheckFrequency',
    flag: { name: 'file-check-frequency', arg: '<duration>' },
    fileZero: 'default',
    default: d.DEFAULT_FILE_CHECK_FREQUENCY_MS,
    check: positiveDuration,
    help: `period between checks of --pod-manifest-path (default ${dur(d.DEFAULT_FILE_CHECK_FREQUENCY_MS)})`,
  },
  httpCheckFrequency: {
    kind: 'duration',
    file: 'httpCheckFrequency',
    flag: { name: 'http-check-frequency', arg: '<duration>' },
    fileZero: 'default',
    default: d.DEFAULT_HTTP_CHECK_FREQUENCY_MS,
    check: positiveDuration,
    help: `period between fetches of --manifest-url (default ${dur(d.DEFAULT_HTTP_CHECK_FREQUENCY_MS)})`,
  },
  nodeStatusUpdateFrequency: {
    kind: 'duration',
    file: 'nodeStatusUpdateFrequency',
    flag: { name: 'node-status-update-frequency', arg: '<duration>' },
    fileZero: 'default',
    default: d.DEFAULT_NODE_STATUS_UPDATE_FREQUENCY_MS,
    check: positiveDuration,
    help: `period of node status computation (default ${dur(d.DEFAULT_NODE_STATUS_UPDATE_FREQUENCY_MS)})`,
  },
  runtimeRequestTimeout: {
    kind: 'duration',
    file: 'runtimeRequestTimeout',
    flag: { name: 'runtime-request-timeout', arg: '<duration>' },
    fileZero: 'default',
    default: d.DEFAULT_RUNTIME_REQUEST_TIMEOUT_MS,
    check: positiveDuration,
    help: `timeout of runtime requests except pull, logs, exec, attach (default ${dur(d.DEFAULT_RUNTIME_REQUEST_TIMEOUT_MS)})`,
  },
  containerRuntimeEndpoint: {
    kind: 'string',
    file: 'containerRuntimeEndpoint',
    flag: { name: 'container-runtime-endpoint', arg: '<endpoint>' },
    fileZero: 'default',
    default: d.DEFAULT_CONTAINER_RUNTIME_ENDPOINT,
    // Checked and normalized by normalizeRuntimeEndpoint (it may warn).
    help: `CRI endpoint, unix:///path (default ${d.DEFAULT_CONTAINER_RUNTIME_ENDPOINT})`,
  },
  maxPods: {
    kind: 'int32',
    file: 'maxPods',
    flag: { name: 'max-pods', arg: '<n>' },
    fileZero: 'default',
    default: d.DEFAULT_MAX_PODS,
    check: nonNegative,
    help: `number of pods this kubelet can run (default ${d.DEFAULT_MAX_PODS})`,
  },
  healthzPort: {
    kind: 'int32',
    file: 'healthzPort',
    flag: { name: 'healthz-port', arg: '<port>' },
    // A pointer upstream: an explicit 0 in the file disables the endpoint.
    fileZero: 'kept',
    default: d.DEFAULT_HEALTHZ_PORT,
    check: checkPort(true),
    help: `port of the healthz endpoint, 0 disables (default ${d.DEFAULT_HEALTHZ_PORT})`,
  },
  healthzBindAddress: {
    kind: 'string',
    file: 'healthzBindAddress',
    flag: { name: 'healthz-bind-address', arg: '<ip>' },
    fileZero: 'default',
    default: d.DEFAULT_HEALTHZ_BIND_ADDRESS,
    check: checkIP,
    help: `IP address for the healthz server (default ${d.DEFAULT_HEALTHZ_BIND_ADDRESS})`,
  },
  address: {
    kind: 'string',
    file: 'address',
    flag: { name: 'address', arg: '<ip>' },
    fileZero: 'default',
    default: d.DEFAULT_ADDRESS,
    check: checkIP,
    help: `IP address the kubelet API listens on (default ${d.DEFAULT_ADDRESS})`,
  },
  port: {
    kind: 'int32',
    file: 'port',
    flag: { name: 'port', arg: '<port>' },
    fileZero: 'default',
    default: d.DEFAULT_PORT,
    check: checkPort(false),
    help: `port of the kubelet API (HTTPS; default ${d.DEFAULT_PORT})`,
  },
  readOnlyPort: {
    kind: 'int32',
    file: 'readOnlyPort',
    flag: { name: 'read-only-port', arg: '<port>' },
    fileZero: 'kept',
    default: d.DEFAULT_READ_ONLY_PORT,
    check: checkPort(true),
    help: `plain-HTTP port for read-only endpoints without authentication; 0 disables (default ${d.DEFAULT_READ_ONLY_PORT})`,
  },
  podLogsDir: {
    kind: 'string',
    file: 'podLogsDir',
    fileZero: 'default',
    default: d.DEFAULT_POD_LOGS_DIR,
    relativeToFile: true,
    check: checkPodLogsDir,
    help: 'directory of container log files',
  },
  rootDir: {
    kind: 'string',
    flag: { name: 'root-dir', arg: '<dir>' },
    fileZero: 'kept',
    default: d.DEFAULT_ROOT_DIR,
    // Resolved against the working directory by compileConfig.
    check: (c, errors) => {
      if (c.value.trim() === '') errors.push(`${c.label}: must not be empty`);
    },
    help: `directory for kubelet files (default ${d.DEFAULT_ROOT_DIR})`,
  },
  hostnameOverride: {
    kind: 'string',
    flag: { name: 'hostname-override', arg: '<name>' },
    fileZero: 'kept',
    help: 'use this as the node name instead of the hostname',
  },
  nodeIP: {
    kind: 'string',
    flag: { name: 'node-ip', arg: '<ip>' },
    fileZero: 'kept',
    check: checkNodeIP,
    help: 'IP address of the node (or a comma-separated IPv4/IPv6 pair)',
  },
  runOnce: {
    kind: 'bool',
    file: 'runOnce',
    flag: { name: 'runonce' },
    fileZero: 'kept',
    default: d.DEFAULT_RUN_ONCE,
    help: 'run the static pods once, then exit',
  },
  runtimePacing: {
    kind: 'bool',
    flag: { name: 'runtime-pacing' },
    fileZero: 'kept',
    default: d.DEFAULT_RUNTIME_PACING,
    help: `tskubelet only: pace sandbox and container creation with an adaptive concurrency limit that follows the runtime's latency (default ${d.DEFAULT_RUNTIME_PACING})`,
  },
  consoleAddress: {
    kind: 'string',
    flag: { name: 'console-address', arg: '<host:port>' },
    fileZero: 'kept',
    default: '',
    check: checkConsoleAddress,
    help: 'tskubelet only: also serve the node console (/console/) over plain HTTP without authentication on this loopback address (127.0.0.0/8, ::1 or localhost only); default: only on the kubelet API port',
  },
  eventedPleg: {
    kind: 'bool',
    flag: { name: 'evented-pleg' },
    fileZero: 'kept',
    default: d.DEFAULT_EVENTED_PLEG,
    help: `tskubelet only: turn containerd's task events into pod lifecycle events at once, relisting every ${d.PLEG_EVENTED_RELIST_PERIOD_MS / 1000}s while the event stream is live and every second when it is not (default ${d.DEFAULT_EVENTED_PLEG})`,
  },
  csiCallTimeout: {
    kind: 'duration',
    flag: { name: 'csi-call-timeout', arg: '<duration>' },
    fileZero: 'default',
    default: d.CSI_TIMEOUT_MS,
    check: positiveDuration,
    help: `tskubelet only: the deadline of each call to a CSI driver (NodeStage/Publish/Unpublish/Unstage, NodeGetInfo, NodeGetVolumeStats); a driver that hangs fails the operation with a timeout that is retried (default ${dur(d.CSI_TIMEOUT_MS)}, upstream's fixed csiTimeout)`,
  },
  runOnceTimeout: {
    kind: 'duration',
    flag: { name: 'runonce-timeout', arg: '<duration>' },
    fileZero: 'default',
    default: d.DEFAULT_RUN_ONCE_TIMEOUT_MS,
    check: positiveDuration,
    help: `tskubelet only: how long --runonce waits for pods to run (default ${dur(d.DEFAULT_RUN_ONCE_TIMEOUT_MS)})`,
  },
  verbosity: {
    kind: 'int32',
    file: 'logging.verbosity',
    flag: { name: 'v', short: '-v', arg: '<level>' },
    fileZero: 'kept',
    default: d.DEFAULT_VERBOSITY,
    check: (c, errors) => {
      if (!Number.isInteger(c.value) || c.value < 0) {
        errors.push(`${c.label}: ${c.value} must be a non-negative integer`);
      }
    },
    help: `log verbosity as klog's -v: info lines always, debug from 4, trace from 5 (default ${d.DEFAULT_VERBOSITY})`,
  },
  vmodule: {
    kind: 'string',
    file: 'logging.vmodule',
    flag: { name: 'vmodule', arg: '<pattern=N,...>' },
    fileZero: 'default',
    default: '',
    check: checkVmodule,
    help: "per-file log verbosity as klog's: comma-separated pattern=N, the pattern a glob on the file name without its extension (or on the path, when it has a /)",
  },
  logFlushFrequency: {
    kind: 'duration',
    file: 'logging.flushFrequency',
    flag: { name: 'log-flush-frequency', arg: '<duration>' },
    fileZero: 'default',
    default: d.DEFAULT_LOG_FLUSH_FREQUENCY_MS,
    check: positiveDuration,
    help:
      `maximum time between log flushes (default ${dur(d.DEFAULT_LOG_FLUSH_FREQUENCY_MS)}); ` +
      'tskubelet writes each line whole to stderr as it is logged, as klog does to stderr, so no line waits for a flush',
  },
  logFormat: {
    kind: 'string',
    file: 'logging.format',
    flag: { name: 'logging-format', arg: '<format>', choices: ['json', 'text'], alias: 'log-format' },
    fileZero: 'default',
    default: d.DEFAULT_LOG_FORMAT,
    check: checkLogFormat,
    help: `log format (default ${d.DEFAULT_LOG_FORMAT})`,
  },
  kubeAPIQPS: {
    kind: 'int32',
    file: 'kubeAPIQPS',
    flag: { name: 'kube-api-qps', arg: '<qps>' },
    // The QPS fields are pointers upstream (an explicit 0 stays 0: client-go's fallback).
    fileZero: 'kept',
    default: d.DEFAULT_KUBE_API_QPS,
    check: nonNegative,
    help: `QPS towards the API server, except events and heartbeats; ${QPS_ZERO_HELP} (default ${d.DEFAULT_KUBE_API_QPS})`,
  },
  kubeAPIBurst: {
    kind: 'int32',
    file: 'kubeAPIBurst',
    flag: { name: 'kube-api-burst', arg: '<n>' },
    fileZero: 'default',
    default: d.DEFAULT_KUBE_API_BURST,
    check: nonNegative,
    help: `burst towards the API server; 0 means ${d.CLIENT_GO_DEFAULT_BURST} (default ${d.DEFAULT_KUBE_API_BURST})`,
  },
  eventRecordQPS: {
    kind: 'int32',
    file: 'eventRecordQPS',
    flag: { name: 'event-qps', arg: '<qps>' },
    fileZero: 'kept',
    default: d.DEFAULT_EVENT_RECORD_QPS,
    check: nonNegative,
    help: `QPS of event creation; ${QPS_ZERO_HELP} (default ${d.DEFAULT_EVENT_RECORD_QPS})`,
  },
  eventBurst: {
    kind: 'int32',
    file: 'eventBurst',
    flag: { name: 'event-burst', arg: '<n>' },
    fileZero: 'default',
    default: d.DEFAULT_EVENT_BURST,
    check: nonNegative,
    help: `burst of event creation; 0 means ${d.CLIENT_GO_DEFAULT_BURST} (default ${d.DEFAULT_EVENT_BURST})`,
  },
  serializeImagePulls: {
    kind: 'bool',
    file: 'serializeImagePulls',
    flag: { name: 'serialize-image-pulls' },
    // Defaulted together with maxParallelImagePulls (compile.ts imagePullSettings).
    fileZero: 'kept',
    help: `pull images one at a time; false without maxParallelImagePulls: no limit (default: at most ${d.DEFAULT_MAX_PARALLEL_IMAGE_PULLS} at once)`,
  },
  maxParallelImagePulls: {
    kind: 'int32',
    file: 'maxParallelImagePulls',
    fileZero: 'kept',
    check: (c, errors) => {
      if (c.value < 1) errors.push(`${c.label}: ${c.value} must be a positive number`);
    },
    help: 'image pulls running at once across all pods',
  },
  registryPullQPS: {
    kind: 'int32',
    file: 'registryPullQPS',
    flag: { name: 'registry-qps', arg: '<qps>' },
    fileZero: 'kept',
    default: d.DEFAULT_REGISTRY_PULL_QPS,
    check: nonNegative,
    help: `image pulls started per second, 0 = no limit (default ${d.DEFAULT_REGISTRY_PULL_QPS})`,
  },
  registryBurst: {
    kind: 'int32',
    file: 'registryBurst',
    flag: { name: 'registry-burst', arg: '<n>' },
    fileZero: 'default',
    default: d.DEFAULT_REGISTRY_BURST,
    check: nonNegative,
    help: `burst of image pulls (default ${d.DEFAULT_REGISTRY_BURST})`,
  },
  configMapAndSecretChangeDetectionStrategy: {
    kind: 'string',
    file: 'configMapAndSecretChangeDetectionStrategy',
    // File only, as upstream (no flag). An empty value is defaulted (v1beta1 SetDefaults).
    fileZero: 'default',
    default: d.DEFAULT_CONFIGMAP_AND_SECRET_CHANGE_DETECTION_STRATEGY,
    check: checkChangeDetectionStrategy,
    help:
      'how the kubelet learns of Secret and ConfigMap changes: Watch (a watch per referenced object), ' +
      "Cache (a GET at most once per TTL: the node's node.alpha.kubernetes.io/ttl annotation, else 1m) " +
      `or Get (a GET on every read) (default ${d.DEFAULT_CONFIGMAP_AND_SECRET_CHANGE_DETECTION_STRATEGY})`,
  },
  nodeStatusMaxImages: {
    kind: 'int32',
    file: 'nodeStatusMaxImages',
    flag: { name: 'node-status-max-images', arg: '<n>' },
    // A pointer upstream: an explicit 0 (report none) is kept.
    fileZero: 'kept',
    default: d.DEFAULT_NODE_STATUS_MAX_IMAGES,
    check: (c, errors) => {
      if (c.value < -1) errors.push(`${c.label}: ${c.value} must be -1 or greater`);
    },
    help: `images reported in the Node status, -1 = all (default ${d.DEFAULT_NODE_STATUS_MAX_IMAGES})`,
  },
  nodeStatusReportFrequency: {
    kind: 'duration',
    file: 'nodeStatusReportFrequency',
    fileZero: 'default',
    // Upstream: the file's nodeStatusUpdateFrequency when only that is set (compile.ts).
    default: d.DEFAULT_NODE_STATUS_REPORT_FREQUENCY_MS,
    check: positiveDuration,
    help: 'how often node status is posted when nothing changed',
  },
  nodeLeaseDurationSeconds: {
    kind: 'int32',
    file: 'nodeLeaseDurationSeconds',
    fileZero: 'default',
    default: d.DEFAULT_NODE_LEASE_DURATION_SECONDS,
    check: positive,
    help: "duration of the node's Lease in kube-node-lease",
  },
  registerNode: {
    kind: 'bool',
    file: 'registerNode',
    flag: { name: 'register-node' },
    fileZero: 'kept',
    default: d.DEFAULT_REGISTER_NODE,
    help: `register the Node with the API server (default ${d.DEFAULT_REGISTER_NODE})`,
  },
  ...POD_CGROUP_FIELDS,
  registerWithTaints: {
    kind: 'taints',
    file: 'registerWithTaints',
    flag: { name: 'register-with-taints', arg: '<key=value:Effect,...>' },
    fileZero: 'kept',
    default: [],
    check: checkTaints,
    help: 'taints for the Node when it registers, e.g. a=b:NoSchedule,c:NoExecute; the last use wins',
  },
  nodeLabels: {
    kind: 'labels',
    flag: { name: 'node-labels', arg: '<key=value,...>' },
    fileZero: 'kept',
    default: {},
    check: checkNodeLabels,
    help:
      'labels for the Node when it registers; repeatable. In the kubernetes.io and k8s.io ' +
      'namespaces only [*.]kubelet.kubernetes.io/, [*.]node.kubernetes.io/ and the well-known node labels',
  },
  resolvConf: {
    kind: 'string',
    file: 'resolvConf',
    flag: { name: 'resolv-conf', arg: '<file>' },
    // Upstream 1.20 defaulting: an empty file value becomes the default; the flag's "" is kept.
    fileZero: 'default',
    default: d.DEFAULT_RESOLV_CONF,
    help: 'resolver configuration file the DNS of Default-policy pods (and the search list of ClusterFirst pods) is based on; "" for none',
  },
  clusterDomain: {
    kind: 'string',
    file: 'clusterDomain',
    flag: { name: 'cluster-domain', arg: '<domain>' },
    fileZero: 'default',
    default: '',
    // Stricter than upstream (which takes any domain): a typo would reach every pod's resolv.conf.
    check: checkDomain,
    help: 'DNS domain of the cluster (e.g. cluster.local): search domains of ClusterFirst pods',
  },
  clusterDNS: {
    kind: 'stringList',
    file: 'clusterDNS',
    flag: { name: 'cluster-dns', arg: '<ip,...>' },
    fileZero: 'kept',
    default: [],
    // Stricter than upstream, which skips a bad entry with a log line.
    check: checkIPs,
    help: 'nameserver IPs of ClusterFirst pods (without: they use the host resolv.conf); repeatable',
  },
  seccompDefault: {
    kind: 'bool',
    file: 'seccompDefault',
    flag: { name: 'seccomp-default' },
    fileZero: 'kept',
    default: d.DEFAULT_SECCOMP_DEFAULT,
    help: `RuntimeDefault seccomp for containers that set no profile (default ${d.DEFAULT_SECCOMP_DEFAULT})`,
  },
  singleProcessOOMKill: {
    kind: 'bool',
    file: 'singleProcessOOMKill',
    fileZero: 'kept',
    default: d.DEFAULT_SINGLE_PROCESS_OOM_KILL,
    help:
      'on cgroup v2, let the kernel kill only the process it picks at a memory limit, not the whole ' +
      `container (memory.oom.group=1) (default ${d.DEFAULT_SINGLE_PROCESS_OOM_KILL})`,
  },
  allowedUnsafeSysctls: {
    kind: 'stringList',
    file: 'allowedUnsafeSysctls',
    flag: { name: 'allowed-unsafe-sysctls', arg: '<names,...>' },
    fileZero: 'kept',
    default: [],
    check: checkSysctlPatterns,
    help: "unsafe sysctls pods may set (names or 'prefix*', namespaced only), e.g. 'kernel.msg*,net.core.somaxconn'; repeatable",
  },
  featureGates: {
    kind: 'boolMap',
    file: 'featureGates',
    flag: { name: 'feature-gates', arg: '<Name=bool,...>' },
    // Merged key by key, flags over file (compile.ts), as upstream's kubeletConfigFlagPrecedence.
    fileZero: 'kept',
    default: {},
    help:
      'feature gates as Name=true|false pairs, the gates kubelet 1.20 knows (an unknown gate is an error); ' +
      "repeatable; each gate given overrides the file's value of that gate",
  },
  ...NODE_RESOURCE_FIELDS,
} satisfies Readonly<Record<string, FieldSpec>>;

export type KubeletFieldKey = keyof typeof KUBELET_FIELDS;
export type ServerFieldKey = keyof typeof SERVER_FIELDS;

/** Every file field path the table implements. */
type TablePath<T extends Readonly<Record<string, FieldSpec>>> = {
  [K in keyof T]: T[K] extends { readonly file: infer P } ? P : never;
}[keyof T];
type UntabledFields = Exclude<
  RawFieldPath,
  TablePath<typeof KUBELET_FIELDS> | TablePath<typeof SERVER_FIELDS>
>;
/** Fails to compile when a field of RawKubeletConfiguration has no row above. */
export const EVERY_RAW_FIELD_HAS_A_ROW: [UntabledFields] extends [never] ? true : UntabledFields = true;

/** Every row, kubelet then server, with where its flag value lives in `FlagValues`. */
export const ALL_FIELDS: readonly { key: string; spec: FieldSpec; group: 'kubelet' | 'server' }[] = [
  ...Object.entries(KUBELET_FIELDS).map(([key, spec]) => ({ key, spec, group: 'kubelet' as const })),
  ...Object.entries(SERVER_FIELDS).map(([key, spec]) => ({ key, spec, group: 'server' as const })),
];
