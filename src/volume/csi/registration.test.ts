import { afterEach, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { rm } from 'node:fs/promises';
import { status as GrpcStatus } from '@grpc/grpc-js';
import type { HostPathDriver, HostPathDriverOptions } from '../../../test/kit/csi-hostpath/driver.ts';
import { ANNOTATION_NODE_ID, type Csi } from './index.ts';
import {
  BED_DRIVER as DRIVER,
  BED_NODE as NODE,
  csiTestBed,
  type CsiTestBed,
  type FakeNodeApi,
} from './testing.ts';

describe('CSI plugin registration through plugins_registry', () => {
  let bed: CsiTestBed;
  let fake: FakeNodeApi;
  let csi: Csi;
  let events: string[];

  beforeEach(async () => {
    bed = await csiTestBed({ prefix: 'csi-reg-', callTimeoutMs: 500 });
    ({ fake, csi, events } = bed);
  });

  afterEach(() => bed.close());

  const driver = (extra: Partial<HostPathDriverOptions> = {}): Promise<HostPathDriver> =>
    bed.startDriver({ maxVolumesPerNode: 7, topology: { 'topology.example.com/zone': 'z1' }, ...extra });

  it('registers a driver whose socket appears: GetInfo, NodeGetInfo, the CSINode entry, the annotation, then a positive status', async () => {
    const d = await driver();
    await csi.watcher.reconcileNow();

    assert.deepEqual(
      d.calls.map((c) => c.method),
      ['GetInfo', 'NodeGetInfo', 'NotifyRegistrationStatus'],
    );
    assert.deepEqual(d.registrationStatuses, [{ pluginRegistered: true, error: '' }]);
    assert.equal(csi.drivers.get(DRIVER)?.endpoint, d.options.csiSocket);
    assert.deepEqual(
      csi.watcher.registered().map((p) => p.name),
      [DRIVER],
    );
    const csiNode = fake.csiNode();
    assert.ok(csiNode);
    assert.deepEqual(csiNode.metadata.ownerReferences, [
      { apiVersion: 'v1', kind: 'Node', name: NODE, uid: 'node-uid-1' },
    ]);
    assert.deepEqual(csiNode.spec.drivers, [
      {
        name: DRIVER,
        nodeID: 'fixture-node-a',
        topologyKeys: ['topology.example.com/zone'],
        allocatable: { count: 7 },
      },
    ]);
    assert.deepEqual(JSON.parse(fake.node().metadata.annotations?.[ANNOTATION_NODE_ID] ?? '{}'), {
      [DRIVER]: 'fixture-node-a',
    });
    assert.equal(fake.node().metadata.labels?.['topology.example.com/zone'], 'z1');
    assert.deepEqual(events, []);
  });

  it('deregisters a driver whose registration socket is removed: the CSINode entry and the annotation go', async () => {
    const d = await driver();
    await csi.watcher.reconcileNow();
    await rm(d.options.registrationSocket ?? '');
    await csi.watcher.reconcileNow();

    assert.equal(csi.drivers.get(DRIVER), undefined);
    assert.deepEqual(csi.watcher.registered(), []);
    assert.deepEqual(fake.csiNode()?.spec.drivers, []);
    assert.equal(fake.node().metadata.annotations?.[ANNOTATION_NODE_ID], undefined);
  });

  it('refuses a driver without a 1.x version: the plugin is told why, a Node event names socket and driver', async () => {
    const d = await driver({ supportedVersions: ['0.3.0', '2.0.0'] });
    await csi.watcher.reconcileNow();

    assert.equal(d.registrationStatuses.length, 1);
    assert.equal(d.registrationStatuses[0]?.pluginRegistered, false);
    assert.match(d.registrationStatuses[0]?.error ?? '', /plugin validation failed.*must be v1\.x/);
    assert.equal(csi.drivers.get(DRIVER), undefined);
    assert.equal(d.callsOf('NodeGetInfo').length, 0);
    assert.equal(events.length, 1);
    assert.match(
      events[0] ?? '',
      new RegExp(`^Warning FailedPluginRegistration plugin ${DRIVER} at .*-reg\\.sock: `),
    );
  });

  it('refuses a plugin of a type without a handler', async () => {
    const d = await driver({ pluginType: 'DevicePlugin' });
    await csi.watcher.reconcileNow();
    assert.match(
      d.registrationStatuses[0]?.error ?? '',
      /no handler registered for plugin type: DevicePlugin/,
    );
  });

  it('ends a hung NodeGetInfo at its deadline: registration fails, the driver is not kept, the plugin is told', async () => {
    const d = await driver();
    d.behaviour.hang.add('NodeGetInfo');
    const started = performance.now();
    await csi.watcher.reconcileNow();

    assert.ok(performance.now() - started < 5_000);
    assert.equal(csi.drivers.get(DRIVER), undefined);
    assert.equal(d.registrationStatuses[0]?.pluginRegistered, false);
    assert.match(d.registrationStatuses[0]?.error ?? '', /NodeGetInfo.*DEADLINE|deadline|timeout/i);
    assert.deepEqual(fake.csiNode()?.spec.drivers ?? [], [], 'no CSINode entry for the driver');
    assert.match(events[0] ?? '', /FailedPluginRegistration/);
  });

  it('retries a failed registration after a back-off and registers once the driver answers', async () => {
    const d = await driver();
    d.behaviour.fail.set('NodeGetInfo', { code: GrpcStatus.UNAVAILABLE, details: 'starting' });
    await csi.watcher.reconcileNow();
    assert.equal(csi.drivers.get(DRIVER), undefined);
    d.behaviour.fail.clear();
    await new Promise((r) => setTimeout(r, 600)); // the first back-off is 500 ms
    await csi.watcher.reconcileNow();
    assert.equal(csi.drivers.get(DRIVER)?.name, DRIVER);
    assert.deepEqual(
      d.registrationStatuses.map((s) => s.pluginRegistered),
      [false, true],
    );
  });

  it('registers a driver again when its registration socket is re-created (a registrar restart)', async () => {
    const d = await driver();
    await csi.watcher.reconcileNow();
    await d.close();
    const again = await driver({ nodeId: 'fixture-node-a2' });
    await csi.watcher.reconcileNow(); // the old registration goes
    await csi.watcher.reconcileNow(); // the new socket registers
    assert.deepEqual(again.registrationStatuses, [{ pluginRegistered: true, error: '' }]);
    assert.deepEqual(
      fake.csiNode()?.spec.drivers?.map((x) => x.nodeID),
      ['fixture-node-a2'],
    );
  });

  it('stops at once with a registration hung in NodeGetInfo, without waiting for its deadline', async () => {
    await csi.stop();
    const d = await driver();
    d.behaviour.hang.add('NodeGetInfo');
    const slow = await bed.newCsi({ callTimeoutMs: 60_000 });
    const pending = slow.watcher.reconcileNow();
    while (d.callsOf('NodeGetInfo').length === 0) await new Promise((r) => setTimeout(r, 20));
    const started = performance.now();
    await slow.stop();
    await pending;
    assert.ok(performance.now() - started < 2_000, 'stopped before the 60 s deadline');
    assert.equal(slow.drivers.get(DRIVER), undefined);
  });

  it('reports a failed deregistration with the socket and driver in a Node event', async () => {
    const d = await driver();
    await csi.watcher.reconcileNow();
    fake.api.respond('GET', `/apis/storage.k8s.io/v1/csinodes/${NODE}`, new Error('API down'));
    await rm(d.options.registrationSocket ?? '');
    await csi.watcher.reconcileNow();
    assert.equal(csi.drivers.get(DRIVER), undefined);
    assert.equal(events.length, 1);
    assert.match(
      events[0] ?? '',
      new RegExp(
        `^Warning FailedPluginDeregistration plugin ${DRIVER} at .*-reg\\.sock: DeRegisterPlugin error -- .*API down`,
      ),
    );
  });
});
