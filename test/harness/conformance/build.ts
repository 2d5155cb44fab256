/**
 * The suite's binaries (e2e.test, ginkgo, agnhost, nnp), built once from the cluster bed's source
 * tree by build-e2e.sh and cached beside the control-plane binaries. The control plane comes first:
 * its build unpacks the tree and generates the code e2e.test needs.
 */
import type { Logger } from '../../../src/util/logger.ts';
import { ensureBuilt } from '../build.ts';
import { ensureKubernetesBinaries } from '../cluster/index.ts';
import { CONFORMANCE_BINARIES, CONFORMANCE_PATHS, conformanceBinary } from './paths.ts';

/** e2e.test alone takes ~3 min on 2 cores with a warm cache; a cold one, and waiting for the lock, more. */
const BUILD_TIMEOUT_MS = 60 * 60_000;

export interface BuildReport {
  /** Seconds each build step took; empty when everything was cached. */
  controlPlaneSeconds?: number;
  suiteSeconds?: number;
}

/** Builds what is missing; resolves when every binary is in the cache. */
export async function ensureConformanceBinaries(logger: Logger, signal?: AbortSignal): Promise<BuildReport> {
  const report: BuildReport = {};
  const t = Date.now();
  await ensureKubernetesBinaries(logger, signal);
  if (Date.now() - t > 5_000) report.controlPlaneSeconds = Math.round((Date.now() - t) / 1000);
  const { srcDir, binDir, buildLock, buildScript, buildLog } = CONFORMANCE_PATHS;
  const suiteSeconds = await ensureBuilt({
    what: 'conformance suite',
    binaries: CONFORMANCE_BINARIES,
    pathOf: conformanceBinary,
    script: buildScript,
    args: [srcDir, binDir, buildLock],
    log: buildLog,
    timeoutMs: BUILD_TIMEOUT_MS,
    logger,
    starting: 'building the conformance suite from the Kubernetes source tree (a few minutes)',
    built: 'built the conformance suite',
    signal,
  });
  if (suiteSeconds !== undefined) report.suiteSeconds = suiteSeconds;
  return report;
}
