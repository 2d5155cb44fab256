/**
 * Host-side checks and directories for volume mounts: hostPath type checks, fsGroup ownership of a
 * volume directory, and subPath resolution (upstream hostPath plugin, SetVolumeOwnership,
 * SafeMakeDir).
 */
import { chmod, chown, mkdir, stat, writeFile } from 'node:fs/promises';
import { isAbsolute, join, normalize, relative, sep } from 'node:path';
import { KubeletError } from '../util/errors.ts';

export type HostPathType =
  '' | 'DirectoryOrCreate' | 'Directory' | 'FileOrCreate' | 'File' | 'Socket' | 'CharDevice' | 'BlockDevice';

/** Upstream hostPath type checks; the `OrCreate` types create what is missing. */
export async function checkHostPath(volume: string, path: string, type: HostPathType): Promise<void> {
  const op = `mount volume ${volume}`;
  const st = await stat(path).catch(() => undefined);
  switch (type) {
    case '':
      return; // no check, as upstream
    case 'DirectoryOrCreate':
      if (!st) await mkdir(path, { recursive: true, mode: 0o755 });
      else if (!st.isDirectory())
        throw new KubeletError('FailedPrecondition', op, `hostPath ${path} is not a directory`);
      return;
    case 'FileOrCreate':
      if (!st) await writeFile(path, '', { mode: 0o644, flag: 'a' });
      else if (!st.isFile())
        throw new KubeletError('FailedPrecondition', op, `hostPath ${path} is not a file`);
      return;
    case 'Directory':
    case 'File':
    case 'Socket':
    case 'CharDevice':
    case 'BlockDevice': {
      const ok =
        st &&
        ((type === 'Directory' && st.isDirectory()) ||
          (type === 'File' && st.isFile()) ||
          (type === 'Socket' && st.isSocket()) ||
          (type === 'CharDevice' && st.isCharacterDevice()) ||
          (type === 'BlockDevice' && st.isBlockDevice()));
      if (!ok) {
        throw new KubeletError(
          'FailedPrecondition',
          op,
          st
            ? `hostPath ${path} is not a ${type}`
            : `hostPath type check failed: ${path} does not exist (type ${type})`,
        );
      }
      return;
    }
  }
}

/**
 * Upstream SetVolumeOwnership for a volume's directory: group-owned by the pod's fsGroup, with the
 * setgid bit so that what is created inside inherits the group, and `mask` (rw 0770, ro 0440) added.
 */
export async function setGroupOwnership(dir: string, gid: number, mask: number): Promise<void> {
  const st = await stat(dir);
  await chown(dir, -1, gid);
  await chmod(dir, (st.mode & 0o7777) | 0o2000 | mask);
}

/**
 * Upstream SafeMakeDir for a missing subPath: each missing directory below the volume root is made
 * with the root's own mode (setgid included, whatever the umask), so a subPath of a world-writable
 * or fsGroup-owned volume is so too.
 */
export async function makeSubPathDirs(root: string, target: string): Promise<void> {
  const mode = (await stat(root)).mode & 0o7777;
  let dir = root;
  for (const part of relative(root, target).split(sep)) {
    dir = join(dir, part);
    const made = await mkdir(dir).then(
      () => true,
      (err: NodeJS.ErrnoException) => {
        if (err.code === 'EEXIST') return false;
        throw err;
      },
    );
    if (made) await chmod(dir, mode);
  }
}

/** Joins a subPath under a volume root, refusing anything that escapes it. */
export function withSubPath(root: string, subPath: string | undefined, volume: string): string {
  if (!subPath) return root;
  const p = normalize(subPath);
  if (isAbsolute(p) || p === '..' || p.startsWith(`..${sep}`)) {
    throw new KubeletError(
      'InvalidArgument',
      `mount volume ${volume}`,
      `subPath "${subPath}" must be a relative path inside the volume`,
    );
  }
  return join(root, p);
}
