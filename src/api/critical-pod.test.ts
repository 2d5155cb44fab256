import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isCriticalPod } from './pod-resources.ts';
import { shutdownPod } from '../shutdown/testing.ts';

describe('isCriticalPod (upstream 1.20 kubelettypes.IsCriticalPod)', () => {
  it('counts a pod from the API server with an ordinary priority as not critical', () => {
    assert.equal(isCriticalPod(shutdownPod('web')), false);
  });

  it('counts system-critical priority (2000000000 and above) as critical, one below as not', () => {
    assert.equal(isCriticalPod(shutdownPod('dns', { critical: true })), true);
    const below = shutdownPod('almost');
    below.spec.priority = 1_999_999_999;
    assert.equal(isCriticalPod(below), false);
  });

  it('counts static pods (file or http source) as critical', () => {
    for (const source of ['file', 'http']) {
      const pod = shutdownPod('static', { annotations: { 'kubernetes.io/config.source': source } });
      assert.equal(isCriticalPod(pod), true, source);
    }
  });

  it('counts mirror pods as critical', () => {
    const pod = shutdownPod('mirror', { annotations: { 'kubernetes.io/config.mirror': 'abc' } });
    assert.equal(isCriticalPod(pod), true);
  });

  it('ignores the removed critical-pod annotation and a pod without a source, as 1.20 does', () => {
    const pod = shutdownPod('old', { annotations: { 'scheduler.alpha.kubernetes.io/critical-pod': '' } });
    assert.equal(isCriticalPod(pod), false);
    const bare = shutdownPod('bare');
    bare.metadata.annotations = {};
    assert.equal(isCriticalPod(bare), false);
  });
});
