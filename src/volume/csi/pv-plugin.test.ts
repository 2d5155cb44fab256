import { afterEach, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { nullLogger } from '../../util/logger.ts';
import type { KubeletPod } from '../../api/types.ts';
import { startHostPathDriver, type HostPathDriver } from '../../../test/kit/csi-hostpath/driver.ts';
import { escapePluginName } from '../pv-plugins.ts';
import { createCsi, createCsiPvPlugin, type Csi } from './index.ts';
import { fakeNodeApi, fixtureSockets } from './testing.ts';

const DRIVER = 'hostpath.csi.example.com';

describe('the CSI PV plugin', () => {
  let root: string;
  let csi: Csi;
  let d: HostPathDriver;

  beforeEach(async () => {
    root = await mkdtemp(path.join(tmpdir(), 'csi-pvp-'));
    const fake = fakeNodeApi('node-a');
    fake.csiDrivers.set(DRIVER, { spec: { attachRequired: false } });
    csi = createCsi({
      rootDir: root,
      nodeName: 'node-a',
      api: fake.api,
      logger: nullLogger,
      nodeEvent: () => undefined,
      reconcilePeriodMs: 60_000,
    });
    await csi.start(new AbortController().signal);
    d = await startHostPathDriver({
      name: DRIVER,
      ...fixtureSockets(root, DRIVER),
      dataDir: path.join(root, 'data'),
      nodeId: 'n',
      mode: 'symlink',
    });
    await csi.watcher.reconcileNow();
  });

  afterEach(async () => {
    await csi.stop();
    await d.close();
    await rm(root, { recursive: true, force: true });
  });

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
