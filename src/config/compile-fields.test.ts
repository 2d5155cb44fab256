// The compile stage (compile.ts), field by field: image pulls, seccomp and sysctls, change detection,
// pod cgroups, cluster DNS, graceful shutdown. Upstream counterpart: pkg/kubelet/apis/config/v1beta1/defaults.go.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { toKubeletConfiguration } from './configz.ts';
import { compileConfig, type FlagValues } from './kubelet-config.ts';
import { KUBELET_FIELDS } from './fields.ts';
import {
  assertInvalid,
  compileFields as compile,
  COMPILE_OPTS as opts,
  decodeFields as decode,
} from './testing.ts';

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

  it('reads singleProcessOOMKill from the file, false by default (the whole container OOM-killed)', () => {
    assert.equal(compile({}).config.singleProcessOOMKill, false);
    const decoded = decode({ singleProcessOOMKill: true });
    assert.deepEqual(decoded.warnings, []);
    assert.equal(compileConfig(decoded, {}, opts).config.singleProcessOOMKill, true);
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

  it('takes the systemd driver from the file or the flag, and refuses unknown drivers', () => {
    assert.equal(compile({ cgroupDriver: 'systemd' }).config.cgroupDriver, 'systemd');
    assert.equal(compile(undefined, { cgroupDriver: 'systemd' }).config.cgroupDriver, 'systemd');
    assert.equal(compile({}).config.cgroupDriver, 'cgroupfs');
    assertInvalid(() => compile({ cgroupDriver: 'lxc' }), /cgroupDriver: "lxc" is not a cgroup driver/);
  });

  it('validates enforceNodeAllocatable as upstream', () => {
    assertInvalid(
      () => compile({ enforceNodeAllocatable: ['pods', 'none'] }),
      /may not contain additional enforcements when "none"/,
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
