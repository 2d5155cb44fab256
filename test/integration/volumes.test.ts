import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { IMAGE, podManifest, removeManifest, writeManifest } from '../kit/bed.ts';
import { eventually } from '../kit/poll.ts';
import { findPod, waitForPhase, useKubelet } from './support.ts';

describe('emptyDir and hostPath volumes on real containerd', () => {
  const t = useKubelet();

  it('shares an emptyDir between an init container and the app, and deletes it with the pod', async () => {
    const hostDir = join(t.env.dir, 'host-data');
    await writeManifest(
      t.env,
      'shared.yaml',
      podManifest('shared', {
        volumes: [
          { name: 'scratch', emptyDir: {} },
          { name: 'out', hostPath: { path: hostDir, type: 'DirectoryOrCreate' } },
        ],
        initContainers: [
          {
            name: 'writer',
            image: IMAGE,
            command: ['sh', '-c', 'echo from-init > /scratch/page'],
            volumeMounts: [{ name: 'scratch', mountPath: '/scratch' }],
          },
        ],
        containers: [
          {
            name: 'reader',
            image: IMAGE,
            command: ['sh', '-c', 'cat /data/page > /out/copied; exec sleep 3600'],
            volumeMounts: [
              { name: 'scratch', mountPath: '/data', readOnly: true },
              { name: 'out', mountPath: '/out' },
            ],
          },
        ],
      }),
    );
    const view = await waitForPhase(t.k.kubelet, 'shared', 'Running');
    const copied = await eventually('file copied to the hostPath', async () => {
      const text = await readFile(join(hostDir, 'copied'), 'utf8').catch(() => '');
      return text !== '' ? text : undefined;
    });
    assert.equal(copied, 'from-init\n');
    const uid = view.pod.metadata.uid ?? '';
    const emptyDir = join(t.env.rootDir, 'pods', uid, 'volumes', 'kubernetes.io~empty-dir', 'scratch');
    assert.ok((await stat(emptyDir)).isDirectory());

    await removeManifest(t.env, 'shared.yaml');
    await eventually('pod directory removed', async () =>
      (await stat(join(t.env.rootDir, 'pods', uid)).catch(() => undefined)) ? undefined : true,
    );
    // hostPath data belongs to the host and stays.
    assert.equal(await readFile(join(hostDir, 'copied'), 'utf8'), 'from-init\n');
  });

  it('holds containers back with a FailedMount event when a volume cannot be set up', async () => {
    await writeManifest(
      t.env,
      'badmount.yaml',
      podManifest('badmount', {
        volumes: [
          { name: 'missing', hostPath: { path: join(t.env.dir, 'does-not-exist'), type: 'Directory' } },
        ],
        containers: [
          {
            name: 'main',
            image: IMAGE,
            command: ['sleep', '3600'],
            volumeMounts: [{ name: 'missing', mountPath: '/m' }],
          },
        ],
      }),
    );
    await eventually('FailedMount event', () =>
      t.k.events.some((e) => e.reason === 'FailedMount' && e.pod === 'default/badmount-itest')
        ? true
        : undefined,
    );
    const view = findPod(t.k.kubelet, 'badmount');
    assert.equal(view?.status?.phase, 'Pending');
    assert.equal(view?.status?.containerStatuses?.[0]?.state.waiting?.reason, 'ContainerCreating');
    const msg = t.k.events.find((e) => e.reason === 'FailedMount')?.message ?? '';
    assert.match(msg, /does-not-exist/);
  });

  it('refuses a subPath that a symlink turns outside the volume, and mounts one that stays inside', async () => {
    // The e2e Subpath suite's cases: an init container plants the link in the emptyDir first.
    const cases = {
      dir: 'ln -s /bin /vol/sub',
      file: 'ln -s /bin/sh /vol/sub',
      missing: 'ln -s /bin/notanexistingpath /vol/sub',
      backstep: 'mkdir -p /vol/a && ln -s ../../../../../../../ /vol/a/sub',
      inside: 'mkdir -p /vol/real && echo kept > /vol/real/page && ln -s real /vol/sub',
    };
    for (const [name, link] of Object.entries(cases)) {
      await writeManifest(
        t.env,
        `subpath-${name}.yaml`,
        podManifest(`subpath-${name}`, {
          volumes: [{ name: 'vol', emptyDir: {} }],
          initContainers: [
            {
              name: 'plant',
              image: IMAGE,
              command: ['sh', '-c', link],
              volumeMounts: [{ name: 'vol', mountPath: '/vol' }],
            },
          ],
          containers: [
            {
              name: 'main',
              image: IMAGE,
              command: ['sh', '-c', 'ls /sub > /dev/null; exec sleep 3600'],
              volumeMounts: [
                { name: 'vol', mountPath: '/sub', subPath: name === 'backstep' ? 'a/sub' : 'sub' },
              ],
            },
          ],
        }),
      );
    }
    await waitForPhase(t.k.kubelet, 'subpath-inside', 'Running');
    for (const name of ['dir', 'file', 'missing', 'backstep']) {
      const waiting = await eventually(`subpath-${name} refused`, () => {
        const w = findPod(t.k.kubelet, `subpath-${name}`)?.status?.containerStatuses?.[0]?.state.waiting;
        return w?.reason === 'CreateContainerConfigError' ? w : undefined;
      });
      assert.match(
        waiting.message ?? '',
        /subPath( directory)? for volumeMount "vol" of container "main"/,
        name,
      );
      assert.doesNotMatch(waiting.message ?? '', /\/bin|pods\//, `${name}: no host path shown to the pod`);
      assert.equal(findPod(t.k.kubelet, `subpath-${name}`)?.status?.phase, 'Pending', name);
    }
    for (const name of Object.keys(cases)) await removeManifest(t.env, `subpath-${name}.yaml`);
    // The binds go with the pods: nothing stays mounted under the root dir.
    await eventually('no subPath bind left', async () =>
      (await readFile('/proc/self/mountinfo', 'utf8')).includes(join(t.env.rootDir, 'pods'))
        ? undefined
        : true,
    );
  });
});
