/**
 * The handlers' own guards, on every listener that serves them: requests from another site's page
 * (cross-site.ts) and the headers every response carries. Route behaviour itself is tested in
 * kubelet-server.test.ts and beside each route's module.
 */
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { request, type IncomingHttpHeaders } from 'node:http';
import { createServer as createNetServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { recordingLogger, type LogLine } from '../util/testing.ts';
import { nullLogger } from '../util/logger.ts';
import { createApiHandlers, type ApiHandlers, type ConsoleHandler } from './api-handlers.ts';
import { createAuthenticator } from './auth/authenticator.ts';
import { createAlwaysAllowAuthorizer } from './auth/authorizer.ts';
import type { KubeletApiHost } from './host.ts';
import { sendText } from './http-util.ts';
import { createKubeletServer } from './kubelet-server.ts';
import { createLocalSocketServer, type LocalSocketServer } from './local-socket.ts';
import { matchRoute } from './routes.ts';
import { loadServingCert } from './serving-cert.ts';
import { fakeHost, get, startTestServer, testPod } from './testing.ts';

let dir: string;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tsk-handlers-'));
  await mkdir(join(dir, 'varlog'));
  await writeFile(join(dir, 'varlog', 'syslog'), '<script>alert(1)</script>\n');
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** What the fake runtime was asked to run, exec and attach. */
interface Calls {
  execSync: string[][];
  exec: string[][];
}

function host(calls: Calls): KubeletApiHost {
  return fakeHost([{ pod: testPod('default', 'web', 'uid-1', ['c']), status: { phase: 'Running' } }], {
    findRunningContainer: (_pod, name) => Promise.resolve(name === 'c' ? 'cid' : undefined),
    systemLogDir: join(dir, 'varlog'),
    runtime: {
      exec: (_id, cmd) => {
        calls.exec.push(cmd);
        return Promise.reject(new Error('fake runtime: no streaming server'));
      },
      attach: () => Promise.reject(new Error('fake runtime: no streaming server')),
      portForward: () => Promise.reject(new Error('fake runtime: no streaming server')),
      execSync: (_id, cmd) => {
        calls.execSync.push(cmd);
        return Promise.resolve({ stdout: Buffer.from('{"ran":true}'), stderr: Buffer.alloc(0), exitCode: 0 });
      },
    },
  });
}

const stubConsole: ConsoleHandler = {
  serve: (_req, res) => {
    sendText(res, 200, 'console');
    return Promise.resolve();
  },
};

function handlers(calls: Calls, logger = nullLogger): ApiHandlers {
  return createApiHandlers({
    host: host(calls),
    enableDebuggingHandlers: true,
    enableSystemLogHandler: true,
    streamingIdleTimeoutMs: 1000,
    logger,
    console: stubConsole,
  });
}

/** One request per route kind the API serves (method, path). */
const ROUTES: readonly (readonly [string, string])[] = [
  ['GET', '/healthz'],
  ['GET', '/pods'],
  ['GET', '/runningpods/'],
  ['GET', '/configz'],
  ['GET', '/spec'],
  ['GET', '/metrics'],
  ['GET', '/stats/summary'],
  ['GET', '/containerLogs/default/web/c'],
  ['POST', '/run/default/web/c?cmd=id'],
  ['GET', '/exec/default/web/c?command=id&output=1'],
  ['GET', '/attach/default/web/c?output=1'],
  ['GET', '/portForward/default/web'],
  ['GET', '/logs/'],
  ['GET', '/logs/syslog'],
  ['GET', '/debug/pprof/'],
  ['GET', '/console/'],
  ['GET', '/debug/console/events'],
  ['GET', '/debug/pods/default/web/why'],
  ['GET', '/debug/pods/default/web/timeline'],
  ['GET', '/nope'],
];

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

function onSocket(
  socketPath: string,
  method: string,
  path: string,
  headers: Record<string, string> = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath, method, path, headers }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    // An upgrade the kubelet accepted (never expected here) fails the test rather than hanging it.
    req.on('upgrade', (_res, socket) => {
      socket.destroy();
      reject(new Error(`${path}: upgraded`));
    });
    req.on('error', reject);
    req.setTimeout(5000, () => req.destroy(new Error(`${path}: timeout`)));
    req.end();
  });
}

const UPGRADE = {
  connection: 'Upgrade',
  upgrade: 'websocket',
  'sec-websocket-version': '13',
  'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==',
};

/** What every browser sends as its User-Agent (a page cannot change it). */
const BROWSER = 'Mozilla/5.0 (X11; Linux x86_64) Chrome/156.0.0.0';

describe('cross-site requests', () => {
  let sock: LocalSocketServer;
  let path: string;
  const calls: Calls = { execSync: [], exec: [] };
  const lines: LogLine[] = [];
  before(async () => {
    path = join(dir, 'xsite.sock');
    sock = createLocalSocketServer({
      path,
      handlers: handlers(calls, recordingLogger(lines)),
      logger: nullLogger,
    });
    await sock.start();
  });
  after(async () => {
    await sock.close();
  });

  it('covers every route kind the router knows', () => {
    const kinds = new Set(ROUTES.map(([, p]) => matchRoute(new URL(p, 'http://x').pathname).kind));
    assert.equal(kinds.size, 19, [...kinds].join());
  });

  it('refuses every route with 403 when the browser marks the request cross-site or same-site', async () => {
    for (const site of ['cross-site', 'same-site']) {
      for (const [method, p] of ROUTES) {
        const res = await onSocket(path, method, p, { 'sec-fetch-site': site });
        assert.equal(res.status, 403, `${site} ${method} ${p}`);
        assert.match(
          res.body,
          new RegExp(`^cross-site request refused: the browser marked it Sec-Fetch-Site: ${site};`),
        );
        assert.equal(res.headers['x-content-type-options'], 'nosniff');
      }
    }
    assert.deepEqual(calls.execSync, [], 'nothing ran');
  });

  it('serves same-origin pages behind a proxy (Origin is the proxy), typed URLs and non-browser clients as before', async () => {
    const proxied = { 'sec-fetch-site': 'same-origin', origin: 'http://127.0.0.1:8001' };
    for (const headers of [{}, proxied, { 'sec-fetch-site': 'none' }] as Record<string, string>[]) {
      for (const [method, p] of ROUTES) {
        const res = await onSocket(path, method, p, headers);
        assert.notEqual(res.status, 403, `${JSON.stringify(headers)} ${method} ${p}: ${res.body}`);
        assert.doesNotMatch(res.body, /cross-site/);
      }
    }
    assert.equal(calls.execSync.length, 3, '/run ran for each');
  });

  it('refuses a POST from another origin when the browser sends no Fetch metadata, but not a GET', async () => {
    const before = calls.execSync.length;
    const res = await onSocket(path, 'POST', '/run/default/web/c?cmd=id', {
      origin: 'http://evil.example',
      'user-agent': BROWSER,
    });
    assert.equal(res.status, 403);
    assert.equal(
      res.body,
      'cross-site request refused: Origin "http://evil.example" is not this server (Host "localhost") and the request is a POST\n',
    );
    assert.equal(calls.execSync.length, before, 'nothing ran');
    assert.equal(
      (await onSocket(path, 'GET', '/pods', { origin: 'http://evil.example', 'user-agent': BROWSER })).status,
      200,
    );
    // The Host the request named is its origin: same host and port pass.
    const same = await onSocket(path, 'POST', '/run/default/web/c?cmd=id', {
      origin: 'http://localhost',
      'user-agent': BROWSER,
    });
    assert.equal(same.status, 200);
  });

  it('refuses a WebSocket upgrade from another site before asking the runtime for a session', async () => {
    const before = calls.exec.length;
    for (const headers of [
      { origin: 'http://evil.example' } as Record<string, string>,
      { origin: 'null' },
      { 'sec-fetch-site': 'cross-site', origin: 'http://localhost' },
      { 'sec-fetch-site': 'same-site', origin: 'http://127.0.0.1:9999' },
    ]) {
      const res = await onSocket(path, 'GET', '/exec/default/web/c?command=id&output=1', {
        ...UPGRADE,
        'user-agent': BROWSER,
        ...headers,
      });
      assert.equal(res.status, 403, JSON.stringify(headers));
      assert.match(res.body, /^cross-site request refused: /);
      assert.equal(res.headers['x-content-type-options'], 'nosniff');
    }
    assert.equal(calls.exec.length, before, 'no exec session was asked for');
    // kubectl's upgrade (no Origin), a same-origin page's and the Python client's (Origin: the API
    // server it dialled, no browser User-Agent) reach the runtime.
    const allowed: Record<string, string>[] = [
      {},
      { 'sec-fetch-site': 'same-origin', origin: 'http://127.0.0.1:8001', 'user-agent': BROWSER },
      { origin: 'https://10.0.0.1:6443', 'user-agent': 'Python-urllib/3.11' },
    ];
    for (const headers of allowed) {
      const res = await onSocket(path, 'GET', '/exec/default/web/c?command=id&output=1', {
        ...UPGRADE,
        ...headers,
      });
      assert.equal(res.status, 500, res.body);
      assert.match(res.body, /no streaming server/);
    }
    assert.equal(calls.exec.length, before + 3);
  });

  it('logs each refusal with the path, Origin and Sec-Fetch-Site, and never the query', async () => {
    lines.length = 0;
    await onSocket(path, 'POST', '/run/default/web/c?cmd=cat%20/secret/token', {
      origin: 'http://evil.example',
      'sec-fetch-site': 'cross-site',
    });
    const refusals = lines.filter((l) => l.msg === 'cross-site request refused');
    assert.equal(refusals.length, 1);
    assert.equal(refusals[0]?.level, 'warn');
    assert.deepEqual(refusals[0]?.fields, {
      method: 'POST',
      path: '/run/default/web/c',
      upgrade: false,
      origin: '"http://evil.example"',
      secFetchSite: '"cross-site"',
    });
    assert.doesNotMatch(JSON.stringify(lines), /secret/);
  });
});

describe('POST /run', () => {
  it('refuses a body a web page can send without a preflight (415) and runs nothing', async () => {
    const calls: Calls = { execSync: [], exec: [] };
    const path = join(dir, 'run.sock');
    const sock = createLocalSocketServer({ path, handlers: handlers(calls), logger: nullLogger });
    await sock.start();
    try {
      for (const type of [
        'application/x-www-form-urlencoded',
        'multipart/form-data; boundary=x',
        'text/plain',
      ]) {
        const res = await onSocket(path, 'POST', '/run/default/web/c?cmd=id', { 'content-type': type });
        assert.equal(res.status, 415, type);
        assert.equal(
          res.body,
          `/run does not take a ${type.split(';')[0] ?? ''} body: pass the command in the query (?cmd=...), with no body\n`,
        );
      }
      assert.deepEqual(calls.execSync, []);
      // The way tskubelet's tests and curl -X POST call it: no body, the command in the query.
      const plain = await onSocket(path, 'POST', '/run/default/web/c?cmd=echo%20hi');
      assert.equal(plain.status, 200);
      assert.equal(plain.body, '{"ran":true}');
      assert.equal(
        (await onSocket(path, 'POST', '/run/default/web/c?cmd=id', { 'content-type': 'application/json' }))
          .status,
        200,
      );
      assert.deepEqual(calls.execSync, [['echo', 'hi'], ['id']]);
      // The command's output is a pod's bytes: never a page a browser runs.
      assert.equal(plain.headers['content-security-policy'], "default-src 'none'; sandbox");
      assert.equal(plain.headers['x-content-type-options'], 'nosniff');
    } finally {
      await sock.close();
    }
  });
});

describe('response headers', () => {
  it('every response of every route carries X-Content-Type-Options: nosniff', async () => {
    const calls: Calls = { execSync: [], exec: [] };
    const path = join(dir, 'headers.sock');
    const sock = createLocalSocketServer({ path, handlers: handlers(calls), logger: nullLogger });
    await sock.start();
    try {
      for (const [method, p] of [...ROUTES, ['DELETE', '/pods'], ['GET', '/logs/missing']] as const) {
        const res = await onSocket(path, method, p);
        assert.equal(res.headers['x-content-type-options'], 'nosniff', `${method} ${p} (${res.status})`);
      }
      // A refused upgrade is written straight to the socket: the same header.
      const refused = await onSocket(path, 'GET', '/pods', UPGRADE);
      assert.equal(refused.status, 400);
      assert.equal(refused.headers['x-content-type-options'], 'nosniff');
    } finally {
      await sock.close();
    }
  });

  it('/logs/ files and listings are sandboxed documents (a sandbox CSP): markup in them never runs', async () => {
    const calls: Calls = { execSync: [], exec: [] };
    const path = join(dir, 'logs.sock');
    const sock = createLocalSocketServer({ path, handlers: handlers(calls), logger: nullLogger });
    await sock.start();
    try {
      for (const p of ['/logs/', '/logs/syslog']) {
        const res = await onSocket(path, 'GET', p);
        assert.equal(res.status, 200, p);
        assert.equal(res.headers['content-security-policy'], "default-src 'none'; sandbox", p);
        assert.equal(res.headers['x-content-type-options'], 'nosniff', p);
      }
    } finally {
      await sock.close();
    }
  });
});

describe('the guard on every listener', () => {
  it('refuses a cross-site request on the HTTPS port, the read-only port and the local socket', async () => {
    const calls: Calls = { execSync: [], exec: [] };
    const cross = { 'sec-fetch-site': 'cross-site' };
    const https = await startTestServer(host(calls), join(dir, 'https'));
    try {
      const res = await get(https.port, '/pods', { headers: cross });
      assert.equal(res.status, 403);
      assert.match(res.body, /^cross-site request refused/);
      assert.equal((await get(https.port, '/pods')).status, 200);
    } finally {
      await https.server.close();
    }

    const free = await new Promise<number>((resolve) => {
      const s = createNetServer().listen(0, '127.0.0.1', () => {
        const p = (s.address() as { port: number }).port;
        s.close(() => resolve(p));
      });
    });
    const serving = await loadServingCert({
      certDir: join(join(dir, 'pki'), 'ro'),
      nodeName: 'n',
      ips: [],
      logger: nullLogger,
    });
    const readOnly = createKubeletServer({
      address: '127.0.0.1',
      port: 0,
      readOnlyPort: free,
      tls: serving,
      nodeName: 'n',
      authenticator: createAuthenticator({ anonymous: true, x509: false }),
      authorizer: createAlwaysAllowAuthorizer(),
      handlers: handlers(calls),
      logger: nullLogger,
    });
    await readOnly.start();
    try {
      const refused = await fetch(`http://127.0.0.1:${free}/pods`, { headers: cross });
      assert.equal(refused.status, 403);
      assert.match(await refused.text(), /^cross-site request refused/);
      assert.equal((await fetch(`http://127.0.0.1:${free}/pods`)).status, 200);
    } finally {
      await readOnly.close();
    }

    const path = join(dir, 'listeners.sock');
    const sock = createLocalSocketServer({ path, handlers: handlers(calls), logger: nullLogger });
    await sock.start();
    try {
      assert.equal((await onSocket(path, 'GET', '/pods', cross)).status, 403);
    } finally {
      await sock.close();
    }
  });
});
