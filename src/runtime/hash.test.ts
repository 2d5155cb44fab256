import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { hashContainer } from './hash.ts';

/**
 * Container specs and the hashes the kubelet wrote for them before its two canonical JSON encoders
 * became one: a kubelet restarted onto newer code must find the same hashes on the containers it
 * adopts, or it restarts them.
 */
const SPECS: Record<string, object> = {
  minimal: { name: 'app', image: 'busybox' },
  defaulted: {
    name: 'web',
    image: 'nginx:1.25',
    imagePullPolicy: 'IfNotPresent',
    terminationMessagePath: '/dev/termination-log',
    terminationMessagePolicy: 'File',
    resources: {},
    ports: [{ containerPort: 80, protocol: 'TCP', name: 'http' }],
  },
  full: {
    volumeMounts: [{ mountPath: '/data', name: 'data', readOnly: true }],
    name: 'full',
    args: ['-c', 'echo héllo ☃ "quoted" \\ back\nline'],
    command: ['/bin/sh'],
    env: [
      { name: 'B', value: '2' },
      { name: 'A', valueFrom: { fieldRef: { fieldPath: 'status.podIP', apiVersion: 'v1' } } },
    ],
    image: 'registry.example/app@sha256:abc',
    livenessProbe: {
      httpGet: { path: '/healthz', port: 8080, scheme: 'HTTP' },
      initialDelaySeconds: 3,
      periodSeconds: 10,
      timeoutSeconds: 1,
      successThreshold: 1,
      failureThreshold: 3,
    },
    resources: { limits: { memory: '128Mi', cpu: '500m' }, requests: { cpu: 0.25, memory: '64Mi' } },
    securityContext: { runAsUser: 1000, capabilities: { drop: ['ALL'], add: [] }, privileged: false },
    stdin: false,
    tty: false,
    workingDir: '/work',
  },
  codeBuilt: {
    name: 'built',
    image: 'pause',
    command: undefined,
    env: [{ name: 'X', value: undefined }],
    ports: [],
    lifecycle: { preStop: { exec: { command: ['sleep', '5'] } }, postStart: undefined },
    numbers: [0, -1, 1.5, 1e21, 1e-7, 2 ** 53],
    nested: [[], [{}], [null, true, 'x']],
    zKey: { b: 1, a: { d: [3, 2, 1], c: null } },
  },
};

const PINNED: Record<string, string> = {
  minimal: '34a9f8ee',
  defaulted: '33f47abf',
  full: 'e3333455',
  codeBuilt: '40a8120a',
};

describe('hashContainer (upstream HashContainer)', () => {
  it('gives the hashes earlier kubelets wrote for the same specs', () => {
    for (const [name, spec] of Object.entries(SPECS)) assert.equal(hashContainer(spec), PINNED[name], name);
  });

  it('does not depend on key order, and counts an undefined property as absent', () => {
    assert.equal(hashContainer({ image: 'busybox', name: 'app' }), PINNED.minimal);
    assert.equal(hashContainer({ name: 'app', image: 'busybox', command: undefined }), PINNED.minimal);
    assert.notEqual(hashContainer({ name: 'app', image: 'busybox:1' }), PINNED.minimal);
  });
});
