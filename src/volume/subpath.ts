/**
 * subPath mounts that cannot escape their volume (upstream pkg/volume/util/subpath, the fix for
 * CVE-2017-1002101 and CVE-2021-25741). A container's subPath is resolved by the kubelet, on the
 * host, inside a directory the pod's own containers can write to: a symlink planted there (`ln -s /
 * escape`) would otherwise hand the next container the host's root. So, as upstream:
 * - the subPath is checked lexically (relative, no `..`);
 * - missing directories are made one component at a time, never through a symlink, and only when
 *   what exists already resolves inside the volume;
 * - the path is resolved (symlinks inside the volume are fine), must stay inside the volume, and is
 *   opened by the kubelet without following a final symlink; what was opened is checked again by
 *   its file descriptor (`/proc/self/fd/N` names the inode actually opened, whatever was swapped in
 *   since), and that descriptor — not the path — is bind-mounted at
 *   `<pod dir>/volume-subpaths/<volume>/<container>/<index>`, which the runtime then mounts. A swap
 *   after the check changes nothing the container sees.
 * The user sees upstream's short message; the detail (host paths) goes only to the log.
 */
import { constants } from 'node:fs';
import { chmod, lstat, mkdir, open, readlink, realpath, stat, writeFile } from 'node:fs/promises';
import { isAbsolute, join, normalize, sep } from 'node:path';
import { podFullName, type KubeletPod } from '../api/types.ts';
import { KubeletError, describeError, errnoCode, isKubeletError } from '../util/errors.ts';
import type { Logger } from '../util/logger.ts';
import { KUBELET_DIR_MODE } from '../util/private-dir.ts';
import { bindMount, mountAt } from './mounts.ts';
import { podDir } from './paths.ts';

/** Linux O_PATH: a descriptor that names an inode without opening its content (not in fs.constants). */
const O_PATH = 0o10000000;

/** Upstream containerSubPathDirectoryName. */
export const SUBPATH_DIR = 'volume-subpaths';

/**
 * The subPath as a normalized relative path, or an error in upstream's words (an absolute path, or
 * one with a `..` element).
 */
export function checkSubPath(subPath: string, volume: string): string {
  const op = `mount volume ${volume}`;
  if (isAbsolute(subPath)) {
    throw new KubeletError(
      'InvalidArgument',
      op,
      `error SubPath \`${subPath}\` must not be an absolute path`,
    );
  }
  if (subPath.split('/').includes('..')) {
    throw new KubeletError(
      'InvalidArgument',
      op,
      `unable to provision SubPath \`${subPath}\`: must not contain '..'`,
    );
  }
  return normalize(subPath);
}

/** Whether `path` is `base` or below it (both already resolved). */
export function within(path: string, base: string): boolean {
  if (path === base) return true;
  return path.startsWith(base.endsWith(sep) ? base : base + sep);
}

/**
 * Upstream SafeMakeDir: makes the missing directories of `subPath` below the volume root `root`,
 * each with the root's mode (setgid included, whatever the umask). The part that exists must resolve
 * inside the volume; each new directory is made in a parent checked not to be a symlink, and checked
 * after creation to be a directory and not a symlink. Throws `outside` when something escapes.
 */
export async function makeSubPathDirs(root: string, subPath: string): Promise<void> {
  const base = await realpath(root);
  const mode = (await stat(base)).mode & 0o7777;
  const parts = subPath.split(sep).filter((p) => p !== '' && p !== '.');
  // The longest prefix that exists, resolved: it must stay inside the volume.
  let existing = base;
  let i = 0;
  for (; i < parts.length; i++) {
    const next = join(existing, parts[i] ?? '');
    let resolvedNext: string;
    try {
      resolvedNext = await realpath(next);
    } catch (err) {
      if (errnoCode(err) === 'ENOENT') break; // a dangling symlink stops here too, and is refused below
      throw err;
    }
    if (!within(resolvedNext, base)) throw outside(subPath, `${next} resolves to ${resolvedNext}`);
    existing = resolvedNext;
  }
  for (; i < parts.length; i++) {
    const dir = join(existing, parts[i] ?? '');
    const made = await mkdir(dir).then(
      () => true,
      (err: NodeJS.ErrnoException) => {
        if (err.code === 'EEXIST') return false; // a dangling symlink, or made meanwhile: checked below
        throw err;
      },
    );
    const st = await lstat(dir);
    if (st.isSymbolicLink() || !st.isDirectory()) throw outside(subPath, `${dir} is not a directory`);
    if (made) await chmod(dir, mode);
    existing = dir;
  }
}

function outside(subPath: string, detail: string): KubeletError {
  return new KubeletError(
    'FailedPrecondition',
    `prepare subPath ${subPath}`,
    `not within the volume: ${detail}`,
  );
}

export interface BindSubPathRequest {
  rootDir: string;
  podUID: string;
  volume: string;
  container: string;
  /** The mount's index in the container's volumeMounts (upstream VolumeMountIndex). */
  index: number;
  /** The volume's directory on the host. */
  volumeRoot: string;
  /** From checkSubPath. */
  subPath: string;
  signal?: AbortSignal;
}

/** Where the bind of one container's subPath mount lives. */
export function subPathTarget(
  r: Pick<BindSubPathRequest, 'rootDir' | 'podUID' | 'volume' | 'container' | 'index'>,
) {
  return join(podDir(r.rootDir, r.podUID), SUBPATH_DIR, r.volume, r.container, String(r.index));
}

/**
 * Upstream doBindSubPath: resolves, checks and opens the subPath, and bind-mounts the opened file or
 * directory at its target (see the file comment). A target already mounted (the container restarts)
 * is returned as it is. Returns the target, which is what the runtime mounts into the container.
 * Throws `FailedPrecondition` for a path outside the volume; the path must exist.
 */
export async function bindSubPath(r: BindSubPathRequest): Promise<string> {
  const target = subPathTarget(r);
  if (await mountAt(target)) return target;
  const base = await realpath(r.volumeRoot);
  const resolved = await realpath(join(r.volumeRoot, r.subPath));
  if (!within(resolved, base))
    throw outside(r.subPath, `${join(r.volumeRoot, r.subPath)} resolves to ${resolved}`);
  const fh = await open(resolved, O_PATH | constants.O_NOFOLLOW);
  try {
    const st = await fh.stat();
    if (st.isSymbolicLink()) throw outside(r.subPath, `${resolved} became a symlink`);
    const opened = await readlink(`/proc/self/fd/${fh.fd}`);
    if (!within(opened, base)) throw outside(r.subPath, `the opened path is ${opened}`);
    // Upstream doBindSubPath: the bind targets are kubelet-private (dirs 0750, file 0640).
    await mkdir(join(target, '..'), { recursive: true, mode: KUBELET_DIR_MODE });
    if (st.isDirectory()) await mkdir(target, { recursive: true, mode: KUBELET_DIR_MODE });
    else await writeFile(target, '', { flag: 'a', mode: 0o640 }); // a file is a mount point for any non-directory
    // The descriptor's magic link, not resolved back to a path by libmount.
    await bindMount(`/proc/${process.pid}/fd/${fh.fd}`, target, { noCanonicalize: true, signal: r.signal });
  } finally {
    await fh.close();
  }
  return target;
}

/** What {@link prepareSubPathMount} binds, and for whom. */
export interface SubPathMountRequest {
  rootDir: string;
  logger: Logger;
  pod: KubeletPod;
  container: string;
  /** The mount's index among the container's volumeMounts. */
  index: number;
  volume: string;
  /** The volume's host directory. */
  volumeRoot: string;
  /** The volumeMount's subPath as written (checked here). */
  subPath: string;
  /** The volume's content is the kubelet's (projected kinds): a missing subPath is a missing key. */
  projected: boolean;
}

/**
 * The host path a subPath mount binds: a missing subPath is made (in a projected volume the
 * kubelet owns the content, so a missing one is a missing key), then the checked path is
 * bind-mounted under the pod's volume-subpaths. Failures reach the pod in upstream's short words
 * (no host paths); the detail goes to the log.
 */
export async function prepareSubPathMount(r: SubPathMountRequest): Promise<string> {
  const { pod, container, volume } = r;
  const subPath = checkSubPath(r.subPath, volume);
  const fields = { pod: podFullName(pod), podUID: pod.metadata.uid, container, volume, subPath };
  const failed = (what: string, err: unknown): KubeletError => {
    r.logger.error(`failed to ${what}`, { ...fields, err: describeError(err) });
    return new KubeletError(
      isKubeletError(err) ? err.code : 'Internal',
      `mount volume ${volume}`,
      `failed to ${what} for volumeMount "${volume}" of container "${container}"`,
      { cause: err },
    );
  };
  let present: boolean;
  try {
    present = await exists(join(r.volumeRoot, subPath));
  } catch (err) {
    throw failed('prepare subPath', err);
  }
  if (!present) {
    if (r.projected) {
      throw new KubeletError(
        'NotFound',
        `mount volume ${volume}`,
        `subPath "${r.subPath}" does not exist in volume ${volume}`,
      );
    }
    try {
      await makeSubPathDirs(r.volumeRoot, subPath);
    } catch (err) {
      throw failed('create subPath directory', err);
    }
  }
  try {
    return await bindSubPath({
      rootDir: r.rootDir,
      podUID: pod.metadata.uid,
      volume,
      container,
      index: r.index,
      volumeRoot: r.volumeRoot,
      subPath,
    });
  } catch (err) {
    throw failed('prepare subPath', err);
  }
}

/** True when `path` exists (a missing parent counts as missing). */
async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch (err) {
    const code = errnoCode(err);
    if (code === 'ENOENT' || code === 'ENOTDIR') return false;
    throw err;
  }
}
