/**
 * CPU per CRI call and memory of the kubelet's CRI client stack (h2: unary gRPC on node:http2,
 * src/runtime/cri/h2-invoker.ts) against the one it replaced (grpc-js: @grpc/grpc-js,
 * bench/lib/cri-grpc-js-invoker.ts), both with @grpc/proto-loader's protobufjs codec of api.proto,
 * behind the CRI services (src/runtime/cri/services.ts),
 * so a call includes everything the kubelet pays: request conversion, encoding, HTTP/2, decoding,
 * and conversion to types.ts. Another candidate is measured by adding it to STACKS (an invoker
 * factory); the connect-es stack measured on 2026-11-24 was not adopted and is gone
 * (bench/results/2026-11-24-cri-codec*.md).
 *
 *   node bench/cri-codec.ts [--rounds 3] [--pods 110] [--from build|src] [--scale 1] [--out FILE]
 *   node bench/cri-codec.ts --endpoint unix:///run/containerd/containerd.sock   (reads only)
 *
 * Each measurement runs in a fresh child process (stacks alternate, so drift hits both); the CRI
 * runtime is bench/lib/cri-canned-server.ts in another process answering with pre-encoded
 * responses, or a real runtime with --endpoint (then only the read calls run, on what exists).
 * CPU is process.cpuUsage() (user + system) over N sequential calls after a warm-up; memory is
 * RSS and V8 heap after a full GC, before and after importing the stack, after one call, and
 * after the workload. The stacks are compiled to JavaScript first, as bin/tskubelet runs the
 * kubelet (`--from src` runs the .ts sources instead, with Node's type stripping).
 */
import { spawn, execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { summarize } from './lib/stats.ts';
import { containerConfig, sandboxConfig } from './lib/cri-fixtures.ts';

type Stack = 'grpc-js' | 'h2';
const STACKS: Stack[] = ['grpc-js', 'h2'];
/** Each stack's module and invoker factory. */
const STACK_MODULES: Record<Stack, [file: string, factory: string]> = {
  'grpc-js': ['bench/lib/cri-grpc-js-invoker', 'createGrpcJsInvoker'],
  h2: ['src/runtime/cri/h2-invoker', 'createH2Invoker'],
};
const ROOT = path.resolve(import.meta.dirname, '..');
const NODE_FLAGS = ['--expose-gc', '--max-semi-space-size=2'];
const BUILD_DIR = '.tmp/cri-codec-build';

interface CriLike {
  runtime: Record<string, (...args: unknown[]) => Promise<unknown>>;
  close(): void;
}

interface StackModules {
  create(endpoint: string): CriLike;
}

/** Where the modules are loaded from: the .ts sources, or their compiled JS (see compile()). */
function moduleFile(from: string, p: string): string {
  return from === 'src' ? path.join(ROOT, `${p}.ts`) : path.join(ROOT, BUILD_DIR, `${p}.js`);
}

/** The modules every stack shares (loaded before the memory baseline). */
async function loadCommon(from: string) {
  const services = (await import(moduleFile(from, 'src/runtime/cri/services'))) as {
    createRuntimeService(inv: unknown, timeoutMs: number): CriLike['runtime'];
  };
  const logger = (await import(moduleFile(from, 'src/util/logger'))) as { nullLogger: unknown };
  return { from, services, logger };
}

async function loadStack(
  stack: Stack,
  common: Awaited<ReturnType<typeof loadCommon>>,
): Promise<StackModules> {
  const { from, services, logger } = common;
  const [file, name] = STACK_MODULES[stack];
  const mod = (await import(moduleFile(from, file))) as Record<
    string,
    (endpoint: string, logger: unknown) => { close(): void }
  >;
  const factory = mod[name];
  if (!factory) throw new Error(`no invoker factory for ${stack}`);
  return {
    create(endpoint) {
      const inv = factory(endpoint, logger.nullLogger);
      return { runtime: services.createRuntimeService(inv, 60_000), close: () => inv.close() };
    },
  };
}

/**
 * Bundles the stacks as scripts/build.sh bundles the kubelet (esbuild, ESM, shared code in chunks),
 * into BUILD_DIR with the sources' paths, so what is measured is the JS bin/tskubelet would run,
 * without Node's type stripping in the memory figures.
 */
function compile(): void {
  const dir = path.join(ROOT, BUILD_DIR);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const entries = [
    'src/runtime/cri/services.ts',
    ...STACKS.map((st) => `${STACK_MODULES[st][0]}.ts`),
    'src/util/logger.ts',
  ];
  execFileSync(
    path.join(ROOT, 'node_modules/.bin/esbuild'),
    [
      ...entries,
      '--bundle',
      '--platform=node',
      '--format=esm',
      '--target=node24',
      '--splitting',
      `--outdir=${dir}`,
      '--outbase=.',
      '--log-level=warning',
      "--banner:js=import { createRequire as __r } from 'node:module'; const require = __r(import.meta.url);",
    ],
    { cwd: ROOT, stdio: 'inherit' },
  );
  // h2-invoker loads api.proto from beside itself: its own file, or the shared chunk at the root
  // when both stacks import it.
  for (const to of ['src/runtime/cri/api.proto', 'api.proto']) {
    copyFileSync(path.join(ROOT, 'src/runtime/cri/api.proto'), path.join(dir, to));
  }
  writeFileSync(path.join(dir, 'package.json'), '{"type":"module"}\n');
}

// ---- the calls measured

interface Workload {
  name: string;
  n: number;
  run: (cri: CriLike) => Promise<unknown>;
}

function cannedWorkload(scale: number): Workload[] {
  const sb = sandboxConfig(1);
  const cc = containerConfig(1);
  const n = (k: number) => Math.max(20, Math.round(k * scale));
  const id = 'f'.repeat(64);
  return [
    { name: 'Version', n: n(2000), run: (c) => c.runtime['version']!() },
    { name: 'ListPodSandbox', n: n(300), run: (c) => c.runtime['listPodSandbox']!() },
    { name: 'ListContainers', n: n(200), run: (c) => c.runtime['listContainers']!() },
    { name: 'PodSandboxStatus', n: n(2000), run: (c) => c.runtime['podSandboxStatus']!(id) },
    { name: 'ContainerStatus', n: n(2000), run: (c) => c.runtime['containerStatus']!(id) },
    { name: 'RunPodSandbox', n: n(1000), run: (c) => c.runtime['runPodSandbox']!(sb, 'runc') },
    { name: 'CreateContainer', n: n(1000), run: (c) => c.runtime['createContainer']!(id, cc, sb) },
    { name: 'StartContainer', n: n(2000), run: (c) => c.runtime['startContainer']!(id) },
  ];
}

/** Read-only calls on what a real runtime holds (ids taken from its lists). */
async function realWorkload(cri: CriLike, scale: number): Promise<Workload[]> {
  const sandboxes = (await cri.runtime['listPodSandbox']!()) as { id: string }[];
  const containers = (await cri.runtime['listContainers']!()) as { id: string }[];
  const sb = sandboxes[0]?.id;
  const ct = containers[0]?.id;
  const n = (k: number) => Math.max(20, Math.round(k * scale));
  const w: Workload[] = [
    { name: `Version`, n: n(1000), run: (c) => c.runtime['version']!() },
    { name: `ListPodSandbox (${sandboxes.length})`, n: n(200), run: (c) => c.runtime['listPodSandbox']!() },
    { name: `ListContainers (${containers.length})`, n: n(200), run: (c) => c.runtime['listContainers']!() },
  ];
  if (sb) w.push({ name: 'PodSandboxStatus', n: n(1000), run: (c) => c.runtime['podSandboxStatus']!(sb) });
  if (ct) w.push({ name: 'ContainerStatus', n: n(1000), run: (c) => c.runtime['containerStatus']!(ct) });
  return w;
}

interface CpuResult {
  name: string;
  n: number;
  cpuUsPerCall: number;
  wallMs: number[];
}

async function measureCpu(cri: CriLike, w: Workload): Promise<CpuResult> {
  const warm = Math.min(200, Math.ceil(w.n / 5));
  for (let i = 0; i < warm; i++) await w.run(cri);
  const wallMs: number[] = [];
  const c0 = process.cpuUsage();
  for (let i = 0; i < w.n; i++) {
    const t = performance.now();
    await w.run(cri);
    wallMs.push(performance.now() - t);
  }
  const c = process.cpuUsage(c0);
  return { name: w.name, n: w.n, cpuUsPerCall: (c.user + c.system) / w.n, wallMs };
}

interface Mem {
  rss: number;
  heap: number;
}

function memNow(): Mem {
  const g = (globalThis as { gc?: () => void }).gc;
  if (g) for (let i = 0; i < 3; i++) g();
  const m = process.memoryUsage();
  return { rss: m.rss, heap: m.heapUsed };
}

async function child(
  kind: string,
  stack: Stack,
  endpoint: string,
  from: string,
  scale: number,
  real: boolean,
) {
  const common = await loadCommon(from);
  if (kind === 'mem') {
    const base = memNow();
    const s = await loadStack(stack, common);
    const imported = memNow();
    const cri = s.create(endpoint);
    await cri.runtime['version']!();
    const firstCall = memNow();
    const work = real ? await realWorkload(cri, scale) : cannedWorkload(scale);
    for (const w of work) for (let i = 0; i < Math.min(w.n, 200); i++) await w.run(cri);
    const worked = memNow();
    cri.close();
    return { base, imported, firstCall, worked };
  }
  const s = await loadStack(stack, common);
  const cri = s.create(endpoint);
  const work = real ? await realWorkload(cri, scale) : cannedWorkload(scale);
  const out: CpuResult[] = [];
  for (const w of work) out.push(await measureCpu(cri, w));
  cri.close();
  return out;
}

function runChild(args: string[]): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [...NODE_FLAGS, import.meta.filename, '--child', ...args], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    p.stdout.on('data', (d: Buffer) => (out += d.toString()));
    p.on('error', reject);
    p.on('exit', (code) =>
      code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`child ${args.join(' ')} exited ${code}`)),
    );
  });
}

async function startServer(socket: string, pods: number): Promise<() => void> {
  const p = spawn(
    process.execPath,
    ['--max-semi-space-size=2', path.join(ROOT, 'bench/lib/cri-canned-server.ts'), socket, String(pods)],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  await new Promise<void>((resolve, reject) => {
    p.stdout.on('data', (d: Buffer) => d.toString().includes('ready') && resolve());
    p.on('exit', (code) => reject(new Error(`canned server exited ${code}`)));
  });
  return () => p.kill('SIGTERM');
}

// ---- report

const us = (x: number) => x.toFixed(0);
const ms = (x: number) => (x < 1 ? x.toFixed(3) : x.toFixed(2));
const mib = (b: number) => (b / 1048576).toFixed(1);
const median = (xs: number[]) => summarize(xs).p50;

function report(
  cpu: Record<Stack, CpuResult[][]>,
  mem: Record<Stack, { base: Mem; imported: Mem; firstCall: Mem; worked: Mem }[]>,
): string {
  const lines: string[] = [];
  lines.push(
    '### CPU per call (µs, user+system, client process; median of rounds [min–max]) and wall latency (ms, all rounds pooled)',
    '',
  );
  const others: Stack[] = STACKS.filter((s) => s !== 'grpc-js');
  const row = (cells: string[]) => `| ${cells.join(' | ')} |`;
  lines.push(
    row([
      'call',
      'n/round',
      ...STACKS.map((s) => `${s} CPU`),
      ...others.map((s) => `${s}/grpc-js`),
      ...STACKS.map((s) => `${s} p50 / p99`),
    ]),
  );
  lines.push(
    row(['---', '---', ...STACKS.map(() => '---'), ...others.map(() => '---'), ...STACKS.map(() => '---')]),
  );
  const names = (cpu['grpc-js'][0] ?? []).map((r) => r.name);
  for (const name of names) {
    const cell = (s: Stack) => {
      const rs = cpu[s].map((round) => round.find((r) => r.name === name)!);
      const c = rs.map((r) => r.cpuUsPerCall);
      const wall = summarize(rs.flatMap((r) => r.wallMs));
      return {
        med: median(c),
        text: `${us(median(c))} [${us(Math.min(...c))}–${us(Math.max(...c))}]`,
        wall: `${ms(wall.p50)} / ${ms(wall.p99)}`,
        n: rs[0]!.n,
      };
    };
    const cells = Object.fromEntries(STACKS.map((s) => [s, cell(s)])) as Record<
      Stack,
      ReturnType<typeof cell>
    >;
    const base = cells['grpc-js'];
    lines.push(
      row([
        name,
        String(base.n),
        ...STACKS.map((s) => cells[s].text),
        ...others.map((s) => (cells[s].med / base.med).toFixed(2)),
        ...STACKS.map((s) => cells[s].wall),
      ]),
    );
  }
  lines.push('', '### Memory (MiB after a full GC; median of rounds): added over the common modules by', '');
  lines.push(
    '| stack | import: RSS | import: heap | + first call: RSS | + first call: heap | + workload: RSS | + workload: heap |',
  );
  lines.push('|---|---|---|---|---|---|---|');
  for (const s of STACKS) {
    const d = (k: 'imported' | 'firstCall' | 'worked', f: keyof Mem) =>
      mib(median(mem[s].map((m) => m[k][f] - m.base[f])));
    lines.push(
      `| ${s} | ${d('imported', 'rss')} | ${d('imported', 'heap')} | ${d('firstCall', 'rss')} | ${d('firstCall', 'heap')} | ${d('worked', 'rss')} | ${d('worked', 'heap')} |`,
    );
  }
  return lines.join('\n') + '\n';
}

async function main() {
  const { values } = parseArgs({
    options: {
      child: { type: 'boolean' },
      rounds: { type: 'string', default: '3' },
      pods: { type: 'string', default: '110' },
      scale: { type: 'string', default: '1' },
      from: { type: 'string' },
      endpoint: { type: 'string' },
      out: { type: 'string' },
    },
    allowPositionals: true,
    strict: false,
  });
  if (values.child) {
    const [kind, stack, endpoint, from, scale, real] = process.argv.slice(
      process.argv.indexOf('--child') + 1,
    );
    const res = await child(kind!, stack as Stack, endpoint!, from!, Number(scale), real === 'real');
    process.stdout.write(JSON.stringify(res));
    return;
  }
  const from = (values.from as string | undefined) ?? 'build';
  if (from !== 'src') compile();
  const rounds = Number(values.rounds);
  const scale = String(values.scale);
  const dir = mkdtempSync(path.join(tmpdir(), 'cri-codec-'));
  const real = typeof values.endpoint === 'string';
  const endpoint = real ? (values.endpoint as string) : `unix://${path.join(dir, 'cri.sock')}`;
  const stop = real ? () => {} : await startServer(endpoint.slice('unix://'.length), Number(values.pods));
  const cpu: Record<Stack, CpuResult[][]> = { 'grpc-js': [], h2: [] };
  const mem: Record<Stack, { base: Mem; imported: Mem; firstCall: Mem; worked: Mem }[]> = {
    'grpc-js': [],
    h2: [],
  };
  try {
    for (let r = 0; r < rounds; r++) {
      const order = r % 2 === 0 ? STACKS : [...STACKS].reverse();
      for (const s of order) {
        process.stderr.write(`round ${r + 1}/${rounds}: ${s}\n`);
        cpu[s].push(
          (await runChild(['cpu', s, endpoint, from, scale, real ? 'real' : 'canned'])) as CpuResult[],
        );
        mem[s].push(
          (await runChild([
            'mem',
            s,
            endpoint,
            from,
            scale,
            real ? 'real' : 'canned',
          ])) as (typeof mem)[Stack][number],
        );
      }
    }
  } finally {
    stop();
    rmSync(dir, { recursive: true, force: true });
  }
  const head = [
    `# CRI client stacks — ${new Date().toISOString()}`,
    '',
    `runtime: ${real ? `real (${endpoint})` : `canned server, ${values.pods as string} pods`}; modules from ${from}/; ${rounds} rounds; node ${process.version} ${NODE_FLAGS.join(' ')}; ${execFileSync('nproc').toString().trim()} cores`,
    '',
  ].join('\n');
  const text = head + report(cpu, mem);
  process.stdout.write(text);
  if (typeof values.out === 'string') writeFileSync(values.out, text);
}

await main();
