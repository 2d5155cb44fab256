import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Container, EnvVar, KubeletPod } from '../api/types.ts';
import { KubeletError, hasCode } from '../util/errors.ts';
import { b64, fakeObjectSource, type FakeObjectSource } from '../volume/testing.ts';
import { generateContainerConfig } from './container-config.ts';
import type { KeyValue } from './cri/types.ts';
import {
  isEnvVarName,
  literalEnvironment,
  makeEnvironment,
  resolveEnvironment,
  serviceEnvVars,
  sortPodIPs,
  type EnvContext,
  type EnvWarning,
  type Service,
  type ServiceLister,
} from './env.ts';

// Facts below follow upstream TestMakeEnvironmentVariables (pkg/kubelet/kubelet_pods_test.go),
// TestFromServices (pkg/kubelet/envvars) and the downward API resource tests.

function svc(name: string, namespace: string, clusterIP: string, port: number, protocol = 'TCP'): Service {
  return { metadata: { name, namespace }, spec: { clusterIP, ports: [{ port, protocol }] } };
}

const SERVICES: Service[] = [
  svc('kubernetes', 'default', '1.2.3.1', 8081),
  svc('test', 'test1', '1.2.3.3', 8083),
  svc('kubernetes', 'test2', '1.2.3.4', 8084),
  svc('test', 'test2', '1.2.3.5', 8085),
  svc('test', 'test2', 'None', 8085),
  svc('test', 'test2', '', 8085),
  svc('not-special', 'default', '1.2.3.8', 8088),
  svc('not-special', 'default', 'None', 8088),
];

const testVars = (ip: string, port: number): KeyValue[] => [
  { key: 'TEST_SERVICE_HOST', value: ip },
  { key: 'TEST_SERVICE_PORT', value: String(port) },
  { key: 'TEST_PORT', value: `tcp://${ip}:${port}` },
  { key: `TEST_PORT_${port}_TCP`, value: `tcp://${ip}:${port}` },
  { key: `TEST_PORT_${port}_TCP_PROTO`, value: 'tcp' },
  { key: `TEST_PORT_${port}_TCP_PORT`, value: String(port) },
  { key: `TEST_PORT_${port}_TCP_ADDR`, value: ip },
];
const kubernetesVars = (ip: string, port: number): KeyValue[] =>
  testVars(ip, port).map((e) => ({ key: e.key.replace(/^TEST/, 'KUBERNETES'), value: e.value }));

function makePod(
  namespace: string,
  containers: Container[],
  mutate: (p: KubeletPod) => void = () => undefined,
): KubeletPod {
  const p: KubeletPod = {
    metadata: {
      name: 'dapi-test-pod-name',
      namespace,
      uid: 'uid-1',
      labels: { app: 'web', 'example.com/tier': 'front' },
      annotations: { note: 'hello "world"' },
    },
    spec: { containers, nodeName: 'node-name', serviceAccountName: 'special' },
  };
  mutate(p);
  return p;
}

/** A lister over a fixed list, as the Service informer answers once synced; records namespaces asked. */
function listerOf(services: Service[], synced = true): ServiceLister & { asked: string[] } {
  const asked: string[] = [];
  return {
    asked,
    hasSynced: () => synced,
    list: (ns) => {
      asked.push(ns);
      return services.filter((s) => s.metadata?.namespace === ns);
    },
  };
}

function ctxFor(
  c: Container,
  opts: Partial<Omit<EnvContext, 'container' | 'services'>> & {
    namespace?: string;
    services?: Service[] | ServiceLister;
  } = {},
): EnvContext {
  const { namespace, services, ...rest } = opts;
  return {
    pod: opts.pod ?? makePod(namespace ?? 'test1', [c]),
    container: c,
    hostIP: '10.0.0.5',
    podIPs: ['1.2.3.4'],
    nodeName: 'node-name',
    nodeAllocatable: { cpu: '4', memory: '8Gi', 'ephemeral-storage': '100Gi' },
    ...(services ? { services: Array.isArray(services) ? listerOf(services) : services } : {}),
    ...rest,
  };
}

const sorted = (envs: KeyValue[]) => [...envs].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));

async function rejectsWith(p: Promise<unknown>, code: string, text: string | RegExp): Promise<void> {
  await assert.rejects(p, (err: unknown) => {
    assert.ok(err instanceof KubeletError, `not a KubeletError: ${String(err)}`);
    assert.equal(err.code, code);
    if (typeof text === 'string') assert.ok(err.message.includes(text), err.message);
    else assert.match(err.message, text);
    return true;
  });
}

describe('service link variables', () => {
  it('gives the pod the services of its namespace and the master service, env values winning', async () => {
    const c: Container = {
      name: 'app',
      env: [
        { name: 'FOO', value: 'BAR' },
        ...testVars('9.9.9.9', 1).map((e) => ({ name: e.key, value: e.value })),
      ],
    };
    const envs = await makeEnvironment(ctxFor(c, { services: SERVICES }));
    assert.deepEqual(
      sorted(envs),
      sorted([
        { key: 'FOO', value: 'BAR' },
        ...testVars('9.9.9.9', 1).map((e) => e),
        ...kubernetesVars('1.2.3.1', 8081),
        // the service TEST vars of test1 are overridden by env, and not repeated
        ...testVars('1.2.3.3', 8083).filter((e) => !testVars('9.9.9.9', 1).some((x) => x.key === e.key)),
      ]),
    );
    assert.equal(new Set(envs.map((e) => e.key)).size, envs.length, 'no duplicate keys');
  });

  it('puts the container env first and the remaining service variables after it', async () => {
    const c: Container = { name: 'app', env: [{ name: 'FOO', value: 'BAZ' }] };
    const envs = await makeEnvironment(ctxFor(c, { services: SERVICES }));
    assert.deepEqual(envs[0], { key: 'FOO', value: 'BAZ' });
    assert.deepEqual(
      sorted(envs.slice(1)),
      sorted([...kubernetesVars('1.2.3.1', 8081), ...testVars('1.2.3.3', 8083)]),
    );
  });

  it("prefers a 'kubernetes' service of the pod's own namespace over the master one", async () => {
    const c: Container = { name: 'app', env: [{ name: 'FOO', value: 'ZAP' }] };
    const envs = await makeEnvironment(ctxFor(c, { namespace: 'test2', services: SERVICES }));
    assert.deepEqual(
      sorted(envs),
      sorted([
        { key: 'FOO', value: 'ZAP' },
        ...testVars('1.2.3.5', 8085),
        ...kubernetesVars('1.2.3.4', 8084),
      ]),
    );
  });

  it('ignores services without a cluster IP (None or empty)', async () => {
    const c: Container = { name: 'app' };
    const envs = await makeEnvironment(ctxFor(c, { namespace: 'default', services: SERVICES }));
    const keys = envs.map((e) => e.key);
    assert.ok(keys.includes('NOT_SPECIAL_SERVICE_HOST'));
    assert.equal(envs.find((e) => e.key === 'NOT_SPECIAL_SERVICE_HOST')?.value, '1.2.3.8');
    assert.equal(keys.filter((k) => k === 'NOT_SPECIAL_SERVICE_HOST').length, 1);
  });

  it('gives only the master service when enableServiceLinks is false', async () => {
    const c: Container = { name: 'app', env: [{ name: 'FOO', value: 'BAR' }] };
    const pod = makePod('test1', [c], (p) => (p.spec.enableServiceLinks = false));
    const envs = await makeEnvironment(ctxFor(c, { pod, services: SERVICES }));
    assert.deepEqual(
      sorted(envs),
      sorted([{ key: 'FOO', value: 'BAR' }, ...kubernetesVars('1.2.3.1', 8081)]),
    );
  });

  it('gives no service variables without a service list (standalone), and no error', async () => {
    const c: Container = { name: 'app', env: [{ name: 'FOO', value: 'BAR' }] };
    assert.deepEqual(await makeEnvironment(ctxFor(c)), [{ key: 'FOO', value: 'BAR' }]);
  });

  // Upstream makeEnvironmentVariables: with an API client, a pod from the API waits until the
  // service informer has listed once (else a restarted kubelet would start pods without
  // KUBERNETES_SERVICE_HOST); the error becomes CreateContainerConfigError and the sync is retried.
  it('fails a pod from the API while the services have never been listed', async () => {
    const c: Container = { name: 'app', env: [{ name: 'FOO', value: 'BAR' }] };
    for (const annotations of [{ 'kubernetes.io/config.source': 'api' }, undefined]) {
      const pod = makePod('test1', [c], (p) => (p.metadata.annotations = annotations));
      await rejectsWith(
        makeEnvironment(ctxFor(c, { pod, services: listerOf(SERVICES, false) })),
        'Unavailable',
        'services have not yet been read at least once, cannot construct envvars',
      );
    }
  });

  it('fails even with enableServiceLinks false while unsynced (the master service is always injected)', async () => {
    const c: Container = { name: 'app' };
    const pod = makePod('test1', [c], (p) => (p.spec.enableServiceLinks = false));
    await rejectsWith(
      makeEnvironment(ctxFor(c, { pod, services: listerOf(SERVICES, false) })),
      'Unavailable',
      'services have not yet been read',
    );
  });

  it('starts a static pod before the services were listed, with the services known so far', async () => {
    const c: Container = { name: 'app' };
    for (const source of ['file', 'http']) {
      const pod = makePod(
        'test1',
        [c],
        (p) => (p.metadata.annotations = { 'kubernetes.io/config.source': source }),
      );
      const envs = await makeEnvironment(ctxFor(c, { pod, services: listerOf(SERVICES, false) }));
      assert.deepEqual(
        sorted(envs),
        sorted([...kubernetesVars('1.2.3.1', 8081), ...testVars('1.2.3.3', 8083)]),
        source,
      );
    }
  });

  it("reads only the master namespace and the pod's own", async () => {
    const c: Container = { name: 'app' };
    const lister = listerOf(SERVICES);
    await makeEnvironment(ctxFor(c, { namespace: 'test2', services: lister }));
    assert.deepEqual(lister.asked, ['default', 'test2']);
    const noLinks = listerOf(SERVICES);
    const pod = makePod('test2', [c], (p) => (p.spec.enableServiceLinks = false));
    await makeEnvironment(ctxFor(c, { pod, services: noLinks }));
    assert.deepEqual(noLinks.asked, ['default']);
  });

  it('names named ports, upper-cases dashes, brackets IPv6 and keeps the protocol', () => {
    const s: Service = {
      metadata: { name: 'my-svc', namespace: 'x' },
      spec: {
        clusterIP: 'fd00::10',
        ports: [
          { name: 'http-alt', port: 80 },
          { name: 'dns', port: 53, protocol: 'UDP' },
        ],
      },
    };
    assert.deepEqual(serviceEnvVars([s]), [
      { key: 'MY_SVC_SERVICE_HOST', value: 'fd00::10' },
      { key: 'MY_SVC_SERVICE_PORT', value: '80' },
      { key: 'MY_SVC_SERVICE_PORT_HTTP_ALT', value: '80' },
      { key: 'MY_SVC_SERVICE_PORT_DNS', value: '53' },
      { key: 'MY_SVC_PORT', value: 'tcp://[fd00::10]:80' },
      { key: 'MY_SVC_PORT_80_TCP', value: 'tcp://[fd00::10]:80' },
      { key: 'MY_SVC_PORT_80_TCP_PROTO', value: 'tcp' },
      { key: 'MY_SVC_PORT_80_TCP_PORT', value: '80' },
      { key: 'MY_SVC_PORT_80_TCP_ADDR', value: 'fd00::10' },
      { key: 'MY_SVC_PORT_53_UDP', value: 'udp://[fd00::10]:53' },
      { key: 'MY_SVC_PORT_53_UDP_PROTO', value: 'udp' },
      { key: 'MY_SVC_PORT_53_UDP_PORT', value: '53' },
      { key: 'MY_SVC_PORT_53_UDP_ADDR', value: 'fd00::10' },
    ]);
  });
});

describe('$(VAR) expansion in env values', () => {
  it('expands against service variables and earlier env, leaving later and unknown references verbatim', async () => {
    const c: Container = {
      name: 'app',
      env: [
        { name: 'TEST_LITERAL', value: 'test-test-test' },
        { name: 'POD_NAME', valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.name' } } },
        { name: 'OUT_OF_ORDER_TEST', value: '$(OUT_OF_ORDER_TARGET)' },
        { name: 'OUT_OF_ORDER_TARGET', value: 'FOO' },
        { name: 'EMPTY_VAR' },
        { name: 'EMPTY_TEST', value: 'foo-$(EMPTY_VAR)' },
        { name: 'POD_NAME_TEST2', value: 'test2-$(POD_NAME)' },
        { name: 'POD_NAME_TEST3', value: '$(POD_NAME_TEST2)-3' },
        { name: 'LITERAL_TEST', value: 'literal-$(TEST_LITERAL)' },
        { name: 'SERVICE_VAR_TEST', value: '$(TEST_SERVICE_HOST):$(TEST_SERVICE_PORT)' },
        { name: 'TEST_UNDEFINED', value: '$(UNDEFINED_VAR)' },
        { name: 'ESCAPED', value: '$$(TEST_LITERAL)-$$$(TEST_LITERAL)-$HOME-$$' },
      ],
    };
    const services = [svc('test', 'test1', '1.2.3.3', 8083)];
    const envs = await makeEnvironment(ctxFor(c, { services }));
    const own = envs.filter(
      (e) => !e.key.startsWith('TEST_') || e.key === 'TEST_LITERAL' || e.key === 'TEST_UNDEFINED',
    );
    assert.deepEqual(own, [
      { key: 'TEST_LITERAL', value: 'test-test-test' },
      { key: 'POD_NAME', value: 'dapi-test-pod-name' },
      { key: 'OUT_OF_ORDER_TEST', value: '$(OUT_OF_ORDER_TARGET)' },
      { key: 'OUT_OF_ORDER_TARGET', value: 'FOO' },
      { key: 'EMPTY_VAR', value: '' },
      { key: 'EMPTY_TEST', value: 'foo-' },
      { key: 'POD_NAME_TEST2', value: 'test2-dapi-test-pod-name' },
      { key: 'POD_NAME_TEST3', value: 'test2-dapi-test-pod-name-3' },
      { key: 'LITERAL_TEST', value: 'literal-test-test-test' },
      { key: 'SERVICE_VAR_TEST', value: '1.2.3.3:8083' },
      { key: 'TEST_UNDEFINED', value: '$(UNDEFINED_VAR)' },
      { key: 'ESCAPED', value: '$(TEST_LITERAL)-$test-test-test-$HOME-$' },
    ]);
  });

  it('lets a later env entry of the same name win, keeping the first position', async () => {
    const c: Container = {
      name: 'app',
      env: [
        { name: 'A', value: 'one' },
        { name: 'B', value: '$(A)' },
        { name: 'A', value: 'two-$(A)' },
      ],
    };
    assert.deepEqual(await makeEnvironment(ctxFor(c)), [
      { key: 'A', value: 'two-one' },
      { key: 'B', value: 'one' },
    ]);
  });
});

describe('envFrom', () => {
  function objects(): FakeObjectSource {
    const src = fakeObjectSource();
    src.configMaps.set('test1/test-config-map', {
      metadata: { name: 'test-config-map', namespace: 'test1' },
      data: { REPLACE_ME: 'FROM_CONFIG_MAP', DUPE_TEST: 'CONFIG_MAP' },
    });
    src.secrets.set('test1/test-secret', {
      metadata: { name: 'test-secret', namespace: 'test1' },
      data: { REPLACE_ME: b64('FROM_SECRET'), DUPE_TEST: b64('SECRET') },
    });
    return src;
  }

  it('adds every key, with and without prefix; env overrides and can reference them', async () => {
    const src = objects();
    const c: Container = {
      name: 'app',
      envFrom: [
        { configMapRef: { name: 'test-config-map' } },
        { prefix: 'p_', configMapRef: { name: 'test-config-map' } },
      ],
      env: [
        { name: 'TEST_LITERAL', value: 'test-test-test' },
        { name: 'EXPANSION_TEST', value: '$(REPLACE_ME)' },
        { name: 'DUPE_TEST', value: 'ENV_VAR' },
      ],
    };
    const envs = await makeEnvironment(ctxFor(c, { objects: src }));
    assert.deepEqual(sorted(envs), [
      { key: 'DUPE_TEST', value: 'ENV_VAR' },
      { key: 'EXPANSION_TEST', value: 'FROM_CONFIG_MAP' },
      { key: 'REPLACE_ME', value: 'FROM_CONFIG_MAP' },
      { key: 'TEST_LITERAL', value: 'test-test-test' },
      { key: 'p_DUPE_TEST', value: 'CONFIG_MAP' },
      { key: 'p_REPLACE_ME', value: 'FROM_CONFIG_MAP' },
    ]);
    assert.deepEqual(src.calls, ['configMap test1/test-config-map'], 'one read per object');
  });

  it('decodes secret values, and a later source overrides an earlier one', async () => {
    const c: Container = {
      name: 'app',
      envFrom: [{ configMapRef: { name: 'test-config-map' } }, { secretRef: { name: 'test-secret' } }],
      env: [{ name: 'EXPANSION_TEST', value: '$(REPLACE_ME)' }],
    };
    const envs = await makeEnvironment(ctxFor(c, { objects: objects() }));
    assert.deepEqual(sorted(envs), [
      { key: 'DUPE_TEST', value: 'SECRET' },
      { key: 'EXPANSION_TEST', value: 'FROM_SECRET' },
      { key: 'REPLACE_ME', value: 'FROM_SECRET' },
    ]);
  });

  it('wins over service variables', async () => {
    const src = fakeObjectSource();
    src.configMaps.set('test1/cm', { metadata: { name: 'cm' }, data: { TEST_SERVICE_HOST: 'from-cm' } });
    const c: Container = { name: 'app', envFrom: [{ configMapRef: { name: 'cm' } }] };
    const envs = await makeEnvironment(
      ctxFor(c, { objects: src, services: [svc('test', 'test1', '1.2.3.3', 8083)] }),
    );
    assert.equal(envs.filter((e) => e.key === 'TEST_SERVICE_HOST').length, 1);
    assert.equal(envs.find((e) => e.key === 'TEST_SERVICE_HOST')?.value, 'from-cm');
  });

  it('skips invalid keys with an InvalidEnvironmentVariableNames warning naming them', async () => {
    const src = fakeObjectSource();
    src.configMaps.set('test/test-config-map', {
      metadata: { name: 'test-config-map' },
      data: { '1234': 'abc', '1z': 'abc', key: 'value' },
    });
    src.secrets.set('test/s', { metadata: { name: 's' }, data: { '..x': b64('1'), ok: b64('2') } });
    const c: Container = {
      name: 'app',
      envFrom: [{ configMapRef: { name: 'test-config-map' } }, { secretRef: { name: 's' } }],
    };
    const warnings: EnvWarning[] = [];
    const envs = await makeEnvironment(
      ctxFor(c, { namespace: 'test', objects: src, onWarning: (w) => warnings.push(w) }),
    );
    assert.deepEqual(envs, [
      { key: 'key', value: 'value' },
      { key: 'ok', value: '2' },
    ]);
    assert.deepEqual(warnings, [
      {
        reason: 'InvalidEnvironmentVariableNames',
        message:
          'Keys [1234, 1z] from the EnvFrom configMap test/test-config-map were skipped since they are considered invalid environment variable names.',
      },
      {
        reason: 'InvalidEnvironmentVariableNames',
        message:
          'Keys [..x] from the EnvFrom secret test/s were skipped since they are considered invalid environment variable names.',
      },
    ]);
  });

  it('accepts a key made valid by its prefix', async () => {
    const src = fakeObjectSource();
    src.configMaps.set('test1/cm', { metadata: { name: 'cm' }, data: { '1234': 'abc' } });
    const c: Container = { name: 'app', envFrom: [{ prefix: 'p_', configMapRef: { name: 'cm' } }] };
    const { envs, warnings } = await resolveEnvironment(ctxFor(c, { objects: src }));
    assert.deepEqual(envs, [{ key: 'p_1234', value: 'abc' }]);
    assert.deepEqual(warnings, []);
  });

  it('skips a missing optional source and fails on a missing required one', async () => {
    const c: Container = {
      name: 'app',
      envFrom: [
        { configMapRef: { name: 'nope', optional: true } },
        { secretRef: { name: 'gone', optional: true } },
      ],
    };
    assert.deepEqual(await makeEnvironment(ctxFor(c, { objects: fakeObjectSource() })), []);
    const req: Container = { name: 'app', envFrom: [{ secretRef: { name: 'gone' } }] };
    await rejectsWith(
      makeEnvironment(ctxFor(req, { objects: fakeObjectSource() })),
      'NotFound',
      'secret "gone" not found',
    );
  });

  it('fails clearly in standalone mode', async () => {
    const c: Container = { name: 'app', envFrom: [{ configMapRef: { name: 'cm', optional: true } }] };
    await rejectsWith(makeEnvironment(ctxFor(c)), 'FailedPrecondition', 'needs an API server (cluster mode)');
  });
});

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
    const envs = await makeEnvironment(ctxFor(c, { podIPs: ['fd00::4', '1.2.3.4', '1.2.3.9'] }));
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
    const pod = makePod('test1', [c], (p) => delete p.spec.nodeName);
    assert.deepEqual(await makeEnvironment(ctxFor(c, { pod, nodeName: 'kubelet-node' })), [
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
    assert.deepEqual(await makeEnvironment(ctxFor(c, { podIPs: [] })), [
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
      await rejectsWith(makeEnvironment(ctxFor(c)), 'InvalidArgument', text);
      await rejectsWith(makeEnvironment(ctxFor(c)), 'InvalidArgument', /^env X: /);
    }
  });

  it('fails on status.hostIP when the node IP is unknown', async () => {
    const c: Container = { name: 'app', env: [field('H', 'status.hostIP')] };
    const ctx = ctxFor(c);
    delete ctx.hostIP;
    await rejectsWith(makeEnvironment(ctx), 'FailedPrecondition', "the node's IP address is not known");
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
    assert.deepEqual(await makeEnvironment(ctxFor(c)), [
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
    assert.deepEqual(await makeEnvironment(ctxFor(c)), [
      { key: 'CPU', value: '4' },
      { key: 'MEM_MI', value: '8192' },
      { key: 'EPH_GI', value: '100' },
      { key: 'REQ', value: '0' },
    ]);
  });

  it('reads another container of the pod by containerName', async () => {
    const side: Container = { name: 'side', resources: { limits: { memory: '32Mi' } } };
    const c: Container = { name: 'app', env: [res('SIDE_MEM', 'limits.memory', '1Mi', 'side')] };
    const pod = makePod('test1', [c, side]);
    assert.deepEqual(await makeEnvironment(ctxFor(c, { pod })), [{ key: 'SIDE_MEM', value: '32' }]);
    const bad: Container = { name: 'app', env: [res('X', 'limits.memory', undefined, 'ghost')] };
    await rejectsWith(
      makeEnvironment(ctxFor(bad, { pod: makePod('test1', [bad]) })),
      'InvalidArgument',
      'ghost',
    );
  });

  it('fails on an unsupported resource', async () => {
    const c: Container = { name: 'app', env: [res('X', 'limits.gpu')] };
    await rejectsWith(
      makeEnvironment(ctxFor(c)),
      'InvalidArgument',
      'unsupported container resource: limits.gpu',
    );
  });
});

describe('valueFrom.configMapKeyRef and secretKeyRef', () => {
  const cmKey = (name: string, cm: string, key: string, optional?: boolean): EnvVar => ({
    name,
    valueFrom: { configMapKeyRef: { name: cm, key, ...(optional !== undefined ? { optional } : {}) } },
  });
  const secKey = (name: string, s: string, key: string, optional?: boolean): EnvVar => ({
    name,
    valueFrom: { secretKeyRef: { name: s, key, ...(optional !== undefined ? { optional } : {}) } },
  });
  function objects(): FakeObjectSource {
    const src = fakeObjectSource();
    src.configMaps.set('test1/cm', { metadata: { name: 'cm' }, data: { a: 'from-cm', b: 'second' } });
    src.secrets.set('test1/s', { metadata: { name: 's' }, data: { pw: b64('s3cr3t\n') } });
    return src;
  }

  it('reads keys (secrets base64-decoded), one read per object', async () => {
    const src = objects();
    const c: Container = {
      name: 'app',
      env: [
        cmKey('A', 'cm', 'a'),
        cmKey('B', 'cm', 'b'),
        secKey('PW', 's', 'pw'),
        { name: 'REF', value: '<$(A)>' },
      ],
    };
    assert.deepEqual(await makeEnvironment(ctxFor(c, { objects: src })), [
      { key: 'A', value: 'from-cm' },
      { key: 'B', value: 'second' },
      { key: 'PW', value: 's3cr3t\n' },
      { key: 'REF', value: '<from-cm>' },
    ]);
    assert.deepEqual(src.calls, ['configMap test1/cm', 'secret test1/s']);
  });

  it('skips the variable when an optional object or key is missing', async () => {
    const c: Container = {
      name: 'app',
      env: [
        cmKey('M1', 'missing-config-map', 'key', true),
        cmKey('M2', 'cm', 'key', true),
        secKey('M3', 'missing-secret', 'key', true),
        secKey('M4', 's', 'key', true),
        { name: 'KEPT', value: 'x' },
      ],
    };
    assert.deepEqual(await makeEnvironment(ctxFor(c, { objects: objects() })), [{ key: 'KEPT', value: 'x' }]);
  });

  it('fails with the upstream wording when a required object or key is missing', async () => {
    const cases: [EnvVar, string][] = [
      [cmKey('K', 'cm', 'nope'), "env K: couldn't find key nope in ConfigMap test1/cm"],
      [secKey('K', 's', 'nope'), "env K: couldn't find key nope in Secret test1/s"],
      [cmKey('K', 'gone', 'a'), 'env K: configmap "gone" not found'],
      [secKey('K', 'gone', 'a', false), 'env K: secret "gone" not found'],
    ];
    for (const [e, text] of cases) {
      const c: Container = { name: 'app', env: [e] };
      await rejectsWith(makeEnvironment(ctxFor(c, { objects: objects() })), 'NotFound', text);
    }
  });

  it('fails clearly in standalone mode, even when optional', async () => {
    const c: Container = { name: 'app', env: [cmKey('K', 'cm', 'a', true)] };
    await rejectsWith(
      makeEnvironment(ctxFor(c)),
      'FailedPrecondition',
      'env K: configMapKeyRef needs an API server (cluster mode)',
    );
    const s: Container = { name: 'app', env: [secKey('S', 's', 'pw')] };
    await rejectsWith(
      makeEnvironment(ctxFor(s)),
      'FailedPrecondition',
      'env S: secretKeyRef needs an API server (cluster mode)',
    );
  });

  it('does not mistake an API failure for a missing optional object', async () => {
    const src = objects();
    src.failWith = new KubeletError('Unavailable', 'GET configmap', 'connection refused');
    const c: Container = { name: 'app', env: [cmKey('K', 'cm', 'a', true)] };
    await rejectsWith(makeEnvironment(ctxFor(c, { objects: src })), 'Unavailable', 'connection refused');
  });

  it('stops waiting for a hung API when the caller aborts', async () => {
    const src = objects();
    src.hang = true;
    const ac = new AbortController();
    const c: Container = { name: 'app', env: [cmKey('K', 'cm', 'a')] };
    const p = makeEnvironment(ctxFor(c, { objects: src, signal: ac.signal }));
    ac.abort(new KubeletError('Canceled', 'sync pod', 'pod deleted'));
    await rejectsWith(p, 'Canceled', 'pod deleted');
  });
});

describe('other sources and the literal fallback', () => {
  it('fails on a valueFrom source it does not know instead of setting an empty value', async () => {
    const c: Container = {
      name: 'app',
      env: [{ name: 'F', valueFrom: { fileKeyRef: { path: 'x', key: 'k' } } }],
    };
    await rejectsWith(makeEnvironment(ctxFor(c)), 'Unimplemented', 'fileKeyRef');
  });

  it('logs warnings with the pod identity when no onWarning is given', async () => {
    const src = fakeObjectSource();
    src.configMaps.set('test1/cm', { metadata: { name: 'cm' }, data: { '1bad': 'x' } });
    const lines: { msg: string; fields: Record<string, unknown> | undefined }[] = [];
    const logger = {
      error: () => undefined,
      warn: (msg: string, fields?: Record<string, unknown>) => lines.push({ msg, fields }),
      info: () => undefined,
      debug: () => undefined,
      trace: () => undefined,
      child: () => logger,
      isDebugEnabled: () => false,
    };
    const c: Container = { name: 'app', envFrom: [{ configMapRef: { name: 'cm' } }] };
    assert.deepEqual(await makeEnvironment(ctxFor(c, { objects: src, logger })), []);
    assert.equal(lines.length, 1);
    assert.match(lines[0]?.msg ?? '', /Keys \[1bad\]/);
    assert.equal(lines[0]?.fields?.pod, 'test1/dapi-test-pod-name');
    assert.equal(lines[0]?.fields?.podUID, 'uid-1');
  });

  it('rejects at once when already aborted', async () => {
    const c: Container = { name: 'app', env: [{ name: 'A', value: 'a' }] };
    await assert.rejects(makeEnvironment(ctxFor(c, { signal: AbortSignal.abort() })));
  });

  it('computes literal values synchronously and refuses what needs the context', () => {
    assert.deepEqual(
      literalEnvironment({
        name: 'a',
        env: [
          { name: 'A', value: 'x' },
          { name: 'B', value: '$(A)y' },
        ],
      }),
      [
        { key: 'A', value: 'x' },
        { key: 'B', value: 'xy' },
      ],
    );
    assert.throws(
      () =>
        literalEnvironment({
          name: 'a',
          env: [{ name: 'P', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } }],
        }),
      (err: unknown) => hasCode(err, 'Unimplemented') && err instanceof Error && err.message.includes('P'),
    );
  });

  it('validates names as the 1.20 kubelet did for envFrom keys', () => {
    for (const ok of ['A', 'my.env-name', 'MY_ENV.NAME', 'MyEnvName1', '_x', '.a', '-a'])
      assert.ok(isEnvVarName(ok), ok);
    for (const bad of ['', '1a', 'a b', 'a=b', '.', '..', '..a', 'ä']) assert.ok(!isEnvVarName(bad), bad);
  });

  it('feeds command and args expansion when passed to generateContainerConfig', async () => {
    const c: Container = {
      name: 'app',
      command: ['sh', '-c', 'echo $(POD_NAME) $(CPU_M)'],
      args: ['$(SVC)', '$$(POD_NAME)', '$(KUBERNETES_SERVICE_HOST)'],
      env: [
        { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
        { name: 'CPU_M', valueFrom: { resourceFieldRef: { resource: 'limits.cpu', divisor: '1m' } } },
        { name: 'SVC', value: '$(KUBERNETES_SERVICE_HOST):$(KUBERNETES_SERVICE_PORT)' },
      ],
    };
    const ctx = ctxFor(c, { services: [svc('kubernetes', 'default', '10.96.0.1', 443)] });
    const envs = await makeEnvironment(ctx);
    const cfg = generateContainerConfig(ctx.pod, c, {
      restartCount: 0,
      imageRef: 'sha256:x',
      memoryCapacity: 2 ** 30,
      envs,
    });
    assert.deepEqual(cfg.command, ['sh', '-c', 'echo dapi-test-pod-name 4000']);
    assert.deepEqual(cfg.args, ['10.96.0.1:443', '$(POD_NAME)', '10.96.0.1']);
    assert.equal(cfg.envs, envs);
  });
});
