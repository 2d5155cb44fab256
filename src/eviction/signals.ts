/**
 * Eviction signals and thresholds (upstream pkg/kubelet/eviction/api and helpers.go
 * ParseThresholdConfig): what each signal measures, the node condition it drives, the resource
 * it reclaims, and the parsing of evictionHard / evictionSoft / evictionSoftGracePeriod /
 * evictionMinimumReclaim into one list of thresholds.
 */
import { parseQuantity } from '../api/quantity.ts';
import { tryParseGoDuration } from '../config/duration.ts';

export const SIGNALS = [
  'memory.available',
  'allocatableMemory.available',
  'nodefs.available',
  'nodefs.inodesFree',
  'imagefs.available',
  'imagefs.inodesFree',
  'pid.available',
] as const;
export type Signal = (typeof SIGNALS)[number];

export type PressureCondition = 'MemoryPressure' | 'DiskPressure' | 'PIDPressure';
/** What reclaiming a signal frees (upstream signalToResource; `inodes` and `pids` are internal). */
export type ReclaimResource = 'memory' | 'ephemeral-storage' | 'inodes' | 'pids';

export const SIGNAL_CONDITION: Readonly<Record<Signal, PressureCondition>> = {
  'memory.available': 'MemoryPressure',
  'allocatableMemory.available': 'MemoryPressure',
  'nodefs.available': 'DiskPressure',
  'nodefs.inodesFree': 'DiskPressure',
  'imagefs.available': 'DiskPressure',
  'imagefs.inodesFree': 'DiskPressure',
  'pid.available': 'PIDPressure',
};

export const SIGNAL_RESOURCE: Readonly<Record<Signal, ReclaimResource>> = {
  'memory.available': 'memory',
  'allocatableMemory.available': 'memory',
  'nodefs.available': 'ephemeral-storage',
  'nodefs.inodesFree': 'inodes',
  'imagefs.available': 'ephemeral-storage',
  'imagefs.inodesFree': 'inodes',
  'pid.available': 'pids',
};

export function isSignal(s: string): s is Signal {
  return (SIGNALS as readonly string[]).includes(s);
}

/** A quantity (bytes, inodes or PIDs) or a fraction (0–1) of the signal's capacity. */
export type ThresholdValue = { quantity: number } | { percentage: number };

/** One threshold; every signal's operator is LessThan (available below the value). */
export interface Threshold {
  signal: Signal;
  value: ThresholdValue;
  /** 0 for a hard threshold; a soft one's evictionSoftGracePeriod. */
  gracePeriodMs: number;
  minReclaim?: ThresholdValue;
}

export function isHardThreshold(t: Threshold): boolean {
  return t.gracePeriodMs === 0;
}

/** The threshold's value in the signal's units, given the observed capacity. */
export function thresholdQuantity(v: ThresholdValue, capacity: number): number {
  return 'quantity' in v ? v.quantity : Math.trunc(v.percentage * capacity);
}

/** A stable identity: the same statement parsed twice gives the same key (upstream compares fields). */
export function thresholdKey(t: Threshold): string {
  const v = 'quantity' in t.value ? `q${t.value.quantity}` : `p${t.value.percentage}`;
  return `${t.signal}<${v}/${t.gracePeriodMs}`;
}

export interface ThresholdConfig {
  evictionHard: Readonly<Record<string, string>>;
  evictionSoft: Readonly<Record<string, string>>;
  evictionSoftGracePeriod: Readonly<Record<string, string>>;
  evictionMinimumReclaim: Readonly<Record<string, string>>;
  /** enforceNodeAllocatable: with `pods`, each hard memory.available also guards allocatable. */
  enforceNodeAllocatable: readonly string[];
}

/** One problem per bad statement, named by field and signal; empty when the config is valid. */
export function parseThresholds(cfg: ThresholdConfig): { thresholds: Threshold[]; errors: string[] } {
  const errors: string[] = [];
  const hard = statements('evictionHard', cfg.evictionHard, errors);
  const soft = statements('evictionSoft', cfg.evictionSoft, errors);
  const graces = new Map<Signal, number>();
  for (const [name, text] of Object.entries(cfg.evictionSoftGracePeriod)) {
    if (!isSignal(name)) {
      errors.push(`evictionSoftGracePeriod: unsupported eviction signal ${name}`);
      continue;
    }
    const d = tryParseGoDuration(text);
    if (!d.ok) errors.push(`evictionSoftGracePeriod[${name}]: ${d.reason}`);
    else if (d.ms < 0) {
      errors.push(
        `evictionSoftGracePeriod[${name}]: invalid eviction grace period ${text}, must be a positive value`,
      );
    } else graces.set(name, d.ms);
  }
  const reclaims = new Map<Signal, ThresholdValue>();
  for (const [name, text] of Object.entries(cfg.evictionMinimumReclaim)) {
    if (!isSignal(name)) {
      errors.push(`evictionMinimumReclaim: unsupported eviction signal ${name}`);
      continue;
    }
    const v = parseValue(text, `evictionMinimumReclaim[${name}]`, errors, true);
    if (v) reclaims.set(name, v);
  }
  const thresholds: Threshold[] = [...hard];
  for (const t of soft) {
    const grace = graces.get(t.signal);
    if (grace === undefined) {
      errors.push(
        `evictionSoft[${t.signal}]: grace period must be specified for the soft eviction threshold`,
      );
      continue;
    }
    thresholds.push({ ...t, gracePeriodMs: grace });
  }
  for (const t of thresholds) {
    const r = reclaims.get(t.signal);
    if (r) t.minReclaim = r;
  }
  if (cfg.enforceNodeAllocatable.includes('pods')) {
    // upstream addAllocatableThresholds: every memory.available threshold with no grace period.
    for (const t of [...thresholds]) {
      if (t.signal !== 'memory.available' || t.gracePeriodMs !== 0) continue;
      thresholds.push({
        signal: 'allocatableMemory.available',
        value: t.value,
        gracePeriodMs: 0,
        ...(t.minReclaim ? { minReclaim: t.minReclaim } : {}),
      });
    }
  }
  return { thresholds, errors };
}

function statements(field: string, map: Readonly<Record<string, string>>, errors: string[]): Threshold[] {
  const out: Threshold[] = [];
  for (const [name, text] of Object.entries(map)) {
    if (!isSignal(name)) {
      errors.push(`${field}: unsupported eviction signal ${name}`);
      continue;
    }
    const trimmed = text.trim();
    // upstream: 0% and 100% mean "no threshold" for this signal.
    if (trimmed === '0%' || trimmed === '100%') continue;
    const value = parseValue(trimmed, `${field}[${name}]`, errors, false);
    if (value) out.push({ signal: name, value, gracePeriodMs: 0 });
  }
  return out;
}

function parseValue(
  text: string,
  where: string,
  errors: string[],
  minReclaim: boolean,
): ThresholdValue | undefined {
  if (text.endsWith('%')) {
    const n = Number(text.slice(0, -1));
    if (text.length === 1 || !Number.isFinite(n)) {
      errors.push(`${where}: invalid percentage "${text}"`);
      return undefined;
    }
    if (minReclaim ? n <= 0 : n < 0) {
      errors.push(`${where}: percentage must be ${minReclaim ? 'positive' : '>= 0%'}: ${text}`);
      return undefined;
    }
    if (n > 100) {
      errors.push(`${where}: percentage must be <= 100%: ${text}`);
      return undefined;
    }
    return { percentage: n / 100 };
  }
  let q: number;
  try {
    q = parseQuantity(text, where);
  } catch (err) {
    errors.push(err instanceof Error ? err.message : String(err));
    return undefined;
  }
  if (minReclaim ? q < 0 : q <= 0) {
    errors.push(`${where}: must be ${minReclaim ? 'non-negative' : 'positive'}: ${text}`);
    return undefined;
  }
  return { quantity: q };
}
