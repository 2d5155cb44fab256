import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubeletPod, Pod } from '../api/types.ts';
import { FakeApi, apiError } from '../api/testing.ts';
import { recordingLogger } from '../util/testing.ts';
import {
  ANNOTATION_CONFIG_HASH,
  ANNOTATION_CONFIG_MIRROR,
  ANNOTATION_CONFIG_SEEN,
  ANNOTATION_CONFIG_SOURCE,
} from '../config/defaults.ts';
import { createMirrorPods, mirrorPodFor } from './mirror-pods.ts';
import { buildPod } from '../../test/kit/pod.ts';

const PODS = '/api/v1/namespaces/kube-system/pods';

function staticPod(name: string, hash: string): KubeletPod {
  return buildPod(`${name}-node-a`, {
    typeMeta: true,
    namespace: 'kube-system',
    uid: hash,
    labels: { component: name },
    annotations: {
      [ANNOTATION_CONFIG_SOURCE]: 'file',
      [ANNOTATION_CONFIG_HASH]: hash,
      [ANNOTATION_CONFIG_SEEN]: '2026-11-22T01:00:00.000000000Z',
      'example.com/keep': 'yes',
    },
    containers: [name],
    image: `${name}:1.0`,
    spec: { hostNetwork: true },
  });
}

function mirror(
  name: string,
  hash: string,
  uid: string,
  over: { deletionTimestamp?: string } = {},
): KubeletPod {
  const p = buildPod(`${name}-node-a`, {
    typeMeta: true,
    namespace: 'kube-system',
    uid,
    annotations: { [ANNOTATION_CONFIG_SOURCE]: 'file', [ANNOTATION_CONFIG_MIRROR]: hash },
    nodeName: 'node-a',
    containers: [name],
    image: `${name}:1.0`,
  });
  Object.assign(p.metadata, over);
  return p;
}

function setup(opts: { nodeUID?: string } = { nodeUID: 'node-uid-1' }) {
  const nodeUID = opts.nodeUID;
  const api = new FakeApi();
  let uidSeq = 0;
  // The fake API server stores what it is given, with a fresh UID.
  api.respond('POST', PODS, (req: { body: Pod }) => ({
    ...req.body,
    metadata: { ...req.body.metadata, uid: `mirror-uid-${++uidSeq}` },
  }));
  api.respond('DELETE', /^\/api\/v1\/namespaces\/kube-system\/pods\/[^/]+$/, {});
  const logger = recordingLogger();
  const mirrors = createMirrorPods({ api, logger, nodeName: 'node-a', nodeUID: () => nodeUID });
  return { api, logger, mirrors };
}

describe('mirror pods', () => {
  it('creates a mirror for a static pod: hash annotation, owned by the Node, bound to it', async () => {
    const { api, mirrors } = setup();
    const sp = staticPod('etcd', 'hash-1');
    await mirrors.reconcile([sp]);
    assert.deepEqual(api.calls(), [`POST ${PODS}`]);
    const body = api.requests[0]?.body as Pod;
    assert.deepEqual(body.metadata, {
      name: 'etcd-node-a',
      namespace: 'kube-system',
      labels: { component: 'etcd' },
      annotations: {
        [ANNOTATION_CONFIG_SOURCE]: 'file',
        [ANNOTATION_CONFIG_HASH]: 'hash-1',
        [ANNOTATION_CONFIG_MIRROR]: 'hash-1',
        'example.com/keep': 'yes',
      },
      ownerReferences: [
        { apiVersion: 'v1', kind: 'Node', name: 'node-a', uid: 'node-uid-1', controller: true },
      ],
    });
    assert.equal(body.spec.nodeName, 'node-a');
    assert.deepEqual(body.spec.containers, sp.spec.containers);
    assert.equal(body.spec.hostNetwork, true);
    assert.equal(mirrors.mirrorFor(sp)?.metadata.uid, 'mirror-uid-1', 'the created mirror is known at once');
  });

  it('does not modify the static pod it mirrors', () => {
    const sp = staticPod('etcd', 'hash-1');
    const before = structuredClone(sp);
    mirrorPodFor(sp, 'node-a', 'node-uid-1');
    assert.deepEqual(sp, before);
  });

  it('creates nothing until the node is registered (no node UID for the owner reference)', async () => {
    const { api, mirrors } = setup({});
    await mirrors.reconcile([staticPod('etcd', 'hash-1')]);
    assert.deepEqual(api.calls(), []);
  });

  it('leaves a matching mirror alone', async () => {
    const { api, mirrors } = setup();
    mirrors.setMirrors([mirror('etcd', 'hash-1', 'm1')]);
    await mirrors.reconcile([staticPod('etcd', 'hash-1')]);
    assert.deepEqual(api.calls(), []);
  });

  it('replaces a mirror whose hash is stale: delete with a UID precondition and no grace, then create', async () => {
    const { api, mirrors } = setup();
    mirrors.setMirrors([mirror('etcd', 'hash-old', 'm-old')]);
    const sp = staticPod('etcd', 'hash-new');
    await mirrors.reconcile([sp]);
    assert.deepEqual(api.calls(), [`DELETE ${PODS}/etcd-node-a`, `POST ${PODS}`]);
    assert.deepEqual(api.requests[0]?.body, {
      kind: 'DeleteOptions',
      apiVersion: 'v1',
      gracePeriodSeconds: 0,
      preconditions: { uid: 'm-old' },
    });
    const created = api.requests[1]?.body as Pod;
    assert.equal(created.metadata.annotations?.[ANNOTATION_CONFIG_MIRROR], 'hash-new');
    assert.equal(mirrors.mirrorFor(sp)?.metadata.uid, 'mirror-uid-1');
  });

  it('deletes a mirror whose static pod is gone', async () => {
    const { api, logger, mirrors } = setup();
    const orphan = mirror('old', 'hash-9', 'm9');
    mirrors.setMirrors([orphan, mirror('etcd', 'hash-1', 'm1')]);
    await mirrors.reconcile([staticPod('etcd', 'hash-1')]);
    assert.deepEqual(api.calls(), [`DELETE ${PODS}/old-node-a`]);
    assert.deepEqual((api.requests[0]?.body as { preconditions: unknown }).preconditions, { uid: 'm9' });
    const line = logger.lines.find((l) => l.msg === 'deleted mirror pod');
    assert.equal(line?.fields.pod, 'kube-system/old-node-a');
    assert.equal(line?.fields.podUID, 'm9');
  });

  it('deletes a mirror that is being deleted gracefully (upstream deletes it with grace 0)', async () => {
    const { api, mirrors } = setup();
    mirrors.setMirrors([mirror('etcd', 'hash-1', 'm1', { deletionTimestamp: '2026-11-22T01:00:00Z' })]);
    await mirrors.reconcile([staticPod('etcd', 'hash-1')]);
    assert.deepEqual(api.calls(), [`DELETE ${PODS}/etcd-node-a`]);
  });

  it('a mirror already gone (404 on delete) is not an error', async () => {
    const { api, logger, mirrors } = setup();
    api.respondOnce('DELETE', `${PODS}/old-node-a`, apiError(404, 'NotFound', 'pods "old-node-a" not found'));
    mirrors.setMirrors([mirror('old', 'hash-9', 'm9')]);
    await mirrors.reconcile([]);
    assert.deepEqual(api.calls(), [`DELETE ${PODS}/old-node-a`]);
    assert.deepEqual(
      logger.lines.filter((l) => l.level === 'warn'),
      [],
    );
  });

  it('retries a failed delete on the next pass instead of forgetting the stale mirror', async () => {
    // Upstream re-checks the mirror on every sync of the static pod (syncPod), so a failed
    // DeleteMirrorPod is retried. Here the stale mirror stays in the API; the next pass must
    // delete it again (the watch reports nothing new, so setMirrors is not called in between).
    const { api, mirrors } = setup();
    api.respondOnce('DELETE', `${PODS}/etcd-node-a`, apiError(500, 'InternalError', 'etcd timeout'));
    // The stale mirror is still in the API, so creating a new one fails.
    api.respond('POST', PODS, apiError(409, 'AlreadyExists', 'pods "etcd-node-a" already exists'));
    mirrors.setMirrors([mirror('etcd', 'hash-old', 'm-old')]);
    const sp = staticPod('etcd', 'hash-new');
    await mirrors.reconcile([sp]);
    // The stale mirror is still known, so no pointless create is attempted in the same pass.
    assert.deepEqual(api.calls(), [`DELETE ${PODS}/etcd-node-a`]);
    api.clearRecorded();
    await mirrors.reconcile([sp]);
    assert.equal(api.calls()[0], `DELETE ${PODS}/etcd-node-a`, `second pass: ${api.calls().join(', ')}`);
  });

  it('treats AlreadyExists on create as success (the watch will report the mirror), other errors are logged', async () => {
    const { api, logger, mirrors } = setup();
    api.respondOnce('POST', PODS, apiError(409, 'AlreadyExists', 'pods "etcd-node-a" already exists'));
    await mirrors.reconcile([staticPod('etcd', 'hash-1')]);
    assert.deepEqual(
      logger.lines.filter((l) => l.level === 'warn'),
      [],
    );

    api.respondOnce(
      'POST',
      PODS,
      apiError(403, 'Forbidden', 'node "node-a" can only create pods with spec.nodeName'),
    );
    await mirrors.reconcile([staticPod('kube-proxy', 'hash-2')]);
    const warn = logger.lines.find((l) => l.level === 'warn');
    assert.equal(warn?.msg, 'failed to create mirror pod');
    assert.equal(warn?.fields.pod, 'kube-system/kube-proxy-node-a');
    assert.match(String(warn?.fields.err), /403 Forbidden/);
  });

  it('mirrorFor returns only a matching mirror that is not being deleted', () => {
    const { mirrors } = setup();
    const sp = staticPod('etcd', 'hash-1');
    assert.equal(mirrors.mirrorFor(sp), undefined, 'no mirror');
    mirrors.setMirrors([mirror('etcd', 'hash-1', 'm1')]);
    assert.equal(mirrors.mirrorFor(sp)?.metadata.uid, 'm1');
    mirrors.setMirrors([mirror('etcd', 'hash-0', 'm0')]);
    assert.equal(mirrors.mirrorFor(sp), undefined, 'stale hash');
    mirrors.setMirrors([mirror('etcd', 'hash-1', 'm1', { deletionTimestamp: '2026-11-22T01:00:00Z' })]);
    assert.equal(mirrors.mirrorFor(sp), undefined, 'being deleted');
    mirrors.setMirrors([
      {
        ...mirror('etcd', 'hash-1', 'm2'),
        metadata: { ...mirror('etcd', 'hash-1', 'm2').metadata, namespace: 'other' },
      },
    ]);
    assert.equal(mirrors.mirrorFor(sp), undefined, 'same name in another namespace');
  });
});
