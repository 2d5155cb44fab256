/**
 * What client_golang's process collector and component-base add beside prom-client's default
 * process metrics (prometheus/client_golang process_collector.go, component-base/metrics
 * processstarttime.go): process_virtual_memory_max_bytes, and process_start_time_seconds for
 * registries of their own (upstream registers it in /metrics/probes' registry too).
 */
import { existsSync, readFileSync } from 'node:fs';
import { Gauge, type Registry } from 'prom-client';

/**
 * The process's start, in whole Unix seconds. Rounded down: prom-client rounds to the nearest
 * second, which for a process younger than half a second gives a start in the future.
 */
function processStartSeconds(): number {
  return Math.floor(Date.now() / 1000 - process.uptime());
}

/**
 * The address-space limit of /proc/self/limits in bytes; `unlimited` as procfs parses it (the
 * largest uint64, as a float); undefined when it cannot be read (not Linux).
 */
export function maxAddressSpace(limits: string): number | undefined {
  const line = limits.split('\n').find((l) => l.startsWith('Max address space'));
  const soft = line?.slice('Max address space'.length).trim().split(/\s+/)[0];
  if (soft === undefined) return undefined;
  if (soft === 'unlimited') return 2 ** 64; // float64(math.MaxUint64) rounds to 2^64
  const n = Number(soft);
  return Number.isFinite(n) ? n : undefined;
}

const LIMITS = '/proc/self/limits';

/**
 * process_virtual_memory_max_bytes, read at each scrape (prlimit can change it); not registered
 * without procfs (not Linux), as client_golang leaves it out there.
 */
export function registerVirtualMemoryMax(registry: Registry, path = LIMITS): void {
  if (!existsSync(path)) return;
  new Gauge({
    name: 'process_virtual_memory_max_bytes',
    help: 'Maximum amount of virtual memory available in bytes.',
    registers: [registry],
    collect(this: Gauge) {
      const max = maxAddressSpace(readFileSync(path, 'utf8'));
      if (max !== undefined) this.set(max);
    },
  });
}

/** process_start_time_seconds in a registry of its own (component-base RegisterProcessStartTime). */
export function registerProcessStartTime(registry: Registry): void {
  new Gauge({
    name: 'process_start_time_seconds',
    help: '[ALPHA] Start time of the process since unix epoch in seconds.',
    registers: [registry],
  }).set(processStartSeconds());
}
