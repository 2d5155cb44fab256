import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseKmsgRecord } from './kmsg-record.ts';
import { createOomParser, type OomInstance, type OomParser } from './oom-parser.ts';
import {
  KERNEL_4_CONTAINER_OOM,
  KERNEL_4_SYSTEM_OOM,
  KERNEL_5_SYSTEM_OOM,
  KERNEL_6_CONTAINER_OOM,
  kmsgRecords,
} from './testing.ts';

const BOOT = Date.parse('2026-11-20T15:05:00Z');

/** Feeds records (kmsg text) to the parser; returns the kills completed, with the line that completed each. */
function feed(parser: OomParser, text: string): { oom: OomInstance; at: number }[] {
  const out: { oom: OomInstance; at: number }[] = [];
  text
    .split('\n')
    .filter((l) => l !== '')
    .forEach((line, i) => {
      const rec = parseKmsgRecord(line);
      assert.ok(rec, line);
      const oom = parser.push(rec.message, new Date(BOOT + rec.timestampUs / 1000));
      if (oom) out.push({ oom, at: i });
    });
  return out;
}

describe('OOM parser (cadvisor oomparser)', () => {
  it('reads a 5.0+ container OOM from its one-line summary, recorded on a 6.18 kernel', () => {
    const parser = createOomParser();
    const got = feed(parser, KERNEL_6_CONTAINER_OOM);
    assert.equal(got.length, 1);
    assert.equal(got[0]?.at, 14, 'the oom-kill summary line ends the report');
    assert.deepEqual(got[0]?.oom, {
      pid: 17829,
      processName: 'sh',
      timeOfDeath: new Date(BOOT + 19877107295 / 1000),
      containerName:
        '/kubepods/burstable/pod5c716a8e46a50a1ada32578e9a7cde7b/e54006a242a8db17046fb031d9361ec923a67968e6eb6b0d06d9a103321d749d',
      victimContainerName: '/kubepods/burstable/pod5c716a8e46a50a1ada32578e9a7cde7b',
      constraint: 'CONSTRAINT_MEMCG',
    });
  });

  it('reads a 5.0+ system OOM (global_oom) with victim / and the task cgroup', () => {
    const [first, ...rest] = feed(createOomParser(), KERNEL_5_SYSTEM_OOM);
    assert.equal(rest.length, 0);
    assert.equal(first?.oom.victimContainerName, '/');
    assert.equal(first?.oom.containerName, '/system.slice/mem-hog.service');
    assert.equal(first?.oom.processName, 'mem-hog');
    assert.equal(first?.oom.pid, 4242);
    assert.equal(first?.oom.constraint, 'CONSTRAINT_NONE');
  });

  it('reads a pre-5.0 container OOM from the Task in … line and the Killed process line', () => {
    const [first, ...rest] = feed(createOomParser(), KERNEL_4_CONTAINER_OOM);
    assert.equal(rest.length, 0);
    assert.equal(first?.at, 8, 'the Killed process line ends the report');
    const cgroup = '/kubepods/burstable/pod0e3c0b4a-7d1e-4a5b-9c7f-2f1d3e4a5b6c/3f1c0d9f4a7e';
    assert.equal(first?.oom.containerName, cgroup);
    assert.equal(first?.oom.victimContainerName, cgroup);
    assert.equal(first?.oom.processName, 'stress');
    assert.equal(first?.oom.pid, 9120);
    assert.equal(first?.oom.constraint, '');
  });

  it('keeps victim / for a pre-5.0 OOM that names no cgroup (a system OOM)', () => {
    const [first] = feed(createOomParser(), KERNEL_4_SYSTEM_OOM);
    assert.deepEqual(
      [first?.oom.victimContainerName, first?.oom.containerName, first?.oom.processName, first?.oom.pid],
      ['/', '/', 'java', 2210],
    );
  });

  it('cleans legacy cgroup paths as Go path.Join("/", p)', () => {
    const [first] = feed(
      createOomParser(),
      kmsgRecords([
        'x invoked oom-killer: gfp_mask=0x0',
        'Task in mem2/ killed as a result of limit of /a/./b/../c/',
        'Killed process 7 (x) total-vm:1kB',
      ]),
    );
    assert.deepEqual([first?.oom.containerName, first?.oom.victimContainerName], ['/mem2', '/a/c']);
  });

  it('takes process names with spaces, dots, dashes and parentheses from the Killed process line', () => {
    for (const name of ['Plex Media Server', 'python3.4', 'x86_64-pc-linux-gnu-c++-5.4.0', '()', '[']) {
      const [first] = feed(
        createOomParser(),
        kmsgRecords([
          'a invoked oom-killer: x',
          `Killed process 1234 (${name}) total-vm:1460016kB, anon-rss:1kB`,
        ]),
      );
      assert.equal(first?.oom.processName, name);
      assert.equal(first?.oom.pid, 1234);
    }
  });

  it('ignores kill lines outside a report, and reads consecutive reports one by one', () => {
    const parser = createOomParser();
    const stray = feed(
      parser,
      kmsgRecords(['Killed process 1 (init)', 'oom-kill:constraint=CONSTRAINT_NONE']),
    );
    assert.equal(stray.length, 0);
    const got = feed(parser, KERNEL_6_CONTAINER_OOM + KERNEL_4_SYSTEM_OOM + KERNEL_5_SYSTEM_OOM);
    assert.deepEqual(
      got.map((g) => [g.oom.processName, g.oom.victimContainerName]),
      [
        ['sh', '/kubepods/burstable/pod5c716a8e46a50a1ada32578e9a7cde7b'],
        ['java', '/'],
        ['mem-hog', '/'],
      ],
    );
  });

  it('starts over at a new report that interrupts an unfinished one, and bounds a report', () => {
    const parser = createOomParser({ maxReportLines: 3 });
    const got = feed(
      parser,
      kmsgRecords([
        'a invoked oom-killer: x',
        'b invoked oom-killer: y',
        'Killed process 2 (b) total-vm:1kB',
        'c invoked oom-killer: z',
        'line 1',
        'line 2',
        'line 3',
        'line 4',
        'Killed process 3 (c) total-vm:1kB',
      ]),
    );
    assert.deepEqual(
      got.map((g) => g.oom.processName),
      ['b'],
    );
    assert.equal(parser.abandonedReports, 2);
  });

  it('does not take a summary line with a non-numeric pid; the Killed process line ends the report', () => {
    const [first] = feed(
      createOomParser(),
      kmsgRecords([
        'a invoked oom-killer: x',
        'oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=x,mems_allowed=0,oom_memcg=/k/p,task_memcg=/k/p/c,task=a,pid=??,uid=0',
        'Memory cgroup out of memory: Killed process 77 (a) total-vm:1kB',
      ]),
    );
    assert.deepEqual([first?.oom.pid, first?.oom.victimContainerName], [77, '/']);
  });
});
