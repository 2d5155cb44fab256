/**
 * Test helpers for the console (not exported from the index): a fake kubelet (pods, node, usage) and
 * a fake host — a plain HTTP server that routes like the kubelet API, serves the console through
 * the real handlers, and answers the timeline, `why` and container-log endpoints with canned data.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ContainerStatus, KubeletPod, PodStatus } from '../api/types.ts';
import { matchRoute } from '../server/routes.ts';
import { createServer } from '../util/node-http.ts';
import { nullLogger } from '../util/logger.ts';
import { CANNED_WHY } from '../why/testing.ts';
import { buildPod } from '../../test/kit/pod.ts';
import { createEventRing, type EventRing } from './event-ring.ts';
import { standaloneNodeView } from './node-info.ts';
import { createNodeConsole, type ConsoleLimits, type NodeConsole } from './node-console.ts';

export interface FakeKubelet {
  pods: { pod: KubeletPod; status: PodStatus | undefined }[];
  add(name: string, opts?: { ready?: boolean; restarts?: number; namespace?: string }): KubeletPod;
  remove(name: string): void;
}

export function running(name: string, restarts = 0, ready = true): ContainerStatus {
  return {
    name,
    state: { running: { startedAt: '2026-11-24T20:00:01Z' } },
    lastState: restarts > 0 ? { terminated: { exitCode: 1, reason: 'Error' } } : {},
    ready,
    restartCount: restarts,
    image: 'docker.io/library/busybox:1.29',
    imageID: 'sha256:1',
    containerID: `containerd://${name}`,
  };
}

export function fakeKubelet(): FakeKubelet {
  const k: FakeKubelet = {
    pods: [],
    add(name, opts = {}) {
      const pod: KubeletPod = buildPod(name, {
        namespace: opts.namespace ?? 'default',
        annotations: { 'kubernetes.io/config.source': 'file' },
        containers: ['main'],
        image: 'docker.io/library/busybox:1.29',
      });
      const ready = opts.ready ?? true;
      k.pods.push({
        pod,
        status: {
          phase: 'Running',
          podIP: '10.88.0.9',
          startTime: '2026-11-24T20:00:00Z',
          conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }],
          containerStatuses: [running('main', opts.restarts ?? 0, ready)],
        },
      });
      return pod;
    },
    remove(name) {
      k.pods = k.pods.filter((p) => p.pod.metadata.name !== name);
    },
  };
  return k;
}

export function fakeConsole(
  kubelet: FakeKubelet,
  opts: {
    limits?: Partial<ConsoleLimits>;
    events?: EventRing;
    userOf?: (req: IncomingMessage) => string | undefined;
  } = {},
): { console: NodeConsole; events: EventRing } {
  const events = opts.events ?? createEventRing();
  const nodeConsole = createNodeConsole({
    source: {
      pods: () => kubelet.pods,
      node: () =>
        standaloneNodeView({
          name: 'node-1',
          runtimeReady: { ok: true, message: '' },
          pressure: { memory: false, disk: false, pid: false },
          milliCPU: 2000,
          memoryBytes: 8 * 1024 ** 3,
          pods: 110,
          info: { kubeletVersion: 'v0.1.0' },
        }),
      usage: () =>
        Promise.resolve({
          cpuNanoCores: 250_000_000,
          memoryWorkingSetBytes: 2 * 1024 ** 3,
          fsUsedBytes: 10 * 1024 ** 3,
          fsCapacityBytes: 40 * 1024 ** 3,
        }),
    },
    events,
    logger: nullLogger,
    limits: { podPollMs: 50, nodePollMs: 200, ...opts.limits },
    ...(opts.userOf ? { userOf: opts.userOf } : {}),
  });
  return { console: nodeConsole, events };
}

/** The contract's example timeline for a pod (PodTimeline), with offsets a waterfall can show. */
export function cannedTimeline(namespace: string, name: string): unknown {
  const at = (ms: number) => new Date(Date.UTC(2026, 10, 24, 20) + ms).toISOString();
  const steps = [
    { step: 'seen', offsetMs: 0, source: 'file' },
    { step: 'admitted', offsetMs: 3.1 },
    { step: 'sandbox-requested', offsetMs: 5 },
    { step: 'sandbox-created', offsetMs: 180.4 },
    { step: 'network-ready', offsetMs: 181, podIP: '10.88.0.9' },
    { step: 'image-pull-started', offsetMs: 182, container: 'main', image: 'busybox:1.29' },
    {
      step: 'image-pull-done',
      offsetMs: 812.4,
      container: 'main',
      image: 'busybox:1.29',
      bytes: 123456,
      cached: false,
    },
    { step: 'container-created', offsetMs: 900, container: 'main' },
    { step: 'container-started', offsetMs: 950.1, container: 'main' },
    { step: 'ready', offsetMs: 1002 },
  ].map((s) => ({ ...s, at: at(s.offsetMs) }));
  return {
    apiVersion: 'tskubelet.io/v1alpha1',
    kind: 'PodTimeline',
    namespace,
    name,
    uid: `uid-${name}`,
    attempts: [{ attempt: 1, steps }],
    droppedSteps: 0,
  };
}

/** The shared canned PodWhy (one crash-loop finding), for the pod asked about. */
export function cannedWhy(namespace: string, name: string): unknown {
  return { ...CANNED_WHY, namespace, name, uid: `uid-${name}` };
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

export interface FakeHost {
  url: string;
  /** Log lines written to open follow streams (one line each call). */
  logLine(text: string): void;
  close(): Promise<void>;
}

/**
 * Serves the console (real handlers) and canned timeline / why / logs on 127.0.0.1, routed by
 * the kubelet API's own `matchRoute`.
 */
export async function startFakeHost(kubelet: FakeKubelet, nodeConsole: NodeConsole): Promise<FakeHost> {
  const followers = new Set<ServerResponse>();
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const route = matchRoute(url.pathname);
    const known = (ns: string, name: string) =>
      kubelet.pods.some((p) => p.pod.metadata.namespace === ns && p.pod.metadata.name === name);
    const parts = url.pathname.split('/').map(decodeURIComponent);
    if (route.kind === 'console' || route.kind === 'consoleEvents') {
      void nodeConsole.serve(req, res, route, url);
    } else if (parts[1] === 'debug' && parts[2] === 'pods' && parts.length === 6) {
      const [, , , ns = '', name = '', what] = parts;
      if (!known(ns, name))
        json(res, 404, {
          kind: 'Status',
          status: 'Failure',
          message: `pod ${ns}/${name} not found`,
          code: 404,
        });
      else json(res, 200, what === 'timeline' ? cannedTimeline(ns, name) : cannedWhy(ns, name));
    } else if (route.kind === 'containerLogs') {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('line 0\n');
      if (url.searchParams.get('follow') === 'true') {
        followers.add(res);
        res.once('close', () => followers.delete(res));
      } else res.end();
    } else {
      res.writeHead(404, { 'content-type': 'text/plain' });
      res.end('404 page not found\n');
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    logLine(text) {
      for (const f of followers) f.write(`${text}\n`);
    },
    async close() {
      nodeConsole.close();
      const done = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await done;
    },
  };
}

// ---- a real browser -----------------------------------------------------------------------------

/** Debian's chromium (scripts/setup.sh installs it). */
export const CHROMIUM = '/usr/bin/chromium';

/**
 * Headless chromium driven by puppeteer-core; fails (never skips) when the browser is missing.
 * `extraArgs` are more command-line switches (e.g. `--host-resolver-rules=…`).
 */
export async function launchBrowser(
  extraArgs: readonly string[] = [],
): Promise<import('puppeteer-core').Browser> {
  const puppeteer = (await import('puppeteer-core')).default;
  return puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    // Root in a VM: no user namespaces for chromium's sandbox.
    args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu', ...extraArgs],
    timeout: 30_000,
  });
}

/**
 * A page that records what the browser complains about (script errors, CSP violations, failed
 * loads) so a test can assert there was nothing.
 */
export async function watchedPage(
  browser: import('puppeteer-core').Browser,
): Promise<{ page: import('puppeteer-core').Page; problems: string[] }> {
  const page = await browser.newPage();
  const problems: string[] = [];
  page.on('pageerror', (err) => problems.push(`pageerror: ${String(err)}`));
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(`console: ${m.text()} (${m.location().url ?? ''})`);
  });
  page.setDefaultTimeout(10_000);
  return { page, problems };
}

/** Horizontal overflow of the document (0: no horizontal scroll). */
export function horizontalOverflow(page: import('puppeteer-core').Page): Promise<number> {
  return page.evaluate('document.documentElement.scrollWidth - window.innerWidth') as Promise<number>;
}

/**
 * Text whose contrast with its background is under WCAG AA (4.5:1): every visible element with
 * its own text, its colour against the first opaque background up its ancestors. (Browser code, as
 * a string: the project compiles without the DOM's types.)
 */
const CONTRAST_PROBLEMS = `(() => {
  const rgb = (c) => (c.match(/[\\d.]+/g) ?? []).map(Number);
  const lum = ([r = 0, g = 0, b = 0]) => {
    const f = (v) => { const s = v / 255; return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4; };
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
  };
  const background = (e) => {
    for (let n = e; n; n = n.parentElement) {
      const c = rgb(getComputedStyle(n).backgroundColor);
      if (c.length === 3 || (c[3] ?? 0) > 0.99) return c.slice(0, 3);
    }
    return [255, 255, 255];
  };
  const out = [];
  for (const e of document.querySelectorAll('body *')) {
    const own = [...e.childNodes].some((n) => n.nodeType === 3 && (n.textContent ?? '').trim() !== '');
    if (!own || e.getClientRects().length === 0) continue;
    const fg = lum(rgb(getComputedStyle(e).color));
    const bg = lum(background(e));
    const ratio = (Math.max(fg, bg) + 0.05) / (Math.min(fg, bg) + 0.05);
    if (ratio < 4.5) out.push(e.tagName.toLowerCase() + '.' + e.className + ': ' + ratio.toFixed(2) + ' "' + (e.textContent ?? '').trim().slice(0, 30) + '"');
  }
  return out;
})()`;

export function contrastProblems(page: import('puppeteer-core').Page): Promise<string[]> {
  return page.evaluate(CONTRAST_PROBLEMS) as Promise<string[]>;
}
