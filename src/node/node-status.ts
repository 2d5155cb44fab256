/**
 * The node status setters (upstream pkg/kubelet/nodestatus/setters.go) and the registration-time
 * helpers of kubelet_node_status.go (initialNode, reconcile with an existing Node,
 * nodeStatusHasChanged), as pure functions over plain Node JSON. Nothing here talks to the API.
 */
import type { ConditionStatus } from '../api/types.ts';
import type { EventType } from '../api/events.ts';
import { parseQuantity } from '../api/quantity.ts';
import { describeError } from '../util/errors.ts';
import { deepEqual } from '../util/json.ts';
import { DEFAULT_NODE_STATUS_MAX_IMAGES, MAX_NAMES_PER_IMAGE_IN_NODE_STATUS } from '../config/defaults.ts';
import type { MachineInfo } from './machine-info.ts';
import { formatBinary, formatDecimal, formatDecimalMilli, formatTime } from './format.ts';
import type { ContainerImage, Node, NodeAddress, NodeCondition, NodeStatus, Taint } from './types.ts';

/** What the kubelet supplies; read at every status computation. */
export interface NodeStatusInputs {
  /** Runtime and network readiness plus PLEG health; `message` says what is wrong when not ok. */
  runtimeReady(): { ok: boolean; message: string };
  /** `<runtime type>://<version>`, e.g. `containerd://1.6.20~ds1`. */
  runtimeVersion(): string;
  /** Node-pressure signals (the eviction manager's; all false until there is one). */
  pressure(): { memory: boolean; disk: boolean; pid: boolean };
}

/** Static settings the setters need. */
export interface NodeStatusConfig {
  nodeName: string;
  /** Value of the `kubernetes.io/hostname` label and the Hostname address (upstream kl.hostname). */
  hostname: string;
  /** The InternalIP address; undefined when none could be found (addresses are then left alone). */
  nodeIP: string | undefined;
  maxPods: number;
  kubeletVersion: string;
  /** daemonEndpoints.kubeletEndpoint.Port: the kubelet API port. */
  kubeletPort: number;
  /** systemReserved + kubeReserved, summed per resource, as quantities (`cpu: 100m`). */
  reserved: Record<string, string>;
  /** Hard eviction thresholds that reserve capacity (upstream hardEvictionReservation). */
  evictionHard: { memoryAvailable?: string; nodefsAvailable?: string };
  /** nodeStatusMaxImages: images reported in status.images, largest first; -1 = all. Default 50. */
  maxImages?: number;
}

/** An image as CRI ListImages reports it (the fields the images setter reads; a CRI Image fits). */
export interface NodeImageInfo {
  id: string;
  repoTags: readonly string[];
  repoDigests: readonly string[];
  /** Bytes. */
  size: number;
}

/** The node's images for one status computation: the list, or why it could not be had. */
export type NodeImageList = { ok: true; images: readonly NodeImageInfo[] } | { ok: false; error: string };

/** An event a setter wants recorded; the caller records it once the status is written. */
export interface NodeStatusEvent {
  type: EventType;
  reason: string;
  message: string;
}

export const ANNOTATION_CONTROLLER_MANAGED_ATTACH_DETACH =
  'volumes.kubernetes.io/controller-managed-attach-detach';

export const LABEL_HOSTNAME = 'kubernetes.io/hostname';
export const LABEL_OS = 'kubernetes.io/os';
export const LABEL_ARCH = 'kubernetes.io/arch';
export const LABEL_OS_BETA = 'beta.kubernetes.io/os';
export const LABEL_ARCH_BETA = 'beta.kubernetes.io/arch';

/** Labels the kubelet keeps in sync on an existing Node (upstream updateDefaultLabels, 1.20). */
const DEFAULT_LABELS = [
  LABEL_HOSTNAME,
  'topology.kubernetes.io/zone',
  'topology.kubernetes.io/region',
  'failure-domain.beta.kubernetes.io/zone',
  'failure-domain.beta.kubernetes.io/region',
  'node.kubernetes.io/instance-type',
  'beta.kubernetes.io/instance-type',
  LABEL_OS,
  LABEL_ARCH,
  LABEL_OS_BETA,
  LABEL_ARCH_BETA,
];

/** Go's GOARCH for Node's process.arch. */
export function goArch(arch: string = process.arch): string {
  const map: Record<string, string> = {
    x64: 'amd64',
    ia32: '386',
    arm64: 'arm64',
    arm: 'arm',
    ppc64: 'ppc64le',
    s390x: 's390x',
    riscv64: 'riscv64',
    loong64: 'loong64',
    mips: 'mips',
    mipsel: 'mipsle',
  };
  return map[arch] ?? arch;
}

/** Go's GOOS for Node's process.platform. */
export function goOS(platform: string = process.platform): string {
  return platform === 'win32' ? 'windows' : platform;
}

function nodeStatusEvent(nodeName: string, reason: string): NodeStatusEvent {
  // upstream recordNodeStatusEvent
  return { type: 'Normal', reason, message: `Node ${nodeName} status is now: ${reason}` };
}

// ---- resources ----

function isHugePages(name: string): boolean {
  return name.startsWith('hugepages-');
}

/** Formats a resource amount (cores for cpu, bytes for memory-like, a count otherwise) canonically. */
export function formatResource(name: string, value: number): string {
  if (name === 'cpu') return formatDecimalMilli(Math.round(value * 1000));
  if (name === 'memory' || name === 'ephemeral-storage' || isHugePages(name)) return formatBinary(value);
  return formatDecimal(value);
}

function quantityValue(q: string, field: string): number {
  return parseQuantity(q, field);
}

/** A threshold `100Mi` or `10%` of `capacity` (upstream GetThresholdQuantity; percentages are float32). */
function thresholdBytes(threshold: string, capacity: number, field: string): number {
  const t = threshold.trim();
  if (t.endsWith('%')) {
    const pct = Math.fround(Math.fround(Number(t.slice(0, -1))) / 100);
    if (!Number.isFinite(pct)) throw new Error(`${field}: invalid percentage ${JSON.stringify(threshold)}`);
    return Math.trunc(capacity * pct);
  }
  return quantityValue(t, field);
}

/** upstream cadvisor.CapacityFromMachineInfo + ContainerManager.GetCapacity + pods. */
export function machineCapacity(machine: MachineInfo, maxPods: number): Record<string, number> {
  const c: Record<string, number> = {
    cpu: machine.numCores,
    memory: machine.memoryCapacityBytes,
  };
  for (const hp of machine.hugePages) {
    c[`hugepages-${formatBinary(hp.pageSizeKiB * 1024)}`] = hp.pageSizeKiB * 1024 * hp.numPages;
  }
  c['pods'] = maxPods;
  if (machine.rootfsCapacityBytes !== undefined) c['ephemeral-storage'] = machine.rootfsCapacityBytes;
  return c;
}

/** upstream GetNodeAllocatableReservation: reserved + hard-eviction reservation, per resource. */
export function allocatableReservation(
  capacity: Record<string, number>,
  cfg: Pick<NodeStatusConfig, 'reserved' | 'evictionHard'>,
): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, q] of Object.entries(cfg.reserved)) out[k] = quantityValue(q, `reserved ${k}`);
  const mem = capacity['memory'];
  if (cfg.evictionHard.memoryAvailable !== undefined && mem !== undefined) {
    out['memory'] =
      (out['memory'] ?? 0) +
      thresholdBytes(cfg.evictionHard.memoryAvailable, mem, 'evictionHard memory.available');
  }
  const fs = capacity['ephemeral-storage'];
  if (cfg.evictionHard.nodefsAvailable !== undefined && fs !== undefined) {
    out['ephemeral-storage'] =
      (out['ephemeral-storage'] ?? 0) +
      thresholdBytes(cfg.evictionHard.nodefsAvailable, fs, 'evictionHard nodefs.available');
  }
  return out;
}

// ---- setters ----

/**
 * upstream Images setter over the image GC manager's sorted cache: largest first (equal sizes by
 * ID, descending), at most `maxImages` of them unless it is -1, each named by its repo digests then
 * its repo tags, at most MAX_NAMES_PER_IMAGE_IN_NODE_STATUS names.
 */
export function nodeImages(images: readonly NodeImageInfo[], maxImages: number): ContainerImage[] {
  const sorted = [...images].sort((a, b) =>
    a.size !== b.size ? b.size - a.size : a.id > b.id ? -1 : a.id < b.id ? 1 : 0,
  );
  const kept = maxImages > -1 && maxImages < sorted.length ? sorted.slice(0, maxImages) : sorted;
  return kept.map((img) => ({
    names: [...img.repoDigests, ...img.repoTags].slice(0, MAX_NAMES_PER_IMAGE_IN_NODE_STATUS),
    sizeBytes: img.size,
  }));
}

/**
 * Sets status.images from this round's list (none: the field is dropped, as upstream's empty
 * list). When the list could not be had the field keeps what the server has (upstream reads a
 * cache that keeps the last good list) and a warning says why. Without a list at all (no image
 * service wired) the field is left alone.
 */
function setImages(
  node: Node,
  cfg: NodeStatusConfig,
  list: NodeImageList | undefined,
  warnings: string[],
): void {
  if (list === undefined) return;
  if (!list.ok) {
    warnings.push(`error getting image list: ${list.error}`);
    return;
  }
  const status = (node.status ??= {});
  const images = nodeImages(list.images, cfg.maxImages ?? DEFAULT_NODE_STATUS_MAX_IMAGES);
  if (images.length > 0) status.images = images;
  else delete status.images;
}

/** upstream NodeAddress setter (no cloud provider): InternalIP then Hostname. */
function setAddresses(node: Node, cfg: NodeStatusConfig, warnings: string[]): void {
  if (cfg.nodeIP === undefined) {
    warnings.push(
      `can't get ip address of node ${cfg.nodeName}: no usable interface address and no --node-ip`,
    );
    return;
  }
  const addresses: NodeAddress[] = [
    { type: 'InternalIP', address: cfg.nodeIP },
    { type: 'Hostname', address: cfg.hostname },
  ];
  (node.status ??= {}).addresses = addresses;
}

/** upstream MachineInfo setter: capacity, allocatable, machine/system/boot IDs. */
function setMachineInfo(
  node: Node,
  cfg: NodeStatusConfig,
  machine: MachineInfo,
  events: NodeStatusEvent[],
  warnings: string[],
): void {
  const status = (node.status ??= {});
  const capacity: Record<string, string> = { ...status.capacity };
  const nums = machineCapacity(machine, cfg.maxPods);
  for (const [k, v] of Object.entries(nums)) capacity[k] = formatResource(k, v);
  status.capacity = capacity;

  const info = (status.nodeInfo ??= emptySystemInfo());
  info.machineID = machine.machineID;
  info.systemUUID = machine.systemUUID;
  if (info.bootID !== '' && info.bootID !== machine.bootID) {
    events.push({
      type: 'Warning',
      reason: 'Rebooted',
      message: `Node ${cfg.nodeName} has been rebooted, boot id: ${machine.bootID}`,
    });
  }
  info.bootID = machine.bootID;

  let reservation: Record<string, number> = {};
  try {
    reservation = allocatableReservation(nums, cfg);
  } catch (err) {
    warnings.push(`node allocatable reservation ignored: ${describeError(err)}`);
  }
  const allocatable: Record<string, string> = {};
  for (const [k, q] of Object.entries(capacity)) {
    const reserved = reservation[k];
    if (reserved === undefined || reserved === 0) {
      allocatable[k] = q;
      continue;
    }
    const cap = nums[k] ?? quantityValue(q, `capacity ${k}`);
    allocatable[k] = formatResource(k, Math.max(0, cap - reserved));
  }
  // Huge pages are carved out of memory.
  let hugeBytes = 0;
  for (const [k, v] of Object.entries(nums)) if (isHugePages(k)) hugeBytes += v;
  if (hugeBytes > 0 && allocatable['memory'] !== undefined) {
    const mem = quantityValue(allocatable['memory'], 'allocatable memory');
    allocatable['memory'] = formatResource('memory', Math.max(0, mem - hugeBytes));
  }
  status.allocatable = allocatable;
}

function emptySystemInfo(): NonNullable<NodeStatus['nodeInfo']> {
  return {
    machineID: '',
    systemUUID: '',
    bootID: '',
    kernelVersion: '',
    osImage: '',
    containerRuntimeVersion: '',
    kubeletVersion: '',
    kubeProxyVersion: '',
    operatingSystem: '',
    architecture: '',
  };
}

/** upstream VersionInfo + GoRuntime setters. */
function setVersionInfo(
  node: Node,
  cfg: NodeStatusConfig,
  machine: MachineInfo,
  inputs: NodeStatusInputs,
): void {
  const info = ((node.status ??= {}).nodeInfo ??= emptySystemInfo());
  info.kernelVersion = machine.kernelVersion;
  info.osImage = machine.osImage;
  info.containerRuntimeVersion = inputs.runtimeVersion();
  info.kubeletVersion = cfg.kubeletVersion;
  // upstream: "kube-proxy might be different version from kubelet in the future"
  info.kubeProxyVersion = cfg.kubeletVersion;
  info.operatingSystem = goOS();
  info.architecture = goArch();
}

/** upstream Memory/Disk/PIDPressureCondition: one shape, three sets of words. */
const PRESSURE = {
  MemoryPressure: {
    on: [
      'KubeletHasInsufficientMemory',
      'kubelet has insufficient memory available',
      'NodeHasInsufficientMemory',
    ],
    off: ['KubeletHasSufficientMemory', 'kubelet has sufficient memory available', 'NodeHasSufficientMemory'],
  },
  DiskPressure: {
    on: ['KubeletHasDiskPressure', 'kubelet has disk pressure', 'NodeHasDiskPressure'],
    off: ['KubeletHasNoDiskPressure', 'kubelet has no disk pressure', 'NodeHasNoDiskPressure'],
  },
  PIDPressure: {
    on: ['KubeletHasInsufficientPID', 'kubelet has insufficient PID available', 'NodeHasInsufficientPID'],
    off: ['KubeletHasSufficientPID', 'kubelet has sufficient PID available', 'NodeHasSufficientPID'],
  },
} as const;

function setPressureCondition(
  node: Node,
  type: keyof typeof PRESSURE,
  underPressure: boolean,
  now: string,
  nodeName: string,
  events: NodeStatusEvent[],
): void {
  const conditions = ((node.status ??= {}).conditions ??= []);
  let condition = conditions.find((c) => c.type === type);
  if (!condition) {
    condition = { type, status: 'Unknown' };
    conditions.push(condition);
  }
  condition.lastHeartbeatTime = now;
  const want: ConditionStatus = underPressure ? 'True' : 'False';
  if (condition.status !== want) {
    const [reason, message, event] = underPressure ? PRESSURE[type].on : PRESSURE[type].off;
    condition.status = want;
    condition.reason = reason;
    condition.message = message;
    condition.lastTransitionTime = now;
    events.push(nodeStatusEvent(nodeName, event));
  }
}

const REQUIRED_CAPACITIES = ['cpu', 'memory', 'pods', 'ephemeral-storage'];

/** upstream ReadyCondition. */
function setReadyCondition(
  node: Node,
  inputs: NodeStatusInputs,
  now: string,
  nodeName: string,
  events: NodeStatusEvent[],
): void {
  const status = (node.status ??= {});
  const errs: string[] = [];
  const runtime = inputs.runtimeReady();
  if (!runtime.ok) errs.push(runtime.message || 'container runtime is not ready');
  const missing = REQUIRED_CAPACITIES.filter((r) => status.capacity?.[r] === undefined);
  if (missing.length > 0) errs.push(`Missing node capacity for resources: ${missing.join(', ')}`);

  const ready: NodeCondition =
    errs.length === 0
      ? {
          type: 'Ready',
          status: 'True',
          reason: 'KubeletReady',
          message: 'kubelet is posting ready status',
          lastHeartbeatTime: now,
        }
      : {
          type: 'Ready',
          status: 'False',
          reason: 'KubeletNotReady',
          // utilerrors.NewAggregate: one error as is, several as `[a, b]`
          message: errs.length === 1 ? (errs[0] ?? '') : `[${errs.join(', ')}]`,
          lastHeartbeatTime: now,
        };

  const conditions = (status.conditions ??= []);
  const i = conditions.findIndex((c) => c.type === 'Ready');
  const existing = i >= 0 ? conditions[i] : undefined;
  if (existing === undefined) {
    ready.lastTransitionTime = now;
    conditions.push(ready);
    return;
  }
  if (existing.status === ready.status) {
    if (existing.lastTransitionTime !== undefined) ready.lastTransitionTime = existing.lastTransitionTime;
  } else {
    ready.lastTransitionTime = now;
    events.push(nodeStatusEvent(nodeName, ready.status === 'True' ? 'NodeReady' : 'NodeNotReady'));
  }
  conditions[i] = ready;
}

/**
 * Runs every setter on `node` in upstream order, in place (upstream setNodeStatus). Returns the
 * events the transitions call for and warnings for fields that could not be set (logged by the
 * caller; the rest of the status is still set). `images` is this round's image list (listed once
 * per status update by the caller, since this is synchronous); absent, status.images is untouched.
 */
export function setNodeStatus(
  node: Node,
  cfg: NodeStatusConfig,
  machine: MachineInfo,
  inputs: NodeStatusInputs,
  nowMs: number,
  images?: NodeImageList,
): { events: NodeStatusEvent[]; warnings: string[] } {
  const events: NodeStatusEvent[] = [];
  const warnings: string[] = [];
  const now = formatTime(nowMs);
  setAddresses(node, cfg, warnings);
  setMachineInfo(node, cfg, machine, events, warnings);
  setVersionInfo(node, cfg, machine, inputs);
  (node.status ??= {}).daemonEndpoints = { kubeletEndpoint: { Port: cfg.kubeletPort } };
  setImages(node, cfg, images, warnings);
  const pressure = inputs.pressure();
  setPressureCondition(node, 'MemoryPressure', pressure.memory, now, cfg.nodeName, events);
  setPressureCondition(node, 'DiskPressure', pressure.disk, now, cfg.nodeName, events);
  setPressureCondition(node, 'PIDPressure', pressure.pid, now, cfg.nodeName, events);
  setReadyCondition(node, inputs, now, cfg.nodeName, events);
  // upstream RemoveOutOfDiskCondition: a condition the kubelet stopped setting in 1.12
  const status = node.status;
  if (status.conditions?.some((c) => c.type === 'OutOfDisk')) {
    status.conditions = status.conditions.filter((c) => c.type !== 'OutOfDisk');
  }
  return { events, warnings };
}

// ---- registration ----

/** The Node the kubelet creates (upstream initialNode), status included. */
export function initialNode(
  cfg: NodeStatusConfig,
  opts: { labels: Record<string, string>; taints: Taint[] },
  machine: MachineInfo,
  inputs: NodeStatusInputs,
  nowMs: number,
  images?: NodeImageList,
): { node: Node; events: NodeStatusEvent[]; warnings: string[] } {
  const os = goOS();
  const arch = goArch();
  const labels: Record<string, string> = {
    [LABEL_HOSTNAME]: cfg.hostname,
    [LABEL_OS]: os,
    [LABEL_ARCH]: arch,
    [LABEL_OS_BETA]: os,
    [LABEL_ARCH_BETA]: arch,
  };
  const warnings: string[] = [];
  for (const [k, v] of Object.entries(opts.labels)) {
    const current = labels[k];
    if (current !== undefined && current !== v) {
      warnings.push(`the node label ${k}=${v} will overwrite default setting ${current}`);
    }
    labels[k] = v;
  }
  const node: Node = {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name: cfg.nodeName,
      labels,
      annotations: { [ANNOTATION_CONTROLLER_MANAGED_ATTACH_DETACH]: 'true' },
    },
    spec: opts.taints.length > 0 ? { taints: opts.taints.map((t) => ({ ...t })) } : {},
    status: {},
  };
  const r = setNodeStatus(node, cfg, machine, inputs, nowMs, images);
  return { node, events: r.events, warnings: [...warnings, ...r.warnings] };
}

/**
 * Brings an existing Node (found by name at registration) in line with the one we would have
 * created, in place: the attach-detach annotation, the default labels, default resources and huge
 * pages (upstream reconcileCMADAnnotationWithExistingNode, updateDefaultLabels,
 * updateDefaultResources, reconcileHugePageResource). Returns whether it changed.
 */
export function reconcileExistingNode(initial: Node, existing: Node): boolean {
  let changed = false;

  const want = initial.metadata.annotations?.[ANNOTATION_CONTROLLER_MANAGED_ATTACH_DETACH];
  const have = existing.metadata.annotations?.[ANNOTATION_CONTROLLER_MANAGED_ATTACH_DETACH];
  if (want !== have) {
    const annotations = { ...existing.metadata.annotations };
    if (want === undefined) delete annotations[ANNOTATION_CONTROLLER_MANAGED_ATTACH_DETACH];
    else annotations[ANNOTATION_CONTROLLER_MANAGED_ATTACH_DETACH] = want;
    existing.metadata.annotations = annotations;
    changed = true;
  }

  const labels = (existing.metadata.labels ??= {});
  for (const key of DEFAULT_LABELS) {
    const value = initial.metadata.labels?.[key];
    if (value === undefined) continue;
    if (labels[key] !== value) {
      labels[key] = value;
      changed = true;
    }
    if (labels[key] === '') delete labels[key];
  }

  const status = (existing.status ??= {});
  const initialStatus = initial.status ?? {};
  if (status.capacity === undefined && initialStatus.capacity !== undefined) {
    status.capacity = { ...initialStatus.capacity };
    changed = true;
  }
  if (status.allocatable === undefined && initialStatus.allocatable !== undefined) {
    status.allocatable = { ...initialStatus.allocatable };
    changed = true;
  }

  const capacity = (status.capacity ??= {});
  const allocatable = (status.allocatable ??= {});
  const supported = new Set<string>();
  for (const [k, v] of Object.entries(initialStatus.capacity ?? {})) {
    if (!isHugePages(k)) continue;
    supported.add(k);
    if (capacity[k] === v && allocatable[k] === (initialStatus.allocatable?.[k] ?? v)) continue;
    capacity[k] = v;
    allocatable[k] = initialStatus.allocatable?.[k] ?? v;
    changed = true;
  }
  for (const k of Object.keys(capacity)) {
    if (isHugePages(k) && !supported.has(k)) {
      delete capacity[k];
      delete allocatable[k];
      changed = true;
    }
  }
  return changed;
}

// ---- change detection ----

function sameQuantities(
  a: Record<string, string> | undefined,
  b: Record<string, string> | undefined,
): boolean {
  const ka = Object.keys(a ?? {}).sort();
  const kb = Object.keys(b ?? {}).sort();
  if (ka.length !== kb.length || ka.some((k, i) => k !== kb[i])) return false;
  for (const k of ka) {
    const x = a?.[k];
    const y = b?.[k];
    if (x === y) continue;
    try {
      if (x === undefined || y === undefined || parseQuantity(x, k) !== parseQuantity(y, k)) return false;
    } catch {
      return false; // not a quantity we can parse: the strings differ, so it changed
    }
  }
  return true;
}

/**
 * upstream nodeStatusHasChanged: anything but the conditions' lastHeartbeatTime differs.
 * Quantities compare by value, so `1Gi` equals `1024Mi`.
 */
export function nodeStatusHasChanged(
  original: NodeStatus | undefined,
  current: NodeStatus | undefined,
): boolean {
  if (original === undefined && current === undefined) return false;
  if (original === undefined || current === undefined) return true;
  const strip = (cs: NodeCondition[] | undefined) =>
    [...(cs ?? [])]
      .map(({ lastHeartbeatTime: _hb, ...rest }) => rest)
      .sort((x, y) => (x.type < y.type ? -1 : x.type > y.type ? 1 : 0));
  if (!deepEqual(strip(original.conditions), strip(current.conditions))) return true;
  if (!sameQuantities(original.capacity, current.capacity)) return true;
  if (!sameQuantities(original.allocatable, current.allocatable)) return true;
  const rest = (s: NodeStatus) => {
    const { conditions: _c, capacity: _cap, allocatable: _a, ...others } = s;
    return others;
  };
  return !deepEqual(rest(original), rest(current));
}
