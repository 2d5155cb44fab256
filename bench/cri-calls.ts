/**
 * CRI calls per pod in a static batch: the whole kubelet core (newKubelet, real managers) on the
 * in-memory fake CRI (src/runtime/cri/testing.ts), N one-container pods sent at once, calls counted
 * by method until every pod reports Running, then over `--settle` more seconds (the relists that
 * follow). The fake answers at once, so this counts calls, not time; what a call costs is
 * bench/cri-codec.ts's subject.
 *
 *   node bench/cri-calls.ts [--n 30] [--settle 3]
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createMemoryRecorder } from '../src/api/events.ts';
import type { KubeletPod } from '../src/api/types.ts';
import { newKubelet } from '../src/kubelet/index.ts';
import { testKubeletConfig } from '../src/config/testing.ts';
import { FakeKmsg } from '../src/oom/testing.ts';
import type { PodSource } from '../src/podsource/index.ts';
import { FakeImageService, FakeRuntimeService } from '../src/runtime/cri/testing.ts';
import { sleep } from '../src/util/abort.ts';
import { nullLogger } from '../src/util/logger.ts';

const { values } = parseArgs({
  options: { n: { type: 'string', default: '30' }, settle: { type: 'string', default: '3' } },
});
const n = Number(values.n);
const settleMs = Number(values.settle) * 1000;

function pod(i: number): KubeletPod {
  return {
    metadata: {
      name: `p${i}`,
      namespace: 'bench',
      uid: `uid-${i}`,
      creationTimestamp: '2026-11-24T00:00:00Z',
      annotations: { 'kubernetes.io/config.source': 'file' },
    },
    spec: {
      containers: [{ name: 'app', image: 'busybox:1.29' }],
      terminationGracePeriodSeconds: 1,
    },
  };
}

function count(cri: FakeRuntimeService, from = 0): Map<string, number> {
  const m = new Map<string, number>();
  for (const c of cri.calls.slice(from)) m.set(c.method, (m.get(c.method) ?? 0) + 1);
  return m;
}

const dir = await mkdtemp(join(tmpdir(), 'tskubelet-cri-calls-'));
const cri = new FakeRuntimeService();
const images = new FakeImageService();
let deliver: ((pods: KubeletPod[]) => void) | undefined;
const source: PodSource = {
  name: 'file',
  start(send) {
    deliver = send;
  },
  stop: () => Promise.resolve(),
};
const k = await newKubelet(
  testKubeletConfig({ rootDir: dir, podLogsDir: join(dir, 'logs'), maxPods: 250, syncFrequencyMs: 60_000 }),
  {
    version: 'bench',
    nodeIP: '192.0.2.10',
    runtimeService: cri,
    imageService: images,
    sources: [source],
    recorder: createMemoryRecorder(),
    logger: nullLogger,
    openKmsg: new FakeKmsg().opener,
    node: () => ({ name: 'node-a', labels: {}, allocatable: { milliCPU: 2000, memory: 4 << 30, pods: 250 } }),
  },
);
void k.run();
try {
  deliver?.([]);
  // Idle: what the kubelet calls with no pods (relists, runtime health), per second.
  await sleep(2_000);
  const idleFrom = cri.calls.length;
  await sleep(2_000);
  const idle = count(cri, idleFrom);
  const from = cri.calls.length;
  const t0 = performance.now();
  deliver?.(Array.from({ length: n }, (_, i) => pod(i)));
  const running = () => k.pods().filter((p) => p.status?.phase === 'Running').length;
  while (running() < n) {
    if (performance.now() - t0 > 60_000) throw new Error(`only ${running()}/${n} pods Running after 60 s`);
    await sleep(10);
  }
  const toRunningMs = performance.now() - t0;
  const atRunning = count(cri, from);
  await sleep(settleMs);
  const total = count(cri, from);
  const elapsedS = (performance.now() - t0) / 1000;
  const methods = [...new Set([...total.keys(), ...idle.keys()])].sort();
  const lines = [
    `# CRI calls per pod: ${n} pods, all Running after ${Math.round(toRunningMs)} ms, then ${settleMs / 1000} s`,
    '',
    '| method | to Running, per pod | + settle, per pod | idle, per second |',
    '|---|---|---|---|',
  ];
  let sumRun = 0;
  let sumAll = 0;
  for (const m of methods) {
    const idlePerS = (idle.get(m) ?? 0) / 2;
    // What the idle kubelet would have called anyway in that time is not the pods' doing.
    const run = ((atRunning.get(m) ?? 0) - (idlePerS * toRunningMs) / 1000) / n;
    const all = ((total.get(m) ?? 0) - idlePerS * elapsedS) / n;
    sumRun += run;
    sumAll += all;
    lines.push(`| ${m} | ${run.toFixed(2)} | ${all.toFixed(2)} | ${idlePerS.toFixed(1)} |`);
  }
  lines.push(`| **total** | **${sumRun.toFixed(2)}** | **${sumAll.toFixed(2)}** | |`);
  process.stdout.write(lines.join('\n') + '\n');
} finally {
  await k.stop();
  await rm(dir, { recursive: true, force: true });
}
