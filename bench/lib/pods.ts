/**
 * The benchmark pod: one busybox container that waits and exits at once on SIGTERM (as real
 * workloads do), so teardown measures the kubelet and the runtime rather than a grace period.
 */
import { BUSYBOX_IMAGE } from '../../test/harness/images.ts';

export const BENCH_COMMAND: readonly string[] = ['sh', '-c', "trap 'exit 0' TERM; sleep 3600 & wait"];

/**
 * A container that prints a numbered line every 100 ms (for the API-load scenario's log followers)
 * without forking: `read -t 0.1` on a FIFO nobody writes is the shell's own 100 ms sleep, where
 * `sleep 0.1` would fork and exec busybox 10 times a second per pod. Exits at once on SIGTERM.
 */
export const LOGGER_COMMAND: readonly string[] = [
  'sh',
  '-c',
  "trap 'exit 0' TERM; mkfifo /tmp/tick; exec 3<>/tmp/tick; i=0; " +
    'while :; do i=$((i+1)); echo "bench log line $i"; read -t 0.1 x <&3; done',
];

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
 * is mounted as in any real pod unless `automountToken` is false; `command` is the benchmark pod's
 * unless given.
 */
export function apiPod(
  name: string,
  namespace: string,
  nodeName: string,
  automountToken: boolean,
  command: readonly string[] = BENCH_COMMAND,
) {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace },
    spec: {
      nodeName,
      terminationGracePeriodSeconds: 1,
      ...(automountToken ? {} : { automountServiceAccountToken: false }),
      containers: [
        { name: 'main', image: BUSYBOX_IMAGE, imagePullPolicy: 'IfNotPresent', command: [...command] },
      ],
    },
  };
}
