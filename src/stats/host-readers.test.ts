import assert from 'node:assert/strict';
import { link, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { qosCgroupNames } from '../cm/index.ts';
import { createCgroupReader } from './cgroups.ts';
import { createCpuRates } from './cpu-rates.ts';
import { deviceOf, diskUsage, parseMountinfo } from './fs-usage.ts';
import { parseKeyValues, parseNetDev, parseProcCgroup, parseProcStat, reportedInterfaces } from './procfs.ts';
import { renderFamilies } from './prom-text.ts';
import { cgroupV1Files, writeTree } from './testing.ts';
import { formatTime, toWireSummary } from './types.ts';

let dir = '';
before(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'stats-readers-'));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('procfs parsers', () => {
  it('counts busy CPU ticks (not idle or iowait) as nanoseconds, and reads the boot time', () => {
    const s = parseProcStat('cpu  100 20 30 1000 50 4 6 2 9 0\ncpu0 1 2 3 4\nbtime 1600000000\n');
    assert.equal(s.cpuBusyNs, (100 + 20 + 30 + 4 + 6 + 2) * 1e7);
    assert.equal(s.bootTimeMs, 1600000000_000);
  });

  it('reads meminfo in bytes and vmstat as counts', () => {
    const m = parseKeyValues('MemTotal:  100 kB\nInactive(file):   2 kB\npgfault 77\n');
    assert.equal(m.get('MemTotal'), 102400);
    assert.equal(m.get('Inactive(file)'), 2048);
    assert.equal(m.get('pgfault'), 77);
  });

  it('reads /proc/net/dev and leaves out the devices cadvisor ignores', () => {
    const all = parseNetDev(
      'h\nh\n    lo: 1 1 0 0 0 0 0 0 1 1 0 0 0 0 0 0\n  eth0: 10 2 3 0 0 0 0 0 20 4 5 0 0 0 0 0\n' +
        'docker0: 1 1 0 0 0 0 0 0 1 1 0 0 0 0 0 0\nvethab: 1 1 0 0 0 0 0 0 1 1 0 0 0 0 0 0\n',
    );
    assert.deepEqual(reportedInterfaces(all), [
      { name: 'eth0', rxBytes: 10, rxErrors: 3, txBytes: 20, txErrors: 5 },
    ]);
  });

  it('maps a process cgroup file by controller, v2 under the empty name', () => {
    const m = parseProcCgroup('5:cpu,cpuacct:/a\n4:name=systemd:/s\n0::/v2\n');
    assert.equal(m.get('cpuacct'), '/a');
    assert.equal(m.get('cpu'), '/a');
    assert.equal(m.get('systemd'), '/s');
    assert.equal(m.get(''), '/v2');
  });
});

describe('cgroup reader', () => {
  it('reads cgroup v1 usage, working set, limits and pod cgroups', async () => {
    const root = path.join(dir, 'v1');
    await writeTree(
      root,
      cgroupV1Files({
        '/kubepods': { cpuNs: 10, usage: 1000, inactiveFile: 100, limit: 5000, tasks: 4 },
        '/kubepods/podg1': { cpuNs: 1, usage: 1 },
        '/kubepods/burstable/podb1': { cpuNs: 1, usage: 1, procs: [77, 78] },
        '/kubepods/besteffort/notapod': { cpuNs: 1, usage: 1 },
      }),
    );
    const r = await createCgroupReader(root, () => 42);
    assert.ok(r);
    assert.equal(r.version, 1);
    const s = await r.read('/kubepods');
    assert.equal(s?.time, 42);
    assert.equal(s?.cpuUsageNs, 10);
    assert.deepEqual(s?.memory, {
      usageBytes: 1000,
      workingSetBytes: 900,
      rssBytes: 400,
      cacheBytes: 300,
      pageFaults: 77,
      majorPageFaults: 3,
      limitBytes: 5000,
    });
    assert.equal(s?.tasks, 4);
    assert.equal((await r.read('/kubepods/podg1'))?.memory?.limitBytes, undefined, 'unlimited');
    assert.equal(await r.read('/nope'), undefined);
    assert.deepEqual([...(await r.podCgroups(qosCgroupNames('/')))].sort(), [
      ['b1', '/kubepods/burstable/podb1'],
      ['g1', '/kubepods/podg1'],
    ]);
    assert.equal(await r.anyPid('/kubepods/burstable/podb1'), 77);
  });

  it('reads cgroup v2 files', async () => {
    const root = path.join(dir, 'v2');
    await writeTree(root, {
      'cgroup.controllers': 'cpu memory pids\n',
      'cgroup.procs': '',
      'kubepods/cpu.stat': 'usage_usec 1500\nuser_usec 1000\n',
      'kubepods/memory.current': '2000\n',
      'kubepods/memory.stat': 'anon 700\nfile 800\ninactive_file 500\npgfault 9\npgmajfault 1\n',
      'kubepods/memory.max': 'max\n',
      'kubepods/pids.current': '6\n',
    });
    const r = await createCgroupReader(root, () => 1);
    assert.equal(r?.version, 2);
    const s = await r?.read('/kubepods');
    assert.equal(s?.cpuUsageNs, 1_500_000);
    assert.deepEqual(s?.memory, {
      usageBytes: 2000,
      workingSetBytes: 1500,
      rssBytes: 700,
      cacheBytes: 800,
      pageFaults: 9,
      majorPageFaults: 1,
      limitBytes: undefined,
    });
    assert.equal(s?.tasks, 6);
  });

  it('is absent without a cgroup filesystem', async () => {
    assert.equal(await createCgroupReader(path.join(dir, 'none'), () => 0), undefined);
  });
});

describe('disk usage walk', () => {
  it('counts allocated bytes once per inode and every entry, and stops at its limit', async () => {
    const root = path.join(dir, 'du');
    await writeTree(root, { 'a/big': 'x'.repeat(20_000), 'a/b/small': 'y', c: '' });
    await link(path.join(root, 'a/big'), path.join(root, 'hard'));
    const u = await diskUsage(root);
    assert.equal(u.inodesUsed, 7, 'root, a, a/big, a/b, a/b/small, c, hard');
    assert.ok(u.usedBytes >= 20_000 && u.usedBytes < 40_000, `hard link counted once: ${u.usedBytes}`);
    assert.equal(u.truncated, false);
    const limited = await diskUsage(root, { maxEntries: 2, concurrency: 1 });
    assert.equal(limited.truncated, true);
    await assert.rejects(diskUsage(path.join(dir, 'missing')));
  });

  it('finds the device of a path from mountinfo', () => {
    const mounts = parseMountinfo(
      '22 1 8:1 / / rw - ext4 /dev/sda1 rw\n30 22 8:2 / /var/lib rw - xfs /dev/sdb1 rw\n31 22 0:5 / /var/lib\\040x rw - tmpfs tmpfs rw\n',
    );
    assert.equal(deviceOf(mounts, '/var/lib/containerd'), '/dev/sdb1');
    assert.equal(deviceOf(mounts, '/var/libx'), '/dev/sda1');
    assert.equal(deviceOf(mounts, '/var/lib x/y'), 'tmpfs');
  });
});

describe('CPU rates', () => {
  it('rates between samples, repeats a seen sample, restarts after a reset, forgets unswept keys', () => {
    const r = createCpuRates();
    assert.equal(r.rate('c', 1e9, 5e8, 1), undefined);
    assert.equal(r.rate('c', 3e9, 1.5e9, 2), 5e8);
    assert.equal(r.rate('c', 3e9, 1.5e9, 3), 5e8, 'the same sample again');
    assert.equal(r.rate('c', 4e9, 1e8, 4), undefined, 'counter went backwards');
    r.rate('d', 1, 1, 4);
    r.sweep(4);
    assert.equal(r.size(), 2);
    r.rate('c', 5e9, 2e8, 5);
    r.sweep(5);
    assert.equal(r.size(), 1);
  });
});

describe('Prometheus text and wire times', () => {
  it('escapes label values, sorts families, drops empty ones, writes timestamps', () => {
    const text = renderFamilies([
      {
        name: 'b',
        help: 'B',
        type: 'gauge',
        samples: [{ labels: { l: 'a"b\\c\nd' }, value: 1.5, timestampMs: 1234.4 }],
      },
      { name: 'a', help: 'A', type: 'counter', samples: [{ value: 2 }] },
      { name: 'c', help: 'C', type: 'gauge', samples: [] },
    ]);
    assert.equal(
      text,
      '# HELP a A\n# TYPE a counter\na 2\n# HELP b B\n# TYPE b gauge\nb{l="a\\"b\\\\c\\nd"} 1.5 1234\n',
    );
  });

  it('formats times as metav1.Time does: UTC, whole seconds', () => {
    assert.equal(formatTime(1_700_000_000_999), '2023-11-14T22:13:20Z');
    const w = toWireSummary({ node: { nodeName: 'n', startTime: 0, cpu: { time: 1000 } }, pods: [] });
    assert.deepEqual(w.node, {
      nodeName: 'n',
      startTime: '1970-01-01T00:00:00Z',
      cpu: { time: '1970-01-01T00:00:01Z' },
    });
  });
});
