/**
 * The spec selections the harness runs. `node-conformance` is the official node conformance suite
 * (issue 10's target); `kubelet-extra` the [sig-node]/[sig-storage] specs not tagged
 * [NodeConformance] that still exercise the kubelet alone (issue 10's last section); `storage` the
 * upstream specs of the persistent volume types a node serves without an external service (issue 28).
 */
import type { Selection } from './junit.ts';

export type PassName = 'node-conformance' | 'kubelet-extra' | 'storage' | 'custom';

export interface Pass extends Selection {
  name: PassName;
}

export const DEFAULT_SKIP = String.raw`\[Serial\]|\[Disruptive\]|\[Flaky\]|\[Slow\]|\[Feature:`;

export const NODE_CONFORMANCE: Pass = {
  name: 'node-conformance',
  focus: String.raw`\[NodeConformance\]`,
  skip: DEFAULT_SKIP,
};

/** The describe texts (after the SIG tag) of specs that need only a kubelet, a runtime and the API. */
const KUBELET_ONLY_AREAS = [
  'Container Lifecycle Hook',
  'Container Runtime',
  'ConfigMap',
  'Docker Containers',
  'Downward API',
  'EmptyDir',
  'Events',
  'HostPath',
  'InitContainer',
  'Kubelet',
  'KubeletManagedEtcHosts',
  'Lease',
  'Mount propagation',
  'NodeLease',
  'Pods',
  'PreStop',
  'PrivilegedPod',
  'Probing container',
  'Projected',
  'Secrets',
  'Security Context',
  'Subpath',
  'Sysctls',
  'Variable Expansion',
];

export const KUBELET_EXTRA: Pass = {
  name: 'kubelet-extra',
  focus: String.raw`\[(k8s\.io|sig-node|sig-storage)\] (` + KUBELET_ONLY_AREAS.join('|') + String.raw`)\b`,
  skip: `${DEFAULT_SKIP}|\\[NodeConformance\\]`,
};

/**
 * Local and hostPath volumes as the e2e storage suites drive them: PersistentVolumes-local (every
 * local volume type: dir, links, bind mounts, tmpfs, block, block with a filesystem) and the
 * In-tree Volumes test suites of the `local`, `hostPath` and `hostPathSymlink` drivers. Skipped
 * beyond DEFAULT_SKIP, because none of these drivers can take part: Windows patterns (ntfs), Dynamic
 * PV and volume expansion (these drivers have no provisioner and no expansion), Generic Ephemeral
 * volumes (a 1.20 alpha feature). Patterns a driver does not support (e.g. Inline-volume for
 * `local`) are skipped by the suite itself at run time.
 */
export const STORAGE: Pass = {
  name: 'storage',
  focus: String.raw`PersistentVolumes-local|In-tree Volumes \[Driver: (local|hostPath|hostPathSymlink)\]`,
  skip: String.raw`${DEFAULT_SKIP}|\[sig-windows\]|Dynamic PV|volume-expand|Generic Ephemeral`,
};

export type SuiteChoice = 'node-conformance' | 'kubelet-extra' | 'storage' | 'all';

export function passesFor(suite: SuiteChoice, focus?: string, skip?: string): Pass[] {
  if (focus !== undefined) return [{ name: 'custom', focus, skip: skip ?? DEFAULT_SKIP }];
  const base =
    suite === 'all'
      ? [NODE_CONFORMANCE, KUBELET_EXTRA]
      : suite === 'kubelet-extra'
        ? [KUBELET_EXTRA]
        : suite === 'storage'
          ? [STORAGE]
          : [NODE_CONFORMANCE];
  return skip === undefined ? base : base.map((p) => ({ ...p, skip }));
}
