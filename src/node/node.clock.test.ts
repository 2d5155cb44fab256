/**
 * The node's heartbeats while the wall clock steps: the Lease is renewed on its period whatever the
 * wall clock does, its renewTime (wall time) never goes back — the node lifecycle controller only
 * counts a renewal whose renewTime moved forward —, and the unchanged status is still reported
 * every nodeStatusReportFrequency.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { nullLogger } from '../util/logger.ts';
import { flush } from '../util/testing.ts';
import { createLeaseController } from './lease.ts';
import { FakeClock, FakeCluster, nodeAgentHarness } from './testing.ts';
import type { Lease } from './types.ts';

const H = 3_600_000;
const NODE = '/api/v1/nodes/node-a';

function leaseSetup() {
  const cluster = new FakeCluster();
  const clock = new FakeClock();
  const lease = createLeaseController({
    api: cluster.client(),
    logger: nullLogger,
    holderIdentity: 'node-a',
    namespace: 'kube-node-lease',
    leaseDurationSeconds: 40,
    renewIntervalMs: 10_000,
    now: clock.now,
    sleep: clock.sleep,
    random: () => 0,
  });
  /** renewTimes as written, in order. */
  const renewals = () =>
    cluster.requests
      .filter((r) => r.method === 'PUT' || r.method === 'POST')
      .map((r) => (r.body as Lease).spec?.renewTime ?? '');
  return { cluster, clock, lease, renewals };
}

describe('node heartbeats while the wall clock steps', () => {
  for (const stepMs of [-H, 2 * H]) {
    it(`renews the lease every 10 s across a ${stepMs / H} h step, renewTime always moving forward`, async () => {
      const { clock, lease, renewals } = leaseSetup();
      const ac = new AbortController();
      const running = lease.run(ac.signal);
      await flush(30);
      await clock.advance(25_000);
      clock.stepWall(stepMs);
      await clock.advance(35_000);
      ac.abort();
      await running;
      const times = renewals();
      // At 0, 10, 20, 30, 40, 50 and 60 s, as without a step.
      assert.equal(times.length, 7, times.join(', '));
      for (let i = 1; i < times.length; i++) {
        assert.ok(Date.parse(times[i]!) > Date.parse(times[i - 1]!), `${times[i]} after ${times[i - 1]}`);
      }
      if (stepMs > 0) assert.equal(times.at(-1), new Date(clock.now()).toISOString().replace('Z', '000Z'));
    });
  }

  it('after a backward step renews 1 ms past the last renewTime until the wall clock catches up', async () => {
    const { clock, lease, renewals } = leaseSetup();
    const signal = new AbortController().signal;
    await lease.sync(signal);
    const before = renewals()[0]!;
    clock.stepWall(-30_000);
    clock.nowMs += 10_000;
    await lease.sync(signal);
    clock.nowMs += 10_000;
    await lease.sync(signal);
    assert.deepEqual(renewals().slice(1), [
      new Date(Date.parse(before) + 1).toISOString().replace('Z', '000Z'),
      new Date(Date.parse(before) + 2).toISOString().replace('Z', '000Z'),
    ]);
    clock.nowMs += 20_000; // the wall clock is now 10 s past the first renewal
    await lease.sync(signal);
    assert.equal(renewals().at(-1), new Date(clock.now()).toISOString().replace('Z', '000Z'));
  });

  it('keeps ahead of a renewTime read back from the server (a restarted kubelet after a backward step)', async () => {
    const { cluster, lease, renewals } = leaseSetup();
    const signal = new AbortController().signal;
    await lease.sync(signal);
    const stored = cluster.leases.get('kube-node-lease/node-a')!;
    stored.spec!.renewTime = '2026-11-22T02:00:00.000500Z'; // written an hour "later" by the previous run
    stored.metadata.resourceVersion = cluster.nextRV(); // our copy is stale: conflict, then a GET
    await lease.sync(signal);
    assert.equal(renewals().at(-1), '2026-11-22T02:00:00.001000Z');
  });

  for (const stepMs of [-H, 2 * H]) {
    it(`reports an unchanged status every 5 min across a ${stepMs / H} h step, as without`, async () => {
      const { cluster, clock, round } = nodeAgentHarness();
      await round(); // registration + first report
      const patches = () => cluster.calls().filter((c) => c === `PATCH ${NODE}/status`).length;
      assert.equal(patches(), 1);
      clock.nowMs += 10_000;
      clock.stepWall(stepMs);
      await round();
      assert.equal(patches(), 1, 'nothing changed and the report is not due');
      clock.nowMs += 5 * 60_000 - 10_000;
      await round();
      assert.equal(patches(), 2, 'due 5 min after the last report');
    });
  }
});
