// The --config-dir drop-ins (src/config/drop-in.ts); upstream: cmd/kubelet/app/server.go
// mergeKubeletConfigurations (1.28+) and the website's "Kubelet Configuration Directory Merging".
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parseRunArgs } from '../cli/flags.ts';
import { hasCode } from '../util/errors.ts';
import { dropInFiles, mergePatch } from './drop-in.ts';
import { HEADER } from './testing.ts';

const opts = { hostname: () => 'test-host', cwd: '/work' };

describe('--config-dir', () => {
  let dir = '';
  let main = '';
  let dropIns = '';
  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'tskubelet-dropin-'));
    main = path.join(dir, 'config.yaml');
    dropIns = path.join(dir, 'kubelet.conf.d');
    await mkdir(path.join(dropIns, '20-sub'), { recursive: true });
    await writeFile(
      main,
      HEADER +
        [
          'port: 20250',
          'address: 192.168.0.1',
          'maxPods: 50',
          'clusterDNS: [192.168.0.9, 192.168.0.8]',
          'evictionHard: {memory.available: 200Mi, nodefs.available: 10%}',
          'featureGates: {AllAlpha: false, GracefulNodeShutdown: true}',
          'authorization: {mode: Webhook, webhook: {cacheAuthorizedTTL: 5m, cacheUnauthorizedTTL: 30s}}',
        ].join('\n'),
    );
    // Applied in lexical order of the whole name: 10 < 20-sub/ < 30 < 99; other suffixes ignored.
    await writeFile(
      path.join(dropIns, '10-address.conf'),
      HEADER + 'address: 192.168.0.8\nclusterDNS: [192.168.0.2]\nauthorization: {mode: AlwaysAllow}\n',
    );
    await writeFile(path.join(dropIns, '20-sub', 'a.conf'), HEADER + 'maxPods: 60\n');
    await writeFile(
      path.join(dropIns, '30-maps.conf'),
      HEADER +
        'evictionHard: {memory.available: 300Mi}\nfeatureGates: {GracefulNodeShutdown: false, AppArmor: false}\n',
    );
    await writeFile(path.join(dropIns, '99-last.conf'), HEADER + 'maxPods: 70\nstaticPodPath: manifests\n');
    await writeFile(path.join(dropIns, '50-ignored.yaml'), HEADER + 'maxPods: 1\n');
    await writeFile(path.join(dropIns, 'README'), 'not a config\n');
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('walks the directory in lexical order, subdirectories included, *.conf only', async () => {
    assert.deepEqual(
      (await dropInFiles(dropIns)).map((f) => path.relative(dropIns, f)),
      ['10-address.conf', '20-sub/a.conf', '30-maps.conf', '99-last.conf'],
    );
  });

  it('merges each drop-in over --config: scalars and lists replaced, objects and maps merged key by key', async () => {
    const { config, warnings } = await parseRunArgs([`--config=${main}`, `--config-dir=${dropIns}`], opts);
    assert.equal(config.port, 20250, 'kept from --config');
    assert.equal(config.address, '192.168.0.8');
    assert.deepEqual(config.clusterDNS, ['192.168.0.2'], 'a list is replaced whole');
    assert.equal(config.maxPods, 70, 'the last drop-in wins');
    assert.deepEqual(config.evictionHard, { 'memory.available': '300Mi', 'nodefs.available': '10%' });
    assert.deepEqual(config.featureGates, { AllAlpha: false, GracefulNodeShutdown: false, AppArmor: false });
    assert.equal(config.server.authorization.mode, 'AlwaysAllow');
    assert.equal(config.server.authorization.cacheAuthorizedTTLMs, 300_000, 'a nested object merges per key');
    assert.equal(
      config.staticPodPath,
      path.join(dropIns, 'manifests'),
      "relative to the drop-in's directory",
    );
    assert.equal(config.configFile, main);
    assert.deepEqual(
      warnings.filter((w) => !w.includes('authorization mode AlwaysAllow')),
      [],
    );
  });

  it('still lets explicit flags win over the drop-ins', async () => {
    const { config } = await parseRunArgs(
      [`--config=${main}`, `--config-dir=${dropIns}`, '--max-pods=80', '--feature-gates=AppArmor=true'],
      opts,
    );
    assert.equal(config.maxPods, 80);
    assert.deepEqual(config.featureGates, { AllAlpha: false, GracefulNodeShutdown: false, AppArmor: true });
  });

  it('merges over the defaults without --config', async () => {
    const { config } = await parseRunArgs([`--config-dir=${dropIns}`], opts);
    assert.equal(config.port, 10250);
    assert.equal(config.maxPods, 70);
  });

  it('fails for a missing directory, and for a bad drop-in naming its file', async () => {
    await assert.rejects(parseRunArgs([`--config-dir=${path.join(dir, 'nope')}`], opts), (err: unknown) => {
      assert.ok(hasCode(err, 'NotFound'), String(err));
      assert.match(String(err), /read config drop-in directory .*nope/);
      return true;
    });
    const bad = path.join(dir, 'bad.d');
    await mkdir(bad);
    await writeFile(path.join(bad, '10-bad.conf'), 'maxPods: 5\n');
    await assert.rejects(
      parseRunArgs([`--config-dir=${bad}`], opts),
      /10-bad\.conf.*missing field "apiVersion"/,
    );
    await writeFile(path.join(bad, '10-bad.conf'), HEADER + 'maxPod: 5\n');
    await assert.rejects(parseRunArgs([`--config-dir=${bad}`], opts), /10-bad\.conf.*unknown field "maxPod"/);
    // A value refused after the merge: the error lists the drop-ins it may have come from.
    await writeFile(path.join(bad, '10-bad.conf'), HEADER + 'maxPods: -5\n');
    await assert.rejects(
      parseRunArgs([`--config=${main}`, `--config-dir=${bad}`], opts),
      /validate kubelet configuration \(file .*config\.yaml, drop-ins .*10-bad\.conf, flags\): maxPods: -5/,
    );
  });
});

describe('mergePatch', () => {
  it('is an RFC 7386 merge of decoded configurations, keeping odd keys as keys', () => {
    const merged = mergePatch(
      { a: 1, m: { x: '1', y: '2' }, l: [1, 2], n: { deep: { k: 1, j: 2 } } },
      JSON.parse('{"a": 2, "m": {"y": "3", "__proto__": "p"}, "l": [3], "n": {"deep": {"k": 5}}}') as Record<
        string,
        unknown
      >,
    );
    assert.equal(
      JSON.stringify(merged),
      '{"a":2,"m":{"x":"1","y":"3","__proto__":"p"},"l":[3],"n":{"deep":{"k":5,"j":2}}}',
    );
    assert.equal(Object.getPrototypeOf(merged.m), Object.prototype);
  });
});
