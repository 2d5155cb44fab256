/**
 * Upstream mount-utils SafeFormatAndMount (formatAndMount, getDiskFormat) as the local plugin's
 * MountDevice uses it for a Filesystem-mode PV whose path is a block device: the device is
 * formatted only when blkid finds neither a filesystem nor a partition table on it, then mounted at
 * the plugin's global mount dir; every pod then bind-mounts that dir. A device that has a
 * filesystem is never reformatted: it is checked (`fsck -a`) before a read-write mount and mounted
 * as the volume's fsType, and a mount that fails on another filesystem names both.
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
/** fsck likewise: a large filesystem with errors takes long to check. */
const FSCK_TIMEOUT_MS = 10 * 60_000;

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
      throw new KubeletError(
        'FailedPrecondition',
        op,
        `cannot mount unformatted disk ${req.device} read-only: it would have to be formatted`,
      );
    }
    req.logger.info('formatting an unformatted device', { device: req.device, fsType: req.fsType });
    const args = req.fsType.startsWith('ext') ? ['-F', '-m0', req.device] : [req.device];
    await runWithTimeout(`mkfs.${req.fsType}`, args, op, MKFS_TIMEOUT_MS, req.signal);
  } else {
    if (found.type !== req.fsType) {
      // Upstream mounts it as asked all the same (ext4 mounts an ext2 filesystem, say) and names
      // the mismatch only if that fails.
      req.logger.warn('the device holds another filesystem than the volume asks for; mounting as asked', {
        device: req.device,
        fsType: req.fsType,
        found: found.type,
      });
    }
    if (!req.readOnly) await checkAndRepair(req.device, op, req.logger, req.signal);
  }
  const options = [...(req.readOnly ? ['ro'] : []), ...req.mountOptions];
  const args = [
    '-t',
    req.fsType,
    ...(options.length > 0 ? ['-o', options.join(',')] : []),
    req.device,
    req.target,
  ];
  try {
    await run('mount', args, op, req.signal);
  } catch (err) {
    if (found.type === '' || found.type === req.fsType) throw err;
    throw new KubeletError(
      'FailedPrecondition',
      op,
      `failed to mount the volume as "${req.fsType}", it already contains ${found.type}. Mount error: ${describeError(err)}`,
      { cause: err },
    );
  }
}

/**
 * Upstream checkAndRepairFilesystem: `fsck -a` on a formatted device before a read-write mount.
 * Exit 1 (errors corrected) is logged; 4 (errors left) refuses the mount; any other failure is
 * logged and the mount goes ahead, as upstream.
 */
async function checkAndRepair(
  device: string,
  op: string,
  logger: Logger,
  signal?: AbortSignal,
): Promise<void> {
  const status = await new Promise<{ code: number; output: string }>((resolve, reject) => {
    execFile('fsck', ['-a', device], { timeout: FSCK_TIMEOUT_MS, signal }, (err, stdout, stderr) => {
      const output = `${stdout}${stderr}`.trim();
      if (!err) resolve({ code: 0, output });
      else if (typeof err.code === 'number') resolve({ code: err.code, output });
      else
        reject(new KubeletError('Internal', op, `fsck -a ${device}: ${describeError(err)}`, { cause: err }));
    });
  });
  if (status.code === 0) return;
  if (status.code === 1) {
    logger.info('fsck corrected errors on the device', { device, output: status.output });
  } else if (status.code === 4) {
    throw new KubeletError(
      'FailedPrecondition',
      op,
      `'fsck' found errors on device ${device} but could not correct them: ${status.output}`,
    );
  } else {
    logger.warn('fsck failed on the device; mounting all the same', {
      device,
      exitCode: status.code,
      output: status.output,
    });
  }
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
