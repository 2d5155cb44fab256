import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { apiError } from '../../api/testing.ts';
import { nullLogger } from '../../util/logger.ts';
import { createNodeInfoManager } from './node-info.ts';
import { fakeNodeApi } from './testing.ts';

const NODE = 'node-a';

describe('CSINode initialization at start-up (upstream initializeCSINode)', () => {
  it('makes an empty CSINode owned by the Node before any driver registers', async () => {
    const fake = fakeNodeApi(NODE);
    const nim = createNodeInfoManager({ api: fake.api, nodeName: NODE, logger: nullLogger, retryDelayMs: 1 });
    await nim.initialize(new AbortController().signal);
    const csiNode = fake.csiNode();
    assert.ok(csiNode, 'the CSINode exists');
    assert.deepEqual(csiNode.spec.drivers, []);
    assert.deepEqual(csiNode.metadata.ownerReferences, [
      { apiVersion: 'v1', kind: 'Node', name: NODE, uid: 'node-uid-1' },
    ]);
  });

  it('keeps an existing CSINode and its drivers', async () => {
    const fake = fakeNodeApi(NODE);
    const nim = createNodeInfoManager({ api: fake.api, nodeName: NODE, logger: nullLogger, retryDelayMs: 1 });
    await nim.installDriver('d.example.com', 'id-1', 3, {});
    await nim.initialize(new AbortController().signal);
    assert.deepEqual(
      fake.csiNode()?.spec.drivers?.map((d) => d.name),
      ['d.example.com'],
    );
    assert.equal(fake.api.requestsFor('POST').length, 1, 'created once, by the driver');
  });

  it('waits for the kubelet to register its Node, then makes the CSINode', async () => {
    const fake = fakeNodeApi(NODE);
    let registered = false;
    const real = fake.node();
    fake.api.respond('GET', `/api/v1/nodes/${NODE}`, () => (registered ? real : apiError(404, 'NotFound')));
    setTimeout(() => (registered = true), 30);
    const nim = createNodeInfoManager({ api: fake.api, nodeName: NODE, logger: nullLogger, retryDelayMs: 5 });
    await nim.initialize(new AbortController().signal);
    assert.ok(fake.csiNode(), 'made once the Node appeared');
  });

  it('gives up with the reason when the Node never appears', async () => {
    const fake = fakeNodeApi(NODE);
    fake.api.respond('GET', `/api/v1/nodes/${NODE}`, () => apiError(404, 'NotFound'));
    const nim = createNodeInfoManager({ api: fake.api, nodeName: NODE, logger: nullLogger, retryDelayMs: 1 });
    await assert.rejects(nim.initialize(new AbortController().signal), /the Node node-a was not found/);
    assert.equal(fake.csiNode(), undefined);
  });
});
