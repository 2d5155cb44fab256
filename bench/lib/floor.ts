/**
 * The floor: N pods started straight over CRI, no kubelet, `concurrency` at a time —
 * RunPodSandbox + CreateContainer + StartContainer with the sandbox and container configs tskubelet
 * itself generates (src/runtime/sandbox-config.ts, container-config.ts), log directories included.
 */
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import type { KubeletPod } from '../../src/api/types.ts';
import type { CriClient } from '../../src/runtime/cri/index.ts';
import {
  generateSandboxConfig,
  podLogsDirectory,
  readHostDNS,
} from '../../src/runtime/kuberuntime/sandbox-config.ts';
import { generateContainerConfig } from '../../src/runtime/kuberuntime/container-config.ts';
import { DEFAULT_POD_LOGS_DIR } from '../../src/config/defaults.ts';
import { KubeletError } from '../../src/util/errors.ts';
import { BENCH_COMMAND } from './pods.ts';

export function floorPod(name: string, image: string): KubeletPod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default', uid: randomUUID() },
    spec: {
      restartPolicy: 'Always',
      dnsPolicy: 'ClusterFirst',
      terminationGracePeriodSeconds: 1,
      containers: [{ name: 'main', image, imagePullPolicy: 'IfNotPresent', command: [...BENCH_COMMAND] }],
    },
  };
}

/** Starts the pods; resolves when every StartContainer returned. Returns the start time. */
export async function runFloor(
  cri: CriClient,
  pods: readonly KubeletPod[],
  concurrency: number,
): Promise<{ t0: number }> {
  const hostDNS = readHostDNS('/etc/resolv.conf');
  const container = pods[0]?.spec.containers[0];
  if (!container) throw new KubeletError('InvalidArgument', 'floor', 'no pods');
  // The image reference a kubelet passes is the image ID from ImageStatus, resolved once (cached).
  const image = await cri.image.imageStatus({ image: container.image ?? '' });
  const imageRef = image?.id;
  if (!imageRef) throw new KubeletError('NotFound', 'floor', `image ${container.image ?? ''} not present`);
  const t0 = Date.now();
  let next = 0;
  const worker = async (): Promise<void> => {
    for (let i = next++; i < pods.length; i = next++) {
      const pod = pods[i];
      const c = pod?.spec.containers[0];
      if (!pod || !c) continue;
      const sandboxConfig = generateSandboxConfig(pod, {
        podLogsDir: DEFAULT_POD_LOGS_DIR,
        hostDNS,
        attempt: 0,
      });
      await mkdir(sandboxConfig.logDirectory ?? DEFAULT_POD_LOGS_DIR, { recursive: true });
      const sandboxId = await cri.runtime.runPodSandbox(sandboxConfig);
      const config = generateContainerConfig(pod, c, { restartCount: 0, imageRef });
      await mkdir(join(podLogsDirectory(DEFAULT_POD_LOGS_DIR, pod), c.name), { recursive: true });
      const id = await cri.runtime.createContainer(sandboxId, config, sandboxConfig);
      await cri.runtime.startContainer(id);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(concurrency, pods.length)) }, worker));
  return { t0 };
}
