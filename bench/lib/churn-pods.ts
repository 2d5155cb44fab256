/**
 * The churn benchmark's pods (static manifests). Each 10-pod round mixes what a node sees in real
 * life and what leaves state behind for the kubelet to clean up:
 *
 * - `sleep` ×3: logs three lines, then waits (exits at once on SIGTERM);
 * - `exit` ×2: logs five lines and exits 0, `restartPolicy: Never` — a dead container in a live pod;
 * - `crash` ×2: logs a line and exits 1, `restartPolicy: Always` — restarted once at once, then in
 *   crash-loop back-off: dead containers for pruning and for the container GC;
 * - `emptydir` ×2: an init container writes 256 KiB into an emptyDir (a dead init container), the
 *   main container reads it back, logs and waits — pod directories and volumes under the root dir;
 * - `memdir` ×1: an emptyDir on tmpfs (`medium: Memory`) written and held — a mount under the root dir.
 *
 * All use the busybox image and a 1 s grace period.
 */
import { BUSYBOX_IMAGE } from '../../test/harness/images.ts';

export const CHURN_PREFIX = 'bk-ch-';

export type ChurnPodKind = 'sleep' | 'exit' | 'crash' | 'emptydir' | 'memdir';

/** One round, in the order the manifests are written. */
export const CHURN_ROUND: readonly ChurnPodKind[] = [
  'sleep',
  'exit',
  'crash',
  'emptydir',
  'memdir',
  'sleep',
  'exit',
  'crash',
  'emptydir',
  'sleep',
];

const WAIT = "trap 'exit 0' TERM; sleep 3600 & wait";

function container(name: string, script: string, mounts: { name: string; mountPath: string }[] = []) {
  return {
    name,
    image: BUSYBOX_IMAGE,
    imagePullPolicy: 'IfNotPresent',
    command: ['sh', '-c', script],
    ...(mounts.length ? { volumeMounts: mounts } : {}),
  };
}

/** The pod name for pod `i` of round `round` (the kubelet appends `-<nodeName>`). */
export function churnPodName(round: number, i: number): string {
  return `${CHURN_PREFIX}r${String(round).padStart(4, '0')}-${i}-${CHURN_ROUND[i % CHURN_ROUND.length]}`;
}

export function churnManifest(name: string, kind: ChurnPodKind): Record<string, unknown> {
  const data = [{ name: 'data', mountPath: '/data' }];
  const spec = ((): Record<string, unknown> => {
    switch (kind) {
      case 'sleep':
        return {
          containers: [container('main', `for i in 1 2 3; do echo "${name} line $i"; done; ${WAIT}`)],
        };
      case 'exit':
        return {
          restartPolicy: 'Never',
          containers: [container('main', `for i in 1 2 3 4 5; do echo "${name} line $i"; done; exit 0`)],
        };
      case 'crash':
        return {
          restartPolicy: 'Always',
          containers: [container('main', `echo "${name} failing"; exit 1`)],
        };
      case 'emptydir':
        return {
          volumes: [{ name: 'data', emptyDir: {} }],
          initContainers: [
            container('init', `head -c 262144 /dev/zero > /data/blob; echo "${name} init done"`, data),
          ],
          containers: [container('main', `echo "${name} read $(wc -c < /data/blob) bytes"; ${WAIT}`, data)],
        };
      case 'memdir':
        return {
          volumes: [{ name: 'data', emptyDir: { medium: 'Memory', sizeLimit: '8Mi' } }],
          containers: [
            container(
              'main',
              `head -c 1048576 /dev/zero > /data/blob; echo "${name} wrote 1 MiB to tmpfs"; ${WAIT}`,
              data,
            ),
          ],
        };
    }
  })();
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default', labels: { bench: 'churn', kind } },
    spec: { terminationGracePeriodSeconds: 1, ...spec },
  };
}
