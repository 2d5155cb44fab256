import assert from 'node:assert/strict';
import { chmod, mkdir, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { PodStatus } from '../api/types.ts';
import { recordingLogger } from '../util/testing.ts';
import type { Kubelet } from './kubelet.ts';
import { setupDataDirs } from './data-dirs.ts';
import { fakeCriKubelet, sourcedPod, untilWithin } from './testing.ts';

const until = untilWithin(8_000);
const modeOf = async (p: string) => (await stat(p)).mode & 0o7777;
const statusOf = (k: Kubelet, uid: string): PodStatus | undefined =>
  k.pods().find((p) => p.pod.metadata.uid === uid)?.status;

// A umask of 000 for the whole file: every mode below is the one the kubelet asked for, not the
// umask's doing (with the usual 022 a directory made without a mode is 0755, readable by all).
let umask = 0;
before(() => void (umask = process.umask(0)));
after(() => void process.umask(umask));

describe('the kubelet data directories', () => {
  it('are made 0750 on a fresh root dir: the root, pods/, the state dir and the pod logs dir', async () => {
    const base = await mkdtemp(join(tmpdir(), 'tsk-datadirs-'));
    try {
      const root = join(base, 'var', 'lib', 'tskubelet');
      const logs = join(base, 'var', 'log', 'pods');
      const log = recordingLogger();
      await setupDataDirs({ rootDir: root, podLogsDir: logs }, log);
      for (const d of [root, join(root, 'pods'), join(root, 'tskubelet'), logs]) {
        assert.equal(await modeOf(d), 0o750, d);
      }
      assert.deepEqual(
        log.lines.filter((l) => l.level === 'warn'),
        [],
        'nothing to tighten on a fresh root',
      );
    } finally {
      await rm(base, { recursive: true, force: true });
    }
  });

  it('tightens an existing root dir and pods/ left open to others, warning with the old mode', async () => {
    const base = await mkdtemp(join(tmpdir(), 'tsk-datadirs-'));
    try {
      const root = join(base, 'root');
      await mkdir(join(root, 'pods'), { recursive: true });
      await chmod(root, 0o755);
      await chmod(join(root, 'pods'), 0o777);
      const tight = join(base, 'logs');
      await mkdir(tight, { mode: 0o700 });
      const log = recordingLogger();
      await setupDataDirs({ rootDir: root, podLogsDir: tight }, log);
      assert.equal(await modeOf(root), 0o750);
      assert.equal(await modeOf(join(root, 'pods')), 0o750);
      assert.equal(await modeOf(tight), 0o700, 'a stricter directory is left as it is');
      const warned = log.lines.filter((l) => l.level === 'warn').map((l) => l.fields);
      assert.deepEqual(warned, [
        { dir: root, mode: '0755', now: '0750' },
        { dir: join(root, 'pods'), mode: '0777', now: '0750' },
      ]);
    } finally {
      await rm(base, { recursive: true, force: true });
    }
  });

  it('refuse a root dir that is a file, naming it', async () => {
    const base = await mkdtemp(join(tmpdir(), 'tsk-datadirs-'));
    try {
      const root = join(base, 'root');
      await writeFile(root, '');
      await assert.rejects(
        setupDataDirs({ rootDir: root, podLogsDir: join(base, 'logs') }, recordingLogger()),
        {
          name: 'KubeletError',
          message: new RegExp(`^make kubelet directory ${root}: `),
        },
      );
    } finally {
      await rm(base, { recursive: true, force: true });
    }
  });

  it('keep a pod’s directories private from the first sync, even in a root dir that was 0755 (the serving certificate no longer makes it 0700 by chance)', async (t) => {
    const s = await fakeCriKubelet(t);
    await chmod(s.dir, 0o755);
    const k = await s.start();
    const pod = sourcedPod('web', {
      containers: [{ name: 'app', volumeMounts: [{ name: 'scratch', mountPath: '/s' }] }],
      volumes: [{ name: 'scratch', emptyDir: {} }],
    });
    s.source.send([pod]);
    await until('web Running', () => statusOf(k, 'uid-web')?.phase === 'Running');
    const podDir = join(s.dir, 'pods', 'uid-web');
    for (const d of [
      s.dir,
      join(s.dir, 'pods'),
      podDir,
      join(podDir, 'volumes'),
      join(podDir, 'volumes', 'kubernetes.io~empty-dir'),
      join(podDir, 'containers'),
      join(s.dir, 'logs'),
      join(s.dir, 'logs', 'ns_web_uid-web'),
      join(s.dir, 'logs', 'ns_web_uid-web', 'app'),
    ]) {
      assert.equal(await modeOf(d), 0o750, d);
    }
    assert.equal(
      await modeOf(join(podDir, 'volumes', 'kubernetes.io~empty-dir', 'scratch')),
      0o777,
      'the emptyDir itself stays writable by any container user (upstream perm)',
    );
  });
});
