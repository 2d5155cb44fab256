/**
 * The node status setters for everything but the conditions (upstream pkg/kubelet/nodestatus
 * setters.go: NodeAddress, MachineInfo, VersionInfo, GoRuntime, DaemonEndpoints, Images). Each one
 * fills its fields of `node.status` in place; none talks to the API.
 */
import { describeError } from '../util/errors.ts';
import { DEFAULT_NODE_STATUS_MAX_IMAGES, MAX_NAMES_PER_IMAGE_IN_NODE_STATUS } from '../config/defaults.ts';
import { allocatableReservation, formatResource, machineCapacity, subtractReservation } from './capacity.ts';
import type { MachineInfo } from './machine-info.ts';
import { goArch, goOS } from './platform.ts';
import type {
  NodeImageList,
  NodeImageInfo,
  NodeStatusConfig,
  NodeStatusEvent,
  NodeStatusInputs,
} from './status-inputs.ts';
import type { ContainerImage, Node, NodeAddress, NodeStatus } from './types.ts';

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
export function setImages(
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
export function setAddresses(node: Node, cfg: NodeStatusConfig, warnings: string[]): void {
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
export function setMachineInfo(
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
  const amounts = subtractReservation(nums, reservation);
  const allocatable: Record<string, string> = {};
  for (const [k, q] of Object.entries(capacity)) {
    const v = amounts[k];
    allocatable[k] = v === undefined ? q : formatResource(k, v);
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
export function setVersionInfo(
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

/** upstream DaemonEndpoints setter: the kubelet API port. */
export function setDaemonEndpoints(node: Node, cfg: NodeStatusConfig): void {
  (node.status ??= {}).daemonEndpoints = { kubeletEndpoint: { Port: cfg.kubeletPort } };
}
