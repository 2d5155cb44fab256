/**
 * The Kubernetes 1.20.2 binaries the cluster bed runs, built once by scripts/build-kubernetes.sh
 * from Debian's source package and cached outside the repo. Building takes ~8 minutes on 2 cores;
 * it happens only when a binary is missing.
 */
import type { Logger } from '../../../src/util/logger.ts';
import { ensureBuilt } from '../build.ts';
import { CLUSTER_PATHS } from './paths.ts';

export const KUBERNETES_BINARIES = [
  'kube-apiserver',
  'kube-controller-manager',
  'kube-scheduler',
  'kubelet',
] as const;
export type KubernetesBinary = (typeof KUBERNETES_BINARIES)[number];

const BUILD_TIMEOUT_MS = 45 * 60_000;

/** Absolute path of a cached binary (it may not exist yet: see `ensureKubernetesBinaries`). */
export function kubernetesBinary(name: KubernetesBinary): string {
  return `${CLUSTER_PATHS.binDir}/${name}`;
}

/**
 * Resolves once every binary is in the cache, running the build script (output appended to
 * `CLUSTER_PATHS.buildLog`) when one is missing. Concurrent callers are serialised by the script's lock.
 */
export async function ensureKubernetesBinaries(logger: Logger, signal?: AbortSignal): Promise<void> {
  await ensureBuilt({
    what: 'kubernetes',
    binaries: KUBERNETES_BINARIES,
    pathOf: kubernetesBinary,
    script: CLUSTER_PATHS.buildScript,
    log: CLUSTER_PATHS.buildLog,
    timeoutMs: BUILD_TIMEOUT_MS,
    logger,
    starting: 'building Kubernetes binaries from source (about 8 minutes on 2 cores)',
    built: 'built Kubernetes binaries',
    signal,
  });
}
