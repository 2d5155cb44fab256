import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { podLogsDirectory } from '../../src/runtime/kuberuntime/sandbox-config.ts';
import type { KubeletPod } from '../../src/api/types.ts';
import { IMAGE, NODE, podManifest, writeManifest } from '../kit/bed.ts';
import { eventually } from '../kit/poll.ts';
import { findPod, useKubelet, waitForPhase } from './support.ts';

/** The content lines of a CRI log file (`<time> <stream> <P|F> <content>`). */
function criLogLines(text: string): string[] {
  return text
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => l.split(' ').slice(3).join(' '));
}

async function containerOutput(logsDir: string, pod: KubeletPod, container: string): Promise<string[]> {
  const file = join(podLogsDirectory(logsDir, pod), container, '0.log');
  return criLogLines(await readFile(file, 'utf8').catch(() => ''));
}

describe('container environment on real containerd (standalone)', () => {
  const t = useKubelet();

  it('gives literal, fieldRef and resourceFieldRef values, expanded into env, command and args', async () => {
    const pod = podManifest('envpod', {
      containers: [
        {
          name: 'main',
          image: IMAGE,
          // `$0` and `$1`.. are shell positional parameters: the args below, after kubelet expansion.
          // The kubelet expands `$(COMPOSED)` in the script too; single quotes keep the shell off it.
          command: [
            'sh',
            '-c',
            `env; echo "ARGS=$0|$1|$2"; echo 'CMD=$(COMPOSED)'; echo END; exec sleep 3600`,
          ],
          args: ['$(GREETING)', '$$(GREETING)', '$(UNDEFINED_VAR)'],
          resources: { limits: { cpu: '250m', memory: '64Mi' } },
          env: [
            { name: 'GREETING', value: 'hello' },
            { name: 'COMPOSED', value: '$(GREETING)-world-$$(GREETING)' },
            { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
            { name: 'POD_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
            { name: 'POD_UID', valueFrom: { fieldRef: { fieldPath: 'metadata.uid' } } },
            { name: 'APP_LABEL', valueFrom: { fieldRef: { fieldPath: "metadata.labels['app']" } } },
            { name: 'NODE_NAME', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } },
            { name: 'HOST_IP', valueFrom: { fieldRef: { fieldPath: 'status.hostIP' } } },
            { name: 'POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
            {
              name: 'MEM_LIMIT_MI',
              valueFrom: { resourceFieldRef: { resource: 'limits.memory', divisor: '1Mi' } },
            },
            {
              name: 'CPU_LIMIT_M',
              valueFrom: { resourceFieldRef: { resource: 'limits.cpu', divisor: '1m' } },
            },
            // No request: defaulting makes it the limit (as the API server does).
            {
              name: 'CPU_REQUEST_M',
              valueFrom: { resourceFieldRef: { resource: 'requests.cpu', divisor: '1m' } },
            },
            { name: 'CPU_LIMIT', valueFrom: { resourceFieldRef: { resource: 'limits.cpu' } } },
            { name: 'NAME_AGAIN', value: 'pod=$(POD_NAME)' },
          ],
        },
      ],
    });
    pod.metadata.labels = { app: 'env-test' };
    await writeManifest(t.env, 'envpod.yaml', pod);
    const view = await waitForPhase(t.k.kubelet, 'envpod', 'Running');
    const lines = await eventually(
      'container output',
      async () => {
        const out = await containerOutput(t.env.logsDir, view.pod, 'main');
        return out.includes('END') ? out : undefined;
      },
      30_000,
      () => findPod(t.k.kubelet, 'envpod')?.status,
    );
    const env = new Map(
      lines
        .filter((l) => l.includes('='))
        .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
    );
    const podIP = findPod(t.k.kubelet, 'envpod')?.status?.podIP;
    assert.ok(podIP, 'the pod has an IP');
    const expected: Record<string, string> = {
      GREETING: 'hello',
      COMPOSED: 'hello-world-$(GREETING)',
      POD_NAME: `envpod-${NODE}`,
      POD_NAMESPACE: 'default',
      POD_UID: view.pod.metadata.uid ?? '',
      APP_LABEL: 'env-test',
      NODE_NAME: NODE,
      HOST_IP: '127.0.0.1',
      POD_IP: podIP,
      MEM_LIMIT_MI: '64',
      CPU_LIMIT_M: '250',
      CPU_REQUEST_M: '250',
      CPU_LIMIT: '1',
      NAME_AGAIN: `pod=envpod-${NODE}`,
      ARGS: 'hello|$(GREETING)|$(UNDEFINED_VAR)',
      CMD: 'hello-world-$(GREETING)',
    };
    for (const [k, v] of Object.entries(expected))
      assert.equal(env.get(k), v, `${k} in ${lines.join(' ; ')}`);
    // Standalone: no services are known, so no service-link variables.
    assert.ok(![...env.keys()].some((k) => k.startsWith('KUBERNETES_')), [...env.keys()].join(','));
  });

  it('reports CreateContainerConfigError naming the variable when a source needs the API server', async () => {
    await writeManifest(
      t.env,
      'envcm.yaml',
      podManifest('envcm', {
        containers: [
          {
            name: 'main',
            image: IMAGE,
            command: ['sleep', '3600'],
            env: [{ name: 'FROM_CM', valueFrom: { configMapKeyRef: { name: 'settings', key: 'level' } } }],
          },
        ],
      }),
    );
    const status = await eventually(
      'CreateContainerConfigError',
      () => {
        const s = findPod(t.k.kubelet, 'envcm')?.status?.containerStatuses?.[0];
        return s?.state.waiting?.reason === 'CreateContainerConfigError' ? s : undefined;
      },
      30_000,
      () => findPod(t.k.kubelet, 'envcm')?.status,
    );
    const message = status.state.waiting?.message ?? '';
    assert.match(message, /FROM_CM/);
    assert.match(message, /configMapKeyRef needs an API server \(cluster mode\)/);
    assert.equal(findPod(t.k.kubelet, 'envcm')?.status?.phase, 'Pending');
  });
});
