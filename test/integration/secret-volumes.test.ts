/**
 * Kubelet-written volumes on real containerd, in standalone mode (no API server): downwardAPI and
 * emptyDir medium Memory work; secret volumes fail with a FailedMount event that says why. Secret,
 * configMap and projected content is covered by src/volume unit tests until cluster mode wires a
 * VolumeObjectSource into the kubelet.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { IMAGE, podManifest, removeManifest, writeManifest } from '../kit/bed.ts';
import { eventually } from '../kit/poll.ts';
import { findPod, useKubelet, waitForPhase } from './support.ts';
import { projectedVolumePath, writeAtomically } from '../../src/volume/index.ts';

describe('kubelet-written volumes on real containerd (standalone)', () => {
  const t = useKubelet();

  it('projects a downwardAPI volume read-only on tmpfs, and unmounts it with the pod', async () => {
    const out = join(t.env.dir, 'info-out');
    const script = [
      'cat /podinfo/name > /out/name',
      'cat /podinfo/meta/labels > /out/labels',
      '(touch /podinfo/x 2>/dev/null && echo writable || echo readonly) > /out/ro',
      'grep " /podinfo " /proc/mounts > /out/podinfo-mount',
      'grep " /mem " /proc/mounts > /out/mem-mount',
      'echo done > /out/done',
      'while :; do cat /podinfo/name > /out/live.tmp; mv /out/live.tmp /out/live; sleep 1; done',
    ].join('; ');
    const pod = podManifest('info', {
      volumes: [
        {
          name: 'podinfo',
          downwardAPI: {
            items: [
              { path: 'name', fieldRef: { fieldPath: 'metadata.name' } },
              { path: 'meta/labels', fieldRef: { fieldPath: 'metadata.labels' } },
            ],
          },
        },
        { name: 'mem', emptyDir: { medium: 'Memory', sizeLimit: '4Mi' } },
        { name: 'out', hostPath: { path: out, type: 'DirectoryOrCreate' } },
      ],
      containers: [
        {
          name: 'main',
          image: IMAGE,
          command: ['sh', '-c', script],
          volumeMounts: [
            { name: 'podinfo', mountPath: '/podinfo' },
            { name: 'mem', mountPath: '/mem' },
            { name: 'out', mountPath: '/out' },
          ],
        },
      ],
    });
    pod.metadata.labels = { app: 'demo', tier: 'web' };
    await writeManifest(t.env, 'info.yaml', pod);
    const view = await waitForPhase(t.k.kubelet, 'info', 'Running');
    await eventually('container wrote its findings', async () =>
      (await readFile(join(out, 'done'), 'utf8').catch(() => '')) ? true : undefined,
    );
    const read = (f: string) => readFile(join(out, f), 'utf8');
    assert.equal(await read('name'), view.pod.metadata.name);
    assert.equal(await read('labels'), 'app="demo"\ntier="web"');
    assert.equal(await read('ro'), 'readonly\n');
    assert.match(await read('podinfo-mount'), /^tmpfs \/podinfo tmpfs ro[ ,]/);
    assert.match(await read('mem-mount'), /^tmpfs \/mem tmpfs rw[ ,].*size=4096k/);

    const uid = view.pod.metadata.uid ?? '';
    const podDir = join(t.env.rootDir, 'pods', uid);

    // A new version written on the host shows up in the running container (tmpfs bind mount +
    // `..data` switch), as secret and configMap updates will.
    const volDir = projectedVolumePath(t.env.rootDir, uid, 'downwardAPI', 'podinfo');
    const file = (text: string) => ({ data: Buffer.from(text), mode: 0o644 });
    await writeAtomically(
      volDir,
      new Map([
        ['name', file('renamed')],
        ['meta/labels', file('')],
      ]),
    );
    await eventually('container sees the new version', async () =>
      (await read('live').catch(() => '')) === 'renamed' ? true : undefined,
    );

    assert.equal(
      (await readFile('/proc/mounts', 'utf8')).split('\n').filter((l) => l.includes(podDir)).length,
      2,
    );
    await removeManifest(t.env, 'info.yaml');
    await eventually('pod directory removed', async () =>
      (await stat(podDir).catch(() => undefined)) ? undefined : true,
    );
    assert.ok(!(await readFile('/proc/mounts', 'utf8')).includes(podDir), 'no mount left behind');
  });

  it('holds a pod with a secret volume back with a FailedMount event explaining standalone mode', async () => {
    await writeManifest(
      t.env,
      'secret.yaml',
      podManifest('withsecret', {
        volumes: [{ name: 'creds', secret: { secretName: 'creds' } }],
        containers: [
          {
            name: 'main',
            image: IMAGE,
            command: ['sleep', '3600'],
            volumeMounts: [{ name: 'creds', mountPath: '/creds' }],
          },
        ],
      }),
    );
    const event = await eventually('FailedMount event', () =>
      t.k.events.find((e) => e.reason === 'FailedMount' && e.pod === 'default/withsecret-itest'),
    );
    assert.match(event.message, /mount volume creds: secret volumes need an API server \(cluster mode\)/);
    assert.equal(findPod(t.k.kubelet, 'withsecret')?.status?.phase, 'Pending');
    await removeManifest(t.env, 'secret.yaml');
  });
});
