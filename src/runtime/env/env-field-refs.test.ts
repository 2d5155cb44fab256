import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Container, EnvVar } from '../../api/types.ts';
import { makeEnvironment } from './env.ts';
import { sortPodIPs } from './env-field-refs.ts';
import { envContext, envPod, rejectsWithCode } from '../testing.ts';

// Facts below follow upstream TestMakeEnvironmentVariables (pkg/kubelet/kubelet_pods_test.go) and the
// downward API resource tests.

describe('valueFrom.fieldRef', () => {
  const field = (name: string, fieldPath: string, apiVersion?: string): EnvVar => ({
    name,
    valueFrom: { fieldRef: apiVersion === undefined ? { fieldPath } : { apiVersion, fieldPath } },
  });

  it('reads pod metadata, spec and status fields', async () => {
    const c: Container = {
      name: 'app',
      env: [
        field('POD_NAME', 'metadata.name', 'v1'),
        field('POD_NAMESPACE', 'metadata.namespace'),
        field('POD_UID', 'metadata.uid'),
        field('APP', "metadata.labels['app']"),
        field('TIER', "metadata.labels['example.com/tier']"),
        field('MISSING_LABEL', "metadata.labels['nope']"),
        field('NOTE', "metadata.annotations['note']"),
        field('LABELS', 'metadata.labels'),
        field('POD_NODE_NAME', 'spec.nodeName'),
        field('OLD_HOST', 'spec.host'),
        field('POD_SERVICE_ACCOUNT_NAME', 'spec.serviceAccountName'),
        field('HOST_IP', 'status.hostIP'),
        field('POD_IP', 'status.podIP'),
        field('POD_IPS', 'status.podIPs'),
      ],
    };
    const envs = await makeEnvironment(envContext(c, { podIPs: ['fd00::4', '1.2.3.4', '1.2.3.9'] }));
    assert.deepEqual(envs, [
      { key: 'POD_NAME', value: 'dapi-test-pod-name' },
      { key: 'POD_NAMESPACE', value: 'test1' },
      { key: 'POD_UID', value: 'uid-1' },
      { key: 'APP', value: 'web' },
      { key: 'TIER', value: 'front' },
      { key: 'MISSING_LABEL', value: '' },
      { key: 'NOTE', value: 'hello "world"' },
      { key: 'LABELS', value: 'app="web"\nexample.com/tier="front"' },
      { key: 'POD_NODE_NAME', value: 'node-name' },
      { key: 'OLD_HOST', value: 'node-name' },
      { key: 'POD_SERVICE_ACCOUNT_NAME', value: 'special' },
      { key: 'HOST_IP', value: '10.0.0.5' },
      { key: 'POD_IP', value: '1.2.3.4' },
      { key: 'POD_IPS', value: '1.2.3.4,fd00::4' },
    ]);
  });

  it("falls back to the kubelet's node name when the pod has none (a static pod)", async () => {
    const c: Container = { name: 'app', env: [field('N', 'spec.nodeName')] };
    const pod = envPod('test1', [c], (p) => delete p.spec.nodeName);
    assert.deepEqual(await makeEnvironment(envContext(c, { pod, nodeName: 'kubelet-node' })), [
      { key: 'N', value: 'kubelet-node' },
    ]);
  });

  it('orders pod IPs by the node IP family and keeps one per family', () => {
    assert.deepEqual(sortPodIPs(['fd00::1', '10.1.0.2', '10.1.0.3'], '192.168.0.1'), ['10.1.0.2', 'fd00::1']);
    assert.deepEqual(sortPodIPs(['10.1.0.2', 'fd00::1'], 'fd00::99'), ['fd00::1', '10.1.0.2']);
    assert.deepEqual(sortPodIPs([], '10.0.0.1'), []);
  });

  it('gives an empty pod IP before the sandbox has one', async () => {
    const c: Container = {
      name: 'app',
      env: [field('POD_IP', 'status.podIP'), field('IPS', 'status.podIPs')],
    };
    assert.deepEqual(await makeEnvironment(envContext(c, { podIPs: [] })), [
      { key: 'POD_IP', value: '' },
      { key: 'IPS', value: '' },
    ]);
  });

  it('fails on unsupported paths, subscripts and versions, naming the variable', async () => {
    const cases: [EnvVar, string][] = [
      [field('X', 'spec.containers'), 'field label not supported: spec.containers'],
      [field('X', "spec.nodeName['a']"), "field label does not support subscript: spec.nodeName['a']"],
      [field('X', 'status.phase'), 'unsupported fieldPath: status.phase'],
      [field('X', 'metadata.name', 'v2'), 'unsupported pod version: v2'],
      [field('X', "metadata.labels['bad key']"), 'invalid key subscript'],
    ];
    for (const [e, text] of cases) {
      const c: Container = { name: 'app', env: [e] };
      await rejectsWithCode(makeEnvironment(envContext(c)), 'InvalidArgument', text);
      await rejectsWithCode(makeEnvironment(envContext(c)), 'InvalidArgument', /^env X: /);
    }
  });

  it('fails on status.hostIP when the node IP is unknown', async () => {
    const c: Container = { name: 'app', env: [field('H', 'status.hostIP')] };
    const ctx = envContext(c);
    delete ctx.hostIP;
    await rejectsWithCode(makeEnvironment(ctx), 'FailedPrecondition', "the node's IP address is not known");
  });
});

describe('valueFrom.resourceFieldRef', () => {
  const res = (
    name: string,
    resource: string,
    divisor?: string | number,
    containerName?: string,
  ): EnvVar => ({
    name,
    valueFrom: {
      resourceFieldRef: {
        resource,
        ...(divisor !== undefined ? { divisor } : {}),
        ...(containerName !== undefined ? { containerName } : {}),
      },
    },
  });

  it('reports limits and requests in divisor units, rounded up', async () => {
    const c: Container = {
      name: 'app',
      resources: {
        limits: { cpu: '250m', memory: '64Mi', 'ephemeral-storage': '1Gi' },
        requests: { cpu: '125m', memory: '1000' },
      },
      env: [
        res('CPU_LIMIT', 'limits.cpu'),
        res('CPU_LIMIT_M', 'limits.cpu', '1m'),
        res('CPU_LIMIT_100M', 'limits.cpu', '100m'),
        res('CPU_REQUEST_M', 'requests.cpu', '1m'),
        res('MEM_LIMIT', 'limits.memory'),
        res('MEM_LIMIT_MI', 'limits.memory', '1Mi'),
        res('MEM_LIMIT_G', 'limits.memory', '1G'),
        res('MEM_REQUEST_KI', 'requests.memory', '1Ki'),
        res('EPH_LIMIT_MI', 'limits.ephemeral-storage', '1Mi'),
        res('EPH_REQUEST', 'requests.ephemeral-storage'),
        res('NUMERIC_DIVISOR', 'limits.memory', 1),
        res('ZERO_DIVISOR', 'limits.cpu', '0'),
      ],
    };
    assert.deepEqual(await makeEnvironment(envContext(c)), [
      { key: 'CPU_LIMIT', value: '1' },
      { key: 'CPU_LIMIT_M', value: '250' },
      { key: 'CPU_LIMIT_100M', value: '3' },
      { key: 'CPU_REQUEST_M', value: '125' },
      { key: 'MEM_LIMIT', value: String(64 * 2 ** 20) },
      { key: 'MEM_LIMIT_MI', value: '64' },
      { key: 'MEM_LIMIT_G', value: '1' },
      { key: 'MEM_REQUEST_KI', value: '1' },
      { key: 'EPH_LIMIT_MI', value: '1024' },
      { key: 'EPH_REQUEST', value: '0' },
      { key: 'NUMERIC_DIVISOR', value: String(64 * 2 ** 20) },
      { key: 'ZERO_DIVISOR', value: '1' },
    ]);
  });

  it('reports node allocatable for an unset limit', async () => {
    const c: Container = {
      name: 'app',
      env: [
        res('CPU', 'limits.cpu'),
        res('MEM_MI', 'limits.memory', '1Mi'),
        res('EPH_GI', 'limits.ephemeral-storage', '1Gi'),
        res('REQ', 'requests.cpu'),
      ],
    };
    assert.deepEqual(await makeEnvironment(envContext(c)), [
      { key: 'CPU', value: '4' },
      { key: 'MEM_MI', value: '8192' },
      { key: 'EPH_GI', value: '100' },
      { key: 'REQ', value: '0' },
    ]);
  });

  it('reads another container of the pod by containerName', async () => {
    const side: Container = { name: 'side', resources: { limits: { memory: '32Mi' } } };
    const c: Container = { name: 'app', env: [res('SIDE_MEM', 'limits.memory', '1Mi', 'side')] };
    const pod = envPod('test1', [c, side]);
    assert.deepEqual(await makeEnvironment(envContext(c, { pod })), [{ key: 'SIDE_MEM', value: '32' }]);
    const bad: Container = { name: 'app', env: [res('X', 'limits.memory', undefined, 'ghost')] };
    await rejectsWithCode(
      makeEnvironment(envContext(bad, { pod: envPod('test1', [bad]) })),
      'InvalidArgument',
      'ghost',
    );
  });

  it('fails on an unsupported resource', async () => {
    const c: Container = { name: 'app', env: [res('X', 'limits.gpu')] };
    await rejectsWithCode(
      makeEnvironment(envContext(c)),
      'InvalidArgument',
      'unsupported container resource: limits.gpu',
    );
  });
});
