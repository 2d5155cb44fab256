import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { apiError } from '../api/testing.ts';
import { flush } from '../util/testing.ts';
import { nodeAgentHarness as setup } from './testing.ts';

const LEASES = '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases';

describe('node agent lifecycle', () => {
  it('registers, heartbeats the lease with an owner reference, and stops cleanly', async () => {
    const { cluster, clock, agent, recorder } = setup();
    agent.start();
    assert.equal(recorder.events[0]?.reason, 'Starting');
    await clock.advance(100);
    await agent.registered();
    await clock.advance(0);
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

  it('creates the lease as soon as the Node is registered when its first round came before the Node', async () => {
    const { cluster, clock, agent } = setup();
    agent.start();
    await clock.advance(0);
    // The first lease round ran at once: no lease, no Node to own it, so nothing created yet.
    assert.deepEqual(cluster.calls().slice(0, 2), [`GET ${LEASES}/node-a`, 'GET /api/v1/nodes/node-a']);
    assert.equal(cluster.leases.size, 0);
    await clock.advance(100); // registration's first step
    await agent.registered();
    await clock.advance(0);
    const calls = cluster.calls();
    const registeredAt = calls.indexOf('POST /api/v1/nodes');
    const createdAt = calls.indexOf(`POST ${LEASES}`);
    assert.ok(registeredAt >= 0 && createdAt > registeredAt, calls.join('\n'));
    assert.equal(clock.nowMs - Date.parse('2026-11-22T01:00:00.000Z'), 100, 'no renew interval waited');
    assert.equal(cluster.leases.get('kube-node-lease/node-a')?.metadata.ownerReferences?.[0]?.uid, 'uid-1');
    await agent.stop();
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
