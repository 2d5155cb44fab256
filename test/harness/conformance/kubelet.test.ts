import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { kubeletLike } from './kubelet.ts';

describe('kubeletLike (who else uses the bed)', () => {
  it('counts kubelets, tskubelet processes, integration test runs and benchmarks', () => {
    for (const argv of [
      ['/var/cache/tskubelet-bed/kubernetes-1.20.2/bin/kubelet', '--kubeconfig=k'],
      ['/usr/bin/bash', '/work/main/bin/tskubelet', 'run', '--kubeconfig', 'k'],
      ['node', '--max-semi-space-size=16', '/work/main/dist/js/cli/main.js', 'run'],
      ['node', 'src/cli/main.ts', 'run'],
      [
        'node',
        'dist/js/cli/main.js',
        'run',
        '--container-runtime-endpoint',
        'unix:///run/tskubelet-bed/containerd.sock',
      ],
      ['node', 'dist/js/cli/main.js', '--container-runtime-endpoint=/run/tskubelet-bed/containerd.sock'],
      ['node', 'bench/run.ts', '--scenario', 'apiload'],
      ['node', 'test/integration/cluster.test.ts'],
      ['node', '--test', '--test-concurrency=1', 'src/**/*.test.ts', 'test/integration/**/*.test.ts'],
    ]) {
      assert.equal(kubeletLike(argv), true, argv.join(' '));
    }
  });

  it('does not count tools that only name integration test files, unit test runs, or tskubelet off the bed', () => {
    for (const argv of [
      ['node', '/work/main/node_modules/.bin/eslint', 'src/util/testing.ts', 'test/integration/support.ts'],
      ['node', '/work/main/node_modules/.bin/prettier', '--check', 'test/integration/cluster.test.ts'],
      ['node', '--test', 'src/**/*.test.ts', 'test/harness/**/*.test.ts'],
      ['vim', 'test/integration/cluster.test.ts'],
      ['node', 'node_modules/.bin/tsc', '--noEmit', '-p', '.'],
      // tskubelet without the bed: help, version, the node CLI, a runtime socket of its own.
      ['node', '--max-semi-space-size=2', 'dist/js/cli/main.js', 'run', '--help'],
      ['/usr/bin/bash', '/work/main/bin/tskubelet', '--version'],
      ['node', 'dist/js/cli/main.js', 'get', 'pods'],
      [
        'node',
        'dist/js/cli/main.js',
        'run',
        '--root-dir',
        '/tmp/r',
        '--container-runtime-endpoint',
        'unix:///tmp/nonexist.sock',
      ],
    ]) {
      assert.equal(kubeletLike(argv), false, argv.join(' '));
    }
  });
});
