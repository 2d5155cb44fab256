import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { PodStatus } from '../api/types.ts';
import { nullLogger } from '../util/logger.ts';
import { createApiHandlers } from './api-handlers.ts';
import { createAuthenticator } from './auth/authenticator.ts';
import { createAlwaysAllowAuthorizer } from './auth/authorizer.ts';
import { containerForLogs } from './container-logs.ts';
import { createKubeletServer, type KubeletServer } from './kubelet-server.ts';
import { loadServingCert } from './serving-cert.ts';
import { fakeHost, get, testPod } from './testing.ts';

const running = (id: string) => ({
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
    const status: PodStatus = { containerStatuses: [running('new')] };
    assert.deepEqual(containerForLogs('p', status, 'c', false), { ok: true, containerID: 'new' });
    assert.deepEqual(containerForLogs('p', status, 'c', true), { ok: true, containerID: 'old' });
  });

  it('explains why there are no logs, in upstream words', () => {
    const waiting = (reason: string): PodStatus => ({
      containerStatuses: [{ ...running('x'), state: { waiting: { reason } }, lastState: {} }],
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
      [{ pod: testPod('default', 'web', 'uid-1'), status: { containerStatuses: [running('cid')] } }],
      {
        containerLogPath: (id) =>
          id === 'cid' ? Promise.resolve(log) : Promise.reject(new Error('unknown')),
        isContainerRunning: () => Promise.resolve(false),
      },
    );
    server = createKubeletServer({
      address: '127.0.0.1',
      port: 0,
      readOnlyPort: 0,
      tls: await loadServingCert({ rootDir: dir, nodeName: 'n', ips: [], logger: nullLogger }),
      nodeName: 'n',
      authenticator: createAuthenticator({ anonymous: true, x509: false }),
      authorizer: createAlwaysAllowAuthorizer(),
      handlers: createApiHandlers({
        host,
        enableDebuggingHandlers: true,
        enableSystemLogHandler: false,
        streamingIdleTimeoutMs: 1000,
        logger: nullLogger,
      }),
      logger: nullLogger,
    });
    await server.start();
    port = server.ports().secure;
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
});
