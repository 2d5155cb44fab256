/**
 * The labels a kubelet may put on its own Node (`--node-labels`): label syntax, and upstream's
 * rule that only some keys in the kubernetes.io and k8s.io namespaces are the kubelet's to set.
 */
import { labelValueProblems, qualifiedNameProblems } from '../api/names.ts';
import type { Chosen } from './validate.ts';

/**
 * Label keys a kubelet may set on its own Node inside the kubernetes.io / k8s.io namespaces
 * (k8s.io/kubelet/pkg/apis well_known_labels.go: kubeletLabels, kubeletLabelNamespaces).
 */
const KUBELET_LABELS: ReadonlySet<string> = new Set([
  'kubernetes.io/hostname',
  'kubernetes.io/os',
  'kubernetes.io/arch',
  'beta.kubernetes.io/os',
  'beta.kubernetes.io/arch',
  'beta.kubernetes.io/instance-type',
  'node.kubernetes.io/instance-type',
  'topology.kubernetes.io/zone',
  'topology.kubernetes.io/region',
  'failure-domain.beta.kubernetes.io/zone',
  'failure-domain.beta.kubernetes.io/region',
]);
const KUBELET_LABEL_NAMESPACES: readonly string[] = ['kubelet.kubernetes.io', 'node.kubernetes.io'];

/** The part of a label key before the first `/`, or '' when there is none. */
function labelNamespace(key: string): string {
  const slash = key.indexOf('/');
  return slash < 0 ? '' : key.slice(0, slash);
}

function inNamespace(namespace: string, domain: string): boolean {
  return namespace === domain || namespace.endsWith(`.${domain}`);
}

/** Upstream isKubernetesLabel: the key's namespace is (a subdomain of) kubernetes.io or k8s.io. */
function isKubernetesLabel(key: string): boolean {
  const ns = labelNamespace(key);
  return inNamespace(ns, 'kubernetes.io') || inNamespace(ns, 'k8s.io');
}

/** Upstream IsKubeletLabel: a well-known node label, or in an allowed kubelet namespace. */
function isKubeletLabel(key: string): boolean {
  if (KUBELET_LABELS.has(key)) return true;
  const ns = labelNamespace(key);
  return KUBELET_LABEL_NAMESPACES.some((allowed) => inNamespace(ns, allowed));
}

/** Upstream ValidateKubeletFlags for --node-labels: syntax, and the kubernetes.io/k8s.io rule. */
export function checkNodeLabels(chosen: Chosen<Readonly<Record<string, string>>>, errors: string[]): void {
  const { value: labels, label } = chosen;
  const restricted: string[] = [];
  for (const [key, value] of Object.entries(labels)) {
    if (isKubernetesLabel(key) && !isKubeletLabel(key)) restricted.push(key);
    const where = `${label}: label ${JSON.stringify(`${key}=${value}`)}`;
    for (const problem of qualifiedNameProblems(key)) errors.push(`${where}: key ${problem}`);
    for (const problem of labelValueProblems(value)) errors.push(`${where}: value ${problem}`);
  }
  if (restricted.length > 0) {
    errors.push(
      `${label}: ${restricted.map((k) => JSON.stringify(k)).join(', ')} ` +
        `${restricted.length === 1 ? 'is' : 'are'} in the kubernetes.io or k8s.io namespace; a kubelet ` +
        `may only set labels there under ${KUBELET_LABEL_NAMESPACES.map((n) => `[*.]${n}/`).join(' or ')}, ` +
        `or one of ${[...KUBELET_LABELS].sort().join(', ')}`,
    );
  }
}
