import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { startHostPathDriver } from '../../test/kit/csi-hostpath/driver.ts';
import { fakeCriKubelet, untilWithin } from './testing.ts';

const until = untilWithin(10_000);

describe('the kubelet and CSI drivers', () => {
  it('registers a CSI driver that puts its socket into <root-dir>/plugins_registry while the kubelet runs', async (t) => {
    const s = await fakeCriKubelet(t);
    await s.start();
    const name = 'hostpath.csi.example.com';
    const driver = await startHostPathDriver({
      name,
      csiSocket: join(s.dir, 'plugins', name, 'csi.sock'),
      registrationSocket: join(s.dir, 'plugins_registry', `${name}-reg.sock`),
      dataDir: join(s.dir, 'csi-data'),
      nodeId: 'node-a',
      mode: 'symlink',
    });
    t.after(() => driver.close());
    // Standalone (no API server): registered without node info, as upstream without a kube client.
    const statuses = await until('the registration status', () =>
      driver.registrationStatuses.length > 0 ? driver.registrationStatuses : undefined,
    );
    assert.deepEqual(statuses, [{ pluginRegistered: true, error: '' }]);
  });
});
