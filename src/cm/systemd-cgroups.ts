/**
 * Cgroups under the systemd driver (upstream cgroup_manager_linux.go with libcontainer's systemd
 * manager, runc libcontainer/cgroups/systemd v1.go and v2.go): every level of a slice path
 * (`/kubepods.slice/kubepods-burstable.slice/…`) is a transient slice unit that systemd makes and
 * sizes; then, as runc does after starting the unit, the directories systemd does not manage
 * (v1 cpuset, hugetlb, …) are made and the exact values written to the cgroup files. Destroy kills
 * what is left (SIGKILL), stops the unit and removes leftover directories. Reads go straight to
 * the files.
 */
import path from 'node:path';
import { KubeletError } from '../util/errors.ts';
import { sleep } from '../util/abort.ts';
import { backoffSteps } from '../util/backoff.ts';
import type { Logger } from '../util/logger.ts';
import type { Cgroups } from './cgroupfs.ts';
import type { CgroupFsOps } from './cgroupfs-ops.ts';
import type { CgroupLayout, Hierarchy } from './cgroup-layout.ts';
import type { ResourceConfig } from './resources.ts';
import { ROOT_SLICE, resourceProperties, sliceBaseProperties, type SystemdUnits } from './systemd-units.ts';

/** How long a started slice may take to appear in cgroupfs (runc waits 30 s for the job). */
const SLICE_APPEAR_TIMEOUT_MS = 30_000;

/** The hierarchy systemd keeps its tree in: the v2 one, or v1's name=systemd. */
function systemdHierarchy(layout: CgroupLayout): Hierarchy {
  const h =
    layout.hierarchies.find((x) => x.kind === 'v2' && !x.hybrid) ??
    layout.hierarchies.find((x) => x.kind === 'v1' && x.controllers.has('systemd')) ??
    layout.hierarchies.find((x) => x.kind === 'v2');
  if (!h) {
    throw new KubeletError(
      'FailedPrecondition',
      'systemd cgroup driver',
      'no cgroup hierarchy managed by systemd is mounted (neither cgroup2 nor name=systemd)',
    );
  }
  return h;
}

/** `/a.slice/a-b.slice` → ['a.slice', 'a-b.slice']; every component must be a slice. */
function sliceUnits(name: string): string[] {
  const parts = name.split('/').filter((p) => p !== '');
  for (const p of parts) {
    if (!p.endsWith('.slice')) {
      throw new KubeletError(
        'InvalidArgument',
        `systemd cgroup ${name}`,
        `${JSON.stringify(p)} is not a slice: with the systemd driver every cgroup level is a .slice`,
      );
    }
  }
  return parts;
}

export function createSystemdCgroups(
  base: Cgroups,
  units: SystemdUnits,
  ops: CgroupFsOps,
  log: Logger,
): Cgroups {
  const layout = base.layout;
  const probe = systemdHierarchy(layout);
  const version = probe.kind === 'v2' ? 2 : 1;

  async function appeared(slicePath: string, unit: string, signal?: AbortSignal): Promise<void> {
    const dir = path.join(probe.dir, slicePath);
    const delays = backoffSteps({ initialMs: 5, maxMs: 500 });
    const deadline = Date.now() + SLICE_APPEAR_TIMEOUT_MS;
    while (!(await ops.exists(dir))) {
      if (Date.now() > deadline) {
        throw new KubeletError(
          'DeadlineExceeded',
          `start systemd slice ${unit}`,
          `its cgroup ${dir} did not appear within ${SLICE_APPEAR_TIMEOUT_MS / 1000}s`,
        );
      }
      await sleep(delays.step(), signal);
    }
  }

  /** Starts each missing slice down to `name`; the leaf gets `resources` as unit properties. */
  async function ensureSlices(name: string, resources: ResourceConfig, signal?: AbortSignal): Promise<void> {
    const slices = sliceUnits(name);
    for (let i = 0; i < slices.length; i++) {
      signal?.throwIfAborted();
      const unit = slices[i] as string;
      const parent = i === 0 ? ROOT_SLICE : (slices[i - 1] as string);
      const slicePath = `/${slices.slice(0, i + 1).join('/')}`;
      const leaf = i === slices.length - 1;
      const values = leaf ? resourceProperties(resources, version) : [];
      if (await ops.exists(path.join(probe.dir, slicePath))) {
        if (values.length > 0) await units.setProperties(unit, values, signal);
        continue;
      }
      const started = await units.startSlice(
        unit,
        parent,
        [...sliceBaseProperties(parent, version), ...values],
        signal,
      );
      if (started === 'exists' && values.length > 0) await units.setProperties(unit, values, signal);
      await appeared(slicePath, unit, signal);
    }
  }

  return {
    layout,
    exists: (name) => base.exists(name),
    existsAnywhere: (name) => base.existsAnywhere(name),
    children: (name) => base.children(name),
    pids: (name) => base.pids(name),
    killAll: (name) => base.killAll(name),
    async apply(name, resources, signal) {
      await ensureSlices(name, resources, signal);
      // The directories systemd does not manage, and the exact values in the files.
      await base.apply(name, resources, signal);
    },
    async destroy(name, signal) {
      const slices = sliceUnits(name);
      const unit = slices.at(-1);
      if (unit === undefined) {
        throw new KubeletError('InvalidArgument', 'destroy cgroup', 'refusing to remove a hierarchy root');
      }
      await base.killAll(name);
      await units.stopUnit(unit, signal);
      log.debug('stopped systemd slice', { unit });
      await base.destroy(name, signal);
    },
  };
}
