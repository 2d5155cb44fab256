import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Container, KubeletPod, ResourceRequirements } from '../../api/types.ts';
import { hasCode } from '../../util/errors.ts';
import {
  containerEnv,
  containerResources,
  generateContainerConfig,
  oomScoreAdj,
  procMountPaths,
} from './container-config.ts';
import { hashContainer } from './hash.ts';

const GI = 1024 ** 3;
const CAPACITY = 4 * GI;

function makePod(containers: Container[], mutate: (p: KubeletPod) => void = () => undefined): KubeletPod {
  const p: KubeletPod = {
    metadata: { name: 'web', namespace: 'prod', uid: 'uid-123' },
    spec: { containers },
  };
  mutate(p);
  return p;
}

function withResources(resources?: ResourceRequirements): { pod: KubeletPod; c: Container } {
  const c: Container = { name: 'app', image: 'busybox:1.29' };
  if (resources) c.resources = resources;
  return { pod: makePod([c]), c };
}

function config(pod: KubeletPod, c: Container, restartCount = 0) {
  return generateContainerConfig(pod, c, { restartCount, imageRef: 'sha256:feed', memoryCapacity: CAPACITY });
}

describe('generateContainerConfig identity', () => {
  it('names the container, carries the restart count as attempt and uses the resolved image', () => {
    const { pod, c } = withResources();
    const cfg = config(pod, c, 3);
    assert.deepEqual(cfg.metadata, { name: 'app', attempt: 3 });
    assert.deepEqual(cfg.image, { image: 'sha256:feed' });
  });

  it('writes the log to <container>/<restartCount>.log', () => {
    const { pod, c } = withResources();
    assert.equal(config(pod, c, 0).logPath, 'app/0.log');
    assert.equal(config(pod, c, 7).logPath, 'app/7.log');
  });

  it('labels the container with the pod identity and the container name', () => {
    const { pod, c } = withResources();
    assert.deepEqual(config(pod, c).labels, {
      'io.kubernetes.pod.name': 'web',
      'io.kubernetes.pod.namespace': 'prod',
      'io.kubernetes.pod.uid': 'uid-123',
      'io.kubernetes.container.name': 'app',
    });
  });

  it('annotates hash, restart count and termination message settings', () => {
    const { pod, c } = withResources();
    const a = config(pod, c, 2).annotations ?? {};
    assert.equal(a['io.kubernetes.container.hash'], hashContainer(c));
    assert.equal(a['io.kubernetes.container.restartCount'], '2');
    assert.equal(a['io.kubernetes.container.terminationMessagePath'], '/dev/termination-log');
    assert.equal(a['io.kubernetes.container.terminationMessagePolicy'], 'File');
    assert.equal(a['io.kubernetes.pod.terminationGracePeriod'], undefined);
    assert.equal(a['io.kubernetes.container.preStopHandler'], undefined);
    assert.equal(a['io.kubernetes.container.ports'], undefined);
  });

  it('annotates grace periods, the preStop handler and ports when the spec has them', () => {
    const c: Container = {
      name: 'app',
      image: 'busybox:1.29',
      terminationMessagePath: '/tmp/msg',
      terminationMessagePolicy: 'FallbackToLogsOnError',
      lifecycle: { preStop: { exec: { command: ['sleep', '1'] } } },
      ports: [{ containerPort: 80 }],
    };
    const pod = makePod([c], (p) => {
      p.spec.terminationGracePeriodSeconds = 45;
      p.metadata.deletionGracePeriodSeconds = 10;
    });
    const a = config(pod, c).annotations ?? {};
    assert.equal(a['io.kubernetes.container.terminationMessagePath'], '/tmp/msg');
    assert.equal(a['io.kubernetes.container.terminationMessagePolicy'], 'FallbackToLogsOnError');
    assert.equal(a['io.kubernetes.pod.terminationGracePeriod'], '45');
    assert.equal(a['io.kubernetes.pod.deletionGracePeriod'], '10');
    assert.deepEqual(JSON.parse(a['io.kubernetes.container.preStopHandler'] ?? 'null'), {
      exec: { command: ['sleep', '1'] },
    });
    assert.deepEqual(JSON.parse(a['io.kubernetes.container.ports'] ?? 'null'), [{ containerPort: 80 }]);
  });

  it('changes the hash when the spec changes and keeps it for an equal spec', () => {
    const a = hashContainer({ name: 'app', image: 'busybox:1.29' });
    assert.equal(hashContainer({ image: 'busybox:1.29', name: 'app' }), a);
    assert.notEqual(hashContainer({ name: 'app', image: 'busybox:1.30' }), a);
  });

  it('passes workingDir, stdin and tty through', () => {
    const c: Container = {
      name: 'app',
      image: 'x:1',
      workingDir: '/srv',
      stdin: true,
      stdinOnce: true,
      tty: true,
    };
    const cfg = config(makePod([c]), c);
    assert.equal(cfg.workingDir, '/srv');
    assert.equal(cfg.stdin, true);
    assert.equal(cfg.stdinOnce, true);
    assert.equal(cfg.tty, true);
  });

  it('passes the mounts prepared by the volume manager through, and none by default', () => {
    const c: Container = { name: 'app', image: 'x:1', volumeMounts: [{ name: 'v', mountPath: '/v' }] };
    const pod = makePod([c]);
    assert.deepEqual(config(pod, c).mounts, []);
    const mounts = [
      { containerPath: '/v', hostPath: '/var/lib/kubelet/pods/uid-123/volumes/v', readonly: true },
    ];
    const cfg = generateContainerConfig(pod, c, {
      restartCount: 0,
      imageRef: 'sha256:feed',
      mounts,
      memoryCapacity: CAPACITY,
    });
    assert.deepEqual(cfg.mounts, mounts);
  });

  it('passes the block-volume devices prepared by the volume manager through, and none by default', () => {
    const c: Container = {
      name: 'app',
      image: 'x:1',
      volumeDevices: [{ name: 'b', devicePath: '/dev/xvda' }],
    };
    const pod = makePod([c]);
    assert.equal(config(pod, c).devices, undefined);
    const devices = [
      {
        containerPath: '/dev/xvda',
        hostPath: '/var/lib/kubelet/pods/uid-123/volumeDevices/p/pv',
        permissions: 'mrw',
      },
    ];
    const cfg = generateContainerConfig(pod, c, {
      restartCount: 0,
      imageRef: 'sha256:feed',
      devices,
      memoryCapacity: CAPACITY,
    });
    assert.deepEqual(cfg.devices, devices);
  });
});

describe('containerResources (upstream MilliCPUToShares / MilliCPUToQuota)', () => {
  const cases: [
    string,
    ResourceRequirements | undefined,
    { shares: number; quota?: number; memory?: number },
  ][] = [
    ['no resources: minimum shares, no quota', undefined, { shares: 2 }],
    ['cpu request 100m', { requests: { cpu: '100m' } }, { shares: 102 }],
    ['cpu request 1', { requests: { cpu: '1' } }, { shares: 1024 }],
    ['cpu request 1m is raised to MinShares', { requests: { cpu: '1m' } }, { shares: 2 }],
    ['cpu request 2.5', { requests: { cpu: '2.5' } }, { shares: 2560 }],
    ['cpu limit only: shares from the limit', { limits: { cpu: '500m' } }, { shares: 512, quota: 50_000 }],
    [
      'cpu request and limit',
      { requests: { cpu: '250m' }, limits: { cpu: '2' } },
      { shares: 256, quota: 200_000 },
    ],
    [
      'cpu limit 1m is raised to the 1ms minimum quota',
      { limits: { cpu: '1m' } },
      { shares: 2, quota: 1000 },
    ],
    ['cpu limit 10m is exactly the minimum quota', { limits: { cpu: '10m' } }, { shares: 10, quota: 1000 }],
    ['memory limit', { limits: { memory: '128Mi' } }, { shares: 2, memory: 128 * 1024 * 1024 }],
  ];
  for (const [desc, resources, want] of cases) {
    it(desc, () => {
      const { pod, c } = withResources(resources);
      const r = containerResources(pod, c, CAPACITY);
      assert.equal(r.cpuShares, want.shares);
      assert.equal(r.cpuQuota, want.quota);
      assert.equal(r.cpuPeriod, want.quota === undefined ? undefined : 100_000);
      assert.equal(r.memoryLimitInBytes, want.memory);
    });
  }

  it('ends up in the container config', () => {
    const { pod, c } = withResources({
      requests: { cpu: '100m', memory: '64Mi' },
      limits: { cpu: '100m', memory: '64Mi' },
    });
    assert.deepEqual(config(pod, c).linux?.resources, {
      cpuShares: 102,
      cpuPeriod: 100_000,
      cpuQuota: 10_000,
      memoryLimitInBytes: 64 * 1024 * 1024,
      oomScoreAdj: -997,
    });
  });
});

describe('oomScoreAdj (upstream GetContainerOOMScoreAdjust)', () => {
  const cases: [string, ResourceRequirements | undefined, number][] = [
    ['Guaranteed', { requests: { cpu: '1', memory: '1Gi' }, limits: { cpu: '1', memory: '1Gi' } }, -997],
    ['BestEffort', undefined, 1000],
    ['Burstable requesting a quarter of memory', { requests: { memory: '1Gi' } }, 750],
    ['Burstable without a memory request', { requests: { cpu: '100m' } }, 999],
    ['Burstable requesting a tiny amount of memory', { requests: { memory: '1Mi' } }, 999],
    // 1000 + guaranteedOOMScoreAdj (-997) = 3: a burstable container always scores above guaranteed ones.
    ['Burstable requesting all the memory', { requests: { memory: '4Gi' } }, 3],
    ['Burstable requesting more than the machine has', { requests: { memory: '8Gi' } }, 3],
    ['Burstable requesting 99.8% of memory', { requests: { memory: `${Math.floor(CAPACITY * 0.998)}` } }, 3],
  ];
  for (const [desc, resources, want] of cases) {
    it(`is ${want} for ${desc}`, () => {
      const { pod, c } = withResources(resources);
      assert.equal(oomScoreAdj(pod, c, CAPACITY), want);
    });
  }

  it('scores by the pod class, not by the container alone', () => {
    const guaranteed: Container = {
      name: 'a',
      resources: { requests: { cpu: '1', memory: '1Gi' }, limits: { cpu: '1', memory: '1Gi' } },
    };
    const bare: Container = { name: 'b' };
    const pod = makePod([guaranteed, bare]);
    assert.equal(oomScoreAdj(pod, guaranteed, CAPACITY), 750);
    assert.equal(oomScoreAdj(pod, bare, CAPACITY), 999);
  });
});

describe('containerEnv and $(VAR) expansion', () => {
  it('expands references to variables defined earlier, and leaves later or unknown ones as is', () => {
    const c: Container = {
      name: 'app',
      env: [
        { name: 'A', value: 'a' },
        { name: 'B', value: '$(A)-b' },
        { name: 'C', value: '$(D)-$(NOPE)-$$(A)' },
        { name: 'D', value: 'd' },
        { name: 'E' },
      ],
    };
    assert.deepEqual(containerEnv(makePod([c]), c), [
      { key: 'A', value: 'a' },
      { key: 'B', value: 'a-b' },
      { key: 'C', value: '$(D)-$(NOPE)-$(A)' },
      { key: 'D', value: 'd' },
      { key: 'E', value: '' },
    ]);
  });

  it('expands command and args with the container environment', () => {
    const c: Container = {
      name: 'app',
      image: 'x:1',
      command: ['/bin/sh', '-c', 'echo $(GREETING)'],
      args: ['$(GREETING)', '$$(GREETING)', '$(UNKNOWN)', '$HOME'],
      env: [{ name: 'GREETING', value: 'hi' }],
    };
    const cfg = config(makePod([c]), c);
    assert.deepEqual(cfg.command, ['/bin/sh', '-c', 'echo hi']);
    assert.deepEqual(cfg.args, ['hi', '$(GREETING)', '$(UNKNOWN)', '$HOME']);
    assert.deepEqual(cfg.envs, [{ key: 'GREETING', value: 'hi' }]);
  });

  it('gives empty command and args when the spec has none (the image defaults apply)', () => {
    const c: Container = { name: 'app', image: 'x:1' };
    const cfg = config(makePod([c]), c);
    assert.deepEqual(cfg.command, []);
    assert.deepEqual(cfg.args, []);
    assert.deepEqual(cfg.envs, []);
  });

  it('fails with Unimplemented on valueFrom instead of dropping the variable', () => {
    const c: Container = {
      name: 'app',
      env: [{ name: 'X', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } }],
    };
    assert.throws(
      () => containerEnv(makePod([c]), c),
      (err: unknown) => hasCode(err, 'Unimplemented') && err instanceof Error && err.message.includes('X'),
    );
  });

  it('fails with Unimplemented on envFrom', () => {
    const c: Container = { name: 'app', envFrom: [{ configMapRef: { name: 'cm' } }] };
    assert.throws(
      () => containerEnv(makePod([c]), c),
      (err: unknown) => hasCode(err, 'Unimplemented'),
    );
  });
});

describe('container security context', () => {
  it('uses the pod namespaces and masks /proc paths for an unprivileged container', () => {
    const c: Container = { name: 'app', image: 'x:1' };
    const pod = makePod([c], (p) => (p.spec.shareProcessNamespace = true));
    const sc = config(pod, c).linux?.securityContext;
    assert.deepEqual(sc?.namespaceOptions, { network: 'POD', pid: 'POD', ipc: 'POD' });
    assert.equal(sc?.privileged, false);
    assert.ok(sc?.maskedPaths?.includes('/proc/kcore'));
    assert.ok(sc?.readonlyPaths?.includes('/proc/sys'));
  });

  it('sends the default masked and read-only paths for a privileged container too (the runtime drops them)', () => {
    const c: Container = { name: 'app', image: 'x:1', securityContext: { privileged: true } };
    const sc = config(makePod([c]), c).linux?.securityContext;
    assert.equal(sc?.privileged, true);
    assert.deepEqual(sc?.maskedPaths, procMountPaths(undefined).masked);
    assert.deepEqual(sc?.readonlyPaths, procMountPaths(undefined).readonly);
  });

  it('masks the upstream default paths, /proc/asound and powercap included, for the Default procMount', () => {
    const c: Container = { name: 'app', image: 'x:1', securityContext: { procMount: 'Default' } };
    const sc = config(makePod([c]), c).linux?.securityContext;
    assert.ok(sc?.maskedPaths?.includes('/proc/asound'));
    assert.ok(sc?.maskedPaths?.includes('/sys/devices/virtual/powercap'));
    assert.equal(sc?.readonlyPaths?.includes('/proc/asound'), false);
    assert.deepEqual(sc?.readonlyPaths, [
      '/proc/bus',
      '/proc/fs',
      '/proc/irq',
      '/proc/sys',
      '/proc/sysrq-trigger',
    ]);
  });

  it('sends empty masked and read-only path lists for the Unmasked procMount', () => {
    const c: Container = { name: 'app', image: 'x:1', securityContext: { procMount: 'Unmasked' } };
    const sc = config(makePod([c]), c).linux?.securityContext;
    assert.deepEqual(sc?.maskedPaths, []);
    assert.deepEqual(sc?.readonlyPaths, []);
  });

  it('lets the container override the pod run-as user and group', () => {
    const c: Container = { name: 'app', image: 'x:1', securityContext: { runAsUser: 5 } };
    const pod = makePod(
      [c],
      (p) => (p.spec.securityContext = { runAsUser: 1000, runAsGroup: 2000, fsGroup: 3000 }),
    );
    const sc = config(pod, c).linux?.securityContext;
    assert.deepEqual(sc?.runAsUser, { value: 5 });
    assert.deepEqual(sc?.runAsGroup, { value: 2000 });
    assert.deepEqual(sc?.supplementalGroups, [3000]);
  });

  it('adds the PVs’ extra groups after the pod’s supplementalGroups and fsGroup (upstream determineEffectiveSecurityContext)', () => {
    const c: Container = { name: 'app', image: 'x:1' };
    const pod = makePod([c], (p) => (p.spec.securityContext = { supplementalGroups: [10, 20], fsGroup: 30 }));
    const sc = generateContainerConfig(pod, c, {
      restartCount: 0,
      imageRef: 'sha256:feed',
      memoryCapacity: CAPACITY,
      extraSupplementalGroups: [1234, 5678],
    }).linux?.securityContext;
    assert.deepEqual(sc?.supplementalGroups, [10, 20, 30, 1234, 5678]);
  });

  it('sets no_new_privs only when privilege escalation is explicitly disallowed', () => {
    const allowed: Container = { name: 'a', image: 'x:1' };
    const denied: Container = {
      name: 'b',
      image: 'x:1',
      securityContext: { allowPrivilegeEscalation: false },
    };
    const pod = makePod([allowed, denied]);
    assert.equal(config(pod, allowed).linux?.securityContext?.noNewPrivs, false);
    assert.equal(config(pod, denied).linux?.securityContext?.noNewPrivs, true);
  });
});

describe('container seccomp and AppArmor profiles', () => {
  const seccomp = { profileRoot: '/var/lib/k/seccomp', defaultToRuntimeDefault: false };

  it('sends Unconfined seccomp when nothing is set and seccompDefault is off', () => {
    const c: Container = { name: 'app', image: 'x:1' };
    const cfg = generateContainerConfig(makePod([c]), c, { restartCount: 0, imageRef: 'i', seccomp });
    assert.deepEqual(cfg.linux?.securityContext?.seccomp, { profileType: 'Unconfined' });
    assert.equal(cfg.linux?.securityContext?.apparmor, undefined);
  });

  it('sends RuntimeDefault seccomp when nothing is set and seccompDefault is on', () => {
    const c: Container = { name: 'app', image: 'x:1' };
    const cfg = generateContainerConfig(makePod([c]), c, {
      restartCount: 0,
      imageRef: 'i',
      seccomp: { ...seccomp, defaultToRuntimeDefault: true },
    });
    assert.deepEqual(cfg.linux?.securityContext?.seccomp, { profileType: 'RuntimeDefault' });
  });

  it('resolves a Localhost profile below the seccomp profile root', () => {
    const c: Container = {
      name: 'app',
      image: 'x:1',
      securityContext: { seccompProfile: { type: 'Localhost', localhostProfile: 'deny-mkdir.json' } },
    };
    const cfg = generateContainerConfig(makePod([c]), c, { restartCount: 0, imageRef: 'i', seccomp });
    assert.deepEqual(cfg.linux?.securityContext?.seccomp, {
      profileType: 'Localhost',
      localhostRef: '/var/lib/k/seccomp/deny-mkdir.json',
    });
  });

  it('sends the container AppArmor profile from the deprecated annotation', () => {
    const c: Container = { name: 'app', image: 'x:1' };
    const pod = makePod([c], (p) => {
      p.metadata.annotations = {
        'container.apparmor.security.beta.kubernetes.io/app': 'localhost/k8s-nginx',
      };
    });
    const cfg = generateContainerConfig(pod, c, { restartCount: 0, imageRef: 'i', seccomp });
    assert.deepEqual(cfg.linux?.securityContext?.apparmor, {
      profileType: 'Localhost',
      localhostRef: 'k8s-nginx',
    });
  });

  it('fails with InvalidArgument when a Localhost seccomp profile has no name', () => {
    const c: Container = {
      name: 'app',
      image: 'x:1',
      securityContext: { seccompProfile: { type: 'Localhost' } },
    };
    assert.throws(
      () => generateContainerConfig(makePod([c]), c, { restartCount: 0, imageRef: 'i', seccomp }),
      (err: unknown) => hasCode(err, 'InvalidArgument') && /localhostProfile must be set/.test(String(err)),
    );
  });
});

describe('the OOM group kill on cgroup v2', () => {
  it('sets memory.oom.group=1 when asked (cgroup v2 without singleProcessOOMKill), nothing otherwise', () => {
    const { pod, c } = withResources({ limits: { memory: '64Mi' } });
    const opts = { restartCount: 0, imageRef: 'sha256:feed', memoryCapacity: CAPACITY };
    const grouped = generateContainerConfig(pod, c, { ...opts, groupOomKill: true });
    assert.deepEqual(grouped.linux?.resources?.unified, { 'memory.oom.group': '1' });
    assert.equal(grouped.linux?.resources?.memoryLimitInBytes, 64 * 1024 ** 2);
    assert.equal(config(pod, c).linux?.resources?.unified, undefined);
  });
});

describe('container hugetlb limits (upstream GetHugepageLimitsFromResources)', () => {
  it('sends every page size the node supports: the container limit, 0 for the others', () => {
    const huge = { memory: '64Mi', 'hugepages-2Mi': '8Mi' };
    const { pod, c } = withResources({ requests: huge, limits: huge });
    const opts = { restartCount: 0, imageRef: 'sha256:feed', memoryCapacity: CAPACITY };
    const cfg = generateContainerConfig(pod, c, { ...opts, hugePageSizes: ['1GB', '2MB'] });
    assert.deepEqual(cfg.linux?.resources?.hugepageLimits, [
      { pageSize: '1GB', limit: 0 },
      { pageSize: '2MB', limit: 8 * 1024 ** 2 },
    ]);
    const plain = generateContainerConfig(
      makePod([{ name: 'a', image: 'i' }]),
      { name: 'a', image: 'i' },
      {
        ...opts,
        hugePageSizes: ['2MB'],
      },
    );
    assert.deepEqual(plain.linux?.resources?.hugepageLimits, [{ pageSize: '2MB', limit: 0 }]);
  });

  it('drops a size the node lacks, and sends nothing on a node without huge pages', () => {
    const { pod, c } = withResources({ limits: { 'hugepages-1Gi': '1Gi' } });
    assert.deepEqual(containerResources(pod, c, CAPACITY, ['2MB']).hugepageLimits, [
      { pageSize: '2MB', limit: 0 },
    ]);
    assert.equal(config(pod, c).linux?.resources?.hugepageLimits, undefined);
  });
});
