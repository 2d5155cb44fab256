import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders, type RequestListener, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { httpProbe, probeHeaders, probeURL } from './http-probe.ts';
import { runProbe } from './run-probe.ts';
import { makeSelfSignedPair } from '../server/serving-cert.ts';

async function listen(server: Server, host = '127.0.0.1'): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  return (server.address() as AddressInfo).port;
}

async function close(server: Server): Promise<void> {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}

describe('http probe', () => {
  const seen: { url: string; headers: IncomingHttpHeaders }[] = [];
  const routes: Record<string, RequestListener> = {
    '/ok': (_req, res) => res.end('fine'),
    '/fail': (_req, res) => {
      res.statusCode = 500;
      res.end('broken');
    },
    '/moved': (_req, res) => {
      res.writeHead(302, { Location: '/ok' });
      res.end();
    },
    '/elsewhere': (_req, res) => {
      res.writeHead(301, { Location: `http://localhost:${port}/ok` });
      res.end('gone');
    },
    '/loop': (_req, res) => {
      res.writeHead(307, { Location: '/loop' });
      res.end();
    },
    '/big': (_req, res) => res.end('x'.repeat(20 * 1024)),
    '/hang': () => {},
    '/no-location': (_req, res) => {
      res.statusCode = 304;
      res.end();
    },
  };
  const server = createServer((req, res) => {
    seen.push({ url: req.url ?? '', headers: req.headers });
    const route = routes[(req.url ?? '').split('?')[0] ?? ''];
    if (route) route(req, res);
    else {
      res.statusCode = 404;
      res.end();
    }
  });
  let port = 0;
  before(async () => {
    port = await listen(server);
  });
  after(() => close(server));

  const probe = (path: string, extra: Partial<Parameters<typeof httpProbe>[0]> = {}) =>
    httpProbe({ host: '127.0.0.1', port, path, timeoutMs: 2_000, ...extra });

  it('succeeds on 2xx with the body as output and fails on 500 with the status code', async () => {
    assert.deepEqual(await probe('/ok'), { result: 'success', output: 'fine' });
    assert.deepEqual(await probe('/fail'), {
      result: 'failure',
      output: 'HTTP probe failed with statuscode: 500',
    });
  });

  it('sends kube-probe User-Agent and Accept */* unless the probe sets them, and the Host override', async () => {
    seen.length = 0;
    await probe('/ok?x=1', {
      httpHeaders: [
        { name: 'host', value: 'example.test' },
        { name: 'X-Custom', value: 'a' },
        { name: 'x-custom', value: 'b' },
      ],
    });
    assert.equal(seen[0]?.url, '/ok?x=1');
    assert.equal(seen[0]?.headers['user-agent'], 'kube-probe/1.20');
    assert.equal(seen[0]?.headers.accept, '*/*');
    assert.equal(seen[0]?.headers.host, 'example.test');
    assert.equal(seen[0]?.headers['x-custom'], 'a, b');
    seen.length = 0;
    await probe('/ok', {
      httpHeaders: [
        { name: 'User-Agent', value: 'mine' },
        { name: 'Accept', value: '' },
      ],
    });
    assert.equal(seen[0]?.headers['user-agent'], 'mine');
    assert.equal(seen[0]?.headers.accept, undefined);
    assert.equal(seen[0]?.headers.host, `127.0.0.1:${port}`);
  });

  it('follows a redirect on the same host, keeping a Host override across a relative one', async () => {
    seen.length = 0;
    assert.deepEqual(await probe('/moved', { httpHeaders: [{ name: 'Host', value: 'h.test' }] }), {
      result: 'success',
      output: 'fine',
    });
    assert.deepEqual(
      seen.map((s) => [s.url, s.headers.host]),
      [
        ['/moved', 'h.test'],
        ['/ok', 'h.test'],
      ],
    );
  });

  it('does not follow a redirect to another host: success with a warning', async () => {
    seen.length = 0;
    assert.deepEqual(await probe('/elsewhere'), {
      result: 'warning',
      output: 'Probe terminated redirects, Response body: gone',
    });
    assert.equal(seen.length, 1);
    assert.equal((await probe('/no-location')).result, 'warning', 'a 3xx without Location is not followed');
  });

  it('gives up after 10 requests of a redirect loop', async () => {
    seen.length = 0;
    assert.deepEqual(await probe('/loop'), {
      result: 'failure',
      output: `Get "http://127.0.0.1:${port}/loop": stopped after 10 redirects`,
    });
    assert.equal(seen.length, 10);
  });

  it('reads at most 10 KiB of the body', async () => {
    const out = await probe('/big');
    assert.equal(out.result, 'success');
    assert.equal(out.output.length, 10 * 1024);
  });

  it('fails when the server does not answer within the timeout', async () => {
    assert.deepEqual(await probe('/hang', { timeoutMs: 200 }), {
      result: 'failure',
      output: `Get "http://127.0.0.1:${port}/hang": context deadline exceeded (Client.Timeout exceeded while awaiting headers)`,
    });
  });

  it('fails when nothing listens', async () => {
    const s = createServer();
    const free = await listen(s);
    await close(s);
    assert.deepEqual(await httpProbe({ host: '127.0.0.1', port: free, path: '/', timeoutMs: 2_000 }), {
      result: 'failure',
      output: `Get "http://127.0.0.1:${free}/": dial tcp 127.0.0.1:${free}: connect: connection refused`,
    });
  });

  it('throws when its caller aborts it', async () => {
    const ctl = new AbortController();
    const aborted = httpProbe({ host: '127.0.0.1', port, path: '/hang', timeoutMs: 10_000 }, ctl.signal);
    ctl.abort(new Error('worker stopped'));
    await assert.rejects(aborted, /worker stopped/);
  });

  it('resolves a named port, defaults the host to the pod IP, and probes through runProbe', async () => {
    seen.length = 0;
    const out = await runProbe(
      { httpGet: { port: 'web', path: '/ok' }, timeoutSeconds: 1 },
      {
        container: { name: 'c', ports: [{ name: 'web', containerPort: port }] },
        containerId: 'c1',
        podIP: '127.0.0.1',
        exec: () => Promise.reject(new Error('unused')),
      },
    );
    assert.deepEqual(out, { result: 'success', output: 'fine' });
  });

  it('builds URLs and headers as upstream does', () => {
    assert.equal(probeURL(undefined, 'fd00::1', 80, 'healthz?a=b').href, 'http://[fd00::1]/healthz?a=b');
    assert.equal(probeURL('HTTPS', '10.0.0.1', 8443, '').href, 'https://10.0.0.1:8443/');
    assert.deepEqual(probeHeaders([{ name: 'x-a', value: '1' }]), {
      'X-A': ['1'],
      'User-Agent': ['kube-probe/1.20'],
      Accept: ['*/*'],
    });
  });
});

describe('https probe', () => {
  let dir = '';
  let server: Server | undefined;
  let port = 0;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'probe-tls-'));
    await makeSelfSignedPair({
      keyFile: join(dir, 'key.pem'),
      certFile: join(dir, 'cert.pem'),
      subject: '/CN=probe.test',
      days: 1,
    });
    server = createHttpsServer(
      { key: await readFile(join(dir, 'key.pem')), cert: await readFile(join(dir, 'cert.pem')) },
      (_req, res) => res.end('secure'),
    );
    port = await listen(server);
  });
  after(async () => {
    if (server) await close(server);
    await rm(dir, { recursive: true, force: true });
  });

  it('does not verify the server certificate', async () => {
    assert.deepEqual(
      await httpProbe({ scheme: 'HTTPS', host: '127.0.0.1', port, path: '/', timeoutMs: 2_000 }),
      {
        result: 'success',
        output: 'secure',
      },
    );
  });
});
