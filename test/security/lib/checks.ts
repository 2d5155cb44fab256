/**
 * Executes one probe of the table (probes.ts) against a live kubelet and says what was seen:
 * HTTP requests and TLS handshakes made by `nobody`, log warnings, the console's stream slots, the
 * client CA reload; the node's files and socket (node-checks.ts) and static pods (static-pods.ts)
 * are dispatched from here. Browser probes are in browser.ts. No upstream counterpart.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { request as httpsRequest } from 'node:https';
import type { ClientRequest, IncomingMessage } from 'node:http';
import { join } from 'node:path';
import { sleep } from '../../../src/util/abort.ts';
import { routesOf, type Expect, type HttpCheck, type OtherCheck, type Probe } from '../probes.ts';
import { OTHER_USER, runAs } from './as-nobody.ts';
import { clientCert, testCa } from './common.ts';
import {
  dirModes,
  nobodyAccess,
  nobodyCatSecret,
  socketConnect,
  socketMode,
  socketRace,
} from './node-checks.ts';
import { fail, type Observation } from './observation.ts';
import type { HttpAction, HttpResult, TlsResult } from './prober.ts';
import { runHttp } from './prober.ts';
import { staticPodCheck } from './static-pods.ts';
import { fillPath, listenerBase, type LiveTarget } from './target.ts';

/** The Sec-WebSocket-Protocol entry that carries a bearer token (upstream's websocket authenticator). */
export function tokenProtocol(token: string): string {
  return `base64url.bearer.authorization.k8s.io.${Buffer.from(token).toString('base64url')}`;
}

/** The actions of an HTTP check: one request per sampled route. */
export function httpActions(c: HttpCheck, t: LiveTarget): { label: string; action: HttpAction }[] | string {
  const base = listenerBase(t, c.listener);
  if (!base) return `no ${c.listener} listener on ${t.name}`;
  const cred = t.identities[c.who ?? 'anonymous'];
  if (!cred) return `no ${c.who ?? 'anonymous'} identity on ${t.name}`;
  const port = t.ports[c.listener] ?? 0;
  return routesOf(c).map((r) => {
    const method = c.method ?? r.method;
    const websocket = c.websocket ?? (c.method === undefined && r.websocket === true);
    const path = fillPath(t, r.path);
    const headers: Record<string, string> = { ...(c.headers ?? {}) };
    if (c.host) headers.host = c.host.replace('{port}', String(port));
    const protocols = websocket ? ['v4.channel.k8s.io'] : [];
    if (cred.token && c.tokenIn === 'websocket-protocol') {
      if (websocket) protocols.push(tokenProtocol(cred.token));
      else headers['sec-websocket-protocol'] = tokenProtocol(cred.token);
    } else if (cred.token) {
      headers.authorization = `Bearer ${cred.token}`;
    }
    const action: HttpAction = {
      op: 'http',
      url: `${base}${path}`,
      method,
      headers,
      ...(c.body !== undefined ? { body: c.body } : {}),
      ...(cred.cert ? { cert: cred.cert } : {}),
      ...(websocket ? { websocket: { protocols } } : {}),
    };
    return { label: `${method} ${r.path}${websocket ? ' (WebSocket)' : ''}`, action };
  });
}

function meets(e: Expect, r: HttpResult): boolean {
  if ('status' in e) return r.status !== undefined && e.status.includes(r.status);
  if ('statusNot' in e) return r.status !== undefined && !e.statusNot.includes(r.status);
  if ('unreachable' in e) return r.status === undefined && /ECONNREFUSED/.test(r.error ?? '');
  const v = r.headers?.[e.header.toLowerCase()];
  return v !== undefined && new RegExp(e.pattern, 'i').test(v);
}

/** `401 ×21` or `200 ×3, 404 ×18` (transport errors as `error`). */
export function statusSummary(results: readonly HttpResult[]): string {
  const counts = new Map<string, number>();
  for (const r of results) {
    const k = r.status !== undefined ? String(r.status) : 'error';
    counts.set(k, (counts.get(k) ?? 0) + 1);
  }
  return [...counts.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([k, n]) => `${k} ×${n}`)
    .join(', ');
}

function describeResult(r: HttpResult, header?: string): string {
  if (r.status === undefined) return `error ${r.error ?? ''}`;
  const h = header ? ` ${header}: ${r.headers?.[header] ?? '(none)'}` : '';
  const body = (r.body ?? '').replace(/\s+/g, ' ').slice(0, 100);
  return `${r.status}${h}${body ? ` "${body}"` : ''}`;
}

async function httpCheck(c: HttpCheck, t: LiveTarget): Promise<Observation> {
  const planned = httpActions(c, t);
  if (typeof planned === 'string') return fail(planned);
  const results = (await runAs(
    OTHER_USER,
    planned.map((p) => p.action),
  )) as HttpResult[];
  const header = 'header' in c.expect ? c.expect.header : undefined;
  if ('unreachable' in c.expect) {
    const refused = results.filter((r) => meets(c.expect, r)).length;
    return {
      ok: refused === results.length,
      observed: refused === results.length ? 'connection refused' : statusSummary(results),
      details: [],
    };
  }
  const details: string[] = [];
  results.forEach((r, i) => {
    if (!meets(c.expect, r)) details.push(`${planned[i]?.label ?? ''} → ${describeResult(r, header)}`);
  });
  const observed = header
    ? `${header} as wanted on ${results.length - details.length}/${results.length} (${statusSummary(results)})`
    : statusSummary(results);
  return { ok: details.length === 0 && results.length > 0, observed, details };
}

async function tlsCheck(version: 'TLSv1' | 'TLSv1.1', t: LiveTarget): Promise<Observation> {
  const port = t.ports.api;
  if (port === undefined) return fail('no kubelet API');
  const [weak, control] = (await runAs(OTHER_USER, [
    { op: 'tls', host: '127.0.0.1', port, minVersion: version, maxVersion: version },
    { op: 'tls', host: '127.0.0.1', port, minVersion: 'TLSv1.2', maxVersion: 'TLSv1.3' },
  ])) as [TlsResult, TlsResult];
  if (!control.handshake) return fail(`no handshake at all: ${control.error ?? ''}`);
  if (weak.handshake) return fail(`accepted (${weak.protocol ?? ''}, ${weak.cipher ?? ''})`);
  // The server's alert, not the client's own refusal to offer the version, is the answer.
  const alert = /alert ([a-z ]+?)(?::|$)/i.exec(weak.error ?? '')?.[1];
  if (!alert) return fail(`no server alert: ${weak.error ?? ''}`);
  return { ok: true, observed: `refused (alert ${alert})`, details: [weak.error ?? ''] };
}

/** The kubelet's log lines at warning level (tskubelet's JSON; upstream's klog `W…`). */
async function warnings(t: LiveTarget): Promise<string[]> {
  const lines = (await readFile(t.logFile, 'utf8')).split('\n');
  return lines.filter((l) => /"level":40\b/.test(l) || /^W\d{4} /.test(l));
}

const WARNING_ABOUT: Record<
  'root-dir-mode' | 'read-only-port' | 'console-listener',
  (l: string, t: LiveTarget) => boolean
> = {
  'root-dir-mode': (l, t) => l.includes(t.rootDir) && /mode|perm|0?755|0?750/i.test(l),
  'read-only-port': (l) => /read-only/i.test(l),
  // The listener named as such (a refused request to /console/ is a warning too, about that request).
  'console-listener': (l) => /console-address|console listener/i.test(l),
};

async function warningCheck(
  about: 'root-dir-mode' | 'read-only-port' | 'console-listener',
  t: LiveTarget,
): Promise<Observation> {
  const w = await warnings(t);
  const hit = w.find((l) => WARNING_ABOUT[about](l, t));
  return hit
    ? { ok: true, observed: 'warned', details: [hit.slice(0, 300)] }
    : fail(
        `no such warning among ${w.length}`,
        w.slice(0, 5).map((l) => l.slice(0, 200)),
      );
}

interface OpenStream {
  status: number;
  req: ClientRequest;
  res?: IncomingMessage;
}

/** A console event stream as `cert`'s user, left open; its status. */
function openStream(t: LiveTarget, cert: { cert: string; key: string }): Promise<OpenStream> {
  return new Promise((resolve, reject) => {
    void Promise.all([readFile(cert.cert), readFile(cert.key)]).then(([c, k]) => {
      const req = httpsRequest({
        host: '127.0.0.1',
        port: t.ports.api,
        path: '/debug/console/events',
        cert: c,
        key: k,
        rejectUnauthorized: false,
        agent: false,
      });
      req.once('response', (res) => {
        if (res.statusCode !== 200) res.resume();
        resolve({ status: res.statusCode ?? 0, req, res });
      });
      req.once('error', reject);
      req.end();
    }, reject);
  });
}

async function ssePerUser(t: LiveTarget): Promise<Observation> {
  const a = t.admin.cert;
  const b = t.secondUser?.cert;
  if (!a || !b) return fail('needs two client certificates');
  const open: OpenStream[] = [];
  try {
    let refusedAt: number | undefined;
    for (let i = 0; i < 20; i++) {
      const s = await openStream(t, a);
      open.push(s);
      if (s.status !== 200) {
        refusedAt = i;
        break;
      }
    }
    const other = await openStream(t, b);
    open.push(other);
    const first =
      refusedAt === undefined
        ? 'never refused in 20'
        : `${refusedAt} streams, then ${open[refusedAt]?.status}`;
    return {
      ok: refusedAt !== undefined && other.status === 200,
      observed: `one user: ${first}; another user: ${other.status}`,
      details: [],
    };
  } finally {
    for (const s of open) s.req.destroy();
  }
}

async function clientCaReload(t: LiveTarget): Promise<Observation> {
  if (!t.clientCAFile) return fail('no client CA file');
  const dir = join(t.scratch, 'reload');
  const ca = await testCa(join(dir, 'pki'), 'reload-ca');
  const user = await clientCert(ca, join(dir, 'pki'), join(dir, 'nobody'), 'sec-reload');
  const asUser = () =>
    runHttp({ op: 'http', url: `${listenerBase(t, 'api') ?? ''}/pods`, method: 'GET', cert: user.own });
  const before = await asUser();
  const original = await readFile(t.clientCAFile, 'utf8');
  // In place, as `cp` does; the kubelet must notice a changed file without a restart.
  await writeFile(t.clientCAFile, original + (await readFile(ca.cert, 'utf8')));
  const started = Date.now();
  let after: HttpResult = before;
  while (Date.now() - started < 75_000) {
    after = await asUser();
    if (after.status === 200) break;
    await sleep(500);
  }
  const took = ((Date.now() - started) / 1000).toFixed(1);
  return {
    ok: before.status === 401 && after.status === 200,
    observed: `${before.status ?? before.error}, then ${after.status ?? after.error}${after.status === 200 ? ` after ${took} s` : ` for ${took} s`}`,
    details: [],
  };
}

/** Runs one non-browser probe against the target. */
export async function runCheck(probe: Probe, t: LiveTarget): Promise<Observation> {
  const c = probe.check;
  if (c.kind === 'http') return httpCheck(c, t);
  return otherCheck(c, t);
}

async function otherCheck(c: OtherCheck, t: LiveTarget): Promise<Observation> {
  switch (c.kind) {
    case 'tls':
      return tlsCheck(c.version, t);
    case 'dir-modes':
      return dirModes(c.mode, t);
    case 'nobody-access':
      return nobodyAccess(c.under, t);
    case 'nobody-cat-secret':
      return nobodyCatSecret(t);
    case 'socket-mode':
      return socketMode(t);
    case 'socket-connect':
      return socketConnect(t);
    case 'socket-race':
      return socketRace(t);
    case 'warning':
      return warningCheck(c.about, t);
    case 'static-pod':
      return staticPodCheck(c.defect, c.event === true, t);
    case 'sse-per-user':
      return ssePerUser(t);
    case 'client-ca-reload':
      return clientCaReload(t);
    case 'browser':
      return fail('a browser probe: see browser.ts');
  }
}
