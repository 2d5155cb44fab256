/**
 * The slice units of the systemd cgroup driver, made and sized through systemd's Manager API on
 * the system D-Bus as upstream's libcontainer systemd manager does (opencontainers/runc
 * libcontainer/cgroups/systemd: StartTransientUnit with the accounting and resource properties,
 * SetUnitProperties on update, StopUnit on destroy), here through `busctl` (util/busctl.ts).
 */
import { KubeletError, describeError } from '../util/errors.ts';
import type { BusObject, SystemBus } from '../util/busctl.ts';
import type { Logger } from '../util/logger.ts';
import type { ResourceConfig } from './resources.ts';
import { cpuSharesToWeight } from './resources.ts';

const SYSTEMD_MANAGER: BusObject = {
  service: 'org.freedesktop.systemd1',
  path: '/org/freedesktop/systemd1',
  interface: 'org.freedesktop.systemd1.Manager',
};
/** systemd's "infinity" for the uint64 properties. */
const UINT64_MAX = '18446744073709551615';
/** The root slice. */
export const ROOT_SLICE = '-.slice';

/** One unit property as busctl spells it (`MemoryMax t 1048576`, `Wants as 1 kubepods.slice`). */
export type UnitProperty =
  | { name: string; type: 'b'; value: boolean }
  | { name: string; type: 't'; value: string }
  | { name: string; type: 's'; value: string }
  | { name: string; type: 'as'; value: readonly string[] };

/** What the systemd cgroup driver asks of systemd. */
export interface SystemdUnits {
  /** systemd answers on the system bus (its Manager's Version); rejects with why not. */
  version(signal?: AbortSignal): Promise<string>;
  /**
   * Starts the transient slice `unit` (wanted by `parent`) with `properties`; resolves
   * 'exists' when systemd already has it (upstream ignores UnitExists and goes on to set the
   * properties), 'started' when the job was queued. The cgroup appears when the job runs.
   */
  startSlice(
    unit: string,
    parent: string,
    properties: readonly UnitProperty[],
    signal?: AbortSignal,
  ): Promise<'started' | 'exists'>;
  /** Sets properties of a running unit (runtime only: nothing persists across a reboot). */
  setProperties(unit: string, properties: readonly UnitProperty[], signal?: AbortSignal): Promise<void>;
  /** Stops the unit; a unit systemd does not know is not an error. */
  stopUnit(unit: string, signal?: AbortSignal): Promise<void>;
}

function propertyArgs(properties: readonly UnitProperty[]): string[] {
  const out = [String(properties.length)];
  for (const p of properties) {
    switch (p.type) {
      case 'b':
        out.push(p.name, 'b', p.value ? 'true' : 'false');
        break;
      case 't':
      case 's':
        out.push(p.name, p.type, p.value);
        break;
      case 'as':
        out.push(p.name, 'as', String(p.value.length), ...p.value);
        break;
    }
  }
  return out;
}

/**
 * The accounting properties runc sets on every unit it makes (so the controllers are enabled
 * for the slice, as with cgroupfs), and DefaultDependencies=false.
 */
export function sliceBaseProperties(parent: string, cgroupVersion: 1 | 2): UnitProperty[] {
  return [
    { name: 'Description', type: 's', value: 'Kubernetes pod cgroups (tskubelet)' },
    { name: 'Wants', type: 'as', value: [parent] },
    { name: 'DefaultDependencies', type: 'b', value: false },
    { name: 'MemoryAccounting', type: 'b', value: true },
    { name: 'CPUAccounting', type: 'b', value: true },
    { name: cgroupVersion === 2 ? 'IOAccounting' : 'BlockIOAccounting', type: 'b', value: true },
    { name: 'TasksAccounting', type: 'b', value: true },
  ];
}

/**
 * A ResourceConfig as unit properties (runc genV1ResourcesProperties / genV2ResourcesProperties):
 * v1 MemoryLimit and CPUShares, v2 MemoryMax and CPUWeight (converted from shares), both
 * CPUQuotaPerSecUSec (rounded up to whole 10 ms, as systemd keeps a percentage), CPUQuotaPeriodUSec
 * and TasksMax. The exact values are written to the cgroup files afterwards, as runc does; hugetlb
 * has no unit property (systemd has no hugetlb support) and only goes to the files.
 */
export function resourceProperties(r: ResourceConfig, cgroupVersion: 1 | 2): UnitProperty[] {
  const out: UnitProperty[] = [];
  if (r.memory !== undefined && r.memory !== 0) {
    const value = r.memory > 0 ? String(r.memory) : UINT64_MAX;
    out.push({ name: cgroupVersion === 2 ? 'MemoryMax' : 'MemoryLimit', type: 't', value });
  }
  if (r.cpuShares !== undefined && r.cpuShares !== 0) {
    out.push(
      cgroupVersion === 2
        ? { name: 'CPUWeight', type: 't', value: String(cpuSharesToWeight(r.cpuShares)) }
        : { name: 'CPUShares', type: 't', value: String(r.cpuShares) },
    );
  }
  if (r.cpuQuota !== undefined && r.cpuQuota !== 0 && r.cpuPeriod !== undefined && r.cpuPeriod > 0) {
    let perSec = UINT64_MAX;
    if (r.cpuQuota > 0) {
      const usec = Math.ceil((r.cpuQuota * 1_000_000) / r.cpuPeriod / 10_000) * 10_000;
      perSec = String(usec);
    }
    out.push({ name: 'CPUQuotaPerSecUSec', type: 't', value: perSec });
    out.push({ name: 'CPUQuotaPeriodUSec', type: 't', value: String(r.cpuPeriod) });
  }
  if (r.pidsLimit !== undefined && r.pidsLimit !== 0) {
    out.push({ name: 'TasksMax', type: 't', value: r.pidsLimit > 0 ? String(r.pidsLimit) : UINT64_MAX });
  }
  return out;
}

export function createSystemdUnits(bus: SystemBus, log: Logger): SystemdUnits {
  return {
    async version(signal) {
      const out = await bus.getProperty('read the systemd version', SYSTEMD_MANAGER, 'Version', signal);
      return out.replace(/^s\s+/, '').replace(/^"|"\s*$/g, '');
    },
    async startSlice(unit, parent, properties, signal) {
      const op = `start systemd slice ${unit}`;
      try {
        await bus.call(
          op,
          SYSTEMD_MANAGER,
          'StartTransientUnit',
          'ssa(sv)a(sa(sv))',
          [unit, 'replace', ...propertyArgs(properties), '0'],
          signal,
        );
        log.debug('started systemd slice', { unit, parent });
        return 'started';
      } catch (err) {
        if (err instanceof KubeletError && err.code === 'AlreadyExists') return 'exists';
        throw err;
      }
    },
    async setProperties(unit, properties, signal) {
      if (properties.length === 0) return;
      await bus.call(
        `set properties of systemd unit ${unit}`,
        SYSTEMD_MANAGER,
        'SetUnitProperties',
        'sba(sv)',
        [unit, 'true', ...propertyArgs(properties)],
        signal,
      );
    },
    async stopUnit(unit, signal) {
      try {
        await bus.call(
          `stop systemd unit ${unit}`,
          SYSTEMD_MANAGER,
          'StopUnit',
          'ss',
          [unit, 'replace'],
          signal,
        );
      } catch (err) {
        if (err instanceof KubeletError && err.code === 'NotFound') {
          log.debug('systemd unit already gone', { unit, err: describeError(err) });
          return;
        }
        throw err;
      }
    },
  };
}
