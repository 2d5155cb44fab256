import { describe, it, beforeEach, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtemp, readFile, readdir, readlink, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KubeletPod, Volume, VolumeMount } from '../api/types.ts';
import { createMemoryRecorder } from '../api/events.ts';
import { recordingLogger, flush } from '../util/testing.ts';
import { createVolumeManager, projectedVolumePath, type VolumeManager } from './volume-manager.ts';
import { unmountAllUnder } from './mounts.ts';
import { createPodSerializer } from './live-updates.ts';
import { b64, fakeObjectSource, volumePod, type FakeObjectSource } from './testing.ts';
import { untilWithin } from '../../test/kit/poll.ts';

const run = promisify(execFile);

let seq = 0;
function podWith(volumes: Volume[], mounts?: VolumeMount[], labels?: Record<string, string>): KubeletPod {
  seq += 1;
  return volumePod(`p${seq}`, `live-${seq}`, volumes, mounts, labels ? { labels } : {});
}

/** Polls `check` until it holds (the refresh runs on its own, with real file I/O), or fails after 2 s. */
const until = untilWithin(2_000, { intervalMs: 10 });

const dataDirs = async (dir: string) => (await readdir(dir)).filter((n) => /^\.\.\d/.test(n));
const conf = (v: string, rv: string) => ({
  metadata: { name: 'conf', resourceVersion: rv },
  data: { 'app.conf': v },
});

describe('live updates of configMap, secret, projected and downwardAPI volumes', () => {
  let root = '';
  let objects: FakeObjectSource;
  let recorder: ReturnType<typeof createMemoryRecorder>;
  let logger: ReturnType<typeof recordingLogger>;
  let vm: VolumeManager;

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'live-volumes-'));
    objects = fakeObjectSource();
    objects.configMaps.set('ns/conf', conf('v1', '1'));
    objects.secrets.set('ns/creds', {
      metadata: { name: 'creds', resourceVersion: '1' },
      data: { pass: b64('p1') },
    });
    recorder = createMemoryRecorder();
    logger = recordingLogger();
    vm = createVolumeManager({ rootDir: root, objects, recorder, logger, tmpfs: false });
  });
  afterEach(async () => {
    await unmountAllUnder(root);
    await rm(root, { recursive: true, force: true });
  });

  const written = () => logger.lines.filter((l) => l.msg === 'volume content written').length;

  it('re-projects on every setup but writes only when the payload changed', async () => {
    const pod = podWith([{ name: 'conf', configMap: { name: 'conf' } }]);
    const dir = projectedVolumePath(root, pod.metadata.uid, 'configMap', 'conf');
    await vm.setUpPodVolumes(pod);
    const first = await readlink(join(dir, '..data'));
    for (let i = 0; i < 5; i++) await vm.setUpPodVolumes(pod);
    assert.equal(await readlink(join(dir, '..data')), first, 'no new version for the same content');
    assert.equal(written(), 1);
    assert.equal(objects.calls.length, 6, 'the object is read on every setup');

    objects.configMaps.set('ns/conf', conf('v2', '2'));
    await vm.setUpPodVolumes(pod);
    assert.notEqual(await readlink(join(dir, '..data')), first);
    assert.equal(await readFile(join(dir, 'app.conf'), 'utf8'), 'v2');
    assert.deepEqual(await dataDirs(dir), [await readlink(join(dir, '..data'))], 'the old version is gone');
    assert.equal(written(), 2);
  });

  it('rewrites downwardAPI labels and annotations files from the pod it is given', async () => {
    const items = [
      { path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } },
      { path: 'tier', fieldRef: { fieldPath: "metadata.labels['tier']" } },
      { path: 'annotations', fieldRef: { fieldPath: 'metadata.annotations' } },
    ];
    const pod = podWith(
      [
        { name: 'info', downwardAPI: { items } },
        {
          name: 'all',
          projected: { sources: [{ downwardAPI: { items } }, { configMap: { name: 'conf' } }] },
        },
      ],
      undefined,
      { app: 'web', tier: 'front' },
    );
    await vm.setUpPodVolumes(pod);
    const info = projectedVolumePath(root, pod.metadata.uid, 'downwardAPI', 'info');
    const all = projectedVolumePath(root, pod.metadata.uid, 'projected', 'all');
    assert.equal(await readFile(join(info, 'labels'), 'utf8'), 'app="web"\ntier="front"');

    const updated: KubeletPod = {
      ...pod,
      metadata: { ...pod.metadata, labels: { app: 'web', tier: 'back' }, annotations: { note: 'hi' } },
    };
    await vm.setUpPodVolumes(updated);
    for (const dir of [info, all]) {
      assert.equal(await readFile(join(dir, 'labels'), 'utf8'), 'app="web"\ntier="back"');
      assert.equal(await readFile(join(dir, 'tier'), 'utf8'), 'back');
      assert.equal(await readFile(join(dir, 'annotations'), 'utf8'), 'note="hi"');
    }
    assert.equal(await readFile(join(all, 'app.conf'), 'utf8'), 'v1');
  });

  it('keeps the last content when the object is deleted, records FailedMount, and lets the sync go on', async () => {
    const pod = podWith([
      { name: 'conf', configMap: { name: 'conf' } },
      { name: 'creds', secret: { secretName: 'creds', items: [{ key: 'pass', path: 'pass' }] } },
    ]);
    await vm.setUpPodVolumes(pod);
    objects.configMaps.delete('ns/conf');
    objects.secrets.set('ns/creds', {
      metadata: { name: 'creds', resourceVersion: '2' },
      data: { other: b64('x') },
    });
    await vm.setUpPodVolumes(pod); // does not throw
    const uid = pod.metadata.uid;
    assert.equal(
      await readFile(join(projectedVolumePath(root, uid, 'configMap', 'conf'), 'app.conf'), 'utf8'),
      'v1',
    );
    assert.equal(
      await readFile(join(projectedVolumePath(root, uid, 'secret', 'creds'), 'pass'), 'utf8'),
      'p1',
    );
    assert.deepEqual(
      recorder.events.map((e) => `${e.type} ${e.reason}`),
      ['Warning FailedMount', 'Warning FailedMount'],
    );
    assert.match(
      recorder.events[0]?.message ?? '',
      /MountVolume\.SetUp failed: .*configMap "conf" not found/,
    );
    assert.match(recorder.events[1]?.message ?? '', /has no key "pass"/);
    assert.ok(
      logger.lines.some((l) => l.level === 'warn' && l.fields.podUID === uid && l.fields.volume === 'conf'),
    );

    objects.configMaps.set('ns/conf', conf('v3', '3'));
    await vm.setUpPodVolumes(pod);
    assert.equal(
      await readFile(join(projectedVolumePath(root, uid, 'configMap', 'conf'), 'app.conf'), 'utf8'),
      'v3',
    );
  });

  it('empties an optional volume whose object was deleted, as upstream does', async () => {
    const pod = podWith([{ name: 'conf', configMap: { name: 'conf', optional: true } }]);
    const dir = projectedVolumePath(root, pod.metadata.uid, 'configMap', 'conf');
    await vm.setUpPodVolumes(pod);
    objects.configMaps.delete('ns/conf');
    await vm.setUpPodVolumes(pod);
    assert.deepEqual(
      (await readdir(dir)).filter((n) => !n.startsWith('..')),
      [],
    );
    assert.equal(recorder.events.length, 0);
  });

  it('keeps content written by an earlier kubelet when the object is gone after a restart', async () => {
    const pod = podWith([{ name: 'conf', configMap: { name: 'conf' } }]);
    await vm.setUpPodVolumes(pod);
    objects.configMaps.delete('ns/conf');
    const restarted = createVolumeManager({ rootDir: root, objects, recorder, tmpfs: false });
    await restarted.setUpPodVolumes(pod);
    const dir = projectedVolumePath(root, pod.metadata.uid, 'configMap', 'conf');
    assert.equal(await readFile(join(dir, 'app.conf'), 'utf8'), 'v1');
    assert.equal(recorder.events.length, 1);
  });

  it('still fails the first setup of a volume whose object is missing', async () => {
    const pod = podWith([{ name: 'conf', configMap: { name: 'absent' } }]);
    await assert.rejects(vm.setUpPodVolumes(pod), /configMap "absent" not found/);
    assert.equal(recorder.events.length, 0, 'the sync handler reports a failed first mount');
  });

  it('leaves a subPath bind of a key with the content it had when mounted', async () => {
    const pod = podWith(
      [{ name: 'conf', configMap: { name: 'conf' } }],
      [{ name: 'conf', mountPath: '/etc/app.conf', subPath: 'app.conf' }],
    );
    await vm.setUpPodVolumes(pod);
    const [mount] = await vm.mountsFor(pod, pod.spec.containers[0] ?? { name: '' });
    const target = join(root, 'container-view');
    await writeFile(target, '');
    // What the runtime does with the mount: a bind of the host path (its symlink resolved).
    await run('mount', ['--bind', mount?.hostPath ?? '', target]);
    try {
      objects.configMaps.set('ns/conf', conf('v2', '2'));
      await vm.setUpPodVolumes(pod);
      const dir = projectedVolumePath(root, pod.metadata.uid, 'configMap', 'conf');
      assert.equal(await readFile(join(dir, 'app.conf'), 'utf8'), 'v2', 'the volume is updated');
      assert.equal(await readFile(target, 'utf8'), 'v1', 'the subPath mount is not');
    } finally {
      await run('umount', [target]);
    }
  });

  it('refreshes the volumes of pods that project a changed object at once, and no others', async () => {
    const user = podWith([{ name: 'conf', configMap: { name: 'conf' } }]);
    const other = podWith([{ name: 'creds', secret: { secretName: 'creds' } }]);
    await vm.setUpPodVolumes(user);
    await vm.setUpPodVolumes(other);
    objects.calls.length = 0;
    objects.configMaps.set('ns/conf', conf('v2', '2'));
    objects.changed({ kind: 'configMap', namespace: 'ns', name: 'conf' });
    objects.changed({ kind: 'configMap', namespace: 'ns', name: 'conf' }); // coalesced
    objects.changed({ kind: 'configMap', namespace: 'elsewhere', name: 'conf' });
    const dir = projectedVolumePath(root, user.metadata.uid, 'configMap', 'conf');
    await until('the refresh', async () => (await readFile(join(dir, 'app.conf'), 'utf8')) === 'v2');
    await new Promise((r) => setTimeout(r, 50)); // room for a wrong second refresh to show
    assert.deepEqual(objects.calls, ['configMap ns/conf'], 'one read, for the pod that projects it');
  });

  it('refreshes nothing for a pod whose volumes were cleaned up', async () => {
    const pod = podWith([{ name: 'conf', configMap: { name: 'conf' } }]);
    await vm.setUpPodVolumes(pod);
    await vm.cleanUpPod(pod.metadata.uid);
    objects.calls.length = 0;
    objects.changed({ kind: 'configMap', namespace: 'ns', name: 'conf' });
    await new Promise((r) => setTimeout(r, 100)); // room for a wrong refresh to show
    assert.deepEqual(objects.calls, []);
    await assert.rejects(readdir(join(root, 'pods', pod.metadata.uid)), { code: 'ENOENT' });
  });
});

describe('one volume setup at a time per pod', () => {
  it('runs work for the same pod in order and work for other pods alongside', async () => {
    const serial = createPodSerializer();
    const order: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const a1 = serial.run('a', async () => {
      await gate;
      order.push('a1');
    });
    const a2 = serial.run('a', () => Promise.resolve(order.push('a2')));
    const b1 = serial.run('b', () => Promise.resolve(order.push('b1')));
    await b1;
    assert.deepEqual(order, ['b1']);
    release();
    await Promise.all([a1, a2]);
    assert.deepEqual(order, ['b1', 'a1', 'a2']);
  });

  it('skips queued work whose caller gave up, and rejects at once', async () => {
    const serial = createPodSerializer();
    let release!: () => void;
    const first = serial.run('a', () => new Promise<void>((r) => (release = r)));
    const ac = new AbortController();
    let ran = false;
    const second = serial.run(
      'a',
      () => {
        ran = true;
        return Promise.resolve();
      },
      ac.signal,
    );
    ac.abort();
    await assert.rejects(second);
    release();
    await first;
    await flush();
    assert.equal(ran, false);
  });
});
