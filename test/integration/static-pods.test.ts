import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { IMAGE, containersOf, podManifest, removeManifest, sandboxesOf, writeManifest } from '../kit/bed.ts';
import { eventually } from '../kit/poll.ts';
import { findPod, waitForPhase, useKubelet } from './support.ts';
import { LABEL_CONTAINER_NAME, LABEL_POD_NAME, LABEL_POD_NAMESPACE } from '../../src/config/defaults.ts';

describe('static pods on real containerd', () => {
  const t = useKubelet();

  it('runs the containers of a dropped manifest, with upstream CRI labels and a pod IP', async () => {
    await writeManifest(
      t.env,
      'web.yaml',
      podManifest('web', {
        containers: [{ name: 'httpd', image: IMAGE, command: ['sh', '-c', 'exec httpd -f -p 8080 -h /etc'] }],
      }),
    );
    const view = await waitForPhase(t.k.kubelet, 'web', 'Running');
    const uid = view.pod.metadata.uid ?? '';
    assert.equal(view.pod.metadata.namespace, 'default');
    assert.equal(view.pod.metadata.annotations?.['kubernetes.io/config.source'], 'file');
    const cs = view.status?.containerStatuses?.[0];
    assert.ok(cs?.state.running, 'container running');
    assert.equal(cs?.ready, true);
    assert.match(cs?.containerID ?? '', /^containerd:\/\//);
    assert.match(view.status?.podIP ?? '', /^10\.88\./);
    const ready = view.status?.conditions?.find((c) => c.type === 'Ready');
    assert.equal(ready?.status, 'True');

    const [sandbox] = await sandboxesOf(t.env, uid);
    assert.equal(sandbox?.labels[LABEL_POD_NAME], 'web-itest');
    assert.equal(sandbox?.labels[LABEL_POD_NAMESPACE], 'default');
    const [container] = await containersOf(t.env, uid);
    assert.equal(container?.labels[LABEL_CONTAINER_NAME], 'httpd');
    assert.equal(container?.state, 'CONTAINER_RUNNING');
    assert.ok(container?.annotations['io.kubernetes.container.hash']);
    assert.equal(container?.annotations['io.kubernetes.container.restartCount'], '0');
    // The log directory follows the upstream layout.
    const logDirs = await readdir(t.env.logsDir);
    assert.ok(logDirs.includes(`default_web-itest_${uid}`), `log dirs: ${logDirs.join(',')}`);
  });

  it('replaces the pod when its manifest is edited: old pod killed, new one running', async () => {
    const before = findPod(t.k.kubelet, 'web');
    const oldUid = before?.pod.metadata.uid ?? '';
    assert.ok(oldUid);
    await writeManifest(
      t.env,
      'web.yaml',
      podManifest('web', {
        containers: [{ name: 'httpd', image: IMAGE, command: ['sh', '-c', 'exec httpd -f -p 8081 -h /etc'] }],
      }),
    );
    const after = await eventually('new pod running', () => {
      const p = findPod(t.k.kubelet, 'web');
      return p && p.pod.metadata.uid !== oldUid && p.status?.phase === 'Running' ? p : undefined;
    });
    assert.notEqual(after.pod.metadata.uid, oldUid);
    await eventually('old sandbox removed', async () =>
      (await sandboxesOf(t.env, oldUid)).length === 0 ? true : undefined,
    );
    assert.equal((await containersOf(t.env, oldUid)).length, 0);
  });

  it('kills a removed pod gracefully (SIGTERM reaches the container) and removes its sandbox', async () => {
    await writeManifest(
      t.env,
      'graceful.yaml',
      podManifest('graceful', {
        terminationGracePeriodSeconds: 10,
        containers: [
          {
            name: 'main',
            image: IMAGE,
            command: [
              'sh',
              '-c',
              "trap 'echo got SIGTERM; exit 0' TERM; echo started; while true; do sleep 0.1; done",
            ],
          },
        ],
      }),
    );
    const view = await waitForPhase(t.k.kubelet, 'graceful', 'Running');
    const uid = view.pod.metadata.uid ?? '';
    const logFile = join(t.env.logsDir, `default_graceful-itest_${uid}`, 'main', '0.log');
    await eventually('container log written', async () =>
      (await readFile(logFile, 'utf8').catch(() => '')).includes('started') ? true : undefined,
    );
    const t0 = Date.now();
    await removeManifest(t.env, 'graceful.yaml');
    await eventually('sandbox removed', async () =>
      (await sandboxesOf(t.env, uid)).length === 0 ? true : undefined,
    );
    // The trap ran (graceful stop), well before the 10 s grace period forced a SIGKILL.
    const log = await readFile(logFile, 'utf8');
    assert.match(log, /got SIGTERM/);
    assert.ok(
      Date.now() - t0 < 10_000,
      'stopped by SIGTERM, not by the SIGKILL at the end of the grace period',
    );
    assert.equal(findPod(t.k.kubelet, 'graceful'), undefined);
  });

  it('keeps running good pods when a bad manifest sits beside them', async () => {
    await writeManifest(t.env, 'broken.yaml', 'apiVersion: v1\nkind: Pod\nmetadata: {name: [oops\n');
    await writeManifest(
      t.env,
      'invalid.yaml',
      podManifest('invalid', { containers: [{ name: 'NoImage_Caps' }] }),
    );
    await writeManifest(
      t.env,
      'good.yaml',
      podManifest('good', { containers: [{ name: 'main', image: IMAGE, command: ['sleep', '3600'] }] }),
    );
    await waitForPhase(t.k.kubelet, 'good', 'Running');
    assert.equal(findPod(t.k.kubelet, 'invalid'), undefined);
    // The earlier pod is untouched by the bad files.
    assert.equal(findPod(t.k.kubelet, 'web')?.status?.phase, 'Running');
    assert.equal(findPod(t.k.kubelet, 'web')?.status?.containerStatuses?.[0]?.restartCount, 0);
  });

  it('reports an image that is not present under pull policy Never as ErrImageNeverPull', async () => {
    await writeManifest(
      t.env,
      'noimage.yaml',
      podManifest('noimage', {
        containers: [{ name: 'main', image: 'example.invalid/nothing:1.0', imagePullPolicy: 'Never' }],
      }),
    );
    const view = await eventually('waiting reason', () => {
      const p = findPod(t.k.kubelet, 'noimage');
      return p?.status?.containerStatuses?.[0]?.state.waiting?.reason === 'ErrImageNeverPull' ? p : undefined;
    });
    assert.equal(view.status?.phase, 'Pending');
    assert.ok(t.k.events.some((e) => e.reason === 'ErrImageNeverPull' && e.pod === 'default/noimage-itest'));
  });
});
