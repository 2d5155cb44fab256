import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { podQOSClass, type QOSClass } from './qos.ts';
import type { Container, Pod, ResourceRequirements } from './types.ts';

function c(name: string, resources?: ResourceRequirements): Container {
  return resources ? { name, image: 'busybox:1.29', resources } : { name, image: 'busybox:1.29' };
}

function pod(containers: Container[], initContainers?: Container[]): Pod {
  const p: Pod = { metadata: { name: 'p', namespace: 'ns', uid: 'u' }, spec: { containers } };
  if (initContainers) p.spec.initContainers = initContainers;
  return p;
}

const guaranteed = (cpu: string, memory: string): ResourceRequirements => ({
  requests: { cpu, memory },
  limits: { cpu, memory },
});

describe('podQOSClass (upstream GetPodQOS)', () => {
  const cases: [string, Pod, QOSClass][] = [
    ['no container sets resources', pod([c('a'), c('b')]), 'BestEffort'],
    ['resources are empty objects', pod([c('a', { requests: {}, limits: {} })]), 'BestEffort'],
    ['only zero requests are set', pod([c('a', { requests: { cpu: '0', memory: '0' } })]), 'BestEffort'],
    [
      'only non-compute resources are set',
      pod([c('a', { requests: { 'ephemeral-storage': '1Gi' }, limits: { 'nvidia.com/gpu': '1' } })]),
      'BestEffort',
    ],
    ['one container requests cpu', pod([c('a', { requests: { cpu: '100m' } }), c('b')]), 'Burstable'],
    ['one container has a memory limit only', pod([c('a', { limits: { memory: '64Mi' } })]), 'Burstable'],
    [
      'every container has equal cpu and memory requests and limits',
      pod([c('a', guaranteed('100m', '64Mi')), c('b', guaranteed('1', '1Gi'))]),
      'Guaranteed',
    ],
    [
      'requests and limits are equal in different units',
      pod([
        c('a', { requests: { cpu: '1', memory: '1Gi' }, limits: { cpu: '1000m', memory: '1073741824' } }),
      ]),
      'Guaranteed',
    ],
    ['one container of two is guaranteed', pod([c('a', guaranteed('100m', '64Mi')), c('b')]), 'Burstable'],
    [
      'requests are below limits',
      pod([c('a', { requests: { cpu: '100m', memory: '64Mi' }, limits: { cpu: '200m', memory: '64Mi' } })]),
      'Burstable',
    ],
    [
      'cpu is guaranteed but memory has no limit',
      pod([c('a', { requests: { cpu: '100m', memory: '64Mi' }, limits: { cpu: '100m' } })]),
      'Burstable',
    ],
    [
      'a zero limit does not count as a limit',
      pod([c('a', { requests: { cpu: '100m', memory: '64Mi' }, limits: { cpu: '100m', memory: '0' } })]),
      'Burstable',
    ],
    [
      'an init container without resources sits beside guaranteed app containers',
      pod([c('a', guaranteed('100m', '64Mi'))], [c('init')]),
      'Burstable',
    ],
    [
      'init and app containers are all guaranteed',
      pod([c('a', guaranteed('100m', '64Mi'))], [c('init', guaranteed('50m', '32Mi'))]),
      'Guaranteed',
    ],
    [
      'only an init container requests memory',
      pod([c('a')], [c('init', { requests: { memory: '32Mi' } })]),
      'Burstable',
    ],
    // Upstream's GetPodQOS on an undefaulted pod would say Burstable (it compares len(requests) with
    // len(limits)); the API server and our static-pod defaulting copy limits into missing requests
    // first, so pods that reach the kubelet are Guaranteed either way. This is the function as is.
    [
      'cpu and memory limits are set without requests',
      pod([c('a', { limits: { cpu: '100m', memory: '64Mi' } })]),
      'Guaranteed',
    ],
  ];
  for (const [desc, p, want] of cases) {
    it(`is ${want} when ${desc}`, () => {
      assert.equal(podQOSClass(p), want);
    });
  }

  it('throws on an unparsable quantity rather than guessing a class', () => {
    assert.throws(
      () => podQOSClass(pod([c('a', { requests: { cpu: 'lots' } })])),
      /resources\.requests\.cpu/,
    );
  });
});

describe('podQOSClass cost', () => {
  it('is computed once per pod spec, so configuring each of 5,000 containers stays linear', () => {
    const many = Array.from({ length: 5000 }, (_, i) =>
      c(`c${i}`, { requests: { cpu: '10m', memory: '1Mi' } }),
    );
    const p = pod(many);
    const t0 = performance.now();
    for (let i = 0; i < many.length; i++) assert.equal(podQOSClass(p), 'Burstable');
    const took = performance.now() - t0;
    // Once: ~10 ms; computed per lookup it took ~15 s on this machine.
    assert.ok(took < 500, `5,000 lookups took ${took.toFixed(0)} ms`);
    // A changed pod is a new object (with its own spec): its class is computed anew.
    const updated: Pod = { ...p, spec: { ...p.spec, containers: [c('a', guaranteed('1', '1Gi'))] } };
    assert.equal(podQOSClass(updated), 'Guaranteed');
  });
});
