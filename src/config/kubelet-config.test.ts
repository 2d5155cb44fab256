import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { hasCode } from '../util/errors.ts';
import {
  compileConfig,
  decodeKubeletConfiguration,
  loadConfigFile,
  type CompileOptions,
  type DecodedConfigFile,
  type FlagValues,
} from './kubelet-config.ts';

const HEADER = 'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n';
const opts: CompileOptions = { hostname: () => 'Node-A', cwd: '/work' };

function decode(
  fields: Record<string, unknown>,
  filePath = '/etc/kubernetes/kubelet.yaml',
): DecodedConfigFile {
  return decodeKubeletConfiguration(
    { apiVersion: 'kubelet.config.k8s.io/v1beta1', kind: 'KubeletConfiguration', ...fields },
    filePath,
  );
}

function compile(fields: Record<string, unknown> | undefined, flags: FlagValues = {}) {
  return compileConfig(fields === undefined ? undefined : decode(fields), flags, opts);
}

/** Asserts `fn` throws an InvalidArgument KubeletError whose message matches every pattern. */
function assertInvalid(fn: () => unknown, ...patterns: RegExp[]): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(hasCode(err, 'InvalidArgument'), `expected InvalidArgument, got ${String(err)}`);
    for (const p of patterns) assert.match(String(err), p);
    return true;
  });
}

describe('compileConfig defaults', () => {
  it('equals the upstream v1beta1 defaults when there is no file and no flag', () => {
    const { config, warnings } = compile(undefined);
    assert.deepEqual(warnings, []);
    assert.deepEqual(config, {
      staticPodURLHeader: {},
      fileCheckFrequencyMs: 20_000,
      httpCheckFrequencyMs: 20_000,
      syncFrequencyMs: 60_000,
      maxPods: 110,
      healthzPort: 10248,
      healthzBindAddress: '127.0.0.1',
      containerRuntimeEndpoint: 'unix:///run/containerd/containerd.sock',
      runtimeRequestTimeoutMs: 120_000,
      nodeStatusUpdateFrequencyMs: 10_000,
      podLogsDir: '/var/log/pods',
      address: '0.0.0.0',
      port: 10250,
      readOnlyPort: 0,
      rootDir: '/var/lib/kubelet',
      nodeName: 'node-a',
      runOnce: false,
      runOnceTimeoutMs: 1_023_000,
      verbosity: 0,
      logFormat: 'json',
    });
  });

  it('treats zero and empty values in the file as "use the default", as upstream defaulting does', () => {
    const { config } = compile({
      syncFrequency: '0s',
      fileCheckFrequency: '0',
      maxPods: 0,
      port: 0,
      healthzBindAddress: '',
      containerRuntimeEndpoint: '',
      podLogsDir: '',
    });
    assert.equal(config.syncFrequencyMs, 60_000);
    assert.equal(config.fileCheckFrequencyMs, 20_000);
    assert.equal(config.maxPods, 110);
    assert.equal(config.port, 10250);
    assert.equal(config.healthzBindAddress, '127.0.0.1');
    assert.equal(config.containerRuntimeEndpoint, 'unix:///run/containerd/containerd.sock');
    assert.equal(config.podLogsDir, '/var/log/pods');
  });

  it('keeps an explicit healthzPort 0 in the file, which disables healthz', () => {
    assert.equal(compile({ healthzPort: 0 }).config.healthzPort, 0);
  });

  it('returns a deeply frozen config', () => {
    const { config } = compile({ staticPodURL: 'http://x/', staticPodURLHeader: { A: ['1'] } });
    assert.ok(Object.isFrozen(config));
    assert.ok(Object.isFrozen(config.staticPodURLHeader));
    assert.ok(Object.isFrozen(config.staticPodURLHeader.A));
  });
});

describe('compileConfig file values and flags', () => {
  const file = {
    staticPodPath: '/etc/kubernetes/manifests',
    staticPodURL: 'https://example.test/pods',
    staticPodURLHeader: { Authorization: ['Bearer x'], 'X-Multi': ['a', 'b'] },
    syncFrequency: '30s',
    fileCheckFrequency: '5s',
    httpCheckFrequency: '1m30s',
    nodeStatusUpdateFrequency: '4s',
    runtimeRequestTimeout: '10s',
    maxPods: 20,
    healthzPort: 10300,
    healthzBindAddress: '0.0.0.0',
    containerRuntimeEndpoint: 'unix:///run/test/containerd.sock',
    podLogsDir: '/var/log/testpods',
    address: '127.0.0.1',
    port: 10350,
    readOnlyPort: 10355,
    runOnce: true,
    logging: { format: 'text', verbosity: 3 },
  };

  it('uses every supported file value, durations converted to ms', () => {
    const { config, warnings } = compile(file);
    assert.deepEqual(warnings, []);
    assert.equal(config.configFile, '/etc/kubernetes/kubelet.yaml');
    assert.equal(config.staticPodPath, '/etc/kubernetes/manifests');
    assert.equal(config.staticPodURL, 'https://example.test/pods');
    assert.deepEqual(config.staticPodURLHeader, { Authorization: ['Bearer x'], 'X-Multi': ['a', 'b'] });
    assert.equal(config.syncFrequencyMs, 30_000);
    assert.equal(config.fileCheckFrequencyMs, 5_000);
    assert.equal(config.httpCheckFrequencyMs, 90_000);
    assert.equal(config.nodeStatusUpdateFrequencyMs, 4_000);
    assert.equal(config.runtimeRequestTimeoutMs, 10_000);
    assert.equal(config.maxPods, 20);
    assert.equal(config.healthzPort, 10300);
    assert.equal(config.healthzBindAddress, '0.0.0.0');
    assert.equal(config.containerRuntimeEndpoint, 'unix:///run/test/containerd.sock');
    assert.equal(config.podLogsDir, '/var/log/testpods');
    assert.equal(config.address, '127.0.0.1');
    assert.equal(config.port, 10350);
    assert.equal(config.readOnlyPort, 10355);
    assert.equal(config.runOnce, true);
    assert.equal(config.logFormat, 'text');
    assert.equal(config.verbosity, 3);
  });

  it('lets explicit flags override the file', () => {
    const { config } = compile(file, {
      staticPodPath: '/srv/manifests',
      staticPodURL: 'http://other.test/',
      staticPodURLHeader: { 'X-Flag': ['1'] },
      syncFrequency: '2s',
      fileCheckFrequency: '1s',
      httpCheckFrequency: '3s',
      runtimeRequestTimeout: '7s',
      maxPods: 0,
      healthzPort: 0,
      healthzBindAddress: '::1',
      containerRuntimeEndpoint: 'unix:///tmp/c.sock',
      runOnce: false,
      verbosity: 6,
      logFormat: 'json',
    });
    assert.equal(config.staticPodPath, '/srv/manifests');
    assert.equal(config.staticPodURL, 'http://other.test/');
    // The flag's header map replaces the file's, as upstream's first --manifest-url-header does.
    assert.deepEqual(config.staticPodURLHeader, { 'X-Flag': ['1'] });
    assert.equal(config.syncFrequencyMs, 2_000);
    assert.equal(config.fileCheckFrequencyMs, 1_000);
    assert.equal(config.httpCheckFrequencyMs, 3_000);
    assert.equal(config.runtimeRequestTimeoutMs, 7_000);
    assert.equal(config.maxPods, 0, 'an explicit --max-pods=0 is not defaulted away');
    assert.equal(config.healthzPort, 0);
    assert.equal(config.healthzBindAddress, '::1');
    assert.equal(config.containerRuntimeEndpoint, 'unix:///tmp/c.sock');
    assert.equal(config.runOnce, false);
    assert.equal(config.verbosity, 6);
    assert.equal(config.logFormat, 'json');
  });

  it('keeps file values for flags that were not given', () => {
    const { config } = compile(file, { maxPods: 5 });
    assert.equal(config.maxPods, 5);
    assert.equal(config.syncFrequencyMs, 30_000);
    assert.equal(config.staticPodPath, '/etc/kubernetes/manifests');
    assert.equal(config.healthzPort, 10300);
    assert.equal(config.runOnce, true);
    assert.equal(config.logFormat, 'text');
  });
});

describe('compileConfig node name', () => {
  it('lowercases and trims --hostname-override', () => {
    const { config } = compile(undefined, { hostnameOverride: '  My-Node.Example.COM ' });
    assert.equal(config.nodeName, 'my-node.example.com');
    assert.equal(config.hostnameOverride, 'My-Node.Example.COM');
  });

  it('falls back to the lowercased hostname when the override is empty', () => {
    assert.equal(compile(undefined, { hostnameOverride: '' }).config.nodeName, 'node-a');
  });

  it('rejects a whitespace-only override', () => {
    assertInvalid(
      () => compile(undefined, { hostnameOverride: '   ' }),
      /--hostname-override: empty node name/,
    );
  });

  it('warns when the node name is not a DNS subdomain', () => {
    const { warnings } = compile(undefined, { hostnameOverride: 'under_score' });
    assert.equal(warnings.length, 1);
    assert.match(warnings[0] ?? '', /DNS-1123/);
  });
});

describe('compileConfig runtime endpoint', () => {
  it('rewrites a bare absolute path to unix:// and warns', () => {
    const { config, warnings } = compile({ containerRuntimeEndpoint: '/run/containerd/containerd.sock' });
    assert.equal(config.containerRuntimeEndpoint, 'unix:///run/containerd/containerd.sock');
    assert.equal(warnings.length, 1);
    assert.match(warnings[0] ?? '', /containerRuntimeEndpoint/);
  });

  it('rejects other schemes and relative paths', () => {
    assertInvalid(
      () => compile({ containerRuntimeEndpoint: 'tcp://127.0.0.1:1234' }),
      /containerRuntimeEndpoint/,
    );
    assertInvalid(
      () => compile(undefined, { containerRuntimeEndpoint: 'run/c.sock' }),
      /--container-runtime-endpoint/,
    );
    assertInvalid(() => compile(undefined, { containerRuntimeEndpoint: 'unix://run/c.sock' }), /absolute/);
    assertInvalid(() => compile(undefined, { containerRuntimeEndpoint: '' }), /must not be empty/);
  });
});

describe('compileConfig validation', () => {
  it('reports every invalid value together, each naming its field or flag', () => {
    assertInvalid(
      () =>
        compile(
          {
            syncFrequency: '5x',
            fileCheckFrequency: '-1s',
            maxPods: -1,
            healthzPort: 70000,
            port: 65536,
            healthzBindAddress: 'localhost',
            staticPodURL: 'ftp://x/',
            staticPodURLHeader: { 'bad name': ['v'] },
            podLogsDir: '/var/log/../pods/',
          },
          { nodeIP: '10.0.0.1,10.0.0.2', httpCheckFrequency: '0s', verbosity: -1, logFormat: 'xml' },
        ),
      /syncFrequency: invalid duration "5x": unknown unit "x"/,
      /fileCheckFrequency: "-1s" must be greater than 0/,
      /--http-check-frequency: "0s" must be greater than 0/,
      /maxPods: -1 must not be a negative number/,
      /healthzPort: 70000/,
      /port: 65536/,
      /healthzBindAddress: "localhost" is not a valid IP/,
      /staticPodURL: "ftp:\/\/x\/" must be an http or https URL/,
      /staticPodURLHeader: "bad name" is not a valid HTTP header name/,
      /podLogsDir: .* must be normalized/,
      /--node-ip: .*one IPv4 and one IPv6/,
      /--v: -1/,
      /--logging-format: "xml"/,
    );
  });

  it('names the config file in the error when there is one', () => {
    assertInvalid(() => compile({ maxPods: -1 }), /\/etc\/kubernetes\/kubelet\.yaml/);
  });

  it('accepts a single node IP and a dual-stack pair', () => {
    assert.equal(compile(undefined, { nodeIP: '192.168.1.5' }).config.nodeIP, '192.168.1.5');
    assert.equal(compile(undefined, { nodeIP: '10.0.0.1,fd00::1' }).config.nodeIP, '10.0.0.1,fd00::1');
    assertInvalid(() => compile(undefined, { nodeIP: 'not-an-ip' }), /--node-ip/);
  });

  it('resolves a relative --root-dir against the working directory', () => {
    assert.equal(compile(undefined, { rootDir: 'state' }).config.rootDir, '/work/state');
  });
});

describe('decodeKubeletConfiguration', () => {
  it('fails on a truly unknown field, naming it', () => {
    assertInvalid(
      () => decode({ fooBar: 1 }),
      /load config \/etc\/kubernetes\/kubelet\.yaml/,
      /unknown field "fooBar"/,
    );
  });

  it('accepts known-but-unimplemented upstream fields with a warning each', () => {
    const decoded = decode({ cgroupDriver: 'systemd', authentication: { anonymous: { enabled: false } } });
    assert.equal(decoded.warnings.length, 2);
    assert.match(decoded.warnings[0] ?? '', /"cgroupDriver" is not implemented/);
    assert.match(decoded.warnings[1] ?? '', /"authentication" is not implemented/);
    assert.deepEqual(compileConfig(decoded, {}, opts).warnings, decoded.warnings);
  });

  it('checks logging sub-fields: implemented, ignored with a warning, unknown', () => {
    const decoded = decode({ logging: { format: 'text', verbosity: 2, flushFrequency: '5s' } });
    assert.deepEqual(decoded.raw.logging, { format: 'text', verbosity: 2 });
    assert.equal(decoded.warnings.length, 1);
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
