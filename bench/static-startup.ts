/**
 * Static-pod startup latency: time from a manifest written into the static pod directory to its
 * container running (CRI startedAt), per pod, with tskubelet running as its own process (the CLI)
 * against the test bed's containerd. Images are present (pull time excluded).
 *
 *   node bench/static-startup.ts [--pods 20] [--mode serial|batch]
 *
 * serial: one manifest at a time, the next once the previous runs (pure per-pod latency);
 * batch: all manifests written at once.
 */
import { spawn } from 'node:child_process';
import { openSync, readFileSync } from 'node:fs';
import { mkdtemp, mkdir, rm, writeFile, rename } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { startContainerd, removeAllPods, BUSYBOX_IMAGE } from '../test/harness/index.ts';
import { createCriClient } from '../src/runtime/cri/index.ts';
import { LABEL_POD_NAME } from '../src/config/defaults.ts';
import { sleep } from '../src/util/abort.ts';

const { values } = parseArgs({
  options: { pods: { type: 'string', default: '20' }, mode: { type: 'string', default: 'serial' } },
});
const N = Number(values.pods);
const mode = values.mode === 'batch' ? 'batch' : 'serial';
const NODE = 'bench';

function pct(sorted: number[], p: number): number {
  const i = Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1);
  return sorted[Math.max(0, i)] ?? NaN;
}

const bed = await startContainerd();
await removeAllPods(bed);
const cri = createCriClient({ endpoint: bed.endpoint });
const dir = await mkdtemp(join(tmpdir(), 'tskubelet-bench-'));
const manifests = join(dir, 'manifests');
await mkdir(manifests);
const logFile = join(tmpdir(), 'tskubelet-bench-startup.log');
const logFd = openSync(logFile, 'w');
const kubelet = spawn(
  join(import.meta.dirname, '..', 'bin', 'tskubelet'),
  [
    'run',
    '--pod-manifest-path',
    manifests,
    '--container-runtime-endpoint',
    bed.endpoint,
    '--root-dir',
    join(dir, 'root'),
    '--hostname-override',
    NODE,
    '--healthz-port',
    '0',
  ],
  { stdio: ['ignore', 'ignore', logFd] },
);
await sleep(1500); // let it start and read the (empty) directory

/** Peak resident memory of the kubelet process, sampled from /proc every 100 ms. */
let peakRssKiB = 0;
const idleRssKiB = rssKiB();
function rssKiB(): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${kubelet.pid}/status`, 'utf8'));
    return m ? Number(m[1]) : 0;
  } catch {
    return 0; // the process is gone; the peak so far stands
  }
}
const sampler = setInterval(() => {
  peakRssKiB = Math.max(peakRssKiB, rssKiB());
}, 100);

async function startedAt(podName: string): Promise<number | undefined> {
  const cs = await cri.runtime.listContainers({ labelSelector: { [LABEL_POD_NAME]: `${podName}-${NODE}` } });
  const c = cs.find((x) => x.state === 'CONTAINER_RUNNING');
  if (!c) return undefined;
  const st = await cri.runtime.containerStatus(c.id);
  return st.startedAt / 1e6;
}

async function write(i: number): Promise<{ name: string; written: number }> {
  const name = `bench-${i}`;
  const text = JSON.stringify({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name },
    spec: {
      terminationGracePeriodSeconds: 1,
      containers: [{ name: 'main', image: BUSYBOX_IMAGE, command: ['sleep', '3600'] }],
    },
  });
  const tmp = join(manifests, `.${name}.json`);
  await writeFile(tmp, text);
  const written = Date.now();
  await rename(tmp, join(manifests, `${name}.json`));
  return { name, written };
}

async function waitRunning(name: string): Promise<number> {
  for (;;) {
    const t = await startedAt(name);
    if (t !== undefined) return t;
    await sleep(20);
  }
}

const latencies: number[] = [];
const t0 = Date.now();
if (mode === 'serial') {
  for (let i = 0; i < N; i++) {
    const w = await write(i);
    latencies.push((await waitRunning(w.name)) - w.written);
  }
} else {
  const ws = await Promise.all(Array.from({ length: N }, (_, i) => write(i)));
  const ends = await Promise.all(ws.map((w) => waitRunning(w.name)));
  ends.forEach((e, i) => latencies.push(e - (ws[i]?.written ?? 0)));
}
const total = Date.now() - t0;
await sleep(2000); // a few relists and syncs with every pod running
clearInterval(sampler);
const steadyRssKiB = rssKiB();
kubelet.kill('SIGTERM');
await new Promise((r) => kubelet.once('exit', r));
await removeAllPods(bed);
cri.close();
await bed.stop();
await rm(dir, { recursive: true, force: true });

const s = [...latencies].sort((a, b) => a - b);
const f = (x: number) => `${Math.round(x)} ms`;
const mib = (kib: number) => `${(kib / 1024).toFixed(1)} MiB`;
process.stdout.write(
  `static-pod startup, ${mode}, N=${N}: p50 ${f(pct(s, 50))}, p90 ${f(pct(s, 90))}, p99 ${f(pct(s, 99))}, max ${f(s[s.length - 1] ?? NaN)}, min ${f(s[0] ?? NaN)}; wall ${f(total)}\n` +
    `kubelet RSS: idle ${mib(idleRssKiB)}, peak ${mib(peakRssKiB)}, with ${N} pods ${mib(steadyRssKiB)} (log: ${logFile})\n`,
);
