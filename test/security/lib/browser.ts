/**
 * The attacker suite's browser probes: Debian's headless chromium (puppeteer-core, as the console
 * tests launch it) with two names that resolve to 127.0.0.1 — `rebind.example` (a DNS rebinding
 * page) and `attacker.example` (a page of another site) — against the kubelet's loopback listeners
 * and, through `kubectl proxy`, its API.
 *
 * Two proxies: the README's (`kubectl proxy` to the API server, whose nodes/proxy reaches the
 * kubelet), which the forms go through; and one whose kubeconfig names the kubelet itself with an
 * allowed client certificate, which the WebSocket goes through — the bed's kube-apiserver 1.20
 * drops the query of an upgrade on nodes/proxy (apimachinery's UpgradeAwareHandler.tryUpgrade
 * dials `h.Location` without the request's RawQuery), so no exec WebSocket carries a command that
 * way, from a page or not. Each attack has a control: the same request from a client that is not a
 * browser, through the same proxy, must work and leave its file, so a refusal is the kubelet's.
 * No upstream counterpart.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Browser, Page } from 'puppeteer-core';
import { launchBrowser } from '../../../src/console/testing.ts';
import { sleep } from '../../../src/util/abort.ts';
import type { BrowserScenario } from '../probes.ts';
import { fail, type Observation } from './observation.ts';
import { SECRET_MARKERS } from './common.ts';
import { runHttp } from './prober.ts';
import type { LiveTarget } from './target.ts';

const RESOLVER_RULES = '--host-resolver-rules=MAP rebind.example 127.0.0.1, MAP attacker.example 127.0.0.1';

/** The form encodings a page can send without a CORS preflight. */
const FORM_ENCODINGS = [
  ['urlencoded', 'application/x-www-form-urlencoded'],
  ['multipart', 'multipart/form-data'],
  ['text-plain', 'text/plain'],
] as const;

/** Lazily started browser, `kubectl proxy` and attacker page server, shared by a target's probes. */
export interface BrowserSession {
  run(scenario: BrowserScenario, t: LiveTarget): Promise<Observation>;
  close(): Promise<void>;
}

/** `kubectl proxy` on a free loopback port against the cluster; its base URL. */
async function startKubectlProxy(kubeconfig: string): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn('kubectl', ['proxy', '--port=0', '--address=127.0.0.1'], {
    env: { ...process.env, KUBECONFIG: kubeconfig },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`kubectl proxy did not start: ${out}`)), 20_000);
    const onData = (d: Buffer) => {
      out += d.toString('utf8');
      const m = /Starting to serve on (127\.0\.0\.1:\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(`http://${m[1] ?? ''}`);
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('exit', (code) => reject(new Error(`kubectl proxy exited ${code}: ${out}`)));
  });
  return { url, child };
}

/** The attacker's site: serves whatever HTML it is given for a path. */
function startPageServer(): Promise<{ port: number; pages: Map<string, string>; server: Server }> {
  const pages = new Map<string, string>();
  const server = createServer((req, res) => {
    const html = pages.get(new URL(req.url ?? '/', 'http://x').pathname);
    res.writeHead(html ? 200 : 404, { 'content-type': 'text/html; charset=utf-8' });
    res.end(html ?? 'not found');
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({ port: (server.address() as AddressInfo).port, pages, server }),
    ),
  );
}

/** A kubeconfig whose server is the kubelet's API (self-signed or not) and whose user is `cert`'s. */
async function kubeletKubeconfig(t: LiveTarget): Promise<string> {
  const cert = t.admin.cert;
  if (!cert || t.ports.api === undefined) throw new Error(`${t.name}: no client certificate for the kubelet`);
  const path = join(t.scratch, 'kubelet-proxy.kubeconfig');
  const text = [
    'apiVersion: v1',
    'kind: Config',
    `clusters: [{name: kubelet, cluster: {server: "https://127.0.0.1:${t.ports.api}", insecure-skip-tls-verify: true}}]`,
    `users: [{name: allowed, user: {client-certificate: "${cert.cert}", client-key: "${cert.key}"}}]`,
    'contexts: [{name: kubelet, context: {cluster: kubelet, user: allowed}}]',
    'current-context: kubelet',
    '',
  ].join('\n');
  await writeFile(path, text, { mode: 0o600 });
  return path;
}

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');

/** A page that submits one form per encoding, each into its own frame, as soon as it loads. */
function formPage(runUrl: (marker: string) => string): string {
  const forms = FORM_ENCODINGS.map(
    ([name, enctype]) =>
      `<iframe name="f-${name}"></iframe>` +
      `<form target="f-${name}" method="POST" enctype="${enctype}" action="${esc(runUrl(`/tmp/sec-form-${name}`))}">` +
      '<input name="a" value="b"></form>',
  ).join('\n');
  return `<!doctype html><title>free prizes</title><body>${forms}<script>for (const f of document.forms) f.submit();</script>`;
}

function websocketPage(url: string): string {
  return (
    '<!doctype html><title>free prizes</title><body><script>' +
    `window.outcome = new Promise((resolve) => { const ws = new WebSocket(${JSON.stringify(url)}, ['v4.channel.k8s.io']);` +
    "ws.onopen = () => resolve('open'); ws.onerror = () => resolve('error'); });" +
    '</script>'
  );
}

async function markersIn(t: LiveTarget, prefix: string): Promise<string[]> {
  const ls = await t.execInPod(['ls', '/tmp']);
  return ls.split('\n').filter((f) => f.startsWith(prefix));
}

export function createBrowserSession(): BrowserSession {
  let browser: Promise<Browser> | undefined;
  let apiProxy: Promise<{ url: string; child: ChildProcess }> | undefined;
  let kubeletProxy: Promise<{ url: string; child: ChildProcess }> | undefined;
  let site: Promise<{ port: number; pages: Map<string, string>; server: Server }> | undefined;

  const getBrowser = () => (browser ??= launchBrowser([RESOLVER_RULES]));

  async function withPage<T>(fn: (page: Page) => Promise<T>): Promise<T> {
    const page = await (await getBrowser()).newPage();
    page.setDefaultTimeout(30_000);
    try {
      return await fn(page);
    } finally {
      await page.close();
    }
  }

  async function rebind(t: LiveTarget, listener: 'healthz' | 'console'): Promise<Observation> {
    const port = t.ports[listener];
    if (port === undefined) return fail(`no ${listener} listener`);
    return withPage(async (page) => {
      const res = await page.goto(`http://rebind.example:${port}/pods`, { waitUntil: 'domcontentloaded' });
      const status = res?.status();
      const text = (await page.evaluate('document.body ? document.body.innerText : ""')) as string;
      const leaked = text.includes(t.pod.name) || text.includes(SECRET_MARKERS.env);
      return {
        ok: status !== undefined && (status < 200 || status > 299) && !leaked,
        observed: `${status ?? 'no answer'}${leaked ? ', the pods in the page' : ', no pod in the page'}`,
        details: [text.slice(0, 200)],
      };
    });
  }

  function proxyPath(t: LiveTarget, rest: string): string {
    return `/api/v1/nodes/${t.nodeName}/proxy${rest}`;
  }

  async function formRun(t: LiveTarget): Promise<Observation> {
    const base = (await getApiProxy(t)).url;
    const s = await getSite();
    await t.execInPod(['sh', '-c', 'rm -f /tmp/sec-form-*']);
    const { namespace, name, container } = t.pod;
    const runUrl = (marker: string) =>
      `${base}${proxyPath(t, `/run/${namespace}/${name}/${container}`)}?cmd=${encodeURIComponent(`touch ${marker}`)}`;
    // The control: the same POST from a client that is no browser runs.
    const control = await runHttp({ op: 'http', url: runUrl('/tmp/sec-form-control'), method: 'POST' });
    s.pages.set('/form', formPage(runUrl));
    const statuses = await withPage(async (page) => {
      const seen: number[] = [];
      page.on('response', (r) => {
        if (r.url().includes('/proxy/run/')) seen.push(r.status());
      });
      await page.goto(`http://attacker.example:${s.port}/form`, { waitUntil: 'domcontentloaded' });
      const deadline = Date.now() + 20_000;
      while (seen.length < FORM_ENCODINGS.length && Date.now() < deadline) await sleep(100);
      return seen;
    });
    await sleep(1_000);
    const made = await markersIn(t, 'sec-form-');
    const controlRan = control.status === 200 && made.includes('sec-form-control');
    const attacks = made.filter((f) => f !== 'sec-form-control');
    const refused = statuses.filter((x) => x >= 400).length;
    return {
      ok:
        controlRan &&
        statuses.length === FORM_ENCODINGS.length &&
        refused === statuses.length &&
        attacks.length === 0,
      observed:
        `page's POSTs answered ${statuses.join(', ') || 'nothing'}; ` +
        `${attacks.length === 0 ? 'no file in the container' : `created ${attacks.join(' ')}`}` +
        ` (control without browser headers: ${control.status ?? control.error ?? ''}${controlRan ? ', ran' : ', DID NOT RUN'})`,
      details: [],
    };
  }

  async function websocketExec(t: LiveTarget): Promise<Observation> {
    const base = (await getKubeletProxy(t)).url;
    const s = await getSite();
    await t.execInPod(['sh', '-c', 'rm -f /tmp/sec-ws-*']);
    const { namespace, name, container } = t.pod;
    const execPath = (marker: string) =>
      `/exec/${namespace}/${name}/${container}?command=touch&command=${marker}&output=1`;
    const control = await runHttp({
      op: 'http',
      url: `${base}${execPath('/tmp/sec-ws-control')}`,
      method: 'GET',
      websocket: { protocols: ['v4.channel.k8s.io'], holdMs: 1_000 },
    });
    s.pages.set('/ws', websocketPage(`${base.replace(/^http/, 'ws')}${execPath('/tmp/sec-ws-exec')}`));
    const { outcome, handshake, console } = await withPage(async (page) => {
      const cdp = await page.createCDPSession();
      await cdp.send('Network.enable');
      let status: number | undefined;
      cdp.on('Network.webSocketHandshakeResponseReceived', (e) => {
        status = e.response.status;
      });
      const messages: string[] = [];
      page.on('console', (m) => messages.push(m.text()));
      await page.goto(`http://attacker.example:${s.port}/ws`, { waitUntil: 'domcontentloaded' });
      const result = (await page.evaluate('window.outcome')) as string;
      return { outcome: result, handshake: status, console: messages };
    });
    await sleep(1_000);
    const made = await markersIn(t, 'sec-ws-');
    const controlRan = control.status === 101 && made.includes('sec-ws-control');
    const code = handshake ?? /response code: (\d+)/.exec(console.join(' '))?.[1];
    return {
      ok: controlRan && outcome !== 'open' && !made.includes('sec-ws-exec'),
      observed:
        `page's WebSocket ${outcome}${code !== undefined ? ` (${code})` : ''}; ` +
        `${made.includes('sec-ws-exec') ? 'the command ran' : 'no file in the container'}` +
        ` (control without browser headers: ${control.status ?? control.error ?? ''}${controlRan ? ', ran' : ', DID NOT RUN'})`,
      details: console.slice(0, 5),
    };
  }

  async function consoleSameOrigin(t: LiveTarget): Promise<Observation> {
    const base = (await getApiProxy(t)).url;
    return withPage(async (page) => {
      const problems: string[] = [];
      page.on('pageerror', (e) => problems.push(String(e)));
      const res = await page.goto(`${base}${proxyPath(t, '/console/')}`, { waitUntil: 'domcontentloaded' });
      const sel = `#pod-list button[data-pod="${t.pod.namespace}/${t.pod.name}"]`;
      const listed = await page.waitForSelector(sel, { timeout: 30_000 }).then(
        () => true,
        () => false,
      );
      const conn = (await page.evaluate('document.getElementById("conn")?.textContent ?? ""')) as string;
      return {
        ok: res?.status() === 200 && listed && conn === 'Live' && problems.length === 0,
        observed: `${res?.status() ?? 'no answer'}, pod ${listed ? 'listed' : 'not listed'}, feed ${conn || 'absent'}`,
        details: problems,
      };
    });
  }

  function getApiProxy(t: LiveTarget): Promise<{ url: string; child: ChildProcess }> {
    if (!t.adminKubeconfig) return Promise.reject(new Error(`${t.name}: no cluster`));
    return (apiProxy ??= startKubectlProxy(t.adminKubeconfig));
  }
  function getKubeletProxy(t: LiveTarget): Promise<{ url: string; child: ChildProcess }> {
    return (kubeletProxy ??= kubeletKubeconfig(t).then(startKubectlProxy));
  }
  const getSite = () => (site ??= startPageServer());

  return {
    async run(scenario, t) {
      switch (scenario) {
        case 'rebind-healthz':
          return rebind(t, 'healthz');
        case 'rebind-console':
          return rebind(t, 'console');
        case 'form-run':
          return formRun(t);
        case 'websocket-exec':
          return websocketExec(t);
        case 'console-same-origin':
          return consoleSameOrigin(t);
      }
    },
    async close() {
      // What failed to start was reported by the probe that started it; only the rest is stopped.
      const b = browser;
      browser = undefined;
      await (await b?.catch(() => undefined))?.close();
      for (const proxy of [apiProxy, kubeletProxy]) {
        const p = await proxy?.catch(() => undefined);
        p?.child.kill('SIGTERM');
      }
      const s = await site?.catch(() => undefined);
      s?.server.closeAllConnections();
      await new Promise<void>((r) => (s ? s.server.close(() => r()) : r()));
    },
  };
}
