// The decode stage (decode.ts): KubeletConfiguration objects and files. Upstream counterpart:
// pkg/kubelet/kubeletconfig/util/codec and cmd/kubelet/app (loadConfigFile).
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { hasCode } from '../util/errors.ts';
import { compileConfig, decodeKubeletConfiguration, loadConfigFile } from './kubelet-config.ts';
import { assertInvalid, COMPILE_OPTS as opts, decodeFields as decode, HEADER } from './testing.ts';

describe('decodeKubeletConfiguration', () => {
  it('fails on a truly unknown field, naming it', () => {
    assertInvalid(
      () => decode({ fooBar: 1 }),
      /load config \/etc\/kubernetes\/kubelet\.yaml/,
      /unknown field "fooBar"/,
    );
  });

  it('accepts known-but-unimplemented upstream fields with a warning each', () => {
    const decoded = decode({
      kernelMemcgNotification: true,
      podsPerCore: 10,
    });
    assert.equal(decoded.warnings.length, 2);
    assert.match(decoded.warnings[0] ?? '', /"kernelMemcgNotification" is not implemented/);
    assert.match(decoded.warnings[1] ?? '', /"podsPerCore" is not implemented/);
    assert.deepEqual(compileConfig(decoded, {}, opts).warnings, decoded.warnings);
  });

  it('checks logging sub-fields: implemented, ignored with a warning, unknown', () => {
    const decoded = decode({
      logging: { format: 'text', verbosity: 2, flushFrequency: '5s', options: { json: {} } },
    });
    assert.deepEqual(decoded.raw.logging, { format: 'text', verbosity: 2, flushFrequency: '5s' });
    assert.equal(decoded.warnings.length, 1);
    assert.match(decoded.warnings[0] ?? '', /"logging.options" is not implemented/);
    assertInvalid(() => decode({ logging: { colour: true } }), /unknown field "logging.colour"/);
  });

  it('fails on wrong types, naming each field', () => {
    assertInvalid(
      () =>
        decode({
          maxPods: 'abc',
          syncFrequency: 5,
          healthzPort: 1.5,
          runOnce: 'yes',
          staticPodURLHeader: { A: 'not-a-list' },
          staticPodPath: ['x'],
        }),
      /field "maxPods": expected an integer, got string "abc"/,
      /field "syncFrequency": expected a duration string/,
      /field "healthzPort": expected an integer/,
      /field "runOnce": expected a boolean/,
      /field "staticPodURLHeader.A": expected a list of strings/,
      /field "staticPodPath": expected a string, got list/,
    );
  });

  it('requires apiVersion and kind and checks their values', () => {
    assertInvalid(
      () => decodeKubeletConfiguration({ maxPods: 1 }, 'k.yaml'),
      /missing field "apiVersion"/,
      /missing field "kind"/,
    );
    assertInvalid(
      () =>
        decodeKubeletConfiguration({ apiVersion: 'kubelet.config.k8s.io/v1alpha1', kind: 'Pod' }, 'k.yaml'),
      /apiVersion "kubelet.config.k8s.io\/v1alpha1" is not supported/,
      /kind "Pod" is not supported/,
    );
    assertInvalid(
      () => decodeKubeletConfiguration(['a'], 'k.yaml'),
      /expected a KubeletConfiguration object/,
    );
  });

  it('decodes registerWithTaints and names each malformed entry', () => {
    assert.deepEqual(
      decode({ registerWithTaints: [{ key: 'a', value: 'b', effect: 'NoSchedule' }, { key: 'c' }] }).raw
        .registerWithTaints,
      [
        { key: 'a', value: 'b', effect: 'NoSchedule' },
        { key: 'c', effect: '' },
      ],
    );
    assertInvalid(
      () => decode({ registerWithTaints: { key: 'a' } }),
      /field "registerWithTaints": expected a list/,
    );
    assertInvalid(
      () =>
        decode({
          registerWithTaints: [
            'a:NoSchedule',
            { key: 1, effect: 'NoSchedule' },
            { key: 'a', effect: 'NoSchedule', timeAdded: '2024-01-01T00:00:00Z' },
            { key: 'a', effect: 'NoSchedule', colour: 'red' },
          ],
        }),
      /field "registerWithTaints\[0\]": expected a taint/,
      /field "registerWithTaints\[1\]\.key": expected a string, got number 1/,
      /field "registerWithTaints\[2\]\.timeAdded": must not be set/,
      /unknown field "registerWithTaints\[3\]\.colour"/,
    );
  });

  it('checks the types of the client limits, lease duration, report frequency and registerNode', () => {
    assertInvalid(
      () =>
        decode({
          kubeAPIQPS: 1.5,
          kubeAPIBurst: '10',
          eventRecordQPS: true,
          eventBurst: 2 ** 31,
          nodeLeaseDurationSeconds: '40',
          nodeStatusReportFrequency: 60,
          registerNode: 'true',
        }),
      /field "kubeAPIQPS": expected an integer/,
      /field "kubeAPIBurst": expected an integer/,
      /field "eventRecordQPS": expected an integer/,
      /field "eventBurst": expected an integer/,
      /field "nodeLeaseDurationSeconds": expected an integer/,
      /field "nodeStatusReportFrequency": expected a duration string/,
      /field "registerNode": expected a boolean/,
    );
  });

  it('treats null as unset', () => {
    assert.deepEqual(decode({ maxPods: null, staticPodPath: null }).raw, {});
  });

  it('resolves relative staticPodPath and podLogsDir against the file directory', () => {
    const { raw } = decode(
      { staticPodPath: 'manifests', podLogsDir: '../logs' },
      '/etc/kubernetes/kubelet.yaml',
    );
    assert.equal(raw.staticPodPath, '/etc/kubernetes/manifests');
    assert.equal(raw.podLogsDir, '/etc/logs');
  });
});

describe('loadConfigFile', () => {
  let dir = '';
  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'tskubelet-config-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  async function write(name: string, text: string): Promise<string> {
    const file = path.join(dir, name);
    await writeFile(file, text);
    return file;
  }

  it('loads a YAML file', async () => {
    const file = await write(
      'kubelet.yaml',
      `${HEADER}staticPodPath: manifests\nsyncFrequency: 10s\nmaxPods: 12\nstaticPodURLHeader:\n  X-A: [one, two]\n`,
    );
    const decoded = await loadConfigFile(file);
    assert.deepEqual(decoded.raw, {
      staticPodPath: path.join(dir, 'manifests'),
      syncFrequency: '10s',
      maxPods: 12,
      staticPodURLHeader: { 'X-A': ['one', 'two'] },
    });
    const { config } = compileConfig(decoded, {}, opts);
    assert.equal(config.syncFrequencyMs, 10_000);
    assert.equal(config.configFile, file);
  });

  it('loads a JSON file', async () => {
    const file = await write(
      'kubelet.json',
      JSON.stringify({
        apiVersion: 'kubelet.config.k8s.io/v1beta1',
        kind: 'KubeletConfiguration',
        maxPods: 3,
      }),
    );
    assert.deepEqual((await loadConfigFile(file)).raw, { maxPods: 3 });
  });

  it('reads YAML 1.2 core scalars: "yes" stays a string, so a bool field rejects it', async () => {
    const file = await write('yes.yaml', `${HEADER}runOnce: yes\n`);
    await assert.rejects(loadConfigFile(file), /field "runOnce": expected a boolean, got string "yes"/);
  });

  it('names the file and line of a YAML syntax error', async () => {
    const file = await write('broken.yaml', `${HEADER}maxPods: 3\n  bad: [\n`);
    await assert.rejects(loadConfigFile(file), (err: unknown) => {
      assert.ok(hasCode(err, 'InvalidArgument'));
      assert.ok(String(err).includes(file), String(err));
      assert.match(String(err), /line \d+, column \d+/);
      return true;
    });
  });

  it('refuses a field nested thousands of levels deep at its line, not with the parser’s stack overflow', async () => {
    for (const depth of [600, 5_000, 100_000]) {
      const file = await write(
        `deep-${depth}.yaml`,
        `${HEADER}maxPods: 3\nextra: ${'['.repeat(depth)}${']'.repeat(depth)}\n`,
      );
      await assert.rejects(loadConfigFile(file), (err: unknown) => {
        assert.ok(hasCode(err, 'InvalidArgument'), String(err));
        assert.match(String(err), /line 4, column \d+: nested more than 512 levels deep/);
        return true;
      });
    }
  });

  it('rejects duplicate keys', async () => {
    const file = await write('dup.yaml', `${HEADER}maxPods: 1\nmaxPods: 2\n`);
    await assert.rejects(loadConfigFile(file), /line 4, column 1: Map keys must be unique/);
  });

  it('names an unknown field in a file', async () => {
    const file = await write('unknown.yaml', `${HEADER}fooBar: 1\n`);
    await assert.rejects(loadConfigFile(file), (err: unknown) => {
      assert.ok(hasCode(err, 'InvalidArgument'));
      assert.equal(String(err), `KubeletError: load config ${file}: unknown field "fooBar"`);
      return true;
    });
  });

  it('rejects a file with the wrong kind', async () => {
    const file = await write('pod.yaml', 'apiVersion: v1\nkind: Pod\n');
    await assert.rejects(
      loadConfigFile(file),
      /apiVersion "v1" is not supported.*kind "Pod" is not supported/,
    );
  });

  it('rejects an empty file', async () => {
    const file = await write('empty.yaml', '');
    await assert.rejects(loadConfigFile(file), /expected a KubeletConfiguration object, got null/);
  });

  it('reports a missing file as NotFound', async () => {
    await assert.rejects(loadConfigFile(path.join(dir, 'nope.yaml')), (err: unknown) =>
      hasCode(err, 'NotFound'),
    );
  });
});
