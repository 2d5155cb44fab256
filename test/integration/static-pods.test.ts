import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import {
  IMAGE,
  containersOf,
  eventually,
  findPod,
  podManifest,
  removeManifest,
  sandboxesOf,
  setupEnv,
  startKubelet,
  waitForPhase,
  writeManifest,
  type Env,
  type RunningKubelet,
} from './support.ts';
import { LABEL_CONTAINER_NAME, LABEL_POD_NAME, LABEL_POD_NAMESPACE } from '../../src/config/defaults.ts';

describe('static pods on real containerd', () => {
  let env: Env;
  let k: RunningKubelet;
  before(async () => {
    env = await setupEnv();
    k = await startKubelet(env);
  });
  after(async () => {
    await k?.stop();
    await env?.close();
  });

  it('runs the containers of a dropped manifest, with upstream CRI labels and a pod IP', async () => {
    await writeManifest(
      env,
      'web.yaml',
      podManifest('web', {
        containers: [{ name: 'httpd', image: IMAGE, command: ['sh', '-c', 'exec httpd -f -p 8080 -h /etc'] }],
      }),
    );
    const view = await waitForPhase(k.kubelet, 'web', 'Running');
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

    const [sandbox] = await sandboxesOf(env, uid);
    assert.equal(sandbox?.labels[LABEL_POD_NAME], 'web-itest');
    assert.equal(sandbox?.labels[LABEL_POD_NAMESPACE], 'default');
    const [container] = await containersOf(env, uid);
    assert.equal(container?.labels[LABEL_CONTAINER_NAME], 'httpd');
    assert.equal(container?.state, 'CONTAINER_RUNNING');
    assert.ok(container?.annotations['io.kubernetes.container.hash']);
    assert.equal(container?.annotations['io.kubernetes.container.restartCount'], '0');
    // The log directory follows the upstream layout.
    const logDirs = await readdir(env.logsDir);
    assert.ok(logDirs.includes(`default_web-itest_${uid}`), `log dirs: ${logDirs.join(',')}`);
  });

  it('replaces the pod when its manifest is edited: old pod killed, new one running', async () => {
    const before = findPod(k.kubelet, 'web');
    const oldUid = before?.pod.metadata.uid ?? '';
    assert.ok(oldUid);
    await writeManifest(
      env,
      'web.yaml',
      podManifest('web', {
        containers: [{ name: 'httpd', image: IMAGE, command: ['sh', '-c', 'exec httpd -f -p 8081 -h /etc'] }],
      }),
    );
    const after = await eventually('new pod running', () => {
      const p = findPod(k.kubelet, 'web');
      return p && p.pod.metadata.uid !== oldUid && p.status?.phase === 'Running' ? p : undefined;
    });
    assert.notEqual(after.pod.metadata.uid, oldUid);
    await eventually('old sandbox removed', async () =>
      (await sandboxesOf(env, oldUid)).length === 0 ? true : undefined,
    );
    assert.equal((await containersOf(env, oldUid)).length, 0);
  });

  it('kills a removed pod gracefully (SIGTERM reaches the container) and removes its sandbox', async () => {
    await writeManifest(
      env,
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
    const view = await waitForPhase(k.kubelet, 'graceful', 'Running');
    const uid = view.pod.metadata.uid ?? '';
    const logFile = join(env.logsDir, `default_graceful-itest_${uid}`, 'main', '0.log');
    await eventually('container log written', async () =>
      (await readFile(logFile, 'utf8').catch(() => '')).includes('started') ? true : undefined,
    );
    const t0 = Date.now();
    await removeManifest(env, 'graceful.yaml');
    await eventually('sandbox removed', async () =>
      (await sandboxesOf(env, uid)).length === 0 ? true : undefined,
    );
    // The trap ran (graceful stop), well before the 10 s grace period forced a SIGKILL.
    const log = await readFile(logFile, 'utf8');
    assert.match(log, /got SIGTERM/);
    assert.ok(
      Date.now() - t0 < 10_000,
      'stopped by SIGTERM, not by the SIGKILL at the end of the grace period',
    );
    assert.equal(findPod(k.kubelet, 'graceful'), undefined);
  });

  it('keeps running good pods when a bad manifest sits beside them', async () => {
    await writeManifest(env, 'broken.yaml', 'apiVersion: v1\nkind: Pod\nmetadata: {name: [oops\n');
    await writeManifest(
      env,
      'invalid.yaml',
      podManifest('invalid', { containers: [{ name: 'NoImage_Caps' }] }),
    );
    await writeManifest(
      env,
      'good.yaml',
      podManifest('good', { containers: [{ name: 'main', image: IMAGE, command: ['sleep', '3600'] }] }),
    );
    await waitForPhase(k.kubelet, 'good', 'Running');
    assert.equal(findPod(k.kubelet, 'invalid'), undefined);
    // The earlier pod is untouched by the bad files.
    assert.equal(findPod(k.kubelet, 'web')?.status?.phase, 'Running');
    assert.equal(findPod(k.kubelet, 'web')?.status?.containerStatuses?.[0]?.restartCount, 0);
  });

  it('reports an image that is not present under pull policy Never as ErrImageNeverPull', async () => {
    await writeManifest(
      env,
      'noimage.yaml',
      podManifest('noimage', {
        containers: [{ name: 'main', image: 'example.invalid/nothing:1.0', imagePullPolicy: 'Never' }],
      }),
    );
    const view = await eventually('waiting reason', () => {
      const p = findPod(k.kubelet, 'noimage');
      return p?.status?.containerStatuses?.[0]?.state.waiting?.reason === 'ErrImageNeverPull' ? p : undefined;
    });
    assert.equal(view.status?.phase, 'Pending');
    assert.ok(k.events.some((e) => e.reason === 'ErrImageNeverPull' && e.pod === 'default/noimage-itest'));
  });
});
