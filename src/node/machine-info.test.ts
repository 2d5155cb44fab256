import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  osImageFrom,
  parseMemTotal,
  parseOsRelease,
  readMachineInfo,
  type MachineReaders,
} from './machine-info.ts';

const MEMINFO = `MemTotal:       24576000 kB
MemFree:        20000000 kB
MemAvailable:   22000000 kB
HugePages_Total:       0
`;

const OS_RELEASE = `PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"
NAME="Debian GNU/Linux"
VERSION_ID="12"
# a comment
ID=debian
HOME_URL='https://www.debian.org/'
`;

function readers(files: Record<string, string>, over: Partial<MachineReaders> = {}): MachineReaders {
  return {
    readFile: (p) =>
      p in files ? Promise.resolve(files[p] ?? '') : Promise.reject(new Error(`ENOENT ${p}`)),
    readDir: (p) =>
      p === '/sys/kernel/mm/hugepages'
        ? Promise.resolve(['hugepages-2048kB', 'hugepages-1048576kB'])
        : Promise.reject(new Error(`ENOENT ${p}`)),
    statfs: () => Promise.resolve({ bsize: 4096, blocks: 1000 }),
    cpuCount: () => 2,
    kernelRelease: () => '6.1.0-test',
    totalMemBytes: () => 1,
    ...over,
  };
}

describe('machine info parsing', () => {
  it('reads MemTotal from /proc/meminfo in bytes', () => {
    assert.equal(parseMemTotal(MEMINFO), 24576000 * 1024);
    assert.equal(parseMemTotal('MemFree: 1 kB\n'), undefined);
  });

  it('parses os-release with quotes and comments; PRETTY_NAME is the OS image', () => {
    const r = parseOsRelease(OS_RELEASE);
    assert.equal(r['PRETTY_NAME'], 'Debian GNU/Linux 12 (bookworm)');
    assert.equal(r['ID'], 'debian');
    assert.equal(r['HOME_URL'], 'https://www.debian.org/');
    assert.equal(osImageFrom(OS_RELEASE), 'Debian GNU/Linux 12 (bookworm)');
    assert.equal(osImageFrom(undefined), 'Linux');
    assert.equal(osImageFrom('ID=x\n'), 'Linux');
  });

  it('gathers ids, capacity and huge pages from the host files', async () => {
    const info = await readMachineInfo(
      '/var/lib/kubelet',
      readers({
        '/proc/meminfo': MEMINFO,
        '/etc/os-release': OS_RELEASE,
        '/etc/machine-id': 'abc123\n',
        '/proc/sys/kernel/random/boot_id': 'boot-uuid\n',
        '/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages': '4\n',
        '/sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages': '0\n',
      }),
    );
    assert.deepEqual(info, {
      numCores: 2,
      memoryCapacityBytes: 24576000 * 1024,
      machineID: 'abc123',
      systemUUID: '', // product_uuid unreadable (not root): empty, as upstream
      bootID: 'boot-uuid',
      kernelVersion: '6.1.0-test',
      osImage: 'Debian GNU/Linux 12 (bookworm)',
      rootfsCapacityBytes: 4096 * 1000,
      hugePages: [
        { pageSizeKiB: 1048576, numPages: 0 },
        { pageSizeKiB: 2048, numPages: 4 },
      ],
    });
  });

  it('leaves ephemeral storage unknown when the root dir cannot be stat-ed, and falls back for memory', async () => {
    const info = await readMachineInfo(
      '/nope',
      readers({}, { statfs: () => Promise.reject(new Error('ENOENT')), totalMemBytes: () => 4096 }),
    );
    assert.equal(info.rootfsCapacityBytes, undefined);
    assert.equal(info.memoryCapacityBytes, 4096);
    assert.equal(info.osImage, 'Linux');
    assert.equal(info.machineID, '');
  });

  it('reads this machine without throwing', async () => {
    const info = await readMachineInfo('/');
    assert.ok(info.numCores > 0);
    assert.ok(info.memoryCapacityBytes > 0);
    assert.ok(info.rootfsCapacityBytes !== undefined && info.rootfsCapacityBytes > 0);
  });
});
