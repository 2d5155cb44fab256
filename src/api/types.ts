/**
 * The Kubernetes core/v1 Pod API as it travels on the wire: plain JSON, timestamps as RFC 3339
 * strings, quantities as strings. Only the fields tskubelet reads or writes are typed; anything else
 * in a manifest is carried through untouched (objects are never rebuilt field by field).
 *
 * Why not @kubernetes/client-node's V1Pod: its models turn timestamps into `Date` through an
 * ObjectSerializer, so a manifest parsed from YAML is not a V1Pod without a conversion pass, and the
 * standalone kubelet would load the whole client just for types.
 */

import { KubeletError } from '../util/errors.ts';

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

/** The three fields that name a pod everywhere in the kubelet: worker key, CRI sandbox metadata, logs. */
export interface PodIdentity {
  uid: string;
  name: string;
  namespace: string;
}

/**
 * A pod whose identity is known: `metadata.uid`, `name` and `namespace` are non-empty strings. Every
 * pod the pod sources hand on is one (static pods get a UID and the `default` namespace; API pods
 * are checked as they arrive), so the kubelet core, the runtime manager, status, probes, volumes and
 * stats take this type and never fall back to `''`. Plain {@link Pod} stays where a pod may lack
 * them: objects read from the API server before the check, mirror pods being built, fixtures.
 * Obtain one only through {@link hasPodIdentity} or {@link toKubeletPod}.
 */
export type KubeletPod = Pod & { metadata: ObjectMeta & PodIdentity };

/** The identity fields of `pod` that are missing or empty, in the order uid, name, namespace. */
export function missingPodIdentity(pod: Pod): (keyof PodIdentity)[] {
  const m = pod.metadata;
  const missing: (keyof PodIdentity)[] = [];
  if (typeof m.uid !== 'string' || m.uid === '') missing.push('uid');
  if (typeof m.name !== 'string' || m.name === '') missing.push('name');
  if (typeof m.namespace !== 'string' || m.namespace === '') missing.push('namespace');
  return missing;
}

/** True when `pod` carries a full identity (see {@link KubeletPod}). Never mutates `pod`. */
export function hasPodIdentity(pod: Pod): pod is KubeletPod {
  return missingPodIdentity(pod).length === 0;
}

/**
 * The checked constructor: `pod` itself, typed as a {@link KubeletPod}, or a
 * `KubeletError('InvalidArgument')` from `op` naming the missing fields. Never copies or mutates.
 */
export function toKubeletPod(pod: Pod, op: string): KubeletPod {
  if (hasPodIdentity(pod)) return pod;
  const missing = missingPodIdentity(pod).map((f) => `metadata.${f}`);
  throw new KubeletError('InvalidArgument', op, `pod has no ${missing.join(', ')}`);
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
  /** Block-mode PVC volumes, each handed to the container as the device at `devicePath`. */
  volumeDevices?: VolumeDevice[];
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
  /** Like subPath, with `$(VAR)` expanded from the container's environment (exclusive with subPath). */
  subPathExpr?: string;
  mountPropagation?: string;
}

/** core/v1 VolumeDevice: a raw block volume at `devicePath` in the container. */
export interface VolumeDevice {
  name: string;
  devicePath: string;
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
  /** How fsGroup ownership is applied to volumes that support it: `Always` (default) or `OnRootMismatch`. */
  fsGroupChangePolicy?: string;
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
