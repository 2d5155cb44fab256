/** The startup timeline as the kubelet records it, end to end on the fake CRI (the PodTimeline served at /debug/pods/…/timeline). */
import assert from 'node:assert/strict';
import { it, type TestContext } from 'node:test';
import type { KubeletPod } from '../api/types.ts';
import { sleep } from '../util/abort.ts';
import { createTimelineRecorder, type PodTimeline, type TimelineStep } from '../timeline/index.ts';
import { fakeCriKubelet, sourcedPod, untilWithin } from './testing.ts';

/** A running kubelet whose timeline's histogram observer the test reads; busybox:1.29 is cached. */
async function setup(t: TestContext, maxPods = 110) {
  const observed: [TimelineStep, number][] = [];
  const timeline = createTimelineRecorder({ observe: (step, s) => observed.push([step, s]) });
  const s = await fakeCriKubelet(t, { options: { maxPods }, deps: { timeline } });
  s.images.addImage('busybox:1.29', { size: 4242 });
  return { cri: s.cri, source: s.source, kubelet: await s.start(), observed };
}

const until = untilWithin(10_000);

const stepsOf = (tl: PodTimeline | undefined): string[] =>
  (tl?.attempts ?? []).flatMap((a) =>
    a.steps.map((s) => (s.container ? `${s.step}:${s.container}` : s.step)),
  );

function pod(): KubeletPod {
  return sourcedPod('web', {
    volumes: [{ name: 'scratch', emptyDir: {} }],
    initContainers: ['init'],
    containers: [
      {
        name: 'app',
        image: 'registry.local/app:1',
        lifecycle: { postStart: { exec: { command: ['true'] } }, preStop: { exec: { command: ['true'] } } },
        startupProbe: { exec: { command: ['true'] }, periodSeconds: 1 },
        volumeMounts: [{ name: 'scratch', mountPath: '/scratch' }],
      },
    ],
  });
}

it('records a pod from seen to ready and its termination, in order, and serves it by name after it is gone', async (t) => {
  const s = await setup(t);
  s.source.send([pod()]);
  const init = await until('init container', () => s.cri.latestContainer('init', 'uid-web'));
  await until('init running', () => init.status.state === 'CONTAINER_RUNNING');
  s.cri.exitContainer(init.status.id, 0);
  const tl = await until('ready step', () => {
    const v = s.kubelet.podTimeline('ns', 'web');
    return stepsOf(v).includes('ready') && v;
  });
  assert.equal(tl.uid, 'uid-web');
  assert.equal(tl.attempts.length, 1);
  const steps = stepsOf(tl);
  const expected = [
    'seen',
    'admitted',
    'volume-ready',
    'sandbox-requested',
    'sandbox-created',
    'image-pull-started:init',
    'image-pull-done:init',
    'container-created:init',
    'container-started:init',
    'image-pull-started:app',
    'image-pull-done:app',
    'container-created:app',
    'container-started:app',
    'post-start-done:app',
    'startup-probe-passed:app',
    'ready',
  ];
  const positions = expected.map((e) => steps.indexOf(e));
  assert.ok(
    positions.every((p, i) => p >= 0 && (i === 0 || p > (positions[i - 1] ?? -1))),
    `steps out of order or missing: ${steps.join(', ')}`,
  );
  assert.ok(steps.includes('network-ready'), steps.join(', '));
  const all = tl.attempts[0]?.steps ?? [];
  const offsets = all.map((x) => x.offsetMs);
  assert.deepEqual(
    offsets,
    [...offsets].sort((a, b) => a - b),
    'offsets are monotone',
  );
  assert.equal(all[0]?.offsetMs, 0);
  assert.equal(all[0]?.source, 'file');
  const cached = all.find((x) => x.step === 'image-pull-done' && x.container === 'init');
  assert.deepEqual([cached?.cached, cached?.bytes, cached?.image], [true, 4242, 'busybox:1.29']);
  const pulled = all.find((x) => x.step === 'image-pull-done' && x.container === 'app');
  assert.equal(pulled?.cached, false);
  assert.equal(typeof pulled?.bytes, 'number');
  assert.match(all.find((x) => x.step === 'network-ready')?.podIP ?? '', /^10\.88\./);
  assert.equal(all.find((x) => x.step === 'volume-ready')?.volume, 'scratch');
  assert.ok(
    s.observed.some(([step]) => step === 'sandbox-created'),
    'the histogram observer was told',
  );

  s.source.send([]);
  const gone = await until('termination steps', () => {
    const v = s.kubelet.podTimeline('ns', 'web');
    return stepsOf(v).includes('sandbox-removed') && v;
  });
  const end = stepsOf(gone);
  const tail = ['kill-requested', 'pre-stop-done:app', 'container-stopped:app', 'sandbox-removed'];
  const at = tail.map((e) => end.indexOf(e));
  assert.ok(
    at.every((p, i) => p > end.indexOf('ready') && (i === 0 || p > (at[i - 1] ?? -1))),
    `termination steps out of order or missing: ${end.join(', ')}`,
  );
});

it('records a rejection with its reason and forgets a rejected pod once its source drops it', async (t) => {
  const s = await setup(t, 0);
  const p = pod();
  s.source.send([p]);
  const tl = await until('rejected step', () => {
    const v = s.kubelet.podTimeline('ns', 'web');
    return stepsOf(v).includes('rejected') && v;
  });
  const rejected = tl.attempts[0]?.steps.find((x) => x.step === 'rejected');
  assert.match(rejected?.error ?? '', /\S+: \S+/);
  assert.deepEqual(stepsOf(tl), ['seen', 'rejected']);
  s.source.send([]);
  // Gone from the source: still served (recently forgotten), no longer recorded into.
  await sleep(100);
  assert.deepEqual(stepsOf(s.kubelet.podTimeline('ns', 'web')), ['seen', 'rejected']);
});
