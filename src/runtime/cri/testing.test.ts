import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { hasCode } from '../../util/errors.ts';
import { flush } from '../../util/testing.ts';
import { CriError } from './errors.ts';
import { FakeImageService, FakeRuntimeService, normalizeImageRef } from './testing.ts';
import type { PodSandboxConfig } from './types.ts';

const T0 = Date.parse('2026-01-10T08:00:00Z');

function sandboxConfig(uid: string, attempt = 0, hostNetwork = false): PodSandboxConfig {
  return {
    metadata: { name: `pod-${uid}`, namespace: 'ns', uid, attempt },
    logDirectory: `/var/log/pods/ns_pod-${uid}_${uid}`,
    labels: { 'io.kubernetes.pod.uid': uid },
    ...(hostNetwork
      ? { linux: { securityContext: { namespaceOptions: { network: 'NODE' as const } } } }
      : {}),
  };
}

async function podWith(cri: FakeRuntimeService, uid: string, names: string[]) {
  const sb = sandboxConfig(uid);
  const sandboxId = await cri.runPodSandbox(sb);
  const ids: string[] = [];
  for (const name of names) {
    const id = await cri.createContainer(
      sandboxId,
      {
        metadata: { name, attempt: 0 },
        image: { image: 'sha256:img' },
        labels: { 'io.kubernetes.pod.uid': uid, 'io.kubernetes.container.name': name },
        logPath: `${name}/0.log`,
      },
      sb,
    );
    await cri.startContainer(id);
    ids.push(id);
  }
  return { sandboxId, ids };
}

function fake(t: TestContext) {
  t.mock.timers.enable({ apis: ['setTimeout', 'Date'], now: T0 });
  return new FakeRuntimeService();
}

describe('FakeRuntimeService: containerd’s lifecycle', () => {
  it('creates, starts, stops and removes containers with their timestamps, log path and exit code', async (t) => {
    const cri = fake(t);
    const { sandboxId, ids } = await podWith(cri, 'u1', ['app']);
    const id = ids[0]!;
    let s = await cri.containerStatus(id);
    assert.equal(s.state, 'CONTAINER_RUNNING');
    assert.equal(s.createdAt, T0 * 1e6);
    assert.equal(s.startedAt, T0 * 1e6);
    assert.equal(s.logPath, '/var/log/pods/ns_pod-u1_u1/app/0.log');
    assert.equal((await cri.podSandboxStatus(sandboxId)).network?.ip, '10.88.0.2');

    t.mock.timers.tick(5_000);
    await cri.stopContainer(id, 10);
    s = await cri.containerStatus(id);
    assert.deepEqual(
      [s.state, s.exitCode, s.reason, s.finishedAt],
      ['CONTAINER_EXITED', 143, 'Error', (T0 + 5_000) * 1e6],
    );
    await cri.stopContainer(id, 10); // already stopped: nothing to do
    await cri.removeContainer(id);
    await cri.removeContainer(id); // already gone: idempotent
    await assert.rejects(cri.containerStatus(id), (err: unknown) => hasCode(err, 'NotFound'));
    await assert.rejects(cri.stopContainer(id, 0), (err: unknown) => hasCode(err, 'NotFound'));
  });

  it('reserves names: the same sandbox or container metadata twice is AlreadyExists', async (t) => {
    const cri = fake(t);
    const { sandboxId } = await podWith(cri, 'u1', ['app']);
    await assert.rejects(cri.runPodSandbox(sandboxConfig('u1')), (err: unknown) =>
      hasCode(err, 'AlreadyExists'),
    );
    await assert.rejects(
      cri.createContainer(
        sandboxId,
        { metadata: { name: 'app', attempt: 0 }, image: { image: 'x' } },
        sandboxConfig('u1'),
      ),
      (err: unknown) => hasCode(err, 'AlreadyExists'),
    );
    await cri.runPodSandbox(sandboxConfig('u1', 1));
  });

  it('stopping a sandbox SIGKILLs its live containers; removing it removes them', async (t) => {
    const cri = fake(t);
    const a = await podWith(cri, 'u1', ['app', 'proxy']);
    const b = await podWith(cri, 'u2', ['app']);
    await cri.stopPodSandbox(a.sandboxId);
    assert.equal((await cri.podSandboxStatus(a.sandboxId)).state, 'SANDBOX_NOTREADY');
    for (const id of a.ids) assert.equal((await cri.containerStatus(id)).exitCode, 137);
    assert.equal((await cri.containerStatus(b.ids[0]!)).state, 'CONTAINER_RUNNING');
    await assert.rejects(cri.startContainer(a.ids[0]!), /is in CONTAINER_EXITED state/);

    await cri.removePodSandbox(a.sandboxId);
    await cri.removePodSandbox(a.sandboxId);
    await assert.rejects(cri.stopPodSandbox(a.sandboxId), (err: unknown) => hasCode(err, 'NotFound'));
    assert.deepEqual([...cri.containers.keys()], b.ids);
    assert.deepEqual([...cri.sandboxes.keys()], [b.sandboxId]);
  });

  it('a host-network sandbox has no IP', async (t) => {
    const cri = fake(t);
    const id = await cri.runPodSandbox(sandboxConfig('u1', 0, true));
    const s = await cri.podSandboxStatus(id);
    assert.equal(s.network?.ip, '');
    assert.equal(s.linux?.namespaces?.options?.network, 'NODE');
  });

  it('filters lists by id, state, sandbox and labels, as CRI does', async (t) => {
    const cri = fake(t);
    const a = await podWith(cri, 'u1', ['app', 'proxy']);
    const b = await podWith(cri, 'u2', ['app']);
    cri.exitContainer(a.ids[1]!, 1, 'OOMKilled');
    cri.setSandboxNotReady(b.sandboxId);
    const ids = (xs: { id: string }[]) => xs.map((x) => x.id);
    assert.deepEqual(
      ids(await cri.listContainers({ labelSelector: { 'io.kubernetes.pod.uid': 'u1' } })),
      a.ids,
    );
    assert.deepEqual(ids(await cri.listContainers({ state: { state: 'CONTAINER_EXITED' } })), [a.ids[1]]);
    assert.deepEqual(ids(await cri.listContainers({ podSandboxId: b.sandboxId })), b.ids);
    assert.deepEqual(ids(await cri.listContainers({ id: b.ids[0]! })), b.ids);
    assert.deepEqual(ids(await cri.listPodSandbox({ state: { state: 'SANDBOX_READY' } })), [a.sandboxId]);
    assert.deepEqual(ids(await cri.listPodSandbox({ labelSelector: { 'io.kubernetes.pod.uid': 'u2' } })), [
      b.sandboxId,
    ]);
    assert.equal((await cri.containerStatus(a.ids[1]!)).reason, 'OOMKilled');
    assert.deepEqual(
      (await cri.listPodSandboxStats()).map((s) => s.linux?.containers.length),
      [2],
      'stats of ready sandboxes, with their containers',
    );
    (await cri.listContainers())[0]!.labels.x = 'changed';
    assert.equal(cri.containers.get(a.ids[0]!)?.status.labels.x, undefined, 'answers are copies');
  });

  it('exec, attach and port-forward answer with URLs for running containers and ready sandboxes', async (t) => {
    const cri = fake(t);
    const { sandboxId, ids } = await podWith(cri, 'u1', ['app']);
    const flags = { stdin: false, stdout: true, stderr: true, tty: false };
    assert.match(await cri.exec(ids[0]!, ['ls'], flags), /^http:\/\/127\.0\.0\.1:10010\/exec\/\d+$/);
    assert.match(await cri.attach(ids[0]!, flags), /\/attach\//);
    assert.match(await cri.portForward(sandboxId, [80]), /\/portforward\//);
    await assert.rejects(
      cri.exec(ids[0]!, ['ls'], { ...flags, stdout: false, stderr: false }),
      (err: unknown) => hasCode(err, 'InvalidArgument'),
    );
    assert.equal((await cri.execSync(ids[0]!, ['true'], 5)).exitCode, 0);
    cri.exitContainer(ids[0]!, 0);
    await assert.rejects(cri.execSync(ids[0]!, ['true'], 5), /CONTAINER_EXITED/);
    await assert.rejects(cri.reopenContainerLog(ids[0]!), /CONTAINER_EXITED/);
  });
});

describe('FakeRuntimeService: injected behaviour', () => {
  it('logs every call with its arguments and options', async (t) => {
    const cri = fake(t);
    const signal = new AbortController().signal;
    await cri.version();
    await cri.listPodSandbox({ id: 'x' }, { signal });
    assert.deepEqual(cri.called(), ['version', 'listPodSandbox']);
    assert.deepEqual(cri.callsTo('listPodSandbox'), [[{ id: 'x' }]]);
    assert.equal(cri.calls[1]?.opts?.signal, signal);
  });

  it('throws injected errors in order: a once error for one call, any other until cleared', async (t) => {
    const cri = fake(t);
    cri.injectError('status', 'UNAVAILABLE', { once: true, message: 'connection refused' });
    cri.injectError('status', new Error('plain'));
    await assert.rejects(cri.status(), (err: unknown) => {
      assert.ok(err instanceof CriError);
      assert.equal(err.message, 'CRI Status: connection refused');
      return err.code === 'Unavailable';
    });
    await assert.rejects(cri.status(), /^Error: plain$/);
    await assert.rejects(cri.status(), /^Error: plain$/);
    cri.clearErrors('status');
    assert.equal((await cri.status()).conditions.length, 2);
  });

  it('fails before changing anything', async (t) => {
    const cri = fake(t);
    cri.injectError('runPodSandbox', 'DEADLINE_EXCEEDED');
    await assert.rejects(cri.runPodSandbox(sandboxConfig('u1')), (err: unknown) =>
      hasCode(err, 'DeadlineExceeded'),
    );
    assert.equal(cri.sandboxes.size, 0);
  });

  it('waits its latency on the clock; an abort rejects at once with Canceled, like the real client', async (t) => {
    const cri = fake(t);
    cri.setLatency('version', 1_000);
    let answered = false;
    const slow = cri.version().then(() => (answered = true));
    t.mock.timers.tick(999);
    await flush();
    assert.equal(answered, false);
    t.mock.timers.tick(1);
    await slow;

    cri.setLatency('version', Infinity);
    const ctl = new AbortController();
    const blocked = cri.version({ signal: ctl.signal });
    ctl.abort(new Error('pod deleted'));
    await assert.rejects(blocked, (err: unknown) => {
      assert.ok(err instanceof CriError);
      assert.equal(err.message, 'CRI Version: canceled: pod deleted');
      return err.code === 'Canceled';
    });
    await assert.rejects(cri.version({ signal: ctl.signal }), /canceled before start/);
  });

  it('gives up at the call’s deadline with DeadlineExceeded', async (t) => {
    const cri = fake(t);
    cri.setLatency('listContainers', Infinity);
    const blocked = cri.listContainers(undefined, { timeoutMs: 2_000 });
    t.mock.timers.tick(2_000);
    await assert.rejects(blocked, (err: unknown) => {
      assert.ok(err instanceof CriError);
      assert.match(err.message, /deadline 2000 ms/);
      return err.code === 'DeadlineExceeded';
    });
  });

  it('takes its timestamps and waits from an injected clock', async () => {
    let now = 5_000;
    const sleeps: number[] = [];
    const clock = {
      now: () => now,
      sleep: (ms: number) => {
        sleeps.push(ms);
        now += ms;
        return Promise.resolve();
      },
    };
    const cri = new FakeRuntimeService({ clock });
    cri.setLatency('runPodSandbox', 250);
    const id = await cri.runPodSandbox(sandboxConfig('u1'));
    assert.equal((await cri.podSandboxStatus(id)).createdAt, 5_250 * 1e6);
    assert.deepEqual(sleeps, [250]);
  });

  it('a container that ignores SIGTERM takes the whole grace period to stop', async (t) => {
    const cri = fake(t);
    const { ids } = await podWith(cri, 'u1', ['app']);
    cri.ignoreSigterm.add('app');
    let stopped = false;
    const stop = cri.stopContainer(ids[0]!, 3).then(() => (stopped = true));
    await flush();
    t.mock.timers.tick(2_999);
    await flush();
    assert.equal(stopped, false);
    t.mock.timers.tick(1);
    await stop;
    assert.equal((await cri.containerStatus(ids[0]!)).exitCode, 137);
  });
});

describe('FakeImageService', () => {
  it('normalizes references as docker does', () => {
    assert.equal(normalizeImageRef('busybox'), 'docker.io/library/busybox:latest');
    assert.equal(normalizeImageRef('team/app:v1'), 'docker.io/team/app:v1');
    assert.equal(normalizeImageRef('localhost:5000/app'), 'localhost:5000/app:latest');
    assert.equal(
      normalizeImageRef(`quay.io/app@sha256:${'a'.repeat(64)}`),
      `quay.io/app@sha256:${'a'.repeat(64)}`,
    );
  });

  it('pulls an image into the store, finds it by tag, ID or digest, and removes it', async () => {
    const images = new FakeImageService();
    assert.equal(await images.imageStatus({ image: 'busybox:1.29' }), null);
    const id = await images.pullImage({ image: 'busybox:1.29' }, { username: 'u', password: 'p' });
    assert.deepEqual(images.callsTo('pullImage')[0]?.[1], { username: 'u', password: 'p' });
    const img = await images.imageStatus({ image: 'docker.io/library/busybox:1.29' });
    assert.equal(img?.id, id);
    assert.equal((await images.imageStatus({ image: id }))?.id, id);
    assert.equal((await images.imageStatus({ image: img.repoDigests[0]! }))?.id, id);
    assert.equal(await images.pullImage({ image: 'busybox:1.29' }), id, 'a second pull finds it');
    images.addImage('nginx', { size: 5 });
    assert.equal((await images.listImages()).length, 2);
    assert.equal((await images.imageFsInfo())[0]?.usedBytes?.value, 1_000_005);
    await images.removeImage({ image: 'busybox:1.29' });
    await images.removeImage({ image: 'busybox:1.29' });
    assert.deepEqual(
      (await images.listImages()).map((i) => i.repoTags),
      [['docker.io/library/nginx:latest']],
    );
  });
});
