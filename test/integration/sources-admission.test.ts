import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { IMAGE, podManifest, writeManifest } from '../kit/bed.ts';
import { eventually } from '../kit/poll.ts';
import { findPod, useKubelet, waitForPhase } from './support.ts';
import type { Pod } from '../../src/api/types.ts';

/** A manifest server whose PodList the test changes at will. */
let served: Pod[] = [];
let requests = 0;
const server: Server = createServer((_req, res) => {
  requests++;
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ apiVersion: 'v1', kind: 'PodList', items: served }));
});
const listening = new Promise<number>((resolve) =>
  server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)),
);
const port = await listening;

describe('HTTP pod source, admission and host network on real containerd', () => {
  before(() => {
    served = [
      podManifest('from-url', { containers: [{ name: 'main', image: IMAGE, command: ['sleep', '3600'] }] }),
    ];
  });
  const t = useKubelet({ maxPods: 3, manifestURL: `http://127.0.0.1:${port}/pods` });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('runs pods served at --manifest-url and stops them when the URL drops them', async () => {
    const view = await waitForPhase(t.k.kubelet, 'from-url', 'Running');
    assert.equal(view.pod.metadata.annotations?.['kubernetes.io/config.source'], 'http');
    assert.ok(requests >= 1);
    served = [];
    await eventually('pod gone', () => (findPod(t.k.kubelet, 'from-url') ? undefined : true));
  });

  it('runs a hostNetwork pod in the node network namespace, reporting the host IP as pod IP', async () => {
    await writeManifest(
      t.env,
      'hostnet.yaml',
      podManifest('hostnet', {
        hostNetwork: true,
        containers: [{ name: 'main', image: IMAGE, command: ['sleep', '3600'] }],
      }),
    );
    const view = await waitForPhase(t.k.kubelet, 'hostnet', 'Running');
    assert.equal(view.status?.podIP, '127.0.0.1');
    assert.equal(view.status?.hostIP, '127.0.0.1');
    const uid = view.pod.metadata.uid ?? '';
    // Several syncs later the sandbox is still the first one: host network is recognised, not
    // mistaken for a sandbox that lost its IP.
    await new Promise((r) => setTimeout(r, 2_500));
    const sandboxes = await t.env.cri.runtime.listPodSandbox({
      labelSelector: { 'io.kubernetes.pod.uid': uid },
    });
    assert.equal(sandboxes.length, 1);
    assert.equal(sandboxes[0]?.metadata.attempt, 0);
  });

  it('rejects a pod beyond maxPods as Failed with OutOfpods and never starts it', async () => {
    // Active now: hostnet (1). Add two more to reach maxPods=3, then one too many.
    for (const name of ['fill-a', 'fill-b']) {
      await writeManifest(
        t.env,
        `${name}.yaml`,
        podManifest(name, { containers: [{ name: 'main', image: IMAGE, command: ['sleep', '3600'] }] }),
      );
      await waitForPhase(t.k.kubelet, name, 'Running');
    }
    await writeManifest(
      t.env,
      'overflow.yaml',
      podManifest('overflow', { containers: [{ name: 'main', image: IMAGE, command: ['sleep', '3600'] }] }),
    );
    const view = await waitForPhase(t.k.kubelet, 'overflow', 'Failed');
    assert.equal(view.status?.reason, 'OutOfpods');
    assert.match(view.status?.message ?? '', /requested: 1, used: 3, capacity: 3/);
    assert.ok(t.k.events.some((e) => e.reason === 'OutOfpods' && e.pod === 'default/overflow-itest'));
    const sandboxes = await t.env.cri.runtime.listPodSandbox({
      labelSelector: { 'io.kubernetes.pod.uid': view.pod.metadata.uid ?? '' },
    });
    assert.equal(sandboxes.length, 0);
  });
});
