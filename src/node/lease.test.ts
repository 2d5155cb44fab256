import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { nullLogger } from '../util/logger.ts';
import { KubeletError } from '../util/errors.ts';
import { createLeaseController, type LeaseControllerDeps } from './lease.ts';
import { apiError } from '../api/testing.ts';
import { flush } from '../util/testing.ts';
import { FakeClock, FakeCluster } from './testing.ts';
import type { Lease } from './types.ts';

const LEASES = '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases';

function setup(over: Partial<LeaseControllerDeps> = {}) {
  const cluster = new FakeCluster();
  const clock = new FakeClock();
  let repeated = 0;
  const lease = createLeaseController({
    api: cluster.client(),
    logger: nullLogger,
    holderIdentity: 'node-a',
    namespace: 'kube-node-lease',
    leaseDurationSeconds: 40,
    renewIntervalMs: 10_000,
    now: clock.now,
    sleep: clock.sleep,
    random: () => 0.5,
    postProcess: (l) => {
      l.metadata.ownerReferences ??= [{ apiVersion: 'v1', kind: 'Node', name: 'node-a', uid: 'node-uid' }];
      return Promise.resolve();
    },
    onRepeatedHeartbeatFailure: () => repeated++,
    ...over,
  });
  return { cluster, clock, lease, repeated: () => repeated, signal: new AbortController().signal };
}

/** Holds the next lease PUT until released. */
function deferredPut(cluster: FakeCluster): { release: () => void } {
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  cluster.api.respondOnce('PUT', /leases/, async (req: { body?: unknown }) => {
    await gate;
    const body = structuredClone(req.body) as Lease;
    body.metadata.resourceVersion = cluster.nextRV();
    cluster.leases.set('kube-node-lease/node-a', body);
    return body;
  });
  return { release };
}

describe('node lease', () => {
  it('creates the lease when missing, owned by the node, with a microsecond renew time', async () => {
    const { cluster, clock, lease, signal } = setup();
    await lease.sync(signal);
    assert.deepEqual(cluster.calls(), [`GET ${LEASES}/node-a`, `POST ${LEASES}`]);
    const stored = cluster.leases.get('kube-node-lease/node-a');
    assert.deepEqual(stored?.spec, {
      holderIdentity: 'node-a',
      leaseDurationSeconds: 40,
      renewTime: new Date(clock.nowMs).toISOString().replace('Z', '000Z'),
    });
    assert.deepEqual(stored?.metadata.ownerReferences, [
      { apiVersion: 'v1', kind: 'Node', name: 'node-a', uid: 'node-uid' },
    ]);
    assert.equal(lease.latest()?.metadata.resourceVersion, stored?.metadata.resourceVersion);
  });

  it('renews with a PUT carrying the last resourceVersion, without reading first', async () => {
    const { cluster, clock, lease, signal } = setup();
    await lease.sync(signal);
    const rv = cluster.leases.get('kube-node-lease/node-a')?.metadata.resourceVersion;
    cluster.clearRecorded();
    clock.nowMs += 10_000;
    await lease.sync(signal);
    assert.deepEqual(cluster.calls(), [`PUT ${LEASES}/node-a`]);
    const put = cluster.requests[0]?.body as Lease;
    assert.equal(put.metadata.resourceVersion, rv);
    assert.equal(put.spec?.renewTime, '2026-11-22T01:00:10.000000Z');
    assert.notEqual(cluster.leases.get('kube-node-lease/node-a')?.metadata.resourceVersion, rv);
  });

  it('re-reads the lease after a conflict and updates from the server copy', async () => {
    const { cluster, lease, signal } = setup();
    await lease.sync(signal);
    // Someone else bumps it: our copy is stale.
    const stored = cluster.leases.get('kube-node-lease/node-a')!;
    stored.metadata.resourceVersion = cluster.nextRV();
    stored.metadata.labels = { touched: 'yes' };
    cluster.clearRecorded();
    await lease.sync(signal);
    assert.deepEqual(cluster.calls(), [
      `PUT ${LEASES}/node-a`,
      `GET ${LEASES}/node-a`,
      `PUT ${LEASES}/node-a`,
    ]);
    assert.deepEqual(cluster.leases.get('kube-node-lease/node-a')?.metadata.labels, { touched: 'yes' });
  });

  it('recreates a lease that was deleted', async () => {
    const { cluster, lease, signal } = setup();
    await lease.sync(signal);
    cluster.leases.clear();
    cluster.clearRecorded();
    await lease.sync(signal);
    // 5 failed PUTs (404), then GET → create.
    assert.deepEqual(cluster.calls().slice(-2), [`GET ${LEASES}/node-a`, `POST ${LEASES}`]);
    assert.ok(cluster.leases.has('kube-node-lease/node-a'));
  });

  it('does not create the lease while the owner is unknown', async () => {
    let ownerKnown = false;
    const { cluster, lease, signal } = setup({
      postProcess: (l) => {
        if (!ownerKnown) return Promise.reject(new KubeletError('NotFound', 'get node', 'not found'));
        l.metadata.ownerReferences = [{ apiVersion: 'v1', kind: 'Node', name: 'node-a', uid: 'u9' }];
        return Promise.resolve();
      },
    });
    await lease.sync(signal);
    assert.deepEqual(cluster.calls(), [`GET ${LEASES}/node-a`]);
    ownerKnown = true;
    await lease.sync(signal);
    assert.equal(cluster.leases.get('kube-node-lease/node-a')?.metadata.ownerReferences?.[0]?.uid, 'u9');
  });

  it('backs off 200 ms doubling while the lease cannot be read', async () => {
    const { cluster, clock, lease, signal } = setup();
    cluster.failNext('GET', LEASES, apiError(500, 'InternalError'));
    cluster.failNext('GET', LEASES, apiError(500, 'InternalError'));
    cluster.failNext('GET', LEASES, apiError(503, 'ServiceUnavailable'));
    const done = lease.sync(signal);
    await clock.advance(1_400); // 200 + 400 + 800
    await done;
    assert.deepEqual(clock.sleeps, [200, 400, 800]);
    assert.ok(cluster.leases.has('kube-node-lease/node-a'));
  });

  it('retries a failing update 5 times, signalling repeated failures', async () => {
    const s = setup();
    await s.lease.sync(s.signal);
    for (let i = 0; i < 5; i++) s.cluster.failNext('PUT', LEASES, apiError(500, 'InternalError'));
    s.cluster.clearRecorded();
    await s.lease.sync(s.signal);
    // 5 failed PUTs from the last copy, then GET and one PUT that works.
    assert.deepEqual(s.cluster.calls(), [
      ...Array<string>(5).fill(`PUT ${LEASES}/node-a`),
      `GET ${LEASES}/node-a`,
      `PUT ${LEASES}/node-a`,
    ]);
    assert.equal(s.repeated(), 4);
  });

  it('starts the next round at once when woken, also when woken during a round', async () => {
    let ownerKnown = false;
    const { cluster, clock, lease } = setup({
      postProcess: (l) => {
        if (!ownerKnown) return Promise.reject(new KubeletError('NotFound', 'get node', 'not found'));
        l.metadata.ownerReferences = [{ apiVersion: 'v1', kind: 'Node', name: 'node-a', uid: 'u1' }];
        return Promise.resolve();
      },
    });
    const ac = new AbortController();
    const running = lease.run(ac.signal);
    await flush(30);
    assert.equal(clock.pendingSleeps(), 1, 'waiting for the next round');
    ownerKnown = true;
    lease.wake();
    await flush(30);
    assert.ok(cluster.leases.has('kube-node-lease/node-a'), 'created without waiting 10 s');
    assert.equal(clock.nowMs, Date.parse('2026-11-22T01:00:00.000Z'));
    // Woken while a round runs: the next round follows it at once.
    cluster.clearRecorded();
    clock.nowMs += 1;
    const slow = deferredPut(cluster);
    lease.wake(); // waiting: wakes the sleep, the round starts and blocks in its PUT
    await flush(30);
    lease.wake(); // during the round
    slow.release();
    await flush(30);
    assert.deepEqual(cluster.calls(), [`PUT ${LEASES}/node-a`, `PUT ${LEASES}/node-a`]);
    ac.abort();
    await running;
    assert.equal(clock.pendingSleeps(), 0);
  });

  it('renews every 10 s plus jitter until stopped', async () => {
    const { cluster, clock, lease } = setup();
    const ac = new AbortController();
    const running = lease.run(ac.signal);
    await flush(30);
    await clock.advance(10_200);
    await clock.advance(10_200);
    assert.deepEqual(clock.sleeps, [10_200, 10_200, 10_200]);
    assert.deepEqual(cluster.calls(), [
      `GET ${LEASES}/node-a`,
      `POST ${LEASES}`,
      `PUT ${LEASES}/node-a`,
      `PUT ${LEASES}/node-a`,
    ]);
    ac.abort();
    await running;
    assert.equal(clock.pendingSleeps(), 0);
  });
});
