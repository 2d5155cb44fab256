/**
 * The mounted cgroup hierarchies under a root (normally /sys/fs/cgroup), the way runc's cgroupfs
 * manager sees them:
 *
 * - cgroup v1: one directory per mounted hierarchy (`cpu`, `cpu,cpuacct`, `memory`, `systemd`
 *   for name=systemd, …). In hybrid mode the cgroup2 mount at `<root>/unified` (no v1 controllers
 *   to set) is a hierarchy too, since runc joins containers there.
 * - cgroup v2: one tree at the root.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { KubeletError } from '../util/errors.ts';
import { fsError, nodeCgroupFs, readControllers, type CgroupFsOps } from './cgroupfs-ops.ts';
import { compareStrings } from '../util/compare.ts';

/** One mounted hierarchy. */
export type Hierarchy =
  | {
      kind: 'v1';
      /** Absolute path of the mount, e.g. /sys/fs/cgroup/cpu,cpuacct. */
      dir: string;
      /** Controller names from the mount's directory name (`systemd` for name=systemd). */
      controllers: ReadonlySet<string>;
    }
  | {
      kind: 'v2';
      dir: string;
      /** Controllers available at the root of this hierarchy (its cgroup.controllers). */
      controllers: ReadonlySet<string>;
      /** The cgroup2 mount of a hybrid system (beside v1 hierarchies): directories only. */
      hybrid: boolean;
    };

export interface CgroupLayout {
  mode: 'v1' | 'hybrid' | 'v2';
  hierarchies: readonly Hierarchy[];
}

/**
 * Controllers whose directory must exist for a cgroup to count as existing (upstream cgroupV1impl
 * Validate allowlist; hugetlb only when mounted).
 */
const V1_REQUIRED = ['cpu', 'cpuacct', 'cpuset', 'memory', 'systemd', 'pids', 'hugetlb'];

/** Whether a cgroup must have its directory in `h` to count as existing. */
export function isRequired(h: Hierarchy): boolean {
  if (h.kind === 'v2') return !h.hybrid;
  return [...h.controllers].some((c) => V1_REQUIRED.includes(c));
}

/**
 * Finds the hierarchies under `root`: pure v2 when the root itself is a cgroup2 mount (it has
 * cgroup.controllers); otherwise every real directory below it that is a cgroup (has cgroup.procs)
 * is a v1 mount, except a cgroup2 one (hybrid mode). Symlinks (`cpu` → `cpu,cpuacct`) are skipped.
 */
export async function detectLayout(root: string, ops: CgroupFsOps = nodeCgroupFs): Promise<CgroupLayout> {
  const op = `detect cgroup hierarchies under ${root}`;
  try {
    if (await ops.exists(path.join(root, 'cgroup.controllers'))) {
      return {
        mode: 'v2',
        hierarchies: [
          { kind: 'v2', dir: root, controllers: await readControllers(ops, root), hybrid: false },
        ],
      };
    }
    const hierarchies: Hierarchy[] = [];
    const entries = (await ops.readdir(root))
      .filter((e) => e.isDirectory)
      .sort((a, b) => compareStrings(a.name, b.name));
    for (const e of entries) {
      const dir = path.join(root, e.name);
      if (!(await ops.exists(path.join(dir, 'cgroup.procs')))) continue;
      if (await ops.exists(path.join(dir, 'cgroup.controllers'))) {
        hierarchies.push({ kind: 'v2', dir, controllers: await readControllers(ops, dir), hybrid: true });
      } else {
        const controllers = new Set(e.name.split(',').map((c) => c.replace(/^name=/, '')));
        hierarchies.push({ kind: 'v1', dir, controllers });
      }
    }
    if (hierarchies.length === 0) {
      throw new KubeletError('FailedPrecondition', op, 'no cgroup hierarchy is mounted there');
    }
    const hybrid = hierarchies.some((h) => h.kind === 'v2');
    return { mode: hybrid ? 'hybrid' : 'v1', hierarchies };
  } catch (err) {
    throw fsError(err, op);
  }
}

/**
 * Whether the node runs a pure cgroup v2 hierarchy (upstream libcontainer IsCgroup2UnifiedMode,
 * which checks the mount's filesystem type; the root of a cgroup2 mount has cgroup.controllers).
 */
export function isCgroup2UnifiedMode(root = '/sys/fs/cgroup'): boolean {
  return existsSync(path.join(root, 'cgroup.controllers'));
}

/** Every controller a layout offers for writing values (the hybrid cgroup2 mount offers none). */
export function settableControllers(layout: CgroupLayout): Set<string> {
  const out = new Set<string>();
  for (const h of layout.hierarchies) {
    if (h.kind === 'v2' && h.hybrid) continue;
    for (const c of h.controllers) out.add(c);
  }
  return out;
}
