import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { hasCode } from '../util/errors.ts';
import { defaultPullPolicy, imageTagAndDigest } from './pod-defaults.ts';
import { defaultStaticPod, staticPodName } from './static-pod.ts';
import { manifest } from './testing.ts';

const fileOpts = {
  nodeName: 'Node-1',
  source: 'file' as const,
  origin: '/etc/kubernetes/manifests/web.yaml',
};

/** The message of the InvalidArgument error `fn` throws. */
function invalidMessage(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    assert.ok(hasCode(err, 'InvalidArgument'), `expected InvalidArgument, got ${String(err)}`);
    return (err as Error).message;
  }
  assert.fail('expected an InvalidArgument error');
}

describe('static pod defaulting', () => {
  it('suffixes the name with the lowercased node name and defaults the namespace', () => {
    const pod = defaultStaticPod(manifest('web'), fileOpts);
    assert.equal(pod.metadata.name, 'web-node-1');
    assert.equal(pod.metadata.namespace, 'default');
    assert.equal(pod.spec.nodeName, 'Node-1');
    assert.equal(staticPodName('x', 'ABC'), 'x-abc');
    const ns = defaultStaticPod(
      { ...manifest('web'), metadata: { name: 'web', namespace: 'kube-system' } },
      fileOpts,
    );
    assert.equal(ns.metadata.namespace, 'kube-system');
  });

  it('derives a stable 32-hex UID from content, node and path', () => {
    const a = defaultStaticPod(manifest('web'), fileOpts);
    const again = defaultStaticPod(manifest('web'), fileOpts);
    assert.match(a.metadata.uid ?? '', /^[0-9a-f]{32}$/);
    assert.equal(again.metadata.uid, a.metadata.uid);
    const otherNode = defaultStaticPod(manifest('web'), { ...fileOpts, nodeName: 'node-2' });
    const otherPath = defaultStaticPod(manifest('web'), { ...fileOpts, origin: '/other/web.yaml' });
    const otherImage = defaultStaticPod(manifest('web', 'busybox:1.30'), fileOpts);
    const viaHttp = defaultStaticPod(manifest('web'), { ...fileOpts, source: 'http' });
    const uids = new Set([a, otherNode, otherPath, otherImage, viaHttp].map((p) => p.metadata.uid));
    assert.equal(uids.size, 5);
  });

  it('gives the same UID whatever the key order or explicit defaults in the manifest', () => {
    const a = defaultStaticPod(manifest('web'), fileOpts);
    const reordered = {
      spec: {
        restartPolicy: 'Always',
        containers: [{ image: 'busybox:1.29', name: 'main', imagePullPolicy: 'IfNotPresent' }],
      },
      metadata: { name: 'web' },
      kind: 'Pod',
      apiVersion: 'v1',
    };
    assert.equal(defaultStaticPod(reordered, fileOpts).metadata.uid, a.metadata.uid);
  });

  it('keeps a UID set in the manifest', () => {
    const pod = defaultStaticPod(
      { ...manifest('web'), metadata: { name: 'web', uid: 'fixed-uid' } },
      fileOpts,
    );
    assert.equal(pod.metadata.uid, 'fixed-uid');
    assert.equal(pod.metadata.annotations?.['kubernetes.io/config.hash'], 'fixed-uid');
  });

  it('sets the hash and source annotations, keeping the manifest’s own', () => {
    const raw = { ...manifest('web'), metadata: { name: 'web', annotations: { team: 'a' } } };
    const pod = defaultStaticPod(raw, { ...fileOpts, source: 'http', origin: 'http://x/pods' });
    assert.deepEqual(pod.metadata.annotations, {
      team: 'a',
      'kubernetes.io/config.hash': pod.metadata.uid,
      'kubernetes.io/config.source': 'http',
    });
  });

  it('adds the NoExecute toleration to file pods only, once', () => {
    const file = defaultStaticPod(manifest('web'), fileOpts);
    assert.deepEqual(file.spec.tolerations, [{ operator: 'Exists', effect: 'NoExecute' }]);
    const http = defaultStaticPod(manifest('web'), { ...fileOpts, source: 'http' });
    assert.equal(http.spec.tolerations, undefined);
    const already = manifest('web');
    (already.spec as Record<string, unknown>).tolerations = [{ operator: 'Exists', effect: 'NoExecute' }];
    assert.equal(defaultStaticPod(already, fileOpts).spec.tolerations?.length, 1);
  });

  it('applies the v1 spec defaults', () => {
    const raw = manifest('web');
    raw.spec.containers = [
      {
        name: 'main',
        image: 'busybox:1.29',
        ports: [{ containerPort: 8080 }],
        resources: { limits: { cpu: 1, memory: '64Mi' }, requests: { cpu: '500m' } },
        livenessProbe: { httpGet: { port: 8080 } },
        env: [{ name: 'NODE', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } }],
      },
    ] as never;
    const pod = defaultStaticPod(raw, fileOpts);
    const s = pod.spec;
    assert.equal(s.restartPolicy, 'Always');
    assert.equal(s.terminationGracePeriodSeconds, 30);
    assert.equal(s.dnsPolicy, 'ClusterFirst');
    assert.equal(s.schedulerName, 'default-scheduler');
    assert.deepEqual(s.securityContext, {});
    assert.equal(s.enableServiceLinks, true);
    const c = s.containers[0];
    assert.ok(c);
    assert.equal(c.imagePullPolicy, 'IfNotPresent');
    assert.equal(c.terminationMessagePath, '/dev/termination-log');
    assert.equal(c.terminationMessagePolicy, 'File');
    assert.deepEqual(c.ports, [{ containerPort: 8080, protocol: 'TCP' }]);
    assert.deepEqual(c.resources, {
      limits: { cpu: '1', memory: '64Mi' },
      requests: { cpu: '500m', memory: '64Mi' },
    });
    assert.deepEqual(c.livenessProbe, {
      httpGet: { port: 8080, path: '/', scheme: 'HTTP' },
      timeoutSeconds: 1,
      periodSeconds: 10,
      successThreshold: 1,
      failureThreshold: 3,
    });
    assert.equal(
      c.env?.[0]?.valueFrom?.fieldRef && (c.env[0].valueFrom.fieldRef as { apiVersion: string }).apiVersion,
      'v1',
    );
    assert.equal(pod.status?.phase, 'Pending');
  });

  it('makes container ports host ports under hostNetwork, init containers included', () => {
    const raw = manifest('web');
    Object.assign(raw.spec, {
      hostNetwork: true,
      initContainers: [{ name: 'init', image: 'busybox:1.29', ports: [{ containerPort: 9000 }] }],
    });
    raw.spec.containers = [{ name: 'main', image: 'busybox:1.29', ports: [{ containerPort: 80 }] }] as never;
    const pod = defaultStaticPod(raw, fileOpts);
    assert.equal(pod.spec.containers[0]?.ports?.[0]?.hostPort, 80);
    assert.equal(pod.spec.initContainers?.[0]?.ports?.[0]?.hostPort, 9000);
    assert.equal(pod.spec.initContainers?.[0]?.imagePullPolicy, 'IfNotPresent');
  });

  it('turns a volume without a source into an emptyDir and defaults file modes', () => {
    const raw = manifest('web');
    Object.assign(raw.spec, { volumes: [{ name: 'scratch' }, { name: 'cfg', configMap: { name: 'c' } }] });
    const pod = defaultStaticPod(raw, fileOpts);
    assert.deepEqual(pod.spec.volumes, [
      { name: 'scratch', emptyDir: {} },
      { name: 'cfg', configMap: { name: 'c', defaultMode: 0o644 } },
    ]);
  });

  it('does not mutate its input', () => {
    const raw = manifest('web');
    const copy = structuredClone(raw);
    defaultStaticPod(raw, fileOpts);
    assert.deepEqual(raw, copy);
  });
});

describe('image pull policy default', () => {
  const table: [string, string][] = [
    ['busybox', 'Always'],
    ['busybox:latest', 'Always'],
    ['docker.io/library/busybox:1.29', 'IfNotPresent'],
    ['localhost:5000/app', 'Always'],
    ['localhost:5000/app:v2', 'IfNotPresent'],
    ['app@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef', 'IfNotPresent'],
    ['app:latest@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef', 'Always'],
  ];
  for (const [image, want] of table) {
    it(`is ${want} for ${image}`, () => assert.equal(defaultPullPolicy(image), want));
  }
  it('keeps an explicit policy', () => {
    const raw = manifest('web', 'busybox');
    (raw.spec.containers[0] as Record<string, unknown>).imagePullPolicy = 'Never';
    assert.equal(defaultStaticPod(raw, fileOpts).spec.containers[0]?.imagePullPolicy, 'Never');
  });
  it('splits tag and digest', () => {
    assert.deepEqual(imageTagAndDigest('a/b:c@sha256:d'), { tag: 'c', digest: 'sha256:d' });
  });
});

describe('static pod validation', () => {
  it('requires kind Pod and apiVersion v1', () => {
    assert.match(
      invalidMessage(() => defaultStaticPod({ ...manifest('web'), kind: 'PodList' }, fileOpts)),
      /kind: expected "Pod"/,
    );
    assert.match(
      invalidMessage(() => defaultStaticPod({ ...manifest('web'), apiVersion: 'v2' }, fileOpts)),
      /apiVersion/,
    );
    assert.match(
      invalidMessage(() => defaultStaticPod('text', fileOpts)),
      /must be a YAML or JSON object/,
    );
  });

  it('names the origin in the error', () => {
    assert.match(
      invalidMessage(() => defaultStaticPod({}, fileOpts)),
      /\/etc\/kubernetes\/manifests\/web\.yaml/,
    );
  });

  it('requires a name', () => {
    const raw = { ...manifest('web'), metadata: {} };
    assert.match(
      invalidMessage(() => defaultStaticPod(raw, fileOpts)),
      /metadata\.name: Required value/,
    );
  });

  it('rejects a name that is not a DNS-1123 subdomain', () => {
    assert.match(
      invalidMessage(() => defaultStaticPod(manifest('Web_1'), fileOpts)),
      /metadata\.name: Invalid value: "Web_1-node-1"/,
    );
  });

  it('requires containers, each with an image', () => {
    const none = manifest('web');
    none.spec.containers = [];
    assert.match(
      invalidMessage(() => defaultStaticPod(none, fileOpts)),
      /spec\.containers: Required value/,
    );
    const noImage = manifest('web');
    noImage.spec.containers = [{ name: 'a', image: 'x:1' }, { name: 'b' }] as never;
    assert.match(
      invalidMessage(() => defaultStaticPod(noImage, fileOpts)),
      /spec\.containers\[1\]\.image: Required value/,
    );
  });

  it('rejects duplicate container names across init and app containers', () => {
    const raw = manifest('web');
    Object.assign(raw.spec, { initContainers: [{ name: 'main', image: 'x:1' }] });
    assert.match(
      invalidMessage(() => defaultStaticPod(raw, fileOpts)),
      /spec\.containers\[0\]\.name: Duplicate value: "main"/,
    );
  });

  it('rejects container names that are not DNS labels', () => {
    const raw = manifest('web');
    raw.spec.containers = [{ name: 'Main', image: 'x:1' }];
    assert.match(
      invalidMessage(() => defaultStaticPod(raw, fileOpts)),
      /spec\.containers\[0\]\.name: Invalid value: "Main"/,
    );
  });

  it('rejects unsupported enum values with the supported list', () => {
    const raw = manifest('web');
    Object.assign(raw.spec, { restartPolicy: 'Sometimes' });
    assert.match(
      invalidMessage(() => defaultStaticPod(raw, fileOpts)),
      /spec\.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "Never", "OnFailure"/,
    );
    const pull = manifest('web');
    (pull.spec.containers[0] as Record<string, unknown>).imagePullPolicy = 'Sometimes';
    assert.match(
      invalidMessage(() => defaultStaticPod(pull, fileOpts)),
      /spec\.containers\[0\]\.imagePullPolicy: Unsupported value/,
    );
  });

  it('rejects out-of-range ports and negative grace periods', () => {
    const raw = manifest('web');
    (raw.spec.containers[0] as Record<string, unknown>).ports = [{ containerPort: 70000 }];
    Object.assign(raw.spec, { terminationGracePeriodSeconds: -1 });
    const msg = invalidMessage(() => defaultStaticPod(raw, fileOpts));
    assert.match(
      msg,
      /spec\.containers\[0\]\.ports\[0\]\.containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive/,
    );
    assert.match(
      msg,
      /spec\.terminationGracePeriodSeconds: Invalid value: -1: must be greater than or equal to 0/,
    );
  });

  it('rejects empty env names and wrong field types', () => {
    const raw = manifest('web');
    (raw.spec.containers[0] as Record<string, unknown>).env = [{ name: '' }];
    assert.match(
      invalidMessage(() => defaultStaticPod(raw, fileOpts)),
      /spec\.containers\[0\]\.env\[0\]\.name: Required value/,
    );
    const typed = manifest('web');
    (typed.spec.containers[0] as Record<string, unknown>).env = [{ name: 'A', value: 1 }];
    assert.match(
      invalidMessage(() => defaultStaticPod(typed, fileOpts)),
      /spec\.containers\[0\]\.env\[0\]\.value: Invalid value: 1: must be a string/,
    );
    const port = manifest('web');
    (port.spec.containers[0] as Record<string, unknown>).ports = [{ containerPort: '80' }];
    assert.match(
      invalidMessage(() => defaultStaticPod(port, fileOpts)),
      /containerPort: Invalid value: "80": must be an integer/,
    );
  });

  it('rejects mounts of undeclared volumes and probes without a handler', () => {
    const raw = manifest('web');
    Object.assign(raw.spec.containers[0] as object, {
      volumeMounts: [{ name: 'data', mountPath: '/data' }],
      readinessProbe: { periodSeconds: 5 },
    });
    const msg = invalidMessage(() => defaultStaticPod(raw, fileOpts));
    assert.match(msg, /spec\.containers\[0\]\.volumeMounts\[0\]\.name: Not found: "data"/);
    assert.match(msg, /spec\.containers\[0\]\.readinessProbe: Required value: must specify a handler type/);
  });

  it('rejects bad quantities', () => {
    const raw = manifest('web');
    (raw.spec.containers[0] as Record<string, unknown>).resources = { limits: { memory: 'lots' } };
    assert.match(
      invalidMessage(() => defaultStaticPod(raw, fileOpts)),
      /resources\.limits\.memory: Invalid value: "lots"/,
    );
  });

  it('rejects wrong types in node affinity, readiness gates and status, which the kubelet reads as typed', () => {
    const cases: [string, (spec: Record<string, unknown>, raw: Record<string, unknown>) => void, RegExp][] = [
      [
        'affinity',
        (spec) => {
          spec.affinity = {
            nodeAffinity: {
              requiredDuringSchedulingIgnoredDuringExecution: {
                nodeSelectorTerms: [{ matchExpressions: [{ key: 'k', operator: false, values: 'x' }] }],
              },
            },
          };
        },
        /nodeSelectorTerms\[0\]\.matchExpressions\[0\]\.operator: Invalid value: false: must be a string; .*matchExpressions\[0\]\.values: Invalid value: "x": must be a list/,
      ],
      [
        'nodeSelectorTerms',
        (spec) =>
          void (spec.affinity = {
            nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: '' } },
          }),
        /requiredDuringSchedulingIgnoredDuringExecution\.nodeSelectorTerms: Invalid value: "": must be a list/,
      ],
      [
        'readinessGates',
        (spec) => void (spec.readinessGates = [true]),
        /spec\.readinessGates\[0\]: Invalid value: true: must be an object/,
      ],
      [
        'conditionType',
        (spec) => void (spec.readinessGates = [{ conditionType: {} }]),
        /spec\.readinessGates\[0\]\.conditionType: Invalid value: \{\}: must be a string/,
      ],
      [
        'status',
        (_spec, raw) => void (raw.status = { conditions: [{ type: 1 }] }),
        /status\.conditions\[0\]\.type: Invalid value: 1: must be a string/,
      ],
      [
        'containerStatuses',
        (_spec, raw) => void (raw.status = { containerStatuses: [{ name: 'a', restartCount: 'x' }] }),
        /status\.containerStatuses\[0\]\.restartCount: Invalid value: "x": must be an integer/,
      ],
    ];
    for (const [what, mutate, want] of cases) {
      const raw = manifest('web') as unknown as Record<string, unknown>;
      mutate(raw.spec as Record<string, unknown>, raw);
      assert.match(
        invalidMessage(() => defaultStaticPod(raw, fileOpts)),
        want,
        what,
      );
    }
  });

  it('requires the fields the kubelet reads without a fallback, naming them (a missing probe port threw a TypeError in validation)', () => {
    const cases: [string, (c: Record<string, unknown>, spec: Record<string, unknown>) => void, RegExp][] = [
      [
        'probe port',
        (c) => void (c.livenessProbe = { httpGet: { path: '/' } }),
        /spec\.containers\[0\]\.livenessProbe\.httpGet\.port: Required value/,
      ],
      [
        'tcp port',
        (c) => void (c.readinessProbe = { tcpSocket: {} }),
        /readinessProbe\.tcpSocket\.port: Required value/,
      ],
      [
        'sysctl',
        (_c, spec) => void (spec.securityContext = { sysctls: [{ value: '1' }] }),
        /spec\.securityContext\.sysctls\[0\]\.name: Required value/,
      ],
      [
        'host alias',
        (_c, spec) => void (spec.hostAliases = [{ hostnames: ['a'] }]),
        /spec\.hostAliases\[0\]\.ip: Required value/,
      ],
      [
        'seccomp',
        (c) => void (c.securityContext = { seccompProfile: {} }),
        /securityContext\.seccompProfile\.type: Required value/,
      ],
    ];
    for (const [what, mutate, want] of cases) {
      const raw = manifest('web') as unknown as {
        spec: Record<string, unknown> & { containers: Record<string, unknown>[] };
      };
      mutate(raw.spec.containers[0] as Record<string, unknown>, raw.spec);
      assert.match(
        invalidMessage(() => defaultStaticPod(raw, fileOpts)),
        want,
        what,
      );
    }
  });

  it('reads a null field as unset, as upstream’s decoder does', () => {
    const raw = manifest('web') as unknown as Record<string, unknown>;
    Object.assign(raw.spec as object, { affinity: null, readinessGates: null, hostNetwork: null });
    raw.status = { conditions: [{ type: 'Ready', status: 'True', lastProbeTime: null }] };
    assert.equal(defaultStaticPod(raw, fileOpts).spec.hostNetwork, undefined);
  });

  it('lists every problem in one message', () => {
    const raw = manifest('web');
    raw.spec.containers = [{ name: 'a' }, { name: 'a' }] as never;
    const msg = invalidMessage(() => defaultStaticPod(raw, fileOpts));
    assert.match(msg, /\[0\]\.image: Required value; .*\[1\]\.image: Required value; .*Duplicate value: "a"/);
  });
});
