/**
 * The attacker suite's checks of the node's own files: the modes of the root dir and the pod
 * dirs, what `nobody` can read, write or enter under the root dir and the pod log dir, a secret
 * read with `cat` as nobody, and the local socket (mode, a connect as nobody, the start race).
 * No upstream counterpart.
 */
import { lstat, readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { shellAs } from '../../kit/as-user.ts';
import { OTHER_USER, runAs } from './as-nobody.ts';
import { SECRET_MARKERS } from './common.ts';
import { fail, type Observation } from './observation.ts';
import type { AccessResult, Action, ConnectResult } from './prober.ts';
import type { LiveTarget } from './target.ts';

const octal = (m: number) => (m & 0o7777).toString(8).padStart(4, '0');

/** The pods' directories under the root dir (their names are the pods' UIDs). */
async function podUids(t: LiveTarget): Promise<string[]> {
  return readdir(join(t.rootDir, 'pods')).catch(() => []);
}

export async function dirModes(mode: number, t: LiveTarget): Promise<Observation> {
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

export async function nobodyAccess(under: 'root-dir' | 'pod-logs', t: LiveTarget): Promise<Observation> {
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

export async function nobodyCatSecret(t: LiveTarget): Promise<Observation> {
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

export async function socketMode(t: LiveTarget): Promise<Observation> {
  if (!t.socketPath) return fail('no local socket');
  const st = await lstat(t.socketPath);
  const observed = `${st.isSocket() ? 'socket' : 'not a socket'}, ${octal(st.mode)}, uid ${st.uid}`;
  return {
    ok: st.isSocket() && (st.mode & 0o777) === 0o600 && st.uid === 0,
    observed,
    details: [t.socketPath],
  };
}

export async function socketConnect(t: LiveTarget): Promise<Observation> {
  if (!t.socketPath) return fail('no local socket');
  const [r] = (await runAs(OTHER_USER, [{ op: 'connect', path: t.socketPath }])) as [ConnectResult];
  if (r.status !== undefined) return fail(`connected; GET /pods answered ${r.status}`);
  if (r.connected) return fail('connected (no answer)');
  return { ok: true, observed: `refused (${(r.error ?? '').split(':')[0] ?? ''})`, details: [r.error ?? ''] };
}

export function socketRace(t: LiveTarget): Observation {
  const r = t.race;
  if (!r) return fail('no race was run');
  const observed = `${r.attempts} attempts on ${r.seen.length} names, ${r.connected} connected, ${r.answered} answered`;
  return { ok: r.attempts > 0 && r.connected === 0 && r.answered === 0, observed, details: r.seen };
}
