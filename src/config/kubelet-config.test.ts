import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { hasCode } from '../util/errors.ts';
import { toKubeletConfiguration } from './configz.ts';
import {
  compileConfig,
  decodeKubeletConfiguration,
  loadConfigFile,
  type CompileOptions,
  type DecodedConfigFile,
  type FlagValues,
} from './kubelet-config.ts';
import { KUBELET_FIELDS } from './fields.ts';

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
      // Secure defaults from flags alone too (upstream's flag defaults: anonymous, AlwaysAllow).
      server: {
        enableServer: true,
        tlsCipherSuites: [],
        authentication: { anonymous: false, webhook: true, webhookCacheTTLMs: 120_000 },
        authorization: { mode: 'Webhook', cacheAuthorizedTTLMs: 300_000, cacheUnauthorizedTTLMs: 30_000 },
        enableDebuggingHandlers: true,
        enableSystemLogHandler: true,
        streamingConnectionIdleTimeoutMs: 4 * 3600_000,
        containerLogMaxSizeBytes: 10 * 1024 * 1024,
        containerLogMaxFiles: 5,
      },
      rootDir: '/var/lib/kubelet',
      nodeName: 'node-a',
      runOnce: false,
      runOnceTimeoutMs: 1_023_000,
      runtimePacing: true,
      eventedPleg: false,
      seccompDefault: false,
      allowedUnsafeSysctls: [],
      verbosity: 0,
      logFormat: 'json',
      kubeAPIQPS: 50,
      kubeAPIBurst: 100,
      eventRecordQPS: 50,
      eventBurst: 100,
      evictionHard: {
        'memory.available': '100Mi',
        'nodefs.available': '10%',
        'nodefs.inodesFree': '5%',
        'imagefs.available': '15%',
      },
      evictionSoft: {},
      evictionSoftGracePeriod: {},
      evictionMinimumReclaim: {},
      evictionThresholds: [
        { signal: 'memory.available', value: { quantity: 100 * 2 ** 20 }, gracePeriodMs: 0 },
        { signal: 'nodefs.available', value: { percentage: 0.1 }, gracePeriodMs: 0 },
        { signal: 'nodefs.inodesFree', value: { percentage: 0.05 }, gracePeriodMs: 0 },
        { signal: 'imagefs.available', value: { percentage: 0.15 }, gracePeriodMs: 0 },
        { signal: 'allocatableMemory.available', value: { quantity: 100 * 2 ** 20 }, gracePeriodMs: 0 },
      ],
      evictionPressureTransitionPeriodMs: 300_000,
      volumeStatsAggPeriodMs: 60_000,
      evictionMaxPodGracePeriodSeconds: 0,
      nodeStatusReportFrequencyMs: 300_000,
      nodeLeaseDurationSeconds: 40,
      registerNode: true,
      registerWithTaints: [],
      nodeLabels: {},
      resolvConf: '/etc/resolv.conf',
      clusterDomain: '',
      clusterDNS: [],
      cgroupsPerQOS: true,
      cgroupRoot: '/',
      cgroupDriver: 'cgroupfs',
      podPidsLimit: -1,
      cpuCFSQuota: true,
      cpuCFSQuotaPeriodMs: 100,
      enforceNodeAllocatable: ['pods'],
      // tskubelet's deliberate default: parallel pulls, at most 5 (upstream serializes).
      serializeImagePulls: false,
      maxParallelImagePulls: 5,
      registryPullQPS: 5,
      registryBurst: 10,
      nodeStatusMaxImages: 50,
      configMapAndSecretChangeDetectionStrategy: 'Watch',
      // Image GC (upstream defaults): 85%, 80%, 2m.
      imageGCHighThresholdPercent: 85,
      imageGCLowThresholdPercent: 80,
      imageMinimumGCAgeMs: 120_000,
      // Container GC (KubeletFlags upstream): MinimumGCAge 0, MaxPerPodContainerCount 1, MaxContainerCount -1.
      minimumGCAgeMs: 0,
      maxPerPodContainerCount: 1,
      maxContainerCount: -1,
      // Graceful node shutdown: off (1.20's defaulting leaves both at 0).
      shutdownGracePeriodMs: 0,
      shutdownGracePeriodCriticalPodsMs: 0,
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
    // The two plain-HTTP listeners without authentication the file opens (listenerWarnings).
    assert.equal(warnings.length, 2);
    assert.match(warnings[0] ?? '', /^healthz listener: 0\.0\.0\.0 /);
    assert.match(warnings[1] ?? '', /^kubelet API: the read-only port 10355 /);
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

describe('compileConfig cluster-mode settings', () => {
  const clusterFile = {
    kubeAPIQPS: 20,
    kubeAPIBurst: 40,
    eventRecordQPS: 7,
    eventBurst: 9,
    nodeStatusReportFrequency: '1m',
    nodeLeaseDurationSeconds: 60,
    registerNode: false,
    registerWithTaints: [
      { key: 'dedicated', value: 'infra', effect: 'NoSchedule' },
      { key: 'example.com/gpu', effect: 'NoExecute' },
      { key: 'spot', value: '', effect: 'PreferNoSchedule' },
    ],
  };

  it('uses the file values, without the "not implemented" warnings they used to get', () => {
    const { config, warnings } = compile(clusterFile);
    assert.deepEqual(warnings, []);
    assert.equal(config.kubeAPIQPS, 20);
    assert.equal(config.kubeAPIBurst, 40);
    assert.equal(config.eventRecordQPS, 7);
    assert.equal(config.eventBurst, 9);
    assert.equal(config.nodeStatusReportFrequencyMs, 60_000);
    assert.equal(config.nodeLeaseDurationSeconds, 60);
    assert.equal(config.registerNode, false, 'an explicit false in the file is kept');
    assert.deepEqual(config.registerWithTaints, [
      { key: 'dedicated', value: 'infra', effect: 'NoSchedule' },
      { key: 'example.com/gpu', effect: 'NoExecute' },
      { key: 'spot', effect: 'PreferNoSchedule' },
    ]);
    assert.deepEqual(config.nodeLabels, {});
  });

  it('lets flags override the file, an empty taint list included', () => {
    const { config } = compile(clusterFile, {
      kubeAPIQPS: 1,
      kubeAPIBurst: 2,
      eventRecordQPS: 3,
      eventBurst: 4,
      registerNode: true,
      registerWithTaints: [{ key: 'flag', effect: 'NoSchedule' }],
      nodeLabels: { role: 'edge' },
    });
    assert.equal(config.kubeAPIQPS, 1);
    assert.equal(config.kubeAPIBurst, 2);
    assert.equal(config.eventRecordQPS, 3);
    assert.equal(config.eventBurst, 4);
    assert.equal(config.registerNode, true);
    assert.deepEqual(config.registerWithTaints, [{ key: 'flag', effect: 'NoSchedule' }]);
    assert.deepEqual(config.nodeLabels, { role: 'edge' });
    assert.deepEqual(compile(clusterFile, { registerWithTaints: [] }).config.registerWithTaints, []);
  });

  it('keeps file values for cluster flags that were not given', () => {
    const { config } = compile(clusterFile, { kubeAPIQPS: 30 });
    assert.equal(config.kubeAPIQPS, 30);
    assert.equal(config.kubeAPIBurst, 40);
    assert.equal(config.eventRecordQPS, 7);
    assert.equal(config.registerNode, false);
    assert.equal(config.registerWithTaints.length, 3);
  });

  it('defaults zero bursts and lease duration in the file, as upstream v1beta1 defaulting does', () => {
    const { config } = compile({
      kubeAPIBurst: 0,
      eventBurst: 0,
      nodeLeaseDurationSeconds: 0,
      nodeStatusReportFrequency: '0s',
    });
    assert.equal(config.kubeAPIBurst, 100);
    assert.equal(config.eventBurst, 100);
    assert.equal(config.nodeLeaseDurationSeconds, 40);
    assert.equal(config.nodeStatusReportFrequencyMs, 300_000);
  });

  it("turns a QPS of 0 (kept by upstream defaulting) into client-go's fallback of 5, burst 0 into 10", () => {
    const fromFile = compile({ kubeAPIQPS: 0, eventRecordQPS: 0 }).config;
    assert.equal(fromFile.kubeAPIQPS, 5);
    assert.equal(fromFile.eventRecordQPS, 5);
    assert.equal(fromFile.kubeAPIBurst, 100, 'an unset burst keeps its default');
    const fromFlags = compile(undefined, {
      kubeAPIQPS: 0,
      kubeAPIBurst: 0,
      eventRecordQPS: 0,
      eventBurst: 0,
    }).config;
    assert.deepEqual(
      [fromFlags.kubeAPIQPS, fromFlags.kubeAPIBurst, fromFlags.eventRecordQPS, fromFlags.eventBurst],
      [5, 10, 5, 10],
    );
  });

  it('defaults nodeStatusReportFrequency to a nodeStatusUpdateFrequency set in the file', () => {
    assert.equal(compile({ nodeStatusUpdateFrequency: '20s' }).config.nodeStatusReportFrequencyMs, 20_000);
    assert.equal(
      compile({ nodeStatusUpdateFrequency: '20s', nodeStatusReportFrequency: '2m' }).config
        .nodeStatusReportFrequencyMs,
      120_000,
    );
    assert.equal(compile({ nodeStatusUpdateFrequency: '0s' }).config.nodeStatusReportFrequencyMs, 300_000);
    // Upstream applies flags after defaulting, so the flag leaves the report frequency alone.
    assert.equal(
      compile(undefined, { nodeStatusUpdateFrequency: '20s' }).config.nodeStatusReportFrequencyMs,
      300_000,
    );
    assert.equal(
      compile({ nodeStatusUpdateFrequency: '20s' }, { nodeStatusUpdateFrequency: '3s' }).config
        .nodeStatusReportFrequencyMs,
      20_000,
    );
  });

  it('rejects negative limits, lease duration and report frequency, naming each field or flag', () => {
    assertInvalid(
      () =>
        compile(
          {
            kubeAPIQPS: -1,
            kubeAPIBurst: -2,
            eventRecordQPS: -3,
            eventBurst: -4,
            nodeLeaseDurationSeconds: -5,
            nodeStatusReportFrequency: '-1s',
          },
          { eventBurst: -6 },
        ),
      /kubeAPIQPS: -1 must not be a negative number/,
      /kubeAPIBurst: -2 must not be a negative number/,
      /eventRecordQPS: -3 must not be a negative number/,
      /--event-burst: -6 must not be a negative number/,
      /nodeLeaseDurationSeconds: -5 must be greater than 0/,
      /nodeStatusReportFrequency: "-1s" must be greater than 0/,
    );
    assertInvalid(() => compile(undefined, { kubeAPIQPS: -1 }), /--kube-api-qps: -1 must not be a negative/);
  });

  it('validates taints from the file: key, value, effect, duplicates', () => {
    assertInvalid(
      () =>
        compile({
          registerWithTaints: [
            { key: 'Bad_Prefix.COM/x', effect: 'NoSchedule' },
            { key: 'ok', value: 'not valid!', effect: 'NoSchedule' },
            { key: 'ok2', effect: 'Sometimes' },
            { key: 'ok3' },
            { key: '', effect: 'NoSchedule' },
            { key: 'dup', effect: 'NoExecute' },
            { key: 'dup', value: 'other', effect: 'NoExecute' },
            { key: 'a/b/c', effect: 'NoSchedule' },
          ],
        }),
      /registerWithTaints\[0\]: key prefix "Bad_Prefix.COM" is not a lowercase DNS-1123 subdomain/,
      /registerWithTaints\[1\]: value may only hold/,
      /registerWithTaints\[2\]: effect "Sometimes" is not one of NoSchedule, PreferNoSchedule, NoExecute/,
      /registerWithTaints\[3\]: effect is required/,
      /registerWithTaints\[4\]: key "" has an empty name/,
      /registerWithTaints\[6\]: duplicate taint/,
      /registerWithTaints\[7\]: key "a\/b\/c" has more than one "\/"/,
    );
  });

  it('allows the same taint key with different effects', () => {
    const taints = [
      { key: 'k', effect: 'NoSchedule' },
      { key: 'k', effect: 'NoExecute' },
    ];
    assert.deepEqual(compile({ registerWithTaints: taints }).config.registerWithTaints, taints);
  });

  it('validates taints from --register-with-taints, naming the flag and the taint', () => {
    assertInvalid(
      () => compile(undefined, { registerWithTaints: [{ key: 'k', value: 'v', effect: 'Bogus' }] }),
      /--register-with-taints: taint "k=v:Bogus": effect "Bogus" is not one of/,
    );
  });

  it('accepts valid node labels, including the allowed kubernetes.io namespaces and well-known labels', () => {
    const labels = {
      role: 'edge',
      'example.com/team': 'a.b-c_d',
      empty: '',
      'kubelet.kubernetes.io/x': '1',
      'node.kubernetes.io/pool': 'p1',
      'sub.node.kubernetes.io/y': '2',
      'node.kubernetes.io/instance-type': 'm5',
      'topology.kubernetes.io/zone': 'z1',
      'topology.kubernetes.io/region': 'r1',
      'failure-domain.beta.kubernetes.io/zone': 'z1',
      'beta.kubernetes.io/instance-type': 'm5',
      'kubernetes.io/arch': 'amd64',
      'kubernetes.io/hostname': 'node-a',
    };
    assert.deepEqual(compile(undefined, { nodeLabels: labels }).config.nodeLabels, labels);
  });

  it('refuses node labels in the kubernetes.io and k8s.io namespaces outside the allowed set', () => {
    for (const key of [
      'kubernetes.io/role',
      'node-role.kubernetes.io/worker',
      'node-restriction.kubernetes.io/x',
      'k8s.io/x',
      'foo.k8s.io/x',
      'evil.kubernetes.io/x',
    ]) {
      assertInvalid(
        () => compile(undefined, { nodeLabels: { [key]: 'v' } }),
        new RegExp(
          `--node-labels: "${key.replace(/\./g, '\\.')}" is in the kubernetes\\.io or k8s\\.io namespace`,
        ),
      );
    }
    // Look-alikes outside those namespaces are ordinary labels.
    const lookAlikes = { 'notkubernetes.io/x': 'v', 'kubernetes.io.example.com/x': 'v', 'k8s.io': 'v' };
    assert.deepEqual(compile(undefined, { nodeLabels: lookAlikes }).config.nodeLabels, lookAlikes);
  });

  it('reports malformed node label keys and values', () => {
    assertInvalid(
      () =>
        compile(undefined, {
          nodeLabels: {
            'bad key': 'v',
            '/x': 'v',
            good: 'x'.repeat(64),
            [`${'n'.repeat(64)}`]: 'v',
            ok: '-starts-with-dash',
          },
        }),
      /--node-labels: label "bad key=v": key name "bad key" may only hold/,
      /--node-labels: label "\/x=v": key "\/x" has an empty prefix/,
      /--node-labels: label "good=x+": value is longer than 63 characters/,
      /key name "n+" is longer than 63 characters/,
      /label "ok=-starts-with-dash": value may only hold/,
    );
  });

  it("freezes the taints and labels without freezing the caller's objects", () => {
    const nodeLabels = { role: 'edge' };
    const registerWithTaints = [{ key: 'k', effect: 'NoSchedule' }];
    const { config } = compile(undefined, { nodeLabels, registerWithTaints });
    assert.ok(Object.isFrozen(config.nodeLabels));
    assert.ok(Object.isFrozen(config.registerWithTaints));
    assert.ok(Object.isFrozen(config.registerWithTaints[0]));
    assert.ok(!Object.isFrozen(nodeLabels));
    assert.ok(!Object.isFrozen(registerWithTaints[0]));
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

describe('compileConfig image pulls and node images', () => {
  const pulls = (fields: Record<string, unknown> | undefined, flags: FlagValues = {}) => {
    const { config } = compile(fields, flags);
    return {
      serializeImagePulls: config.serializeImagePulls,
      maxParallelImagePulls: config.maxParallelImagePulls,
    };
  };

  it('pulls in parallel, at most 5, when neither field nor flag is set (tskubelet default)', () => {
    assert.deepEqual(pulls(undefined), { serializeImagePulls: false, maxParallelImagePulls: 5 });
    assert.deepEqual(pulls({}), { serializeImagePulls: false, maxParallelImagePulls: 5 });
  });

  it('defaults serializeImagePulls from maxParallelImagePulls as upstream: below 2 serializes', () => {
    assert.deepEqual(pulls({ maxParallelImagePulls: 1 }), {
      serializeImagePulls: true,
      maxParallelImagePulls: 1,
    });
    assert.deepEqual(pulls({ maxParallelImagePulls: 3 }), {
      serializeImagePulls: false,
      maxParallelImagePulls: 3,
    });
  });

  it('serializes with serializeImagePulls true, from the file or the flag', () => {
    const one = { serializeImagePulls: true, maxParallelImagePulls: 1 };
    assert.deepEqual(pulls({ serializeImagePulls: true }), one);
    assert.deepEqual(pulls({ serializeImagePulls: true, maxParallelImagePulls: 1 }), one);
    assert.deepEqual(pulls(undefined, { serializeImagePulls: true }), one);
  });

  it('sets no limit for serializeImagePulls false without maxParallelImagePulls, as upstream', () => {
    assert.deepEqual(pulls({ serializeImagePulls: false }), {
      serializeImagePulls: false,
      maxParallelImagePulls: undefined,
    });
    assert.deepEqual(pulls({ serializeImagePulls: false, maxParallelImagePulls: 8 }), {
      serializeImagePulls: false,
      maxParallelImagePulls: 8,
    });
  });

  it('lets --serialize-image-pulls override the file', () => {
    assert.deepEqual(pulls({ serializeImagePulls: true }, { serializeImagePulls: false }), {
      serializeImagePulls: false,
      maxParallelImagePulls: undefined,
    });
  });

  it('rejects maxParallelImagePulls below 1, and above 1 with serializeImagePulls true', () => {
    assertInvalid(() => compile({ maxParallelImagePulls: 0 }), /maxParallelImagePulls: 0 must be a positive/);
    assertInvalid(
      () => compile({ maxParallelImagePulls: -2 }),
      /maxParallelImagePulls: -2 must be a positive/,
    );
    assertInvalid(
      () => compile({ serializeImagePulls: true, maxParallelImagePulls: 2 }),
      /maxParallelImagePulls: 2 cannot be larger than 1 unless serializeImagePulls is set to false/,
    );
    assertInvalid(
      () => compile({ maxParallelImagePulls: 4 }, { serializeImagePulls: true }),
      /cannot be larger than 1 unless --serialize-image-pulls is set to false/,
    );
  });

  it('keeps an explicit registryPullQPS 0 (no limit) and defaults a zero registryBurst, as upstream', () => {
    const { config } = compile({ registryPullQPS: 0, registryBurst: 0 });
    assert.equal(config.registryPullQPS, 0);
    assert.equal(config.registryBurst, 10);
    const file = compile({ registryPullQPS: 2, registryBurst: 4 }).config;
    assert.deepEqual([file.registryPullQPS, file.registryBurst], [2, 4]);
    const flags = compile({ registryPullQPS: 2 }, { registryPullQPS: 7, registryBurst: 9 }).config;
    assert.deepEqual([flags.registryPullQPS, flags.registryBurst], [7, 9]);
  });

  it('reads eviction thresholds from the file, flags over file, an explicit empty evictionHard kept', () => {
    const file = compile({
      evictionHard: { 'memory.available': '1Gi' },
      evictionSoft: { 'nodefs.available': '20%' },
      evictionSoftGracePeriod: { 'nodefs.available': '1m30s' },
      evictionMinimumReclaim: { 'nodefs.available': '1Gi' },
      evictionPressureTransitionPeriod: '30s',
      evictionMaxPodGracePeriod: 20,
      enforceNodeAllocatable: [],
    });
    assert.deepEqual(file.warnings, []);
    assert.deepEqual(file.config.evictionThresholds, [
      { signal: 'memory.available', value: { quantity: 2 ** 30 }, gracePeriodMs: 0 },
      {
        signal: 'nodefs.available',
        value: { percentage: 0.2 },
        gracePeriodMs: 90_000,
        minReclaim: { quantity: 2 ** 30 },
      },
    ]);
    assert.equal(file.config.evictionPressureTransitionPeriodMs, 30_000);
    assert.equal(file.config.evictionMaxPodGracePeriodSeconds, 20);
    const flags = compile(
      { evictionHard: { 'memory.available': '1Gi' } },
      { evictionHard: { 'pid.available': '100' }, enforceNodeAllocatable: [] },
    ).config;
    assert.deepEqual(flags.evictionThresholds, [
      { signal: 'pid.available', value: { quantity: 100 }, gracePeriodMs: 0 },
    ]);
    assert.deepEqual(compile({ evictionHard: {} }).config.evictionThresholds, []);
  });

  it('rejects bad eviction statements, naming the field or flag', () => {
    assertInvalid(
      () =>
        compile({
          evictionHard: { 'memory.available': '-1Mi', 'bogus.signal': '1' },
          evictionSoft: { 'memory.available': '2Gi' },
        }),
      /evictionHard\[memory.available\]: must be positive/,
      /evictionHard: unsupported eviction signal bogus.signal/,
      /evictionSoft\[memory.available\]: grace period must be specified/,
    );
    assertInvalid(
      () => compile(undefined, { evictionSoftGracePeriod: { 'memory.available': 'soon' } }),
      /--eviction-soft-grace-period\[memory.available\]: invalid duration/,
    );
    // A quantity error carries a prefix before the field; a flag's value is still named by the flag.
    assertInvalid(
      () => compile(undefined, { evictionHard: { 'memory.available': '' } }),
      /parse quantity: --eviction-hard\[memory.available\]: invalid quantity ""/,
    );
  });

  it('reads the image GC policy from the file, flags over file, an explicit 0 threshold kept', () => {
    const file = compile({
      imageGCHighThresholdPercent: 90,
      imageGCLowThresholdPercent: 0,
      imageMinimumGCAge: '5m',
    }).config;
    assert.deepEqual(
      [file.imageGCHighThresholdPercent, file.imageGCLowThresholdPercent, file.imageMinimumGCAgeMs],
      [90, 0, 300_000],
    );
    const flags = compile(
      { imageGCHighThresholdPercent: 90 },
      { imageGCHighThresholdPercent: 100, imageGCLowThresholdPercent: 50, imageMinimumGCAge: '30s' },
    ).config;
    assert.deepEqual(
      [flags.imageGCHighThresholdPercent, flags.imageGCLowThresholdPercent, flags.imageMinimumGCAgeMs],
      [100, 50, 30_000],
    );
    // A plain Duration upstream: zero means the default.
    assert.equal(compile({ imageMinimumGCAge: '0s' }).config.imageMinimumGCAgeMs, 120_000);
  });

  it('rejects image GC thresholds outside 0-100 or low not below high, naming the field or flag', () => {
    assertInvalid(
      () => compile({ imageGCHighThresholdPercent: 101, imageGCLowThresholdPercent: -1 }),
      /imageGCHighThresholdPercent: 101 must be between 0 and 100, inclusive/,
      /imageGCLowThresholdPercent: -1 must be between 0 and 100, inclusive/,
    );
    assertInvalid(
      () => compile(undefined, { imageGCHighThresholdPercent: 70 }),
      /imageGCLowThresholdPercent: 80 must be less than --image-gc-high-threshold 70/,
    );
    assertInvalid(
      () => compile(undefined, { imageGCHighThresholdPercent: 60, imageGCLowThresholdPercent: 60 }),
      /--image-gc-low-threshold: 60 must be less than --image-gc-high-threshold 60/,
    );
    assertInvalid(() => compile({ imageMinimumGCAge: '-1m' }), /imageMinimumGCAge/);
  });

  it('rejects negative registry limits, naming the field or flag', () => {
    assertInvalid(
      () => compile({ registryPullQPS: -1, registryBurst: -3 }),
      /registryPullQPS: -1 must not be a negative number/,
      /registryBurst: -3 must not be a negative number/,
    );
    assertInvalid(() => compile(undefined, { registryPullQPS: -1 }), /--registry-qps: -1/);
    assertInvalid(() => compile(undefined, { registryBurst: -1 }), /--registry-burst: -1/);
  });

  it('warns about --registry-burst=0 with a QPS limit (every pull refused upstream)', () => {
    const { config, warnings } = compile(undefined, { registryBurst: 0 });
    assert.equal(config.registryBurst, 0);
    assert.equal(warnings.length, 1);
    assert.match(warnings[0] ?? '', /--registry-burst: 0 .*uses a burst of 1/);
    assert.deepEqual(compile(undefined, { registryBurst: 0, registryPullQPS: 0 }).warnings, []);
  });

  it('reads nodeStatusMaxImages: default 50, an explicit 0 kept, -1 for no cap, below -1 rejected', () => {
    assert.equal(compile(undefined).config.nodeStatusMaxImages, 50);
    assert.equal(compile({ nodeStatusMaxImages: 0 }).config.nodeStatusMaxImages, 0);
    assert.equal(compile({ nodeStatusMaxImages: -1 }).config.nodeStatusMaxImages, -1);
    assert.equal(
      compile({ nodeStatusMaxImages: 3 }, { nodeStatusMaxImages: 7 }).config.nodeStatusMaxImages,
      7,
    );
    assertInvalid(
      () => compile({ nodeStatusMaxImages: -2 }),
      /nodeStatusMaxImages: -2 must be -1 or greater/,
    );
    assertInvalid(
      () => compile(undefined, { nodeStatusMaxImages: -5 }),
      /--node-status-max-images: -5 must be -1 or greater/,
    );
  });

  it('checks the types of the image fields', () => {
    assertInvalid(
      () =>
        decode({
          serializeImagePulls: 'yes',
          maxParallelImagePulls: 1.5,
          registryPullQPS: '5',
          registryBurst: true,
          nodeStatusMaxImages: [],
        }),
      /"serializeImagePulls": expected a boolean/,
      /"maxParallelImagePulls": expected an integer/,
      /"registryPullQPS": expected an integer/,
      /"registryBurst": expected an integer/,
      /"nodeStatusMaxImages": expected an integer/,
    );
  });

  it('loads the image fields from a file without "not implemented" warnings', () => {
    const decoded = decode({ serializeImagePulls: false, maxParallelImagePulls: 2, nodeStatusMaxImages: 10 });
    assert.deepEqual(decoded.warnings, []);
    const { config } = compileConfig(decoded, {}, opts);
    assert.equal(config.maxParallelImagePulls, 2);
    assert.equal(config.nodeStatusMaxImages, 10);
  });
});

describe('compileConfig seccompDefault and allowedUnsafeSysctls', () => {
  it('reads both from the file without "not implemented" warnings', () => {
    const decoded = decode({
      seccompDefault: true,
      allowedUnsafeSysctls: ['kernel.msg*', 'net.core.somaxconn'],
    });
    assert.deepEqual(decoded.warnings, []);
    const { config } = compileConfig(decoded, {}, opts);
    assert.equal(config.seccompDefault, true);
    assert.deepEqual(config.allowedUnsafeSysctls, ['kernel.msg*', 'net.core.somaxconn']);
  });

  it('lets --seccomp-default and --allowed-unsafe-sysctls override the file', () => {
    const { config } = compile(
      { seccompDefault: true, allowedUnsafeSysctls: ['kernel.msg*'] },
      { seccompDefault: false, allowedUnsafeSysctls: ['net.*'] },
    );
    assert.equal(config.seccompDefault, false);
    assert.deepEqual(config.allowedUnsafeSysctls, ['net.*']);
  });

  it('refuses unsafe sysctls that are malformed or not namespaced, naming the field or flag', () => {
    assertInvalid(
      () => compile({ allowedUnsafeSysctls: ['vm.swappiness', 'Bad Name'] }),
      /allowedUnsafeSysctls: the sysctl "vm\.swappiness" is not known to be namespaced/,
      /allowedUnsafeSysctls: sysctl "Bad Name" must have at most 253 characters/,
    );
    assertInvalid(
      () => compile(undefined, { allowedUnsafeSysctls: ['kernel.*'] }),
      /--allowed-unsafe-sysctls: the sysctl "kernel\.\*" is not known to be namespaced/,
    );
  });

  it('checks the field types', () => {
    assertInvalid(
      () => decode({ seccompDefault: 'yes', allowedUnsafeSysctls: 'net.*' }),
      /"seccompDefault": expected a boolean/,
      /"allowedUnsafeSysctls": expected a list of strings/,
    );
  });
});

describe('compileConfig configMapAndSecretChangeDetectionStrategy', () => {
  it('reads the strategy from the file without a "not implemented" warning', () => {
    for (const strategy of ['Watch', 'Cache', 'Get']) {
      const decoded = decode({ configMapAndSecretChangeDetectionStrategy: strategy });
      assert.deepEqual(decoded.warnings, []);
      assert.equal(
        compileConfig(decoded, {}, opts).config.configMapAndSecretChangeDetectionStrategy,
        strategy,
      );
    }
  });

  it('defaults an empty value to Watch, as upstream v1beta1 defaulting does', () => {
    assert.equal(
      compile({ configMapAndSecretChangeDetectionStrategy: '' }).config
        .configMapAndSecretChangeDetectionStrategy,
      'Watch',
    );
  });

  it('refuses any other value, naming the field and the allowed ones', () => {
    assertInvalid(
      () => compile({ configMapAndSecretChangeDetectionStrategy: 'watch' }),
      /configMapAndSecretChangeDetectionStrategy: "watch" is not a change detection strategy \(want "Watch", "Cache", "Get"\)/,
    );
    assertInvalid(
      () => decode({ configMapAndSecretChangeDetectionStrategy: 3 }),
      /"configMapAndSecretChangeDetectionStrategy": expected a string/,
    );
  });

  it('is a file field only, as upstream (no flag)', () => {
    assert.equal('flag' in KUBELET_FIELDS.configMapAndSecretChangeDetectionStrategy, false);
  });
});

describe('compileConfig pod cgroups', () => {
  it('uses the file values, flags overriding them', () => {
    const file = {
      cgroupsPerQOS: true,
      cgroupRoot: '/tskubelet/',
      cgroupDriver: 'cgroupfs',
      podPidsLimit: 1024,
      cpuCFSQuota: false,
      cpuCFSQuotaPeriod: '50ms',
      enforceNodeAllocatable: ['none'],
    };
    const fromFile = compile(file).config;
    assert.equal(fromFile.cgroupRoot, '/tskubelet');
    assert.equal(fromFile.podPidsLimit, 1024);
    assert.equal(fromFile.cpuCFSQuota, false);
    assert.equal(fromFile.cpuCFSQuotaPeriodMs, 50);
    assert.deepEqual(fromFile.enforceNodeAllocatable, []);
    const overridden = compile(file, {
      cgroupRoot: '/',
      podPidsLimit: -1,
      cpuCFSQuota: true,
      cpuCFSQuotaPeriod: '100ms',
      enforceNodeAllocatable: ['pods'],
    }).config;
    assert.equal(overridden.cgroupRoot, '/');
    assert.equal(overridden.podPidsLimit, -1);
    assert.equal(overridden.cpuCFSQuota, true);
    assert.equal(overridden.cpuCFSQuotaPeriodMs, 100);
    assert.deepEqual(overridden.enforceNodeAllocatable, ['pods']);
  });

  it('keeps explicit false, 0 and empty list from the file (pointer fields upstream)', () => {
    const { config } = compile({ cgroupsPerQOS: false, enforceNodeAllocatable: [], podPidsLimit: 0 });
    assert.equal(config.cgroupsPerQOS, false);
    assert.deepEqual(config.enforceNodeAllocatable, []);
    assert.equal(config.podPidsLimit, 0);
    assert.equal(compile({ cgroupDriver: '', cgroupRoot: '' }).config.cgroupRoot, '/');
  });

  it('refuses the systemd driver with a clear message, and unknown drivers', () => {
    assertInvalid(
      () => compile({ cgroupDriver: 'systemd' }),
      /cgroupDriver: "systemd" is not supported by tskubelet, only "cgroupfs"/,
    );
    assertInvalid(
      () => compile(undefined, { cgroupDriver: 'systemd' }),
      /--cgroup-driver: "systemd" is not supported/,
    );
    assertInvalid(() => compile({ cgroupDriver: 'lxc' }), /cgroupDriver: "lxc" is not a cgroup driver/);
  });

  it('validates enforceNodeAllocatable as upstream, refusing the reservations tskubelet lacks', () => {
    assertInvalid(
      () => compile({ enforceNodeAllocatable: ['pods', 'none'] }),
      /may not contain additional enforcements when "none"/,
    );
    assertInvalid(
      () => compile({ enforceNodeAllocatable: ['system-reserved'] }),
      /"system-reserved" is not supported by tskubelet/,
    );
    assertInvalid(
      () => compile(undefined, { enforceNodeAllocatable: ['kube-reserved'] }),
      /--enforce-node-allocatable: "kube-reserved" is not supported/,
    );
    assertInvalid(() => compile({ enforceNodeAllocatable: ['nodes'] }), /option "nodes" is not valid/);
    assert.deepEqual(compile({ enforceNodeAllocatable: ['pods', 'pods'] }).config.enforceNodeAllocatable, [
      'pods',
    ]);
  });

  it('requires cgroupsPerQOS for node allocatable enforcement, the default "pods" included', () => {
    assertInvalid(
      () => compile(undefined, { cgroupsPerQOS: false }),
      /is not supported unless cgroupsPerQOS/,
    );
    const off = compile(undefined, { cgroupsPerQOS: false, enforceNodeAllocatable: [] }).config;
    assert.equal(off.cgroupsPerQOS, false);
  });

  it('requires an absolute cgroup root and a CFS period between 1ms and 1s', () => {
    assertInvalid(
      () => compile({ cgroupRoot: 'pods' }),
      /cgroupRoot: "pods" must be an absolute cgroup name/,
    );
    assertInvalid(
      () => compile({ cpuCFSQuotaPeriod: '2s' }),
      /cpuCFSQuotaPeriod: "2s" must be between 1ms and 1s/,
    );
    assertInvalid(
      () => compile(undefined, { cpuCFSQuotaPeriod: '500us' }),
      /--cpu-cfs-quota-period: "500us" must be between/,
    );
    assertInvalid(() => compile({ cpuCFSQuotaPeriod: 'soon' }), /cpuCFSQuotaPeriod/);
  });

  it('checks the types of the cgroup fields in the file', () => {
    assertInvalid(
      () => decode({ podPidsLimit: 1.5, enforceNodeAllocatable: 'pods', cgroupsPerQOS: 'yes' }),
      /field "podPidsLimit": expected an integer/,
      /field "enforceNodeAllocatable": expected a list of strings/,
      /field "cgroupsPerQOS": expected a boolean/,
    );
  });
});

describe('compileConfig clusterDNS and clusterDomain', () => {
  it('reads both from the file without "not implemented" warnings', () => {
    const { config, warnings } = compile({
      clusterDNS: ['10.96.0.10', 'fd00::a'],
      clusterDomain: 'cluster.local',
    });
    assert.deepEqual(config.clusterDNS, ['10.96.0.10', 'fd00::a']);
    assert.equal(config.clusterDomain, 'cluster.local');
    assert.deepEqual(warnings, []);
  });

  it('lets --cluster-dns and --cluster-domain override the file', () => {
    const { config } = compile(
      { clusterDNS: ['10.96.0.10'], clusterDomain: 'cluster.local' },
      { clusterDNS: ['10.0.0.10'], clusterDomain: 'example.internal' },
    );
    assert.deepEqual(config.clusterDNS, ['10.0.0.10']);
    assert.equal(config.clusterDomain, 'example.internal');
  });

  it('reads resolvConf from the file and --resolv-conf, a file "" meaning the default and a flag "" meaning none', () => {
    assert.equal(compile(undefined).config.resolvConf, '/etc/resolv.conf');
    assert.equal(
      compile({ resolvConf: '/run/systemd/resolve/resolv.conf' }).config.resolvConf,
      '/run/systemd/resolve/resolv.conf',
    );
    // Upstream 1.20 defaulting: an empty file value is the default; the flag is applied after it.
    assert.equal(compile({ resolvConf: '' }).config.resolvConf, '/etc/resolv.conf');
    assert.equal(compile({ resolvConf: '/etc/a.conf' }, { resolvConf: '' }).config.resolvConf, '');
  });

  it('treats an empty clusterDomain and clusterDNS in the file as unset', () => {
    const { config } = compile({ clusterDNS: [], clusterDomain: '' });
    assert.deepEqual(config.clusterDNS, []);
    assert.equal(config.clusterDomain, '');
  });

  it('refuses a clusterDNS entry that is not an IP and a domain that is not a DNS name, naming field or flag', () => {
    assertInvalid(
      () => compile({ clusterDNS: ['10.96.0.10', 'kube-dns'], clusterDomain: 'Cluster Local' }),
      /clusterDNS: "kube-dns" is not a valid IP address/,
      /clusterDomain: "Cluster Local" is not a valid DNS domain/,
    );
    assertInvalid(
      () => compile(undefined, { clusterDNS: ['10.96.0.300'] }),
      /--cluster-dns: "10\.96\.0\.300"/,
    );
    assertInvalid(() => compile(undefined, { clusterDomain: 'cluster.local.' }), /--cluster-domain/);
  });

  it('checks the field types', () => {
    assertInvalid(
      () => decode({ clusterDNS: '10.96.0.10', clusterDomain: 5 }),
      /field "clusterDNS": expected a list of strings/,
      /field "clusterDomain": expected a string/,
    );
  });
});

describe('compileConfig graceful node shutdown periods', () => {
  it('reads both periods from the file without "not implemented" warnings', () => {
    const decoded = decode({ shutdownGracePeriod: '30s', shutdownGracePeriodCriticalPods: '10s' });
    assert.deepEqual(decoded.warnings, []);
    const { config } = compileConfig(decoded, {}, opts);
    assert.equal(config.shutdownGracePeriodMs, 30_000);
    assert.equal(config.shutdownGracePeriodCriticalPodsMs, 10_000);
  });

  it('keeps the feature off when the file says 0s or leaves the fields out', () => {
    const { config } = compile({ shutdownGracePeriod: '0s', shutdownGracePeriodCriticalPods: '0s' });
    assert.deepEqual([config.shutdownGracePeriodMs, config.shutdownGracePeriodCriticalPodsMs], [0, 0]);
    const none = compile({}).config;
    assert.deepEqual([none.shutdownGracePeriodMs, none.shutdownGracePeriodCriticalPodsMs], [0, 0]);
  });

  it('allows the whole period for critical pods, as upstream', () => {
    const { config } = compile({ shutdownGracePeriod: '5s', shutdownGracePeriodCriticalPods: '5s' });
    assert.deepEqual(
      [config.shutdownGracePeriodMs, config.shutdownGracePeriodCriticalPodsMs],
      [5_000, 5_000],
    );
  });

  it('refuses a critical-pod period longer than the whole, naming both fields', () => {
    assertInvalid(
      () => compile({ shutdownGracePeriod: '10s', shutdownGracePeriodCriticalPods: '20s' }),
      /shutdownGracePeriodCriticalPods: 20s must not be longer than shutdownGracePeriod \(10s\)/,
    );
    assertInvalid(
      () => compile({ shutdownGracePeriodCriticalPods: '10s' }),
      /shutdownGracePeriodCriticalPods: 10s must not be longer than shutdownGracePeriod \(0s\)/,
    );
  });

  it('refuses negative periods and periods between 0 and 1s', () => {
    assertInvalid(
      () => compile({ shutdownGracePeriod: '-1s', shutdownGracePeriodCriticalPods: '500ms' }),
      /shutdownGracePeriod: "-1s" must not be negative/,
      /shutdownGracePeriodCriticalPods: "500ms" must be either 0 or at least 1s/,
    );
    assertInvalid(() => compile({ shutdownGracePeriod: 'soon' }), /shutdownGracePeriod/);
  });

  it('reports both periods in /configz as Go durations', () => {
    const { config } = compile({ shutdownGracePeriod: '1m', shutdownGracePeriodCriticalPods: '15s' });
    const z = toKubeletConfiguration(config);
    assert.equal(z.shutdownGracePeriod, '1m0s');
    assert.equal(z.shutdownGracePeriodCriticalPods, '15s');
  });
});
