import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { containerScrapeError, cpuTopology, machineMetrics } from './machine-metrics.ts';

describe("cadvisor's machine metrics", () => {
  it('counts physical cores and sockets from the sysfs topology', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tsk-cpu-'));
    try {
      // 2 packages x 2 cores x 2 threads
      for (let cpu = 0; cpu < 8; cpu++) {
        const t = join(dir, `cpu${cpu}`, 'topology');
        await mkdir(t, { recursive: true });
        await writeFile(join(t, 'physical_package_id'), `${cpu >> 2}\n`);
        await writeFile(join(t, 'core_id'), `${(cpu >> 1) & 1}\n`);
      }
      await mkdir(join(dir, 'cpufreq'));
      assert.deepEqual(await cpuTopology(dir), { physicalCores: 4, sockets: 2 });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('labels each family with the boot, machine and system IDs, and leaves out what is unknown', () => {
    const text = machineMetrics({
      numCores: 8,
      memoryCapacityBytes: 1024,
      machineID: 'm',
      systemUUID: 's',
      bootID: 'b',
      physicalCores: undefined,
      sockets: 2,
    });
    assert.match(text, /^machine_cpu_cores\{boot_id="b",machine_id="m",system_uuid="s"\} 8$/m);
    assert.match(text, /^machine_memory_bytes\{boot_id="b",machine_id="m",system_uuid="s"\} 1024$/m);
    assert.match(text, /^# HELP machine_cpu_sockets Number of CPU sockets\.$/m);
    assert.doesNotMatch(text, /machine_cpu_physical_cores/);
    assert.match(text, /^machine_scrape_error 0$/m);
  });

  it('says a scrape error of the machine or the containers with 1', () => {
    assert.equal(
      machineMetrics(undefined),
      '# HELP machine_scrape_error 1 if there was an error while getting machine metrics, 0 otherwise.\n' +
        '# TYPE machine_scrape_error gauge\nmachine_scrape_error 1\n',
    );
    assert.match(containerScrapeError(true), /^container_scrape_error 1$/m);
    assert.match(containerScrapeError(false), /^container_scrape_error 0$/m);
  });
});
