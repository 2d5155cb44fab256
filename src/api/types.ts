/**
 * The Kubernetes core/v1 Pod API as it travels on the wire: plain JSON, timestamps as RFC 3339
 * strings, quantities as strings. Only the fields tskubelet reads or writes are typed; anything else
 * in a manifest is carried through untouched (objects are never rebuilt field by field).
 *
 * Why not @kubernetes/client-node's V1Pod: its models turn timestamps into `Date` through an
 * ObjectSerializer, so a manifest parsed from YAML is not a V1Pod without a conversion pass, and the
 * standalone kubelet would load the whole client just for types.
 */

export interface ObjectMeta {
  name?: string;
  generateName?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  deletionGracePeriodSeconds?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: OwnerReference[];
  finalizers?: string[];
}

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

export interface Pod {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec: PodSpec;
  status?: PodStatus;
}

export interface PodList {
  apiVersion: 'v1';
  kind: 'PodList';
  metadata: { resourceVersion?: string };
  items: Pod[];
}

export type RestartPolicy = 'Always' | 'OnFailure' | 'Never';
export type PullPolicy = 'Always' | 'IfNotPresent' | 'Never';
export type DNSPolicy = 'ClusterFirst' | 'ClusterFirstWithHostNet' | 'Default' | 'None';

export interface PodSpec {
  containers: Container[];
  initContainers?: Container[];
  restartPolicy?: RestartPolicy;
  terminationGracePeriodSeconds?: number;
  activeDeadlineSeconds?: number;
  dnsPolicy?: DNSPolicy;
  dnsConfig?: { nameservers?: string[]; searches?: string[]; options?: { name: string; value?: string }[] };
  nodeSelector?: Record<string, string>;
  nodeName?: string;
  serviceAccountName?: string;
  serviceAccount?: string;
  automountServiceAccountToken?: boolean;
  /** Conditions (set by others through the API) that must be True for the pod to be Ready. */
  readinessGates?: { conditionType: string }[];
  hostNetwork?: boolean;
  hostPID?: boolean;
  hostIPC?: boolean;
  shareProcessNamespace?: boolean;
  securityContext?: PodSecurityContext;
  imagePullSecrets?: { name: string }[];
  hostname?: string;
  subdomain?: string;
  schedulerName?: string;
  tolerations?: Toleration[];
  hostAliases?: { ip: string; hostnames?: string[] }[];
  priority?: number;
  priorityClassName?: string;
  enableServiceLinks?: boolean;
  preemptionPolicy?: string;
  volumes?: Volume[];
  runtimeClassName?: string;
  overhead?: Record<string, string>;
  affinity?: Affinity;
}

export interface NodeSelectorRequirement {
  key: string;
  operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist' | 'Gt' | 'Lt';
  values?: string[];
}

export interface Affinity {
  nodeAffinity?: {
    requiredDuringSchedulingIgnoredDuringExecution?: {
      nodeSelectorTerms?: {
        matchExpressions?: NodeSelectorRequirement[];
        matchFields?: NodeSelectorRequirement[];
      }[];
    };
    preferredDuringSchedulingIgnoredDuringExecution?: unknown[];
  };
  podAffinity?: unknown;
  podAntiAffinity?: unknown;
}

export interface Toleration {
  key?: string;
  operator?: 'Exists' | 'Equal';
  value?: string;
  effect?: 'NoSchedule' | 'PreferNoSchedule' | 'NoExecute';
  tolerationSeconds?: number;
}

export interface Volume {
  name: string;
  emptyDir?: { medium?: string; sizeLimit?: string };
  hostPath?: { path: string; type?: string };
  [source: string]: unknown;
}

export interface Container {
  name: string;
  image?: string;
  command?: string[];
  args?: string[];
  workingDir?: string;
  ports?: ContainerPort[];
  env?: EnvVar[];
  envFrom?: unknown[];
  resources?: ResourceRequirements;
  volumeMounts?: VolumeMount[];
  livenessProbe?: Probe;
  readinessProbe?: Probe;
  startupProbe?: Probe;
  lifecycle?: Lifecycle;
  terminationMessagePath?: string;
  terminationMessagePolicy?: 'File' | 'FallbackToLogsOnError';
  imagePullPolicy?: PullPolicy;
  securityContext?: SecurityContext;
  stdin?: boolean;
  stdinOnce?: boolean;
  tty?: boolean;
  /** Sidecar init containers (1.28+) set this to `Always`. */
  restartPolicy?: 'Always';
}

export interface ContainerPort {
  name?: string;
  hostPort?: number;
  containerPort: number;
  protocol?: 'TCP' | 'UDP' | 'SCTP';
  hostIP?: string;
}

export interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: Record<string, unknown>;
}

export interface ResourceRequirements {
  limits?: Record<string, string>;
  requests?: Record<string, string>;
}

export interface VolumeMount {
  name: string;
  mountPath: string;
  readOnly?: boolean;
  subPath?: string;
  mountPropagation?: string;
}

export interface ExecAction {
  command?: string[];
}
export interface HTTPGetAction {
  path?: string;
  port: number | string;
  host?: string;
  scheme?: 'HTTP' | 'HTTPS';
  httpHeaders?: { name: string; value: string }[];
}
export interface TCPSocketAction {
  port: number | string;
  host?: string;
}

export interface Probe {
  exec?: ExecAction;
  httpGet?: HTTPGetAction;
  tcpSocket?: TCPSocketAction;
  grpc?: { port: number; service?: string };
  initialDelaySeconds?: number;
  timeoutSeconds?: number;
  periodSeconds?: number;
  successThreshold?: number;
  failureThreshold?: number;
  terminationGracePeriodSeconds?: number;
}

export interface LifecycleHandler {
  exec?: ExecAction;
  httpGet?: HTTPGetAction;
  tcpSocket?: TCPSocketAction;
  sleep?: { seconds: number };
}

export interface Lifecycle {
  postStart?: LifecycleHandler;
  preStop?: LifecycleHandler;
}

export interface SecurityContext {
  privileged?: boolean;
  runAsUser?: number;
  runAsGroup?: number;
  runAsNonRoot?: boolean;
  readOnlyRootFilesystem?: boolean;
  allowPrivilegeEscalation?: boolean;
  capabilities?: { add?: string[]; drop?: string[] };
  procMount?: string;
  seccompProfile?: { type: string; localhostProfile?: string };
}

export interface PodSecurityContext {
  runAsUser?: number;
  runAsGroup?: number;
  runAsNonRoot?: boolean;
  supplementalGroups?: number[];
  fsGroup?: number;
  sysctls?: { name: string; value: string }[];
  seccompProfile?: { type: string; localhostProfile?: string };
}

export type PodPhase = 'Pending' | 'Running' | 'Succeeded' | 'Failed' | 'Unknown';
export type ConditionStatus = 'True' | 'False' | 'Unknown';
export type PodConditionType = 'PodScheduled' | 'Initialized' | 'ContainersReady' | 'Ready';

export interface PodCondition {
  /** A PodConditionType, or a readiness-gate condition type. */
  type: string;
  status: ConditionStatus;
  lastProbeTime?: string | null;
  lastTransitionTime?: string;
  reason?: string;
  message?: string;
}

export interface PodStatus {
  phase?: PodPhase;
  conditions?: PodCondition[];
  message?: string;
  reason?: string;
  hostIP?: string;
  podIP?: string;
  podIPs?: { ip: string }[];
  startTime?: string;
  initContainerStatuses?: ContainerStatus[];
  containerStatuses?: ContainerStatus[];
  qosClass?: 'Guaranteed' | 'Burstable' | 'BestEffort';
}

export interface ContainerStateWaiting {
  reason?: string;
  message?: string;
}
export interface ContainerStateRunning {
  startedAt?: string;
}
export interface ContainerStateTerminated {
  exitCode: number;
  signal?: number;
  reason?: string;
  message?: string;
  startedAt?: string;
  finishedAt?: string;
  containerID?: string;
}

export interface ContainerState {
  waiting?: ContainerStateWaiting;
  running?: ContainerStateRunning;
  terminated?: ContainerStateTerminated;
}

export interface ContainerStatus {
  name: string;
  state: ContainerState;
  lastState: ContainerState;
  ready: boolean;
  restartCount: number;
  image: string;
  imageID: string;
  containerID?: string;
  started?: boolean;
}

/** `namespace/name`, the identity used in logs (upstream format.Pod without the UID). */
export function podFullName(pod: Pod): string {
  return `${pod.metadata.namespace ?? 'default'}/${pod.metadata.name ?? ''}`;
}

export function podUID(pod: Pod): string {
  return pod.metadata.uid ?? '';
}
