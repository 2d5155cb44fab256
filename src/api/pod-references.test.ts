import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { podObjectNames, podVolumeObjectNames } from './pod-references.ts';
import { registerSnapshots } from './pod-registration.ts';
import { apiPod } from './testing.ts';
import type { KubeletPod } from './types.ts';

function referencingPod(): KubeletPod {
  const pod = apiPod('web', 'u1');
  pod.spec.imagePullSecrets = [{ name: 'pull' }];
  pod.spec.initContainers = [
    { name: 'init', env: [{ name: 'A', valueFrom: { secretKeyRef: { name: 'init-secret', key: 'k' } } }] },
  ];
  pod.spec.containers = [
    {
      name: 'c',
      env: [
        { name: 'B', valueFrom: { configMapKeyRef: { name: 'env-cm', key: 'k' } } },
        { name: 'C', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
        { name: 'D', value: 'plain' },
      ],
      envFrom: [{ configMapRef: { name: 'from-cm' } }, { secretRef: { name: 'from-secret' } }],
    },
  ];
  (pod.spec as unknown as Record<string, unknown>).ephemeralContainers = [
    { name: 'debug', envFrom: [{ secretRef: { name: 'debug-secret' } }] },
  ];
  pod.spec.volumes = [
    { name: 'a', secret: { secretName: 'vol-secret' } },
    { name: 'b', configMap: { name: 'vol-cm' } },
    {
      name: 'c',
      projected: {
        sources: [
          { secret: { name: 'proj-secret' } },
          { configMap: { name: 'proj-cm' } },
          { downwardAPI: { items: [] } },
          { serviceAccountToken: { path: 't' } },
        ],
      },
    },
    { name: 'd', emptyDir: {} },
  ];
  return pod;
}

describe('objects a pod references (upstream VisitPodSecretNames / VisitPodConfigmapNames)', () => {
  it('names pull secrets, env and envFrom of every container kind, and secret/configMap/projected volumes', () => {
    const names = podObjectNames(referencingPod());
    assert.deepEqual([...names.secrets].sort(), [
      'debug-secret',
      'from-secret',
      'init-secret',
      'proj-secret',
      'pull',
      'vol-secret',
    ]);
    assert.deepEqual([...names.configMaps].sort(), ['env-cm', 'from-cm', 'proj-cm', 'vol-cm']);
  });

  it('names only the volume sources when asked what its volumes project', () => {
    const names = podVolumeObjectNames(referencingPod());
    assert.deepEqual([...names.secrets].sort(), ['proj-secret', 'vol-secret']);
    assert.deepEqual([...names.configMaps].sort(), ['proj-cm', 'vol-cm']);
  });

  it('ignores malformed entries instead of throwing', () => {
    const pod = apiPod('odd', 'u2');
    pod.spec.volumes = [
      { name: 'x', secret: 'not-an-object' },
      { name: 'y', projected: { sources: [null, { secret: { name: 3 } }] } },
    ];
    pod.spec.containers = [
      { name: 'c', envFrom: [null, 'x'], env: [{ name: 'E', valueFrom: { secretKeyRef: 7 } }] },
    ];
    const names = podObjectNames(pod);
    assert.equal(names.secrets.size + names.configMaps.size, 0);
  });
});

describe('registering pods from source snapshots (upstream pod manager)', () => {
  function recorder() {
    const calls: string[] = [];
    const register = registerSnapshots({
      registerPod: (pod) => calls.push(`register ${pod.metadata.uid}`),
      unregisterPod: (uid) => calls.push(`unregister ${uid}`),
    });
    return { calls, register };
  }

  it('registers a new pod, and again only when its resourceVersion changes', () => {
    const { calls, register } = recorder();
    register([apiPod('a', 'u1', { resourceVersion: '1' })]);
    register([apiPod('a', 'u1', { resourceVersion: '1' })]);
    register([apiPod('a', 'u1', { resourceVersion: '2' })]);
    assert.deepEqual(calls, ['register u1', 'register u1']);
  });

  it('unregisters a pod that left the snapshot or reached a terminal phase', () => {
    const { calls, register } = recorder();
    register([apiPod('a', 'u1', { resourceVersion: '1' }), apiPod('b', 'u2', { resourceVersion: '1' })]);
    const done = apiPod('b', 'u2', { resourceVersion: '2' });
    done.status = { phase: 'Succeeded' };
    register([apiPod('a', 'u1', { resourceVersion: '1' }), done]);
    register([done]);
    register([]);
    assert.deepEqual(calls, ['register u1', 'register u2', 'unregister u2', 'unregister u1']);
  });

  it('never registers a pod first seen in a terminal phase', () => {
    const { calls, register } = recorder();
    const failed = apiPod('a', 'u1', { resourceVersion: '1' });
    failed.status = { phase: 'Failed' };
    register([failed]);
    register([]);
    assert.deepEqual(calls, []);
  });
});
