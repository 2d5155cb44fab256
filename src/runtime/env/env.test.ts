import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Container } from '../../api/types.ts';
import { hasCode } from '../../util/errors.ts';
import { fakeObjectSource } from '../../volume/testing.ts';
import { generateContainerConfig } from '../kuberuntime/container-config.ts';
import { literalEnvironment, makeEnvironment } from './env.ts';
import { envContext, rejectsWithCode, svc } from '../testing.ts';

// Facts below follow upstream TestMakeEnvironmentVariables (pkg/kubelet/kubelet_pods_test.go).

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
    const envs = await makeEnvironment(envContext(c, { services }));
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
    assert.deepEqual(await makeEnvironment(envContext(c)), [
      { key: 'A', value: 'two-one' },
      { key: 'B', value: 'one' },
    ]);
  });
});

describe('other sources and the literal fallback', () => {
  it('fails on a valueFrom source it does not know instead of setting an empty value', async () => {
    const c: Container = {
      name: 'app',
      env: [{ name: 'F', valueFrom: { fileKeyRef: { path: 'x', key: 'k' } } }],
    };
    await rejectsWithCode(makeEnvironment(envContext(c)), 'Unimplemented', 'fileKeyRef');
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
    assert.deepEqual(await makeEnvironment(envContext(c, { objects: src, logger })), []);
    assert.equal(lines.length, 1);
    assert.match(lines[0]?.msg ?? '', /Keys \[1bad\]/);
    assert.equal(lines[0]?.fields?.pod, 'test1/dapi-test-pod-name');
    assert.equal(lines[0]?.fields?.podUID, 'uid-1');
  });

  it('rejects at once when already aborted', async () => {
    const c: Container = { name: 'app', env: [{ name: 'A', value: 'a' }] };
    await assert.rejects(makeEnvironment(envContext(c, { signal: AbortSignal.abort() })));
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
    const ctx = envContext(c, { services: [svc('kubernetes', 'default', '10.96.0.1', 443)] });
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
