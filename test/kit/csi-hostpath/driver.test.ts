import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, open, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { unaryCall } from '../../../src/volume/csi/grpc-unix.ts';
import { CSI_PROTO } from '../../../src/volume/csi/protos.ts';
import { BLOCK_VOLUME_BYTES, startHostPathDriver } from './driver.ts';
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

  it(
    'serves a block volume in bind mode: a loop device at NodeStage, bind-mounted on the target file at NodePublish, all undone',
    {
      skip: process.getuid?.() !== 0 ? 'needs root (losetup, mount)' : false,
    },
    async (t) => {
      const dir = await mkdtemp(path.join(tmpdir(), 'csi-fixture-'));
      const d = await startHostPathDriver({
        name: 'fixture.csi',
        csiSocket: path.join(dir, 'csi.sock'),
        dataDir: path.join(dir, 'data'),
        nodeId: 'n',
        mode: 'bind',
      });
      const backing = path.join(dir, 'data', 'blk-1.img');
      const target = path.join(dir, 'publish', 'uid-1');
      const loops = () =>
        execFileSync('losetup', ['-j', backing], { encoding: 'utf8' })
          .split('\n')
          .filter((l) => l.startsWith('/dev/'))
          .map((l) => l.split(':')[0] ?? '');
      t.after(async () => {
        // Only a run that failed half-way leaves a mount or a loop device behind.
        if (spawnSync('mountpoint', ['-q', target]).status === 0) execFileSync('umount', [target]);
        for (const dev of loops()) execFileSync('losetup', ['-d', dev]);
        await d.close();
        await rm(dir, { recursive: true, force: true });
      });
      const call = (name: string, req: object) =>
        unaryCall(d.options.csiSocket, name, CSI_PROTO.method('csi.v1.Node', name), req, {
          timeoutMs: 10_000,
        });
      const cap = { block: {}, accessMode: { mode: 'SINGLE_NODE_WRITER' } };
      const staging = path.join(dir, 'staging');
      await mkdir(staging);
      await mkdir(path.dirname(target));
      await call('NodeStageVolume', { volumeId: 'blk-1', stagingTargetPath: staging, volumeCapability: cap });
      assert.equal((await stat(backing)).size, BLOCK_VOLUME_BYTES);
      assert.equal(loops().length, 1, 'attached to one loop device');
      await call('NodePublishVolume', {
        volumeId: 'blk-1',
        stagingTargetPath: staging,
        targetPath: target,
        volumeCapability: cap,
      });
      assert.ok((await stat(target)).isBlockDevice(), 'the target is the loop device');
      const fh = await open(target, 'r+');
      await fh.write(Buffer.from('marker'), 0, 6, 4096);
      await fh.close();
      const back = await open(backing, 'r');
      const buf = Buffer.alloc(6);
      await back.read(buf, 0, 6, 4096);
      await back.close();
      assert.equal(buf.toString(), 'marker', 'written through the device into the backing file');

      await call('NodeUnpublishVolume', { volumeId: 'blk-1', targetPath: target });
      assert.equal(existsSync(target), false);
      await call('NodeUnstageVolume', { volumeId: 'blk-1', stagingTargetPath: staging });
      assert.deepEqual(loops(), [], 'detached');
    },
  );
});
