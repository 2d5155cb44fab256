/**
 * Capacity and allocatable arithmetic (upstream cadvisor.CapacityFromMachineInfo and
 * GetNodeAllocatableReservation): the machine's resources as numbers, the reservation to subtract,
 * and the canonical quantity strings they are reported as.
 */
import { parseQuantity } from '../api/quantity.ts';
import type { MachineInfo } from './machine-info.ts';
import { formatBinary, formatDecimal, formatDecimalMilli } from '../api/quantity-format.ts';
import type { NodeStatusConfig } from './status-inputs.ts';

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
