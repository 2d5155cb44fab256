import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import type { KubeletPod } from '../api/types.ts';
import { NOTHING_HOLDS, type PodWhy } from '../why/index.ts';
import type { Kubelet } from './kubelet.ts';
import { fakeCriKubelet, sourcedPod, untilWithin } from './testing.ts';

/** A running kubelet with 1 CPU allocatable (the admission test asks for 2), its source started. */
async function setup(t: TestContext) {
  const s = await fakeCriKubelet(t, { milliCPU: 1000 });
  const k = await s.start();
  await until('source started', () => s.source.started);
  return { k, cri: s.cri, send: (pods: KubeletPod[]) => s.source.send(pods) };
}

function makePod(name: string, patch: (p: KubeletPod) => void = () => {}): KubeletPod {
  const pod = sourcedPod(name);
  patch(pod);
  return pod;
}

const until = untilWithin(15_000);

async function whyUntil(
  k: Kubelet,
  name: string,
  ok: (w: PodWhy) => boolean,
  timeoutMs = 15_000,
): Promise<PodWhy> {
  return until(
    `the why of ${name} to hold`,
    async () => {
      const why = await k.podWhy('ns', name, AbortSignal.timeout(5_000));
      return why && ok(why) ? why : undefined;
    },
    timeoutMs,
  );
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
    // Before the first RunPodSandbox answers, the pod is only ContainerCreating (seen under load).
    const failing = await whyUntil(s.k, 'web', (w) => w.findings.some((f) => f.reason === 'SandboxFailed'));
    const sandbox = failing.findings.find((f) => f.reason === 'SandboxFailed');
    assert.match(String(sandbox?.evidence.error), /cni plugin not initialized/);
    assert.equal(sandbox?.evidence.network, true);
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
