import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { FakeApi } from '../api/testing.ts';
import type { KubeletPod, PodStatus } from '../api/types.ts';
import { sleep } from '../util/abort.ts';
import type { FakeRuntimeService } from '../runtime/cri/testing.ts';
import type { Kubelet } from './kubelet.ts';
import { createFakeLogind } from '../shutdown/testing.ts';
import type { MirrorPods } from './mirror-pods.ts';
import { nullVolumeManager } from '../volume/testing.ts';
import { mountAt } from '../volume/mounts.ts';
import { fakeCriKubelet, sourcedPod, untilWithin } from './testing.ts';

function makePod(name: string, patch: (p: KubeletPod) => void = () => {}): KubeletPod {
  const pod = sourcedPod(name, { source: 'api', creationTimestamp: '2026-11-24T00:00:00Z' });
  patch(pod);
  return pod;
}

const until = untilWithin(8_000);

const statusOf = (k: Kubelet, uid: string): PodStatus | undefined =>
  k.pods().find((p) => p.pod.metadata.uid === uid)?.status;

const liveContainers = (cri: FakeRuntimeService, uid: string) =>
  [...cri.containers.values()].filter((c) => c.status.labels['io.kubernetes.pod.uid'] === uid);

describe('the kubelet core on a fake CRI', () => {
  void it('on a node shutdown stops ordinary pods first, critical ones later, each Failed/Shutdown, and refuses new pods', async (t) => {
    const logind = createFakeLogind();
    const s = await fakeCriKubelet(t, {
      deps: { logind },
      sourceName: 'api',
      options: { shutdownGracePeriodMs: 6_000, shutdownGracePeriodCriticalPodsMs: 3_000 },
    });
    const k = await s.start();
    const web = makePod('web');
    const critical = makePod('dns', (p) => (p.spec.priority = 2_000_000_000));
    s.source.send([web, critical]);
    await until('both Running', () =>
      ['uid-web', 'uid-dns'].every((u) => statusOf(k, u)?.phase === 'Running'),
    );
    await until(
      'inhibitor taken and logind watched',
      () => logind.calls.includes('inhibit') && logind.calls.includes('watch'),
    );
    assert.equal(k.nodeShutdownError(), undefined);

    logind.emit(true);
    await until('Ready error', () => k.nodeShutdownError() === 'node is shutting down');
    const webStatus = await until(
      'web stopped',
      () => statusOf(k, 'uid-web')?.reason === 'Shutdown' && statusOf(k, 'uid-web'),
    );
    assert.equal(webStatus.phase, 'Failed');
    assert.equal(
      statusOf(k, 'uid-dns')?.phase,
      'Running',
      'critical pods wait for their share of the grace period',
    );
    await until('dns stopped', () => statusOf(k, 'uid-dns')?.reason === 'Shutdown', 5_000);
    await until('containers stopped', () =>
      [...s.cri.containers.values()].every((c) => c.status.state !== 'CONTAINER_RUNNING'),
    );

    // As upstream's killPodNow: phase, reason and message only, so kubectl shows the reason.
    const after = statusOf(k, 'uid-web');
    assert.equal(after?.reason, 'Shutdown');
    assert.deepEqual(after?.containerStatuses, []);
    s.source.send([web, critical, makePod('late')]);
    const late = await until('late refused', () => statusOf(k, 'uid-late'));
    assert.equal(late.phase, 'Failed');
    assert.equal(late.reason, 'Shutdown');
  });

  void it('takes a pod through its whole life: Running, then killed and removed once its source drops it', async (t) => {
    const s = await fakeCriKubelet(t);
    const k = await s.start();
    const pod = makePod('web');
    s.source.send([pod]);
    const running = await until(
      'Running',
      () => statusOf(k, 'uid-web')?.phase === 'Running' && statusOf(k, 'uid-web'),
    );
    assert.equal(running.containerStatuses?.[0]?.ready, true);
    assert.equal(running.hostIP, '192.0.2.10');
    assert.equal(
      liveContainers(s.cri, 'uid-web').filter((c) => c.status.state === 'CONTAINER_RUNNING').length,
      1,
    );

    s.source.send([]);
    await until(
      'containers and sandbox removed',
      () => s.cri.containers.size === 0 && s.cri.sandboxes.size === 0,
    );
    await until('pod forgotten', () => k.pods().length === 0);
    assert.ok(s.cri.callsTo('stopContainer').length >= 1, 'the container was stopped before removal');
  });

  void it("reads a started pod's status once: the relist that sees it started neither reads it again nor makes its worker read it", async (t) => {
    const s = await fakeCriKubelet(t);
    const k = await s.start();
    s.source.send([makePod('web')]);
    await until('Running', () => statusOf(k, 'uid-web')?.phase === 'Running');
    const sandboxId = [...s.cri.sandboxes.keys()][0];
    // The worker's read after starting the container, and no other.
    const reads = () => s.cri.callsTo('containerStatus').length;
    assert.equal(reads(), 1);
    const relisted = s.cri.callsTo('listPodSandbox').length;
    await until('two more relists', () => s.cri.callsTo('listPodSandbox').length >= relisted + 2, 5_000);
    assert.equal(reads(), 1, 'no status read after the relists saw the pod started');
    assert.equal(s.cri.callsTo('podSandboxStatus').filter(([id]) => id === sandboxId).length <= 2, true);
  });

  void it("removes a dropped pod's log directory on the container GC's period", async (t) => {
    t.mock.timers.enable({ apis: ['setInterval'] });
    const s = await fakeCriKubelet(t);
    const k = await s.start();
    s.source.send([makePod('web')]);
    await until('Running', () => statusOf(k, 'uid-web')?.phase === 'Running');
    const logDir = join(s.dir, 'logs', 'ns_web_uid-web');
    assert.ok(existsSync(logDir));

    s.source.send([]);
    await until('containers and sandbox removed', () => s.cri.containers.size + s.cri.sandboxes.size === 0);
    assert.ok(existsSync(logDir), 'the kill path leaves the log directory to the GC');
    t.mock.timers.tick(60_000);
    await until('log directory removed', () => !existsSync(logDir));
  });

  void it('rejects a pod at admission: Failed with the reason and an event, never in the runtime', async (t) => {
    const s = await fakeCriKubelet(t);
    const k = await s.start();
    const pod = makePod('tuned', (p) => {
      p.spec.securityContext = { sysctls: [{ name: 'kernel.msgmax', value: '1' }] };
    });
    s.source.send([pod]);
    const status = await until('Failed', () => statusOf(k, 'uid-tuned'));
    assert.equal(status.phase, 'Failed');
    assert.equal(status.reason, 'SysctlForbidden');
    assert.ok(s.recorder.events.some((e) => e.pod === 'ns/tuned' && e.reason === 'SysctlForbidden'));
    await sleep(300);
    assert.equal(s.cri.callsTo('runPodSandbox').length, 0);
  });

  void it("removes a dropped pod's directory and volumes even while the runtime refuses to remove its container, and retries the removal", async (t) => {
    const s = await fakeCriKubelet(t);
    const k = await s.start();
    const pod = makePod('stuck', (p) => {
      p.spec.volumes = [{ name: 'scratch', emptyDir: {} }];
      p.spec.containers[0]!.volumeMounts = [{ name: 'scratch', mountPath: '/scratch' }];
    });
    s.source.send([pod]);
    await until('Running', () => statusOf(k, 'uid-stuck')?.phase === 'Running');
    const podDir = join(s.dir, 'pods', 'uid-stuck');
    assert.ok(existsSync(join(podDir, 'volumes')), 'the emptyDir was set up');

    // containerd 1.6 after a cancelled StartContainer (containerd#11037): RemoveContainer fails for good.
    s.cri.injectError('removeContainer', 'FAILED_PRECONDITION', {
      message: 'failed to delete containerd container: cannot delete running task: failed precondition',
    });
    s.source.send([]);
    await until('the pod directory removed while its container stays', () => !existsSync(podDir));
    assert.equal(liveContainers(s.cri, 'uid-stuck').length, 1, 'the runtime still holds the container');

    s.cri.clearErrors('removeContainer');
    await until(
      'the removal retried until it succeeds',
      () => s.cri.containers.size === 0 && s.cri.sandboxes.size === 0,
      15_000,
    );
  });

  void it('kills and removes a runtime pod no source claims, once every source has spoken (housekeeping)', async (t) => {
    const s = await fakeCriKubelet(t);
    const first = await s.start();
    s.source.send([makePod('left-behind')]);
    await until('Running', () => statusOf(first, 'uid-left-behind')?.phase === 'Running');
    await first.stop(); // a kubelet restart: its containers keep running

    assert.equal(liveContainers(s.cri, 'uid-left-behind').length, 1);
    s.source.send([]); // the manifest went away while the kubelet was down
    await s.start();
    await until(
      'the orphan removed',
      () => s.cri.containers.size === 0 && s.cri.sandboxes.size === 0,
      10_000,
    );
  });

  void it('removes an orphaned pod directory with a log line and a Node event; a failing one is a Warning once, retried until it goes', async (t) => {
    const events: { type: string; reason: string; message: string }[] = [];
    const nodeEvent = (type: string, reason: string, message: string) => {
      events.push({ type, reason, message });
    };
    // Pod directories left by pods deleted while the kubelet was down; the second one's teardown
    // fails twice (its CSI driver away), as the volume manager reports it.
    let failures = 2;
    const real = { dir: '' };
    const volumes = nullVolumeManager({
      async cleanUpPod(uid) {
        if (uid === 'stuck-uid' && failures-- > 0)
          throw new Error('tear down: CSI NodeUnpublishVolume: context deadline exceeded');
        await rm(join(real.dir, 'pods', uid), { recursive: true, force: true });
      },
    });
    const s = await fakeCriKubelet(t, { deps: { nodeEvent, managers: { volumes } } });
    real.dir = s.dir;
    for (const uid of ['gone-uid', 'stuck-uid'])
      await mkdir(join(s.dir, 'pods', uid, 'volumes', 'kubernetes.io~empty-dir', 'scratch'), {
        recursive: true,
      });
    await s.start();
    s.source.send([]);
    await untilWithin(15_000)('both orphaned directories removed', () =>
      !existsSync(join(s.dir, 'pods', 'gone-uid')) && !existsSync(join(s.dir, 'pods', 'stuck-uid'))
        ? true
        : undefined,
    );
    assert.deepEqual(
      events.map((e) => `${e.type} ${e.reason} ${e.message.includes('stuck-uid') ? 'stuck' : 'gone'}`).sort(),
      [
        'Normal OrphanedPodCleanedUp gone',
        'Normal OrphanedPodCleanedUp stuck',
        'Warning FailedOrphanedPodCleanup stuck',
      ],
      'one Warning for two failed passes',
    );
    assert.match(
      events.find((e) => e.type === 'Warning')?.message ?? '',
      /^Failed to clean up the directory of orphaned pod stuck-uid \(retried every housekeeping period\): .*context deadline exceeded$/,
    );
    assert.equal(
      events.find((e) => e.message.includes('gone-uid'))?.message,
      'Removed the directory of orphaned pod gone-uid (nothing mounted)',
    );
  });

  void it('tears down the volume mounts of a runtime pod no source claims (deleted while the kubelet was down) and tells it as a Node event', async (t) => {
    if (process.getuid?.() !== 0) return t.skip('mounts tmpfs: needs root');
    const events: { type: string; reason: string; message: string }[] = [];
    const nodeEvent = (type: string, reason: string, message: string) => {
      events.push({ type, reason, message });
    };
    const s = await fakeCriKubelet(t, { deps: { nodeEvent } });
    const first = await s.start();
    s.source.send([
      makePod('left-mounted', (p) => {
        p.spec.volumes = [{ name: 'scratch', emptyDir: { medium: 'Memory' } }];
        for (const c of p.spec.containers) c.volumeMounts = [{ name: 'scratch', mountPath: '/scratch' }];
      }),
    ]);
    await until('Running', () => statusOf(first, 'uid-left-mounted')?.phase === 'Running');
    const tmpfs = join(s.dir, 'pods', 'uid-left-mounted', 'volumes', 'kubernetes.io~empty-dir', 'scratch');
    assert.ok(await mountAt(tmpfs), 'the Memory emptyDir is a tmpfs mount');
    await first.stop(); // a kubelet restart: its containers and mounts stay
    s.source.send([]); // the pod went away while the kubelet was down
    await s.start();
    const ev = await until('the Node event', () => events.find((e) => e.reason === 'OrphanedPodCleanedUp'));
    assert.equal(ev.type, 'Normal');
    assert.match(
      ev.message,
      /^Removed the directory of orphaned pod .*uid-left-mounted.*, unmounting 1 volume mount\(s\): /,
    );
    assert.ok(ev.message.endsWith(tmpfs), ev.message);
    assert.equal(await mountAt(tmpfs), undefined);
    assert.equal(existsSync(join(s.dir, 'pods', 'uid-left-mounted')), false);
  });

  void it("keeps a static pod's mirror in step and writes the static pod's status to the mirror", async (t) => {
    const api = new FakeApi().respond(
      'PATCH',
      '/api/v1/namespaces/ns/pods/static-web/status',
      (req: { body: unknown }) => ({
        metadata: { name: 'static-web', namespace: 'ns', uid: 'mirror-uid' },
        status: (req.body as { status?: PodStatus }).status,
      }),
    );
    const reconciled: string[][] = [];
    let mirror: KubeletPod | undefined;
    const mirrorPods: MirrorPods = {
      setMirrors: (pods) => {
        mirror = pods[0];
      },
      mirrorFor: () => mirror,
      reconcile: (statics) => {
        reconciled.push(statics.map((p) => p.metadata.name));
        return Promise.resolve();
      },
    };
    const s = await fakeCriKubelet(t, { deps: { cluster: { api, mirrorPods } } });
    const k = await s.start();
    const staticPod = makePod('static-web', (p) => {
      p.metadata.annotations = { 'kubernetes.io/config.source': 'file' };
    });
    s.source.send([staticPod]);
    await until('Running', () => statusOf(k, 'uid-static-web')?.phase === 'Running');
    await until('a mirror pass with the static pod', () => reconciled.some((r) => r.includes('static-web')));
    assert.equal(api.requestsFor('PATCH').length, 0, 'no status written before the mirror exists');

    k.setMirrorPods([
      { metadata: { name: 'static-web', namespace: 'ns', uid: 'mirror-uid' }, spec: staticPod.spec },
    ]);
    const patch = await until('a status patch of the mirror', () => api.requestsFor('PATCH')[0]);
    assert.match(JSON.stringify(patch.body), /"phase":"Running"/);
    assert.match(JSON.stringify(patch.body), /mirror-uid/);
  });

  void it('deletes a terminated API pod with grace 0 after its containers stopped (graceful deletion)', async (t) => {
    const api = new FakeApi()
      .respond('PATCH', /\/status$/, { metadata: {} })
      .respond('DELETE', '/api/v1/namespaces/ns/pods/doomed', {});
    const mirrorPods: MirrorPods = {
      setMirrors: () => {},
      mirrorFor: () => undefined,
      reconcile: () => Promise.resolve(),
    };
    const s = await fakeCriKubelet(t, { deps: { cluster: { api, mirrorPods } }, sourceName: 'api' });
    const k = await s.start();
    const pod = makePod('doomed');
    s.source.send([pod]);
    await until('Running', () => statusOf(k, 'uid-doomed')?.phase === 'Running');
    s.source.send([
      {
        ...pod,
        metadata: {
          ...pod.metadata,
          deletionTimestamp: '2026-11-24T00:00:01Z',
          deletionGracePeriodSeconds: 1,
        },
      },
    ]);
    const del = await until('the final DELETE', () => api.requestsFor('DELETE')[0]);
    assert.deepEqual(del.body, {
      kind: 'DeleteOptions',
      apiVersion: 'v1',
      gracePeriodSeconds: 0,
      preconditions: { uid: 'uid-doomed' },
    });
    assert.equal(liveContainers(s.cri, 'uid-doomed').length, 0);
  });

  void it("records FailedUnMount when a deleted pod's volume teardown fails, retries it, and deletes the pod once it succeeds", async (t) => {
    const api = new FakeApi()
      .respond('PATCH', /\/status$/, { metadata: {} })
      .respond('DELETE', '/api/v1/namespaces/ns/pods/stuck', {});
    const mirrorPods: MirrorPods = {
      setMirrors: () => {},
      mirrorFor: () => undefined,
      reconcile: () => Promise.resolve(),
    };
    // A volume manager whose teardown fails once, as a CSI driver that is down does.
    let cleanups = 0;
    const volumes = nullVolumeManager({
      cleanUpPod: () =>
        ++cleanups === 1
          ? Promise.reject(new Error('CSI NodeUnpublishVolume: context deadline exceeded'))
          : Promise.resolve(),
    });
    const s = await fakeCriKubelet(t, {
      deps: { cluster: { api, mirrorPods }, managers: { volumes }, random: () => 0 },
      sourceName: 'api',
    });
    const k = await s.start();
    const pod = makePod('stuck');
    s.source.send([pod]);
    await until('Running', () => statusOf(k, 'uid-stuck')?.phase === 'Running');
    s.source.send([
      {
        ...pod,
        metadata: {
          ...pod.metadata,
          deletionTimestamp: '2026-11-24T00:00:01Z',
          deletionGracePeriodSeconds: 1,
        },
      },
    ]);
    const ev = await until('a FailedUnMount event', () =>
      s.recorder.events.find((e) => e.reason === 'FailedUnMount'),
    );
    assert.equal(ev.type, 'Warning');
    assert.match(
      ev.message,
      /^UnmountVolume\.TearDown failed: .*context deadline exceeded; will be retried$/,
    );
    assert.equal(api.requestsFor('DELETE').length, 0, 'no final delete while the volumes are mounted');
    // The retry comes with the resync after an error (10 s, no jitter here).
    await untilWithin(20_000)(
      'the final DELETE after the retried teardown',
      () => api.requestsFor('DELETE')[0],
    );
    assert.equal(cleanups, 2);
  });

  void it('run-once admits, syncs each pod until its containers run, and reports per pod', async (t) => {
    const s = await fakeCriKubelet(t);
    const k = await s.make();
    s.source.send([
      makePod('once'),
      makePod('refused', (p) => {
        p.spec.securityContext = { sysctls: [{ name: 'kernel.msgmax', value: '1' }] };
      }),
    ]);
    const results = await k.runOnce({ sourceTimeoutMs: 2_000, signal: AbortSignal.timeout(20_000) });
    const byPod = Object.fromEntries(results.map((r) => [r.pod, r]));
    assert.equal(byPod['ns/once']?.ok, true);
    assert.equal(byPod['ns/once']?.detail, 'running');
    assert.equal(byPod['ns/refused']?.ok, false);
    assert.match(byPod['ns/refused']?.detail ?? '', /SysctlForbidden/);
    assert.equal(liveContainers(s.cri, 'uid-refused').length, 0);
    assert.ok(s.recorder.events.some((e) => e.pod === 'ns/refused' && e.reason === 'SysctlForbidden'));
  });
});
