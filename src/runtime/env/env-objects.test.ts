import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Container, EnvVar } from '../../api/types.ts';
import { KubeletError } from '../../util/errors.ts';
import { b64, fakeObjectSource, type FakeObjectSource } from '../../volume/testing.ts';
import type { EnvWarning } from './env-context.ts';
import { makeEnvironment, resolveEnvironment } from './env.ts';
import { isEnvVarName } from './env-objects.ts';
import { envContext, rejectsWithCode, sortedByKey, svc } from '../testing.ts';

// Facts below follow upstream TestMakeEnvironmentVariables (pkg/kubelet/kubelet_pods_test.go).

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
    const envs = await makeEnvironment(envContext(c, { objects: src }));
    assert.deepEqual(sortedByKey(envs), [
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
    const envs = await makeEnvironment(envContext(c, { objects: objects() }));
    assert.deepEqual(sortedByKey(envs), [
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
      envContext(c, { objects: src, services: [svc('test', 'test1', '1.2.3.3', 8083)] }),
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
      envContext(c, { namespace: 'test', objects: src, onWarning: (w) => warnings.push(w) }),
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
    const { envs, warnings } = await resolveEnvironment(envContext(c, { objects: src }));
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
    assert.deepEqual(await makeEnvironment(envContext(c, { objects: fakeObjectSource() })), []);
    const req: Container = { name: 'app', envFrom: [{ secretRef: { name: 'gone' } }] };
    await rejectsWithCode(
      makeEnvironment(envContext(req, { objects: fakeObjectSource() })),
      'NotFound',
      'secret "gone" not found',
    );
  });

  it('fails clearly in standalone mode', async () => {
    const c: Container = { name: 'app', envFrom: [{ configMapRef: { name: 'cm', optional: true } }] };
    await rejectsWithCode(
      makeEnvironment(envContext(c)),
      'FailedPrecondition',
      'needs an API server (cluster mode)',
    );
  });

  it('validates names as the 1.20 kubelet did for envFrom keys', () => {
    for (const ok of ['A', 'my.env-name', 'MY_ENV.NAME', 'MyEnvName1', '_x', '.a', '-a'])
      assert.ok(isEnvVarName(ok), ok);
    for (const bad of ['', '1a', 'a b', 'a=b', '.', '..', '..a', 'ä']) assert.ok(!isEnvVarName(bad), bad);
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
    assert.deepEqual(await makeEnvironment(envContext(c, { objects: src })), [
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
    assert.deepEqual(await makeEnvironment(envContext(c, { objects: objects() })), [
      { key: 'KEPT', value: 'x' },
    ]);
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
      await rejectsWithCode(makeEnvironment(envContext(c, { objects: objects() })), 'NotFound', text);
    }
  });

  it('fails clearly in standalone mode, even when optional', async () => {
    const c: Container = { name: 'app', env: [cmKey('K', 'cm', 'a', true)] };
    await rejectsWithCode(
      makeEnvironment(envContext(c)),
      'FailedPrecondition',
      'env K: configMapKeyRef needs an API server (cluster mode)',
    );
    const s: Container = { name: 'app', env: [secKey('S', 's', 'pw')] };
    await rejectsWithCode(
      makeEnvironment(envContext(s)),
      'FailedPrecondition',
      'env S: secretKeyRef needs an API server (cluster mode)',
    );
  });

  it('does not mistake an API failure for a missing optional object', async () => {
    const src = objects();
    src.failWith = new KubeletError('Unavailable', 'GET configmap', 'connection refused');
    const c: Container = { name: 'app', env: [cmKey('K', 'cm', 'a', true)] };
    await rejectsWithCode(
      makeEnvironment(envContext(c, { objects: src })),
      'Unavailable',
      'connection refused',
    );
  });

  it('stops waiting for a hung API when the caller aborts', async () => {
    const src = objects();
    src.hang = true;
    const ac = new AbortController();
    const c: Container = { name: 'app', env: [cmKey('K', 'cm', 'a')] };
    const p = makeEnvironment(envContext(c, { objects: src, signal: ac.signal }));
    ac.abort(new KubeletError('Canceled', 'sync pod', 'pod deleted'));
    await rejectsWithCode(p, 'Canceled', 'pod deleted');
  });
});
