/** Upstream pod directory layout: `<rootDir>/pods/<uid>/volumes/<plugin~name>/<volume>`. */
import { join } from 'node:path';
import { PLUGIN_DIR, type ProjectionKind } from './projection.ts';

export function podDir(rootDir: string, uid: string): string {
  return join(rootDir, 'pods', uid);
}

export function emptyDirPath(rootDir: string, uid: string, volume: string): string {
  return join(podDir(rootDir, uid), 'volumes', 'kubernetes.io~empty-dir', volume);
}

/** Where a secret/configMap/downwardAPI/projected volume's files live on the host. */
export function projectedVolumePath(
  rootDir: string,
  uid: string,
  kind: ProjectionKind,
  volume: string,
): string {
  return join(podDir(rootDir, uid), 'volumes', PLUGIN_DIR[kind], volume);
}
