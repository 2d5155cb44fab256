// The folder map of src/ as a lint rule (docs/architecture.md, "Map"): each folder is one concern
// and its index.ts is its contract. Two checks on every import of a production file:
//   1. layers: a folder imports only the folders in its `uses` list (type-only imports may also
//      name the shapes of the folders in its `types` list);
//   2. contracts: an import into another folder that has an index.ts goes through that index.ts.
//      A nested folder with an index.ts is a contract of its own: runtime/cri and
//      runtime/containerd-events for everyone; the folders in PRIVATE only for their parent's files
//      (the rest of the kubelet enters runtime/ through runtime/index.ts).
// Exceptions: the shared leaf files in LEAVES (they import nothing of the kubelet) may be imported
// directly by any folder; api/ and util/ (LIBRARIES) have no index.ts and are imported file by file.
// Tests and testing.ts fixtures may import anything.
import { existsSync } from 'node:fs';
import path from 'node:path';

/** Every top folder of src/ but cli/: what kubelet/ (the assembly) may use. */
const BELOW_CLI = [
  'util',
  'api',
  'config',
  'metrics',
  'timeline',
  'runtime',
  'volume',
  'status',
  'pleg',
  'prober',
  'cm',
  'gc',
  'logs',
  'stats',
  'eviction',
  'oom',
  'podsource',
  'node',
  'shutdown',
  'why',
  'server',
  'console',
  'certificate',
];

/**
 * Bottom to top. `uses`: folders whose values this one may import; `types`: folders whose types
 * only it may name (a neighbour's data shapes, or a hook type of a folder above). Order matters
 * only for reading.
 */
export const FOLDERS = {
  util: { uses: [], types: [] },
  api: { uses: ['util'], types: ['volume'] },
  config: { uses: ['util', 'api'], types: ['node', 'eviction'] },
  metrics: { uses: ['util'], types: ['api', 'runtime', 'pleg', 'prober', 'kubelet'] },
  timeline: { uses: ['util', 'metrics'], types: [] },
  runtime: { uses: ['util', 'api', 'config', 'timeline'], types: ['volume'] },
  volume: { uses: ['util', 'api', 'config'], types: ['runtime', 'timeline'] },
  status: { uses: ['util', 'api', 'config', 'runtime'], types: ['timeline'] },
  pleg: { uses: ['util', 'api', 'config', 'runtime'], types: [] },
  prober: { uses: ['util', 'api', 'config', 'runtime'], types: ['timeline'] },
  cm: { uses: ['util', 'api', 'config'], types: [] },
  gc: { uses: ['util', 'api', 'config', 'runtime'], types: [] },
  logs: { uses: ['util', 'api', 'config', 'runtime'], types: [] },
  stats: { uses: ['util', 'api', 'config', 'cm'], types: ['runtime', 'metrics'] },
  eviction: { uses: ['util', 'api', 'config'], types: ['stats'] },
  oom: { uses: ['util'], types: [] },
  podsource: { uses: ['util', 'api', 'config'], types: [] },
  node: { uses: ['util', 'api', 'config'], types: [] },
  shutdown: { uses: ['util', 'api', 'config'], types: ['kubelet'] },
  why: { uses: ['util', 'api', 'logs', 'runtime'], types: ['prober', 'status'] },
  server: { uses: ['util', 'api', 'config', 'logs', 'runtime'], types: ['timeline', 'why'] },
  console: { uses: ['util', 'api'], types: ['node'] },
  certificate: { uses: ['util', 'api'], types: [] },
  kubelet: { uses: BELOW_CLI, types: [] },
  cli: { uses: ['*'], types: [] },
};

/** Files any folder may import directly: tables and parsers that import nothing of the kubelet. */
export const LEAVES = [
  'config/defaults.ts',
  'config/duration.ts',
  'eviction/signals.ts',
  'metrics/buckets.ts',
];

/** Libraries without a contract: imported file by file (one concept per file, no shared state). */
export const LIBRARIES = ['api', 'util'];

/** Nested contracts that only their parent folder's files may use (others use the parent's index.ts). */
export const PRIVATE = ['runtime/images', 'runtime/env', 'runtime/lifecycle', 'runtime/kuberuntime'];

const SRC = path.resolve(import.meta.dirname, '..', 'src');

/** The innermost folder with an index.ts that holds `file` (relative to src), or undefined. */
function contractOf(rel) {
  const parts = rel.split(path.sep).slice(0, -1);
  for (let n = parts.length; n >= 1; n--) {
    const dir = parts.slice(0, n).join('/');
    if (existsSync(path.join(SRC, dir, 'index.ts'))) return dir;
  }
  return undefined;
}

/** The contract an import from `fromRel` into `target` must go through, or undefined. */
function contractFor(target, fromRel) {
  let contract = contractOf(target);
  while (contract && PRIVATE.includes(contract)) {
    const parent = path.posix.dirname(contract);
    if (fromRel.startsWith(parent + '/')) break;
    contract = contractOf(path.posix.join(parent, 'index.ts'));
  }
  return contract;
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
      unmapped: '{{from}}/ is not in the folder map: give it a row in FOLDERS (eslint/boundaries.js)',
    },
  },
  create(context) {
    const file = context.filename;
    if (!file.startsWith(SRC + path.sep)) return {};
    if (file.endsWith('.test.ts') || file.endsWith(`${path.sep}testing.ts`)) return {};
    const fromRel = path.relative(SRC, file).split(path.sep).join('/');
    const from = fromRel.split('/')[0];
    const fromContract = contractOf(fromRel);
    function report(node, contract, target) {
      const data = { to: contract, index: `${contract}/index.ts`, target };
      context.report({ node, messageId: 'contract', data });
    }
    function check(node) {
      const spec = node.source?.value;
      if (typeof spec !== 'string' || !spec.startsWith('.')) return;
      const target = path
        .relative(SRC, path.resolve(path.dirname(file), spec))
        .split(path.sep)
        .join('/');
      if (target.startsWith('..')) return;
      const to = target.split('/')[0];
      if (to === from) {
        // Within a folder: a nested contract (runtime/cri) is still entered through its index.ts.
        const inner = contractFor(target, fromRel);
        if (inner && inner !== from && inner !== fromContract && !fromRel.startsWith(inner + '/')) {
          if (target !== `${inner}/index.ts`) report(node, inner, target);
        }
        return;
      }
      const rules = FOLDERS[from];
      if (!rules) {
        context.report({ node, messageId: 'unmapped', data: { from } });
        return;
      }
      const allowed =
        rules.uses.includes('*') ||
        rules.uses.includes(to) ||
        (isTypeOnly(node) && rules.types.includes(to)) ||
        LEAVES.includes(target);
      if (!allowed) {
        context.report({ node, messageId: 'layer', data: { from, to } });
        return;
      }
      if (LEAVES.includes(target) || LIBRARIES.includes(to)) return;
      const contract = contractFor(target, fromRel);
      if (contract && target !== `${contract}/index.ts`) report(node, contract, target);
    }
    return { ImportDeclaration: check, ExportNamedDeclaration: check, ExportAllDeclaration: check };
  },
};

export default { rules: { 'folder-map': rule } };
