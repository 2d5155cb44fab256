/**
 * The kubelet's data directories (upstream kubelet.go setupDataDirs): the root dir, `<root>/pods`,
 * tskubelet's own state dir and the pod logs dir, each mode 0750 (util/private-dir.ts; an existing
 * looser one is tightened with a warning). Runs before anything else writes under the root dir —
 * the serving certificate, the local socket, a pod — so no file there depends on who happened to
 * create its parent first. No plugin dirs: tskubelet has no volume or device plugins.
 */
import { join } from 'node:path';
import { ensurePrivateDir } from '../util/private-dir.ts';
import type { Logger } from '../util/logger.ts';

/** tskubelet's own state under the root dir (saved container back-off). */
export const STATE_DIR_NAME = 'tskubelet';

export interface DataDirs {
  rootDir: string;
  podLogsDir: string;
}

export async function setupDataDirs(dirs: DataDirs, logger: Logger): Promise<void> {
  await ensurePrivateDir(dirs.rootDir, logger);
  await ensurePrivateDir(join(dirs.rootDir, 'pods'), logger);
  await ensurePrivateDir(join(dirs.rootDir, STATE_DIR_NAME), logger);
  await ensurePrivateDir(dirs.podLogsDir, logger);
}
