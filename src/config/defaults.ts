/**
 * Upstream constants, in one place, each with the upstream name it mirrors.
 * Durations are milliseconds.
 */
import type { LogFormat } from '../util/logger.ts';

/** pkg/kubelet/apis/config/v1beta1 defaults (KubeletConfiguration). */
export const DEFAULT_FILE_CHECK_FREQUENCY_MS = 20_000; // fileCheckFrequency
export const DEFAULT_HTTP_CHECK_FREQUENCY_MS = 20_000; // httpCheckFrequency
export const DEFAULT_SYNC_FREQUENCY_MS = 60_000; // syncFrequency
export const DEFAULT_MAX_PODS = 110; // maxPods
export const DEFAULT_HEALTHZ_PORT = 10248; // healthzPort
export const DEFAULT_HEALTHZ_BIND_ADDRESS = '127.0.0.1'; // healthzBindAddress
export const DEFAULT_READ_ONLY_PORT = 0; // readOnlyPort (0 = disabled upstream since 1.x defaults)
export const DEFAULT_RUNTIME_REQUEST_TIMEOUT_MS = 120_000; // runtimeRequestTimeout
export const DEFAULT_CONTAINER_RUNTIME_ENDPOINT = 'unix:///run/containerd/containerd.sock'; // containerRuntimeEndpoint
export const DEFAULT_ROOT_DIR = '/var/lib/kubelet'; // --root-dir
export const DEFAULT_POD_LOGS_DIR = '/var/log/pods'; // podLogsDir
export const DEFAULT_RESOLV_CONF = '/etc/resolv.conf'; // resolvConf (kubetypes.ResolvConfDefault)
export const DEFAULT_NODE_STATUS_UPDATE_FREQUENCY_MS = 10_000; // nodeStatusUpdateFrequency

/** pkg/kubelet/kubelet.go */
export const SYNC_LOOP_TICK_MS = 1_000; // syncCh ticker in syncLoop
export const HOUSEKEEPING_PERIOD_MS = 2_000; // housekeepingPeriod
export const PLEG_RELIST_PERIOD_MS = 1_000; // plegRelistPeriod
export const PLEG_RELIST_THRESHOLD_MS = 3 * 60_000; // relistThreshold (PLEG healthy)
/**
 * tskubelet's relist period while containerd events are live (upstream's evented PLEG relisted
 * every 300 s): the safety net's worst-case delay for a change no event reported. See
 * docs/architecture.md "Evented PLEG" for why 30 s.
 */
export const PLEG_EVENTED_RELIST_PERIOD_MS = 30_000;
export const BACKOFF_INITIAL_MS = 10_000; // backOffPeriod
export const BACKOFF_MAX_MS = 300_000; // MaxContainerBackOff
export const IMAGE_BACKOFF_INITIAL_MS = 10_000; // imageBackOffPeriod
export const IMAGE_BACKOFF_MAX_MS = 300_000; // MaxImageBackOff
export const POD_WORKER_RESYNC_AFTER_ERROR_MS = 10_000; // backOffPeriod used by podWorkers on error (workerBackOffPeriod)
export const RUNTIME_STATUS_PERIOD_MS = 5_000; // go wait.Until(kl.updateRuntimeUp, 5*time.Second, …) in Run
export const CONTAINER_GC_PERIOD_MS = 60_000; // ContainerGCPeriod
export const IMAGE_GC_PERIOD_MS = 5 * 60_000; // ImageGCPeriod

/** cmd/kubelet/app/options KubeletFlags: container GC policy (flags only, deprecated upstream). */
export const DEFAULT_MINIMUM_GC_AGE_MS = 0; // MinimumGCAge (--minimum-container-ttl-duration)
export const DEFAULT_MAX_PER_POD_CONTAINER_COUNT = 1; // MaxPerPodContainerCount (--maximum-dead-containers-per-container)
export const DEFAULT_MAX_CONTAINER_COUNT = -1; // MaxContainerCount (--maximum-dead-containers)

/** pkg/kubelet/apis/config/v1beta1 SetDefaults_KubeletConfiguration: image GC policy. */
export const DEFAULT_IMAGE_GC_HIGH_THRESHOLD_PERCENT = 85; // ImageGCHighThresholdPercent
export const DEFAULT_IMAGE_GC_LOW_THRESHOLD_PERCENT = 80; // ImageGCLowThresholdPercent
export const DEFAULT_IMAGE_MINIMUM_GC_AGE_MS = 120_000; // ImageMinimumGCAge
/** containerd's root: where its images live when CRI ImageFsInfo names no filesystem. */
export const DEFAULT_IMAGE_FS_PATH = '/var/lib/containerd';
/**
 * The sandbox (pause) image image GC never removes (upstream --pod-infra-container-image, default
 * k8s.gcr.io/pause:3.2 in 1.20): containerd 1.6's default `sandbox_image`, the one it really runs.
 */
export const DEFAULT_POD_SANDBOX_IMAGE = 'registry.k8s.io/pause:3.6';

/** pkg/kubelet/kuberuntime */
export const MIN_GRACE_PERIOD_SECONDS = 2; // minimumGracePeriodInSeconds
export const DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS = 30; // DefaultTerminationGracePeriodSeconds
export const CRI_MAX_MESSAGE_BYTES = 16 * 1024 * 1024; // maxMsgSize in remote runtime client

/** Upstream CRI labels and annotations (pkg/kubelet/types/labels.go, kuberuntime/labels.go). */
export const LABEL_POD_NAME = 'io.kubernetes.pod.name';
export const LABEL_POD_NAMESPACE = 'io.kubernetes.pod.namespace';
export const LABEL_POD_UID = 'io.kubernetes.pod.uid';
export const LABEL_CONTAINER_NAME = 'io.kubernetes.container.name';
export const ANNOTATION_POD_DELETION_GRACE_PERIOD = 'io.kubernetes.pod.deletionGracePeriod';
export const ANNOTATION_POD_TERMINATION_GRACE_PERIOD = 'io.kubernetes.pod.terminationGracePeriod';
export const ANNOTATION_CONTAINER_HASH = 'io.kubernetes.container.hash';
export const ANNOTATION_CONTAINER_RESTART_COUNT = 'io.kubernetes.container.restartCount';
export const ANNOTATION_CONTAINER_TERMINATION_MESSAGE_PATH = 'io.kubernetes.container.terminationMessagePath';
export const ANNOTATION_CONTAINER_TERMINATION_MESSAGE_POLICY =
  'io.kubernetes.container.terminationMessagePolicy';
export const ANNOTATION_CONTAINER_PRESTOP_HANDLER = 'io.kubernetes.container.preStopHandler';
export const ANNOTATION_CONTAINER_PORTS = 'io.kubernetes.container.ports';

/** Pod annotations set by the config sources (pkg/kubelet/types/pod_update.go). */
export const ANNOTATION_CONFIG_SOURCE = 'kubernetes.io/config.source';
export const ANNOTATION_CONFIG_HASH = 'kubernetes.io/config.hash';
export const ANNOTATION_CONFIG_SEEN = 'kubernetes.io/config.seen';
export const ANNOTATION_CONFIG_MIRROR = 'kubernetes.io/config.mirror';

/** Termination messages (pkg/kubelet/kuberuntime). */
export const DEFAULT_TERMINATION_MESSAGE_PATH = '/dev/termination-log';
export const MAX_TERMINATION_MESSAGE_BYTES = 4096;

/** Pod config sources (pkg/kubelet/config). */
export const MAX_MANIFEST_BYTES = 10 * 1024 * 1024; // maxConfigLength (common.go)
export const HTTP_SOURCE_TIMEOUT_MS = 10_000; // http.Client Timeout in NewSourceURL (http.go)

/** Pod spec defaults (pkg/apis/core/v1/defaults.go, k8s.io/api/core/v1 constants). */
export const DEFAULT_SCHEDULER_NAME = 'default-scheduler'; // v1.DefaultSchedulerName
export const DEFAULT_PROBE_TIMEOUT_SECONDS = 1; // SetDefaults_Probe TimeoutSeconds
export const DEFAULT_PROBE_PERIOD_SECONDS = 10; // SetDefaults_Probe PeriodSeconds
export const DEFAULT_PROBE_SUCCESS_THRESHOLD = 1; // SetDefaults_Probe SuccessThreshold
export const DEFAULT_PROBE_FAILURE_THRESHOLD = 3; // SetDefaults_Probe FailureThreshold
export const DEFAULT_VOLUME_FILE_MODE = 0o644; // Secret/ConfigMap/DownwardAPI/ProjectedVolumeSourceDefaultMode
export const DEFAULT_SA_TOKEN_EXPIRATION_SECONDS = 3600; // SetDefaults_ServiceAccountTokenProjection

/** Service-account tokens (pkg/kubelet/token/token_manager.go). */
export const TOKEN_MAX_TTL_MS = 24 * 3600_000; // maxTTL: refresh a token older than this
export const TOKEN_GC_PERIOD_MS = 60_000; // gcPeriod: drop expired tokens from the cache
export const TOKEN_MAX_JITTER_SECONDS = 10; // maxJitter: refresh up to this much earlier
/** requiresRefresh: refresh within this percentage of the TTL before expiry (after 80 % of it). */
export const TOKEN_REFRESH_BEFORE_EXPIRY_PERCENT = 20;

/** pkg/kubelet/apis/config/v1beta1 defaults (KubeletConfiguration), serving fields. */
export const DEFAULT_ADDRESS = '0.0.0.0'; // address
export const DEFAULT_PORT = 10250; // port (ports.KubeletPort)
export const DEFAULT_AUTHENTICATION_WEBHOOK_CACHE_TTL_MS = 2 * 60_000; // authentication.webhook.cacheTTL
export const DEFAULT_AUTHORIZATION_WEBHOOK_CACHE_AUTHORIZED_TTL_MS = 5 * 60_000; // authorization.webhook.cacheAuthorizedTTL
export const DEFAULT_AUTHORIZATION_WEBHOOK_CACHE_UNAUTHORIZED_TTL_MS = 30_000; // authorization.webhook.cacheUnauthorizedTTL
export const DEFAULT_STREAMING_CONNECTION_IDLE_TIMEOUT_MS = 4 * 3600_000; // streamingConnectionIdleTimeout
export const DEFAULT_CONTAINER_LOG_MAX_SIZE = '10Mi'; // containerLogMaxSize
export const DEFAULT_CONTAINER_LOG_MAX_FILES = 5; // containerLogMaxFiles
/**
 * Secure by default, from a file and from flags alone: upstream's v1beta1 file defaults. Upstream's
 * flag defaults (anonymous on, AlwaysAllow) are deliberately not reproduced.
 */
export const DEFAULT_ENABLE_SERVER = true; // enableServer
export const DEFAULT_AUTHENTICATION_ANONYMOUS = false; // authentication.anonymous.enabled
export const DEFAULT_AUTHENTICATION_WEBHOOK = true; // authentication.webhook.enabled
export const DEFAULT_AUTHORIZATION_MODE = 'Webhook'; // authorization.mode
export const DEFAULT_ENABLE_DEBUGGING_HANDLERS = true; // enableDebuggingHandlers
export const DEFAULT_ENABLE_SYSTEM_LOG_HANDLER = true; // enableSystemLogHandler

/** pkg/kubelet/runonce.go */
export const RUN_ONCE_MAX_RETRIES = 10; // runOnceMaxRetries (per-pod "is it running yet?" checks)
export const RUN_ONCE_RETRY_DELAY_MS = 1_000; // runOnceRetryDelay (first delay between checks)
export const RUN_ONCE_RETRY_DELAY_BACKOFF = 2; // runOnceRetryDelayBackoff (delay multiplier per retry)
export const DEFAULT_RUN_ONCE = false; // runOnce
/**
 * tskubelet's `--runonce-timeout` default (no upstream flag): upstream run-once keeps checking each
 * pod with a delay that starts at runOnceRetryDelay and doubles, at most runOnceMaxRetries times;
 * 1+2+…+512 s ≈ 17 min is the longest it waits for a pod.
 */
export const DEFAULT_RUN_ONCE_TIMEOUT_MS = Array.from(
  { length: RUN_ONCE_MAX_RETRIES },
  (_, i) => RUN_ONCE_RETRY_DELAY_MS * RUN_ONCE_RETRY_DELAY_BACKOFF ** i,
).reduce((a, b) => a + b, 0);

/** Logging (component-base LoggingConfiguration). */
export const DEFAULT_VERBOSITY = 0; // logging.verbosity
/** Ours, not upstream's (upstream defaults to "text"): JSON lines, which log pipelines parse without a pattern. */
export const DEFAULT_LOG_FORMAT: LogFormat = 'text'; // logging.format: klog's text, as upstream
export const DEFAULT_LOG_FLUSH_FREQUENCY_MS = 5_000; // --log-flush-frequency (component-base logs)

/** Node registration, node status and node lease (kubelet_node_status.go, nodelease, component-helpers lease). */
export const DEFAULT_NODE_STATUS_REPORT_FREQUENCY_MS = 5 * 60_000; // nodeStatusReportFrequency
export const DEFAULT_NODE_LEASE_DURATION_SECONDS = 40; // nodeLeaseDurationSeconds
export const NODE_LEASE_RENEW_INTERVAL_FRACTION = 0.25; // nodeLeaseRenewIntervalFraction (renew = duration × 0.25)
export const NODE_LEASE_NAMESPACE = 'kube-node-lease'; // v1.NamespaceNodeLease
export const NODE_LEASE_RENEW_JITTER = 0.04; // wait.JitterUntil factor in lease controller Run
export const NODE_LEASE_MAX_UPDATE_RETRIES = 5; // maxUpdateRetries (lease controller)
export const NODE_LEASE_MAX_BACKOFF_MS = 7_000; // maxBackoff (lease controller backoffEnsureLease)
export const NODE_STATUS_UPDATE_RETRY = 5; // nodeStatusUpdateRetry
export const NODE_REGISTER_INITIAL_STEP_MS = 100; // registerWithAPIServer first step
export const NODE_REGISTER_MAX_STEP_MS = 7_000; // registerWithAPIServer step cap
export const DEFAULT_EVICTION_HARD_MEMORY_AVAILABLE = '100Mi'; // DefaultEvictionHard memory.available
export const DEFAULT_EVICTION_HARD_NODEFS_AVAILABLE = '10%'; // DefaultEvictionHard nodefs.available
export const DEFAULT_EVICTION_HARD_NODEFS_INODES_FREE = '5%'; // DefaultEvictionHard nodefs.inodesFree
export const DEFAULT_EVICTION_HARD_IMAGEFS_AVAILABLE = '15%'; // DefaultEvictionHard imagefs.available
/** DefaultEvictionHard: v1beta1 defaulting when evictionHard is nil (no merge with a given map in 1.20). */
export const DEFAULT_EVICTION_HARD: Readonly<Record<string, string>> = {
  'memory.available': DEFAULT_EVICTION_HARD_MEMORY_AVAILABLE,
  'nodefs.available': DEFAULT_EVICTION_HARD_NODEFS_AVAILABLE,
  'nodefs.inodesFree': DEFAULT_EVICTION_HARD_NODEFS_INODES_FREE,
  'imagefs.available': DEFAULT_EVICTION_HARD_IMAGEFS_AVAILABLE,
};
export const DEFAULT_VOLUME_STATS_AGG_PERIOD_MS = 60_000; // VolumeStatsAggPeriod
export const DEFAULT_EVICTION_PRESSURE_TRANSITION_PERIOD_MS = 5 * 60_000; // EvictionPressureTransitionPeriod
export const DEFAULT_EVICTION_MAX_POD_GRACE_PERIOD_SECONDS = 0; // EvictionMaxPodGracePeriod

/**
 * API client limits and registration (pkg/kubelet/apis/config/v1beta1 defaults). The QPS/burst
 * defaults are upstream's since 1.27 (PR 116121); 1.20–1.26 defaulted all four to 5 / 10.
 */
export const DEFAULT_KUBE_API_QPS = 50; // kubeAPIQPS
export const DEFAULT_KUBE_API_BURST = 100; // kubeAPIBurst
export const DEFAULT_EVENT_RECORD_QPS = 50; // eventRecordQPS
export const DEFAULT_EVENT_BURST = 100; // eventBurst
export const DEFAULT_REGISTER_NODE = true; // registerNode
/** --cert-dir: `<root-dir>/pki` (upstream's default is the fixed /var/lib/kubelet/pki, the same with the default root dir). */
export const CERT_DIR_NAME = 'pki';
export const DEFAULT_ROTATE_CERTIFICATES = false; // rotateCertificates (v1beta1 default)
export const DEFAULT_SERVER_TLS_BOOTSTRAP = false; // serverTLSBootstrap (v1beta1 default)
/** What client-go substitutes when a rest.Config carries QPS 0 / Burst 0 (k8s.io/client-go/rest). */
export const CLIENT_GO_DEFAULT_QPS = 5; // rest.DefaultQPS
export const CLIENT_GO_DEFAULT_BURST = 10; // rest.DefaultBurst

/** The Kubernetes API level tskubelet implements (the test control plane's version). */
export const KUBERNETES_API_VERSION = 'v1.20.2';

/** Lifecycle hooks and termination messages (pkg/kubelet/lifecycle, pkg/kubelet/container). */
export const MAX_TERMINATION_MESSAGE_LOG_LINES = 80; // MaxContainerTerminationMessageLogLines
export const MAX_TERMINATION_MESSAGE_LOG_BYTES = 2048; // MaxContainerTerminationMessageLogLength
export const LIFECYCLE_HTTP_MAX_RESPONSE_BYTES = 10 * 1024; // maxRespBodyLength (lifecycle/handlers.go)
export const LIFECYCLE_HTTP_MAX_REDIRECTS = 10; // probe http RedirectChecker: "stopped after 10 redirects"
/**
 * tskubelet's own: upstream gives exec and httpGet postStart hooks no timeout at all (a hung hook
 * holds the container in ContainerCreating until the pod is deleted). We give them
 * max(this, terminationGracePeriodSeconds); a sleep hook is bounded by its own seconds.
 */
export const POST_START_HOOK_MIN_TIMEOUT_SECONDS = 30;

/** Probes (pkg/kubelet/prober, pkg/probe). */
export const PROBE_MAX_RETRIES = 3; // maxProbeRetries (prober.go): attempts when a probe errors (not when it fails)
export const PROBE_MAX_OUTPUT_BYTES = 10 * 1024; // maxReadLength (probe/exec) and maxRespBodyLength (probe/http)
export const PROBE_MAX_REDIRECTS = 10; // net/http default redirect limit kept by probe/http RedirectChecker
export const PROBE_USER_AGENT = 'kube-probe/1.20'; // "kube-probe/<major>.<minor>" of KUBERNETES_API_VERSION

/** Image pulls (pkg/kubelet/apis/config/v1beta1 defaults; pkg/kubelet/images). */
export const DEFAULT_REGISTRY_PULL_QPS = 5; // registryPullQPS (0 = no limit)
export const DEFAULT_REGISTRY_BURST = 10; // registryBurst
/**
 * maxParallelImagePulls when not configured. Upstream defaults to serializeImagePulls=true (one pull
 * at a time) and, with it false, to no limit (nil); tskubelet pulls in parallel by default, at most 5.
 */
export const DEFAULT_MAX_PARALLEL_IMAGE_PULLS = 5;
/** Bound on one image pull. Not upstream (its CRI PullImage has no deadline): ours never waits forever. */
export const IMAGE_PULL_TIMEOUT_MS = 10 * 60_000;

/** Node registry credentials and node images (pkg/credentialprovider, pkg/kubelet/nodestatus). */
/**
 * How long the node's docker config file (config.json / .dockercfg) is cached before it is read
 * again. Ours: upstream's CachingDockerConfigProvider keeps it 5 min; a file fixed by an operator
 * should count at the next pull attempt, and a read is a few small files.
 */
export const NODE_DOCKER_CONFIG_CACHE_MS = 10_000;
/** Secret and ConfigMap managers (pkg/kubelet/apis/config/v1beta1 defaults, pkg/kubelet/util/manager). */
export const CHANGE_DETECTION_STRATEGIES = ['Watch', 'Cache', 'Get'] as const; // ResourceChangeDetectionStrategy
export const DEFAULT_CONFIGMAP_AND_SECRET_CHANGE_DETECTION_STRATEGY = 'Watch'; // configMapAndSecretChangeDetectionStrategy
export const DEFAULT_NODE_STATUS_MAX_IMAGES = 50; // nodeStatusMaxImages (-1 = no cap)
export const MAX_NAMES_PER_IMAGE_IN_NODE_STATUS = 5; // nodestatus.MaxNamesPerImageInNodeStatus

/** Security profiles (pkg/kubelet/kuberuntime, k8s.io/api/core/v1 annotation_key_constants.go). */
export const SECCOMP_PROFILE_DIR_NAME = 'seccomp'; // seccompProfileRoot = <rootDir>/seccomp
export const DEFAULT_SECCOMP_DEFAULT = false; // seccompDefault
/** singleProcessOOMKill (1.32+): false, i.e. the whole container is OOM-killed on cgroup v2. */
export const DEFAULT_SINGLE_PROCESS_OOM_KILL = false;
/** Ours, not upstream's: an adaptive concurrency limit on sandbox/container creation (runtime/pacer.ts). */
export const DEFAULT_RUNTIME_PACING = true;
/** tskubelet only (`--evented-pleg`): containerd events drive the PLEG, the relist is the safety net. */
export const DEFAULT_EVENTED_PLEG = false;
/** pkg/volume/csi csi_plugin.go csiTimeout: the deadline of the kubelet's CSI calls (`--csi-call-timeout`, tskubelet only). */
export const CSI_TIMEOUT_MS = 2 * 60_000;
export const SECCOMP_POD_ANNOTATION_KEY = 'seccomp.security.alpha.kubernetes.io/pod'; // v1.SeccompPodAnnotationKey
export const SECCOMP_CONTAINER_ANNOTATION_KEY_PREFIX = 'container.seccomp.security.alpha.kubernetes.io/'; // v1.SeccompContainerAnnotationKeyPrefix
export const APPARMOR_CONTAINER_ANNOTATION_KEY_PREFIX = 'container.apparmor.security.beta.kubernetes.io/'; // v1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix

/**
 * Pod cgroups per QoS class (pkg/kubelet/apis/config/v1beta1 defaults; pkg/kubelet/cm). CPU values
 * are cgroup v1 units: shares, and CFS quota/period in microseconds.
 */
export const DEFAULT_CGROUPS_PER_QOS = true; // cgroupsPerQOS
export const DEFAULT_CGROUP_DRIVER = 'cgroupfs'; // cgroupDriver
export const DEFAULT_CGROUP_ROOT = '/'; // --cgroup-root "" becomes "/" when cgroupsPerQOS (cmd/kubelet/app)
export const DEFAULT_POD_PIDS_LIMIT = -1; // podPidsLimit (-1 = no pod-level limit)
export const DEFAULT_CPU_CFS_QUOTA = true; // cpuCFSQuota
export const DEFAULT_CPU_CFS_QUOTA_PERIOD_MS = 100; // cpuCFSQuotaPeriod
export const DEFAULT_ENFORCE_NODE_ALLOCATABLE: readonly string[] = ['pods']; // DefaultNodeAllocatableEnforcement
export const NODE_ALLOCATABLE_CGROUP_NAME = 'kubepods'; // defaultNodeAllocatableCgroupName
export const POD_CGROUP_NAME_PREFIX = 'pod'; // podCgroupNamePrefix
export const CGROUP_MIN_SHARES = 2; // cm.MinShares
export const CGROUP_MAX_SHARES = 262_144; // cm.MaxShares
export const CGROUP_SHARES_PER_CPU = 1024; // cm.SharesPerCPU
export const CGROUP_QUOTA_PERIOD_US = 100_000; // cm.QuotaPeriod
export const CGROUP_MIN_QUOTA_PERIOD_US = 1000; // cm.MinQuotaPeriod
export const CGROUP_HUGE_PAGES_UNBOUNDED = 2 ** 62; // qosContainerManager setHugePagesUnbounded: 1 << 62 bytes
export const PERIODIC_QOS_CGROUP_UPDATE_INTERVAL_MS = 60_000; // periodicQOSCgroupUpdateInterval

/** Pod DNS (pkg/kubelet/network/dns; limits from pkg/apis/core/validation, ExpandedDNSConfig GA in 1.28). */
export const DEFAULT_DNS_OPTIONS: readonly string[] = ['ndots:5']; // defaultDNSOptions (ClusterFirst)
export const MAX_DNS_NAMESERVERS = 3; // validation.MaxDNSNameservers
export const MAX_DNS_SEARCH_PATHS = 32; // validation.MaxDNSSearchPaths (1.20: 6)
export const MAX_DNS_SEARCH_LIST_CHARS = 2048; // validation.MaxDNSSearchListChars (1.20: 256)
export const MAX_DNS_SEARCH_PATH_LENGTH = 253; // utilvalidation.DNS1123SubdomainMaxLength

/**
 * Graceful node shutdown (pkg/kubelet/nodeshutdown, pkg/apis/scheduling). 1.20's v1beta1 defaulting
 * leaves both grace periods at 0 (the field comments' "30s"/"10s" are never applied), which keeps
 * the feature off.
 */
export const DEFAULT_SHUTDOWN_GRACE_PERIOD_MS = 0; // shutdownGracePeriod
export const DEFAULT_SHUTDOWN_GRACE_PERIOD_CRITICAL_PODS_MS = 0; // shutdownGracePeriodCriticalPods
export const SYSTEM_CRITICAL_PRIORITY = 2 * 1_000_000_000; // scheduling.SystemCriticalPriority
export const LOGIND_CONF_DROP_IN_DIR = '/etc/systemd/logind.conf.d'; // logindConfigDirectory (systemd package)
export const KUBELET_LOGIND_CONF_NAME = '99-kubelet.conf'; // kubeletLogindConf
/** Pause before watching logind again after the watch died (dbusReconnectPeriod, upstream 1.22+). */
export const LOGIND_RECONNECT_PERIOD_MS = 1_000;

/**
 * tskubelet: at most this many containers of one pod are set up and started at once. Upstream
 * starts them one by one; starting them together saves a pod's start-up, and the cap keeps a pod
 * with hundreds of containers from flooding the event loop with their host-side setup at once.
 */
export const MAX_PARALLEL_CONTAINER_STARTS = 16;

/**
 * API client credentials (client-go transport and exec plugin; pkg/kubelet/certificate/transport.go).
 * Client certificate files are checked as often as the kubelet's rotating transport checks its
 * certificate manager (client-go's own file reload loop, CertCallbackRefreshDuration, runs every
 * 5 min but also reads the files at each new TLS handshake, which a node:https agent cannot).
 */
export const CLIENT_CERT_FILE_CHECK_PERIOD_MS = 10_000; // updateTransport period (10*time.Second)
export const TOKEN_FILE_PERIOD_MS = 60_000; // NewCachedFileTokenSource fileTokenSource.period
export const TOKEN_SOURCE_LEEWAY_MS = 10_000; // NewCachedFileTokenSource cachingTokenSource.leeway
/** tskubelet: client-go waits for an exec credential plugin for ever; we give up after this. */
export const EXEC_PLUGIN_TIMEOUT_MS = 60_000;
/**
 * tskubelet: connections made with a client certificate that was since replaced are closed when
 * idle, and at the latest after this (upstream closes them all at once: connrotation CloseAll).
 * Longer than the longest watch the reflectors ask for (timeoutSeconds up to 2 × 5 min).
 */
export const RETIRED_CONNECTIONS_GRACE_MS = 11 * 60_000;
