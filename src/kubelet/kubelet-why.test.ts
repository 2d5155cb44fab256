import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import { createMemoryRecorder } from '../api/events.ts';
import type { KubeletPod } from '../api/types.ts';
import { FakeKmsg } from '../oom/testing.ts';
import type { PodSource } from '../podsource/index.ts';
import { FakeImageService, FakeRuntimeService } from '../runtime/cri/testing.ts';
import { sleep } from '../util/abort.ts';
import { nullLogger } from '../util/logger.ts';
import { NOTHING_HOLDS, type PodWhy } from '../why/index.ts';
import { createKubelet, type Kubelet } from './kubelet.ts';

/** A kubelet on the fake CRI with real managers and one file source the test drives. */
async function setup(t: TestContext) {
  const dir = await mkdtemp(join(tmpdir(), 'tskubelet-why-'));
  const cri = new FakeRuntimeService();
  let send: ((pods: KubeletPod[]) => void) | undefined;
  const source: PodSource = {
    name: 'file',
    start(s) {
      send = s;
    },
    stop: () => Promise.resolve(),
  };
  const k: Kubelet = createKubelet(
    {
      nodeName: 'node-a',
      nodeIP: '192.0.2.10',
      rootDir: dir,
      podLogsDir: join(dir, 'logs'),
      maxPods: 110,
      syncFrequencyMs: 60_000,
    },
    {
      runtimeService: cri,
      imageService: new FakeImageService(),
      sources: [source],
      recorder: createMemoryRecorder(),
      logger: nullLogger,
      openKmsg: new FakeKmsg().opener,
      node: () => ({
        name: 'node-a',
        labels: {},
        allocatable: { milliCPU: 1000, memory: 4 << 30, pods: 110 },
      }),
    },
  );
  void k.run();
  t.after(async () => {
    await k.stop();
    await rm(dir, { recursive: true, force: true });
  });
  await until('source started', () => send !== undefined);
  return { k, cri, send: (pods: KubeletPod[]) => send?.(pods) };
}

function makePod(name: string, patch: (p: KubeletPod) => void = () => {}): KubeletPod {
  const pod: KubeletPod = {
    metadata: {
      name,
      namespace: 'ns',
      uid: `uid-${name}`,
      annotations: { 'kubernetes.io/config.source': 'file' },
    },
    spec: { containers: [{ name: 'app', image: 'busybox:1.29' }], terminationGracePeriodSeconds: 1 },
  };
  patch(pod);
  return pod;
}

async function until<T>(what: string, get: () => T | undefined | false, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = get();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

async function whyUntil(
  k: Kubelet,
  name: string,
  ok: (w: PodWhy) => boolean,
  timeoutMs = 15_000,
): Promise<PodWhy> {
  const deadline = Date.now() + timeoutMs;
  let last: PodWhy | undefined;
  for (;;) {
    last = await k.podWhy('ns', name, AbortSignal.timeout(5_000));
    if (last && ok(last)) return last;
    if (Date.now() > deadline) throw new Error(`timed out; last why: ${JSON.stringify(last)}`);
    await sleep(50);
  }
}

describe('Kubelet.podWhy on a fake CRI (the gatherer wired to the real managers)', () => {
  it('answers undefined for a pod it does not have', async (t) => {
    const s = await setup(t);
    s.send([]);
    assert.equal(await s.k.podWhy('ns', 'nope', AbortSignal.timeout(1_000)), undefined);
  });

  it('reports a sandbox that fails with the runtime error, then nothing once the pod runs', async (t) => {
    const s = await setup(t);
    s.cri.injectError(
      'runPodSandbox',
      new Error('failed to setup network for sandbox "x": cni plugin not initialized'),
    );
    s.send([makePod('web')]);
    const failing = await whyUntil(s.k, 'web', (w) => w.findings.length > 0);
    assert.equal(failing.findings[0]?.reason, 'SandboxFailed');
    assert.match(String(failing.findings[0]?.evidence.error), /cni plugin not initialized/);
    assert.equal(failing.findings[0]?.evidence.network, true);
    s.cri.clearErrors('runPodSandbox');
    const fine = await whyUntil(s.k, 'web', (w) => w.ready);
    assert.deepEqual(fine.findings, []);
    assert.equal(fine.summary, NOTHING_HOLDS);
  });

  it('reports admission with the predicate and the numbers', async (t) => {
    const s = await setup(t);
    s.send([makePod('big', (p) => (p.spec.containers[0]!.resources = { requests: { cpu: '2' } }))]);
    const why = await whyUntil(s.k, 'big', (w) => w.findings.length > 0);
    assert.equal(why.findings[0]?.reason, 'AdmissionRejected');
    assert.equal(why.findings[0]?.evidence.requested, 2);
    assert.equal(why.findings[0]?.evidence.allocatableLeft, 1);
    assert.match(why.summary, /requests 2 CPU, 1 CPU allocatable left/);
  });

  it('reports crash-loop back-off with the exit code and the time to the next restart', async (t) => {
    const s = await setup(t);
    s.send([makePod('crash')]);
    const crashOnce = async (): Promise<void> => {
      const c = await until('app running', () => {
        const c = s.cri.latestContainer('app', 'uid-crash');
        return c?.status.state === 'CONTAINER_RUNNING' ? c : undefined;
      });
      s.cri.exitContainer(c.status.id, 1);
    };
    await crashOnce();
    await crashOnce();
    const why = await whyUntil(s.k, 'crash', (w) => w.findings[0]?.reason === 'CrashLoopBackOff');
    const f = why.findings[0];
    assert.equal(f?.container, 'app');
    assert.equal(f?.evidence.exitCode, 1);
    const next = f?.evidence.nextRetryInSeconds;
    assert.ok(typeof next === 'number' && next >= 0 && next <= 10, `next retry in ${String(next)} s`);
    assert.equal(f?.evidence.backOffSeconds, 10);
    assert.match(
      why.summary,
      /^Container app is in crash-loop back-off: it exited with code 1 and is restarted in \d+ s\.$/,
    );
  });
});
