/**
 * Upstream SetVolumeOwnership (pkg/volume/volume_linux.go) for volumes whose content outlives the
 * pod (a local PV): every file and directory under the volume is group-owned by the pod's fsGroup
 * and gets the group bits (rw 0660 / ro 0440; directories also 0110 and setgid), deepest first and
 * the root last (upstream walkDeep), so an interrupted walk is redone on the next setup. With
 * `fsGroupChangePolicy: OnRootMismatch` the walk is skipped when the root already has the group
 * and the bits (upstream requiresPermissionChange). Symlinks are lchown'ed, never chmod'ed (a chmod
 * would follow them). A file that cannot be changed is logged and skipped, as upstream.
 */
import { chmod, lchown, lstat, readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Stats } from 'node:fs';
import { describeError } from '../util/errors.ts';
import type { Logger } from '../util/logger.ts';

const RW_MASK = 0o660;
const RO_MASK = 0o440;
const EXEC_MASK = 0o110;
const SETGID = 0o2000;

/** Upstream requiresPermissionChange: does the root lack the group, the bits or the setgid bit? */
export function requiresPermissionChange(root: Stats, gid: number, readOnly: boolean): boolean {
  if (root.gid !== gid || !root.isDirectory()) return true;
  const want = (readOnly ? RO_MASK : RW_MASK) | EXEC_MASK;
  return (root.mode & want) !== want || (root.mode & SETGID) === 0;
}

async function changeOne(
  path: string,
  st: Stats,
  gid: number,
  readOnly: boolean,
  log: Logger,
): Promise<void> {
  try {
    await lchown(path, -1, gid);
  } catch (err) {
    log.error('lchown failed while setting volume ownership', { path, err: describeError(err) });
  }
  if (st.isSymbolicLink()) return;
  let mask = readOnly ? RO_MASK : RW_MASK;
  if (st.isDirectory()) mask |= SETGID | EXEC_MASK;
  try {
    await chmod(path, (st.mode & 0o7777) | mask);
  } catch (err) {
    log.error('chmod failed while setting volume ownership', { path, err: describeError(err) });
  }
}

async function walkDeep(
  path: string,
  st: Stats,
  visit: (path: string, st: Stats) => Promise<void>,
): Promise<void> {
  if (st.isDirectory()) {
    for (const name of await readdir(path)) {
      const child = join(path, name);
      await walkDeep(child, await lstat(child), visit);
    }
  }
  await visit(path, st);
}

export interface OwnershipRequest {
  dir: string;
  fsGroup: number;
  readOnly: boolean;
  /** Pod securityContext.fsGroupChangePolicy: `OnRootMismatch` or `Always` (the default). */
  changePolicy?: string;
  logger: Logger;
}

/** Returns whether it walked (false: skipped by OnRootMismatch). */
export async function setVolumeOwnership(req: OwnershipRequest): Promise<boolean> {
  const root = await stat(req.dir);
  if (req.changePolicy === 'OnRootMismatch' && !requiresPermissionChange(root, req.fsGroup, req.readOnly)) {
    req.logger.debug('volume ownership already matches; skipped (OnRootMismatch)', { dir: req.dir });
    return false;
  }
  await walkDeep(req.dir, root, (p, st) => changeOne(p, st, req.fsGroup, req.readOnly, req.logger));
  return true;
}
