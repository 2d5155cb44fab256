/**
 * Timing of the cgroup manager's operations (upstream pkg/kubelet/cm/cgroup_manager_linux.go:
 * Create, Update and Destroy each observe kubelet_cgroup_manager_duration_seconds{operation_type},
 * failed or not). tskubelet has one `apply` for both: the first apply of a cgroup this process has
 * not made yet is a `create`, later ones are `update`s.
 */
import { monotonicNow } from '../util/clock.ts';
import type { Cgroups } from './cgroupfs.ts';

export type CgroupOperation = 'create' | 'update' | 'destroy';

/** `cg` with each apply and destroy timed into `observe` (seconds); the rest passed through. */
export function instrumentCgroups(
  cg: Cgroups,
  observe: (operation: CgroupOperation, seconds: number) => void,
  monotonic: () => number = monotonicNow,
): Cgroups {
  /** Cgroups applied by this process and not destroyed since. */
  const made = new Set<string>();
  async function timed(operation: CgroupOperation, run: () => Promise<void>): Promise<void> {
    const t0 = monotonic();
    try {
      await run();
    } finally {
      observe(operation, (monotonic() - t0) / 1000);
    }
  }
  return {
    layout: cg.layout,
    exists: (name) => cg.exists(name),
    existsAnywhere: (name) => cg.existsAnywhere(name),
    children: (name) => cg.children(name),
    pids: (name) => cg.pids(name),
    killAll: (name) => cg.killAll(name),
    apply: (name, resources, signal) =>
      timed(made.has(name) ? 'update' : 'create', async () => {
        await cg.apply(name, resources, signal);
        made.add(name);
      }),
    destroy: (name, signal) =>
      timed('destroy', async () => {
        made.delete(name);
        await cg.destroy(name, signal);
      }),
  };
}
