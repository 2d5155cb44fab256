/**
 * kubeadm 1.20.2, built once by build-kubeadm.sh from the cluster bed's source tree and cached beside
 * the control-plane binaries. The control plane comes first: its build unpacks the tree and generates
 * the code kubeadm needs. No upstream counterpart.
 */
import { dirname } from 'node:path';
import type { Logger } from '../../../src/util/logger.ts';
import { ensureBuilt } from '../build.ts';
import { ensureKubernetesBinaries } from '../cluster/index.ts';
import { KUBEADM_PATHS } from './paths.ts';

/** A cold Go cache compiles most of client-go again: allow for it and for waiting on the tree's lock. */
const BUILD_TIMEOUT_MS = 45 * 60_000;

/** Resolves with kubeadm's path once it is in the cache, building it (and the control plane) when missing. */
export async function ensureKubeadm(logger: Logger, signal?: AbortSignal): Promise<string> {
  await ensureKubernetesBinaries(logger, signal);
  const { srcDir, binary, buildLock, buildScript, buildLog } = KUBEADM_PATHS;
  await ensureBuilt({
    what: 'kubeadm',
    binaries: ['kubeadm'],
    pathOf: () => binary,
    script: buildScript,
    args: [srcDir, dirname(binary), buildLock],
    log: buildLog,
    timeoutMs: BUILD_TIMEOUT_MS,
    logger,
    starting: 'building kubeadm from the Kubernetes source tree (a few minutes)',
    built: 'built kubeadm',
    signal,
  });
  return binary;
}
