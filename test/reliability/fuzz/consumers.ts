/**
 * What the kubelet does first with a pod a source accepted, without I/O: the per-source merge,
 * admission (general predicates), QoS class, the runtime manager's decisions for a pod with
 * nothing running, the sandbox and container configs for CRI, container hashes, readiness gates,
 * and the Secrets/ConfigMaps it refers to. An accepted pod that makes one of these throw anything
 * but a KubeletError (a typed "cannot run this container" the kubelet reports on the pod) is a
 * crash: the source let through something the kubelet cannot handle.
 */
import { podObjectNames } from '../../../src/api/pod-references.ts';
import { podQOSClass } from '../../../src/api/qos.ts';
import type { KubeletPod } from '../../../src/api/types.ts';
import {
  generalPredicatesAdmitHandler,
  matchesNodeSelector,
  runAdmitHandlers,
} from '../../../src/kubelet/admission.ts';
import { createPodStorage } from '../../../src/podsource/storage.ts';
import { computePodActions } from '../../../src/runtime/kuberuntime/compute-pod-actions.ts';
import { generateContainerConfig } from '../../../src/runtime/kuberuntime/container-config.ts';
import { hashContainer } from '../../../src/runtime/kuberuntime/hash.ts';
import { emptyRuntimePodStatus } from '../../../src/runtime/kuberuntime/runtime-pod.ts';
import { generateSandboxConfig } from '../../../src/runtime/kuberuntime/sandbox-config.ts';
import { readinessGatesOf } from '../../../src/status/conditions.ts';
import { isKubeletError } from '../../../src/util/errors.ts';
import { nullLogger } from '../../../src/util/logger.ts';
import { thrown } from './harness.ts';

const NODE = {
  name: 'fuzz-node',
  labels: { 'kubernetes.io/os': 'linux' },
  allocatable: { milliCPU: 4000, memory: 8 * 2 ** 30, pods: 110 },
};

const steps: [string, (pod: KubeletPod) => unknown][] = [
  ['merge', (pod) => createPodStorage({ logger: nullLogger }).merge('api', [pod])],
  ['admission', (pod) => runAdmitHandlers([generalPredicatesAdmitHandler(() => NODE)], pod, [])],
  ['node selector', (pod) => matchesNodeSelector(pod, NODE.labels)],
  ['QoS class', (pod) => podQOSClass(pod)],
  [
    'pod actions',
    (pod) =>
      computePodActions(
        pod,
        emptyRuntimePodStatus(pod.metadata.uid, pod.metadata.name, pod.metadata.namespace),
      ),
  ],
  [
    'sandbox config',
    (pod) =>
      generateSandboxConfig(pod, {
        podLogsDir: '/var/log/pods',
        hostDNS: { servers: ['10.0.0.1'] },
        attempt: 0,
      }),
  ],
  [
    'container configs',
    (pod) =>
      [...(pod.spec.initContainers ?? []), ...pod.spec.containers].map((c) => {
        hashContainer(c);
        return generateContainerConfig(pod, c, {
          restartCount: 0,
          imageRef: 'sha256:0',
          memoryCapacity: NODE.allocatable.memory,
        });
      }),
  ],
  ['readiness gates', (pod) => readinessGatesOf(pod.spec)],
  ['referenced objects', (pod) => podObjectNames(pod)],
];

/** Runs the steps on (a copy of) `pod`; a crash's description, or undefined. */
export function exercise(pod: KubeletPod): string | undefined {
  for (const [name, step] of steps) {
    try {
      step(structuredClone(pod));
    } catch (err) {
      if (isKubeletError(err)) continue;
      return `${name} threw ${thrown(err)}`;
    }
  }
  return undefined;
}
