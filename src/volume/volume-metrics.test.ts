import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { KubeletPod, Volume } from '../api/types.ts';
import { KubeletError } from '../util/errors.ts';
import { nullLogger } from '../util/logger.ts';
import { volumePod } from './testing.ts';
import { createVolumeManager } from './volume-manager.ts';
import {
  createVolumeMetricsRecorder,
  inlineVolumePlugin,
  qualifiedPluginName,
  type VolumeCount,
  type VolumeMetrics,
  type VolumePlugin,
} from './volume-metrics.ts';

/** Records what the recorder reports, as `plugin operation success|fail`. */
function fakeMetrics(): VolumeMetrics & { ops: string[]; counts: () => readonly VolumeCount[] } {
  const m = {
    ops: [] as string[],
    counts: (): readonly VolumeCount[] => [],
    operationDone(plugin: string, operation: string, _seconds: number, failed: boolean) {
      m.ops.push(`${plugin} ${operation} ${failed ? 'fail' : 'success'}`);
    },
    registerVolumeCounts(c: () => readonly VolumeCount[]) {
      m.counts = c;
    },
  };
  return m;
}

const kindOf = (v: Volume) => Object.keys(v).find((k) => k !== 'name') ?? 'emptyDir';

function setup(pods: KubeletPod[], claims: Record<string, VolumePlugin> = {}) {
  const metrics = fakeMetrics();
  const rec = createVolumeMetricsRecorder({
    metrics,
    pluginOf: (_pod, v, kind) => {
      if (kind === 'persistentVolumeClaim') return claims[v.name];
      const name = inlineVolumePlugin(kind, v);
      return name === undefined ? undefined : { name, block: false };
    },
    desiredPods: () => pods,
    kindOf,
    logger: nullLogger,
  });
  return { metrics, rec };
}

const ok = () => Promise.resolve();
const sorted = (c: readonly VolumeCount[]) => [...c].map((x) => `${x.state} ${x.plugin} ${x.count}`).sort();

describe('volume metrics recorder (upstream storage_operation_* and volume_manager_total_volumes)', () => {
  const scratch: Volume = { name: 'scratch', emptyDir: {} };
  const creds: Volume = { name: 'creds', secret: { secretName: 'creds' } };

  it('counts a first setup as attached and mounted, a resync only for the kinds upstream remounts', async () => {
    const pod = volumePod('p', 'uid-1', [scratch, creds]);
    const { metrics, rec } = setup([pod]);
    for (let i = 0; i < 2; i++) {
      await rec.setUp(pod, scratch, 'emptyDir', ok);
      await rec.setUp(pod, creds, 'secret', ok);
    }
    assert.deepEqual(metrics.ops, [
      'kubernetes.io/empty-dir verify_controller_attached_volume success',
      'kubernetes.io/empty-dir volume_mount success',
      'kubernetes.io/secret verify_controller_attached_volume success',
      'kubernetes.io/secret volume_mount success',
      'kubernetes.io/secret volume_mount success',
    ]);
  });

  it('counts a failed setup as fail-unknown each time, but not one cut short by its pod going away', async () => {
    const pod = volumePod('p', 'uid-1', [scratch]);
    const { metrics, rec } = setup([pod]);
    const boom = () => Promise.reject(new KubeletError('Internal', 'mount volume scratch', 'no space'));
    await assert.rejects(rec.setUp(pod, scratch, 'emptyDir', boom), /no space/);
    await assert.rejects(rec.setUp(pod, scratch, 'emptyDir', boom, AbortSignal.abort()), /no space/);
    assert.deepEqual(metrics.ops, ['kubernetes.io/empty-dir volume_mount fail']);
    assert.deepEqual(sorted(metrics.counts()), ['desired_state_of_world kubernetes.io/empty-dir 1']);
  });

  it('names a Block claim map_volume / unmap_volume and a CSI one by its driver', async () => {
    const block: Volume = { name: 'disk', persistentVolumeClaim: { claimName: 'disk' } };
    const data: Volume = { name: 'data', persistentVolumeClaim: { claimName: 'data' } };
    const pod = volumePod('p', 'uid-1', [block, data]);
    const { metrics, rec } = setup([pod], {
      disk: { name: 'kubernetes.io/local-volume', block: true },
      data: {
        name: qualifiedPluginName('kubernetes.io/csi', { driver: 'hostpath.csi.k8s.io' }),
        block: false,
      },
    });
    await rec.setUp(pod, block, 'persistentVolumeClaim', ok);
    await rec.setUp(pod, data, 'persistentVolumeClaim', ok);
    await rec.tearDown('uid-1', ok);
    assert.deepEqual(
      metrics.ops.filter((o) => !o.includes('verify')),
      [
        'kubernetes.io/local-volume map_volume success',
        'kubernetes.io/csi:hostpath.csi.k8s.io volume_mount success',
        'kubernetes.io/local-volume unmap_volume success',
        'kubernetes.io/csi:hostpath.csi.k8s.io volume_unmount success',
      ],
    );
  });

  it('counts desired volumes of the wanted pods and actual ones until their teardown succeeds', async () => {
    const pod = volumePod('p', 'uid-1', [
      scratch,
      creds,
      { name: 'pending', persistentVolumeClaim: { claimName: 'x' } },
    ]);
    const pods = [pod];
    const { metrics, rec } = setup(pods);
    await rec.setUp(pod, scratch, 'emptyDir', ok);
    await rec.setUp(pod, creds, 'secret', ok);
    // The unresolved claim is in neither world, as upstream's populator leaves it out.
    assert.deepEqual(sorted(metrics.counts()), [
      'actual_state_of_world kubernetes.io/empty-dir 1',
      'actual_state_of_world kubernetes.io/secret 1',
      'desired_state_of_world kubernetes.io/empty-dir 1',
      'desired_state_of_world kubernetes.io/secret 1',
    ]);
    pods.length = 0;
    await assert.rejects(
      rec.tearDown('uid-1', () => Promise.reject(new Error('busy'))),
      /busy/,
    );
    assert.equal(metrics.counts().length, 2, 'a failed teardown keeps the volumes mounted');
    await rec.tearDown('uid-1', ok);
    assert.deepEqual(metrics.counts(), []);
    assert.deepEqual(
      metrics.ops.filter((o) => o.includes('unmount')),
      [
        'kubernetes.io/empty-dir volume_unmount fail',
        'kubernetes.io/secret volume_unmount fail',
        'kubernetes.io/empty-dir volume_unmount success',
        'kubernetes.io/secret volume_unmount success',
      ],
    );
  });

  it('without metrics only runs what it is given', async () => {
    const rec = createVolumeMetricsRecorder({
      metrics: undefined,
      pluginOf: () => assert.fail('not asked'),
      desiredPods: () => [],
      kindOf,
      logger: nullLogger,
    });
    let ran = 0;
    await rec.setUp(volumePod('p', 'u', [scratch]), scratch, 'emptyDir', () => Promise.resolve(void ran++));
    await rec.tearDown('u', () => Promise.resolve(void ran++));
    assert.equal(ran, 2);
  });

  it('names the inline kinds as upstream plugins do', () => {
    assert.equal(
      inlineVolumePlugin('configMap', { name: 'c', configMap: { name: 'c' } }),
      'kubernetes.io/configmap',
    );
    assert.equal(
      inlineVolumePlugin('downwardAPI', { name: 'd', downwardAPI: {} }),
      'kubernetes.io/downward-api',
    );
    assert.equal(
      inlineVolumePlugin('csi', { name: 'e', csi: { driver: 'd.example.com' } }),
      'kubernetes.io/csi:d.example.com',
    );
    assert.equal(inlineVolumePlugin('nfs', { name: 'n' }), undefined);
  });
});

describe('volume manager with volume metrics', () => {
  it('reports the mount of an emptyDir at its first setup and its unmount at the cleanup', async () => {
    const root = await mkdtemp(join(tmpdir(), 'volume-metrics-'));
    try {
      const metrics = fakeMetrics();
      const vm = createVolumeManager({ rootDir: root, metrics, tmpfs: false });
      const pod = volumePod('p', 'uid-vm', [{ name: 'scratch', emptyDir: {} }]);
      await vm.setUpPodVolumes(pod);
      await vm.setUpPodVolumes(pod);
      assert.deepEqual(sorted(metrics.counts()), [
        'actual_state_of_world kubernetes.io/empty-dir 1',
        'desired_state_of_world kubernetes.io/empty-dir 1',
      ]);
      await vm.cleanUpPod('uid-vm');
      assert.deepEqual(metrics.counts(), []);
      assert.deepEqual(metrics.ops, [
        'kubernetes.io/empty-dir verify_controller_attached_volume success',
        'kubernetes.io/empty-dir volume_mount success',
        'kubernetes.io/empty-dir volume_unmount success',
      ]);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
});
