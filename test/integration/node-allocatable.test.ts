// Node allocatable on the host bed (cgroup v1, cgroupfs driver, real containerd): kubepods sized to
// capacity − systemReserved − kubeReserved, and system-reserved enforced on an existing cgroup.
// Upstream counterpart: pkg/kubelet/cm/node_container_manager_linux.go.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, readFile, readdir, rmdir, stat } from 'node:fs/promises';
import { availableParallelism, totalmem } from 'node:os';
import { join } from 'node:path';
import { milliCPUToShares } from '../../src/cm/index.ts';
import { setupEnv, type Env } from '../kit/bed.ts';
import { eventually } from '../kit/poll.ts';
import { startKubelet, type RunningKubelet } from './support.ts';

const CGROUP = '/sys/fs/cgroup';
/** A cgroup this test makes and removes, standing in for systemd's /system.slice. */
const SYSTEM = 'tskubelet-itest-system.slice';
const GI = 2 ** 30;
const MI = 2 ** 20;

async function read(file: string): Promise<string | undefined> {
  return readFile(file, 'utf8').then(
    (t) => t.trim(),
    () => undefined,
  );
}

async function hierarchies(): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(CGROUP, { withFileTypes: true })) {
    const procs = await stat(join(CGROUP, e.name, 'cgroup.procs')).then(
      () => true,
      () => false,
    );
    if (e.isDirectory() && procs) out.push(e.name);
  }
  return out;
}

describe('node allocatable on the host bed (cgroup v1, cgroupfs)', () => {
  let env: Env;
  let k: RunningKubelet | undefined;
  before(async () => {
    env = await setupEnv();
    for (const h of await hierarchies()) await mkdir(join(CGROUP, h, SYSTEM), { recursive: true });
  });
  after(async () => {
    await k?.stop();
    await env?.close();
    for (const h of await hierarchies()) {
      await rmdir(join(CGROUP, h, SYSTEM)).catch((err: unknown) => {
        // Left behind only if something joined it; the next run reuses it.
        console.error(`cannot remove ${h}/${SYSTEM}: ${String(err)}`);
      });
    }
  });

  it('limits kubepods to capacity − reserved and the system-reserved cgroup to its reservation', async () => {
    k = await startKubelet(env, {
      config: {
        systemReserved: { cpu: '500m', memory: '1Gi' },
        kubeReserved: { memory: '512Mi' },
        enforceNodeAllocatable: ['pods', 'system-reserved'],
        systemReservedCgroup: `/${SYSTEM}`,
      },
    });
    const memory = String(totalmem() - GI - 512 * MI);
    await eventually(
      'kubepods memory limit',
      async () =>
        (await read(join(CGROUP, 'memory/kubepods/memory.limit_in_bytes'))) === memory ? true : undefined,
      30_000,
      () => read(join(CGROUP, 'memory/kubepods/memory.limit_in_bytes')),
    );
    assert.equal(
      await read(join(CGROUP, 'cpu/kubepods/cpu.shares')),
      String(milliCPUToShares(availableParallelism() * 1000 - 500)),
    );
    await eventually('system-reserved memory limit', async () =>
      (await read(join(CGROUP, 'memory', SYSTEM, 'memory.limit_in_bytes'))) === String(GI) ? true : undefined,
    );
    assert.equal(await read(join(CGROUP, 'cpu', SYSTEM, 'cpu.shares')), '512');
  });
});
