import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KubeletPod, PodStatus } from '../api/types.ts';
import { backoffKey } from '../runtime/kuberuntime/runtime-manager.ts';
import type { RuntimeContainerStatus, RuntimePodStatus } from '../runtime/kuberuntime/runtime-pod.ts';
import { nullLogger } from '../util/logger.ts';
import { createWhyGatherer, tailLines, LOG_TAIL_BYTES, LOG_TAIL_LINES, type WhySources } from './gather.ts';
import { pod } from './testing.ts';

const NOW = Date.parse('2026-11-24T20:01:30.000Z');
/** The monotonic clock reads 5000 at NOW: monotonic m is wall NOW - (5000 - m). */
const MONO = 5_000;

const POD: KubeletPod = pod([{}], { terminationGracePeriodSeconds: 20 });

function container(over: Partial<RuntimeContainerStatus>): RuntimeContainerStatus {
  return {
    id: 'c-new',
    name: 'main',
    state: 'exited',
    createdAt: NOW - 10_000,
    startedAt: NOW - 9_000,
    finishedAt: NOW - 8_000,
    exitCode: 1,
    reason: 'Error',
    message: '',
    image: 'busybox:1.29',
    imageRef: 'sha256:x',
    hash: 'h1',
    restartCount: 2,
    podSandboxId: 's',
    attempt: 2,
    terminationMessagePath: '',
    terminationMessagePolicy: 'File',
    terminationGracePeriodSeconds: 20,
    ...over,
  };
}

function sources(over: Partial<WhySources> = {}): WhySources {
  const rs: RuntimePodStatus = {
    uid: 'uid-1',
    name: 'web',
    namespace: 'default',
    sandboxes: [],
    containers: [container({}), container({ id: 'c-old', finishedAt: NOW - 60_000 })],
    timestamp: MONO,
  };
  const status: PodStatus = { phase: 'Running', conditions: [{ type: 'Ready', status: 'False' }] };
  return {
    findPod: (ns, name) => (ns === 'default' && name === 'web' ? POD : undefined),
    status: () => status,
    rejected: () => false,
    synced: () => true,
    workerPhase: () => 'syncing',
    stoppedBy: () => undefined,
    syncError: () => ({ step: 'volumes', message: 'no such configmap', at: MONO - 3_000 }),
    killStarted: () => undefined,
    waitingReasons: () =>
      new Map([['main', { reason: 'CrashLoopBackOff', message: 'back-off 20s restarting' }]]),
    runtimeStatus: () => rs,
    crashLoopDelayMs: (key) => (key === backoffKey(POD, POD.spec.containers[0]!, 'h1') ? 20_000 : 0),
    imagePulls: () => [{ image: 'busybox:1.29', container: 'main', pullingSince: MONO - 1_500 }],
    preStopsRunning: () => [],
    probes: () => [],
    logPath: () => Promise.reject(new Error('no log scripted')),
    now: () => NOW,
    monotonic: () => MONO,
    logger: nullLogger,
    ...over,
  };
}

/** A CRI log file with `n` full stdout lines `line 1` … `line n`. */
async function criLog(dir: string, n: number, width = 0): Promise<string> {
  const path = join(dir, '0.log');
  const lines: string[] = [];
  for (let i = 1; i <= n; i++) {
    lines.push(`2026-11-24T20:01:0${i % 10}.000000000Z stdout F line ${i}${'x'.repeat(width)}\n`);
  }
  await writeFile(path, lines.join(''));
  return path;
}

describe('the why gatherer: the kubelet state of one pod as a snapshot', () => {
  it('answers undefined for a pod the kubelet does not have', async () => {
    const g = createWhyGatherer(sources());
    assert.equal(await g.podWhy('default', 'nope', new AbortController().signal), undefined);
  });

  it('puts monotonic stamps on the wall clock and the next crash-loop try after the last finish', async () => {
    const g = createWhyGatherer(sources());
    const s = await g.snapshot('default', 'web', new AbortController().signal);
    assert.ok(s);
    assert.equal(s.syncError?.at, NOW - 3_000);
    assert.equal(s.imagePulls[0]?.pullingSince, NOW - 1_500);
    // The newest run finished 8 s ago, the back-off is 20 s: the next try is 12 s from now.
    assert.deepEqual(s.crashLoop, { main: { delayMs: 20_000, nextRetryAt: NOW + 12_000 } });
    assert.deepEqual(s.waiting, { main: { reason: 'CrashLoopBackOff', message: 'back-off 20s restarting' } });
  });

  it('reads the last lines of the failed container from its CRI log file', async (t) => {
    const dir = await mkdtemp(join(tmpdir(), 'why-'));
    t.after(() => rm(dir, { recursive: true, force: true }));
    const path = await criLog(dir, 9);
    const asked: string[] = [];
    const g = createWhyGatherer(
      sources({
        logPath: (id) => {
          asked.push(id);
          return Promise.resolve(path);
        },
      }),
    );
    const s = await g.snapshot('default', 'web', new AbortController().signal);
    assert.deepEqual(asked, ['c-new'], 'only the newest instance is read');
    assert.deepEqual(s?.logTails.main, ['line 5', 'line 6', 'line 7', 'line 8', 'line 9']);
  });

  it('answers without the log lines when the log cannot be read', async () => {
    const g = createWhyGatherer(sources());
    const why = await g.podWhy('default', 'web', new AbortController().signal);
    assert.equal(why?.findings[0]?.reason, 'VolumeNotReady');
    assert.equal(
      why?.findings.find((f) => f.reason === 'CrashLoopBackOff')?.evidence.lastLogLines,
      undefined,
    );
  });

  it('gives a terminating pod its grace period and kill start, and the preStop hooks running', async () => {
    const g = createWhyGatherer(
      sources({
        workerPhase: () => 'terminating',
        killStarted: () => ({ at: MONO - 4_000, gracePeriodOverride: undefined }),
        preStopsRunning: () => [{ container: 'main', since: MONO - 3_000 }],
      }),
    );
    const s = await g.snapshot('default', 'web', new AbortController().signal);
    assert.deepEqual(s?.termination, {
      startedAt: NOW - 4_000,
      gracePeriodSeconds: 20,
      preStopRunning: [{ container: 'main', since: NOW - 3_000 }],
    });
  });

  it('takes the admission verdict from the status of a rejected pod', async () => {
    const g = createWhyGatherer(
      sources({
        rejected: () => true,
        status: () => ({ phase: 'Failed', reason: 'OutOfpods', message: 'm' }),
      }),
    );
    const s = await g.snapshot('default', 'web', new AbortController().signal);
    assert.deepEqual(s?.admission, { reason: 'OutOfpods', message: 'm' });
  });
});

describe('tailLines: a bounded tail of a CRI log', () => {
  it(`keeps at most ${LOG_TAIL_LINES} lines and ${LOG_TAIL_BYTES} bytes`, async (t) => {
    const dir = await mkdtemp(join(tmpdir(), 'why-'));
    t.after(() => rm(dir, { recursive: true, force: true }));
    const lines = await tailLines(await criLog(dir, 20, 2000), new AbortController().signal);
    assert.ok(lines.length <= LOG_TAIL_LINES);
    assert.ok(lines.join('\n').length <= LOG_TAIL_BYTES);
    assert.match(lines.at(-1) ?? '', /^line 20x+$/, 'the last line is kept whole');
    assert.match(lines[0] ?? '', /^…x+$/, 'the line before it is cut at its start');
  });
});
