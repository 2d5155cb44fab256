/**
 * Host-side checks for volume mounts: hostPath type checks and fsGroup ownership of a volume
 * directory (upstream hostPath plugin, SetVolumeOwnership). subPath resolution is subpath.ts.
 */
import { chmod, chown, mkdir, stat, writeFile } from 'node:fs/promises';
import { KubeletError } from '../util/errors.ts';

export type HostPathType =
  '' | 'DirectoryOrCreate' | 'Directory' | 'FileOrCreate' | 'File' | 'Socket' | 'CharDevice' | 'BlockDevice';

/**
 * Upstream hostPath SetUp checks: no `..` element in the path (pkg/volume/validation
 * ValidatePathNoBacksteps, checked again on the node), then the type checks; the `OrCreate` types
 * create what is missing. A type upstream does not know is refused, not skipped.
 */
export async function checkHostPath(volume: string, path: string, type: HostPathType): Promise<void> {
  const op = `mount volume ${volume}`;
  if (path.split('/').includes('..')) {
    throw new KubeletError('InvalidArgument', op, `invalid HostPath \`${path}\`: must not contain '..'`);
  }
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
    default: {
      const unknown: never = type;
      throw new KubeletError(
        'InvalidArgument',
        op,
        `hostPath type ${JSON.stringify(unknown)} is not supported`,
      );
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
