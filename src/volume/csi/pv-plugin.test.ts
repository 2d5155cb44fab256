import { afterEach, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { nullLogger } from '../../util/logger.ts';
import type { KubeletPod } from '../../api/types.ts';
import type { HostPathDriver } from '../../../test/kit/csi-hostpath/driver.ts';
import { escapePluginName } from '../pv-plugins.ts';
import { createCsiPvPlugin, type Csi } from './index.ts';
import { BED_DRIVER as DRIVER, csiTestBed, type CsiTestBed } from './testing.ts';

describe('the CSI PV plugin', () => {
  let bed: CsiTestBed;
  let root: string;
  let csi: Csi;
  let d: HostPathDriver;

  beforeEach(async () => {
    bed = await csiTestBed({ prefix: 'csi-pvp-', csiDriverSpec: { attachRequired: false } });
    ({ root, csi } = bed);
    d = await bed.registerDriver({ nodeId: 'n' });
  });

  afterEach(() => bed.close());

  it('sets up a CSI PV for a pod in the dir the volume manager tears down, and tears it down from that dir', async () => {
    const plugin = createCsiPvPlugin(csi);
    const pod = {
      metadata: { uid: 'u1', name: 'p', namespace: 'ns' },
      spec: { containers: [] },
    } as unknown as KubeletPod;
    const target = await plugin.setUp({
      rootDir: root,
      pod,
      volume: 'data',
      pvName: 'pv-1',
      pv: {
        metadata: { name: 'pv-1' },
        spec: { csi: { driver: DRIVER, volumeHandle: 'h1' }, accessModes: ['ReadWriteOnce'] },
      },
      readOnly: true,
      logger: nullLogger,
    });
    const dir = path.join(root, 'pods', 'u1', 'volumes', escapePluginName(plugin.name), 'pv-1');
    assert.equal(target, path.join(dir, 'mount'));
    assert.equal(d.callsOf('NodePublishVolume')[0]?.request.readonly, true);
    await plugin.tearDown?.(dir);
    assert.deepEqual(
      d.calls.map((c) => c.method).filter((m) => m.startsWith('NodeUn')),
      ['NodeUnpublishVolume', 'NodeUnstageVolume'],
    );
    assert.equal(existsSync(dir), false);
  });
});
