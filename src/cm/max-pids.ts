/** The node's task limit (upstream pidlimit), the kubepods cgroup's pids.max when node capacity names none. */
import * as fsp from 'node:fs/promises';
import path from 'node:path';

/**
 * The node's task limit: the lower of kernel.pid_max and kernel.threads-max (the kernel refuses a
 * task beyond either). Newer upstream pidlimit reads both; the 1.20.2 kubelet takes pid_max alone
 * (measured on the node VM: test/node-vm/upstream-baseline.test.ts).
 */
export async function readMaxPids(procRoot = '/proc'): Promise<number | undefined> {
  const values: number[] = [];
  for (const f of ['sys/kernel/pid_max', 'sys/kernel/threads-max']) {
    const n = Number((await fsp.readFile(path.join(procRoot, f), 'utf8').catch(() => '')).trim());
    if (Number.isInteger(n) && n > 0) values.push(n);
  }
  return values.length > 0 ? Math.min(...values) : undefined;
}
