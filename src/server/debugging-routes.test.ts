import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer as createNetServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { CANNED_TIMELINE } from '../timeline/testing.ts';
import { CANNED_WHY } from '../why/testing.ts';
import type { ConsoleHandler } from './api-handlers.ts';
import type { KubeletApiHost } from './host.ts';
import type { KubeletServer } from './kubelet-server.ts';
import { fakeHost, get, startTestServer, testPod } from './testing.ts';

/** Every tskubelet route that shows what runs in the pods, and upstream's debugging routes. */
const POD_OUTPUT_PATHS = [
  '/debug/pods/default/web/why',
  '/debug/pods/default/web/timeline',
  '/console/',
  '/console/console.js',
  '/console',
  '/debug/console/events',
  '/containerLogs/default/web/c',
  '/exec/default/web/c?output=1',
  '/attach/default/web/c?output=1',
  '/portForward/default/web',
  '/runningpods/',
  '/logs/',
  '/debug/pprof/',
];

function host(): KubeletApiHost {
  return fakeHost([{ pod: testPod('default', 'web', 'u1'), status: { phase: 'Running' } }], {
    podWhy: () => Promise.resolve(CANNED_WHY),
    podTimeline: () => CANNED_TIMELINE,
  });
}

/** A console that answers every route 200, so a route that reaches it is seen to. */
const consoleHandler: ConsoleHandler = {
  serve(_req, res, route) {
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end(`console ${route.kind}`);
    return Promise.resolve();
  },
};

async function freePort(): Promise<number> {
  const s = createNetServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as { port: number };
  await new Promise((r) => s.close(r));
  return port;
}

let dir: string;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tsk-debugging-'));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('enableDebuggingHandlers: false', () => {
  let server: KubeletServer;
  let port: number;
  before(async () => {
    ({ server, port } = await startTestServer(host(), dir, {
      enableDebuggingHandlers: false,
      console: consoleHandler,
    }));
  });
  after(async () => server.close());

  it('removes every route that shows pod output: why, timeline, the console and its feed answered 200', async () => {
    for (const path of POD_OUTPUT_PATHS) {
      const res = await get(port, path);
      assert.deepEqual([res.status, res.body], [405, 'Debug endpoints are disabled.\n'], path);
    }
  });

  it('keeps the default handlers', async () => {
    for (const path of ['/healthz', '/pods', '/metrics', '/stats/summary', '/spec/']) {
      assert.equal((await get(port, path)).status, 200, path);
    }
  });

  it('does not know /configz, installed with the debugging handlers upstream (it was served)', async () => {
    const res = await get(port, '/configz');
    assert.deepEqual([res.status, res.body], [404, '404 page not found\n']);
  });
});

describe('enableDebuggingHandlers: true (the default)', () => {
  it('serves why, the timeline and the console', async () => {
    const { server, port } = await startTestServer(host(), dir, { console: consoleHandler });
    try {
      for (const path of ['/debug/pods/default/web/why', '/debug/pods/default/web/timeline', '/console/']) {
        assert.equal((await get(port, path)).status, 200, path);
      }
    } finally {
      await server.close();
    }
  });
});

describe('the read-only port', () => {
  let server: KubeletServer;
  let readOnly: number;
  before(async () => {
    // Debugging handlers on for the HTTPS API: the read-only port must not serve them anyway.
    readOnly = await freePort();
    ({ server } = await startTestServer(host(), dir, { readOnlyPort: readOnly, console: consoleHandler }));
  });
  after(async () => server.close());
  const plain = async (path: string) => {
    const res = await fetch(`http://127.0.0.1:${readOnly}${path}`);
    return { status: res.status, body: await res.text() };
  };

  it("serves upstream's read-only routes without authentication", async () => {
    for (const path of ['/healthz', '/pods', '/metrics', '/metrics/cadvisor', '/stats/summary', '/spec/']) {
      assert.equal((await plain(path)).status, 200, path);
    }
  });

  it('answers the debugging routes 405 as upstream (runningpods and the timeline were served)', async () => {
    for (const path of POD_OUTPUT_PATHS) {
      assert.deepEqual(await plain(path), { status: 405, body: 'Debug endpoints are disabled.\n' }, path);
    }
  });

  it('does not know /configz, a debugging handler upstream (it was served)', async () => {
    assert.deepEqual(await plain('/configz'), { status: 404, body: '404 page not found\n' });
    assert.equal((await plain('/nope')).status, 404);
  });
});
