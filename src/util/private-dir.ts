/**
 * Kubelet-private directories (upstream kubelet.go setupDataDirs and makePodDataDirs, which make the
 * root dir, `pods/`, each pod's dir and its `volumes/` with `os.MkdirAll(dir, 0750)`). A pod's
 * secrets live below these: what keeps every other local user out is that no directory on the way is
 * open to "others". Upstream only sets the mode when it creates a directory; here a directory that
 * already exists with bits for others (or group write) is tightened too, with a warning naming its
 * old mode, so a root dir made 0755 by hand or by an older version is no longer a way in.
 */
import { chmod, mkdir, stat } from 'node:fs/promises';
import { KubeletError, describeError } from './errors.ts';
import type { Logger } from './logger.ts';

/** Upstream's mode for the kubelet's own directories. */
export const KUBELET_DIR_MODE = 0o750;

/** The bits a kubelet-private directory must not have: group write, and everything for others. */
const LOOSE_BITS = 0o027;

/** `0o755` as `"0755"`, how modes are written in logs and docs. */
export function formatMode(mode: number): string {
  return `0${(mode & 0o7777).toString(8).padStart(3, '0')}`;
}

/**
 * Makes `dir` (and missing parents) with mode 0750, and tightens an existing `dir` whose mode gives
 * group write or anything to others: those bits are removed (setuid/setgid/sticky kept), with a
 * warning. A symlink at `dir` is followed (a root dir linked to another disk is common), as
 * upstream's MkdirAll does; what it points to gets the mode.
 */
export async function ensurePrivateDir(dir: string, logger: Logger): Promise<void> {
  const op = `make kubelet directory ${dir}`;
  let mode: number;
  try {
    await mkdir(dir, { recursive: true, mode: KUBELET_DIR_MODE });
    const st = await stat(dir);
    if (!st.isDirectory())
      throw new KubeletError('FailedPrecondition', op, 'it exists and is not a directory');
    mode = st.mode & 0o7777;
  } catch (err) {
    if (err instanceof KubeletError) throw err;
    throw new KubeletError('Internal', op, describeError(err), { cause: err });
  }
  if ((mode & LOOSE_BITS) === 0) return;
  const tightened = mode & ~LOOSE_BITS;
  try {
    await chmod(dir, tightened);
  } catch (err) {
    throw new KubeletError('Internal', op, `cannot tighten mode ${formatMode(mode)}: ${describeError(err)}`, {
      cause: err,
    });
  }
  logger.warn('kubelet directory was open to other users; tightened its mode', {
    dir,
    mode: formatMode(mode),
    now: formatMode(tightened),
  });
}
