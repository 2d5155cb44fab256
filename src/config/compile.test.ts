// The compile stage (compile.ts): defaults, file values and flags, cluster mode, node name, runtime endpoint.
// Upstream counterpart: cmd/kubelet/app/options (flag precedence) and pkg/kubelet/apis/config/v1beta1/defaults.go.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { assertInvalid, compileFields as compile } from './testing.ts';

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
      featureGates: {},
      nodeName: 'node-a',
      runOnce: false,
      runOnceTimeoutMs: 1_023_000,
      runtimePacing: true,
      eventedPleg: false,
      csiCallTimeoutMs: 120_000,
      seccompDefault: false,
      singleProcessOOMKill: false,
      allowedUnsafeSysctls: [],
      verbosity: 0,
      vmodule: '',
      logFlushFrequencyMs: 5_000,
      logFormat: 'text',
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
      certDirectory: '/var/lib/kubelet/pki',
      rotateCertificates: false,
      serverTLSBootstrap: false,
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
      systemReserved: {},
      kubeReserved: {},
      reservedSystemCPUs: '',
      systemReservedCgroup: '',
      kubeReservedCgroup: '',
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

describe('compileConfig certificates (TLS bootstrap and rotation)', () => {
  it('takes --bootstrap-kubeconfig, --cert-dir (default <root-dir>/pki), rotateCertificates and serverTLSBootstrap', () => {
    assert.equal(compile(undefined, { rootDir: '/srv/kubelet' }).config.certDirectory, '/srv/kubelet/pki');
    const { config, warnings } = compile(
      { rotateCertificates: true, serverTLSBootstrap: true },
      {
        kubeconfig: '/etc/kubernetes/kubelet.conf',
        bootstrapKubeconfig: '/etc/kubernetes/bootstrap-kubelet.conf',
        certDirectory: 'pki-x',
      },
    );
    assert.deepEqual(warnings, []);
    assert.equal(config.bootstrapKubeconfig, '/etc/kubernetes/bootstrap-kubelet.conf');
    assert.equal(config.certDirectory, '/work/pki-x');
    assert.equal(config.rotateCertificates, true);
    assert.equal(config.serverTLSBootstrap, true);
    const standalone = compile(undefined, { rotateCertificates: true, serverTLSBootstrap: true });
    assert.equal(standalone.config.rotateCertificates && standalone.config.serverTLSBootstrap, true);
    assert.deepEqual(standalone.warnings, [
      'serverTLSBootstrap needs an API server (--kubeconfig); the kubelet API serves its self-signed certificate',
      'rotateCertificates needs an API server (--kubeconfig); ignored',
    ]);
  });

  it('refuses --bootstrap-kubeconfig without --kubeconfig (nowhere to write the result)', () => {
    assertInvalid(
      () => compile(undefined, { bootstrapKubeconfig: '/etc/kubernetes/bootstrap-kubelet.conf' }),
      /--bootstrap-kubeconfig: needs --kubeconfig/,
    );
  });
});
