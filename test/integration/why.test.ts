/**
 * `why` (issue 15) on real containerd: static pods that are stuck for different reasons, asked
 * through the kubelet API (`GET /debug/pods/{namespace}/{name}/why`) of an in-process kubelet.
 *
 * Run under the bed lock:
 *   flock /tmp/tskubelet-bed.lock node_modules/.bin/node --test test/integration/why.test.ts
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createApiHost } from '../../src/kubelet/api-host.ts';
import type { KubeletServer } from '../../src/server/kubelet-server.ts';
import { get, startOpenServer } from '../../src/server/testing.ts';
import { NOTHING_HOLDS, type PodWhy } from '../../src/why/index.ts';
import { IMAGE, NODE, podManifest, writeManifest } from '../kit/bed.ts';
import { eventually } from '../kit/poll.ts';
import { useKubelet } from './support.ts';

/** An image no registry has: the bed's loopback registry answers 404, or nothing listens there. */
const MISSING_IMAGE = '127.0.0.1:5000/tskubelet-why/nosuch:1.0';

describe('why on real containerd', () => {
  const t = useKubelet();
  let server: KubeletServer | undefined;
  let port = 0;
  let certDir = '';

  before(async () => {
    certDir = await mkdtemp(join(tmpdir(), 'tskubelet-why-'));
    const host = createApiHost({
      nodeName: NODE,
      kubelet: t.k.kubelet,
      runtime: t.env.cri.runtime,
      configz: () => ({}),
      spec: () => Promise.resolve({}),
      metrics: () => Promise.resolve({ contentType: 'text/plain', body: '' }),
      statsSummary: () => Promise.resolve({}),
    });
    ({ server, port } = await startOpenServer(host, certDir));
    const pods = {
      'why-image': podManifest('why-image', {
        containers: [{ name: 'main', image: MISSING_IMAGE, command: ['sleep', '3600'] }],
      }),
      'why-crash': podManifest('why-crash', {
        containers: [
          { name: 'main', image: IMAGE, command: ['sh', '-c', 'echo starting; echo boom; exit 1'] },
        ],
      }),
      'why-probe': podManifest('why-probe', {
        containers: [
          {
            name: 'main',
            image: IMAGE,
            command: ['sleep', '3600'],
            readinessProbe: {
              exec: { command: ['sh', '-c', 'echo backend not reachable; exit 1'] },
              periodSeconds: 1,
              failureThreshold: 2,
            },
          },
        ],
      }),
      'why-volume': podManifest('why-volume', {
        volumes: [
          { name: 'missing', hostPath: { path: join(certDir, 'does-not-exist'), type: 'Directory' } },
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
      'why-fine': podManifest('why-fine', {
        containers: [{ name: 'main', image: IMAGE, command: ['sleep', '3600'] }],
      }),
    };
    for (const [name, pod] of Object.entries(pods)) await writeManifest(t.env, `${name}.yaml`, pod);
  });
  after(async () => {
    await server?.close();
    if (certDir) await rm(certDir, { recursive: true, force: true });
  });

  async function why(name: string): Promise<{ status: number; body: PodWhy }> {
    const res = await get(port, `/debug/pods/default/${name}-${NODE}/why`);
    return { status: res.status, body: JSON.parse(res.body) as PodWhy };
  }

  /** Polls the endpoint until `ok` holds; fails with the last answer. */
  async function whyUntil(name: string, ok: (w: PodWhy) => boolean, timeoutMs = 60_000): Promise<PodWhy> {
    let last: PodWhy | undefined;
    return eventually(
      `why of ${name}`,
      async () => {
        const r = await why(name);
        last = r.body;
        return r.status === 200 && ok(r.body) ? r.body : undefined;
      },
      timeoutMs,
      () => last,
    );
  }

  it('says why a pod whose image does not exist waits: the pull error and the back-off left', async () => {
    const w = await whyUntil('why-image', (b) =>
      b.findings.some(
        (f) => f.reason === 'ImagePullBackOff' && typeof f.evidence.backOffLeftSeconds === 'number',
      ),
    );
    const f = w.findings[0];
    assert.equal(f?.reason, 'ImagePullBackOff');
    assert.equal(f?.container, 'main');
    assert.equal(f?.evidence.image, MISSING_IMAGE);
    assert.ok(Number(f?.evidence.backOffLeftSeconds) > 0 && Number(f?.evidence.backOffLeftSeconds) <= 300);
    assert.equal(typeof f?.evidence.error, 'string', 'the last pull error is kept');
    assert.match(
      w.summary,
      /^Container main is waiting for image "127\.0\.0\.1:5000\/tskubelet-why\/nosuch:1\.0": the last pull failed/,
    );
    assert.equal(w.phase, 'Pending');
    assert.equal(w.ready, false);
  });

  it('says a crashing container is in crash-loop back-off, with its exit code and last log line', async () => {
    const w = await whyUntil('why-crash', (b) => b.findings[0]?.reason === 'CrashLoopBackOff');
    const f = w.findings[0];
    assert.equal(f?.container, 'main');
    assert.equal(f?.evidence.exitCode, 1);
    assert.ok(Number(f?.evidence.restartCount) >= 1);
    const next = f?.evidence.nextRetryInSeconds;
    assert.ok(typeof next === 'number' && next >= 0 && next <= 300, `next retry in ${String(next)} s`);
    assert.deepEqual(f?.evidence.lastLogLines, ['starting', 'boom']);
    assert.match(f?.message ?? '', /Its last log line: "boom"/);
    assert.match(
      w.summary,
      /^Container main is in crash-loop back-off: it exited with code 1 and is restarted/,
    );
  });

  it('says a pod is not ready because its readiness probe fails, with the probe output', async () => {
    const w = await whyUntil(
      'why-probe',
      (b) =>
        b.findings[0]?.reason === 'ProbeFailing' && Number(b.findings[0].evidence.consecutiveFailures) >= 2,
    );
    const f = w.findings[0];
    assert.equal(f?.evidence.probe, 'readiness');
    assert.match(String(f?.evidence.lastOutput), /backend not reachable/);
    assert.ok(Number(f?.evidence.consecutiveFailures) >= 2);
    assert.equal(f?.evidence.failureThreshold, 2);
    assert.equal(w.phase, 'Running');
    assert.equal(w.ready, false);
  });

  it('says a volume does not mount, with its error', async () => {
    const w = await whyUntil('why-volume', (b) => b.findings[0]?.reason === 'VolumeNotReady');
    assert.match(String(w.findings[0]?.evidence.error), /does-not-exist/);
  });

  it('finds nothing holding a healthy pod', async () => {
    const w = await whyUntil('why-fine', (b) => b.ready);
    assert.deepEqual(w.findings, []);
    assert.equal(w.summary, NOTHING_HOLDS);
    assert.equal(w.phase, 'Running');
  });

  it('answers 404 with a Status for a pod the node does not have', async () => {
    const res = await get(port, '/debug/pods/default/nope/why');
    assert.equal(res.status, 404);
    assert.equal((JSON.parse(res.body) as { reason: string }).reason, 'NotFound');
  });

  it('answers within a bound: the time of one why on a node with these pods', async () => {
    const times: number[] = [];
    for (let i = 0; i < 20; i++) {
      const t0 = performance.now();
      await why('why-crash');
      times.push(performance.now() - t0);
    }
    times.sort((a, b) => a - b);
    const p50 = times[10] ?? 0;
    const max = times.at(-1) ?? 0;
    console.log(
      `why latency over 20 requests (crash-looping pod, log tail read): p50 ${p50.toFixed(1)} ms, max ${max.toFixed(1)} ms`,
    );
    assert.ok(max < 2_000, `max ${max} ms`);
  });
});
