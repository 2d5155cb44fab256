import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { matchRoute } from '../server/routes.ts';
import { until } from '../../test/kit/poll.ts';
import { sleep } from '../util/abort.ts';
import { request } from '../util/node-http.ts';
import type { ConsolePod } from './model.ts';
import { CONSOLE_CSP } from './static-files.ts';
import { fakeConsole, fakeKubelet, startFakeHost, type FakeHost } from './testing.ts';

/** An SSE client: collects events, waits for one that matches. */
function openStream(url: string) {
  const events: { event: string; data: unknown }[] = [];
  let buf = '';
  let res: IncomingMessage | undefined;
  const ready = new Promise<IncomingMessage>((resolve, reject) => {
    const req = request(url, (r) => {
      res = r;
      r.setEncoding('utf8');
      r.on('data', (chunk: string) => {
        buf += chunk;
        let i: number;
        while ((i = buf.indexOf('\n\n')) >= 0) {
          const block = buf.slice(0, i);
          buf = buf.slice(i + 2);
          const event = /^event: (.*)$/m.exec(block)?.[1];
          const data = /^data: (.*)$/m.exec(block)?.[1];
          if (event && data) events.push({ event, data: JSON.parse(data) as unknown });
        }
      });
      resolve(r);
    });
    req.on('error', reject);
    req.end();
  });
  return {
    ready,
    events,
    async next(event: string, match: (data: unknown) => boolean = () => true, timeoutMs = 3_000) {
      const found = await until(
        `a ${event} event`,
        () => events.find((e) => e.event === event && match(e.data)),
        {
          timeoutMs,
          intervalMs: 10,
          describe: () => events,
        },
      );
      return found.data;
    },
    close: () => res?.destroy(),
  };
}

function raw(base: string, path: string, method = 'GET') {
  return new Promise<{ status: number; headers: IncomingMessage['headers']; body: string }>(
    (resolve, reject) => {
      const req = request(`${base}${path}`, { method }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      });
      req.on('error', reject);
      req.end();
    },
  );
}

void describe('node console routes', () => {
  void it('parses /console/, its files and the event stream; anything deeper is unmatched', () => {
    assert.deepEqual(matchRoute('/console'), { kind: 'console', file: '' });
    assert.deepEqual(matchRoute('/console/'), { kind: 'console', file: '' });
    assert.deepEqual(matchRoute('/console/console.js'), { kind: 'console', file: 'console.js' });
    assert.deepEqual(matchRoute('/console/a/b'), { kind: 'not-found' });
    assert.deepEqual(matchRoute('/console/..%2fetc'), { kind: 'not-found' });
    assert.deepEqual(matchRoute('/debug/console/events'), { kind: 'consoleEvents' });
    assert.deepEqual(matchRoute('/debug/console'), { kind: 'not-found' });
  });
});

void describe('node console over HTTP', () => {
  const kubelet = fakeKubelet();
  kubelet.add('web');
  let host: FakeHost;
  let polls = 0;
  const fake = fakeConsole({
    get pods() {
      polls++;
      return kubelet.pods;
    },
    add: (...a) => kubelet.add(...a),
    remove: (n) => kubelet.remove(n),
  });

  before(async () => {
    host = await startFakeHost(kubelet, fake.console);
  });
  after(async () => {
    await host.close();
  });

  void it('serves the page with its type, a strict CSP and no caching surprises', async () => {
    const page = await raw(host.url, '/console/');
    assert.equal(page.status, 200);
    assert.equal(page.headers['content-type'], 'text/html; charset=utf-8');
    assert.equal(page.headers['content-security-policy'], CONSOLE_CSP);
    assert.match(CONSOLE_CSP, /script-src 'self'/);
    assert.doesNotMatch(CONSOLE_CSP, /unsafe-inline|unsafe-eval/);
    assert.equal(page.headers['x-content-type-options'], 'nosniff');
    assert.equal(page.headers['x-frame-options'], 'DENY');
    assert.match(page.body, /<script type="module" src="console.js"><\/script>/);
    assert.doesNotMatch(page.body, /<script>|<style|style="/, 'no inline script or style');
    const js = await raw(host.url, '/console/console.js');
    assert.equal(js.headers['content-type'], 'text/javascript; charset=utf-8');
    assert.match(js.body, /EventSource\('..\/debug\/console\/events'\)/);
    const css = await raw(host.url, '/console/console.css');
    assert.equal(css.headers['content-type'], 'text/css; charset=utf-8');
    assert.equal((await raw(host.url, '/console/index.html')).status, 200);
  });

  void it('redirects /console to /console/ relatively, so the page works behind a proxy prefix', async () => {
    const r = await raw(host.url, '/console');
    assert.equal(r.status, 301);
    assert.equal(r.headers.location, 'console/');
  });

  void it('serves no other file, whatever the path says', async () => {
    for (const path of [
      '/console/../package.json',
      '/console/%2e%2e/%2e%2e/package.json',
      '/console/..%2f..%2fpackage.json',
      '/console/static/index.html',
      '/console/node-console.ts',
      '/console/constructor',
      '/console/__proto__',
      '/console/index.html%00',
      '/console/.%2fconsole.js',
    ]) {
      const r = await raw(host.url, path);
      assert.equal(r.status, 404, `${path}: ${r.status} ${r.body}`);
      assert.doesNotMatch(r.body, /"name": "tskubelet"|import /, path);
    }
  });

  void it('is read-only: other methods get 405', async () => {
    const r = await raw(host.url, '/console/', 'POST');
    assert.equal(r.status, 405);
    assert.equal(r.headers.allow, 'GET, HEAD');
    assert.equal((await raw(host.url, '/debug/console/events', 'DELETE')).status, 405);
  });

  void it('streams a snapshot, then pods added, changed and removed, new events and the node usage', async () => {
    const s = openStream(`${host.url}/debug/console/events`);
    const res = await s.ready;
    assert.equal(res.headers['content-type'], 'text/event-stream; charset=utf-8');
    assert.equal(res.headers['content-security-policy'], CONSOLE_CSP);
    const snap = (await s.next('snapshot')) as {
      pods: ConsolePod[];
      node: { name: string };
      events: unknown[];
    };
    assert.deepEqual(
      snap.pods.map((p) => [p.name, p.phase, p.ready]),
      [['web', 'Running', true]],
    );
    assert.equal(snap.node.name, 'node-1');

    kubelet.add('api', { ready: false, restarts: 2 });
    const added = (await s.next('pod', (d) => (d as ConsolePod).name === 'api')) as ConsolePod;
    assert.equal(added.restarts, 2);
    assert.equal(added.containers[0]?.last?.exitCode, 1);

    const web = kubelet.pods.find((p) => p.pod.metadata.name === 'web');
    if (web?.status) web.status = { ...web.status, phase: 'Failed' };
    await s.next('pod', (d) => (d as ConsolePod).name === 'web' && (d as ConsolePod).phase === 'Failed');

    kubelet.remove('api');
    assert.deepEqual(await s.next('pod-removed'), { uid: 'uid-api' });

    fake.events.record('Warning', 'BackOff', 'Back-off restarting failed container', {
      kind: 'Pod',
      name: 'web',
    });
    const ev = (await s.next('k8s-event')) as { reason: string; seq: number };
    assert.equal(ev.reason, 'BackOff');

    const node = (await s.next('node', (d) => (d as { usage?: unknown }).usage !== undefined)) as {
      usage: { cpuNanoCores: number };
    };
    assert.equal(node.usage.cpuNanoCores, 250_000_000);
    s.close();
  });

  void it('stops reading the kubelet once the last stream closes (nothing runs while nobody looks)', async () => {
    const s = openStream(`${host.url}/debug/console/events`);
    await s.next('snapshot');
    await sleep(120);
    assert.ok(polls > 1, 'polls while a stream is open');
    s.close();
    await sleep(50);
    const before = polls;
    await sleep(200);
    assert.equal(polls, before, 'no poll after the last stream left');
    assert.equal(fake.console.streams, 0);
  });
});

void describe('node console limits', () => {
  void it('refuses streams past the limit with 503 and Retry-After, and ends open ones on close', async () => {
    const kubelet = fakeKubelet();
    const fake = fakeConsole(kubelet, { limits: { maxStreams: 1 } });
    const host = await startFakeHost(kubelet, fake.console);
    try {
      const first = openStream(`${host.url}/debug/console/events`);
      await first.next('snapshot');
      const second = await raw(host.url, '/debug/console/events');
      assert.equal(second.status, 503);
      assert.equal(second.headers['retry-after'], '5');
      assert.match(second.body, /too many console streams open \(1\)/);
      const stream = await first.ready;
      const ended = new Promise((resolve) => stream.once('end', resolve));
      fake.console.close();
      await ended;
      assert.equal((await raw(host.url, '/debug/console/events')).status, 503);
    } finally {
      await host.close();
    }
  });
});
