import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { kubeletArgv, maxPodsFor, type KubeletKind } from './kubelets.ts';

function maxPodsFlag(kind: KubeletKind, maxPods?: number): string | undefined {
  const { args } = kubeletArgv({
    kind,
    nodeName: 'n',
    endpoint: 'unix:///s',
    rootDir: '/r',
    logFile: '',
    ...(maxPods !== undefined ? { maxPods } : {}),
  });
  const i = args.findIndex((a) => a.startsWith('--max-pods'));
  return kind === 'upstream' ? args[i] : `${args[i]}=${args[i + 1]}`;
}

describe('kubeletArgv --max-pods', () => {
  it("gives both kubelets upstream's 110 unless a run asks for more", () => {
    assert.equal(maxPodsFlag('tskubelet'), '--max-pods=110');
    assert.equal(maxPodsFlag('upstream'), '--max-pods=110');
    assert.equal(maxPodsFlag('tskubelet-unpaced', 250), '--max-pods=250');
    assert.equal(maxPodsFlag('upstream', 250), '--max-pods=250');
  });

  it('raises maxPods to the pod count only above the default', () => {
    assert.equal(maxPodsFor(10), 110);
    assert.equal(maxPodsFor(110), 110);
    assert.equal(maxPodsFor(250), 250);
  });
});
