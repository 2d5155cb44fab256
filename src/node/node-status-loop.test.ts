import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { apiError } from '../api/testing.ts';
import type { NodeImageInfo } from './status-inputs.ts';
import { nodeAgentHarness as setup, readyOf } from './testing.ts';
import type { Node } from './types.ts';

const NODE = '/api/v1/nodes/node-a';

describe('node status updates', () => {
  it('patches only on change, or when the report frequency elapsed', async () => {
    const { cluster, clock, inputs, round } = setup();
    await round(); // registration + first report
    const patches = () => cluster.calls().filter((c) => c === `PATCH ${NODE}/status`).length;
    assert.equal(patches(), 1);

    clock.nowMs += 10_000;
    await round();
    assert.equal(patches(), 1, 'heartbeat-only change is not written (the lease is the heartbeat)');
    const get = cluster.requests.filter((r) => r.method === 'GET' && r.path === NODE).at(-1);
    assert.deepEqual(get?.query, { resourceVersion: '0' });

    inputs.ready = { ok: false, message: 'container runtime network not ready' };
    clock.nowMs += 10_000;
    await round();
    assert.equal(patches(), 2);
    const ready = readyOf(cluster.nodes.get('node-a'));
    assert.equal(ready?.status, 'False');
    assert.equal(ready?.message, 'container runtime network not ready');

    clock.nowMs += 5 * 60_000;
    await round();
    assert.equal(patches(), 3, 'report frequency elapsed');
  });

  it('moves Ready lastTransitionTime only on transitions and records NodeNotReady / NodeReady', async () => {
    const { cluster, clock, inputs, recorder, round } = setup();
    await round();
    const t0 = readyOf(cluster.nodes.get('node-a'))?.lastTransitionTime;

    inputs.ready = { ok: false, message: 'PLEG is not healthy' };
    clock.nowMs += 10_000;
    await round();
    const t1 = readyOf(cluster.nodes.get('node-a'))?.lastTransitionTime;
    assert.notEqual(t1, t0);

    clock.nowMs += 5 * 60_000; // forces a report
    await round();
    assert.equal(readyOf(cluster.nodes.get('node-a'))?.lastTransitionTime, t1);

    inputs.ready = { ok: true, message: '' };
    clock.nowMs += 10_000;
    await round();
    assert.equal(readyOf(cluster.nodes.get('node-a'))?.status, 'True');
    assert.deepEqual(
      recorder.events.map((e) => e.reason).filter((r) => r.startsWith('NodeReady') || r === 'NodeNotReady'),
      ['NodeNotReady', 'NodeReady'],
    );
  });

  it('retries a failed update, reading from etcd after the first attempt', async () => {
    let repeated = 0;
    const { cluster, clock, round } = setup({ onRepeatedHeartbeatFailure: () => repeated++ });
    await round();
    clock.nowMs += 5 * 60_000;
    cluster.failNext('PATCH', `${NODE}/status`, apiError(500, 'InternalError'));
    cluster.failNext('PATCH', `${NODE}/status`, apiError(500, 'InternalError'));
    cluster.clearRecorded();
    assert.equal(await round(), 'ok');
    const gets = cluster.requests.filter((r) => r.method === 'GET');
    assert.deepEqual(
      gets.map((g) => g.query),
      [{ resourceVersion: '0' }, undefined, undefined],
    );
    assert.equal(repeated, 1);
  });

  it('records NodeNotSchedulable when the node is cordoned', async () => {
    const { cluster, clock, recorder, round } = setup();
    await round();
    cluster.nodes.get('node-a')!.spec = { unschedulable: true };
    clock.nowMs += 10_000;
    await round();
    assert.equal(recorder.events.at(-1)?.reason, 'NodeNotSchedulable');
  });
});

describe('node images in the status', () => {
  const busybox: NodeImageInfo = { id: 'sha256:bb', repoTags: ['busybox:1.29'], repoDigests: [], size: 900 };
  const pause: NodeImageInfo = {
    id: 'sha256:pp',
    repoTags: ['pause:3.6'],
    repoDigests: ['pause@sha256:p'],
    size: 300,
  };

  it('registers the Node with its images, largest first, capped at nodeStatusMaxImages', async () => {
    const { cluster, round } = setup({
      nodeStatusMaxImages: 1,
      listImages: () => Promise.resolve([pause, busybox]),
    });
    assert.equal(await round(), 'ok');
    const body = cluster.requests.find((r) => r.method === 'POST')?.body as Node;
    assert.deepEqual(body.status?.images, [{ names: ['busybox:1.29'], sizeBytes: 900 }]);
  });

  it('lists images once per status update, however often the write is retried', async () => {
    let lists = 0;
    let images = [busybox];
    const { cluster, clock, round } = setup({
      listImages: () => {
        lists++;
        return Promise.resolve(images);
      },
    });
    await round();
    lists = 0;
    images = [busybox, pause];
    clock.nowMs += 10_000;
    cluster.failNext('PATCH', `${NODE}/status`, apiError(500, 'InternalError'));
    cluster.failNext('PATCH', `${NODE}/status`, apiError(500, 'InternalError'));
    assert.equal(await round(), 'ok');
    assert.equal(lists, 1);
    assert.deepEqual(cluster.nodes.get('node-a')?.status?.images, [
      { names: ['busybox:1.29'], sizeBytes: 900 },
      { names: ['pause@sha256:p', 'pause:3.6'], sizeBytes: 300 },
    ]);
  });

  it('patches when the image list changed, and keeps the last list when listing fails', async () => {
    let result: Promise<NodeImageInfo[]> = Promise.resolve([busybox]);
    const { cluster, clock, logger, round } = setup({ listImages: () => result });
    await round();
    const patches = () => cluster.calls().filter((c) => c === `PATCH ${NODE}/status`).length;
    const before = patches();
    result = Promise.resolve([busybox, pause]);
    clock.nowMs += 10_000;
    await round();
    assert.equal(patches(), before + 1, 'a new image is a status change');

    result = Promise.reject(new Error('CRI ListImages: unavailable'));
    result.catch(() => undefined);
    clock.nowMs += 10_000;
    await round();
    assert.equal(patches(), before + 1, 'nothing changed: the server keeps the last list');
    assert.equal(cluster.nodes.get('node-a')?.status?.images?.length, 2);
    const warning = logger.lines.find((l) => l.msg === 'failed to set some node status fields');
    assert.match(String(warning?.fields['reason']), /error getting image list: CRI ListImages: unavailable/);
  });

  it('leaves status.images alone without an image lister', async () => {
    const { cluster, round } = setup();
    await round();
    assert.equal(cluster.nodes.get('node-a')?.status?.images, undefined);
  });
});
