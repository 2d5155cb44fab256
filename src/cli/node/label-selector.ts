/**
 * Label selectors as `kubectl get -l` takes them (k8s.io/apimachinery/pkg/labels/selector.go
 * Parse): requirements separated by commas, all of which must hold — equality (`k=v`, `k==v`,
 * `k!=v`), set-based (`k in (a,b)`, `k notin (a,b)`), existence (`k`, `!k`) and the numeric `k>n`,
 * `k<n`. As upstream, `!=` and `notin` also match an object without the label.
 */

type Requirement =
  | { op: 'in'; key: string; values: Set<string> }
  | { op: 'notin'; key: string; values: Set<string> }
  | { op: 'exists'; key: string }
  | { op: '!exists'; key: string }
  | { op: 'gt' | 'lt'; key: string; value: number };

export type LabelMatcher = (labels: Readonly<Record<string, string>> | undefined) => boolean;

/** A label key or value: a qualified name (prefix/ allowed in keys), empty allowed for values. */
const KEY =
  /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

function checkKey(key: string, selector: string): string {
  if (!KEY.test(key) || key.length > 317)
    throw new Error(`unable to parse requirement: invalid label key "${key}" in "${selector}"`);
  return key;
}
function checkValue(v: string, selector: string): string {
  if (!VALUE.test(v) || v.length > 63)
    throw new Error(`unable to parse requirement: invalid label value "${v}" in "${selector}"`);
  return v;
}

/** Splits at commas outside parentheses. */
function splitTop(s: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let cur = '';
  for (const c of s) {
    if (c === '(') depth++;
    if (c === ')') depth--;
    if (c === ',' && depth === 0) {
      parts.push(cur);
      cur = '';
    } else cur += c;
  }
  parts.push(cur);
  return parts;
}

function parseRequirement(raw: string, selector: string): Requirement {
  const s = raw.trim();
  if (s === '') throw new Error(`found '', expected: identifier in selector "${selector}"`);
  const set = /^(\S+)\s+(in|notin)\s*\((.*)\)$/.exec(s);
  if (set) {
    const [, key = '', op, list = ''] = set;
    const values = new Set(list.split(',').map((v) => checkValue(v.trim(), selector)));
    return { op: op === 'in' ? 'in' : 'notin', key: checkKey(key, selector), values };
  }
  const eq = /^([^=!<>\s]+)\s*(==|=|!=|<|>)\s*(.*)$/.exec(s);
  if (eq) {
    const [, key = '', op = '', value = ''] = eq;
    checkKey(key, selector);
    if (op === '<' || op === '>') {
      const n = Number(value.trim());
      if (!Number.isInteger(n))
        throw new Error(
          `unable to parse requirement: for 'gt', 'lt' operators, the value must be an integer in "${selector}"`,
        );
      return { op: op === '>' ? 'gt' : 'lt', key, value: n };
    }
    const values = new Set([checkValue(value.trim(), selector)]);
    return op === '!=' ? { op: 'notin', key, values } : { op: 'in', key, values };
  }
  if (s.startsWith('!')) return { op: '!exists', key: checkKey(s.slice(1).trim(), selector) };
  return { op: 'exists', key: checkKey(s, selector) };
}

function matches(r: Requirement, labels: Readonly<Record<string, string>>): boolean {
  const has = Object.hasOwn(labels, r.key);
  const v = labels[r.key];
  switch (r.op) {
    case 'in':
      return has && r.values.has(v ?? '');
    case 'notin':
      return !has || !r.values.has(v ?? '');
    case 'exists':
      return has;
    case '!exists':
      return !has;
    case 'gt':
    case 'lt': {
      if (!has) return false;
      const n = Number(v);
      if (!Number.isInteger(n)) return false;
      return r.op === 'gt' ? n > r.value : n < r.value;
    }
  }
}

/** The matcher of a selector; throws kubectl-like errors for a selector that does not parse. */
export function parseSelector(selector: string): LabelMatcher {
  const reqs = selector.trim() === '' ? [] : splitTop(selector).map((p) => parseRequirement(p, selector));
  return (labels) => reqs.every((r) => matches(r, labels ?? {}));
}
