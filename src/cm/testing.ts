/**
 * Test helpers for this folder (not exported from index.ts): a fake cgroupfs in a temporary
 * directory that behaves like the kernel's where our code can tell: new cgroups come with their
 * control files, cpuset files start empty, cgroup v2 children see the controllers their parent
 * enabled (existing children too, with the controller's files), `cgroup.subtree_control` takes
 * `+ctrl` writes, rmdir refuses a cgroup with children or
 * tasks, and a kill removes the pid from every cgroup.procs.
 */
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { mkdtemp, mkdir, readFile, readdir, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach } from 'node:test';
import { nodeCgroupFs, type CgroupFsOps } from './cgroupfs-ops.ts';
import type { SystemdUnits, UnitProperty } from './systemd-units.ts';
import type { ContainerManagerOptions } from './container-manager.ts';
import { nullLogger } from '../util/logger.ts';

export type FakeLayout = 'v1' | 'v1-comounted' | 'v2';

/** Control files a v1 cgroup gets, with their kernel defaults, per hierarchy type. */
const V1_FILES: Record<string, Record<string, string>> = {
  cpu: { 'cpu.shares': '1024', 'cpu.cfs_quota_us': '-1', 'cpu.cfs_period_us': '100000' },
  cpuset: { 'cpuset.cpus': '', 'cpuset.mems': '' },
  memory: { 'memory.limit_in_bytes': '9223372036854771712' },
  pids: { 'pids.max': 'max' },
  hugetlb: {
    'hugetlb.1GB.limit_in_bytes': '9223372036854771712',
    'hugetlb.2MB.limit_in_bytes': '9223372036854771712',
    'hugetlb.2MB.rsvd.limit_in_bytes': '9223372036854771712',
    'hugetlb.2MB.usage_in_bytes': '0',
  },
};
const V2_FILES: Record<string, Record<string, string>> = {
  cpu: { 'cpu.weight': '100', 'cpu.max': 'max 100000' },
  memory: { 'memory.max': 'max' },
  pids: { 'pids.max': 'max' },
  hugetlb: {
    'hugetlb.1GB.max': 'max',
    'hugetlb.2MB.max': 'max',
    'hugetlb.2MB.rsvd.max': 'max',
    'hugetlb.2MB.current': '0',
  },
};

function errno(code: string, message: string): NodeJS.ErrnoException {
  const err: NodeJS.ErrnoException = new Error(`${code}: ${message}`);
  err.code = code;
  return err;
}

export interface FakeCgroupFs {
  /** The fake /sys/fs/cgroup. */
  root: string;
  ops: CgroupFsOps;
  /** Every kill, in order. */
  kills: { pid: number; signal: string }[];
  /** Puts a task into a cgroup directory (relative to `root`, e.g. `memory/kubepods/pod1`). */
  addTask(dir: string, pid: number): Promise<void>;
  /** Reads a file relative to `root`, trimmed; undefined when missing. */
  read(file: string): Promise<string | undefined>;
  exists(file: string): Promise<boolean>;
  /** Directories (relative to `root`) that exist for a cgroup name, e.g. `/kubepods/pod1`. */
  dirsOf(name: string): Promise<string[]>;
  close(): Promise<void>;
}

async function has(p: string): Promise<boolean> {
  return stat(p).then(
    () => true,
    () => false,
  );
}

function allDirsSync(dir: string): string[] {
  const out = [dir];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    if (e.isDirectory()) out.push(...allDirsSync(path.join(dir, e.name)));
  }
  return out;
}

/**
 * A fake cgroupfs: `v1` is this VM's layout (one mount per controller, name=systemd, and a hybrid
 * cgroup2 mount at `unified` holding only hugetlb); `v1-comounted` has `cpu,cpuacct` (with the
 * usual `cpu` and `cpuacct` symlinks) and a v1 `hugetlb` hierarchy; `v2` is a unified hierarchy
 * with cpu, memory, hugetlb, pids and more. Page sizes 2MB and 1GB; `hugetlb: false` leaves the
 * hugetlb controller out of `v1-comounted` and `v2`.
 */
export async function createFakeCgroupFs(
  layout: FakeLayout,
  opts: { hugetlb?: boolean } = {},
): Promise<FakeCgroupFs> {
  const hugetlb = opts.hugetlb ?? true;
  const root = await mkdtemp(path.join(tmpdir(), 'tskubelet-cgroupfs-'));
  const kills: { pid: number; signal: string }[] = [];

  async function makeRootV1(name: string, kinds: string[]): Promise<void> {
    const dir = path.join(root, name);
    await mkdir(dir);
    await writeFile(path.join(dir, 'cgroup.procs'), '1\n');
    for (const k of kinds) {
      for (const [f, v] of Object.entries(V1_FILES[k] ?? {})) await writeFile(path.join(dir, f), v);
    }
    if (kinds.includes('cpuset')) {
      await writeFile(path.join(dir, 'cpuset.cpus'), '0-1\n');
      await writeFile(path.join(dir, 'cpuset.mems'), '0\n');
    }
  }

  if (layout === 'v2') {
    await writeFile(path.join(root, 'cgroup.procs'), '1\n');
    const controllers = `cpuset cpu io memory ${hugetlb ? 'hugetlb ' : ''}pids rdma misc`;
    await writeFile(path.join(root, 'cgroup.controllers'), `${controllers}\n`);
    await writeFile(path.join(root, 'cgroup.subtree_control'), '');
  } else {
    if (layout === 'v1') {
      await makeRootV1('cpu', ['cpu']);
      await makeRootV1('cpuacct', []);
    } else {
      await makeRootV1('cpu,cpuacct', ['cpu']);
      await symlink('cpu,cpuacct', path.join(root, 'cpu'));
      await symlink('cpu,cpuacct', path.join(root, 'cpuacct'));
      if (hugetlb) await makeRootV1('hugetlb', ['hugetlb']);
    }
    for (const c of ['cpuset', 'memory', 'pids']) await makeRootV1(c, [c]);
    for (const c of ['blkio', 'devices', 'freezer', 'systemd']) await makeRootV1(c, []);
    const unified = path.join(root, 'unified');
    await mkdir(unified);
    await writeFile(path.join(unified, 'cgroup.procs'), '');
    await writeFile(path.join(unified, 'cgroup.controllers'), 'hugetlb\n');
    await writeFile(path.join(unified, 'cgroup.subtree_control'), '');
  }

  const ops: CgroupFsOps = {
    ...nodeCgroupFs,
    async writeFile(file, data) {
      if (!(await has(path.dirname(file)))) throw errno('ENOENT', file);
      if (path.basename(file) === 'cgroup.subtree_control') {
        const dir = path.dirname(file);
        const available = (await readFile(path.join(dir, 'cgroup.controllers'), 'utf8')).split(/\s+/);
        const enabled = new Set((await readFile(file, 'utf8')).split(/\s+/).filter((c) => c !== ''));
        for (const token of data.split(/\s+/).filter((t) => t !== '')) {
          const c = token.slice(1);
          if (!available.includes(c)) throw errno('ENOENT', `controller ${c} not available in ${dir}`);
          if (token.startsWith('+')) enabled.add(c);
          else enabled.delete(c);
        }
        await writeFile(file, [...enabled].sort().join(' '));
        // As the kernel: existing children get the controller and its interface files.
        for (const e of await readdir(dir, { withFileTypes: true })) {
          if (!e.isDirectory()) continue;
          const child = path.join(dir, e.name);
          await writeFile(path.join(child, 'cgroup.controllers'), [...enabled].sort().join(' '));
          for (const c of enabled) {
            for (const [f, v] of Object.entries(V2_FILES[c] ?? {})) {
              if (!(await has(path.join(child, f)))) await writeFile(path.join(child, f), v);
            }
          }
        }
        return;
      }
      if (path.basename(file) === 'cpu.shares' && Number(data) < 2) throw errno('EINVAL', file);
      await writeFile(file, data);
    },
    async mkdir(dir) {
      const parent = path.dirname(dir);
      if (!(await has(path.join(parent, 'cgroup.procs')))) throw errno('ENOENT', `${parent} is not a cgroup`);
      if (await has(dir)) return false;
      await mkdir(dir);
      await writeFile(path.join(dir, 'cgroup.procs'), '');
      if (await has(path.join(parent, 'cgroup.controllers'))) {
        const enabled = (await readFile(path.join(parent, 'cgroup.subtree_control'), 'utf8')).trim();
        await writeFile(path.join(dir, 'cgroup.controllers'), enabled);
        await writeFile(path.join(dir, 'cgroup.subtree_control'), '');
        for (const c of enabled.split(/\s+/)) {
          for (const [f, v] of Object.entries(V2_FILES[c] ?? {})) await writeFile(path.join(dir, f), v);
        }
        return true;
      }
      for (const files of Object.values(V1_FILES)) {
        for (const [f, v] of Object.entries(files)) {
          if (await has(path.join(parent, f))) await writeFile(path.join(dir, f), v);
        }
      }
      return true;
    },
    async rmdir(dir) {
      if (!(await has(dir))) throw errno('ENOENT', dir);
      const entries = await readdir(dir, { withFileTypes: true });
      if (entries.some((e) => e.isDirectory())) throw errno('EBUSY', `${dir} has child cgroups`);
      if ((await readFile(path.join(dir, 'cgroup.procs'), 'utf8')).trim() !== '') {
        throw errno('EBUSY', `${dir} has tasks`);
      }
      await rm(dir, { recursive: true });
    },
    kill(pid, signal) {
      kills.push({ pid, signal });
      // The process dies at once: it leaves every cgroup (synchronous, so tests need no waiting).
      for (const d of allDirsSync(root)) {
        const procs = path.join(d, 'cgroup.procs');
        if (!existsSync(procs)) continue;
        const lines = readFileSync(procs, 'utf8')
          .split('\n')
          .filter((l) => l.trim() !== '');
        const left = lines.filter((l) => Number(l) !== pid);
        if (left.length !== lines.length) writeFileSync(procs, left.map((l) => `${l}\n`).join(''));
      }
    },
  };

  return {
    root,
    ops,
    kills,
    async addTask(dir, pid) {
      const procs = path.join(root, dir, 'cgroup.procs');
      const current = await readFile(procs, 'utf8');
      await writeFile(procs, `${current}${pid}\n`);
    },
    async read(file) {
      return readFile(path.join(root, file), 'utf8').then(
        (t) => t.trim(),
        () => undefined,
      );
    },
    exists: (file) => has(path.join(root, file)),
    async dirsOf(name) {
      if (layout === 'v2') return (await has(path.join(root, name))) ? [name] : [];
      const out: string[] = [];
      for (const e of await readdir(root, { withFileTypes: true })) {
        if (!e.isDirectory()) continue;
        const rel = path.join(e.name, name);
        if (await has(path.join(root, rel))) out.push(rel);
      }
      return out.sort();
    },
    close: () => rm(root, { recursive: true, force: true }),
  };
}

/** One call the fake systemd received. */
export type FakeSystemdCall =
  | { method: 'StartTransientUnit'; unit: string; properties: Record<string, unknown> }
  | { method: 'SetUnitProperties'; unit: string; properties: Record<string, unknown> }
  | { method: 'StopUnit'; unit: string };

export interface FakeSystemd extends SystemdUnits {
  calls: FakeSystemdCall[];
  /** Units it knows (started and not stopped). */
  units: Set<string>;
  /** Makes version() fail (systemd not on the bus). */
  unreachable: boolean;
}

/** `a-b-c.slice` → `/a.slice/a-b.slice/a-b-c.slice` (systemd's slice nesting). */
function expandSlice(unit: string): string {
  const parts = unit.slice(0, -'.slice'.length).split('-');
  return `/${parts.map((_, i) => `${parts.slice(0, i + 1).join('-')}.slice`).join('/')}`;
}

/**
 * A fake systemd for the systemd driver on a fake cgroupfs: a started slice appears (as systemd
 * makes it) in the v2 tree, with cpu, io, memory and pids enabled down to it, or in the v1
 * hierarchies systemd manages (name=systemd, cpu, cpuacct, memory, pids, blkio: not cpuset or
 * hugetlb);
 * a stopped slice's directories go when they are empty.
 */
export function createFakeSystemd(fake: FakeCgroupFs, layout: FakeLayout): FakeSystemd {
  const calls: FakeSystemdCall[] = [];
  const units = new Set<string>();
  const props = (list: readonly UnitProperty[]) => Object.fromEntries(list.map((p) => [p.name, p.value]));
  const managedDirs = async (): Promise<string[]> => {
    if (layout === 'v2') return [fake.root];
    const out: string[] = [];
    for (const e of await readdir(fake.root, { withFileTypes: true })) {
      if (e.isDirectory() && !['cpuset', 'hugetlb', 'unified'].includes(e.name))
        out.push(path.join(fake.root, e.name));
    }
    return out;
  };
  const self: FakeSystemd = {
    calls,
    units,
    unreachable: false,
    version() {
      if (self.unreachable)
        return Promise.reject(new Error('Failed to connect to bus: No such file or directory'));
      return Promise.resolve('252.30-1~deb12u2');
    },
    async startSlice(unit, _parent, properties) {
      calls.push({ method: 'StartTransientUnit', unit, properties: props(properties) });
      if (units.has(unit)) return 'exists';
      units.add(unit);
      for (const base of await managedDirs()) {
        let dir = base;
        for (const part of expandSlice(unit)
          .split('/')
          .filter((p) => p !== '')) {
          if (layout === 'v2') {
            for (const c of ['cpu', 'io', 'memory', 'pids']) {
              await fake.ops.writeFile(path.join(dir, 'cgroup.subtree_control'), `+${c}`);
            }
          }
          dir = path.join(dir, part);
          await fake.ops.mkdir(dir);
        }
      }
      return 'started';
    },
    setProperties(unit, properties) {
      calls.push({ method: 'SetUnitProperties', unit, properties: props(properties) });
      return Promise.resolve();
    },
    async stopUnit(unit) {
      calls.push({ method: 'StopUnit', unit });
      units.delete(unit);
      for (const base of await managedDirs()) {
        // systemd removes the slice's cgroup when it can; a busy one stays for the kubelet's rmdir.
        await fake.ops.rmdir(path.join(base, expandSlice(unit))).catch(() => undefined);
      }
    },
  };
  return self;
}

/**
 * For a test file whose tests work on fake trees: called once at its top level, it returns
 * {@link createFakeCgroupFs}, and every tree a test makes with it is removed after that test.
 */
export function fakeCgroupFsPerTest(): typeof createFakeCgroupFs {
  const made: FakeCgroupFs[] = [];
  afterEach(async () => {
    for (const fake of made.splice(0)) await fake.close();
  });
  return async (layout, opts) => {
    const fake = await createFakeCgroupFs(layout, opts);
    made.push(fake);
    return fake;
  };
}

/**
 * Container manager options for the tests on a fake cgroupfs: pod cgroups on, cgroupfs driver at
 * `/`, no pids limit, CFS quota with a 100 ms period, `pods` enforced, a 2-CPU 8 GiB node with
 * 32768 tasks; `overrides` replace any of it.
 */
export function fakeContainerManagerOptions(
  fake: FakeCgroupFs,
  overrides: Partial<ContainerManagerOptions> = {},
): ContainerManagerOptions {
  return {
    cgroupsPerQOS: true,
    cgroupRoot: '/',
    cgroupDriver: 'cgroupfs',
    podPidsLimit: -1,
    cpuCFSQuota: true,
    cpuCFSQuotaPeriodMs: 100,
    enforceNodeAllocatable: ['pods'],
    nodeCapacity: () => ({ milliCPU: 2000, memory: 8 * 2 ** 30 }),
    maxPids: () => Promise.resolve(32_768),
    logger: nullLogger,
    cgroupFsRoot: fake.root,
    fs: fake.ops,
    ...overrides,
  };
}
