import assert from 'node:assert/strict';
import { it } from 'node:test';
import { flush } from '../../util/testing.ts';
import { fakeTimeline } from '../../timeline/testing.ts';
import { createRuntimeManager } from './runtime-manager.ts';
import { fakeRuntimeDeps, makePod } from '../testing.ts';

it('records a failed sandbox, then sandbox, network and container steps, then the kill and removal steps', async (t) => {
  const f = await fakeRuntimeDeps(t);
  const timeline = fakeTimeline();
  const manager = createRuntimeManager({ ...f.deps, timeline });
  const pod = makePod('web', ['app']);
  const uid = pod.metadata.uid;
  const status = () => manager.getPodStatus(uid, pod.metadata.name, pod.metadata.namespace);
  f.cri.injectError('runPodSandbox', 'UNAVAILABLE', { once: true, message: 'CNI not ready' });

  await manager.syncPod(pod, await status());
  assert.deepEqual(timeline.stepsOf(uid), ['sandbox-requested', 'failed']);
  assert.equal(timeline.steps[1]?.fields?.failedStep, 'sandbox-created');
  assert.match(timeline.steps[1]?.fields?.error ?? '', /CNI not ready/);

  await manager.syncPod(pod, await status());
  await flush(); // the sandbox IP is read off the start path
  const started = timeline.stepsOf(uid).slice(2);
  // The image steps are the image manager's (its own timeline dependency, not given here).
  assert.deepEqual(
    started.filter((s) => s !== 'network-ready'),
    ['sandbox-requested', 'sandbox-created', 'container-created', 'container-started'],
  );
  const net = timeline.steps.find((s) => s.step === 'network-ready');
  assert.match(net?.fields?.podIP ?? '', /^10\.88\.0\.\d+$/);

  const st = await status();
  await manager.killPod(pod, st);
  await manager.removePod(await status());
  assert.deepEqual(timeline.stepsOf(uid).slice(-2), ['container-stopped', 'sandbox-removed']);
  assert.deepEqual(timeline.steps.at(-2)?.fields, { container: 'app' });
});
