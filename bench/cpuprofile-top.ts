/**
 * Summarizes V8 .cpuprofile files (node --cpu-prof): the top functions by self time, and by
 * inclusive time for tskubelet's own code, module-level totals, and GC/idle/program shares.
 *
 *   node bench/cpuprofile-top.ts FILE.cpuprofile [...] [--top 25] [--from S] [--to S]
 *
 * Prints a timeline first (busy ms per second since the profile started), so a phase (e.g. the batch
 * after start-up) can be selected with --from/--to, in seconds since the profile started.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { sourcePosition } from '../src/util/source-positions.ts';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

const { values, positionals } = parseArgs({
  options: {
    top: { type: 'string', default: '25' },
    from: { type: 'string', default: '0' },
    to: { type: 'string', default: 'Infinity' },
  },
  allowPositionals: true,
});
const TOP = Number(values.top);
const REPO_URL = new URL('..', import.meta.url).href;
/**
 * A frame's source file (repository-relative) and line: bin/tskubelet runs the bundle in dist/,
 * whose line tables name the source (src/…, node_modules/…) of each line.
 */
function sourceOf(f: CallFrame): { file: string; line: number } | undefined {
  if (!f.url.startsWith(REPO_URL)) return undefined;
  const file = f.url.slice(REPO_URL.length);
  return sourcePosition(fileURLToPath(f.url), f.lineNumber + 1) ?? { file, line: f.lineNumber + 1 };
}

function where(f: CallFrame): string {
  const own = sourceOf(f);
  if (own) return `${own.file}:${own.line}`;
  const url = f.url.replace(/^.*node_modules\//, 'node_modules/');
  return url ? `${url}:${f.lineNumber + 1}` : '(native)';
}

function moduleOf(f: CallFrame): string {
  if (!f.url) return f.functionName.startsWith('(') ? f.functionName : '(native)';
  const own = sourceOf(f)?.file;
  if (own !== undefined && !own.startsWith('node_modules/')) return own.split('/').slice(0, 2).join('/');
  const nm = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(own ?? f.url);
  if (nm) return `npm:${nm[1] ?? '?'}`;
  if (f.url.startsWith('node:')) return f.url.split('/')[0] ?? f.url;
  return f.url;
}

for (const file of positionals) {
  const p = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const self = new Map<number, number>();
  const fromUs = Number(values.from) * 1e6;
  const toUs = Number(values.to) * 1e6;
  const busyPerSecond: number[] = [];
  let t = 0;
  p.samples.forEach((id, i) => {
    const dt = p.timeDeltas[i] ?? 0;
    t += dt;
    const name = byId.get(id)?.callFrame.functionName;
    if (name !== '(idle)') {
      const sec = Math.floor(t / 1e6);
      busyPerSecond[sec] = (busyPerSecond[sec] ?? 0) + dt / 1000;
    }
    if (t >= fromUs && t < toUs) self.set(id, (self.get(id) ?? 0) + dt);
  });
  const totalUs = [...self.values()].reduce((a, b) => a + b, 0);

  const selfByFn = new Map<string, number>();
  const selfByModule = new Map<string, number>();
  const inclusive = new Map<string, number>();
  for (const [id, us] of self) {
    const n = byId.get(id);
    if (!n) continue;
    const key = `${n.callFrame.functionName || '(anonymous)'}  ${where(n.callFrame)}`;
    selfByFn.set(key, (selfByFn.get(key) ?? 0) + us);
    const m = moduleOf(n.callFrame);
    selfByModule.set(m, (selfByModule.get(m) ?? 0) + us);
    // Inclusive time: once per distinct function on the stack.
    const seen = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const f = byId.get(cur)?.callFrame;
      if (!f) break;
      const k = `${f.functionName || '(anonymous)'}  ${where(f)}`;
      if (seen.has(k)) continue;
      seen.add(k);
      inclusive.set(k, (inclusive.get(k) ?? 0) + us);
    }
  }
  const pctOf = (us: number) => `${((100 * us) / totalUs).toFixed(1).padStart(5)}%`;
  const msOf = (us: number) => `${(us / 1000).toFixed(0).padStart(6)} ms`;
  const top = (m: Map<string, number>, filter: (k: string) => boolean = () => true) =>
    [...m]
      .filter(([k]) => filter(k))
      .sort((a, b) => b[1] - a[1])
      .slice(0, TOP)
      .map(([k, us]) => `${msOf(us)} ${pctOf(us)}  ${k}`)
      .join('\n');
  process.stdout.write(
    `== ${file}: ${(totalUs / 1e6).toFixed(2)} s selected of ${((p.endTime - p.startTime) / 1e6).toFixed(1)} s\n` +
      `-- busy ms per second: ${Array.from(busyPerSecond, (v) => Math.round(v ?? 0)).join(' ')}\n` +
      `-- self time by module\n${top(selfByModule)}\n` +
      `-- self time by function\n${top(selfByFn)}\n` +
      `-- inclusive time, tskubelet's own functions (src/)\n${top(inclusive, (k) => k.includes(' src/'))}\n\n`,
  );
}
