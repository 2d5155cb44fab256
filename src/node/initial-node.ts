/**
 * The Node object at registration (upstream kubelet_node_status.go): the one the kubelet creates
 * (initialNode), and the reconciliation of a Node of the same name found already registered.
 */
import { isHugePages } from './capacity.ts';
import { setNodeStatus } from './node-status.ts';
import { goArch, goOS } from './platform.ts';
import type { MachineInfo } from './machine-info.ts';
import type { NodeImageList, NodeStatusConfig, NodeStatusEvent, NodeStatusInputs } from './status-inputs.ts';
import type { Node, Taint } from './types.ts';

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
