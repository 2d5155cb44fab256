import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  isCriticalPod,
  podHasLimit,
  podPriority,
  podResourceTotal,
  SYSTEM_CRITICAL_PRIORITY,
} from './pod-resources.ts';
import type { Container, Pod, ResourceRequirements } from './types.ts';

const Mi = 2 ** 20;
const Gi = 2 ** 30;

function c(name: string, resources?: ResourceRequirements): Container {
  return resources ? { name, image: 'busybox:1.29', resources } : { name, image: 'busybox:1.29' };
}

function pod(
  containers: Container[],
  extra: { initContainers?: Container[]; overhead?: Record<string, string>; priority?: number } = {},
): Pod {
  return { metadata: { name: 'p', namespace: 'ns', uid: 'u' }, spec: { containers, ...extra } };
}

function annotated(annotations: Record<string, string>, priority?: number): Pod {
  const p = pod([c('a')], priority === undefined ? {} : { priority });
  p.metadata.annotations = annotations;
  return p;
}

const req = (r: Record<string, string>): ResourceRequirements => ({ requests: r });
const lim = (r: Record<string, string>): ResourceRequirements => ({ limits: r });

describe('podResourceTotal (upstream GetResourceRequestQuantity, PodRequestsAndLimits)', () => {
  it('sums the app containers’ requests', () => {
    const p = pod([c('a', req({ memory: '100Mi' })), c('b', req({ memory: '200Mi' })), c('c')]);
    assert.equal(podResourceTotal(p, 'requests', 'memory'), 300 * Mi);
  });

  it('is zero when no container requests the resource', () => {
    const p = pod([c('a', req({ cpu: '1' })), c('b')]);
    assert.equal(podResourceTotal(p, 'requests', 'memory'), 0);
    assert.equal(podResourceTotal(p, 'limits', 'memory'), 0);
  });

  it('takes the largest init container when it exceeds the app containers’ sum', () => {
    const p = pod([c('a', req({ memory: '100Mi' })), c('b', req({ memory: '100Mi' }))], {
      initContainers: [c('i1', req({ memory: '150Mi' })), c('i2', req({ memory: '1Gi' }))],
    });
    assert.equal(podResourceTotal(p, 'requests', 'memory'), Gi);
  });

  it('keeps the app containers’ sum when it exceeds every init container', () => {
    const p = pod([c('a', req({ memory: '100Mi' })), c('b', req({ memory: '100Mi' }))], {
      initContainers: [c('i', req({ memory: '150Mi' }))],
    });
    assert.equal(podResourceTotal(p, 'requests', 'memory'), 200 * Mi);
  });

  it('adds the pod overhead to a non-zero total', () => {
    const p = pod([c('a', req({ memory: '100Mi' }))], { overhead: { memory: '10Mi' } });
    assert.equal(podResourceTotal(p, 'requests', 'memory'), 110 * Mi);
  });

  it('does not add the pod overhead to a zero total', () => {
    const p = pod([c('a')], { overhead: { memory: '10Mi' } });
    assert.equal(podResourceTotal(p, 'requests', 'memory'), 0);
  });

  it('adds the overhead to non-zero limits only, as upstream', () => {
    const p = pod([c('a', lim({ memory: '1Gi' }))], { overhead: { memory: '10Mi', cpu: '100m' } });
    assert.equal(podResourceTotal(p, 'limits', 'memory'), Gi + 10 * Mi);
    assert.equal(podResourceTotal(p, 'limits', 'cpu'), 0);
  });

  it('counts requests and limits separately', () => {
    const p = pod([
      c('a', { requests: { 'ephemeral-storage': '1Gi' }, limits: { 'ephemeral-storage': '2Gi' } }),
    ]);
    assert.equal(podResourceTotal(p, 'requests', 'ephemeral-storage'), Gi);
    assert.equal(podResourceTotal(p, 'limits', 'ephemeral-storage'), 2 * Gi);
  });

  it('gives CPU in cores and decimal suffixes in base units', () => {
    const p = pod([c('a', req({ cpu: '500m', memory: '1G' })), c('b', req({ cpu: '1', memory: '500M' }))]);
    assert.equal(podResourceTotal(p, 'requests', 'cpu'), 1.5);
    assert.equal(podResourceTotal(p, 'requests', 'memory'), 1_500_000_000);
  });

  it('throws on a malformed quantity, naming the field', () => {
    const p = pod([c('a', req({ memory: 'lots' }))]);
    assert.throws(() => podResourceTotal(p, 'requests', 'memory'), /resources\.requests\.memory/);
  });
});

describe('podHasLimit (the resource key is present in the pod limits)', () => {
  it('is true when an app container sets the limit', () => {
    assert.ok(podHasLimit(pod([c('a'), c('b', lim({ 'ephemeral-storage': '1Gi' }))]), 'ephemeral-storage'));
  });

  it('is true when only an init container sets the limit', () => {
    assert.ok(
      podHasLimit(
        pod([c('a')], { initContainers: [c('i', lim({ 'ephemeral-storage': '1Gi' }))] }),
        'ephemeral-storage',
      ),
    );
  });

  it('is true for a zero limit (the key is present)', () => {
    assert.ok(podHasLimit(pod([c('a', lim({ 'ephemeral-storage': '0' }))]), 'ephemeral-storage'));
  });

  it('is false when only requests or other limits are set', () => {
    const p = pod([c('a', { requests: { 'ephemeral-storage': '1Gi' }, limits: { memory: '1Gi' } })]);
    assert.ok(!podHasLimit(p, 'ephemeral-storage'));
  });

  it('is false when only the overhead names the resource', () => {
    assert.ok(!podHasLimit(pod([c('a')], { overhead: { 'ephemeral-storage': '1Gi' } }), 'ephemeral-storage'));
  });
});

describe('podPriority (upstream corev1helpers.PodPriority)', () => {
  it('is the spec priority', () => {
    assert.equal(podPriority(pod([c('a')], { priority: 1000 })), 1000);
    assert.equal(podPriority(pod([c('a')], { priority: -5 })), -5);
  });

  it('is zero when unset', () => {
    assert.equal(podPriority(pod([c('a')])), 0);
  });
});

describe('isCriticalPod (upstream kubelet types IsCriticalPod)', () => {
  it('uses the system-critical priority 2 000 000 000', () => {
    assert.equal(SYSTEM_CRITICAL_PRIORITY, 2_000_000_000);
  });

  const cases: [string, Pod, boolean][] = [
    ['a plain pod', pod([c('a')]), false],
    ['a pod with unrelated annotations', annotated({ team: 'x' }), false],
    ['a static pod from a file', annotated({ 'kubernetes.io/config.source': 'file' }), true],
    ['a static pod from a URL', annotated({ 'kubernetes.io/config.source': 'http' }), true],
    ['a pod whose source is the API server', annotated({ 'kubernetes.io/config.source': 'api' }), false],
    [
      'a pod with an empty source (any source but the API server)',
      annotated({ 'kubernetes.io/config.source': '' }),
      true,
    ],
    ['a mirror pod', annotated({ 'kubernetes.io/config.mirror': 'hash' }), true],
    ['a mirror pod with an empty mirror annotation', annotated({ 'kubernetes.io/config.mirror': '' }), true],
    ['a pod at system-critical priority', pod([c('a')], { priority: 2_000_000_000 }), true],
    ['a pod at system-node-critical priority', pod([c('a')], { priority: 2_000_001_000 }), true],
    ['a pod just below system-critical priority', pod([c('a')], { priority: 1_999_999_999 }), false],
    [
      'an API pod at system-critical priority',
      annotated({ 'kubernetes.io/config.source': 'api' }, 2_000_000_000),
      true,
    ],
  ];
  for (const [what, p, critical] of cases) {
    it(`${critical ? 'counts' : 'does not count'} ${what} as critical`, () => {
      assert.equal(isCriticalPod(p), critical);
    });
  }
});
