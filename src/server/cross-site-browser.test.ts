/**
 * The cross-site guard (cross-site.ts) against what a real browser sends: Debian's chromium, the
 * real API handlers behind a stand-in for `kubectl proxy` (Host rewritten to the kubelet's, every
 * other header passed on, upgrades included). The console opened through the proxy keeps working;
 * a page on another site, or on another port of the same host (same-site), cannot run a command
 * with an auto-submitted form nor open an exec WebSocket.
 */
import assert from 'node:assert/strict';
import { createServer as createHttpServer, request, type IncomingMessage, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import type { Browser } from 'puppeteer-core';
import { fakeConsole, fakeKubelet, launchBrowser, watchedPage } from '../console/testing.ts';
import { recordingLogger, type LogLine } from '../util/testing.ts';
import { createApiHandlers } from './api-handlers.ts';
import { matchRoute } from './routes.ts';
import { fakeHost, testPod } from './testing.ts';

function listen(server: Server): Promise<number> {
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)),
  );
}

function close(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}

/** The request head again, with Host replaced (as kubectl proxy addresses the API server). */
function head(req: IncomingMessage, host: string): string {
  const lines = [`${req.method ?? 'GET'} ${req.url ?? '/'} HTTP/1.1`, `Host: ${host}`];
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    if ((req.rawHeaders[i] ?? '').toLowerCase() !== 'host')
      lines.push(`${req.rawHeaders[i]}: ${req.rawHeaders[i + 1]}`);
  }
  return `${lines.join('\r\n')}\r\n\r\n`;
}

describe('cross-site requests from a real browser through a kubectl-proxy stand-in', () => {
  const runs: string[][] = [];
  const lines: LogLine[] = [];
  const execs: string[][] = [];
  const sockets = new Set<Duplex>();
  let kubelet: Server;
  let proxy: Server;
  let attacker: Server;
  let proxyPort: number;
  let kubeletPort: number;
  let attackerPort: number;
  let browser: Browser;

  before(async () => {
    const pods = fakeKubelet();
    pods.add('web');
    const nodeConsole = fakeConsole(pods).console;
    const host = fakeHost([{ pod: testPod('default', 'web', 'uid-web', ['main']), status: undefined }], {
      findRunningContainer: () => Promise.resolve('cid'),
      runtime: {
        exec: (_id, cmd) => {
          execs.push(cmd);
          return Promise.reject(new Error('fake runtime: no streaming server'));
        },
        attach: () => Promise.reject(new Error('unused')),
        portForward: () => Promise.reject(new Error('unused')),
        execSync: (_id, cmd) => {
          runs.push(cmd);
          return Promise.resolve({ stdout: Buffer.from('{}'), stderr: Buffer.alloc(0), exitCode: 0 });
        },
      },
    });
    const handlers = createApiHandlers({
      host,
      enableDebuggingHandlers: true,
      enableSystemLogHandler: false,
      streamingIdleTimeoutMs: 1000,
      logger: recordingLogger(lines),
      console: nodeConsole,
    });
    // The kubelet API without authentication (the proxy's credentials would pass it anyway).
    kubelet = createHttpServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://kubelet');
      void handlers.request(req, res, matchRoute(url.pathname), url);
    });
    kubelet.on('upgrade', (req: IncomingMessage, socket: Duplex, data: Buffer) => {
      sockets.add(socket);
      const url = new URL(req.url ?? '/', 'http://kubelet');
      void handlers.upgrade(req, socket, data, matchRoute(url.pathname), url);
    });
    kubeletPort = await listen(kubelet);
    const kubeletHost = `127.0.0.1:${kubeletPort}`;
    proxy = createHttpServer((req, res) => {
      const headers = { ...req.headers, host: kubeletHost };
      const out = request(
        { host: '127.0.0.1', port: kubeletPort, method: req.method, path: req.url, headers },
        (r) => {
          res.writeHead(r.statusCode ?? 502, r.headers);
          r.pipe(res);
        },
      );
      out.on('error', () => res.destroy());
      req.pipe(out);
    });
    proxy.on('upgrade', (req: IncomingMessage, socket: Duplex, data: Buffer) => {
      sockets.add(socket);
      const upstream = connect(kubeletPort, '127.0.0.1', () => {
        upstream.write(head(req, kubeletHost));
        upstream.write(data);
        socket.pipe(upstream).pipe(socket);
      });
      upstream.on('error', () => socket.destroy());
      socket.on('error', () => upstream.destroy());
    });
    proxyPort = await listen(proxy);
    const target = `127.0.0.1:${proxyPort}`;
    // The attacker's page: an auto-submitted form to /run, or an exec WebSocket, to the proxy.
    attacker = createHttpServer((req, res) => {
      const page =
        req.url === '/form'
          ? `<form method="POST" action="http://${target}/run/default/web/main?cmd=touch%20/pwned"></form>` +
            '<script>document.forms[0].submit()</script>'
          : '<script>const ws = new WebSocket(' +
            `'ws://${target}/exec/default/web/main?command=id&output=1'); ` +
            "ws.onopen = () => { document.title = 'open'; }; ws.onerror = () => { document.title = 'refused'; };" +
            '</script>';
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end(page);
    });
    attackerPort = await listen(attacker);
    browser = await launchBrowser();
  });

  after(async () => {
    await browser?.close();
    for (const s of sockets) s.destroy();
    await Promise.all([kubelet, proxy, attacker].filter((s) => s).map(close));
  });

  it('serves the console opened through the proxy: page, files and live feed (Sec-Fetch-Site: same-origin)', async () => {
    const { page, problems } = await watchedPage(browser);
    const refused: string[] = [];
    page.on('response', (r) => {
      if (r.status() === 403) refused.push(r.url());
    });
    await page.goto(`http://127.0.0.1:${proxyPort}/console/`, { waitUntil: 'domcontentloaded' });
    await page.waitForSelector('#pod-list button[data-pod="default/web"]');
    await page.waitForFunction(
      () =>
        (
          globalThis as unknown as { document: { getElementById(id: string): { textContent: string } } }
        ).document.getElementById('conn').textContent === 'Live',
    );
    assert.deepEqual(refused, []);
    assert.deepEqual(problems, []);
    await page.close();
  });

  for (const [name, origin] of [
    ['another site (localhost vs 127.0.0.1)', 'localhost'],
    ['another port of the same host (same-site)', '127.0.0.1'],
  ] as const) {
    it(`refuses a form auto-submitted to /run from ${name}: 403, nothing runs`, async () => {
      const { page } = await watchedPage(browser);
      const [response] = await Promise.all([
        page.waitForNavigation({ waitUntil: 'domcontentloaded' }),
        page.goto(`http://${origin}:${attackerPort}/form`),
      ]);
      assert.equal(response?.status(), 403);
      assert.match(
        String(await page.evaluate('document.body.innerText')),
        /^cross-site request refused: the browser marked it Sec-Fetch-Site: (cross-site|same-site)/,
      );
      assert.deepEqual(runs, []);
      await page.close();
    });

    it(`refuses an exec WebSocket from ${name} before a session is asked for`, async () => {
      const { page } = await watchedPage(browser);
      await page.goto(`http://${origin}:${attackerPort}/ws`);
      await page.waitForFunction(`document.title === 'refused'`);
      assert.deepEqual(execs, []);
      const refusal = lines.findLast((l) => l.msg === 'cross-site request refused');
      assert.equal(refusal?.fields['upgrade'], true);
      assert.equal(refusal?.fields['origin'], JSON.stringify(`http://${origin}:${attackerPort}`));
      // Chromium sends no Sec-Fetch-Site on a WebSocket handshake: the Origin rule refuses it.
      assert.equal(refusal?.fields['secFetchSite'], '(none)');
      await page.close();
    });
  }

  /** Opens an exec WebSocket from the page; 'open' or 'error'. */
  const openExec = (port: number) => `new Promise((resolve) => {
    const ws = new WebSocket('ws://127.0.0.1:${port}/exec/default/web/main?command=id&output=1');
    ws.onopen = () => resolve('open');
    ws.onerror = () => resolve('error');
  })`;

  it('through the proxy, the console page itself gets 415 for a form body to /run, and no exec WebSocket (no Fetch metadata on it, Origin is the proxy)', async () => {
    const { page } = await watchedPage(browser);
    await page.goto(`http://127.0.0.1:${proxyPort}/console/`, { waitUntil: 'domcontentloaded' });
    const status = await page.evaluate(`fetch('/run/default/web/main?cmd=id', {
      method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'cmd=id',
    }).then((r) => r.status)`);
    assert.equal(status, 415);
    assert.deepEqual(runs, []);
    assert.equal(await page.evaluate(openExec(proxyPort)), 'error');
    const refusal = lines.findLast((l) => l.msg === 'cross-site request refused');
    assert.deepEqual(refusal?.fields, {
      method: 'GET',
      path: '/exec/default/web/main',
      upgrade: true,
      origin: JSON.stringify(`http://127.0.0.1:${proxyPort}`),
      secFetchSite: '(none)',
    });
    assert.deepEqual(execs, []);
    await page.close();
  });

  it("lets a page on the kubelet's own origin (Origin = Host) open an exec WebSocket", async () => {
    const { page } = await watchedPage(browser);
    await page.goto(`http://127.0.0.1:${kubeletPort}/console/`, { waitUntil: 'domcontentloaded' });
    // The fake runtime has no streaming server: the kubelet answers 500 after asking it.
    assert.equal(await page.evaluate(openExec(kubeletPort)), 'error');
    assert.deepEqual(execs, [['id']]);
    await page.close();
  });
});
