/**
 * cadvisor's machine collector as /metrics/cadvisor serves it (upstream vendor/github.com/google/
 * cadvisor/metrics/prometheus_machine.go, registered by pkg/kubelet/server/server.go in 1.20):
 * machine_cpu_cores, machine_cpu_physical_cores, machine_cpu_sockets and machine_memory_bytes,
 * labelled with the machine's boot_id, machine_id and system_uuid, and machine_scrape_error; and
 * the container collector's container_scrape_error. The NVM families (Intel Optane through
 * libipmctl) are left out.
 */
import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { renderFamilies, type Family } from './prom-text.ts';

/** What the machine families report (src/node MachineInfo and the CPU topology). */
export interface MachineFacts {
  numCores: number;
  memoryCapacityBytes: number;
  machineID: string;
  systemUUID: string;
  bootID: string;
  /** Distinct (package, core) pairs; undefined when the topology cannot be read. */
  physicalCores: number | undefined;
  /** Distinct physical packages; undefined when the topology cannot be read. */
  sockets: number | undefined;
}

/**
 * The CPU topology from sysfs (`cpu<N>/topology/{physical_package_id,core_id}`), as cadvisor's
 * GetPhysicalCores / GetSockets count it; undefined when sysfs has no topology.
 */
export async function cpuTopology(
  cpuDir = '/sys/devices/system/cpu',
): Promise<{ physicalCores: number; sockets: number } | undefined> {
  const cpus = (await readdir(cpuDir)).filter((d) => /^cpu\d+$/.test(d));
  const cores = new Set<string>();
  const packages = new Set<string>();
  for (const cpu of cpus) {
    const read = (f: string) => readFile(join(cpuDir, cpu, 'topology', f), 'utf8').then((s) => s.trim());
    const [pkg, core] = await Promise.all([read('physical_package_id'), read('core_id')]);
    packages.add(pkg);
    cores.add(`${pkg}/${core}`);
  }
  return cores.size > 0 ? { physicalCores: cores.size, sockets: packages.size } : undefined;
}

/** cadvisor's container_scrape_error: 1 when the container stats could not be read. */
export function containerScrapeError(failed: boolean): string {
  return renderFamilies([
    {
      name: 'container_scrape_error',
      help: '1 if there was an error while getting container metrics, 0 otherwise',
      type: 'gauge',
      samples: [{ value: failed ? 1 : 0 }],
    },
  ]);
}

/** The machine families; only machine_scrape_error 1 when the machine could not be read. */
export function machineMetrics(m: MachineFacts | undefined): string {
  const scrapeError: Family = {
    name: 'machine_scrape_error',
    help: '1 if there was an error while getting machine metrics, 0 otherwise.',
    type: 'gauge',
    samples: [{ value: m ? 0 : 1 }],
  };
  if (!m) return renderFamilies([scrapeError]);
  const labels = { boot_id: m.bootID, machine_id: m.machineID, system_uuid: m.systemUUID };
  const gauge = (name: string, help: string, value: number | undefined): Family => ({
    name,
    help,
    type: 'gauge',
    samples: value === undefined ? [] : [{ labels, value }],
  });
  return renderFamilies([
    scrapeError,
    gauge('machine_cpu_physical_cores', 'Number of physical CPU cores.', m.physicalCores),
    gauge('machine_cpu_cores', 'Number of logical CPU cores.', m.numCores),
    gauge('machine_cpu_sockets', 'Number of CPU sockets.', m.sockets),
    gauge('machine_memory_bytes', 'Amount of memory installed on the machine.', m.memoryCapacityBytes),
  ]);
}
