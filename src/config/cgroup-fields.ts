/**
 * The field table's rows for pod cgroups per QoS class (see fields.ts for what a row is and
 * drives): cgroupsPerQOS, cgroupRoot, cgroupDriver, podPidsLimit, the CFS quota settings and
 * enforceNodeAllocatable with the reservations it enforces (systemReserved, kubeReserved,
 * reservedSystemCPUs and their cgroups). Spread into KUBELET_FIELDS where they stand in
 * `run --help`; checked together in compile.ts (podCgroupSettings) and node-allocatable.ts.
 */
import * as d from './defaults.ts';
import { formatGoDuration as dur } from './duration.ts';
import type { FieldSpec } from './fields.ts';
import { checkReservedCPUs, checkReservedResources } from './node-allocatable.ts';

export const POD_CGROUP_FIELDS = {
  cgroupsPerQOS: {
    kind: 'bool',
    file: 'cgroupsPerQOS',
    flag: { name: 'cgroups-per-qos' },
    fileZero: 'kept',
    default: d.DEFAULT_CGROUPS_PER_QOS,
    help: `pod cgroups per QoS class under <cgroup-root>/kubepods (default ${d.DEFAULT_CGROUPS_PER_QOS})`,
  },
  cgroupRoot: {
    kind: 'string',
    file: 'cgroupRoot',
    flag: { name: 'cgroup-root', arg: '<name>' },
    // cmd/kubelet: an empty cgroup root becomes "/" (from the flag too: compile.ts).
    fileZero: 'default',
    default: d.DEFAULT_CGROUP_ROOT,
    check: (c, errors) => {
      if (c.value !== '' && !c.value.startsWith('/')) {
        errors.push(
          `${c.label}: ${JSON.stringify(c.value)} must be an absolute cgroup name such as "/" or "/pods"`,
        );
      }
    },
    help: `cgroup kubepods is created under (default ${d.DEFAULT_CGROUP_ROOT})`,
  },
  cgroupDriver: {
    kind: 'string',
    file: 'cgroupDriver',
    flag: { name: 'cgroup-driver', arg: '<driver>' },
    fileZero: 'default',
    default: d.DEFAULT_CGROUP_DRIVER,
    check: (c, errors) => {
      if (c.value !== 'cgroupfs' && c.value !== 'systemd') {
        errors.push(
          `${c.label}: ${JSON.stringify(c.value)} is not a cgroup driver (want "cgroupfs" or "systemd")`,
        );
      }
    },
    help:
      "cgroup driver, the same as the container runtime's: cgroupfs or systemd " +
      `(default ${d.DEFAULT_CGROUP_DRIVER})`,
  },
  podPidsLimit: {
    kind: 'int64',
    file: 'podPidsLimit',
    flag: { name: 'pod-max-pids', arg: '<n>' },
    fileZero: 'kept',
    default: d.DEFAULT_POD_PIDS_LIMIT,
    help: `pids limit of each pod cgroup, -1 = none (default ${d.DEFAULT_POD_PIDS_LIMIT})`,
  },
  cpuCFSQuota: {
    kind: 'bool',
    file: 'cpuCFSQuota',
    flag: { name: 'cpu-cfs-quota' },
    fileZero: 'kept',
    default: d.DEFAULT_CPU_CFS_QUOTA,
    help: `CFS quota for pod cpu limits (default ${d.DEFAULT_CPU_CFS_QUOTA})`,
  },
  cpuCFSQuotaPeriod: {
    kind: 'duration',
    file: 'cpuCFSQuotaPeriod',
    flag: { name: 'cpu-cfs-quota-period', arg: '<duration>' },
    // A pointer upstream: "0s" in the file is refused, not defaulted.
    fileZero: 'kept',
    default: d.DEFAULT_CPU_CFS_QUOTA_PERIOD_MS,
    check: (c, errors) => {
      if (c.value < 1 || c.value > 1000) {
        errors.push(`${c.label}: ${JSON.stringify(c.text)} must be between 1ms and 1s, inclusive`);
      }
    },
    help: `CFS period of pod cgroups, 1ms to 1s (default ${dur(d.DEFAULT_CPU_CFS_QUOTA_PERIOD_MS)})`,
  },
  enforceNodeAllocatable: {
    kind: 'stringList',
    file: 'enforceNodeAllocatable',
    flag: { name: 'enforce-node-allocatable', arg: '<pods|none,...>' },
    // A nil list gets the default; an explicit empty one (file `[]`, flag `=`) stays.
    fileZero: 'kept',
    default: [...d.DEFAULT_ENFORCE_NODE_ALLOCATABLE],
    // Checked with cgroupsPerQOS in compile.ts.
    help:
      "node allocatable enforcement: 'pods', 'system-reserved', 'kube-reserved', or empty/'none' " +
      '(default pods); repeatable',
  },
  // Node allocatable reservations (upstream KubeletConfiguration systemReserved, kubeReserved, …).
  systemReserved: {
    kind: 'stringMap',
    file: 'systemReserved',
    flag: { name: 'system-reserved', arg: '<resource=quantity,...>' },
    fileZero: 'kept',
    default: {},
    check: checkReservedResources,
    help:
      'resources reserved for non-kubernetes components, e.g. cpu=200m,memory=500Mi,ephemeral-storage=1Gi,pid=1000 ' +
      '(cpu, memory, ephemeral-storage and pid); subtracted from allocatable',
  },
  kubeReserved: {
    kind: 'stringMap',
    file: 'kubeReserved',
    flag: { name: 'kube-reserved', arg: '<resource=quantity,...>' },
    fileZero: 'kept',
    default: {},
    check: checkReservedResources,
    help:
      'resources reserved for kubernetes system components (kubelet, runtime), e.g. cpu=200m,memory=500Mi ' +
      '(cpu, memory, ephemeral-storage and pid); subtracted from allocatable',
  },
  reservedSystemCPUs: {
    kind: 'string',
    file: 'reservedSystemCPUs',
    flag: { name: 'reserved-cpus', arg: '<cpu list>' },
    fileZero: 'default',
    default: '',
    check: checkReservedCPUs,
    help:
      'CPUs reserved for system and kubernetes daemons, e.g. 0-1,6; their count replaces the cpu of ' +
      '--system-reserved and --kube-reserved (no cpuset is applied: tskubelet has no CPU manager)',
  },
  systemReservedCgroup: {
    kind: 'string',
    file: 'systemReservedCgroup',
    flag: { name: 'system-reserved-cgroup', arg: '<cgroup>' },
    fileZero: 'default',
    default: '',
    help: "existing top-level cgroup of the system daemons (e.g. /system.slice) that 'system-reserved' enforcement limits to --system-reserved",
  },
  kubeReservedCgroup: {
    kind: 'string',
    file: 'kubeReservedCgroup',
    flag: { name: 'kube-reserved-cgroup', arg: '<cgroup>' },
    fileZero: 'default',
    default: '',
    help: "existing top-level cgroup of the kubernetes daemons (e.g. /kube.slice) that 'kube-reserved' enforcement limits to --kube-reserved",
  },
} satisfies Readonly<Record<string, FieldSpec>>;
