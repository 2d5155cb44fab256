import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createNodeAgent, type NodeAgentDeps } from './node-agent.ts';
import { apiError } from '../api/testing.ts';
import { flush, recordingLogger } from '../util/testing.ts';
import { FakeClock, FakeCluster, fakeInputs, memoryRecorder, sampleMachine } from './testing.ts';
import type { NodeImageInfo } from './node-status.ts';
import type { Node } from './types.ts';

const NODE = '/api/v1/nodes/node-a';
const LEASES = '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases';

function setup(over: Partial<NodeAgentDeps> = {}) {
  const cluster = new FakeCluster();
  const clock = new FakeClock();
  const inputs = fakeInputs();
  const recorder = memoryRecorder();
  const logger = recordingLogger();
  const agent = createNodeAgent({
    api: cluster.client(),
    leaseApi: cluster.client(),
    logger,
    recorder,
    nodeName: 'node-a',
    nodeIP: '10.0.0.5',
    maxPods: 110,
    rootDir: '/var/lib/kubelet',
    kubeletVersion: 'v1.20.2',
    kubeletPort: 10250,
    labels: { 'example.com/pool': 'blue' },
    taints: [{ key: 'dedicated', value: 'ci', effect: 'NoSchedule' }],
    inputs,
    now: clock.now,
    sleep: clock.sleep,
    random: () => 0,
    machineInfo: () => Promise.resolve(sampleMachine()),
    ...over,
  });
  const signal = new AbortController().signal;
  /** Runs one status round, advancing the fake clock through registration back-off. */
  async function round(): Promise<string> {
    const r = agent.syncNodeStatus(signal);
    for (let i = 0; i < 20; i++) await clock.advance(100);
    return r;
  }
  return { cluster, clock, inputs, recorder, logger, agent, signal, round };
}

function readyOf(n: Node | undefined) {
  return n?.status?.conditions?.find((c) => c.type === 'Ready');
}

describe('node registration', () => {
  it('creates the Node with labels, taints and status, then records the status events', async () => {
    const { cluster, agent, recorder, round } = setup();
    const registered = agent.registered();
    assert.equal(await round(), 'ok');
    await registered;
    const post = cluster.requests.find((r) => r.method === 'POST');
    assert.equal(post?.path, '/api/v1/nodes');
    const body = post?.body as Node;
    assert.equal(body.metadata.name, 'node-a');
    assert.equal(body.metadata.labels?.['example.com/pool'], 'blue');
    assert.equal(body.metadata.labels?.['kubernetes.io/hostname'], 'node-a');
    assert.deepEqual(body.spec?.taints, [{ key: 'dedicated', value: 'ci', effect: 'NoSchedule' }]);
    assert.equal(readyOf(body)?.status, 'True');
    assert.equal(agent.node()?.metadata.uid, 'uid-1');
    assert.deepEqual(
      recorder.events.map((e) => e.reason),
      ['NodeHasSufficientMemory', 'NodeHasNoDiskPressure', 'NodeHasSufficientPID'],
    );
  });

  it('adopts an existing Node of the same name, reconciling its default labels', async () => {
    const { cluster, agent, round } = setup();
    cluster.nodes.set('node-a', {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: {
        name: 'node-a',
        uid: 'old-uid',
        resourceVersion: '5',
        labels: { 'kubernetes.io/hostname': 'x' },
      },
      spec: { podCIDR: '10.244.0.0/24' },
      status: {},
    });
    assert.equal(await round(), 'ok');
    assert.deepEqual(cluster.calls().slice(0, 3), [
      'POST /api/v1/nodes',
      `GET ${NODE}`,
      `PATCH ${NODE}/status`,
    ]);
    const stored = cluster.nodes.get('node-a');
    assert.equal(stored?.metadata.uid, 'old-uid');
    assert.equal(stored?.metadata.labels?.['kubernetes.io/hostname'], 'node-a');
    assert.equal(stored?.metadata.labels?.['kubernetes.io/os'], 'linux');
    assert.equal(
      stored?.metadata.annotations?.['volumes.kubernetes.io/controller-managed-attach-detach'],
      'true',
    );
    assert.deepEqual(stored?.spec, { podCIDR: '10.244.0.0/24' });
    assert.equal(agent.node()?.metadata.uid, 'old-uid');
    assert.equal(readyOf(stored)?.status, 'True');
  });

  it('retries registration with back-off (100 ms doubling) and logs each failure', async () => {
    const { cluster, clock, logger, round } = setup();
    cluster.failNext('POST', '/api/v1/nodes', apiError(503, 'ServiceUnavailable', 'etcd is down'));
    cluster.failNext('POST', '/api/v1/nodes', apiError(403, 'Forbidden', 'nodes is forbidden'));
    assert.equal(await round(), 'ok');
    assert.deepEqual(clock.sleeps.slice(0, 3), [100, 200, 400]);
    const failures = logger.lines.filter((l) => l.msg === 'unable to register node with the API server');
    assert.equal(failures.length, 2);
    assert.match(String(failures[1]?.fields['err']), /403 Forbidden/);
    assert.ok(cluster.nodes.has('node-a'));
  });

  it('registers again when the Node was deleted', async () => {
    const { cluster, agent, round } = setup();
    await round();
    cluster.nodes.clear();
    cluster.clearRecorded();
    assert.equal(await round(), 'gone');
    assert.equal(await round(), 'ok');
    assert.ok(cluster.calls().includes('POST /api/v1/nodes'));
    assert.equal(agent.node()?.metadata.uid, 'uid-2');
  });

  it('does not take a 404 from the API server cache as a deleted node', async () => {
    const { cluster, round } = setup();
    await round();
    cluster.failNext('GET', NODE, apiError(404, 'NotFound'));
    cluster.clearRecorded();
    assert.equal(await round(), 'ok');
    assert.ok(!cluster.calls().includes('POST /api/v1/nodes'));
  });
});

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

describe('node agent lifecycle', () => {
  it('registers, heartbeats the lease with an owner reference, and stops cleanly', async () => {
    const { cluster, clock, agent, recorder } = setup();
    agent.start();
    assert.equal(recorder.events[0]?.reason, 'Starting');
    await clock.advance(100);
    await agent.registered();
    // The lease loop started at once but could not be created before the node existed.
    await clock.advance(10_000);
    const lease = cluster.leases.get('kube-node-lease/node-a');
    assert.deepEqual(lease?.metadata.ownerReferences, [
      { apiVersion: 'v1', kind: 'Node', name: 'node-a', uid: 'uid-1' },
    ]);
    await clock.advance(10_000);
    assert.ok(cluster.calls().includes(`PUT ${LEASES}/node-a`));
    assert.equal(agent.lease()?.spec?.holderIdentity, 'node-a');

    await agent.stop();
    assert.equal(clock.pendingSleeps(), 0);
    const before = cluster.requests.length;
    await clock.advance(60_000);
    assert.equal(cluster.requests.length, before, 'nothing runs after stop');
  });

  it('rejects registered() waiters when stopped before registering, and on abort', async () => {
    const { cluster, agent, clock } = setup();
    for (let i = 0; i < 50; i++)
      cluster.failNext('POST', '/api/v1/nodes', apiError(503, 'ServiceUnavailable'));
    agent.start();
    const ac = new AbortController();
    const aborted = agent.registered(ac.signal);
    ac.abort();
    await assert.rejects(aborted, /aborted/);
    const waiting = agent.registered();
    await clock.advance(1_000);
    await agent.stop();
    await assert.rejects(waiting, /stopping/);
    await flush(30);
    assert.equal(clock.pendingSleeps(), 0);
  });
});
