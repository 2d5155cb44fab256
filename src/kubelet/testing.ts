/**
 * Test fixtures for the kubelet core (not exported from any index, not part of the build): a
 * kubelet on the fake CRI with the real managers, fed by one pod source the test drives, the pods
 * such a source hands over, and a poll-until for waiting on what it does.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { createMemoryRecorder } from '../api/events.ts';
import type { KubeletPod } from '../api/types.ts';
import { FakeKmsg } from '../oom/testing.ts';
import type { PodSource } from '../podsource/index.ts';
import { FakeImageService, FakeRuntimeService } from '../runtime/cri/testing.ts';
import { nullLogger } from '../util/logger.ts';
import type { KubeletConfig } from '../config/index.ts';
import { testKubeletConfig } from '../config/testing.ts';
import { newKubelet, type AssembledKubelet } from './new-kubelet.ts';
import type { KubeletDependencies } from './types.ts';
import { buildPod, type PodOptions } from '../../test/kit/pod.ts';

/**
 * A pod as a source hands it to the kubelet core (the kit's builder): namespace `ns`, one container
 * `app` of busybox:1.29, a 1 s grace period, the `kubernetes.io/config.source` annotation (`file`
 * unless told); every part replaceable.
 */
export function sourcedPod(
  name: string,
  opts: PodOptions & { source?: 'file' | 'api' | 'http' } = {},
): KubeletPod {
  const { source = 'file', ...rest } = opts;
  return buildPod(name, {
    namespace: 'ns',
    containers: ['app'],
    terminationGracePeriodSeconds: 1,
    ...rest,
    annotations: { 'kubernetes.io/config.source': source, ...rest.annotations },
  });
}

/**
 * A pod source the test drives: `send` delivers a snapshot (the first one marks the source ready);
 * a kubelet that starts later gets the latest snapshot, as a file source re-reads its directory.
 * `started`: a kubelet has started the source and not stopped it.
 */
export function testSource(
  name: PodSource['name'] = 'file',
): PodSource & { send(pods: KubeletPod[]): void; readonly started: boolean } {
  let deliver: ((pods: KubeletPod[]) => void) | undefined;
  let last: KubeletPod[] | undefined;
  return {
    name,
    get started() {
      return deliver !== undefined;
    },
    start(send) {
      deliver = send;
      if (last) send(last);
    },
    stop() {
      deliver = undefined;
      return Promise.resolve();
    },
    send(pods) {
      last = pods;
      deliver?.(pods);
    },
  };
}

export interface FakeCriKubeletOptions {
  /** Over testKubeletConfig's (node-a, 110 pods, a 60 s sync period, no listeners). */
  options?: Partial<KubeletConfig>;
  /** Over the fake CRI, the source, a memory recorder, the null logger, a fake /dev/kmsg, 192.0.2.10. */
  deps?: Partial<KubeletDependencies>;
  sourceName?: PodSource['name'];
  /** The node's allocatable CPU as admission sees it (4 GiB of memory, `maxPods` pods beside it). */
  milliCPU?: number;
}

/**
 * A kubelet on the fake CRI with the real managers, in its own root dir, fed by one `testSource`.
 * Nothing is created until `make` and nothing runs until `start`, so a test can stock the fakes
 * first, drive `runOnce` itself or restart a kubelet over the same runtime. Every started kubelet
 * is stopped, and the root dir removed, after the test.
 */
export async function fakeCriKubelet(
  t: TestContext,
  { options = {}, deps = {}, sourceName = 'file', milliCPU = 2000 }: FakeCriKubeletOptions = {},
) {
  const dir = await mkdtemp(join(tmpdir(), 'tskubelet-kubelet-'));
  const cri = new FakeRuntimeService();
  const images = new FakeImageService();
  const recorder = createMemoryRecorder();
  const source = testSource(sourceName);
  const maxPods = options.maxPods ?? 110;
  const started: AssembledKubelet[] = [];
  t.after(async () => {
    for (const k of started) await k.stop();
    await rm(dir, { recursive: true, force: true });
  });
  const make = (): Promise<AssembledKubelet> =>
    newKubelet(
      testKubeletConfig({
        rootDir: dir,
        podLogsDir: join(dir, 'logs'),
        syncFrequencyMs: 60_000,
        ...options,
        maxPods,
      }),
      {
        version: 'test',
        nodeIP: '192.0.2.10',
        runtimeService: cri,
        imageService: images,
        sources: [source],
        recorder,
        logger: nullLogger,
        openKmsg: new FakeKmsg().opener,
        node: () => ({
          name: 'node-a',
          labels: {},
          allocatable: { milliCPU, memory: 4 << 30, pods: maxPods },
        }),
        ...deps,
      },
    );
  return {
    dir,
    cri,
    images,
    recorder,
    source,
    make,
    /** Assembles and runs a kubelet (stopped after the test). */
    async start(): Promise<AssembledKubelet> {
      const k = await make();
      started.push(k);
      void k.run();
      return k;
    },
  };
}

/** `until(what, get, timeoutMs?)` with a default timeout: the kit's (test/kit/poll.ts). */
export { untilWithin } from '../../test/kit/poll.ts';
