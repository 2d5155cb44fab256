import { execFile } from 'node:child_process';
import { readFile, realpath } from 'node:fs/promises';
import { sep } from 'node:path';
import { KubeletError, describeError } from '../util/errors.ts';

/** How long one `mount`/`umount` may take before it counts as failed. */
const MOUNT_COMMAND_TIMEOUT_MS = 30_000;
/** Bound on unmount rounds (stacked mounts need one round each). */
const MAX_UNMOUNT_ROUNDS = 32;

export interface MountEntry {
  mountPoint: string;
  fsType: string;
  source: string;
}

/** mountinfo escapes space, tab, newline and backslash as octal (`\040`). */
function unescapeOctal(s: string): string {
  return s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
}

/** Parses /proc/self/mountinfo text (`id parent maj:min root mountpoint opts [optional...] - fstype source superopts`). */
export function parseMountInfo(text: string): MountEntry[] {
  const out: MountEntry[] = [];
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const fields = line.split(' ');
    const dash = fields.indexOf('-', 6);
    const mountPoint = fields[4];
    if (mountPoint === undefined || dash < 0) continue;
    out.push({
      mountPoint: unescapeOctal(mountPoint),
      fsType: fields[dash + 1] ?? '',
      source: unescapeOctal(fields[dash + 2] ?? ''),
    });
  }
  return out;
}

export async function readMounts(): Promise<MountEntry[]> {
  return parseMountInfo(await readFile('/proc/self/mountinfo', 'utf8'));
}

/** The path with symlinks resolved (mountinfo names resolved paths); undefined when it does not exist. */
async function resolved(path: string): Promise<string | undefined> {
  try {
    return await realpath(path);
  } catch (err) {
    if (err instanceof Error && 'code' in err && err.code === 'ENOENT') return undefined;
    throw err;
  }
}

/** The mount at exactly `path` (the topmost one when mounts are stacked), if any. */
export async function mountAt(path: string): Promise<MountEntry | undefined> {
  const real = await resolved(path);
  if (real === undefined) return undefined;
  return (await readMounts()).filter((m) => m.mountPoint === real).at(-1);
}

/** Mount points at or below `dir`, deepest first. */
export async function mountsUnder(dir: string): Promise<MountEntry[]> {
  const real = await resolved(dir);
  if (real === undefined) return [];
  const prefix = real.endsWith(sep) ? real : real + sep;
  return (await readMounts())
    .map((m, i) => ({ m, i }))
    .filter(({ m }) => m.mountPoint === real || m.mountPoint.startsWith(prefix))
    .sort((a, b) => b.m.mountPoint.length - a.m.mountPoint.length || b.i - a.i)
    .map(({ m }) => m);
}

/** Runs a mount-related command with the mount timeout; rejects with a KubeletError carrying its stderr. */
export function run(cmd: string, args: string[], op: string, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile(cmd, args, { timeout: MOUNT_COMMAND_TIMEOUT_MS, signal }, (err, _stdout, stderr) => {
      if (!err) {
        resolve();
        return;
      }
      const detail = stderr.trim() || describeError(err);
      const code = signal?.aborted ? 'Canceled' : 'Internal';
      reject(new KubeletError(code, op, `${cmd} ${args.join(' ')}: ${detail}`, { cause: err }));
    });
  });
}

/** The `-o` options of a tmpfs mount: its root's mode always (the tmpfs default is 1777), the size if set. */
export function tmpfsOptions(opts: { mode: number; sizeBytes?: number }): string {
  const o = [`mode=${(opts.mode & 0o7777).toString(8).padStart(4, '0')}`];
  if (opts.sizeBytes !== undefined) o.push(`size=${Math.max(1, Math.ceil(opts.sizeBytes))}`);
  return o.join(',');
}

/**
 * Mounts a fresh tmpfs (memory-backed, never written to disk) on `dir`, which must exist, its root
 * with `mode` (never tmpfs's default 1777). A dir that already has a tmpfs on it is left alone, so
 * this is idempotent across syncs and kubelet restarts.
 */
export async function mountTmpfs(
  dir: string,
  opts: { mode: number; sizeBytes?: number; signal?: AbortSignal },
): Promise<void> {
  const existing = await mountAt(dir);
  if (existing?.fsType === 'tmpfs') return;
  const args = ['-t', 'tmpfs', '-o', tmpfsOptions(opts), 'tmpfs', dir];
  await run('mount', args, `mount tmpfs on ${dir}`, opts.signal);
}

/**
 * Bind-mounts `source` on `target` (which must exist). `noCanonicalize` keeps libmount from resolving
 * the source path first (a `/proc/<pid>/fd/N` link must stay the descriptor it names).
 */
export async function bindMount(
  source: string,
  target: string,
  opts: { noCanonicalize?: boolean; signal?: AbortSignal } = {},
): Promise<void> {
  const args = [...(opts.noCanonicalize ? ['--no-canonicalize'] : []), '--bind', source, target];
  await run('mount', args, `bind ${source} at ${target}`, opts.signal);
}

/**
 * Unmounts everything mounted at or below `dir`, deepest first, and checks that nothing is left.
 * Throws (and leaves the rest mounted) when an unmount fails: the caller must not delete `dir` then,
 * or it would delete through a live mount.
 */
export async function unmountAllUnder(dir: string, signal?: AbortSignal): Promise<string[]> {
  const done: string[] = [];
  for (let round = 0; round < MAX_UNMOUNT_ROUNDS; round++) {
    const mounts = await mountsUnder(dir);
    if (mounts.length === 0) return done;
    for (const m of mounts) {
      await run('umount', [m.mountPoint], `unmount ${m.mountPoint}`, signal);
      done.push(m.mountPoint);
    }
  }
  const left = await mountsUnder(dir);
  if (left.length === 0) return done;
  throw new KubeletError(
    'Internal',
    `unmount volumes under ${dir}`,
    `still mounted after ${MAX_UNMOUNT_ROUNDS} rounds: ${left.map((m) => m.mountPoint).join(', ')}`,
  );
}
