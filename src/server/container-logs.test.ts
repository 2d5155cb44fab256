import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { PodStatus } from '../api/types.ts';
import { containerForLogs } from './container-logs.ts';
import type { KubeletServer } from './kubelet-server.ts';
import { fakeHost, get, startOpenServer, testPod } from './testing.ts';

const runningStatus = (id: string) => ({
  name: 'c',
  state: { running: { startedAt: '2026-01-01T00:00:00Z' } },
  lastState: { terminated: { exitCode: 3, containerID: 'containerd://old' } },
  ready: true,
  restartCount: 1,
  image: 'busybox',
  imageID: '',
  containerID: `containerd://${id}`,
});

describe('which container a log request means (upstream validateContainerLogStatus)', () => {
  it('picks the running instance, or the previous one with previous=true', () => {
    const status: PodStatus = { containerStatuses: [runningStatus('new')] };
    assert.deepEqual(containerForLogs('p', status, 'c', false), { ok: true, containerID: 'new' });
    assert.deepEqual(containerForLogs('p', status, 'c', true), { ok: true, containerID: 'old' });
  });

  it('explains why there are no logs, in upstream words', () => {
    const waiting = (reason: string): PodStatus => ({
      containerStatuses: [{ ...runningStatus('x'), state: { waiting: { reason } }, lastState: {} }],
    });
    const msg = (s: PodStatus | undefined, previous = false) => {
      const r = containerForLogs('p', s, 'c', previous);
      return r.ok ? r.containerID : r.message;
    };
    assert.equal(msg(undefined), 'container "c" in pod "p" is not available');
    assert.equal(
      msg(waiting('ErrImagePull')),
      `container "c" in pod "p" is waiting to start: image can't be pulled`,
    );
    assert.equal(
      msg(waiting('ImagePullBackOff')),
      'container "c" in pod "p" is waiting to start: trying and failing to pull image',
    );
    assert.equal(
      msg(waiting('ContainerCreating')),
      'container "c" in pod "p" is waiting to start: ContainerCreating',
    );
    assert.equal(
      msg(waiting('ContainerCreating'), true),
      'previous terminated container "c" in pod "p" not found',
    );
  });
});

describe('GET /containerLogs', () => {
  let dir: string;
  let server: KubeletServer;
  let port: number;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tsk-logs-'));
    const log = join(dir, '0.log');
    await writeFile(
      log,
      [
        '2026-01-01T00:00:01.000000001Z stdout F one',
        '2026-01-01T00:00:02.000000002Z stderr F two',
        '2026-01-01T00:00:03.000000003Z stdout P thr',
        '2026-01-01T00:00:03.000000004Z stdout F ee',
        '',
      ].join('\n'),
    );
    const host = fakeHost(
      [{ pod: testPod('default', 'web', 'uid-1'), status: { containerStatuses: [runningStatus('cid')] } }],
      {
        containerLogPath: (id) =>
          id === 'cid' ? Promise.resolve(log) : Promise.reject(new Error('unknown')),
        isContainerRunning: () => Promise.resolve(false),
      },
    );
    ({ server, port } = await startOpenServer(host, dir));
  });
  after(async () => {
    await server.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('streams both streams in order, joins partial lines, and honours tailLines and timestamps', async () => {
    assert.equal((await get(port, '/containerLogs/default/web/c')).body, 'one\ntwo\nthree\n');
    assert.equal((await get(port, '/containerLogs/default/web/c?tailLines=1')).body, 'three\n');
    assert.equal((await get(port, '/containerLogs/default/web/c?tail=all')).body, 'one\ntwo\nthree\n');
    assert.equal(
      (await get(port, '/containerLogs/default/web/c?timestamps=true&tailLines=1')).body,
      '2026-01-01T00:00:03.000000003Z three\n',
    );
    assert.equal((await get(port, '/containerLogs/default/web/c?limitBytes=5')).body, 'one\nt');
    // follow on a stopped container ends at the end of the file.
    assert.equal((await get(port, '/containerLogs/default/web/c?follow=true&tailLines=1')).body, 'three\n');
  });

  it('sends a log as UTF-8 text a browser never sniffs or runs (nosniff, a sandbox CSP)', async () => {
    const res = await get(port, '/containerLogs/default/web/c');
    assert.equal(res.status, 200);
    assert.equal(res.headers['content-type'], 'text/plain; charset=utf-8');
    assert.equal(res.headers['x-content-type-options'], 'nosniff');
    assert.equal(res.headers['content-security-policy'], "default-src 'none'; sandbox");
  });

  it('answers 404 for an unknown pod or container and 400/422 for bad options', async () => {
    const unknownPod = await get(port, '/containerLogs/default/nope/c');
    assert.equal(unknownPod.status, 404);
    assert.equal(unknownPod.body.trim(), 'pod "nope" does not exist');
    const unknownContainer = await get(port, '/containerLogs/default/web/x');
    assert.equal(unknownContainer.status, 404);
    assert.equal(unknownContainer.body.trim(), 'container "x" not found in pod "web"');
    assert.equal((await get(port, '/containerLogs/default/web/c?tailLines=-1')).status, 422);
    assert.equal((await get(port, '/containerLogs/default/web/c?tailLines=abc')).status, 400);
    assert.equal(
      (await get(port, `/containerLogs/default/web/c?sinceSeconds=${'9'.repeat(400)}`)).status,
      400,
    );
    assert.equal((await get(port, '/containerLogs/default/web/c?previous=true')).status, 400);
  });

  it('serves 1,000 concurrent followers, and closes every file and socket when they go away', async () => {
    const { request } = await import('node:https');
    const { readdir } = await import('node:fs/promises');
    const fds = async () => (await readdir('/proc/self/fd')).length;
    const followDir = await mkdtemp(join(tmpdir(), 'tsk-follow-'));
    const log = join(followDir, '0.log');
    await writeFile(log, '2026-01-01T00:00:01.000000001Z stdout F first\n');
    let running = true;
    const host = fakeHost(
      [{ pod: testPod('default', 'f', 'uid-f'), status: { containerStatuses: [runningStatus('cid')] } }],
      {
        containerLogPath: () => Promise.resolve(log),
        isContainerRunning: () => Promise.resolve(running),
      },
    );
    const { server: srv, port: p } = await startOpenServer(host, followDir);
    const baseline = await fds();
    const N = 1000;
    const requests: ReturnType<typeof request>[] = [];
    let firstLines = 0;
    let sawSecond = 0;
    try {
      await new Promise<void>((resolve, reject) => {
        for (let i = 0; i < N; i++) {
          const req = request(
            {
              host: '127.0.0.1',
              port: p,
              path: '/containerLogs/default/f/c?follow=true',
              rejectUnauthorized: false,
              agent: false,
            },
            (res) => {
              let seen = '';
              res.once('data', () => {
                if (++firstLines === N) resolve();
              });
              res.on('data', (d: Buffer) => {
                if (seen.includes('second')) return;
                seen += d.toString();
                if (seen.includes('second')) sawSecond++;
              });
              res.on('error', () => undefined);
            },
          );
          req.on('error', (err) => (firstLines < N ? reject(err) : undefined));
          req.end();
          requests.push(req);
        }
      });
      // Every follower sees a line written later.
      const { appendFile } = await import('node:fs/promises');
      await appendFile(log, '2026-01-01T00:00:02.000000001Z stdout F second\n');
      for (let i = 0; i < 200 && sawSecond < N; i++) await new Promise((r) => setTimeout(r, 50));
      assert.equal(sawSecond, N);
    } finally {
      for (const r of requests) r.destroy();
      running = false;
      for (let i = 0; i < 100 && (await fds()) > baseline; i++) await new Promise((r) => setTimeout(r, 50));
      const after = await fds();
      await srv.close();
      await rm(followDir, { recursive: true, force: true });
      assert.ok(after <= baseline, `fds ${after} after the followers left, ${baseline} before`);
    }
  });
});
