import assert from 'node:assert/strict';
import { mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { Agent, request, type RequestOptions } from 'node:https';
import { connect, createServer as createNetServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { connect as tlsConnect } from 'node:tls';
import type { ServerSettings } from '../config/index.ts';
import { recordingLogger } from '../util/testing.ts';
import { createKubeletApi } from './kubelet-api.ts';
import { fakeHost, get, makeTestPki, testPod, type TestPki } from './testing.ts';
import { untilWithin } from '../../test/kit/poll.ts';

let dir: string;
let a: TestPki;
let b: TestPki;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tsk-kubelet-api-'));
  a = await makeTestPki(dir, 'ca-a');
  b = await makeTestPki(dir, 'ca-b');
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

function settings(over: Partial<ServerSettings> = {}): ServerSettings {
  return {
    enableServer: true,
    tlsCipherSuites: [],
    authentication: { anonymous: false, webhook: false, webhookCacheTTLMs: 120_000 },
    authorization: { mode: 'AlwaysAllow', cacheAuthorizedTTLMs: 300_000, cacheUnauthorizedTTLMs: 30_000 },
    enableDebuggingHandlers: true,
    enableSystemLogHandler: true,
    streamingConnectionIdleTimeoutMs: 60_000,
    containerLogMaxSizeBytes: 0,
    containerLogMaxFiles: 5,
    localSocket: '',
    ...over,
  };
}

async function freePort(): Promise<number> {
  const s = createNetServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as { port: number };
  await new Promise((r) => s.close(r));
  return port;
}

/** A GET's outcome: its status, or the error that ended it (a connection closed without answer). */
function outcome(opts: RequestOptions): Promise<string> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', path: '/pods', rejectUnauthorized: false, ...opts }, (res) => {
      res.resume();
      res.on('end', () => resolve(`status ${res.statusCode ?? 0}`));
    });
    req.on('error', (err: NodeJS.ErrnoException) => resolve(`error ${err.code ?? err.message}`));
    req.end();
  });
}

const eventually = untilWithin(5_000, { intervalMs: 50 });

describe('the client CA file on a running kubelet API', () => {
  it('is reloaded when it changes: the new CA is trusted, the old one refused, a broken file ignored with an error', async () => {
    const caFile = join(dir, 'client-ca.crt');
    await writeFile(caFile, a.caCert);
    const logger = recordingLogger();
    const api = await createKubeletApi({
      settings: settings({
        authentication: { anonymous: false, webhook: false, webhookCacheTTLMs: 0, clientCAFile: caFile },
      }),
      address: '127.0.0.1',
      port: 0,
      readOnlyPort: 0,
      rootDir: join(dir, 'root-reload'),
      nodeName: 'node-1',
      nodeIPs: ['127.0.0.1'],
      host: fakeHost([{ pod: testPod('default', 'web', 'u1'), status: { phase: 'Running' } }]),
      logger,
    });
    await api.start();
    const port = api.ports().secure;
    const certA = await a.client('alice', []);
    const certB = await b.client('bob', []);
    // Clients of the old CA that keep a connection open across the change: one idle, one whose
    // TCP connection is accepted before it and whose handshake (with the old context) ends after.
    const kept = new Agent({ keepAlive: true, maxSockets: 1, cert: certA.cert, key: certA.key });
    const early = connect(port, '127.0.0.1');
    const earlyConnected = new Promise((r) => early.once('connect', r));
    try {
      assert.equal((await get(port, '/pods', { cert: certA })).status, 200);
      assert.equal((await get(port, '/pods', { cert: certB })).status, 401);
      assert.equal(await outcome({ port, agent: kept }), 'status 200');
      await earlyConnected;

      await writeFile(`${caFile}.tmp`, b.caCert);
      await rename(`${caFile}.tmp`, caFile);
      await eventually(
        'a certificate of the new CA accepted',
        async () => (await get(port, '/pods', { cert: certB })).status === 200,
      );
      assert.equal((await get(port, '/pods', { cert: certA })).status, 401, 'the old CA on a new connection');
      // The idle one was closed at the change: its next request goes on a new connection.
      assert.equal(await outcome({ port, agent: kept }), 'status 401');
      // The early one is verified against the old CA, and closed without answer at its first request.
      const lateHandshake = await outcome({
        createConnection: () =>
          tlsConnect({ socket: early, cert: certA.cert, key: certA.key, rejectUnauthorized: false }),
      });
      assert.equal(lateHandshake, 'error ECONNRESET');
      assert.ok(
        logger.lines.some(
          (l) =>
            l.msg ===
            'closing a connection whose client certificate was verified against the previous client CA',
        ),
      );
      assert.ok(logger.lines.some((l) => l.msg === 'client CA reloaded' && l.fields.path === caFile));

      await writeFile(caFile, 'not a certificate\n');
      await eventually('the broken file logged', () =>
        Promise.resolve(
          logger.lines.some(
            (l) =>
              l.level === 'error' &&
              l.msg === 'the client CA file cannot be used; the client CA in force stays',
          ),
        ),
      );
      assert.equal((await get(port, '/pods', { cert: certB })).status, 200, 'the CA in force stays');
      assert.equal((await get(port, '/pods', { cert: certA })).status, 401);
    } finally {
      kept.destroy();
      early.destroy();
      await api.close();
    }
  });
});

describe('the console listener (--console-address)', () => {
  it('is not opened while the debugging handlers are off, with a warning (it served /pods for a console that 405s)', async () => {
    const consolePort = await freePort();
    const logger = recordingLogger();
    const api = await createKubeletApi({
      settings: settings({ enableDebuggingHandlers: false }),
      address: '127.0.0.1',
      port: 0,
      readOnlyPort: 0,
      rootDir: join(dir, 'root-console'),
      nodeName: 'node-1',
      nodeIPs: [],
      host: fakeHost([]),
      logger,
      console: { serve: (_req, res) => Promise.resolve(void res.end('console')) },
      consoleAddress: { host: '127.0.0.1', port: consolePort },
    });
    await api.start();
    try {
      const refused = await new Promise<string>((resolve) => {
        const s = connect(consolePort, '127.0.0.1', () => {
          s.destroy();
          resolve('connected');
        });
        s.on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
      });
      assert.equal(refused, 'ECONNREFUSED');
      assert.ok(
        logger.lines.some(
          (l) =>
            l.level === 'warn' &&
            l.msg ===
              '--console-address is ignored: enableDebuggingHandlers is false, and the node console shows pod output',
        ),
      );
    } finally {
      await api.close();
    }
  });
});
