import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { initialNode } from './initial-node.ts';
import { nodeStatusHasChanged, setNodeStatus } from './node-status.ts';
import type { NodeImageInfo } from './status-inputs.ts';
import { nodeImages } from './status-setters.ts';
import { fakeInputs, sampleMachine, statusConfig } from './testing.ts';

const T0 = Date.parse('2026-11-22T01:00:00.400Z');
const T1 = T0 + 10_000;
const T2 = T0 + 20_000;

describe('node images (upstream Images setter)', () => {
  const img = (id: string, size: number, repoTags: string[] = [], repoDigests: string[] = []) =>
    ({ id, size, repoTags, repoDigests }) satisfies NodeImageInfo;

  it('lists images largest first, equal sizes by ID descending, names = digests then tags', () => {
    const images = [
      img('sha256:a', 10, ['pause:3.6']),
      img('sha256:b', 300, ['busybox:1.29', 'busybox:other'], ['busybox@sha256:d1']),
      img('sha256:c', 10, [], ['app@sha256:d2']),
    ];
    assert.deepEqual(nodeImages(images, 50), [
      { names: ['busybox@sha256:d1', 'busybox:1.29', 'busybox:other'], sizeBytes: 300 },
      { names: ['app@sha256:d2'], sizeBytes: 10 },
      { names: ['pause:3.6'], sizeBytes: 10 },
    ]);
  });

  it('reports at most 5 names per image', () => {
    const tags = ['t1', 't2', 't3', 't4'].map((t) => `app:${t}`);
    const [only] = nodeImages([img('sha256:x', 1, tags, ['app@sha256:1', 'app@sha256:2'])], 50);
    assert.deepEqual(only?.names, ['app@sha256:1', 'app@sha256:2', 'app:t1', 'app:t2', 'app:t3']);
  });

  it('keeps the largest nodeStatusMaxImages; -1 keeps all, 0 none', () => {
    const images = [1, 5, 3, 4, 2].map((n) => img(`sha256:${n}`, n, [`i:${n}`]));
    assert.deepEqual(
      nodeImages(images, 2).map((i) => i.sizeBytes),
      [5, 4],
    );
    assert.equal(nodeImages(images, -1).length, 5);
    assert.equal(nodeImages(images, 9).length, 5);
    assert.deepEqual(nodeImages(images, 0), []);
  });

  it('sets status.images from the list, with the configured cap', () => {
    const { node } = initialNode(
      statusConfig({ maxImages: 1 }),
      { labels: {}, taints: [] },
      sampleMachine(),
      fakeInputs(),
      T0,
      {
        ok: true,
        images: [img('sha256:small', 1, ['small:1']), img('sha256:big', 9, ['big:1'])],
      },
    );
    assert.deepEqual(node.status?.images, [{ names: ['big:1'], sizeBytes: 9 }]);
  });

  it('drops the field for an empty list, as upstream reports none', () => {
    const { node } = initialNode(
      statusConfig(),
      { labels: {}, taints: [] },
      sampleMachine(),
      fakeInputs(),
      T0,
      {
        ok: true,
        images: [img('sha256:a', 1, ['a:1'])],
      },
    );
    setNodeStatus(node, statusConfig(), sampleMachine(), fakeInputs(), T1, { ok: true, images: [] });
    assert.equal(node.status?.images, undefined);
    assert.ok(!('images' in (node.status ?? {})));
  });

  it('keeps the last list (with a warning) when listing failed, and leaves it alone without a list', () => {
    const { node } = initialNode(
      statusConfig(),
      { labels: {}, taints: [] },
      sampleMachine(),
      fakeInputs(),
      T0,
      {
        ok: true,
        images: [img('sha256:a', 7, ['a:1'])],
      },
    );
    const r = setNodeStatus(node, statusConfig(), sampleMachine(), fakeInputs(), T1, {
      ok: false,
      error: 'CRI ListImages: unavailable',
    });
    assert.deepEqual(r.warnings, ['error getting image list: CRI ListImages: unavailable']);
    assert.deepEqual(node.status?.images, [{ names: ['a:1'], sizeBytes: 7 }]);
    setNodeStatus(node, statusConfig(), sampleMachine(), fakeInputs(), T2);
    assert.deepEqual(node.status?.images, [{ names: ['a:1'], sizeBytes: 7 }]);
  });

  it('counts a changed image list as a status change', () => {
    const { node } = initialNode(
      statusConfig(),
      { labels: {}, taints: [] },
      sampleMachine(),
      fakeInputs(),
      T0,
      {
        ok: true,
        images: [img('sha256:a', 7, ['a:1'])],
      },
    );
    const before = structuredClone(node.status);
    setNodeStatus(node, statusConfig(), sampleMachine(), fakeInputs(), T1, {
      ok: true,
      images: [img('sha256:a', 7, ['a:1']), img('sha256:b', 3, ['b:1'])],
    });
    assert.equal(nodeStatusHasChanged(before, node.status), true);
  });
});
