/**
 * The benchmark pod: one busybox container that waits and exits at once on SIGTERM (as real
 * workloads do), so teardown measures the kubelet and the runtime rather than a grace period.
 */
import { BUSYBOX_IMAGE } from '../../test/harness/images.ts';

export const BENCH_COMMAND: readonly string[] = ['sh', '-c', "trap 'exit 0' TERM; sleep 3600 & wait"];

/** A static pod manifest (the kubelet appends `-<nodeName>` to the name). */
export function staticManifest(name: string): Record<string, unknown> {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default' },
    spec: {
      terminationGracePeriodSeconds: 1,
      containers: [
        { name: 'main', image: BUSYBOX_IMAGE, imagePullPolicy: 'IfNotPresent', command: [...BENCH_COMMAND] },
      ],
    },
  };
}

/**
 * A pod bound to `nodeName` through the API. The service-account token (a secret volume in 1.20)
 * is mounted as in any real pod unless `automountToken` is false.
 */
export function apiPod(name: string, namespace: string, nodeName: string, automountToken: boolean) {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace },
    spec: {
      nodeName,
      terminationGracePeriodSeconds: 1,
      ...(automountToken ? {} : { automountServiceAccountToken: false }),
      containers: [
        { name: 'main', image: BUSYBOX_IMAGE, imagePullPolicy: 'IfNotPresent', command: [...BENCH_COMMAND] },
      ],
    },
  };
}
