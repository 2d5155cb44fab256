/**
 * Summarizes V8 heap snapshots (`.heapsnapshot`, from `node --heapsnapshot-signal=…` or
 * `v8.writeHeapSnapshot()`; bench/lean.ts takes them of the running kubelet): where the live heap is.
 *
 *   node bench/heap-top.ts FILE.heapsnapshot [--top 40] [--diff OTHER.heapsnapshot]
 *
 * Prints: total size and node count; by class (type + constructor/name) the count, self size and
 * retained size (as DevTools computes it: a node's retained size counted for its class unless a
 * node of the same class dominates it); the objects retaining most, with a retaining path; the
 * biggest strings. With --diff, the by-class table of FILE minus OTHER (e.g. 110 pods minus idle),
 * which is where per-pod costs show.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

interface Snapshot {
  snapshot: {
    meta: {
      node_fields: string[];
      node_types: [string[], ...unknown[]];
      edge_fields: string[];
      edge_types: [string[], ...unknown[]];
    };
    node_count: number;
  };
  nodes: number[];
  edges: number[];
  strings: string[];
}

export interface HeapGraph {
  n: number;
  type: string[];
  name: string[];
  self: Float64Array;
  /** Edges of node i: firstEdge[i] .. firstEdge[i+1]. */
  firstEdge: Uint32Array;
  edgeTo: Uint32Array;
  edgeName: string[];
  edgeWeak: Uint8Array;
  /** Retained sizes (dominator tree from the root, weak edges ignored). */
  retained: Float64Array;
  idom: Int32Array;
}

/** Parses a snapshot and computes its dominator tree (Cooper–Harvey–Kennedy, iterative). */
export function loadHeap(text: string): HeapGraph {
  const s = JSON.parse(text) as Snapshot;
  const nf = s.snapshot.meta.node_fields;
  const ef = s.snapshot.meta.edge_fields;
  const nodeTypes = s.snapshot.meta.node_types[0];
  const edgeTypes = s.snapshot.meta.edge_types[0];
  const NF = nf.length;
  const EF = ef.length;
  const n = s.nodes.length / NF;
  const [iType, iName, iSelf, iEdges] = ['type', 'name', 'self_size', 'edge_count'].map((f) => nf.indexOf(f));
  const [eType, eName, eTo] = ['type', 'name_or_index', 'to_node'].map((f) => ef.indexOf(f));
  const type: string[] = new Array<string>(n);
  const name: string[] = new Array<string>(n);
  const self = new Float64Array(n);
  const firstEdge = new Uint32Array(n + 1);
  const m = s.edges.length / EF;
  const edgeTo = new Uint32Array(m);
  const edgeName: string[] = new Array<string>(m);
  const edgeWeak = new Uint8Array(m);
  let e = 0;
  for (let i = 0; i < n; i++) {
    const b = i * NF;
    type[i] = nodeTypes[s.nodes[b + iType!]!] ?? '?';
    name[i] = s.strings[s.nodes[b + iName!]!] ?? '';
    self[i] = s.nodes[b + iSelf!]!;
    firstEdge[i] = e;
    const count = s.nodes[b + iEdges!]!;
    for (let k = 0; k < count; k++, e++) {
      const eb = e * EF;
      const et = edgeTypes[s.edges[eb + eType!]!] ?? '';
      const nameOrIndex = s.edges[eb + eName!]!;
      edgeName[e] = et === 'element' || et === 'hidden' ? `[${nameOrIndex}]` : (s.strings[nameOrIndex] ?? '');
      edgeTo[e] = s.edges[eb + eTo!]! / NF;
      edgeWeak[e] = et === 'weak' || et === 'shortcut' ? 1 : 0;
    }
  }
  firstEdge[n] = e;
  // Reverse postorder by an iterative DFS from the root (node 0).
  const order = new Int32Array(n).fill(-1); // node -> postorder number
  const post: number[] = [];
  const stack: number[] = [0];
  const next = new Uint32Array(n);
  const seen = new Uint8Array(n);
  seen[0] = 1;
  for (let i = 0; i < n; i++) next[i] = firstEdge[i]!;
  while (stack.length > 0) {
    const v = stack[stack.length - 1]!;
    if (next[v]! < firstEdge[v + 1]!) {
      const k = next[v]!++;
      if (edgeWeak[k]) continue;
      const w = edgeTo[k]!;
      if (!seen[w]) {
        seen[w] = 1;
        stack.push(w);
      }
    } else {
      stack.pop();
      order[v] = post.length;
      post.push(v);
    }
  }
  // Predecessors (strong edges, reachable nodes only).
  const predCount = new Uint32Array(n + 1);
  for (let v = 0; v < n; v++) {
    if (!seen[v]) continue;
    for (let k = firstEdge[v]!; k < firstEdge[v + 1]!; k++) if (!edgeWeak[k]) predCount[edgeTo[k]! + 1]!++;
  }
  for (let i = 0; i < n; i++) predCount[i + 1]! += predCount[i]!;
  const preds = new Uint32Array(predCount[n]!);
  const fill = predCount.slice(0, n);
  for (let v = 0; v < n; v++) {
    if (!seen[v]) continue;
    for (let k = firstEdge[v]!; k < firstEdge[v + 1]!; k++) {
      if (!edgeWeak[k]) preds[fill[edgeTo[k]!]!++] = v;
    }
  }
  const idom = new Int32Array(n).fill(-1);
  idom[0] = 0;
  const intersect = (a: number, b: number): number => {
    while (a !== b) {
      while (order[a]! < order[b]!) a = idom[a]!;
      while (order[b]! < order[a]!) b = idom[b]!;
    }
    return a;
  };
  for (let changed = true; changed;) {
    changed = false;
    for (let i = post.length - 2; i >= 0; i--) {
      const v = post[i]!;
      let d = -1;
      for (let k = predCount[v]!; k < predCount[v + 1]!; k++) {
        const p = preds[k]!;
        if (idom[p] === -1) continue;
        d = d === -1 ? p : intersect(p, d);
      }
      if (d !== -1 && idom[v] !== d) {
        idom[v] = d;
        changed = true;
      }
    }
  }
  const retained = new Float64Array(n);
  for (const v of post) retained[v]! += self[v]!; // post order: children before parents
  for (const v of post) if (v !== 0 && idom[v]! >= 0) retained[idom[v]!]! += retained[v]!;
  return { n, type, name, self, firstEdge, edgeTo, edgeName, edgeWeak, retained, idom };
}

export function className(g: HeapGraph, i: number): string {
  const t = g.type[i]!;
  if (t === 'object' || t === 'native') return g.name[i]!.split(' ')[0] || `(${t})`;
  if (t === 'closure') return '(closure)';
  if (t.includes('string')) return '(string)';
  return `(${t}) ${t === 'hidden' || t === 'code' || t === 'array' ? g.name[i]!.slice(0, 40) : ''}`.trim();
}

export interface ClassRow {
  cls: string;
  count: number;
  self: number;
  retained: number;
}

export function byClass(g: HeapGraph): Map<string, ClassRow> {
  const cls = Array.from({ length: g.n }, (_, i) => className(g, i));
  const out = new Map<string, ClassRow>();
  for (let i = 0; i < g.n; i++) {
    if (g.idom[i] === -1) continue; // unreachable
    const c = cls[i]!;
    const row = out.get(c) ?? { cls: c, count: 0, self: 0, retained: 0 };
    row.count++;
    row.self += g.self[i]!;
    // Counted unless an ancestor in the dominator tree is of the same class.
    let d = g.idom[i]!;
    let nested = false;
    for (let hops = 0; d !== 0 && hops < 64; hops++, d = g.idom[d]!) {
      if (cls[d] === c) {
        nested = true;
        break;
      }
    }
    if (!nested) row.retained += g.retained[i]!;
    out.set(c, row);
  }
  return out;
}

/** A path of edge names from the root to node i (dominator chain, first edge found on each step). */
export function pathTo(g: HeapGraph, i: number): string {
  const parts: string[] = [];
  for (let v = i, hops = 0; v !== 0 && hops < 12; hops++) {
    const d = g.idom[v]!;
    let label = '?';
    for (let k = g.firstEdge[d]!; k < g.firstEdge[d + 1]!; k++) {
      if (g.edgeTo[k] === v) {
        label = g.edgeName[k]!;
        break;
      }
    }
    parts.unshift(`${className(g, d)}.${label}`);
    v = d;
  }
  return parts.join(' → ');
}

const kib = (b: number): string => (b / 1024).toFixed(0);

function main(): void {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: { top: { type: 'string', default: '40' }, diff: { type: 'string' } },
  });
  const top = Number(values.top);
  const file = positionals[0];
  if (!file) throw new Error('usage: heap-top.ts FILE.heapsnapshot [--top N] [--diff OTHER]');
  const g = loadHeap(readFileSync(file, 'utf8'));
  let total = 0;
  for (let i = 0; i < g.n; i++) if (g.idom[i] !== -1) total += g.self[i]!;
  console.log(`${file}: ${g.n} nodes, ${kib(total)} KiB reachable\n`);
  const rows = byClass(g);
  console.log('class | count | self KiB | retained KiB');
  for (const r of [...rows.values()].sort((a, b) => b.retained - a.retained).slice(0, top)) {
    console.log(`${r.cls} | ${r.count} | ${kib(r.self)} | ${kib(r.retained)}`);
  }
  if (values.diff) {
    const base = byClass(loadHeap(readFileSync(values.diff, 'utf8')));
    console.log(`\ndiff against ${values.diff}: class | Δcount | Δself KiB | Δretained KiB`);
    const keys = new Set([...rows.keys(), ...base.keys()]);
    const d = [...keys].map((k) => {
      const a = rows.get(k);
      const b = base.get(k);
      return {
        cls: k,
        count: (a?.count ?? 0) - (b?.count ?? 0),
        self: (a?.self ?? 0) - (b?.self ?? 0),
        retained: (a?.retained ?? 0) - (b?.retained ?? 0),
      };
    });
    for (const r of d.sort((x, y) => y.self - x.self).slice(0, top)) {
      console.log(`${r.cls} | ${r.count} | ${kib(r.self)} | ${kib(r.retained)}`);
    }
  }
  console.log('\nbiggest retainers (objects and closures): retained KiB | class | path');
  const idx = Array.from({ length: g.n }, (_, i) => i)
    .filter((i) => g.idom[i] !== -1 && (g.type[i] === 'object' || g.type[i] === 'closure'))
    .sort((a, b) => g.retained[b]! - g.retained[a]!)
    .slice(0, top);
  for (const i of idx)
    console.log(`${kib(g.retained[i]!)} | ${className(g, i)} ${g.name[i]!.slice(0, 30)} | ${pathTo(g, i)}`);
  console.log('\nbiggest strings: KiB | start');
  const strs = Array.from({ length: g.n }, (_, i) => i)
    .filter((i) => g.idom[i] !== -1 && g.type[i]!.includes('string'))
    .sort((a, b) => g.self[b]! - g.self[a]!)
    .slice(0, 15);
  for (const i of strs) console.log(`${kib(g.self[i]!)} | ${JSON.stringify(g.name[i]!.slice(0, 80))}`);
}

if (import.meta.main) main();
