/**
 * KubeletConfiguration as written: the file's fields (durations as Go duration strings, absent
 * fields `undefined`) and the values given on the command line. Nothing here is defaulted or
 * validated; `compileConfig` does that.
 */
import type { FlagValuesOf, KUBELET_FIELDS } from './fields.ts';
import type { SERVER_FIELDS } from './server-fields.ts';

export const KUBELET_CONFIG_API_VERSION = 'kubelet.config.k8s.io/v1beta1';
export const KUBELET_CONFIG_KIND = 'KubeletConfiguration';

/** A taint as written in the file or on the command line, before validation. */
export interface RawTaint {
  key: string;
  value?: string;
  /** Empty when the file leaves it out (validation then rejects it). */
  effect: string;
}

/** The serving, authentication and authorization fields of the file (quantities as given). */
export interface RawServerConfiguration {
  enableServer?: boolean;
  tlsCertFile?: string;
  tlsPrivateKeyFile?: string;
  tlsCipherSuites?: string[];
  tlsMinVersion?: string;
  authentication?: {
    anonymous?: { enabled?: boolean };
    webhook?: { enabled?: boolean; cacheTTL?: string };
    x509?: { clientCAFile?: string };
  };
  authorization?: {
    mode?: string;
    webhook?: { cacheAuthorizedTTL?: string; cacheUnauthorizedTTL?: string };
  };
  enableDebuggingHandlers?: boolean;
  enableSystemLogHandler?: boolean;
  streamingConnectionIdleTimeout?: string;
  containerLogMaxSize?: string;
  containerLogMaxFiles?: number;
}

/**
 * The fields of a KubeletConfiguration file that tskubelet implements. Relative `staticPodPath`,
 * `podLogsDir` and TLS/CA file paths are already resolved against the file's directory (upstream
 * does the same). Every leaf here has a row in the field table (`fields.ts`); the compiler checks.
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
  singleProcessOOMKill?: boolean;
  allowedUnsafeSysctls?: string[];
  logging?: { format?: string; verbosity?: number; vmodule?: string; flushFrequency?: string };
  kubeAPIQPS?: number;
  kubeAPIBurst?: number;
  eventRecordQPS?: number;
  eventBurst?: number;
  nodeStatusReportFrequency?: string;
  nodeLeaseDurationSeconds?: number;
  registerNode?: boolean;
  rotateCertificates?: boolean;
  serverTLSBootstrap?: boolean;
  registerWithTaints?: RawTaint[];
  resolvConf?: string;
  clusterDomain?: string;
  clusterDNS?: string[];
  cgroupsPerQOS?: boolean;
  cgroupRoot?: string;
  cgroupDriver?: string;
  podPidsLimit?: number;
  cpuCFSQuota?: boolean;
  cpuCFSQuotaPeriod?: string;
  enforceNodeAllocatable?: string[];
  systemReserved?: Record<string, string>;
  kubeReserved?: Record<string, string>;
  reservedSystemCPUs?: string;
  systemReservedCgroup?: string;
  kubeReservedCgroup?: string;
  serializeImagePulls?: boolean;
  maxParallelImagePulls?: number;
  registryPullQPS?: number;
  registryBurst?: number;
  nodeStatusMaxImages?: number;
  configMapAndSecretChangeDetectionStrategy?: string;
  imageGCHighThresholdPercent?: number;
  imageGCLowThresholdPercent?: number;
  imageMinimumGCAge?: string;
  shutdownGracePeriod?: string;
  shutdownGracePeriodCriticalPods?: string;
  volumeStatsAggPeriod?: string;
  evictionHard?: Record<string, string>;
  evictionSoft?: Record<string, string>;
  evictionSoftGracePeriod?: Record<string, string>;
  evictionMinimumReclaim?: Record<string, string>;
  evictionPressureTransitionPeriod?: string;
  evictionMaxPodGracePeriod?: number;
  featureGates?: Record<string, boolean>;
}

/** What a file field may hold once decoded; anything else is a nested object of more fields. */
type Leaf = string | number | boolean | string[] | RawTaint[] | Record<string, string[]>;

/** Dotted paths of the leaves of T (`logging.format`, `authentication.webhook.cacheTTL`, …). */
type LeafPaths<T> = {
  [K in keyof T & string]-?: NonNullable<T[K]> extends Leaf
    ? K
    : // A map (an index signature, e.g. evictionHard) is a leaf too; a nested object has fixed keys.
      string extends keyof NonNullable<T[K]>
      ? K
      : `${K}.${LeafPaths<NonNullable<T[K]>>}`;
}[keyof T & string];

/** Every field path of the file format tskubelet implements. */
export type RawFieldPath = LeafPaths<RawKubeletConfiguration>;

/** A decoded configuration file and what was accepted but ignored in it. */
export interface DecodedConfigFile {
  /** The --config file, or the --config-dir directory when there is no --config file. */
  readonly path: string;
  /** The --config-dir drop-ins merged over it, in the order they were merged. */
  readonly dropIns?: readonly string[];
  readonly raw: RawKubeletConfiguration;
  /** Known upstream fields tskubelet does not implement yet (accepted, ignored), one line each. */
  readonly warnings: readonly string[];
}

/** The kubelet API's flags (`--anonymous-auth`, `--client-ca-file`, …); a key only when given. */
export type ServerFlagValues = FlagValuesOf<typeof SERVER_FIELDS>;

/**
 * Values given explicitly on the command line, one key per flag of the field table. A key is
 * present only when its flag was given; present keys override the file, absent keys never do.
 * Durations are Go duration strings.
 */
export type FlagValues = FlagValuesOf<typeof KUBELET_FIELDS> & {
  /** The kubelet API's flags, kept apart because they are shaped differently from its fields. */
  server?: ServerFlagValues;
};
