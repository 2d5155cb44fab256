/**
 * Issue 15 part 1 on the real bed: a tskubelet process runs a static pod with an init container, a
 * postStart hook and a startup probe; its timeline is read from the kubelet API (HTTPS, and the
 * local socket the benchmark uses; the read-only port refuses it) while it runs and after it is
 * deleted, and /metrics carries the step-duration histogram.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, unlink, writeFile } from 'node:fs/promises';
import { request } from 'node:https';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { connectNode } from '../../src/cli/node/client.ts';
import type { PodTimeline } from '../../src/timeline/index.ts';
import { IMAGE, podManifest, setupEnv, type Env } from '../kit/bed.ts';
import { freePort } from '../kit/net.ts';
import { eventually } from '../kit/poll.ts';
import { spawnTskubelet, type TskubeletProcess } from '../kit/process.ts';

const NODE_NAME = 'itest-timeline';
const POD = `timeline-${NODE_NAME}`;

/** GET over HTTPS (the kubelet's self-signed serving certificate); undefined while not listening. */
function httpsGet(port: number, path: string): Promise<{ status: number; body: string } | undefined> {
  return new Promise((resolve) => {
    const req = request(
      { host: '127.0.0.1', port, path, rejectUnauthorized: false, agent: false, timeout: 5_000 },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }),
        );
        res.on('error', () => resolve(undefined));
      },
    );
    req.on('error', () => resolve(undefined)); // not listening yet
    req.on('timeout', () => req.destroy());
    req.end();
  });
}

const names = (tl: PodTimeline): string[] =>
  tl.attempts.flatMap((a) => a.steps.map((s) => (s.container ? `${s.step}:${s.container}` : s.step)));

function assertInOrder(steps: string[], expected: string[], what: string): void {
  let last = -1;
  for (const e of expected) {
    const i = steps.indexOf(e, last + 1);
    assert.ok(i > last, `${what}: ${e} missing or out of order in ${steps.join(', ')}`);
    last = i;
  }
}

void describe('the startup timeline of a static pod on real containerd', () => {
  let env: Env | undefined;
  let proc: TskubeletProcess | undefined;
  let manifest = '';
  let port = 0;
  let readOnlyPort = 0;
  let socket = '';

  before(async () => {
    env = await setupEnv();
    const dir = join(env.dir, 'proc');
    const manifests = join(dir, 'manifests');
    await mkdir(manifests, { recursive: true });
    port = await freePort();
    readOnlyPort = await freePort();
    socket = join(dir, 'root', 'tskubelet.sock');
    manifest = join(manifests, 'timeline.yaml');
    await writeFile(
      manifest,
      stringify(
        podManifest('timeline', {
          initContainers: [{ name: 'init', image: IMAGE, command: ['true'] }],
          containers: [
            {
              name: 'main',
              image: IMAGE,
              command: ['sleep', '3600'],
              lifecycle: {
                postStart: { exec: { command: ['true'] } },
                preStop: { exec: { command: ['true'] } },
              },
              startupProbe: { exec: { command: ['true'] }, periodSeconds: 1 },
            },
          ],
        }),
      ),
    );
    const configFile = join(dir, 'kubelet.yaml');
    // The pod logs directory has no flag; a test's logs stay out of /var/log/pods.
    await writeFile(
      configFile,
      stringify({
        apiVersion: 'kubelet.config.k8s.io/v1beta1',
        kind: 'KubeletConfiguration',
        podLogsDir: join(dir, 'logs'),
      }),
    );
    proc = spawnTskubelet(
      [
        'run',
        '--pod-manifest-path',
        manifests,
        '--container-runtime-endpoint',
        env.bed.endpoint,
        '--root-dir',
        join(dir, 'root'),
        '--config',
        configFile,
        '--hostname-override',
        NODE_NAME,
        '--node-ip',
        '127.0.0.1',
        '--healthz-port',
        '0',
        '--port',
        String(port),
        '--read-only-port',
        String(readOnlyPort),
        '--anonymous-auth=true',
        '--authorization-mode',
        'AlwaysAllow',
        '--file-check-frequency',
        '1s',
      ],
      { logFile: join(dir, 'tskubelet.log') },
    );
  });

  after(async () => {
    await proc?.stop();
    await env?.close();
  });

  async function timeline(): Promise<PodTimeline | undefined> {
    await proc?.assertRunning();
    const res = await httpsGet(port, `/debug/pods/default/${POD}/timeline`);
    return res?.status === 200 ? (JSON.parse(res.body) as PodTimeline) : undefined;
  }

  void it('serves every startup step in order, in one attempt, with monotone offsets, and the histogram', async () => {
    const tl = await eventually(
      'the pod timeline with its first Ready',
      async () => {
        const t = await timeline();
        return t && names(t).includes('ready') ? t : undefined;
      },
      120_000,
    );
    assert.equal(tl.kind, 'PodTimeline');
    assert.equal(tl.namespace, 'default');
    assert.equal(tl.name, POD);
    assert.equal(tl.attempts.length, 1);
    assert.equal(tl.attempts[0]?.attempt, 1);
    const steps = names(tl);
    assertInOrder(
      steps,
      [
        'seen',
        'admitted',
        'sandbox-requested',
        'sandbox-created',
        'image-pull-started:init',
        'image-pull-done:init',
        'container-created:init',
        'container-started:init',
        'image-pull-started:main',
        'image-pull-done:main',
        'container-created:main',
        'container-started:main',
        'post-start-done:main',
        'startup-probe-passed:main',
        'ready',
      ],
      'startup',
    );
    const all = tl.attempts[0]?.steps ?? [];
    const offsets = all.map((s) => s.offsetMs);
    assert.deepEqual(
      offsets,
      [...offsets].sort((a, b) => a - b),
      'offsets are monotone',
    );
    assert.equal(all[0]?.source, 'file');
    const pulled = all.find((s) => s.step === 'image-pull-done' && s.container === 'main');
    assert.equal(pulled?.cached, true, 'the bed image is present: no pull');
    assert.ok((pulled?.bytes ?? 0) > 0, 'the image size is reported');
    assert.match(all.find((s) => s.step === 'network-ready')?.podIP ?? '', /^\d+\.\d+\.\d+\.\d+$/);

    // The local socket serves the same document (what bench/ reads); the read-only port serves
    // upstream's read-only routes only, and the timeline is a debugging route there.
    const local = await connectNode({ socket });
    const viaSocket = await local.getJSON<PodTimeline>(
      `/debug/pods/default/${POD}/timeline`,
      AbortSignal.timeout(5_000),
    );
    assert.equal(viaSocket.uid, tl.uid);
    const plain = await fetch(`http://127.0.0.1:${readOnlyPort}/debug/pods/default/${POD}/timeline`);
    assert.deepEqual([plain.status, await plain.text()], [405, 'Debug endpoints are disabled.\n']);

    const unknown = await httpsGet(port, '/debug/pods/default/nope/timeline');
    assert.equal(unknown?.status, 404);
    assert.equal((JSON.parse(unknown.body) as { reason?: string }).reason, 'NotFound');

    const metrics = await httpsGet(port, '/metrics');
    assert.equal(metrics?.status, 200);
    const count = /tskubelet_pod_startup_step_duration_seconds_count\{step="sandbox-created"\} (\d+)/.exec(
      metrics.body,
    );
    assert.ok(count && Number(count[1]) >= 1, 'the histogram has a sandbox-created sample');
  });

  void it('adds the termination steps when the pod is deleted, still served once it is gone', async () => {
    await unlink(manifest);
    const tl = await eventually(
      'the termination steps',
      async () => {
        const t = await timeline();
        return t && names(t).includes('sandbox-removed') ? t : undefined;
      },
      60_000,
    );
    assert.equal(tl.attempts.length, 1);
    assertInOrder(
      names(tl),
      ['ready', 'kill-requested', 'pre-stop-done:main', 'container-stopped:main', 'sandbox-removed'],
      'termination',
    );
  });
});
