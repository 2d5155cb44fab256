import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { unaryCall } from '../../../src/volume/csi/grpc-unix.ts';
import { CSI_PROTO } from '../../../src/volume/csi/protos.ts';
import { startHostPathDriver } from './driver.ts';
import { hostPathDriverProcess } from './process.ts';

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

  it('runs as a process that a SIGKILL leaves with its sockets and no listener, and that starts again', async (t) => {
    const dir = await mkdtemp(path.join(tmpdir(), 'csi-fixture-'));
    const d = hostPathDriverProcess(
      {
        name: 'fixture.csi',
        csiSocket: path.join(dir, 'csi.sock'),
        registrationSocket: path.join(dir, 'reg', 'fixture.csi-reg.sock'),
        dataDir: path.join(dir, 'data'),
        nodeId: 'n',
        mode: 'symlink',
      },
      { callsFile: path.join(dir, 'calls.jsonl'), logFile: path.join(dir, 'driver.log') },
    );
    t.after(async () => {
      await d.stop();
      await rm(dir, { recursive: true, force: true });
    });
    const info = () =>
      unaryCall<{ name: string }>(
        d.options.csiSocket,
        'GetPluginInfo',
        CSI_PROTO.method('csi.v1.Identity', 'GetPluginInfo'),
        {},
        { timeoutMs: 1_000 },
      );
    await d.start();
    assert.equal((await info()).name, 'fixture.csi');
    await d.kill();
    assert.equal(existsSync(d.options.csiSocket), true, 'a killed driver leaves its socket');
    assert.equal(existsSync(d.options.registrationSocket ?? ''), true);
    await assert.rejects(info(), /deadline exceeded/);
    await d.start();
    assert.equal((await info()).name, 'fixture.csi');
    assert.deepEqual(
      (await d.calls()).map((c) => c.method),
      ['GetPluginInfo', 'GetPluginInfo'],
    );
  });
});
