import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { apiError } from '../api/testing.ts';
import { nodeAgentHarness as setup, readyOf } from './testing.ts';
import type { Node } from './types.ts';

const NODE = '/api/v1/nodes/node-a';

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

  it('with registerNode false never creates the Node: it waits for one to exist, then adopts it as it is', async () => {
    const { cluster, agent, clock, logger, signal } = setup({ registerNode: false });
    const round = agent.syncNodeStatus(signal);
    // Attempts at 100, 200, 400 ms find no Node; then one appears.
    for (let i = 0; i < 8; i++) await clock.advance(100);
    assert.equal(agent.node(), undefined);
    cluster.nodes.set('node-a', {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name: 'node-a', uid: 'made-by-hand', resourceVersion: '1', labels: { team: 'x' } },
      status: {},
    });
    for (let i = 0; i < 20; i++) await clock.advance(100);
    assert.equal(await round, 'ok');
    assert.equal(cluster.calls().filter((c) => c.startsWith('POST')).length, 0, 'never POSTed a Node');
    assert.equal(agent.node()?.metadata.uid, 'made-by-hand');
    assert.ok(
      logger.lines.some(
        (l) => l.msg === 'registerNode is false and the Node does not exist; waiting for it to be created',
      ),
    );
    // Adopted as it is: no label reconciliation (upstream reconciles only when it registers).
    assert.equal(cluster.nodes.get('node-a')?.metadata.labels?.['kubernetes.io/hostname'], undefined);
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
