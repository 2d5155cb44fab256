import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { nullLogger } from '../util/logger.ts';
import { request } from '../util/node-http.ts';
import { createApiHandlers, type ApiHandlers } from './api-handlers.ts';
import { createConsoleListener, type ConsoleListener } from './console-listener.ts';
import { isLoopbackHost } from './host-check.ts';
import { requestUser } from './request-user.ts';
import type { Route } from './routes.ts';
import { fakeHost } from './testing.ts';

function get(port: number, path: string, opts: { method?: string; host?: string } = {}) {
  return new Promise<{ status: number; body: string; res: IncomingMessage }>((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path,
        method: opts.method ?? 'GET',
        headers: opts.host !== undefined ? { host: opts.host } : {},
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body, res }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

void describe('console loopback listener', () => {
  const seen: Route['kind'][] = [];
  const users: (string | undefined)[] = [];
  const handlers: Pick<ApiHandlers, 'request'> = {
    request(req, res, route) {
      seen.push(route.kind);
      users.push(requestUser(req)?.name);
      res.writeHead(route.kind === 'not-found' ? 404 : 200, { 'content-type': 'text/plain' });
      res.end(route.kind);
      return Promise.resolve();
    },
  };
  let listener: ConsoleListener;
  before(async () => {
    listener = createConsoleListener({ host: '127.0.0.1', port: 0, handlers, logger: nullLogger });
    await listener.start();
  });
  after(async () => {
    await listener.close();
  });

  void it('serves the console, its feed and the read-only routes its page uses', async () => {
    for (const [path, kind] of [
      ['/console/', 'console'],
      ['/debug/console/events', 'consoleEvents'],
      ['/containerLogs/default/web/main?follow=true', 'containerLogs'],
      ['/pods', 'pods'],
      ['/stats/summary', 'stats-summary'],
    ] as const) {
      const r = await get(listener.port(), path);
      assert.equal(r.status, 200, path);
      assert.equal(r.body, kind);
    }
  });

  void it('answers 404 for every other route of the kubelet API (no exec, no metrics, no configz)', async () => {
    seen.length = 0;
    for (const path of [
      '/exec/default/web/main?command=sh',
      '/run/default/web/main',
      '/configz',
      '/metrics',
      '/runningpods',
      '/logs/',
    ]) {
      assert.equal((await get(listener.port(), path)).status, 404, path);
    }
    assert.deepEqual(new Set(seen), new Set(['not-found']));
  });

  void it('is read-only: POST, PUT and DELETE get 405 before any handler runs', async () => {
    seen.length = 0;
    for (const method of ['POST', 'PUT', 'DELETE']) {
      const r = await get(listener.port(), '/console/', { method });
      assert.equal(r.status, 405, method);
      assert.equal(r.res.headers.allow, 'GET, HEAD');
    }
    assert.deepEqual(seen, []);
  });

  void it('refuses a request whose Host is not a loopback name (DNS rebinding)', async () => {
    const r = await get(listener.port(), '/console/', { host: 'evil.example:8080' });
    assert.equal(r.status, 403);
    assert.match(r.body, /only to a loopback Host/);
    assert.equal(
      (await get(listener.port(), '/console/', { host: `localhost:${listener.port()}` })).status,
      200,
    );
  });

  void it('hands every request on as the anonymous user (the console counts its stream slots per user)', async () => {
    users.length = 0;
    assert.equal((await get(listener.port(), '/debug/console/events')).status, 200);
    assert.deepEqual(users, ['system:anonymous']);
  });

  void it('knows the loopback Host forms', () => {
    for (const h of ['127.0.0.1:8080', '127.1.2.3', 'localhost:1', 'localhost', '[::1]:10255']) {
      assert.ok(isLoopbackHost(h), h);
    }
    for (const h of [
      undefined,
      '',
      '10.0.0.1:80',
      'example.com',
      '127.0.0.1.evil.com',
      '[::2]:1',
      'localhost.evil',
    ]) {
      assert.ok(!isLoopbackHost(h), String(h));
    }
  });
});

void describe('kubelet API handlers and the console', () => {
  async function serve(withConsole: boolean) {
    const served: string[] = [];
    const handlers = createApiHandlers({
      host: fakeHost([]),
      enableDebuggingHandlers: true,
      enableSystemLogHandler: false,
      streamingIdleTimeoutMs: 1000,
      logger: nullLogger,
      ...(withConsole
        ? {
            console: {
              serve(_req, res, route) {
                served.push(route.kind === 'console' ? `console:${route.file}` : route.kind);
                res.end('ok');
                return Promise.resolve();
              },
            },
          }
        : {}),
    });
    const listener = createConsoleListener({ host: '127.0.0.1', port: 0, handlers, logger: nullLogger });
    await listener.start();
    return { listener, served };
  }

  void it('hand /console/ and /debug/console/events to the console', async () => {
    const { listener, served } = await serve(true);
    try {
      assert.equal((await get(listener.port(), '/console/console.js')).status, 200);
      assert.equal((await get(listener.port(), '/debug/console/events')).status, 200);
      assert.deepEqual(served, ['console:console.js', 'consoleEvents']);
    } finally {
      await listener.close();
    }
  });

  void it('answer 404 for them when no console is configured', async () => {
    const { listener } = await serve(false);
    try {
      assert.equal((await get(listener.port(), '/console/')).status, 404);
      assert.equal((await get(listener.port(), '/debug/console/events')).status, 404);
    } finally {
      await listener.close();
    }
  });
});
