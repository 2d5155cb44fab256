import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { collectGarbage, delayMeter } from './stall-meter.ts';

/** Holds the event loop while burning `ms` of this thread's CPU time (however long that takes on the wall). */
function burnCpu(ms: number): void {
  const cpu = () => {
    const u = process.threadCpuUsage();
    return (u.user + u.system) / 1000;
  };
  const until = cpu() + ms;
  while (cpu() < until) {
    // spin
  }
}

/** Holds the event loop for `ms` of wall time without using the CPU, as a thread waiting for a core does. */
function blockWithoutCpu(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

describe('the event-loop stall meter', () => {
  it('counts synchronous work on the main thread as a stall', async () => {
    const meter = delayMeter();
    await sleep(30);
    burnCpu(150);
    await sleep(30);
    const d = meter.stop();
    assert.ok(d.maxMs >= 120, `a 150 ms CPU-bound block seen as ${d.maxMs} ms`);
  });

  it('does not count time the thread spends off the CPU, which the wall clock does', async () => {
    const meter = delayMeter();
    await sleep(30);
    blockWithoutCpu(200);
    await sleep(30);
    const d = meter.stop();
    assert.ok(d.wallMaxMs >= 150, `the wall clock sees the 200 ms block: ${d.wallMaxMs} ms`);
    assert.ok(d.maxMs < 50, `the CPU clock does not: ${d.maxMs} ms`);
  });

  it('reports the garbage collections inside the stretch and how many ticks it measured', async () => {
    const t0 = performance.now();
    const meter = delayMeter();
    await sleep(50);
    collectGarbage();
    await sleep(50);
    const d = meter.stop();
    const elapsedMs = performance.now() - t0;
    assert.ok(
      d.gcTotalMs > 0 && d.gcMaxMs > 0,
      `a full GC inside the stretch: max ${d.gcMaxMs}, sum ${d.gcTotalMs}`,
    );
    assert.ok(d.gcMaxMs <= d.gcTotalMs);
    // At least one tick per sleep and the last sample; at most one per 10 ms that passed (and the last).
    assert.ok(
      d.samples >= 3 && d.samples <= Math.floor(elapsedMs / 10) + 2,
      `${d.samples} ticks in ${elapsedMs.toFixed(0)} ms`,
    );
  });
});
