import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { Registry } from 'prom-client';
import { maxAddressSpace, registerProcessStartTime, registerVirtualMemoryMax } from './process-metrics.ts';

const LIMITS = `Limit                     Soft Limit           Hard Limit           Units
Max cpu time              unlimited            unlimited            seconds
Max address space         4294967296           unlimited            bytes
`;

describe('process metrics beside prom-client', () => {
  it('reads the soft address-space limit, unlimited as the largest uint64 as procfs does', () => {
    assert.equal(maxAddressSpace(LIMITS), 4294967296);
    assert.equal(maxAddressSpace(LIMITS.replace('4294967296', 'unlimited ')), 2 ** 64);
    assert.equal(maxAddressSpace('nothing'), undefined);
  });

  it('serves process_virtual_memory_max_bytes from the limits file, and nothing without one', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tsk-limits-'));
    try {
      const file = join(dir, 'limits');
      await writeFile(file, LIMITS);
      const r = new Registry();
      registerVirtualMemoryMax(r, file);
      assert.match(await r.metrics(), /^process_virtual_memory_max_bytes 4294967296$/m);
      const none = new Registry();
      registerVirtualMemoryMax(none, join(dir, 'absent'));
      assert.equal(await none.metrics(), '\n');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('gives the process start in whole Unix seconds, in the past', async () => {
    const r = new Registry();
    registerProcessStartTime(r);
    const v = Number(/^process_start_time_seconds (\d+)$/m.exec(await r.metrics())?.[1]);
    assert.ok(v > 1_600_000_000 && v <= Date.now() / 1000, String(v));
  });
});
