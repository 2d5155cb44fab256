import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Container } from '../../api/types.ts';
import type { KeyValue } from '../cri/types.ts';
import { makeEnvironment } from './env.ts';
import { serviceEnvVars, type Service } from './service-env.ts';
import { envContext, envPod, listerOf, rejectsWithCode, sortedByKey, svc } from '../testing.ts';

// Facts below follow upstream TestMakeEnvironmentVariables (pkg/kubelet/kubelet_pods_test.go) and
// TestFromServices (pkg/kubelet/envvars).

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

describe('service link variables', () => {
  it('gives the pod the services of its namespace and the master service, env values winning', async () => {
    const c: Container = {
      name: 'app',
      env: [
        { name: 'FOO', value: 'BAR' },
        ...testVars('9.9.9.9', 1).map((e) => ({ name: e.key, value: e.value })),
      ],
    };
    const envs = await makeEnvironment(envContext(c, { services: SERVICES }));
    assert.deepEqual(
      sortedByKey(envs),
      sortedByKey([
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
    const envs = await makeEnvironment(envContext(c, { services: SERVICES }));
    assert.deepEqual(envs[0], { key: 'FOO', value: 'BAZ' });
    assert.deepEqual(
      sortedByKey(envs.slice(1)),
      sortedByKey([...kubernetesVars('1.2.3.1', 8081), ...testVars('1.2.3.3', 8083)]),
    );
  });

  it("prefers a 'kubernetes' service of the pod's own namespace over the master one", async () => {
    const c: Container = { name: 'app', env: [{ name: 'FOO', value: 'ZAP' }] };
    const envs = await makeEnvironment(envContext(c, { namespace: 'test2', services: SERVICES }));
    assert.deepEqual(
      sortedByKey(envs),
      sortedByKey([
        { key: 'FOO', value: 'ZAP' },
        ...testVars('1.2.3.5', 8085),
        ...kubernetesVars('1.2.3.4', 8084),
      ]),
    );
  });

  it('ignores services without a cluster IP (None or empty)', async () => {
    const c: Container = { name: 'app' };
    const envs = await makeEnvironment(envContext(c, { namespace: 'default', services: SERVICES }));
    const keys = envs.map((e) => e.key);
    assert.ok(keys.includes('NOT_SPECIAL_SERVICE_HOST'));
    assert.equal(envs.find((e) => e.key === 'NOT_SPECIAL_SERVICE_HOST')?.value, '1.2.3.8');
    assert.equal(keys.filter((k) => k === 'NOT_SPECIAL_SERVICE_HOST').length, 1);
  });

  it('gives only the master service when enableServiceLinks is false', async () => {
    const c: Container = { name: 'app', env: [{ name: 'FOO', value: 'BAR' }] };
    const pod = envPod('test1', [c], (p) => (p.spec.enableServiceLinks = false));
    const envs = await makeEnvironment(envContext(c, { pod, services: SERVICES }));
    assert.deepEqual(
      sortedByKey(envs),
      sortedByKey([{ key: 'FOO', value: 'BAR' }, ...kubernetesVars('1.2.3.1', 8081)]),
    );
  });

  it('gives no service variables without a service list (standalone), and no error', async () => {
    const c: Container = { name: 'app', env: [{ name: 'FOO', value: 'BAR' }] };
    assert.deepEqual(await makeEnvironment(envContext(c)), [{ key: 'FOO', value: 'BAR' }]);
  });

  // Upstream makeEnvironmentVariables: with an API client, a pod from the API waits until the
  // service informer has listed once (else a restarted kubelet would start pods without
  // KUBERNETES_SERVICE_HOST); the error becomes CreateContainerConfigError and the sync is retried.
  it('fails a pod from the API while the services have never been listed', async () => {
    const c: Container = { name: 'app', env: [{ name: 'FOO', value: 'BAR' }] };
    for (const annotations of [{ 'kubernetes.io/config.source': 'api' }, undefined]) {
      const pod = envPod('test1', [c], (p) => (p.metadata.annotations = annotations));
      await rejectsWithCode(
        makeEnvironment(envContext(c, { pod, services: listerOf(SERVICES, false) })),
        'Unavailable',
        'services have not yet been read at least once, cannot construct envvars',
      );
    }
  });

  it('fails even with enableServiceLinks false while unsynced (the master service is always injected)', async () => {
    const c: Container = { name: 'app' };
    const pod = envPod('test1', [c], (p) => (p.spec.enableServiceLinks = false));
    await rejectsWithCode(
      makeEnvironment(envContext(c, { pod, services: listerOf(SERVICES, false) })),
      'Unavailable',
      'services have not yet been read',
    );
  });

  it('starts a static pod before the services were listed, with the services known so far', async () => {
    const c: Container = { name: 'app' };
    for (const source of ['file', 'http']) {
      const pod = envPod(
        'test1',
        [c],
        (p) => (p.metadata.annotations = { 'kubernetes.io/config.source': source }),
      );
      const envs = await makeEnvironment(envContext(c, { pod, services: listerOf(SERVICES, false) }));
      assert.deepEqual(
        sortedByKey(envs),
        sortedByKey([...kubernetesVars('1.2.3.1', 8081), ...testVars('1.2.3.3', 8083)]),
        source,
      );
    }
  });

  it("reads only the master namespace and the pod's own", async () => {
    const c: Container = { name: 'app' };
    const lister = listerOf(SERVICES);
    await makeEnvironment(envContext(c, { namespace: 'test2', services: lister }));
    assert.deepEqual(lister.asked, ['default', 'test2']);
    const noLinks = listerOf(SERVICES);
    const pod = envPod('test2', [c], (p) => (p.spec.enableServiceLinks = false));
    await makeEnvironment(envContext(c, { pod, services: noLinks }));
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
