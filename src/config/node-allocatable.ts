/**
 * Node allocatable settings: enforceNodeAllocatable and the reservations it enforces (upstream
 * pkg/kubelet/apis/config/validation/validation.go ValidateKubeletConfiguration, and
 * cmd/kubelet/app/server.go parseResourceList, whose checks run here at compile time instead of
 * at start). What is reserved is subtracted from allocatable by src/node/capacity.ts.
 */
import { parseQuantity } from '../api/quantity.ts';
import { parseCPUList } from '../util/cpuset.ts';
import { describeError } from '../util/errors.ts';
import type { KubeletConfig } from './kubelet-config.ts';
import type { Check, Chosen } from './validate.ts';

/** The resources systemReserved and kubeReserved may name (upstream parseResourceList). */
export const RESERVABLE_RESOURCES: readonly string[] = ['cpu', 'memory', 'ephemeral-storage', 'pid'];

/** upstream parseResourceList: known resource names, quantities, none negative. */
export const checkReservedResources: Check<Record<string, string>> = (c, errors) => {
  for (const [name, quantity] of Object.entries(c.value)) {
    if (!RESERVABLE_RESOURCES.includes(name)) {
      errors.push(`${c.label}: cannot reserve ${JSON.stringify(name)} resource`);
      continue;
    }
    let value: number;
    try {
      value = parseQuantity(quantity, `${c.label}[${name}]`);
    } catch (err) {
      // Reported with the others: compile throws them together.
      errors.push(describeError(err));
      continue;
    }
    if (value < 0) {
      errors.push(
        `${c.label}: resource quantity for ${JSON.stringify(name)} cannot be negative: ${quantity}`,
      );
    }
  }
};

/** upstream: reservedSystemCPUs must parse as a CPU list. */
export const checkReservedCPUs: Check<string> = (c, errors) => {
  const parsed = parseCPUList(c.value);
  if (!parsed.ok) {
    errors.push(
      `${c.label}: unable to parse reservedSystemCPUs (--reserved-cpus) ${c.value}, error: ${parsed.error}`,
    );
  }
};

/** The chosen values node allocatable is compiled from. */
export interface NodeAllocatableChosen {
  enforceNodeAllocatable: Chosen<readonly string[]>;
  cgroupsPerQOS: boolean;
  systemReserved: Chosen<Record<string, string>>;
  kubeReserved: Chosen<Record<string, string>>;
  reservedSystemCPUs: Chosen<string>;
  systemReservedCgroup: Chosen<string>;
  kubeReservedCgroup: Chosen<string>;
}

export type NodeAllocatableSettings = Pick<
  KubeletConfig,
  | 'enforceNodeAllocatable'
  | 'systemReserved'
  | 'kubeReserved'
  | 'reservedSystemCPUs'
  | 'systemReservedCgroup'
  | 'kubeReservedCgroup'
>;

/**
 * enforceNodeAllocatable with the reservations, checked together as upstream: `none` alone,
 * `system-reserved` / `kube-reserved` each with its cgroup, enforcement only with cgroupsPerQOS,
 * reservedSystemCPUs without the reserved cgroups.
 */
export function nodeAllocatableSettings(c: NodeAllocatableChosen, errors: string[]): NodeAllocatableSettings {
  const enforce = c.enforceNodeAllocatable;
  for (const v of enforce.value) {
    switch (v) {
      case 'pods':
        break;
      case 'system-reserved':
        if (c.systemReservedCgroup.value === '') {
          errors.push(
            `${c.systemReservedCgroup.label}: systemReservedCgroup (--system-reserved-cgroup) must be specified ` +
              `when "system-reserved" contained in enforceNodeAllocatable (--enforce-node-allocatable)`,
          );
        }
        break;
      case 'kube-reserved':
        if (c.kubeReservedCgroup.value === '') {
          errors.push(
            `${c.kubeReservedCgroup.label}: kubeReservedCgroup (--kube-reserved-cgroup) must be specified ` +
              `when "kube-reserved" contained in enforceNodeAllocatable (--enforce-node-allocatable)`,
          );
        }
        break;
      case 'none':
        if (enforce.value.length > 1) {
          errors.push(`${enforce.label}: may not contain additional enforcements when "none" is specified`);
        }
        break;
      default:
        errors.push(
          `${enforce.label}: option ${JSON.stringify(v)} is not valid; valid options are "pods", ` +
            '"system-reserved", "kube-reserved" or "none"',
        );
    }
  }
  const enforced = [...new Set(enforce.value.filter((v) => v !== 'none'))];
  if (!c.cgroupsPerQOS && enforced.length > 0) {
    errors.push(
      `${enforce.label}: enforcing node allocatable is not supported unless cgroupsPerQOS (--cgroups-per-qos) ` +
        'is set to true; with cgroups per QoS off, set it empty (--enforce-node-allocatable=)',
    );
  }
  const cpus = c.reservedSystemCPUs;
  if (cpus.value !== '' && (c.systemReservedCgroup.value !== '' || c.kubeReservedCgroup.value !== '')) {
    errors.push(
      `${cpus.label}: can't use reservedSystemCPUs (--reserved-cpus) with systemReservedCgroup ` +
        '(--system-reserved-cgroup) or kubeReservedCgroup (--kube-reserved-cgroup)',
    );
  }
  return {
    enforceNodeAllocatable: enforced,
    systemReserved: c.systemReserved.value,
    kubeReserved: c.kubeReserved.value,
    reservedSystemCPUs: cpus.value,
    systemReservedCgroup: c.systemReservedCgroup.value,
    kubeReservedCgroup: c.kubeReservedCgroup.value,
  };
}
