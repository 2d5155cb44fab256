import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import type { PodCondition, PodStatus } from '../api/types.ts';
import { FakeApi, apiError, apiPod, deferred, type Deferred } from '../api/testing.ts';
import { nullLogger } from '../util/logger.ts';
import { flush } from '../util/testing.ts';
import { createStatusManager } from './status-manager.ts';
import { createStatusSyncer, type StatusSyncerDeps, type StatusTarget } from './api-syncer.ts';
import { FakePodStatusServer } from './testing.ts';

const RESYNC_MS = 1000;
const STATUS_PATH = /^\/api\/v1\/namespaces\/[^/]+\/pods\/[^/]+\/status$/;

function running(ip = '10.0.0.5'): PodStatus {
  return { phase: 'Running', podIP: ip, conditions: [{ type: 'Ready', status: 'True' }] };
}

function withReady(status: 'True' | 'False'): PodStatus {
  return { phase: 'Running', conditions: [{ type: 'Ready', status }] };
}

function gate(status: 'True' | 'False'): PodCondition {
  return { type: 'example.com/lb', status };
}

/**
 * The resync timer is a setInterval: the test mocks it and ticks it, so "retried by the periodic
 * resync" is checked in fake time.
 */
function setup(t: TestContext, over: Partial<StatusSyncerDeps> = {}) {
  t.mock.timers.enable({ apis: ['setInterval'] });
  const api = new FakeApi();
  const server = new FakePodStatusServer();
  api.respond('PATCH', STATUS_PATH, server.patch);
  const statuses = createStatusManager();
  const targets = new Map<string, StatusTarget>();
  const syncer = createStatusSyncer({
    api,
    statuses,
    logger: nullLogger,
    targetFor: (uid) => targets.get(uid),
    podFor: () => undefined,
    resyncPeriodMs: RESYNC_MS,
    ...over,
  });
  const patches = () => api.requestsFor('PATCH');
  /** The pod exists in the API (with no status yet) and is where uid's status goes. */
  const target = (uid: string, name = `pod-${uid}`, ns = 'default') => {
    if (!server.get(ns, name)) server.add(apiPod(name, uid, { namespace: ns }));
    targets.set(uid, { namespace: ns, name, uid });
  };
  const resync = async () => {
    t.mock.timers.tick(RESYNC_MS);
    await syncer.idle();
    await flush();
  };
  return { api, server, statuses, targets, syncer, patches, target, resync };
}

describe('pod status syncer', () => {
  it('writes a status change as one strategic merge patch of status, with the pod UID as precondition', async (t) => {
    const { server, statuses, syncer, patches, target } = setup(t);
    target('uid-1', 'web', 'apps');
    syncer.start();
    statuses.set('uid-1', running());
    await syncer.idle();
    assert.equal(patches().length, 1);
    const p = patches()[0];
    assert.equal(p?.path, '/api/v1/namespaces/apps/pods/web/status');
    assert.equal(p?.contentType, 'application/strategic-merge-patch+json');
    assert.deepEqual(p?.body, {
      metadata: { uid: 'uid-1' },
      status: { ...running(), '$setElementOrder/conditions': [{ type: 'Ready' }] },
    });
    assert.deepEqual(server.get('apps', 'web')?.status, running());
    await syncer.stop();
  });

  it('writes statuses present before start()', async (t) => {
    const { statuses, syncer, patches, target } = setup(t);
    target('uid-1');
    target('uid-2');
    statuses.set('uid-1', running());
    statuses.set('uid-2', { phase: 'Pending' });
    syncer.start();
    await syncer.idle();
    assert.deepEqual(
      patches()
        .map((p) => p.path)
        .sort(),
      [
        '/api/v1/namespaces/default/pods/pod-uid-1/status',
        '/api/v1/namespaces/default/pods/pod-uid-2/status',
      ],
    );
    await syncer.stop();
  });

  it('does not patch again a status the server already acknowledged', async (t) => {
    const { statuses, syncer, patches, target, resync } = setup(t);
    target('uid-1');
    syncer.start();
    statuses.set('uid-1', running());
    await syncer.idle();
    statuses.set('uid-1', running()); // same content
    syncer.markDirty(['uid-1']);
    await syncer.idle();
    await resync();
    await resync();
    assert.equal(patches().length, 1);

    statuses.set('uid-1', running('10.0.0.6'));
    await syncer.idle();
    assert.equal(patches().length, 2, 'a real change is written');
    await syncer.stop();
  });

  it('writes to a new target UID even with the same status (the pod was recreated)', async (t) => {
    const { server, statuses, syncer, patches, targets } = setup(t);
    server.add(apiPod('web', 'mirror-1'));
    targets.set('uid-1', { namespace: 'default', name: 'web', uid: 'mirror-1' });
    syncer.start();
    statuses.set('uid-1', running());
    await syncer.idle();
    server.add(apiPod('web', 'mirror-2'));
    targets.set('uid-1', { namespace: 'default', name: 'web', uid: 'mirror-2' });
    syncer.markDirty(['uid-1']);
    await syncer.idle();
    assert.deepEqual(
      patches().map((p) => (p.body as { metadata: { uid: string } }).metadata.uid),
      ['mirror-1', 'mirror-2'],
    );
    await syncer.stop();
  });

  for (const [status, reason] of [
    [404, 'NotFound'],
    [409, 'Conflict'],
  ] as const) {
    it(`drops a status the server answers ${status} ${reason} to (the pod is gone or replaced): no retries`, async (t) => {
      const { api, statuses, syncer, patches, target, resync } = setup(t);
      api.respond('PATCH', STATUS_PATH, apiError(status, reason, 'gone'));
      target('uid-1');
      syncer.start();
      statuses.set('uid-1', running());
      await syncer.idle();
      await resync();
      await resync();
      assert.equal(patches().length, 1);
      await syncer.stop();
    });
  }

  it('retries other failures on the periodic resync until the server accepts', async (t) => {
    const { api, statuses, syncer, patches, target, resync } = setup(t);
    api.respondOnce('PATCH', STATUS_PATH, apiError(503, 'ServiceUnavailable', 'down'));
    api.respondOnce('PATCH', STATUS_PATH, apiError(500, 'InternalError', 'etcd timeout'));
    target('uid-1');
    syncer.start();
    statuses.set('uid-1', running());
    await syncer.idle();
    assert.equal(patches().length, 1, 'no immediate retry');
    await resync();
    assert.equal(patches().length, 2);
    await resync();
    assert.equal(patches().length, 3, 'third attempt succeeds');
    await resync();
    assert.equal(patches().length, 3, 'nothing left to write');
    await syncer.stop();
  });

  it('resyncAll() resends every status even if acknowledged', async (t) => {
    const { statuses, syncer, patches, target } = setup(t);
    target('uid-1');
    syncer.start();
    statuses.set('uid-1', running());
    await syncer.idle();
    syncer.resyncAll();
    await syncer.idle();
    assert.equal(patches().length, 2);
    await syncer.stop();
  });

  it('sends nothing while a pod has no target, and writes once markDirty follows a new target', async (t) => {
    const { statuses, syncer, patches, target } = setup(t);
    syncer.start();
    statuses.set('static-uid', running());
    await syncer.idle();
    syncer.markDirty(['static-uid']);
    await syncer.idle();
    assert.equal(patches().length, 0);
    target('static-uid', 'etcd-node-a', 'kube-system'); // its mirror pod appeared
    syncer.markDirty(['static-uid']);
    await syncer.idle();
    assert.deepEqual(
      patches().map((p) => p.path),
      ['/api/v1/namespaces/kube-system/pods/etcd-node-a/status'],
    );
    await syncer.stop();
  });

  it('keeps at most `concurrency` patches in flight', async (t) => {
    const held: Deferred<unknown>[] = [];
    let inFlight = 0;
    let maxInFlight = 0;
    const { api, statuses, syncer, patches, target } = setup(t, { concurrency: 2 });
    api.respond('PATCH', STATUS_PATH, async () => {
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      const d = deferred<unknown>();
      held.push(d);
      try {
        return await d.promise;
      } finally {
        inFlight--;
      }
    });
    syncer.start();
    for (let i = 1; i <= 5; i++) {
      target(`uid-${i}`);
      statuses.set(`uid-${i}`, running());
    }
    await flush();
    assert.equal(patches().length, 2);
    while (patches().length < 5 || held.length > 0) {
      held.shift()?.resolve({});
      await flush();
    }
    await syncer.idle();
    assert.equal(maxInFlight, 2);
    assert.equal(patches().length, 5);
    await syncer.stop();
  });

  it('stop() aborts the patch in flight, waits for it to settle, and sends nothing afterwards', async (t) => {
    const { api, statuses, syncer, patches, target } = setup(t);
    let settled = false;
    api.respond('PATCH', STATUS_PATH, () => new Promise(() => {}));
    target('uid-1');
    syncer.start();
    statuses.set('uid-1', running());
    await flush();
    assert.equal(patches().length, 1);
    const inFlight = patches()[0];
    inFlight?.signal?.addEventListener('abort', () => {
      settled = true;
    });
    await syncer.stop();
    assert.equal(settled, true, 'the in-flight patch was aborted before stop() resolved');
    statuses.set('uid-1', running('10.0.0.9'));
    syncer.markDirty(['uid-1']);
    t.mock.timers.tick(RESYNC_MS * 3);
    await flush();
    assert.equal(patches().length, 1);
  });

  it('stop() returns even when more statuses are waiting behind the concurrency bound', async (t) => {
    const { api, statuses, syncer, target } = setup(t, { concurrency: 1 });
    api.respond('PATCH', STATUS_PATH, () => new Promise(() => {}));
    syncer.start();
    for (const uid of ['uid-1', 'uid-2', 'uid-3']) {
      target(uid);
      statuses.set(uid, running());
    }
    await flush();
    let stopped = false;
    void syncer.stop().then(() => (stopped = true));
    await flush(); // the fake API rejects aborted requests at once: nothing else to wait for
    assert.equal(stopped, true, 'stop() must not wait for statuses it will never send');
  });

  it('never has two patches of the same pod in flight (a late reply could leave a stale status)', async (t) => {
    // Upstream writes statuses from one goroutine (syncBatch), so one pod's patches are ordered.
    const held: Deferred<unknown>[] = [];
    const { api, statuses, syncer, patches, target } = setup(t, { concurrency: 5 });
    api.respond('PATCH', STATUS_PATH, () => {
      const d = deferred<unknown>();
      held.push(d);
      return d.promise;
    });
    target('uid-1');
    syncer.start();
    statuses.set('uid-1', running('10.0.0.1'));
    await flush();
    statuses.set('uid-1', running('10.0.0.2'));
    await flush();
    assert.equal(patches().length, 1, 'the second write waits for the first');
    while (held.length > 0) {
      held.shift()?.resolve({});
      await flush();
    }
    await syncer.idle();
    const last = patches().at(-1)?.body as { status: PodStatus };
    assert.equal(last.status.podIP, '10.0.0.2', 'the newest status is written last');
    await syncer.stop();
  });

  it('logs with the pod identity (pod and podUID) when a write fails', async (t) => {
    const lines: { msg: string; fields: Record<string, unknown> }[] = [];
    const logger = {
      ...nullLogger,
      child: (f: Record<string, unknown>) => ({
        ...nullLogger,
        warn: (msg: string, extra?: Record<string, unknown>) =>
          lines.push({ msg, fields: { ...f, ...extra } }),
      }),
    };
    const pod = apiPod('web', 'uid-1', { namespace: 'apps' });
    const { api, statuses, syncer, target } = setup(t, { logger, podFor: () => pod });
    api.respond('PATCH', STATUS_PATH, apiError(500, 'InternalError', 'boom'));
    target('uid-1', 'web', 'apps');
    syncer.start();
    statuses.set('uid-1', running());
    await syncer.idle();
    assert.equal(lines[0]?.msg, 'failed to write pod status; will retry');
    assert.equal(lines[0]?.fields.pod, 'apps/web');
    assert.equal(lines[0]?.fields.podUID, 'uid-1');
    await syncer.stop();
  });
  it('keeps a condition someone else set between our read and our write (merge by type)', async (t) => {
    const { server, statuses, syncer, target } = setup(t);
    target('uid-1', 'web');
    syncer.start();
    statuses.set('uid-1', withReady('False'));
    await syncer.idle();
    // A readiness-gate controller sets its condition; the kubelet has not seen it yet.
    server.edit('default', 'web', (p) => p.status?.conditions?.push(gate('True')));
    statuses.set('uid-1', withReady('True'));
    await syncer.idle();
    assert.deepEqual(
      server.get('default', 'web')?.status?.conditions?.map((c) => `${c.type}=${c.status}`),
      ['example.com/lb=True', 'Ready=True'],
    );
    await syncer.stop();
  });

  it('never changes a condition it does not own, even when its own copy of it is stale', async (t) => {
    const { server, statuses, syncer, patches, target } = setup(t);
    target('uid-1', 'web');
    server.edit('default', 'web', (p) => (p.status = { conditions: [gate('False')] }));
    syncer.start();
    statuses.set('uid-1', {
      ...withReady('False'),
      conditions: [gate('False'), ...withReady('False').conditions!],
    });
    await syncer.idle();
    server.edit('default', 'web', (p) => {
      p.status!.conditions = p.status!.conditions!.map((c) =>
        c.type === 'example.com/lb' ? gate('True') : c,
      );
    });
    // Ours still says the gate is False (the watch has not delivered the change yet).
    statuses.set('uid-1', {
      ...withReady('True'),
      conditions: [gate('False'), ...withReady('True').conditions!],
    });
    await syncer.idle();
    const sent = (patches().at(-1)?.body as { status: { conditions: { type: string }[] } }).status.conditions;
    assert.deepEqual(
      sent.map((c) => c.type),
      ['Ready'],
    );
    assert.equal(
      server.get('default', 'web')?.status?.conditions?.find((c) => c.type === 'example.com/lb')?.status,
      'True',
    );
    await syncer.stop();
  });

  it('diffs against the API source copy of the pod when it is newer than the last answer', async (t) => {
    const { server, statuses, syncer, patches, targets, target } = setup(t);
    target('uid-1', 'web');
    syncer.start();
    statuses.set('uid-1', running('10.0.0.1'));
    await syncer.idle();
    const answered = server.get('default', 'web')!;
    // The watch delivers a newer version of the pod that already shows the next IP.
    const newer = server.edit('default', 'web', (p) => {
      p.status = { ...p.status, podIP: '10.0.0.2' };
    });
    targets.set('uid-1', {
      namespace: 'default',
      name: 'web',
      uid: 'uid-1',
      status: newer.status!,
      resourceVersion: newer.metadata.resourceVersion!,
    });
    statuses.set('uid-1', running('10.0.0.2'));
    await syncer.idle();
    assert.equal(patches().length, 1, 'nothing left to change');
    // An older copy from the watch does not replace the server's answer as the base.
    targets.set('uid-1', {
      namespace: 'default',
      name: 'web',
      uid: 'uid-1',
      status: answered.status!,
      resourceVersion: '1',
    });
    statuses.set('uid-1', running('10.0.0.3'));
    await syncer.idle();
    assert.equal(patches().length, 2);
    await syncer.stop();
  });

  it('writes its unchanged status again when another writer changed it in the API (node controller marked the pod not ready)', async (t) => {
    const { server, statuses, syncer, patches, targets, target, resync } = setup(t);
    target('uid-1', 'web');
    syncer.start();
    statuses.set('uid-1', running());
    await syncer.idle();
    assert.equal(patches().length, 1);
    // The node was unreachable: the node lifecycle controller set Ready=False; the watch delivers it.
    const marked = server.edit('default', 'web', (p) => {
      p.status = { ...p.status, conditions: [{ type: 'Ready', status: 'False' }] };
    });
    const watched = () =>
      targets.set('uid-1', {
        namespace: 'default',
        name: 'web',
        uid: 'uid-1',
        status: server.get('default', 'web')!.status!,
        resourceVersion: server.get('default', 'web')!.metadata.resourceVersion!,
      });
    watched();
    assert.ok(marked.status?.conditions?.some((c) => c.status === 'False'));
    await resync();
    assert.equal(patches().length, 2, 'the periodic pass sees the API differs from ours');
    assert.deepEqual(server.get('default', 'web')?.status, running());
    // The watch delivers our own write, then a change that leaves the status as ours: nothing to write.
    watched();
    await resync();
    server.edit('default', 'web', (p) => (p.metadata.labels = { touched: 'yes' }));
    watched();
    await resync();
    await resync();
    assert.equal(patches().length, 2);
    await syncer.stop();
  });

  it('sends a whole status on the first write of a pod the API source has no status for', async (t) => {
    const { statuses, syncer, patches, target } = setup(t);
    target('uid-1', 'web');
    syncer.start();
    const s: PodStatus = { ...running(), containerStatuses: [] };
    statuses.set('uid-1', s);
    await syncer.idle();
    const body = patches()[0]?.body as { status: PodStatus };
    assert.deepEqual(body.status.containerStatuses, []);
    assert.equal(body.status.phase, 'Running');
    await syncer.stop();
  });

  it('idle() resolves after stop() even while statuses are still waiting to be written', async (t) => {
    const { api, statuses, syncer, target } = setup(t, { concurrency: 1 });
    api.respond('PATCH', STATUS_PATH, () => new Promise(() => {}));
    syncer.start();
    for (const uid of ['uid-1', 'uid-2']) {
      target(uid);
      statuses.set(uid, running());
    }
    await flush();
    await syncer.stop();
    let idle = false;
    void syncer.idle().then(() => (idle = true));
    await flush();
    assert.equal(idle, true, 'idle() must not wait for statuses that will never be sent');
  });
});
