/**
 * Upstream mount-utils SafeFormatAndMount (formatAndMount, getDiskFormat) as the local plugin's
 * MountDevice uses it for a Filesystem-mode PV whose path is a block device: the device is
 * formatted only when blkid finds neither a filesystem nor a partition table on it, then mounted at
 * the plugin's global mount dir; every pod then bind-mounts that dir. A device that has a
 * filesystem is never reformatted.
 */
import { execFile } from 'node:child_process';
import { mkdir } from 'node:fs/promises';
import { KubeletError, describeError } from '../util/errors.ts';
import type { Logger } from '../util/logger.ts';
import { KUBELET_DIR_MODE } from '../util/private-dir.ts';
import { mountAt, run } from './mounts.ts';

/** One blkid probe may take this long. */
const BLKID_TIMEOUT_MS = 30_000;
/** mkfs of a large device takes a while; upstream waits without a bound. */
const MKFS_TIMEOUT_MS = 10 * 60_000;

/** What blkid finds on a device: a filesystem type, a partition table type, or neither (''). */
export interface DiskFormat {
  type: string;
  ptType: string;
}

/** `blkid -p -s TYPE -s PTTYPE -o export` output → the two values (upstream getDiskFormat). */
export function parseBlkidExport(text: string): DiskFormat {
  const out: DiskFormat = { type: '', ptType: '' };
  for (const line of text.split('\n')) {
    const eq = line.indexOf('=');
    if (eq < 0) continue;
    const k = line.slice(0, eq).trim();
    const v = line.slice(eq + 1).trim();
    if (k === 'TYPE') out.type = v;
    if (k === 'PTTYPE') out.ptType = v;
  }
  return out;
}

export function diskFormat(device: string, signal?: AbortSignal): Promise<DiskFormat> {
  return new Promise((resolve, reject) => {
    execFile(
      'blkid',
      ['-p', '-s', 'TYPE', '-s', 'PTTYPE', '-o', 'export', device],
      { timeout: BLKID_TIMEOUT_MS, signal },
      (err, stdout, stderr) => {
        // Exit status 2: nothing found (an unformatted device), as upstream reads it.
        if (err && (err as { code?: unknown }).code === 2) {
          resolve({ type: '', ptType: '' });
          return;
        }
        if (err) {
          reject(
            new KubeletError('Internal', `probe ${device}`, `blkid: ${stderr.trim() || describeError(err)}`, {
              cause: err,
            }),
          );
          return;
        }
        resolve(parseBlkidExport(stdout));
      },
    );
  });
}

export interface FormatAndMountRequest {
  device: string;
  target: string;
  /** Default ext4 (upstream local plugin's defaultFSType). */
  fsType: string;
  readOnly: boolean;
  mountOptions: readonly string[];
  logger: Logger;
  signal?: AbortSignal;
}

/** Mounts `device` on `target` (made if missing), formatting it first when it holds nothing; idempotent. */
export async function formatAndMount(req: FormatAndMountRequest): Promise<void> {
  const op = `mount device ${req.device}`;
  if (await mountAt(req.target)) return; // mounted by this or an earlier kubelet process
  await mkdir(req.target, { recursive: true, mode: KUBELET_DIR_MODE });
  const found = await diskFormat(req.device, req.signal);
  if (found.ptType !== '') {
    throw new KubeletError(
      'FailedPrecondition',
      op,
      `disk ${req.device} has a ${found.ptType} partition table`,
    );
  }
  if (found.type === '') {
    if (req.readOnly) {
      throw new KubeletError('FailedPrecondition', op, `cannot format ${req.device} for a read-only mount`);
    }
    req.logger.info('formatting an unformatted device', { device: req.device, fsType: req.fsType });
    const args = req.fsType.startsWith('ext') ? ['-F', '-m0', req.device] : [req.device];
    await runWithTimeout(`mkfs.${req.fsType}`, args, op, MKFS_TIMEOUT_MS, req.signal);
  }
  const options = [...(req.readOnly ? ['ro'] : []), ...req.mountOptions];
  await run(
    'mount',
    [
      '-t',
      found.type || req.fsType,
      ...(options.length > 0 ? ['-o', options.join(',')] : []),
      req.device,
      req.target,
    ],
    op,
    req.signal,
  );
}

function runWithTimeout(cmd: string, args: string[], op: string, timeoutMs: number, signal?: AbortSignal) {
  return new Promise<void>((resolve, reject) => {
    execFile(cmd, args, { timeout: timeoutMs, signal }, (err, _stdout, stderr) => {
      if (!err) {
        resolve();
        return;
      }
      reject(
        new KubeletError('Internal', op, `${cmd} ${args.join(' ')}: ${stderr.trim() || describeError(err)}`, {
          cause: err,
        }),
      );
    });
  });
}
