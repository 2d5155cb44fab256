import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Pod } from './types.ts';
import { isMirrorPod, isStaticPod, podSource } from './pod-source.ts';
import { ANNOTATION_CONFIG_MIRROR, ANNOTATION_CONFIG_SOURCE } from '../config/defaults.ts';
import { buildPod } from '../../test/kit/pod.ts';

function pod(annotations?: Record<string, string>): Pod {
  return buildPod('p', { containers: [], ...(annotations ? { annotations } : {}) });
}

describe('pod source predicates (upstream kubetypes.IsStaticPod / IsMirrorPod)', () => {
  it('takes pods from a file or a URL as static, and API pods and unannotated pods as not', () => {
    assert.equal(isStaticPod(pod({ [ANNOTATION_CONFIG_SOURCE]: 'file' })), true);
    assert.equal(isStaticPod(pod({ [ANNOTATION_CONFIG_SOURCE]: 'http' })), true);
    assert.equal(isStaticPod(pod({ [ANNOTATION_CONFIG_SOURCE]: 'api' })), false);
    assert.equal(isStaticPod(pod()), false);
    assert.equal(podSource(pod()), undefined);
  });

  it('takes a pod carrying the mirror annotation as a mirror pod, whatever its source', () => {
    assert.equal(
      isMirrorPod(pod({ [ANNOTATION_CONFIG_MIRROR]: 'h', [ANNOTATION_CONFIG_SOURCE]: 'file' })),
      true,
    );
    assert.equal(isMirrorPod(pod({ [ANNOTATION_CONFIG_SOURCE]: 'api' })), false);
  });
});
