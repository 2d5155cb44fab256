import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubeletPod } from '../api/types.ts';
import { nullLogger } from '../util/logger.ts';
import { createPodStorage, rfc3339Nano } from './storage.ts';
import { pod } from './testing.ts';
import type { PodUpdate, SourceProblem } from './types.ts';

const SEEN = 'kubernetes.io/config.seen';

function storageAt(times: string[] = ['2026-01-01T00:00:00.000Z', '2026-01-01T00:00:01.000Z']) {
  const problems: SourceProblem[] = [];
  let i = 0;
  const storage = createPodStorage({
    logger: nullLogger,
    onProblem: (p) => problems.push(p),
    now: () => new Date(times[Math.min(i++, times.length - 1)] ?? 0),
  });
  return { storage, problems };
}

const summary = (updates: PodUpdate[]) =>
  updates.map((u) => `${u.op}:${u.pods.map((p) => p.metadata.name).join(',')}`);

describe('pod storage merge', () => {
  it('emits one empty ADD for the first snapshot of a source that has no pods', () => {
    const { storage } = storageAt();
    assert.deepEqual(storage.merge('file', []), [{ op: 'ADD', pods: [], source: 'file' }]);
    assert.deepEqual(storage.merge('file', []), []);
  });

  it('marks a source as seen only after its first snapshot', () => {
    const { storage } = storageAt();
    assert.equal(storage.seenSources(['file', 'http']), false);
    storage.merge('file', []);
    assert.equal(storage.seenSources(['file']), true);
    assert.equal(storage.seenSources(['file', 'http']), false);
    storage.merge('http', [pod('a', 'u1')]);
    assert.equal(storage.seenSources(['file', 'http']), true);
  });

  it('adds new pods with config.source and config.seen, and no empty ADD when there are pods', () => {
    const { storage } = storageAt();
    const out = storage.merge('file', [pod('a', 'u1'), pod('b', 'u2')]);
    assert.deepEqual(summary(out), ['ADD:a,b']);
    const added = out[0]?.pods[0];
    assert.equal(added?.metadata.annotations?.['kubernetes.io/config.source'], 'file');
    assert.equal(added?.metadata.annotations?.[SEEN], '2026-01-01T00:00:00Z');
  });

  it('sends nothing for a snapshot equal to the last one, whatever its key order', () => {
    const { storage } = storageAt();
    storage.merge('file', [pod('a', 'u1', (p) => (p.metadata.labels = { x: '1', y: '2' }))]);
    const reordered = pod('a', 'u1');
    reordered.metadata = { labels: { y: '2', x: '1' }, ...reordered.metadata };
    const json = JSON.parse(JSON.stringify(reordered)) as KubeletPod;
    assert.deepEqual(storage.merge('file', [json]), []);
  });

  it('takes a pod sent again as the same object as unchanged, and still sees the changed ones beside it', () => {
    const { storage } = storageAt();
    const a = pod('a', 'u1');
    const b = pod('b', 'u2');
    storage.merge('api', [a, b]);
    const b2 = pod('b', 'u2', (p) => (p.metadata.labels = { changed: 'yes' }));
    assert.deepEqual(summary(storage.merge('api', [a, b2])), ['UPDATE:b']);
    assert.deepEqual(storage.merge('api', [a, b2]), []);
    // The pods handed out are copies, and the stored state still carries the first-seen time.
    const all = storage.allPods();
    assert.notEqual(all[0], a);
    assert.equal(
      all.find((p) => p.metadata.name === 'a')?.metadata.annotations?.[SEEN],
      '2026-01-01T00:00:00Z',
    );
    assert.deepEqual(summary(storage.merge('api', [b2])), ['REMOVE:a']);
    assert.deepEqual(summary(storage.merge('api', [a, b2])), ['ADD:a']);
  });

  it('removes pods that left the snapshot, before adding new ones', () => {
    const { storage } = storageAt();
    storage.merge('file', [pod('a', 'u1'), pod('b', 'u2')]);
    assert.deepEqual(summary(storage.merge('file', [pod('b', 'u2'), pod('c', 'u3')])), ['REMOVE:a', 'ADD:c']);
  });

  it('updates a pod whose spec, labels or non-local annotations changed, keeping its first-seen time', () => {
    const { storage } = storageAt();
    storage.merge('http', [pod('a', 'u1')]);
    const changed = pod('a', 'u1', (p) => {
      p.spec.containers[0]!.image = 'busybox:1.30';
    });
    const out = storage.merge('http', [changed]);
    assert.deepEqual(summary(out), ['UPDATE:a']);
    assert.equal(out[0]?.pods[0]?.metadata.annotations?.[SEEN], '2026-01-01T00:00:00Z');
    assert.equal(out[0]?.pods[0]?.spec.containers[0]?.image, 'busybox:1.30');

    const labelled = pod('a', 'u1', (p) => {
      p.spec.containers[0]!.image = 'busybox:1.30';
      p.metadata.labels = { tier: 'x' };
    });
    assert.deepEqual(summary(storage.merge('http', [labelled])), ['UPDATE:a']);

    const annotated = structuredClone(labelled);
    annotated.metadata.annotations = { ...annotated.metadata.annotations, note: 'hello' };
    assert.deepEqual(summary(storage.merge('http', [annotated])), ['UPDATE:a']);
  });

  it('ignores changes to its own annotations (config.seen, config.source, config.mirror)', () => {
    const { storage } = storageAt();
    storage.merge('api', [pod('a', 'u1')]);
    const p = pod('a', 'u1');
    p.metadata.annotations = {
      ...p.metadata.annotations,
      [SEEN]: 'something else',
      'kubernetes.io/config.mirror': 'm',
      'kubernetes.io/config.source': 'file',
    };
    assert.deepEqual(storage.merge('api', [p]), []);
    assert.equal(storage.allPods()[0]?.metadata.annotations?.[SEEN], '2026-01-01T00:00:00Z');
    assert.equal(storage.allPods()[0]?.metadata.annotations?.['kubernetes.io/config.source'], 'api');
  });

  it('reconciles a pod whose status alone changed', () => {
    const { storage } = storageAt();
    storage.merge('api', [pod('a', 'u1')]);
    const running = pod('a', 'u1', (p) => (p.status = { phase: 'Running' }));
    const out = storage.merge('api', [running]);
    assert.deepEqual(summary(out), ['RECONCILE:a']);
    assert.equal(out[0]?.pods[0]?.status?.phase, 'Running');
    assert.deepEqual(storage.merge('api', [running]), []);
  });

  it('sends DELETE instead of UPDATE for a pod that gained a deletionTimestamp', () => {
    const { storage } = storageAt();
    storage.merge('api', [pod('a', 'u1'), pod('b', 'u2')]);
    const deleting = pod('a', 'u1', (p) => {
      p.metadata.deletionTimestamp = '2026-01-01T00:00:05Z';
      p.metadata.deletionGracePeriodSeconds = 30;
    });
    const changed = pod('b', 'u2', (p) => (p.spec.restartPolicy = 'Never'));
    assert.deepEqual(summary(storage.merge('api', [deleting, changed])), ['UPDATE:b', 'DELETE:a']);
    assert.deepEqual(storage.merge('api', [deleting, changed]), []);
  });

  it('orders REMOVE, ADD, UPDATE, DELETE, RECONCILE within one merge', () => {
    const { storage } = storageAt();
    storage.merge('api', [pod('gone', 'u0'), pod('upd', 'u1'), pod('del', 'u2'), pod('rec', 'u3')]);
    const out = storage.merge('api', [
      pod('upd', 'u1', (p) => (p.spec.hostNetwork = true)),
      pod('del', 'u2', (p) => (p.metadata.deletionTimestamp = '2026-01-01T00:00:05Z')),
      pod('rec', 'u3', (p) => (p.status = { phase: 'Running' })),
      pod('new', 'u4'),
    ]);
    assert.deepEqual(summary(out), ['REMOVE:gone', 'ADD:new', 'UPDATE:upd', 'DELETE:del', 'RECONCILE:rec']);
  });

  it('drops later pods whose namespace/name repeats an earlier one and reports them', () => {
    const { storage, problems } = storageAt();
    const out = storage.merge('file', [pod('a', 'u1'), pod('a', 'u2'), pod('b', 'u3')]);
    assert.deepEqual(summary(out), ['ADD:a,b']);
    assert.equal(out[0]?.pods[0]?.metadata.uid, 'u1');
    assert.equal(problems.length, 1);
    assert.equal(problems[0]?.reason, 'DuplicatePod');
    assert.equal(problems[0]?.pod, 'default/a');
    const otherNs = pod('a', 'u4', (p) => (p.metadata.namespace = 'kube-system'));
    assert.deepEqual(summary(storage.merge('file', [pod('a', 'u1'), pod('b', 'u3'), otherNs])), ['ADD:a']);
  });

  it('keeps sources apart: one source’s snapshot never removes another’s pods', () => {
    const { storage } = storageAt();
    storage.merge('file', [pod('a', 'u1')]);
    storage.merge('http', [pod('b', 'u2')]);
    assert.deepEqual(summary(storage.merge('http', [])), ['REMOVE:b']);
    assert.deepEqual(
      storage.allPods().map((p) => p.metadata.name),
      ['a'],
    );
  });

  it('hands out copies: mutating an update does not change the storage', () => {
    const { storage } = storageAt();
    const input = pod('a', 'u1');
    const out = storage.merge('file', [input]);
    out[0]!.pods[0]!.spec.containers[0]!.image = 'mutated';
    input.spec.containers[0]!.image = 'mutated-too';
    assert.deepEqual(storage.merge('file', [pod('a', 'u1')]), []);
    assert.equal(storage.allPods()[0]?.spec.containers[0]?.image, 'busybox:1.29');
  });
});

describe('rfc3339Nano', () => {
  it('trims trailing zeros of the fraction like Go', () => {
    assert.equal(rfc3339Nano(new Date('2026-01-02T03:04:05.120Z')), '2026-01-02T03:04:05.12Z');
    assert.equal(rfc3339Nano(new Date('2026-01-02T03:04:05.000Z')), '2026-01-02T03:04:05Z');
    assert.equal(rfc3339Nano(new Date('2026-01-02T03:04:05.007Z')), '2026-01-02T03:04:05.007Z');
  });
});
