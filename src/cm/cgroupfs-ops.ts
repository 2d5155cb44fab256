/**
 * File access to cgroupfs: the operations the cgroup code needs (real or fake), the mapping of
 * errno failures to KubeletError codes, and the read/write helpers every cgroup file goes through.
 */
import * as fsp from 'node:fs/promises';
import path from 'node:path';
import { KubeletError, describeError, errnoCode, type ErrorCode } from '../util/errors.ts';

/** The file operations this module needs; tests substitute a fake cgroupfs (testing.ts). */
export interface CgroupFsOps {
  readFile(file: string): Promise<string>;
  /** One write of the whole value, as cgroup files require. */
  writeFile(file: string, data: string): Promise<void>;
  /** Creates one directory; resolves false when it already existed. */
  mkdir(dir: string): Promise<boolean>;
  rmdir(dir: string): Promise<void>;
  /** Entries of a directory, with whether each is a (real, not symlinked) directory. */
  readdir(dir: string): Promise<{ name: string; isDirectory: boolean }[]>;
  exists(file: string): Promise<boolean>;
  kill(pid: number, signal: NodeJS.Signals): void;
}

/** The real file system. */
export const nodeCgroupFs: CgroupFsOps = {
  readFile: (file) => fsp.readFile(file, 'utf8'),
  writeFile: (file, data) => fsp.writeFile(file, data),
  async mkdir(dir) {
    try {
      await fsp.mkdir(dir);
      return true;
    } catch (err) {
      if (errnoCode(err) === 'EEXIST') return false;
      throw err;
    }
  },
  rmdir: (dir) => fsp.rmdir(dir),
  async readdir(dir) {
    const entries = await fsp.readdir(dir, { withFileTypes: true });
    return entries.map((e) => ({ name: e.name, isDirectory: e.isDirectory() }));
  },
  async exists(file) {
    try {
      await fsp.stat(file);
      return true;
    } catch (err) {
      if (errnoCode(err) === 'ENOENT') return false;
      throw err;
    }
  },
  kill: (pid, signal) => process.kill(pid, signal),
};

/** A cgroupfs failure as a KubeletError with the errno's code (a KubeletError passes through). */
export function fsError(err: unknown, op: string): KubeletError {
  if (err instanceof KubeletError) return err;
  const codes: Record<string, ErrorCode> = {
    ENOENT: 'NotFound',
    EACCES: 'PermissionDenied',
    EPERM: 'PermissionDenied',
    EROFS: 'PermissionDenied',
    EBUSY: 'FailedPrecondition',
    ENOTEMPTY: 'FailedPrecondition',
    EINVAL: 'InvalidArgument',
  };
  return new KubeletError(codes[errnoCode(err) ?? ''] ?? 'Internal', op, describeError(err), { cause: err });
}

export async function readControllers(ops: CgroupFsOps, dir: string): Promise<Set<string>> {
  const text = await ops.readFile(path.join(dir, 'cgroup.controllers'));
  return new Set(text.split(/\s+/).filter((c) => c !== ''));
}

/** Writes one cgroup file in one write, as cgroup files require. */
export async function writeCgroupFile(ops: CgroupFsOps, file: string, value: string): Promise<void> {
  try {
    await ops.writeFile(file, value);
  } catch (err) {
    throw fsError(err, `write ${JSON.stringify(value)} to ${file}`);
  }
}

/** A cgroup file's value, trimmed; '' when the file does not exist. */
export async function readCgroupFile(ops: CgroupFsOps, file: string): Promise<string> {
  try {
    return (await ops.readFile(file)).trim();
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') return '';
    throw fsError(err, `read ${file}`);
  }
}
