/**
 * KubeletConfiguration (kubelet.config.k8s.io/v1beta1): the frozen `KubeletConfig` the rest of the
 * kubelet reads, and the pipeline that makes it.
 *
 * Pipeline: YAML/JSON file → `decodeKubeletConfiguration` (decode.ts: schema from the field table,
 * unknown fields) → `compileConfig` (compile.ts: flag over file over default per field, upstream
 * zero-value defaulting, validation of the merged result, every problem reported at once) →
 * deep-frozen `KubeletConfig`. The settings themselves are rows of the table in fields.ts.
 */
import type { LogFormat } from '../util/logger.ts';
import type { ServerSettings } from './server-config.ts';
import type { CHANGE_DETECTION_STRATEGIES } from './defaults.ts';

export type { LogFormat } from '../util/logger.ts';
export type { Taint, TaintEffect } from '../node/index.ts';
import type { Taint } from '../node/index.ts';
import type { Threshold } from '../eviction/signals.ts';

export { compileConfig } from './compile.ts';
export { decodeKubeletConfiguration, loadConfigFile } from './decode.ts';
export { DEFAULT_LOG_FORMAT, DEFAULT_RUN_ONCE_TIMEOUT_MS } from './defaults.ts';
export { KUBELET_CONFIG_API_VERSION, KUBELET_CONFIG_KIND } from './raw.ts';
export type { DecodedConfigFile, FlagValues, RawKubeletConfiguration, RawTaint } from './raw.ts';
export { TAINT_EFFECTS } from './validate.ts';

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
  /**
   * cgroup v2 only: false (upstream's default since 1.28) sets memory.oom.group=1 on each container,
   * so an OOM kill ends the whole container; true leaves the kernel's single-process choice.
   */
  readonly singleProcessOOMKill: boolean;
  /** tskubelet only (`--runtime-pacing`): pace the runtime-bound start steps (src/runtime/pacer.ts). */
  readonly runtimePacing: boolean;
  /** tskubelet only (`--console-address`): the loopback HOST:PORT of the unauthenticated console listener. */
  readonly consoleAddress?: string;
  /** tskubelet only (`--evented-pleg`): containerd events drive the PLEG (src/pleg/evented.ts). */
  readonly eventedPleg: boolean;
  /** tskubelet only (`--csi-call-timeout`): every CSI call's deadline (upstream's fixed csiTimeout, 2 min). */
  readonly csiCallTimeoutMs: number;
  /** Unsafe sysctls pods may set besides the safe ones: names or `prefix*`, all namespaced. */
  readonly allowedUnsafeSysctls: readonly string[];
  readonly verbosity: number;
  /** `--vmodule`, as given (`pattern=N,...`; checked; `parseVmodule` turns it into rules). */
  readonly vmodule: string;
  /**
   * `--log-flush-frequency`: the longest a logged line may wait to be written. Checked and kept;
   * every line is written at once (src/util/logger.ts), which meets any value.
   */
  readonly logFlushFrequencyMs: number;
  readonly logFormat: LogFormat;
  readonly kubeconfig?: string;
  /** --bootstrap-kubeconfig: TLS bootstrap (src/certificate) writes `kubeconfig` from it when needed. */
  readonly bootstrapKubeconfig?: string;
  /** --cert-dir, absolute: bootstrapped and rotated pairs (`kubelet-client-current.pem`, …). */
  readonly certDirectory: string;
  /** Renew the client certificate through CSRs (upstream rotateCertificates). */
  readonly rotateCertificates: boolean;
  /** Get and renew the serving certificate through CSRs (upstream serverTLSBootstrap). */
  readonly serverTLSBootstrap: boolean;
  /**
   * The feature gates as configured: the file's `featureGates` with each gate given by
   * `--feature-gates` replacing the file's value (upstream). Every name is a gate kubelet 1.20
   * knows; `featureEnabled(gates, name)` (feature-gates.ts) tells whether one is on.
   */
  readonly featureGates: Readonly<Record<string, boolean>>;
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
  /** The host resolv.conf pods' DNS is based on (upstream resolvConf); '' means none. */
  readonly resolvConf: string;
  /** DNS domain of the cluster (e.g. `cluster.local`) for ClusterFirst pods' search list; '' = none. */
  readonly clusterDomain: string;
  /** Nameserver IPs of ClusterFirst pods; empty: they fall back to the host's resolv.conf. */
  readonly clusterDNS: readonly string[];
  /** Pod cgroups per QoS class under `<cgroupRoot>/kubepods`; off: the runtime's default parent. */
  readonly cgroupsPerQOS: boolean;
  /** Absolute cgroupfs name the kubepods hierarchy is created under ('/' when not set). */
  readonly cgroupRoot: string;
  /**
   * cgroupfs: pod cgroups are directories (`/kubepods/burstable/pod<uid>`); systemd: slices made
   * through systemd (`kubepods-burstable-pod<uid>.slice`). The runtime must use the same.
   */
  readonly cgroupDriver: 'cgroupfs' | 'systemd';
  /** pids.max of each pod cgroup; 0 or less means none (-1 by default). */
  readonly podPidsLimit: number;
  /** CFS quota on pod cgroups for cpu limits (upstream cpuCFSQuota). */
  readonly cpuCFSQuota: boolean;
  /** CFS period of pod cgroups; 1 ms to 1 s. */
  readonly cpuCFSQuotaPeriodMs: number;
  /**
   * Node allocatable enforcement: any of 'pods', 'system-reserved', 'kube-reserved' ('none' is
   * stored as []). 'pods': kubepods is limited to capacity − systemReserved − kubeReserved; the
   * other two limit systemReservedCgroup / kubeReservedCgroup to their reservation.
   */
  readonly enforceNodeAllocatable: readonly string[];
  /**
   * Resources reserved for system daemons and for kubernetes daemons (upstream systemReserved,
   * kubeReserved): quantities by resource (cpu, memory, ephemeral-storage, pid), validated, as
   * given. Allocatable subtracts both (and the hard eviction thresholds): src/node/capacity.ts.
   */
  readonly systemReserved: Readonly<Record<string, string>>;
  readonly kubeReserved: Readonly<Record<string, string>>;
  /**
   * A CPU list (`0-1`) reserved for system and kubernetes daemons; '' = none. Its size replaces
   * systemReserved's cpu and clears kubeReserved's (upstream); no cpuset is applied.
   */
  readonly reservedSystemCPUs: string;
  /** The cgroups 'system-reserved' / 'kube-reserved' enforcement limits; '' = none given. */
  readonly systemReservedCgroup: string;
  readonly kubeReservedCgroup: string;
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
  /**
   * How the secret and configMap managers learn of changes (upstream
   * configMapAndSecretChangeDetectionStrategy): a watch per referenced object, a TTL cache, or a GET
   * on every read.
   */
  readonly configMapAndSecretChangeDetectionStrategy: ChangeDetectionStrategy;
  /**
   * Image GC policy (upstream ImageGCPolicy): when image filesystem usage reaches the high
   * threshold (percent; 100 disables image GC), unused images at least `imageMinimumGCAgeMs` old
   * (since first seen) are removed, least recently used first, down to the low threshold.
   */
  readonly imageGCHighThresholdPercent: number;
  readonly imageGCLowThresholdPercent: number;
  readonly imageMinimumGCAgeMs: number;
  /**
   * Node-pressure eviction (upstream ParseThresholdConfig over evictionHard, evictionSoft,
   * evictionSoftGracePeriod, evictionMinimumReclaim and enforceNodeAllocatable), validated.
   * `evictionHard` as given (the node's allocatable subtracts its memory and nodefs values).
   */
  readonly evictionHard: Readonly<Record<string, string>>;
  readonly evictionSoft: Readonly<Record<string, string>>;
  readonly evictionSoftGracePeriod: Readonly<Record<string, string>>;
  readonly evictionMinimumReclaim: Readonly<Record<string, string>>;
  /** volumeStatsAggPeriod: pod volume usage is walked at most this often. */
  readonly volumeStatsAggPeriodMs: number;
  readonly evictionThresholds: readonly Threshold[];
  readonly evictionPressureTransitionPeriodMs: number;
  readonly evictionMaxPodGracePeriodSeconds: number;
  /**
   * Container GC policy (upstream GCPolicy; flags only): a dead container younger than
   * `minimumGCAgeMs` (from its creation) stays; per (pod, container name) at most
   * `maxPerPodContainerCount` dead instances stay, on the node at most `maxContainerCount`
   * (negative: no limit).
   */
  readonly minimumGCAgeMs: number;
  readonly maxPerPodContainerCount: number;
  readonly maxContainerCount: number;
  /**
   * Graceful node shutdown (upstream nodeshutdown): how long a node shutdown is held back (logind
   * delay inhibitor) so pods can terminate; 0 = off. The last `shutdownGracePeriodCriticalPodsMs`
   * of it (≤ the whole) is for critical pods, the rest for the others. Each 0 or ≥ 1 s.
   */
  readonly shutdownGracePeriodMs: number;
  readonly shutdownGracePeriodCriticalPodsMs: number;
}

/** KubeletConfiguration ResourceChangeDetectionStrategy. */
export type ChangeDetectionStrategy = (typeof CHANGE_DETECTION_STRATEGIES)[number];

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
