/**
 * Capacity and allocatable arithmetic, the one place allocatable is computed (upstream
 * cadvisor.CapacityFromMachineInfo; cmd/kubelet/app/server.go's reservedSystemCPUs override;
 * pkg/kubelet/cm/node_container_manager_linux.go GetNodeAllocatableReservation and
 * getNodeAllocatableAbsoluteImpl; nodestatus.MachineInfo's allocatable): the machine's resources
 * as numbers, the reservations to subtract, and the canonical quantity strings they are reported as.
 */
import { parseQuantity } from '../api/quantity.ts';
import type { MachineInfo } from './machine-info.ts';
import { formatBinary, formatDecimal, formatDecimalMilli } from '../api/quantity-format.ts';
import type { NodeStatusConfig } from './status-inputs.ts';
import { formatCPUList, parseCPUList } from '../util/cpuset.ts';
import { KubeletError } from '../util/errors.ts';

/** Amounts by resource name: cpu in cores, memory and storage in bytes, pid and pods as counts. */
export type ResourceAmounts = Record<string, number>;

/** What is reserved for system daemons and for kubernetes daemons (systemReserved, kubeReserved). */
export interface NodeReservations {
  readonly system: ResourceAmounts;
  readonly kube: ResourceAmounts;
}

/** A huge-pages resource (`hugepages-<page size>`), carved out of memory. */
export function isHugePages(name: string): boolean {
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

/** The huge pages capacity in bytes by resource name (`hugepages-2Mi`), as cadvisor's capacity names it. */
export function hugePagesCapacity(hugePages: MachineInfo['hugePages']): Record<string, number> {
  const c: Record<string, number> = {};
  for (const hp of hugePages) {
    c[`hugepages-${formatBinary(hp.pageSizeKiB * 1024)}`] = hp.pageSizeKiB * 1024 * hp.numPages;
  }
  return c;
}

/** upstream cadvisor.CapacityFromMachineInfo + ContainerManager.GetCapacity + pods. */
export function machineCapacity(machine: MachineInfo, maxPods: number): Record<string, number> {
  const c: Record<string, number> = {
    cpu: machine.numCores,
    memory: machine.memoryCapacityBytes,
    ...hugePagesCapacity(machine.hugePages),
  };
  c['pods'] = maxPods;
  if (machine.rootfsCapacityBytes !== undefined) c['ephemeral-storage'] = machine.rootfsCapacityBytes;
  return c;
}

function amounts(quantities: Readonly<Record<string, string>>, field: string): ResourceAmounts {
  const out: ResourceAmounts = {};
  for (const [k, q] of Object.entries(quantities)) {
    const v = quantityValue(q, `${field}[${k}]`);
    // Quantity.Value() rounds up; cpu stays in cores (milli precision).
    out[k] = k === 'cpu' ? v : Math.ceil(v);
  }
  return out;
}

/**
 * systemReserved and kubeReserved as amounts (validated by the config). With reservedSystemCPUs,
 * as upstream: its CPU count becomes systemReserved's cpu and kubeReserved's cpu is dropped; the
 * list must be a subset of the online CPUs (else InvalidArgument, a start failure upstream too).
 */
export function nodeReservations(
  cfg: {
    readonly systemReserved: Readonly<Record<string, string>>;
    readonly kubeReserved: Readonly<Record<string, string>>;
    readonly reservedSystemCPUs: string;
  },
  onlineCPUs: readonly number[],
): NodeReservations {
  const system = amounts(cfg.systemReserved, 'systemReserved');
  const kube = amounts(cfg.kubeReserved, 'kubeReserved');
  const parsed = parseCPUList(cfg.reservedSystemCPUs);
  if (!parsed.ok) {
    throw new KubeletError(
      'InvalidArgument',
      'reserved cpus',
      `unable to parse reserved-cpus list: ${parsed.error}`,
    );
  }
  if (parsed.cpus.length > 0) {
    const online = new Set(onlineCPUs);
    if (parsed.cpus.some((c) => !online.has(c))) {
      throw new KubeletError(
        'InvalidArgument',
        'reserved cpus',
        `reserved-cpus: ${cfg.reservedSystemCPUs} is not a subset of online-cpus: ${formatCPUList(onlineCPUs)}`,
      );
    }
    system['cpu'] = parsed.cpus.length;
    delete kube['cpu'];
  }
  return { system, kube };
}

/** systemReserved + kubeReserved per resource. */
export function totalReserved(r: NodeReservations): ResourceAmounts {
  const out: ResourceAmounts = { ...r.system };
  for (const [k, v] of Object.entries(r.kube)) out[k] = (out[k] ?? 0) + v;
  return out;
}

/**
 * Capacity minus a reservation per resource, never below 0, with huge pages carved out of memory
 * (upstream getNodeAllocatableAbsoluteImpl with system + kube reserved: the kubepods values;
 * nodestatus.MachineInfo with GetNodeAllocatableReservation: the Node's allocatable).
 */
export function subtractReservation(
  capacity: ResourceAmounts,
  reservation: ResourceAmounts,
): ResourceAmounts {
  const out: ResourceAmounts = {};
  for (const [k, v] of Object.entries(capacity)) out[k] = Math.max(0, v - (reservation[k] ?? 0));
  for (const [k, v] of Object.entries(capacity)) {
    if (isHugePages(k) && out['memory'] !== undefined) out['memory'] = Math.max(0, out['memory'] - v);
  }
  return out;
}

/** upstream GetNodeAllocatableReservation: reserved + hard-eviction reservation, per resource. */
export function allocatableReservation(
  capacity: ResourceAmounts,
  cfg: Pick<NodeStatusConfig, 'reserved' | 'evictionHard'>,
): ResourceAmounts {
  const out: ResourceAmounts = { ...cfg.reserved };
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
