import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { unaryCall } from '../../../src/volume/csi/grpc-unix.ts';
import { CSI_PROTO } from '../../../src/volume/csi/protos.ts';
import { startHostPathDriver } from './driver.ts';

describe('the host-path CSI fixture driver', () => {
  it('creates and deletes a volume through its Controller service, and records the calls', async (t) => {
    const dir = await mkdtemp(path.join(tmpdir(), 'csi-fixture-'));
    const d = await startHostPathDriver({
      name: 'fixture.csi',
      csiSocket: path.join(dir, 'csi.sock'),
      dataDir: path.join(dir, 'data'),
      nodeId: 'n',
      controller: true,
      mode: 'symlink',
    });
    t.after(async () => {
      await d.close();
      await rm(dir, { recursive: true, force: true });
    });
    const call = <T>(service: string, name: string, req: object) =>
      unaryCall<T>(d.options.csiSocket, name, CSI_PROTO.method(`csi.v1.${service}`, name), req, {
        timeoutMs: 5000,
      });

    const caps = await call<{ capabilities: { service?: { type: string } }[] }>(
      'Identity',
      'GetPluginCapabilities',
      {},
    );
    assert.deepEqual(
      caps.capabilities.map((c) => c.service?.type),
      ['CONTROLLER_SERVICE'],
    );
    const created = await call<{ volume: { volumeId: string; capacityBytes: number } }>(
      'Controller',
      'CreateVolume',
      {
        name: 'pvc-1',
        capacityRange: { requiredBytes: 1 << 20 },
        volumeCapabilities: [{ mount: {}, accessMode: { mode: 'SINGLE_NODE_WRITER' } }],
      },
    );
    assert.deepEqual(created.volume.volumeId, 'pvc-1');
    assert.equal(created.volume.capacityBytes, 1 << 20);
    assert.equal(existsSync(path.join(dir, 'data', 'pvc-1')), true);
    await call('Controller', 'DeleteVolume', { volumeId: 'pvc-1' });
    assert.equal(existsSync(path.join(dir, 'data', 'pvc-1')), false);
    assert.deepEqual(
      d.calls.map((c) => `${c.service}/${c.method}`),
      ['Identity/GetPluginCapabilities', 'Controller/CreateVolume', 'Controller/DeleteVolume'],
    );
  });
});
