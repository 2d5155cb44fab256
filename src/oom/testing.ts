/**
 * Test fixtures for the OOM watcher (not part of the build): a fake kernel log and OOM reports in
 * `/dev/kmsg` record form.
 */
import type { KmsgSource, OpenKmsg } from './dev-kmsg.ts';

/** A kernel log the test writes to; each write is what one read returns. */
export class FakeKmsg {
  readonly pending: Uint8Array[] = [];
  opens = 0;
  closes = 0;
  reads = 0;
  /** The next open rejects with this (then it is cleared unless `keepFailing`). */
  openError: Error | undefined;
  /** The next read rejects with this (then it is cleared). */
  readError: Error | undefined;
  keepFailing = false;

  /** Queues bytes; the watcher reads them as one chunk. */
  write(data: string | Uint8Array): void {
    this.pending.push(typeof data === 'string' ? new TextEncoder().encode(data) : data);
  }

  /** Queues `text` cut into chunks of `size` bytes (lines and characters split across reads). */
  writeInChunks(text: string, size: number): void {
    const bytes = new TextEncoder().encode(text);
    for (let i = 0; i < bytes.length; i += size) this.write(bytes.subarray(i, i + size));
  }

  get isOpen(): boolean {
    return this.opens > this.closes;
  }

  readonly opener: OpenKmsg = () => {
    this.opens++;
    const err = this.openError;
    if (err) {
      if (!this.keepFailing) this.openError = undefined;
      this.opens--;
      return Promise.reject(err);
    }
    let closed = false;
    const source: KmsgSource = {
      read: () => {
        this.reads++;
        const readErr = this.readError;
        if (readErr) {
          this.readError = undefined;
          return Promise.reject(readErr);
        }
        return Promise.resolve(this.pending.shift() ?? new Uint8Array(0));
      },
      close: () => {
        if (!closed) this.closes++;
        closed = true;
        return Promise.resolve();
      },
    };
    return Promise.resolve(source);
  };
}

/** Kernel log messages as `/dev/kmsg` records: `pri,seq,ts,-;message\n`, ts in µs, 1 µs apart. */
export function kmsgRecords(messages: readonly string[], firstSeq = 1000, firstTsUs = 5_000_000): string {
  return messages
    .map((m, i) => {
      const pri = /invoked oom-killer|Killed process/.test(m) ? 3 : 6;
      return `${pri},${firstSeq + i},${firstTsUs + i},-;${m}\n`;
    })
    .join('');
}

/**
 * A container OOM as this project's test VM (kernel 6.18, cgroup v1) logged it when the OOMKilled
 * integration test ran: the pod cgroup's limit was hit, the container's `sh` was killed. Recorded
 * from /dev/kmsg; the call trace, memory statistics and part of the task list are shortened.
 */
export const KERNEL_6_CONTAINER_OOM = [
  '4,32818,19877106940,-;head invoked oom-killer: gfp_mask=0x500cc2(GFP_HIGHUSER|__GFP_ACCOUNT), order=0, oom_score_adj=999',
  '4,32819,19877106952,-;CPU: 1 UID: 0 PID: 17842 Comm: head Not tainted 6.18.44-fc-v595 #1 PREEMPT(none) ',
  '4,32820,19877106956,-;Call Trace:',
  '4,32821,19877106978,-; <TASK>',
  '4,32822,19877106995,-; dump_stack_lvl+0x57/0x80',
  '4,32824,19877107008,-; oom_kill_process.cold+0x8/0x8a',
  '4,32826,19877107018,-; mem_cgroup_out_of_memory+0xc0/0x110',
  '4,32874,19877107176,-; </TASK>',
  '6,32875,19877107177,-;memory: usage 32768kB, limit 32768kB, failcnt 165',
  '6,32878,19877107190,-;Memory cgroup stats for /kubepods/burstable/pod5c716a8e46a50a1ada32578e9a7cde7b:',
  '6,32921,19877107275,-;Tasks state (memory values in pages):',
  '6,32922,19877107276,-;[  pid  ]   uid  tgid total_vm      rss rss_anon rss_file rss_shmem pgtables_bytes swapents oom_score_adj name',
  '6,32925,19877107285,-;[  17829]     0 17829     9784     8252     7904      348         0   106496        0           999 sh',
  '6,32927,19877107291,-;[  17842]     0 17842      567      281        0      281         0    36864        0           999 head',
  '6,32929,19877107295,-;oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=e54006a242a8db17046fb031d9361ec923a67968e6eb6b0d06d9a103321d749d,mems_allowed=0,oom_memcg=/kubepods/burstable/pod5c716a8e46a50a1ada32578e9a7cde7b,task_memcg=/kubepods/burstable/pod5c716a8e46a50a1ada32578e9a7cde7b/e54006a242a8db17046fb031d9361ec923a67968e6eb6b0d06d9a103321d749d,task=sh,pid=17829,uid=0',
  '3,32930,19877107317,-;Memory cgroup out of memory: Killed process 17829 (sh) total-vm:39136kB, anon-rss:31616kB, file-rss:1392kB, shmem-rss:0kB, UID:0 pgtables:104kB oom_score_adj:999',
]
  .map((l) => `${l}\n`)
  .join('');

/**
 * A whole-node OOM on a 5.0+ kernel: the summary line says `global_oom` where a cgroup OOM names
 * `oom_memcg` (mm/memcontrol.c mem_cgroup_print_oom_context). Written in the kernel's format;
 * not recorded (a real one would starve the shared test machine).
 */
export const KERNEL_5_SYSTEM_OOM = kmsgRecords([
  'mem-hog invoked oom-killer: gfp_mask=0x100cca(GFP_HIGHUSER_MOVABLE), order=0, oom_score_adj=0',
  'CPU: 0 PID: 4242 Comm: mem-hog Not tainted 5.10.0-26-amd64 #1 Debian 5.10.197-1',
  'Mem-Info:',
  'active_anon:5923170 inactive_anon:12 isolated_anon:0',
  'Tasks state (memory values in pages):',
  '[   4242]     0  4242 24117278  5922304 47517696        0             0 mem-hog',
  'oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,global_oom,task_memcg=/system.slice/mem-hog.service,task=mem-hog,pid=4242,uid=0',
  'Out of memory: Killed process 4242 (mem-hog) total-vm:96469112kB, anon-rss:23689216kB, file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:46404kB oom_score_adj:0',
]);

/** A container OOM on a pre-5.0 kernel: `Task in … killed as a result of limit of …`, then `Killed process`. */
export const KERNEL_4_CONTAINER_OOM = kmsgRecords([
  'stress invoked oom-killer: gfp_mask=0x14000c0(GFP_KERNEL), nodemask=(null), order=0, oom_score_adj=939',
  'stress cpuset=3f1c0d9f4a7e mems_allowed=0',
  'CPU: 1 PID: 9120 Comm: stress Not tainted 4.19.0-18-amd64 #1 Debian 4.19.208-1',
  'Task in /kubepods/burstable/pod0e3c0b4a-7d1e-4a5b-9c7f-2f1d3e4a5b6c/3f1c0d9f4a7e killed as a result of limit of /kubepods/burstable/pod0e3c0b4a-7d1e-4a5b-9c7f-2f1d3e4a5b6c/3f1c0d9f4a7e',
  'memory: usage 102400kB, limit 102400kB, failcnt 57',
  '[ pid ]   uid  tgid total_vm      rss pgtables_bytes swapents oom_score_adj name',
  '[ 9120]     0  9120   66084    25534   262144        0           939 stress',
  'Memory cgroup out of memory: Kill process 9120 (stress) score 1938 or sacrifice child',
  'Killed process 9120 (stress) total-vm:264336kB, anon-rss:101824kB, file-rss:312kB, shmem-rss:0kB',
]);

/** A whole-node OOM on a pre-5.0 kernel: no `Task in` line, so the victim stays `/`. */
export const KERNEL_4_SYSTEM_OOM = kmsgRecords([
  'java invoked oom-killer: gfp_mask=0x6200ca(GFP_HIGHUSER_MOVABLE), nodemask=(null), order=0, oom_score_adj=0',
  'java cpuset=/ mems_allowed=0',
  'Mem-Info:',
  'Out of memory: Kill process 2210 (java) score 903 or sacrifice child',
  'Killed process 2210 (java) total-vm:9876544kB, anon-rss:7654320kB, file-rss:0kB, shmem-rss:0kB',
]);
