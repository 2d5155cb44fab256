import assert from 'node:assert/strict';
import { mkdtemp, readdir, rm, writeFile, mkdir } from 'node:fs/promises';
import { createConnection, createServer as createNetServer, type Server as NetServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as tlsConnect } from 'node:tls';
import { after, before, describe, it } from 'node:test';
import { FakeApi, apiError } from '../api/testing.ts';
import { KubeletError } from '../util/errors.ts';
import { nullLogger } from '../util/logger.ts';
import { createApiHandlers } from './api-handlers.ts';
import { createAuthenticator } from './auth/authenticator.ts';
import {
  createAlwaysAllowAuthorizer,
  createUnavailableAuthorizer,
  createWebhookAuthorizer,
  type Authorizer,
} from './auth/authorizer.ts';
import type { KubeletApiHost } from './host.ts';
import { createKubeletServer, type KubeletServer, type RequestMetrics } from './kubelet-server.ts';
import { loadServingCert } from './serving-cert.ts';
import { fakeHost, get, makeTestPki, testPod, type TestPki } from './testing.ts';

let dir: string;
let pki: TestPki;
let serving: { cert: Buffer; key: Buffer };

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tsk-api-'));
  pki = await makeTestPki(dir);
  serving = await loadServingCert({
    certDir: join(dir, 'pki'),
    nodeName: 'node-1',
    ips: ['127.0.0.1'],
    logger: nullLogger,
  });
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

interface Setup {
  api?: FakeApi;
  anonymous?: boolean;
  authorizer?: Authorizer;
  host?: KubeletApiHost;
  debugging?: boolean;
  readOnlyPort?: number;
  requestMetrics?: RequestMetrics;
}

async function start(s: Setup): Promise<{ server: KubeletServer; port: number; readOnly: number }> {
  const server = createKubeletServer({
    address: '127.0.0.1',
    port: 0,
    readOnlyPort: s.readOnlyPort ?? 0,
    tls: { ...serving, clientCA: pki.caCert },
    nodeName: 'node-1',
    authenticator: createAuthenticator({
      anonymous: s.anonymous ?? false,
      x509: true,
      ...(s.api ? { tokenReview: { api: s.api, cacheTTLMs: 60_000 } } : {}),
    }),
    authorizer: s.authorizer ?? createAlwaysAllowAuthorizer(),
    handlers: createApiHandlers({
      host: s.host ?? fakeHost([{ pod: testPod('default', 'web', 'uid-1'), status: { phase: 'Running' } }]),
      enableDebuggingHandlers: s.debugging ?? true,
      enableSystemLogHandler: true,
      streamingIdleTimeoutMs: 60_000,
      logger: nullLogger,
    }),
    logger: nullLogger,
    ...(s.requestMetrics ? { requestMetrics: s.requestMetrics } : {}),
  });
  await server.start();
  return { server, port: server.ports().secure, readOnly: server.ports().readOnly };
}

function tokenReviewReply(users: Record<string, { username: string; groups: string[] }>) {
  return (req: { body?: unknown }) => {
    const token = (req.body as { spec: { token: string } }).spec.token;
    const user = users[token];
    return user
      ? { status: { authenticated: true, user } }
      : { status: { authenticated: false, error: 'bad token' } };
  };
}

describe('kubelet API request metrics', () => {
  it('reports every request of both listeners, refused ones included, as done once the response closes', async () => {
    const seen: string[] = [];
    const requestMetrics: RequestMetrics = {
      requestStarted(method, path, serverType) {
        seen.push(`start ${method ?? ''} ${path} ${serverType}`);
        return () => seen.push(`done ${path}`);
      },
    };
    const { server, port, readOnly } = await start({ readOnlyPort: await freePort(), requestMetrics });
    try {
      assert.equal((await get(port, '/pods?x=1')).status, 401);
      const res = await fetch(`http://127.0.0.1:${readOnly}/healthz`);
      assert.equal(res.status, 200);
      await res.text();
      await new Promise((r) => setTimeout(r, 50));
      assert.deepEqual(seen, [
        'start GET /pods readwrite',
        'done /pods',
        'start GET /healthz readonly',
        'done /healthz',
      ]);
    } finally {
      await server.close();
    }
  });
});

describe('kubelet API authentication', () => {
  it('answers 401 to an anonymous request when anonymous access is off (the default)', async () => {
    const { server, port } = await start({});
    try {
      const res = await get(port, '/pods');
      assert.equal(res.status, 401);
      assert.equal(res.body.trim(), 'Unauthorized');
    } finally {
      await server.close();
    }
  });

  it('lets system:anonymous in when enabled, and the authorizer decides', async () => {
    const api = new FakeApi().respond('POST', '/apis/authorization.k8s.io/v1/subjectaccessreviews', {
      status: { allowed: false },
    });
    const { server, port } = await start({
      anonymous: true,
      authorizer: createWebhookAuthorizer({ api, cacheAuthorizedTTLMs: 1000, cacheUnauthorizedTTLMs: 1000 }),
    });
    try {
      const res = await get(port, '/pods');
      assert.equal(res.status, 403);
      assert.equal(
        res.body.trim(),
        'Forbidden (user=system:anonymous, verb=get, resource=nodes, subresource=proxy)',
      );
      const sar = api.requestsFor('POST', '/apis/authorization.k8s.io/v1/subjectaccessreviews')[0]?.body as {
        spec: { user: string; groups: string[]; resourceAttributes: Record<string, string> };
      };
      assert.deepEqual(sar.spec.groups, ['system:unauthenticated']);
      assert.deepEqual(sar.spec.resourceAttributes, {
        verb: 'get',
        group: '',
        version: 'v1',
        resource: 'nodes',
        subresource: 'proxy',
        name: 'node-1',
      });
    } finally {
      await server.close();
    }
  });

  it('authenticates a client certificate signed by the client CA as CN with groups O', async () => {
    const api = new FakeApi().respond('POST', '/apis/authorization.k8s.io/v1/subjectaccessreviews', {
      status: { allowed: true },
    });
    const { server, port } = await start({
      authorizer: createWebhookAuthorizer({ api, cacheAuthorizedTTLMs: 1000, cacheUnauthorizedTTLMs: 1000 }),
    });
    try {
      const cert = await pki.client('kube-apiserver-kubelet-client', ['system:masters']);
      const res = await get(port, '/pods', { cert });
      assert.equal(res.status, 200);
      assert.equal((JSON.parse(res.body) as { items: unknown[] }).items.length, 1);
      const spec = (api.requests[0]?.body as { spec: { user: string; groups: string[] } }).spec;
      assert.equal(spec.user, 'kube-apiserver-kubelet-client');
      assert.deepEqual(spec.groups, ['system:masters', 'system:authenticated']);
    } finally {
      await server.close();
    }
  });

  it('refuses a client certificate from another CA, even with anonymous access on', async () => {
    const other = await makeTestPki(dir, 'other-ca');
    const { server, port } = await start({ anonymous: true });
    try {
      const res = await get(port, '/pods', { cert: await other.client('mallory', ['system:masters']) });
      assert.equal(res.status, 401);
    } finally {
      await server.close();
    }
  });

  it('checks bearer tokens with a TokenReview, caches the answer, and never treats a bad token as anonymous', async () => {
    const api = new FakeApi()
      .respond(
        'POST',
        '/apis/authentication.k8s.io/v1/tokenreviews',
        tokenReviewReply({ good: { username: 'alice', groups: ['devs'] } }),
      )
      .respond('POST', '/apis/authorization.k8s.io/v1/subjectaccessreviews', (req: { body?: unknown }) => {
        const spec = (req.body as { spec: { user: string; resourceAttributes: { subresource: string } } })
          .spec;
        return {
          status: { allowed: spec.user === 'alice' && spec.resourceAttributes.subresource === 'metrics' },
        };
      });
    const { server, port } = await start({
      api,
      anonymous: true,
      authorizer: createWebhookAuthorizer({
        api,
        cacheAuthorizedTTLMs: 60_000,
        cacheUnauthorizedTTLMs: 60_000,
      }),
    });
    try {
      assert.equal((await get(port, '/metrics', { token: 'good' })).status, 200);
      assert.equal((await get(port, '/metrics', { token: 'good' })).status, 200);
      const forbidden = await get(port, '/pods', { token: 'good' });
      assert.equal(forbidden.status, 403);
      assert.match(forbidden.body, /user=alice, verb=get, resource=nodes, subresource=proxy/);
      assert.equal((await get(port, '/metrics', { token: 'bad' })).status, 401);
      assert.equal(
        api.requestsFor('POST', '/apis/authentication.k8s.io/v1/tokenreviews').length,
        2,
        'one review per token',
      );
      assert.equal(
        api.requestsFor('POST', '/apis/authorization.k8s.io/v1/subjectaccessreviews').length,
        2,
        'one SAR per decision',
      );
    } finally {
      await server.close();
    }
  });

  it('takes a bearer token from the WebSocket subprotocol on WebSocket upgrades only, as upstream', async () => {
    const api = new FakeApi().respond(
      'POST',
      '/apis/authentication.k8s.io/v1/tokenreviews',
      tokenReviewReply({ 'ws-token': { username: 'carol', groups: [] } }),
    );
    const { server, port } = await start({ api });
    try {
      const proto = `base64url.bearer.authorization.k8s.io.${Buffer.from('ws-token').toString('base64url')}`;
      const protocols = `v4.channel.k8s.io, ${proto}`;
      // A plain request: the header is no credential there (it was: 200).
      const plain = await get(port, '/pods', { headers: { 'sec-websocket-protocol': protocols } });
      assert.deepEqual([plain.status, plain.body], [401, 'Unauthorized\n']);
      const upgrade = (connection: string, upgradeTo: string) =>
        rawRequest(
          port,
          `GET /exec/default/web/c?output=1 HTTP/1.1\r\nHost: x\r\nConnection: ${connection}\r\n` +
            `Upgrade: ${upgradeTo}\r\nSec-WebSocket-Protocol: ${protocols}\r\n\r\n`,
        );
      // Authenticated, the upgrade reaches the handler (no such running container: 404).
      assert.equal(await upgrade('Upgrade', 'websocket'), 'HTTP/1.1 404 Not Found');
      assert.equal(await upgrade('keep-alive, Upgrade', 'WebSocket'), 'HTTP/1.1 404 Not Found');
      // An upgrade to another protocol (SPDY) does not carry it either.
      assert.equal(await upgrade('Upgrade', 'SPDY/3.1'), 'HTTP/1.1 401 Unauthorized');
      assert.equal(api.requestsFor('POST', '/apis/authentication.k8s.io/v1/tokenreviews').length, 1);
    } finally {
      await server.close();
    }
  });

  it('answers promptly when the API server cannot be reached: 401 for tokens, 503 for authorization', async () => {
    const api = new FakeApi().respond(
      'POST',
      '/apis/authentication.k8s.io/v1/tokenreviews',
      new KubeletError('Unavailable', 'POST tokenreviews', 'connect ECONNREFUSED'),
    );
    const { server, port } = await start({ api, authorizer: createUnavailableAuthorizer('no API server') });
    try {
      assert.equal((await get(port, '/pods', { token: 't' })).status, 401);
      const cert = await pki.client('admin', []);
      const res = await get(port, '/pods', { cert });
      assert.equal(res.status, 503);
      assert.match(res.body, /Authorization error \(user=admin/);
    } finally {
      await server.close();
    }
  });

  it('shares one TokenReview among concurrent requests with the same token', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const api = new FakeApi().respond('POST', '/apis/authentication.k8s.io/v1/tokenreviews', async () => {
      await gate;
      return { status: { authenticated: true, user: { username: 'bob', groups: [] } } };
    });
    const { server, port } = await start({ api });
    try {
      const all = Promise.all(Array.from({ length: 20 }, () => get(port, '/healthz', { token: 'same' })));
      await new Promise((r) => setTimeout(r, 100));
      release();
      const results = await all;
      assert.ok(results.every((r) => r.status === 200));
      assert.equal(api.requestsFor('POST', '/apis/authentication.k8s.io/v1/tokenreviews').length, 1);
    } finally {
      await server.close();
    }
  });
});

function freePort(): Promise<number> {
  return new Promise<number>((resolve) => {
    const s: NetServer = createNetServer().listen(0, '127.0.0.1', () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => resolve(p));
    });
  });
}

/** One raw request over TLS (or plain TCP); the status line of the answer, or the socket error. */
function rawRequest(port: number, head: string, tls = true): Promise<string> {
  return new Promise((resolve) => {
    const onConnect = () => sock.write(head);
    const sock = tls
      ? tlsConnect({ host: '127.0.0.1', port, rejectUnauthorized: false }, onConnect)
      : createConnection({ host: '127.0.0.1', port }, onConnect);
    let buf = '';
    sock.on('data', (d: Buffer) => (buf += d.toString('latin1')));
    sock.on('close', () => resolve(buf.split('\r\n')[0] ?? ''));
    sock.on('error', (err: Error) => resolve(`error: ${err.message}`));
  });
}

describe('kubelet API request targets that are not URLs', () => {
  it('answers 400 to an absolute-form target that does not parse (an uncaught exception ended the kubelet)', async () => {
    const uncaught: unknown[] = [];
    const onUncaught = (err: unknown) => uncaught.push(err);
    process.on('uncaughtException', onUncaught);
    const { server, port, readOnly } = await start({ anonymous: true, readOnlyPort: await freePort() });
    try {
      for (const target of ['http://[', 'http://a:99999/pods', 'https://%zz/']) {
        assert.equal(
          await rawRequest(port, `GET ${target} HTTP/1.1\r\nHost: x\r\n\r\n`),
          'HTTP/1.1 400 Bad Request',
        );
        assert.equal(
          await rawRequest(
            port,
            `GET ${target} HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n\r\n`,
          ),
          'HTTP/1.1 400 Bad Request',
        );
        assert.equal(
          await rawRequest(readOnly, `GET ${target} HTTP/1.1\r\nHost: x\r\n\r\n`, false),
          'HTTP/1.1 400 Bad Request',
        );
      }
      // The server still answers afterwards.
      assert.equal((await get(port, '/healthz')).status, 200);
      assert.deepEqual(uncaught, []);
    } finally {
      process.off('uncaughtException', onUncaught);
      await server.close();
    }
  });
});

describe('kubelet API connections that do not become streams', () => {
  it('closes a refused upgrade whose body is still arriving (the socket stayed open for good and close() hung)', async () => {
    const { server, port } = await start({ anonymous: true });
    const body = 'x'.repeat(70_000);
    const head =
      `GET /nope HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n` +
      `Content-Length: ${body.length}\r\n\r\n${body}`;
    assert.equal(await rawRequest(port, head), 'HTTP/1.1 404 Not Found');
    const t0 = Date.now();
    await server.close();
    assert.ok(Date.now() - t0 < 2_000, `close() took ${Date.now() - t0} ms`);
  });

  it('ends upgraded connections a client keeps open when it closes (close() waited for them forever)', async () => {
    const { server, port } = await start({ anonymous: true });
    // The upgrade is refused (no such container), and the client never closes its side.
    const sock = tlsConnect({ host: '127.0.0.1', port, rejectUnauthorized: false }, () =>
      sock.write(
        'GET /exec/default/web/c?output=1 HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n\r\n',
      ),
    );
    sock.on('error', () => undefined);
    await new Promise((r) => setTimeout(r, 200));
    const t0 = Date.now();
    await server.close();
    assert.ok(Date.now() - t0 < 2_000, `close() took ${Date.now() - t0} ms`);
    sock.destroy();
  });

  it('answers CONNECT with 405 instead of hanging up', async () => {
    const { server, port, readOnly } = await start({ anonymous: true, readOnlyPort: await freePort() });
    try {
      assert.equal(
        await rawRequest(port, 'CONNECT /pods HTTP/1.1\r\nHost: x\r\n\r\n'),
        'HTTP/1.1 405 Method Not Allowed',
      );
      assert.equal(
        await rawRequest(readOnly, 'CONNECT x:1 HTTP/1.1\r\nHost: x\r\n\r\n', false),
        'HTTP/1.1 405 Method Not Allowed',
      );
    } finally {
      await server.close();
    }
  });
});

describe('kubelet API endpoints', () => {
  it('serves /healthz, /pods, /configz, /metrics and /stats/summary in upstream shapes', async () => {
    const { server, port } = await start({ anonymous: true });
    try {
      assert.equal((await get(port, '/healthz')).body.trim(), 'ok');
      const pods = JSON.parse((await get(port, '/pods')).body) as {
        kind: string;
        items: { kind: string; status: unknown }[];
      };
      assert.equal(pods.kind, 'PodList');
      assert.deepEqual(pods.items[0]?.status, { phase: 'Running' });
      assert.deepEqual(JSON.parse((await get(port, '/configz')).body), {
        kubeletconfig: { kind: 'KubeletConfiguration' },
      });
      const m = await get(port, '/metrics');
      assert.match(m.headers['content-type'] as string, /text\/plain/);
      assert.match(m.body, /kubelet_running_pods 1/);
      assert.equal((await get(port, '/nope')).status, 404);
      assert.equal((await get(port, '/pods', { method: 'DELETE' })).status, 405);
    } finally {
      await server.close();
    }
  });

  it('answers /run for a container the pod does not have with 404, not 500 (the request is wrong, not the kubelet)', async () => {
    const host = fakeHost(
      [{ pod: testPod('default', 'web', 'uid-1', ['c']), status: { phase: 'Running' } }],
      {
        findRunningContainer: (_pod, name) => Promise.resolve(name === 'c' ? 'cid' : undefined),
        runtime: {
          exec: () => Promise.reject(new Error('unused')),
          attach: () => Promise.reject(new Error('unused')),
          portForward: () => Promise.reject(new Error('unused')),
          execSync: () =>
            Promise.resolve({ stdout: Buffer.from('ok'), stderr: Buffer.alloc(0), exitCode: 0 }),
        },
      },
    );
    const { server, port } = await start({ anonymous: true, host });
    try {
      const missing = await get(port, '/run/default/web/nope?cmd=ls', { method: 'POST' });
      assert.deepEqual([missing.status, missing.body.trim()], [404, 'container not found ("nope")']);
      assert.equal((await get(port, '/run/default/web/c?cmd=ls', { method: 'POST' })).status, 200);
    } finally {
      await server.close();
    }
  });

  it('answers 405 on debugging endpoints when enableDebuggingHandlers is off', async () => {
    const { server, port } = await start({ anonymous: true, debugging: false });
    try {
      for (const p of [
        '/containerLogs/default/web/c',
        '/exec/default/web/c',
        '/run/default/web/c',
        '/runningpods/',
        '/logs/',
      ]) {
        const res = await get(port, p);
        assert.equal(res.status, 405, p);
        assert.equal(res.body.trim(), 'Debug endpoints are disabled.');
      }
      assert.equal((await get(port, '/pods')).status, 200);
    } finally {
      await server.close();
    }
  });

  it('serves only read-only routes, without authentication, on the read-only port (debugging ones 405 as upstream)', async () => {
    const { server, readOnly } = await start({ readOnlyPort: 0 });
    await server.close();
    // Port 0 means "off" for the read-only listener: start one on a free port instead.
    const free = await new Promise<number>((resolve) => {
      const s: NetServer = createNetServer().listen(0, '127.0.0.1', () => {
        const p = (s.address() as { port: number }).port;
        s.close(() => resolve(p));
      });
    });
    assert.equal(readOnly, 0);
    const started = await start({ readOnlyPort: free });
    try {
      const plain = (path: string) => fetch(`http://127.0.0.1:${free}${path}`);
      assert.equal((await plain('/pods')).status, 200);
      assert.equal((await plain('/exec/default/web/c?output=1')).status, 405);
      assert.equal((await plain('/containerLogs/default/web/c')).status, 405);
    } finally {
      await started.server.close();
    }
  });

  it('lists /logs/ without letting a path leave the directory', async () => {
    const logDir = join(dir, 'varlog');
    await mkdir(join(logDir, 'sub'), { recursive: true });
    await writeFile(join(logDir, 'syslog'), 'hello\n');
    const { server, port } = await start({ anonymous: true, host: fakeHost([], { systemLogDir: logDir }) });
    try {
      const listing = await get(port, '/logs/');
      assert.equal(listing.status, 200);
      assert.match(listing.body, /<a href="sub\/">sub\/<\/a>/);
      assert.equal((await get(port, '/logs/syslog')).body, 'hello\n');
      assert.equal((await get(port, '/logs/..%2f..%2fetc%2fpasswd')).status, 404);
      assert.equal((await get(port, '/logs/missing')).status, 404);
    } finally {
      await server.close();
    }
  });

  it('keeps retrying when the port is taken, and serves once it frees', async () => {
    const blocker = createNetServer();
    const port = await new Promise<number>((r) =>
      blocker.listen(0, '127.0.0.1', () => r((blocker.address() as { port: number }).port)),
    );
    const server = createKubeletServer({
      address: '127.0.0.1',
      port,
      readOnlyPort: 0,
      tls: serving,
      nodeName: 'node-1',
      authenticator: createAuthenticator({ anonymous: true, x509: false }),
      authorizer: createAlwaysAllowAuthorizer(),
      handlers: createApiHandlers({
        host: fakeHost([]),
        enableDebuggingHandlers: true,
        enableSystemLogHandler: false,
        streamingIdleTimeoutMs: 1000,
        logger: nullLogger,
      }),
      logger: nullLogger,
      bindRetryMs: 50,
    });
    try {
      await server.start();
      assert.equal(server.ports().secure, 0);
      await new Promise<void>((r) => blocker.close(() => r()));
      for (let i = 0; i < 100 && server.ports().secure === 0; i++)
        await new Promise((r) => setTimeout(r, 20));
      assert.equal(server.ports().secure, port);
      assert.equal((await get(port, '/healthz')).status, 200);
    } finally {
      await server.close();
    }
  });
});

describe('exec, attach and port-forward', () => {
  /** A stand-in for the runtime's streaming server: answers 101 and echoes, recording the request head. */
  async function fakeStreamingServer(): Promise<{ port: number; heads: string[]; close(): Promise<void> }> {
    const heads: string[] = [];
    const server = createNetServer((sock) => {
      let buf = '';
      const onData = (d: Buffer) => {
        buf += d.toString('latin1');
        const end = buf.indexOf('\r\n\r\n');
        if (end < 0) return;
        sock.off('data', onData);
        heads.push(buf.slice(0, end));
        sock.write('HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n\r\n');
        const rest = buf.slice(end + 4);
        if (rest) sock.write(rest);
        sock.pipe(sock);
      };
      sock.on('data', onData);
      sock.on('error', () => sock.destroy());
    });
    const port = await new Promise<number>((r) =>
      server.listen(0, '127.0.0.1', () => r((server.address() as { port: number }).port)),
    );
    return {
      port,
      heads,
      close: () =>
        new Promise<void>((r) => {
          server.close(() => r());
        }),
    };
  }

  function upgrade(
    port: number,
    path: string,
    cert: { cert: Buffer; key: Buffer },
  ): Promise<{ head: string; echo: string }> {
    return new Promise((resolve, reject) => {
      const sock = tlsConnect(
        { host: '127.0.0.1', port, rejectUnauthorized: false, cert: cert.cert, key: cert.key },
        () => {
          sock.write(
            `POST ${path} HTTP/1.1\r\nHost: node\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: v4.channel.k8s.io\r\n\r\n`,
          );
        },
      );
      let buf = '';
      let head = '';
      sock.on('data', (d: Buffer) => {
        buf += d.toString('latin1');
        if (!head) {
          const end = buf.indexOf('\r\n\r\n');
          if (end < 0) return;
          head = buf.slice(0, end);
          buf = buf.slice(end + 4);
          if (!head.startsWith('HTTP/1.1 101')) {
            sock.destroy();
            resolve({ head, echo: buf });
            return;
          }
          sock.write('ping');
        }
        if (buf === 'ping') {
          sock.destroy();
          resolve({ head, echo: buf });
        }
      });
      sock.on('error', reject);
    });
  }

  it('asks CRI for an exec session and splices the upgraded connection to the runtime', async () => {
    const streaming = await fakeStreamingServer();
    const execCalls: unknown[] = [];
    const host = fakeHost([{ pod: testPod('default', 'web', 'uid-1'), status: undefined }], {
      findRunningContainer: (_pod, name) => Promise.resolve(name === 'c' ? 'cid-1' : undefined),
      runtime: {
        exec: (id, cmd, flags) => {
          execCalls.push({ id, cmd, flags });
          return Promise.resolve(`http://127.0.0.1:${streaming.port}/exec/tok123`);
        },
        attach: () => Promise.reject(new Error('unused')),
        portForward: () => Promise.reject(new Error('unused')),
        execSync: () => Promise.reject(new Error('unused')),
      },
    });
    const { server, port } = await start({ host });
    const cert = await pki.client('kube-apiserver-kubelet-client', ['system:masters']);
    try {
      const r = await upgrade(
        port,
        '/exec/default/web/c?command=sh&command=-c&command=echo%20hi&output=1&error=1&tty=1',
        cert,
      );
      assert.match(r.head, /^HTTP\/1\.1 101/);
      assert.equal(r.echo, 'ping');
      assert.deepEqual(execCalls, [
        {
          id: 'cid-1',
          cmd: ['sh', '-c', 'echo hi'],
          flags: { stdin: false, stdout: true, stderr: false, tty: true },
        },
      ]);
      const head = streaming.heads[0] ?? '';
      assert.match(head, /^POST \/exec\/tok123 HTTP\/1\.1/);
      assert.match(head, /Upgrade: SPDY\/3\.1/);
      assert.match(head, /X-Stream-Protocol-Version: v4\.channel\.k8s\.io/);

      const noStreams = await upgrade(port, '/exec/default/web/c?command=sh', cert);
      assert.match(noStreams.head, /^HTTP\/1\.1 400/);
      assert.match(noStreams.echo, /you must specify at least 1 of stdin, stdout, stderr/);
      const noContainer = await upgrade(port, '/exec/default/web/other?command=sh&output=1', cert);
      assert.match(noContainer.head, /^HTTP\/1\.1 404/);
      const noPod = await upgrade(port, '/exec/default/nope/c?output=1', cert);
      assert.match(noPod.head, /^HTTP\/1\.1 404/);
      assert.equal(
        (await get(port, '/exec/default/web/c?output=1', { cert })).status,
        400,
        'plain request: upgrade required',
      );
    } finally {
      await server.close();
      await streaming.close();
    }
  });

  it('refuses an upgrade before authentication succeeds', async () => {
    const { server, port } = await start({});
    try {
      const other = await makeTestPki(dir, 'third-ca');
      const r = await upgrade(port, '/exec/default/web/c?output=1', await other.client('x', []));
      assert.match(r.head, /^HTTP\/1\.1 401/);
    } finally {
      await server.close();
    }
  });

  it('maps a runtime NotFound to 404 and reports an unreachable streaming server as 502', async () => {
    const { CriError } = await import('../runtime/cri/errors.ts');
    const host = fakeHost([{ pod: testPod('default', 'web', 'uid-1'), status: undefined }], {
      findReadySandbox: () => Promise.resolve('sb-1'),
      findRunningContainer: () => Promise.resolve('cid-1'),
      runtime: {
        exec: () => Promise.reject(new CriError('CRI Exec', 5, 'container gone')),
        attach: () => Promise.resolve('http://127.0.0.1:1/attach/x'),
        portForward: () => Promise.resolve('http://127.0.0.1:1/portforward/x'),
        execSync: () => Promise.reject(new Error('unused')),
      },
    });
    const { server, port } = await start({ host });
    const cert = await pki.client('admin', ['system:masters']);
    try {
      assert.match((await upgrade(port, '/exec/default/web/c?output=1', cert)).head, /^HTTP\/1\.1 404/);
      assert.match((await upgrade(port, '/portForward/default/web', cert)).head, /^HTTP\/1\.1 502/);
    } finally {
      await server.close();
    }
  });

  it('closes no file descriptor it does not own and leaks none across 50 streams', async () => {
    const streaming = await fakeStreamingServer();
    const host = fakeHost([{ pod: testPod('default', 'web', 'uid-1'), status: undefined }], {
      findRunningContainer: () => Promise.resolve('cid-1'),
      runtime: {
        exec: () => Promise.resolve(`http://127.0.0.1:${streaming.port}/exec/t`),
        attach: () => Promise.reject(new Error('unused')),
        portForward: () => Promise.reject(new Error('unused')),
        execSync: () => Promise.reject(new Error('unused')),
      },
    });
    const { server, port } = await start({ host });
    const cert = await pki.client('admin', ['system:masters']);
    try {
      const fds = async () => (await readdir('/proc/self/fd')).length;
      await upgrade(port, '/exec/default/web/c?output=1', cert);
      await new Promise((r) => setTimeout(r, 50));
      const before = await fds();
      for (let i = 0; i < 50; i++) await upgrade(port, '/exec/default/web/c?output=1', cert);
      for (let i = 0; i < 50 && (await fds()) > before; i++) await new Promise((r) => setTimeout(r, 20));
      assert.ok((await fds()) <= before, `fds ${await fds()} > ${before}`);
    } finally {
      await server.close();
      await streaming.close();
    }
  });
});

describe('webhook authorizer errors', () => {
  it('does not cache a failed SubjectAccessReview', async () => {
    const api = new FakeApi()
      .respondOnce(
        'POST',
        '/apis/authorization.k8s.io/v1/subjectaccessreviews',
        apiError(500, 'InternalError'),
      )
      .respond('POST', '/apis/authorization.k8s.io/v1/subjectaccessreviews', { status: { allowed: true } });
    const authz = createWebhookAuthorizer({
      api,
      cacheAuthorizedTTLMs: 60_000,
      cacheUnauthorizedTTLMs: 60_000,
    });
    const attrs = {
      user: { name: 'u', groups: [] },
      verb: 'get',
      resource: 'nodes' as const,
      subresource: 'proxy' as const,
      name: 'n',
      apiVersion: 'v1' as const,
      path: '/pods',
    };
    await assert.rejects(authz.authorize(attrs));
    assert.deepEqual(await authz.authorize(attrs), { allowed: true });
    assert.deepEqual(await authz.authorize(attrs), { allowed: true });
    assert.equal(api.requests.length, 2);
  });
});
