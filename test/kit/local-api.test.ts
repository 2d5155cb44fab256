// The kit's wait for a pod on a kubelet's local socket (test/kit/local-api.ts), against a scripted
// server on a unix socket. No upstream counterpart.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { localPods, untilLocalPodPhase } from './local-api.ts';

describe("a pod on a kubelet's local socket", () => {
  let dir = '';
  let socket = '';
  let server: Server | undefined;
  let phases: string[] = [];
  let served = 0;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tskubelet-local-api-'));
    socket = join(dir, 'tskubelet.sock');
  });
  after(async () => {
    await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
    await rm(dir, { recursive: true, force: true });
  });

  /** Serves /pods with one pod `web`, whose phase is the next of `phases` (the last repeated). */
  async function serve(...p: string[]): Promise<void> {
    phases = p;
    served = 0;
    if (server) return;
    server = createServer((req, res) => {
      assert.equal(req.url, '/pods');
      const phase = phases[Math.min(served++, phases.length - 1)];
      res.setHeader('content-type', 'application/json');
      res.end(
        JSON.stringify({
          apiVersion: 'v1',
          kind: 'PodList',
          metadata: {},
          items: [{ metadata: { name: 'web' }, spec: { containers: [] }, status: { phase } }],
        }),
      );
    });
    const s = server;
    await new Promise<void>((r) => s.listen(socket, r));
  }

  it('reads nothing while no kubelet listens', async () => {
    assert.equal(await localPods(join(dir, 'nobody.sock')), undefined);
  });

  it('waits until the pod is in the phase and returns it', async () => {
    await serve('Pending', 'Pending', 'Running');
    const pod = await untilLocalPodPhase(socket, 'web', 'Running', { intervalMs: 1 });
    assert.equal(pod.status?.phase, 'Running');
    assert.equal(served, 3);
  });

  it('fails at once when the kubelet is no longer alive, and names the pod on a time-out', async () => {
    await serve('Pending');
    await assert.rejects(
      untilLocalPodPhase(socket, 'web', 'Running', {
        alive: () => Promise.reject(new Error('tskubelet exited 1')),
      }),
      /tskubelet exited 1/,
    );
    assert.equal(served, 0);
    await assert.rejects(
      untilLocalPodPhase(socket, 'web', 'Running', { intervalMs: 1, timeoutMs: 50 }),
      /timed out waiting for pod web Running \(via .*tskubelet\.sock\)/,
    );
  });
});
