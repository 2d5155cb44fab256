/**
 * A subset of kubectl's JSONPath templates (k8s.io/client-go/util/jsonpath: parser.go, jsonpath.go)
 * for `get pods -o jsonpath=` and `-o custom-columns=`. Supported: text outside `{}`; inside, a
 * path from the current object (`.a.b`, optional leading `$`/`@`), `['key']` and `\.`-escaped dots
 * for keys with dots, `[n]` (negative from the end), `[a:b]`, `[*]` and `.*`, `..key` (recursive
 * descent), filters `[?(@.path)]` and `[?(@.path OP literal)]` with `== != < <= > >=` against a
 * quoted string, a number, `true`/`false`, or another `@.path`; string literals `{"\n"}`;
 * `{range PATH}…{end}` (nestable). Missing keys print nothing (kubectl's printer allows them).
 * Results of one action are joined by a space; maps and lists print as compact JSON, other values
 * as text. Not supported: unions `[a,b]`, step slices `[a:b:c]`, `&&`/`||` in filters.
 */

type Step =
  | { kind: 'field'; name: string }
  | { kind: 'wildcard' }
  | { kind: 'recursive'; name: string | undefined }
  | { kind: 'index'; index: number }
  | { kind: 'slice'; start: number | undefined; end: number | undefined }
  | { kind: 'filter'; left: Step[]; op: string | undefined; right: Operand | undefined };

type Operand = { kind: 'path'; steps: Step[] } | { kind: 'literal'; value: unknown };

type Node =
  | { kind: 'text'; text: string }
  | { kind: 'path'; steps: Step[] }
  | { kind: 'range'; steps: Step[]; body: Node[] };

export class JsonPathError extends Error {
  override readonly name = 'JsonPathError';
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v);

function parseLiteral(s: string): unknown {
  const t = s.trim();
  if (/^(['"]).*\1$/.test(t)) return t.slice(1, -1);
  if (t === 'true' || t === 'false') return t === 'true';
  const n = Number(t);
  if (t !== '' && !Number.isNaN(n)) return n;
  throw new JsonPathError(`unrecognized literal ${t}`);
}

/** Splits a path into steps. */
function parsePath(src: string): Step[] {
  let s = src.trim();
  if (s.startsWith('$') || s.startsWith('@')) s = s.slice(1);
  const steps: Step[] = [];
  let i = 0;
  const readName = (): string => {
    let name = '';
    while (i < s.length) {
      const c = s[i] ?? '';
      if (c === '\\' && i + 1 < s.length) {
        name += s[i + 1];
        i += 2;
        continue;
      }
      if (c === '.' || c === '[') break;
      name += c;
      i++;
    }
    return name;
  };
  while (i < s.length) {
    const c = s[i];
    if (c === '.') {
      if (s[i + 1] === '.') {
        i += 2;
        const name = readName();
        steps.push({ kind: 'recursive', name: name === '*' || name === '' ? undefined : name });
        continue;
      }
      i++;
      const name = readName();
      if (name === '*') steps.push({ kind: 'wildcard' });
      else if (name !== '') steps.push({ kind: 'field', name });
      continue;
    }
    if (c === '[') {
      // The matching `]`, skipping quoted text and nested brackets (filters).
      let depth = 0;
      let quote = '';
      let j = i;
      for (; j < s.length; j++) {
        const d = s[j];
        if (quote) {
          if (d === quote) quote = '';
        } else if (d === '"' || d === "'") quote = d;
        else if (d === '[') depth++;
        else if (d === ']' && --depth === 0) break;
      }
      if (j >= s.length) throw new JsonPathError(`unterminated array in ${src}`);
      const inner = s.slice(i + 1, j).trim();
      i = j + 1;
      if (inner === '*') steps.push({ kind: 'wildcard' });
      else if (/^(['"]).*\1$/.test(inner)) steps.push({ kind: 'field', name: inner.slice(1, -1) });
      else if (inner.startsWith('?(') && inner.endsWith(')')) steps.push(parseFilter(inner.slice(2, -1)));
      else if (/^-?\d+$/.test(inner)) steps.push({ kind: 'index', index: Number(inner) });
      else if (/^-?\d*:-?\d*$/.test(inner)) {
        const [a = '', b = ''] = inner.split(':');
        steps.push({ kind: 'slice', start: a ? Number(a) : undefined, end: b ? Number(b) : undefined });
      } else throw new JsonPathError(`unsupported array expression [${inner}]`);
      continue;
    }
    throw new JsonPathError(`unrecognized character in path ${src}: ${c ?? ''}`);
  }
  return steps;
}

function parseFilter(expr: string): Step {
  const m = /^(.*?)\s*(==|!=|<=|>=|<|>)\s*(.*)$/.exec(expr);
  if (!m) return { kind: 'filter', left: parsePath(expr), op: undefined, right: undefined };
  const [, l = '', op = '', r = ''] = m;
  const right: Operand = r.trim().startsWith('@')
    ? { kind: 'path', steps: parsePath(r) }
    : { kind: 'literal', value: parseLiteral(r) };
  return { kind: 'filter', left: parsePath(l), op, right };
}

/** Parses a template: text and `{actions}`. */
export function parseTemplate(template: string): Node[] {
  const root: Node[] = [];
  const stack: Node[][] = [root];
  let i = 0;
  const top = (): Node[] => stack[stack.length - 1] ?? root;
  while (i < template.length) {
    const open = template.indexOf('{', i);
    if (open === -1) {
      top().push({ kind: 'text', text: template.slice(i) });
      break;
    }
    if (open > i) top().push({ kind: 'text', text: template.slice(i, open) });
    let quote = '';
    let j = open + 1;
    for (; j < template.length; j++) {
      const d = template[j];
      if (quote) {
        if (d === '\\') j++;
        else if (d === quote) quote = '';
      } else if (d === '"') quote = d;
      else if (d === '}') break;
    }
    if (j >= template.length) throw new JsonPathError(`unclosed action in ${template}`);
    const action = template.slice(open + 1, j).trim();
    i = j + 1;
    if (action.startsWith('"') && action.endsWith('"') && action.length >= 2) {
      top().push({ kind: 'text', text: JSON.parse(action) as string });
    } else if (/^range\s/.test(action)) {
      const body: Node[] = [];
      top().push({ kind: 'range', steps: parsePath(action.slice(5)), body });
      stack.push(body);
    } else if (action === 'end') {
      if (stack.length === 1) throw new JsonPathError('not in range, nothing to end');
      stack.pop();
    } else {
      top().push({ kind: 'path', steps: parsePath(action) });
    }
  }
  if (stack.length > 1) throw new JsonPathError('unclosed range');
  return root;
}

function descend(v: unknown, name: string | undefined, out: unknown[]): void {
  if (Array.isArray(v)) {
    for (const e of v) {
      if (name === undefined) out.push(e);
      descend(e, name, out);
    }
  } else if (isObject(v)) {
    for (const [k, e] of Object.entries(v)) {
      if (name === undefined || k === name) out.push(e);
      descend(e, name, out);
    }
  }
}

function compare(a: unknown, op: string, b: unknown): boolean {
  switch (op) {
    case '==':
      return a === b;
    case '!=':
      return a !== b;
  }
  if (typeof a !== typeof b || (typeof a !== 'number' && typeof a !== 'string')) return false;
  const x = a;
  const y = b as number | string;
  return op === '<' ? x < y : op === '<=' ? x <= y : op === '>' ? x > y : x >= y;
}

function evalSteps(values: unknown[], steps: readonly Step[]): unknown[] {
  let cur = values;
  for (const step of steps) {
    const next: unknown[] = [];
    for (const v of cur) {
      switch (step.kind) {
        case 'field':
          if (isObject(v) && step.name in v) next.push(v[step.name]);
          break;
        case 'wildcard':
          if (Array.isArray(v)) next.push(...(v as unknown[]));
          else if (isObject(v)) next.push(...Object.values(v));
          break;
        case 'recursive':
          descend(v, step.name, next);
          break;
        case 'index':
          if (Array.isArray(v)) {
            const idx = step.index < 0 ? v.length + step.index : step.index;
            if (idx >= 0 && idx < v.length) next.push(v[idx]);
          }
          break;
        case 'slice':
          if (Array.isArray(v)) next.push(...(v as unknown[]).slice(step.start, step.end));
          break;
        case 'filter':
          if (Array.isArray(v)) {
            for (const e of v as unknown[]) {
              const left = evalSteps([e], step.left);
              if (step.op === undefined || step.right === undefined) {
                if (left.length > 0) next.push(e);
                continue;
              }
              const right =
                step.right.kind === 'literal' ? [step.right.value] : evalSteps([e], step.right.steps);
              const op = step.op;
              if (left.length > 0 && right.length > 0 && compare(left[0], op, right[0])) next.push(e);
            }
          }
          break;
      }
    }
    cur = next;
  }
  return cur;
}

/** How client-go prints one result: maps and lists as compact JSON, the rest as text. */
export function textOf(v: unknown): string {
  if (typeof v === 'string') return v;
  if (v === null || v === undefined) return '<nil>';
  if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint') return String(v);
  return JSON.stringify(v) ?? '';
}

/** The values an expression finds (custom-columns uses them directly). */
export function findValues(steps: readonly Node[], data: unknown): unknown[][] {
  const out: unknown[][] = [];
  const run = (nodes: readonly Node[], cur: unknown): void => {
    for (const n of nodes) {
      if (n.kind === 'text') out.push([n.text]);
      else if (n.kind === 'path') out.push(evalSteps([cur], n.steps));
      else for (const e of evalSteps([cur], n.steps)) run(n.body, e);
    }
  };
  run(steps, data);
  return out;
}

/** Executes a parsed template over `data`, as kubectl's JSONPath printer writes it. */
export function executeTemplate(nodes: readonly Node[], data: unknown): string {
  return findValues(nodes, data)
    .map((results) => results.map(textOf).join(' '))
    .join('');
}
