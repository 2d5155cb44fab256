/**
 * Node selector requirements against a node's labels and fields (upstream
 * k8s.io/component-helpers/scheduling/corev1 MatchNodeSelectorTerms, with
 * labels.Selector semantics per operator). Shared by pod admission (kubelet/admission.ts) and the
 * PV node-affinity check at mount time (volume/persistent-volumes.ts).
 */
import type { NodeSelectorRequirement } from './types.ts';

/** One requirement against a value map (labels, or fields such as `metadata.name`). */
export function requirementMatches(r: NodeSelectorRequirement, values: Record<string, string>): boolean {
  const v = values[r.key];
  switch (r.operator) {
    case 'In':
      return v !== undefined && (r.values ?? []).includes(v);
    case 'NotIn':
      return v === undefined || !(r.values ?? []).includes(v);
    case 'Exists':
      return v !== undefined;
    case 'DoesNotExist':
      return v === undefined;
    case 'Gt':
    case 'Lt': {
      const n = Number(v);
      const bound = Number(r.values?.[0]);
      if (v === undefined || !Number.isInteger(n) || !Number.isInteger(bound)) return false;
      return r.operator === 'Gt' ? n > bound : n < bound;
    }
    default:
      return false; // an operator upstream does not know never matches
  }
}

export interface NodeSelectorTermLike {
  matchExpressions?: readonly { key: string; operator: string; values?: string[] }[];
  matchFields?: readonly { key: string; operator: string; values?: string[] }[];
}

/**
 * Upstream MatchNodeSelectorTerms: the terms are ORed; within a term every expression (against the
 * labels) and every field requirement (only `metadata.name`, against the node's name) must match;
 * a term with neither matches nothing.
 */
export function matchesNodeSelectorTerms(
  terms: readonly NodeSelectorTermLike[],
  node: { name: string; labels: Record<string, string> },
): boolean {
  const fields = { 'metadata.name': node.name };
  return terms.some((t) => {
    const exprs = t.matchExpressions ?? [];
    const flds = t.matchFields ?? [];
    if (exprs.length === 0 && flds.length === 0) return false;
    return (
      exprs.every((r) => requirementMatches(r as NodeSelectorRequirement, node.labels)) &&
      flds.every((r) => requirementMatches(r as NodeSelectorRequirement, fields))
    );
  });
}
