/**
 * The subset of the CRI `runtime.v1` API tskubelet uses, as JavaScript values: field names in
 * camelCase (proto-loader `keepCase: false`), int64 as `number` (timestamps are Unix nanoseconds;
 * a double keeps them to ~256 ns, far below anything the kubelet compares), enums as their names.
 * Field numbers live in `api.proto` beside this file.
 */

export type Protocol = 'TCP' | 'UDP' | 'SCTP';
export type NamespaceMode = 'POD' | 'CONTAINER' | 'NODE' | 'TARGET';
export type PodSandboxState = 'SANDBOX_READY' | 'SANDBOX_NOTREADY';
export type ContainerState =
  'CONTAINER_CREATED' | 'CONTAINER_RUNNING' | 'CONTAINER_EXITED' | 'CONTAINER_UNKNOWN';
export type MountPropagation =
  'PROPAGATION_PRIVATE' | 'PROPAGATION_HOST_TO_CONTAINER' | 'PROPAGATION_BIDIRECTIONAL';

export interface Int64Value {
  value: number;
}

export interface KeyValue {
  key: string;
  value: string;
}

export interface PodSandboxMetadata {
  name: string;
  uid: string;
  namespace: string;
  attempt: number;
}

export interface DNSConfig {
  servers?: string[];
  searches?: string[];
  options?: string[];
}

export interface PortMapping {
  protocol?: Protocol;
  containerPort: number;
  hostPort?: number;
  hostIp?: string;
}

export interface NamespaceOption {
  network?: NamespaceMode;
  pid?: NamespaceMode;
  ipc?: NamespaceMode;
  targetId?: string;
}

export interface SecurityProfile {
  profileType: 'RuntimeDefault' | 'Unconfined' | 'Localhost';
  localhostRef?: string;
}

export interface LinuxSandboxSecurityContext {
  namespaceOptions?: NamespaceOption;
  runAsUser?: Int64Value;
  runAsGroup?: Int64Value;
  readonlyRootfs?: boolean;
  supplementalGroups?: number[];
  privileged?: boolean;
  seccomp?: SecurityProfile;
  apparmor?: SecurityProfile;
}

/** A container's hugetlb limit for one page size ("2MB", "1GB"), in bytes. */
export interface HugepageLimit {
  pageSize: string;
  limit: number;
}

export interface LinuxContainerResources {
  cpuPeriod?: number;
  cpuQuota?: number;
  cpuShares?: number;
  memoryLimitInBytes?: number;
  oomScoreAdj?: number;
  cpusetCpus?: string;
  cpusetMems?: string;
  hugepageLimits?: HugepageLimit[];
  unified?: Record<string, string>;
  memorySwapLimitInBytes?: number;
}

export interface LinuxPodSandboxConfig {
  cgroupParent?: string;
  securityContext?: LinuxSandboxSecurityContext;
  sysctls?: Record<string, string>;
  overhead?: LinuxContainerResources;
  resources?: LinuxContainerResources;
}

export interface PodSandboxConfig {
  metadata: PodSandboxMetadata;
  hostname?: string;
  logDirectory?: string;
  dnsConfig?: DNSConfig;
  portMappings?: PortMapping[];
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  linux?: LinuxPodSandboxConfig;
}

export interface PodIP {
  ip: string;
}

export interface PodSandboxNetworkStatus {
  ip: string;
  additionalIps?: PodIP[];
}

export interface PodSandboxStatus {
  id: string;
  metadata: PodSandboxMetadata;
  state: PodSandboxState;
  createdAt: number;
  network?: PodSandboxNetworkStatus;
  /** LinuxPodSandboxStatus (field 6): namespaces (1) → Namespace.options (2). */
  linux?: { namespaces?: { options?: NamespaceOption } };
  labels: Record<string, string>;
  annotations: Record<string, string>;
  runtimeHandler?: string;
}

export interface PodSandbox {
  id: string;
  metadata: PodSandboxMetadata;
  state: PodSandboxState;
  createdAt: number;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  runtimeHandler?: string;
}

export interface PodSandboxFilter {
  id?: string;
  state?: { state: PodSandboxState };
  labelSelector?: Record<string, string>;
}

export interface ImageSpec {
  image: string;
  annotations?: Record<string, string>;
}

export interface ContainerMetadata {
  name: string;
  attempt: number;
}

export interface Mount {
  containerPath: string;
  hostPath: string;
  readonly?: boolean;
  selinuxRelabel?: boolean;
  propagation?: MountPropagation;
}

/** CRI Device: `hostPath` (a device node, or a symlink to one) at `containerPath`, with cgroup `permissions`. */
export interface Device {
  containerPath: string;
  hostPath: string;
  permissions: string;
}

export interface Capability {
  addCapabilities?: string[];
  dropCapabilities?: string[];
}

export interface LinuxContainerSecurityContext {
  capabilities?: Capability;
  privileged?: boolean;
  namespaceOptions?: NamespaceOption;
  runAsUser?: Int64Value;
  runAsUsername?: string;
  readonlyRootfs?: boolean;
  supplementalGroups?: number[];
  noNewPrivs?: boolean;
  runAsGroup?: Int64Value;
  maskedPaths?: string[];
  readonlyPaths?: string[];
  seccomp?: SecurityProfile;
  apparmor?: SecurityProfile;
}

export interface LinuxContainerConfig {
  resources?: LinuxContainerResources;
  securityContext?: LinuxContainerSecurityContext;
}

export interface ContainerConfig {
  metadata: ContainerMetadata;
  image: ImageSpec;
  command?: string[];
  args?: string[];
  workingDir?: string;
  envs?: KeyValue[];
  mounts?: Mount[];
  devices?: Device[];
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  /** Relative to the sandbox's logDirectory. */
  logPath?: string;
  stdin?: boolean;
  stdinOnce?: boolean;
  tty?: boolean;
  linux?: LinuxContainerConfig;
}

export interface Container {
  id: string;
  podSandboxId: string;
  metadata: ContainerMetadata;
  image: ImageSpec;
  imageRef: string;
  state: ContainerState;
  createdAt: number;
  labels: Record<string, string>;
  annotations: Record<string, string>;
}

export interface ContainerFilter {
  id?: string;
  state?: { state: ContainerState };
  podSandboxId?: string;
  labelSelector?: Record<string, string>;
}

export interface ContainerStatus {
  id: string;
  metadata: ContainerMetadata;
  state: ContainerState;
  createdAt: number;
  startedAt: number;
  finishedAt: number;
  exitCode: number;
  image: ImageSpec;
  imageRef: string;
  reason: string;
  message: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  mounts: Mount[];
  logPath: string;
}

export interface ExecSyncResult {
  stdout: Buffer;
  stderr: Buffer;
  exitCode: number;
}

export interface VersionInfo {
  version: string;
  runtimeName: string;
  runtimeVersion: string;
  runtimeApiVersion: string;
}

export interface RuntimeCondition {
  type: string;
  status: boolean;
  reason: string;
  message: string;
}

export interface RuntimeStatus {
  conditions: RuntimeCondition[];
  /**
   * With `verbose`: the runtime's extra information (containerd: `config`, its CRI plugin
   * configuration as JSON, among others); absent otherwise.
   */
  info?: Record<string, string>;
}

export interface Image {
  id: string;
  repoTags: string[];
  repoDigests: string[];
  size: number;
  uid?: Int64Value;
  username: string;
  pinned?: boolean;
}

export interface AuthConfig {
  username?: string;
  password?: string;
  auth?: string;
  serverAddress?: string;
  identityToken?: string;
  registryToken?: string;
}

export interface FilesystemUsage {
  timestamp: number;
  fsId?: { mountpoint: string };
  usedBytes?: { value: number };
  inodesUsed?: { value: number };
}

export interface UInt64Value {
  value: number;
}

/** What Exec/Attach stream; the runtime refuses a request where none is true. */
export interface StreamFlags {
  stdin: boolean;
  stdout: boolean;
  stderr: boolean;
  tty: boolean;
}

export interface CpuUsage {
  timestamp: number;
  usageCoreNanoSeconds?: UInt64Value;
  usageNanoCores?: UInt64Value;
}

export interface MemoryUsage {
  timestamp: number;
  workingSetBytes?: UInt64Value;
  availableBytes?: UInt64Value;
  usageBytes?: UInt64Value;
  rssBytes?: UInt64Value;
  pageFaults?: UInt64Value;
  majorPageFaults?: UInt64Value;
}

export interface ContainerStats {
  attributes?: {
    id: string;
    metadata?: ContainerMetadata;
    labels: Record<string, string>;
    annotations: Record<string, string>;
  };
  cpu?: CpuUsage;
  memory?: MemoryUsage;
  writableLayer?: FilesystemUsage;
}

export interface ContainerStatsFilter {
  id?: string;
  podSandboxId?: string;
  labelSelector?: Record<string, string>;
}

export interface NetworkInterfaceUsage {
  name: string;
  rxBytes?: UInt64Value;
  rxErrors?: UInt64Value;
  txBytes?: UInt64Value;
  txErrors?: UInt64Value;
}

export interface PodSandboxStats {
  attributes?: {
    id: string;
    metadata?: PodSandboxMetadata;
    labels: Record<string, string>;
    annotations: Record<string, string>;
  };
  linux?: {
    cpu?: CpuUsage;
    memory?: MemoryUsage;
    network?: {
      timestamp: number;
      defaultInterface?: NetworkInterfaceUsage;
      interfaces: NetworkInterfaceUsage[];
    };
    process?: { timestamp: number; processCount?: UInt64Value };
    containers: ContainerStats[];
  };
}

export interface PodSandboxStatsFilter {
  id?: string;
  labelSelector?: Record<string, string>;
}

/** Per-call options: every call has a deadline; callers may also cancel. */
export interface CallOptions {
  signal?: AbortSignal;
  /** Overrides the client's default deadline (runtimeRequestTimeout). */
  timeoutMs?: number;
}

/**
 * CRI RuntimeService. Every method rejects with a `CriError` (a KubeletError carrying the gRPC code
 * and the operation name) and never hangs past its deadline.
 */
export interface RuntimeService {
  version(opts?: CallOptions): Promise<VersionInfo>;
  status(opts?: CallOptions & { verbose?: boolean }): Promise<RuntimeStatus>;
  runPodSandbox(config: PodSandboxConfig, runtimeHandler?: string, opts?: CallOptions): Promise<string>;
  stopPodSandbox(podSandboxId: string, opts?: CallOptions): Promise<void>;
  removePodSandbox(podSandboxId: string, opts?: CallOptions): Promise<void>;
  podSandboxStatus(podSandboxId: string, opts?: CallOptions): Promise<PodSandboxStatus>;
  listPodSandbox(filter?: PodSandboxFilter, opts?: CallOptions): Promise<PodSandbox[]>;
  createContainer(
    podSandboxId: string,
    config: ContainerConfig,
    sandboxConfig: PodSandboxConfig,
    opts?: CallOptions,
  ): Promise<string>;
  startContainer(containerId: string, opts?: CallOptions): Promise<void>;
  /** `timeoutSeconds` is the grace period before the runtime sends SIGKILL. */
  stopContainer(containerId: string, timeoutSeconds: number, opts?: CallOptions): Promise<void>;
  removeContainer(containerId: string, opts?: CallOptions): Promise<void>;
  listContainers(filter?: ContainerFilter, opts?: CallOptions): Promise<Container[]>;
  /** With `verbose`, the runtime's extra `info` (JSON strings by key, as crictl inspect prints). */
  containerStatus(
    containerId: string,
    opts?: CallOptions & { verbose?: boolean },
  ): Promise<ContainerStatus & { info?: Record<string, string> }>;
  execSync(
    containerId: string,
    cmd: string[],
    timeoutSeconds: number,
    opts?: CallOptions,
  ): Promise<ExecSyncResult>;
  /** Prepares an exec session on the runtime's streaming server; returns its URL. */
  exec(containerId: string, cmd: string[], flags: StreamFlags, opts?: CallOptions): Promise<string>;
  /** Prepares an attach session; returns its URL. */
  attach(containerId: string, flags: StreamFlags, opts?: CallOptions): Promise<string>;
  /** Prepares a port-forward session into the sandbox's network namespace; returns its URL. */
  portForward(podSandboxId: string, ports: number[], opts?: CallOptions): Promise<string>;
  /** Asks the runtime to reopen the container's log file (after the kubelet rotated it). */
  reopenContainerLog(containerId: string, opts?: CallOptions): Promise<void>;
  containerStats(containerId: string, opts?: CallOptions): Promise<ContainerStats>;
  listContainerStats(filter?: ContainerStatsFilter, opts?: CallOptions): Promise<ContainerStats[]>;
  podSandboxStats(podSandboxId: string, opts?: CallOptions): Promise<PodSandboxStats>;
  listPodSandboxStats(filter?: PodSandboxStatsFilter, opts?: CallOptions): Promise<PodSandboxStats[]>;
}

/** CRI ImageService; same error and deadline contract as RuntimeService. */
export interface ImageService {
  listImages(filter?: ImageSpec, opts?: CallOptions): Promise<Image[]>;
  /** null when the image is not present. */
  imageStatus(image: ImageSpec, opts?: CallOptions): Promise<Image | null>;
  /** Returns the image reference (digest) of the pulled image. */
  pullImage(
    image: ImageSpec,
    auth?: AuthConfig,
    sandboxConfig?: PodSandboxConfig,
    opts?: CallOptions,
  ): Promise<string>;
  removeImage(image: ImageSpec, opts?: CallOptions): Promise<void>;
  imageFsInfo(opts?: CallOptions): Promise<FilesystemUsage[]>;
}
