// The folder map of src/ as a lint rule (docs/architecture.md, "Map"): each folder is one concern
// and its index.ts is its contract. Two checks on every import of a production file:
//   1. layers: a folder imports only the folders below it in FOLDERS (type-only imports may also
//      name the shapes of the folders in its `types` list);
//   2. contracts: an import into another folder that has an index.ts goes through that index.ts
//      (a nested folder with an index.ts, e.g. runtime/cri, is a contract of its own), except the
//      shared leaf files in LEAVES, which import nothing of the kubelet.
// Tests and testing.ts fixtures may import anything.
import { existsSync } from 'node:fs';
import path from 'node:path';

/**
 * Bottom to top. `uses`: folders whose values this one may import; `types`: folders whose types
 * only it may name (a neighbour's data shapes). Order matters only for reading.
 */
export const FOLDERS = {
  util: { uses: [], types: [] },
  api: { uses: ['util'], types: ['volume'] },
  config: { uses: ['util', 'api'], types: ['node', 'eviction'] },
  metrics: { uses: ['util'], types: ['api', 'runtime', 'pleg', 'prober', 'kubelet'] },
  timeline: { uses: ['util', 'metrics'], types: [] },
  runtime: { uses: ['util', 'api', 'config', 'timeline'], types: ['volume'] },
  volume: { uses: ['util', 'api', 'config'], types: ['runtime', 'timeline'] },
  status: { uses: ['util', 'api', 'config'], types: ['timeline'] },
  pleg: { uses: ['util', 'api', 'config'], types: ['runtime'] },
  prober: { uses: ['util', 'api', 'config', 'runtime'], types: ['timeline'] },
  cm: { uses: ['util', 'api', 'config'], types: [] },
  gc: { uses: ['util', 'api', 'config', 'runtime'], types: [] },
  logs: { uses: ['util', 'api', 'config'], types: ['runtime'] },
  stats: { uses: ['util', 'api', 'config', 'cm'], types: ['runtime', 'metrics'] },
  eviction: { uses: ['util', 'api', 'config'], types: ['stats'] },
  oom: { uses: ['util'], types: [] },
  podsource: { uses: ['util', 'api', 'config'], types: [] },
  node: { uses: ['util', 'api', 'config'], types: [] },
  shutdown: { uses: ['util', 'api', 'config'], types: ['kubelet'] },
  why: { uses: ['util', 'api', 'logs', 'runtime'], types: ['prober', 'status'] },
  server: { uses: ['util', 'api', 'config', 'logs', 'runtime'], types: ['timeline', 'why'] },
  console: { uses: ['util', 'api', 'server'], types: ['node'] },
  kubelet: { uses: ['*'], types: [] },
  cli: { uses: ['*'], types: [] },
};

/** Files any folder may import directly: tables and parsers that import nothing of the kubelet. */
export const LEAVES = ['config/defaults.ts', 'config/duration.ts', 'eviction/signals.ts'];

const SRC = path.resolve(import.meta.dirname, '..', 'src');

/** The innermost folder with an index.ts that holds `file` (relative to src), or undefined. */
function contractOf(rel) {
  const parts = rel.split('/').slice(0, -1);
  for (let n = parts.length; n >= 1; n--) {
    const dir = parts.slice(0, n).join('/');
    if (existsSync(path.join(SRC, dir, 'index.ts'))) return dir;
  }
  return undefined;
}

function isTypeOnly(node) {
  if (node.importKind === 'type' || node.exportKind === 'type') return true;
  const specs = node.specifiers ?? [];
  return specs.length > 0 && specs.every((s) => s.importKind === 'type' || s.exportKind === 'type');
}

const rule = {
  meta: {
    type: 'problem',
    docs: { description: 'the folder map of src/: layers and index.ts contracts' },
    schema: [],
    messages: {
      layer: '{{from}}/ may not import {{to}}/ (docs/architecture.md, "Map"; eslint/boundaries.js)',
      contract: "import {{to}}/ through its contract '{{index}}', not '{{target}}'",
    },
  },
  create(context) {
    const file = context.filename;
    if (!file.startsWith(SRC + path.sep)) return {};
    if (file.endsWith('.test.ts') || file.endsWith(`${path.sep}testing.ts`)) return {};
    const fromRel = path.relative(SRC, file);
    const from = fromRel.split(path.sep)[0];
    const fromContract = contractOf(fromRel);
    function check(node) {
      const spec = node.source?.value;
      if (typeof spec !== 'string' || !spec.startsWith('.')) return;
      const target = path.relative(SRC, path.resolve(path.dirname(file), spec));
      if (target.startsWith('..')) return;
      const to = target.split(path.sep)[0];
      if (to === from) {
        // Within a folder: a nested contract (runtime/cri) is still entered through its index.ts.
        const inner = contractOf(target);
        if (inner && inner !== from && inner !== fromContract && !fromRel.startsWith(inner + '/')) {
          if (target !== `${inner}/index.ts`) {
            context.report({ node, messageId: 'contract', data: { to: inner, index: `${inner}/index.ts`, target } });
          }
        }
        return;
      }
      const rules = FOLDERS[from];
      const allowed =
        !rules ||
        rules.uses.includes('*') ||
        rules.uses.includes(to) ||
        (isTypeOnly(node) && rules.types.includes(to)) ||
        LEAVES.includes(target);
      if (!allowed) {
        context.report({ node, messageId: 'layer', data: { from, to } });
        return;
      }
      if (LEAVES.includes(target)) return;
      const contract = contractOf(target);
      if (contract && target !== `${contract}/index.ts`) {
        context.report({ node, messageId: 'contract', data: { to: contract, index: `${contract}/index.ts`, target } });
      }
    }
    return { ImportDeclaration: check, ExportNamedDeclaration: check, ExportAllDeclaration: check };
  },
};

export default { rules: { 'folder-map': rule } };
