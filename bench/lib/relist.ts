/**
 * Relist cost. tskubelet exposes no relist metric yet, so it is measured from the benchmark process:
 * (a) the CRI calls of one relist (ListPodSandbox + ListContainers, concurrently, as tskubelet
 * issues them), and (b) tskubelet's own PLEG relist code (src/pleg + src/runtime listPods) run
 * in-process against the same containerd, after a first relist has filled its cache, so each timed
 * relist is the steady one (no changes, no status calls). Neither includes contention with the
 * kubelet's other work in its own event loop.
 */
import type { CriClient } from '../../src/runtime/cri/index.ts';
import { createRuntimeManager } from '../../src/runtime/kuberuntime/runtime-manager.ts';
import { createImageManager } from '../../src/runtime/images/image-manager.ts';
import { createPleg } from '../../src/pleg/pleg.ts';
import { createLoggingRecorder } from '../../src/api/events.ts';
import { createBackoff } from '../../src/util/backoff.ts';
import { nullLogger } from '../../src/util/logger.ts';
import { DEFAULT_POD_LOGS_DIR } from '../../src/config/defaults.ts';
import { sleep } from '../../src/util/abort.ts';

async function timed(n: number, gapMs: number, fn: () => Promise<unknown>): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await fn();
    out.push(performance.now() - t);
    await sleep(gapMs);
  }
  return out;
}

export async function criRelistTimes(cri: CriClient, n: number, gapMs: number): Promise<number[]> {
  return timed(n, gapMs, () => Promise.all([cri.runtime.listPodSandbox(), cri.runtime.listContainers()]));
}

export async function tskubeletRelistTimes(cri: CriClient, n: number, gapMs: number): Promise<number[]> {
  const recorder = createLoggingRecorder(nullLogger);
  const runtime = createRuntimeManager({
    runtime: cri.runtime,
    images: createImageManager({ images: cri.image, recorder }),
    recorder,
    logger: nullLogger,
    backoff: createBackoff(),
    podLogsDir: DEFAULT_POD_LOGS_DIR,
    hostDNS: () => ({}),
    mountsFor: () => Promise.resolve([]),
  });
  const pleg = createPleg({ runtime, logger: nullLogger });
  await pleg.relist(); // the first relist sees every pod as new and reads each one's status
  return timed(n, gapMs, () => pleg.relist());
}
