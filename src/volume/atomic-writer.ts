import {
  chmod,
  chown,
  lstat,
  mkdir,
  mkdtemp,
  readFile,
  readdir,
  readlink,
  rename,
  rm,
  symlink,
  unlink,
  writeFile,
} from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, posix } from 'node:path';
import { KubeletError, describeError } from '../util/errors.ts';
import type { Logger } from '../util/logger.ts';
import { nullLogger } from '../util/logger.ts';

/** One file of a projected volume: its bytes and permission bits (e.g. 0o644). */
export interface FileProjection {
  data: Uint8Array;
  mode: number;
}

/** User-visible relative path → file. */
export type Payload = ReadonlyMap<string, FileProjection>;

/** The symlink that points at the current timestamped data directory (upstream dataDirName). */
export const DATA_DIR_NAME = '..data';
/** The symlink renamed over `..data` to switch versions atomically (upstream newDataDirName). */
const NEW_DATA_DIR_NAME = '..data_tmp';
/** Upstream atomic_writer.go limits. */
const MAX_FILE_NAME_LENGTH = 255;
const MAX_PATH_LENGTH = 4096;
const TS_DIR_PATTERN = /^\.\.\d{4}_\d\d_\d\d_\d\d_\d\d_\d\d\./;

export interface AtomicWriteOptions {
  /** Group-own every written file and directory (pod fsGroup); directories also get setgid. */
  gid?: number;
  /** Names the volume in errors and logs, e.g. `pod default/web volume certs`. */
  context?: string;
  logger?: Logger;
  now?: () => Date;
}

/**
 * Checks one payload path as upstream does and returns it cleaned. A path may not be empty or
 * absolute, contain a `..` element, start with `..` (the writer's reserved names), have an element
 * longer than 255 bytes, or be longer than 4096 bytes.
 */
export function validatePayloadPath(path: string): string {
  const bad = (why: string) =>
    new KubeletError('InvalidArgument', 'validate volume file path', `invalid path "${path}": ${why}`);
  if (path === '') throw bad('must not be empty');
  if (isAbsolute(path)) throw bad('must be a relative path');
  if (Buffer.byteLength(path) > MAX_PATH_LENGTH) throw bad(`must be at most ${MAX_PATH_LENGTH} characters`);
  const parts = path.split('/');
  for (const part of parts) {
    if (part === '..') throw bad("must not contain '..'");
    if (Buffer.byteLength(part) > MAX_FILE_NAME_LENGTH) {
      throw bad(`file names must be at most ${MAX_FILE_NAME_LENGTH} characters`);
    }
  }
  if ((parts[0] ?? '').startsWith('..')) throw bad("must not start with '..'");
  const clean = posix.normalize(path).replace(/\/+$/, '');
  if (clean === '.' || clean === '') throw bad('must name a file');
  return clean;
}

/** Validates every path and returns the payload keyed by cleaned paths. */
export function validatePayload(payload: Payload): Map<string, FileProjection> {
  const clean = new Map<string, FileProjection>();
  for (const [path, file] of payload) {
    const p = validatePayloadPath(path);
    if (clean.has(p)) {
      throw new KubeletError('InvalidArgument', 'validate volume file path', `duplicate path "${p}"`);
    }
    if (!Number.isInteger(file.mode) || file.mode < 0 || file.mode > 0o7777) {
      throw new KubeletError(
        'InvalidArgument',
        'validate volume file path',
        `invalid mode ${file.mode} for "${p}"`,
      );
    }
    clean.set(p, file);
  }
  for (const p of clean.keys()) {
    for (let d = posix.dirname(p); d !== '.'; d = posix.dirname(d)) {
      if (clean.has(d)) {
        throw new KubeletError(
          'InvalidArgument',
          'validate volume file path',
          `path "${p}" needs "${d}" to be a directory, but "${d}" is also a file`,
        );
      }
    }
  }
  return clean;
}

function errCode(err: unknown): string | undefined {
  return err instanceof Error && 'code' in err && typeof err.code === 'string' ? err.code : undefined;
}

/** `..2026_11_22_01_23_45.` (UTC); mkdtemp appends a random suffix, as upstream's MkdirTemp does. */
function timestampPrefix(d: Date): string {
  const p = (n: number) => String(n).padStart(2, '0');
  return `..${d.getUTCFullYear()}_${p(d.getUTCMonth() + 1)}_${p(d.getUTCDate())}_${p(d.getUTCHours())}_${p(d.getUTCMinutes())}_${p(d.getUTCSeconds())}.`;
}

/** Regular files under `dir`, by relative path; undefined when `dir` does not exist. */
async function listFiles(dir: string): Promise<Set<string> | undefined> {
  const out = new Set<string>();
  async function walk(rel: string): Promise<void> {
    const entries = await readdir(join(dir, rel), { withFileTypes: true });
    for (const e of entries) {
      const r = rel === '' ? e.name : `${rel}/${e.name}`;
      if (e.isDirectory()) await walk(r);
      else out.add(r);
    }
  }
  try {
    await walk('');
  } catch (err) {
    if (errCode(err) === 'ENOENT') return undefined;
    throw err;
  }
  return out;
}

/** True when `tsDir` holds exactly the payload: same files, bytes and mode bits. */
async function isUpToDate(payload: Map<string, FileProjection>, tsDir: string, gid: number | undefined) {
  const files = await listFiles(tsDir);
  if (!files || files.size !== payload.size) return false;
  for (const [p, f] of payload) {
    if (!files.has(p)) return false;
    const full = join(tsDir, p);
    const st = await lstat(full);
    if (!st.isFile() || (st.mode & 0o7777) !== f.mode) return false;
    if (gid !== undefined && st.gid !== gid) return false;
    if (!Buffer.from(f.data).equals(await readFile(full))) return false;
  }
  return true;
}

async function writePayloadToDir(payload: Map<string, FileProjection>, dir: string, gid: number | undefined) {
  const dirs = new Set<string>();
  for (const [p, f] of payload) {
    const full = join(dir, p);
    const parent = dirname(full);
    if (parent !== dir && !dirs.has(parent)) {
      await mkdir(parent, { recursive: true, mode: 0o755 });
      for (let d = parent; d !== dir; d = dirname(d)) dirs.add(d);
    }
    // writeFile's mode is filtered by the umask; chmod makes the requested mode exact. chown first:
    // the kernel clears setgid on chown, and the mode must survive it.
    await writeFile(full, f.data, { mode: f.mode & 0o777 });
    if (gid !== undefined) await chown(full, -1, gid);
    await chmod(full, f.mode);
  }
  for (const d of dirs) {
    if (gid !== undefined) {
      await chown(d, -1, gid);
      await chmod(d, 0o2755);
    } else {
      await chmod(d, 0o755);
    }
  }
}

/** Creates `name -> ..data/name` for each top-level name of the payload. */
async function createUserVisibleLinks(
  targetDir: string,
  payload: Map<string, FileProjection>,
): Promise<void> {
  const tops = new Set([...payload.keys()].map((p) => p.split('/')[0] ?? p));
  for (const name of tops) {
    const link = join(targetDir, name);
    const want = `${DATA_DIR_NAME}/${name}`;
    let current: string | undefined;
    try {
      const st = await lstat(link);
      if (!st.isSymbolicLink()) {
        throw new KubeletError(
          'FailedPrecondition',
          'write volume files',
          `${link} exists and is not a link into ${DATA_DIR_NAME}; refusing to replace it`,
        );
      }
      current = await readlink(link);
    } catch (err) {
      if (errCode(err) !== 'ENOENT') throw err;
    }
    if (current === want) continue;
    if (current !== undefined) await unlink(link);
    await symlink(want, link);
  }
}

interface DirState {
  /** Top-level links into `..data` that the new payload no longer has. */
  staleLinks: string[];
  /** Timestamped directories other than the one `..data` points at (old versions, crash leftovers). */
  staleDataDirs: string[];
}

async function inspectTarget(targetDir: string, payload: Map<string, FileProjection>, current?: string) {
  const tops = new Set([...payload.keys()].map((p) => p.split('/')[0] ?? p));
  const state: DirState = { staleLinks: [], staleDataDirs: [] };
  for (const e of await readdir(targetDir, { withFileTypes: true })) {
    if (e.isDirectory() && TS_DIR_PATTERN.test(e.name) && e.name !== current)
      state.staleDataDirs.push(e.name);
    if (e.name.startsWith('..') || tops.has(e.name) || !e.isSymbolicLink()) continue;
    const target = await readlink(join(targetDir, e.name));
    if (target.startsWith(`${DATA_DIR_NAME}/`)) state.staleLinks.push(e.name);
  }
  return state;
}

async function removeStale(targetDir: string, state: DirState): Promise<void> {
  for (const name of state.staleLinks) await unlink(join(targetDir, name)).catch(ignoreMissing);
  for (const name of state.staleDataDirs) await rm(join(targetDir, name), { recursive: true, force: true });
}

function ignoreMissing(err: unknown): void {
  if (errCode(err) !== 'ENOENT') throw err;
}

const locks = new Map<string, Promise<unknown>>();

/** Runs `fn` after any earlier write to the same directory finished (the algorithm is not reentrant). */
async function serialized<T>(dir: string, fn: () => Promise<T>): Promise<T> {
  const prev = locks.get(dir) ?? Promise.resolve();
  const run = prev.then(fn, fn);
  const tail = run.catch(() => undefined);
  locks.set(dir, tail);
  try {
    return await run;
  } finally {
    if (locks.get(dir) === tail) locks.delete(dir);
  }
}

/**
 * Projects `payload` into `targetDir` atomically (upstream AtomicWriter): the files are written to a
 * fresh hidden timestamped directory, `..data` is switched to it by renaming a temporary symlink over
 * it (rename is atomic), and each user-visible top-level name is a symlink `name -> ..data/name`. A
 * reader therefore sees either the whole old version or the whole new one. Names starting with `..`
 * are reserved. When the directory already holds exactly this payload nothing is written.
 *
 * `targetDir` must exist. Returns whether a new version was written. Throws KubeletError:
 * InvalidArgument for a bad payload (nothing is touched), Internal/FailedPrecondition otherwise (the
 * previous version stays in place).
 */
export async function writeAtomically(
  targetDir: string,
  payload: Payload,
  opts: AtomicWriteOptions = {},
): Promise<boolean> {
  const clean = validatePayload(payload);
  return await serialized(targetDir, () => write(targetDir, clean, opts));
}

async function write(targetDir: string, payload: Map<string, FileProjection>, opts: AtomicWriteOptions) {
  const op = `write volume files${opts.context ? ` (${opts.context})` : ''}`;
  const log = opts.logger ?? nullLogger;
  const dataLink = join(targetDir, DATA_DIR_NAME);
  const fail = (err: unknown, what: string) =>
    err instanceof KubeletError
      ? err
      : new KubeletError('Internal', op, `${what}: ${describeError(err)}`, { cause: err });

  let oldTs: string | undefined;
  try {
    oldTs = await readlink(dataLink).catch((err: unknown) => {
      if (errCode(err) === 'ENOENT') return undefined;
      throw err;
    });
    const state = await inspectTarget(targetDir, payload, oldTs);
    if (
      oldTs !== undefined &&
      state.staleLinks.length === 0 &&
      (await isUpToDate(payload, join(targetDir, oldTs), opts.gid))
    ) {
      await removeStale(targetDir, state); // leftovers of an interrupted write
      return false;
    }
  } catch (err) {
    throw fail(err, `read current version in ${targetDir}`);
  }

  let tsDir: string;
  try {
    tsDir = await mkdtemp(join(targetDir, timestampPrefix((opts.now ?? (() => new Date()))())));
  } catch (err) {
    throw fail(err, `create data directory in ${targetDir}`);
  }
  try {
    // Group and other must be able to traverse, whatever the umask.
    if (opts.gid !== undefined) {
      await chown(tsDir, -1, opts.gid);
      await chmod(tsDir, 0o2755);
    } else {
      await chmod(tsDir, 0o755);
    }
    await writePayloadToDir(payload, tsDir, opts.gid);
    await createUserVisibleLinks(targetDir, payload);
    const tmpLink = join(targetDir, NEW_DATA_DIR_NAME);
    await unlink(tmpLink).catch(ignoreMissing); // left behind by a crash between symlink and rename
    await symlink(basename(tsDir), tmpLink);
    await rename(tmpLink, dataLink);
  } catch (err) {
    await rm(tsDir, { recursive: true, force: true }).catch((e: unknown) =>
      log.warn('could not remove unused volume data directory', { dir: tsDir, err: describeError(e) }),
    );
    throw fail(err, `write new version in ${targetDir}`);
  }
  log.debug('volume content updated', { dir: targetDir, version: basename(tsDir), files: payload.size });

  // The new version is live; what follows only tidies up. A failure is reported, the volume stays
  // correct, and the next write retries the tidying.
  try {
    await removeStale(targetDir, await inspectTarget(targetDir, payload, basename(tsDir)));
  } catch (err) {
    throw fail(err, `remove previous version in ${targetDir}`);
  }
  return true;
}
