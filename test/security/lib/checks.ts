/**
 * Executes one probe of the table (probes.ts) against a live kubelet and says what was seen:
 * HTTP requests made by `nobody`, file and socket checks, log warnings, static pods, the console's
 * stream slots, the client CA reload. Browser probes are in browser.ts. No upstream counterpart.
 */
import { lstat, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { request as httpsRequest } from 'node:https';
import type { ClientRequest, IncomingMessage } from 'node:http';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { LABEL_POD_NAME } from '../../../src/config/defaults.ts';
import { sleep } from '../../../src/util/abort.ts';
import type { Pod } from '../../../src/api/types.ts';
import { IMAGE } from '../../integration/support.ts';
import { routesOf, type Expect, type HttpCheck, type OtherCheck, type Probe } from '../probes.ts';
import { OTHER_USER, runAs, shellAs } from './as-nobody.ts';
import { SECRET_MARKERS, clientCert, testCa } from './common.ts';
import type { AccessResult, Action, ConnectResult, HttpAction, HttpResult, TlsResult } from './prober.ts';
import { runHttp } from './prober.ts';
import { fillPath, listenerBase, type LiveTarget } from './target.ts';

/** What a probe saw: whether tskubelet's expectation holds, a one-line summary, and the evidence. */
export interface Observation {
  ok: boolean;
  observed: string;
  details: string[];
}

const fail = (observed: string, details: string[] = []): Observation => ({ ok: false, observed, details });

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
  return { ok: true, observed: 'refused', details: [weak.error ?? ''] };
}

const octal = (m: number) => (m & 0o7777).toString(8).padStart(4, '0');

/** The pods' directories under the root dir (their names are the pods' UIDs). */
async function podUids(t: LiveTarget): Promise<string[]> {
  return readdir(join(t.rootDir, 'pods')).catch(() => []);
}

async function dirModes(mode: number, t: LiveTarget): Promise<Observation> {
  const uids = await podUids(t);
  if (uids.length === 0) return fail('no pod directory');
  const dirs = [t.rootDir, join(t.rootDir, 'pods'), ...uids.map((u) => join(t.rootDir, 'pods', u))];
  const seen: string[] = [];
  const details: string[] = [];
  for (const d of dirs) {
    const m = (await stat(d)).mode & 0o7777;
    seen.push(octal(m));
    if (m !== mode) details.push(`${d}: ${octal(m)}`);
  }
  const counts = [...new Set(seen)].map((m) => `${m} ×${seen.filter((s) => s === m).length}`).join(', ');
  return { ok: details.length === 0, observed: counts, details };
}

/** Every path under `dir` (itself included), symlinks not followed; at most `limit`. */
async function walk(dir: string, limit = 5_000): Promise<{ path: string; dir: boolean }[]> {
  const out: { path: string; dir: boolean }[] = [{ path: dir, dir: true }];
  for (let i = 0; i < out.length && out.length < limit; i++) {
    const e = out[i];
    if (!e?.dir) continue;
    const entries = await readdir(e.path, { withFileTypes: true }).catch(() => []);
    for (const x of entries) out.push({ path: join(e.path, x.name), dir: x.isDirectory() });
  }
  return out.slice(0, limit);
}

async function nobodyAccess(under: 'root-dir' | 'pod-logs', t: LiveTarget): Promise<Observation> {
  const uids = await podUids(t);
  let entries: { path: string; dir: boolean }[] = [];
  if (under === 'root-dir') {
    entries = await walk(t.rootDir);
  } else {
    const names = await readdir(t.podLogsDir).catch(() => []);
    for (const n of names.filter((n) => uids.some((u) => n.endsWith(`_${u}`)))) {
      entries.push(...(await walk(join(t.podLogsDir, n))));
    }
  }
  // The socket is probed on its own (a connect, not a read).
  entries = entries.filter((e) => e.path !== t.socketPath);
  if (entries.length < 2) return fail(`nothing to probe under ${under} (${entries.length} entries)`);
  const results = (await runAs(
    OTHER_USER,
    entries.map((e): Action => ({ op: 'access', path: e.path })),
  )) as AccessResult[];
  const details: string[] = [];
  results.forEach((r, i) => {
    const e = entries[i];
    if (!e) return;
    const open = r.read || r.write || (e.dir && r.exec);
    if (open) {
      const rwx = `${r.read ? 'r' : '-'}${r.write ? 'w' : '-'}${r.exec ? 'x' : '-'}`;
      details.push(`${e.path}${e.dir ? '/' : ''} ${rwx}`);
    }
  });
  const files = entries.filter((e) => !e.dir).length;
  return {
    ok: details.length === 0,
    observed: `${details.length} of ${entries.length} accessible (${files} files, ${entries.length - files} dirs)`,
    details: details.slice(0, 20),
  };
}

async function nobodyCatSecret(t: LiveTarget): Promise<Observation> {
  const files: string[] = [];
  for (const uid of await podUids(t)) {
    const base = join(t.rootDir, 'pods', uid, 'volumes', 'kubernetes.io~secret');
    for (const vol of await readdir(base).catch(() => [])) {
      for (const f of await readdir(join(base, vol)).catch(() => [])) {
        if (!f.startsWith('..')) files.push(join(base, vol, f));
      }
    }
  }
  if (files.length === 0) return fail('no secret volume file found');
  const r = await shellAs(OTHER_USER, ['cat', ...files]);
  if (r.stdout.includes(SECRET_MARKERS.secret)) return fail('printed the secret', [r.stdout.slice(0, 200)]);
  const why = /Permission denied/.test(r.stderr) ? 'Permission denied' : r.stderr.trim().slice(0, 100);
  return { ok: r.code !== 0, observed: `cat exited ${r.code}: ${why}`, details: files };
}

async function socketMode(t: LiveTarget): Promise<Observation> {
  if (!t.socketPath) return fail('no local socket');
  const st = await lstat(t.socketPath);
  const observed = `${st.isSocket() ? 'socket' : 'not a socket'}, ${octal(st.mode)}, uid ${st.uid}`;
  return {
    ok: st.isSocket() && (st.mode & 0o777) === 0o600 && st.uid === 0,
    observed,
    details: [t.socketPath],
  };
}

async function socketConnect(t: LiveTarget): Promise<Observation> {
  if (!t.socketPath) return fail('no local socket');
  const [r] = (await runAs(OTHER_USER, [{ op: 'connect', path: t.socketPath }])) as [ConnectResult];
  if (r.status !== undefined) return fail(`connected; GET /pods answered ${r.status}`);
  if (r.connected) return fail('connected (no answer)');
  return { ok: true, observed: `refused (${(r.error ?? '').split(':')[0] ?? ''})`, details: [r.error ?? ''] };
}

function socketRace(t: LiveTarget): Observation {
  const r = t.race;
  if (!r) return fail('no race was run');
  const observed = `${r.attempts} attempts on ${r.seen.length} names, ${r.connected} connected, ${r.answered} answered`;
  return { ok: r.attempts > 0 && r.connected === 0 && r.answered === 0, observed, details: r.seen };
}

/** The kubelet's log lines at warning level (tskubelet's JSON; upstream's klog `W…`). */
async function warnings(t: LiveTarget): Promise<string[]> {
  const lines = (await readFile(t.logFile, 'utf8')).split('\n');
  return lines.filter((l) => /"level":40\b/.test(l) || /^W\d{4} /.test(l));
}

async function warningCheck(about: 'root-dir-mode' | 'read-only-port', t: LiveTarget): Promise<Observation> {
  const w = await warnings(t);
  const hit =
    about === 'root-dir-mode'
      ? w.find((l) => l.includes(t.rootDir) && /mode|perm|0?755|0?750/i.test(l))
      : w.find((l) => /read-only/i.test(l));
  return hit
    ? { ok: true, observed: 'warned', details: [hit.slice(0, 300)] }
    : fail(
        `no such warning among ${w.length}`,
        w.slice(0, 5).map((l) => l.slice(0, 200)),
      );
}

/** The manifest of a static pod with one defect each (upstream ValidatePodCreate rejects all three). */
export function defectivePod(defect: 'hostpath-dotdot' | 'hostpath-type' | 'bidirectional'): Pod {
  const hostPath =
    defect === 'hostpath-dotdot'
      ? { path: '/tmp/../etc' }
      : defect === 'hostpath-type'
        ? { path: '/tmp', type: 'Sideways' }
        : { path: '/tmp', type: 'Directory' };
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: `bad-${defect}`, namespace: 'default' },
    spec: {
      terminationGracePeriodSeconds: 1,
      containers: [
        {
          name: 'main',
          image: IMAGE,
          command: ['sleep', '3600'],
          volumeMounts: [
            {
              name: 'host',
              mountPath: '/host',
              ...(defect === 'bidirectional' ? { mountPropagation: 'Bidirectional' } : {}),
            },
          ],
        },
      ],
      volumes: [{ name: 'host', hostPath }],
    },
  };
}

async function staticPodCheck(
  defect: 'hostpath-dotdot' | 'hostpath-type' | 'bidirectional',
  wantEvent: boolean,
  t: LiveTarget,
): Promise<Observation> {
  if (!t.manifests) return fail('no static pod directory');
  const pod = defectivePod(defect);
  // A name of its own for the event probe: a file the kubelet has not complained about yet.
  const name = `bad-${defect}${wantEvent ? '-event' : ''}`;
  pod.metadata.name = name;
  const file = `${name}.yaml`;
  const podName = `${name}-${t.nodeName}`;
  await writeFile(join(t.manifests, file), stringify(pod));
  try {
    // Upstream reads the directory every 20 s; tskubelet's bed nodes every second.
    const deadline = Date.now() + (t.kubelet === 'upstream' ? 45_000 : 15_000);
    let logged: string | undefined;
    let ran = false;
    while (Date.now() < deadline) {
      const log = await readFile(t.logFile, 'utf8');
      logged = log
        .split('\n')
        .find((l) => l.includes(file) || (l.includes(podName) && /invalid|reject/i.test(l)));
      const sandboxes = await t.cri.runtime.listPodSandbox({ labelSelector: { [LABEL_POD_NAME]: podName } });
      ran = sandboxes.length > 0;
      if (logged || ran) break;
      await sleep(500);
    }
    // Give a sandbox that is on its way the time to appear.
    await sleep(3_000);
    ran ||= (await t.cri.runtime.listPodSandbox({ labelSelector: { [LABEL_POD_NAME]: podName } })).length > 0;
    const healthz = await runHttp({
      op: 'http',
      url: `http://127.0.0.1:${t.ports.healthz ?? 0}/healthz`,
      method: 'GET',
    });
    const events = await t.events().catch((err: unknown) => [`(events unreadable: ${String(err)})`]);
    const event = events.find(
      (e) => e.startsWith('Warning ') && (e.includes(podName) || e.includes(file) || e.includes(name)),
    );
    const parts = [
      ran ? 'RAN' : 'not run',
      logged ? 'logged' : 'not logged',
      event ? 'event' : 'no event',
      healthz.status === 200 ? 'healthy' : `healthz ${healthz.status ?? healthz.error ?? ''}`,
    ];
    return {
      ok: !ran && logged !== undefined && healthz.status === 200 && (!wantEvent || event !== undefined),
      observed: wantEvent
        ? event
          ? 'a Warning event'
          : `no Warning event (${parts.join(', ')})`
        : parts.filter((x) => !/event/.test(x)).join(', '),
      details: [logged?.slice(0, 300) ?? '', event ?? ''],
    };
  } finally {
    await rm(join(t.manifests, file), { force: true });
  }
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
