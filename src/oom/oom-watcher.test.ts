import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { recordingLogger } from '../util/testing.ts';
import { createOomWatcher, systemOOMMessage, type OomWatcherDeps } from './oom-watcher.ts';
import type { OomInstance } from './oom-parser.ts';
import {
  FakeKmsg,
  KERNEL_4_CONTAINER_OOM,
  KERNEL_4_SYSTEM_OOM,
  KERNEL_5_SYSTEM_OOM,
  KERNEL_6_CONTAINER_OOM,
} from './testing.ts';
import { untilWithin } from '../../test/kit/poll.ts';

const BOOT = Date.parse('2026-11-20T15:05:00Z');

const until = untilWithin(2_000, { intervalMs: 2 });

/** A watcher on a fake kernel log, stopped when the test ends (pass or fail). */
function setup(t: TestContext, extra: Partial<OomWatcherDeps> = {}) {
  const kmsg = new FakeKmsg();
  const logger = recordingLogger();
  const events: { type: string; reason: string; message: string }[] = [];
  const ooms: OomInstance[] = [];
  const watcher = createOomWatcher({
    nodeEvent: (type, reason, message) => events.push({ type, reason, message }),
    onOom: (oom) => ooms.push(oom),
    logger,
    openKmsg: kmsg.opener,
    bootTimeMs: () => BOOT,
    pollIntervalMs: 1,
    retryIntervalMs: 5,
    ...extra,
  });
  t.after(() => watcher.stop());
  return { kmsg, logger, events, ooms, watcher };
}

describe('OOM watcher (upstream pkg/kubelet/oom)', () => {
  it('records a SystemOOM Warning on the Node for a system OOM, in both kernel formats', async (ctx) => {
    const t = setup(ctx);
    t.watcher.start();
    t.kmsg.write(KERNEL_5_SYSTEM_OOM);
    t.kmsg.write(KERNEL_4_SYSTEM_OOM);
    await until('two events', () => t.events.length === 2);
    assert.deepEqual(t.events, [
      {
        type: 'Warning',
        reason: 'SystemOOM',
        message: 'System OOM encountered, victim process: mem-hog, pid: 4242',
      },
      {
        type: 'Warning',
        reason: 'SystemOOM',
        message: 'System OOM encountered, victim process: java, pid: 2210',
      },
    ]);
    assert.equal(t.watcher.stats().systemOOMs, 2);
    await t.watcher.stop();
  });

  it('makes no Node event for a container OOM, but reports it to the callback and the counter', async (ctx) => {
    const t = setup(ctx);
    t.watcher.start();
    t.kmsg.write(KERNEL_6_CONTAINER_OOM);
    t.kmsg.write(KERNEL_4_CONTAINER_OOM);
    await until('two OOMs', () => t.ooms.length === 2);
    assert.deepEqual(t.events, []);
    assert.deepEqual(
      t.ooms.map((o) => [o.processName, o.pid, o.victimContainerName]),
      [
        ['sh', 17829, '/kubepods/burstable/pod5c716a8e46a50a1ada32578e9a7cde7b'],
        ['stress', 9120, '/kubepods/burstable/pod0e3c0b4a-7d1e-4a5b-9c7f-2f1d3e4a5b6c/3f1c0d9f4a7e'],
      ],
    );
    assert.equal(
      t.ooms[0]?.timeOfDeath.getTime(),
      Math.trunc(BOOT + 19877107295 / 1000),
      'kmsg time counts from boot',
    );
    assert.deepEqual([t.watcher.stats().containerOOMs, t.watcher.stats().systemOOMs], [2, 0]);
    await t.watcher.stop();
  });

  it('reassembles records cut across reads at any byte', async (ctx) => {
    for (const size of [1, 5, 64]) {
      const t = setup(ctx);
      t.watcher.start();
      t.kmsg.writeInChunks(KERNEL_6_CONTAINER_OOM + KERNEL_5_SYSTEM_OOM, size);
      await until(`both OOMs (chunks of ${size})`, () => t.ooms.length === 2, 10_000);
      assert.deepEqual(
        t.events.map((e) => e.message),
        ['System OOM encountered, victim process: mem-hog, pid: 4242'],
      );
      await t.watcher.stop();
    }
  });

  it('skips continuation (dictionary) lines, counts malformed ones and drops over-long ones', async (ctx) => {
    const t = setup(ctx);
    t.watcher.start();
    t.kmsg.write('6,1,2,-;usb 1-1: new device\n SUBSYSTEM=usb\n DEVICE=c189:1\n');
    t.kmsg.write('garbage without a prefix\n');
    t.kmsg.write(`6,3,4,-;${'x'.repeat(70 * 1024)}\n`);
    t.kmsg.write(KERNEL_4_SYSTEM_OOM);
    await until('the OOM after them', () => t.events.length === 1);
    const s = t.watcher.stats();
    assert.deepEqual([s.malformedLines, s.droppedLines], [1, 1]);
    await t.watcher.stop();
  });

  it('logs an unreadable kernel log, stays up, reports unhealthy and retries until it can read', async (ctx) => {
    const t = setup(ctx);
    t.kmsg.openError = Object.assign(new Error('EACCES: permission denied'), { code: 'EACCES' });
    t.kmsg.keepFailing = true;
    t.watcher.start();
    await until(
      'a few failed opens',
      () => t.logger.lines.filter((l) => l.msg.includes('cannot open')).length >= 3,
    );
    assert.equal(t.watcher.health().ok, false);
    assert.match(t.watcher.health().message, /cannot open the kernel log: EACCES/);
    const warned = t.logger.lines.filter((l) => l.level === 'warn' && l.msg.includes('cannot open'));
    assert.equal(warned.length, 1, 'the same failure is logged at warn once, then at debug');

    t.kmsg.openError = undefined;
    t.kmsg.write(KERNEL_5_SYSTEM_OOM);
    await until('the event once readable', () => t.events.length === 1);
    assert.deepEqual(t.watcher.health(), { ok: true, message: '' });
    await t.watcher.stop();
  });

  it('closes and reopens the kernel log after a read error', async (ctx) => {
    const t = setup(ctx);
    t.watcher.start();
    await until('opened', () => t.kmsg.isOpen);
    t.kmsg.readError = new Error('EIO: i/o error');
    await until('reopened', () => t.kmsg.opens === 2);
    assert.equal(t.kmsg.closes, 1, 'the failed descriptor was closed');
    t.kmsg.write(KERNEL_4_SYSTEM_OOM);
    await until('the event after reopening', () => t.events.length === 1);
    await t.watcher.stop();
  });

  it('carries on when the event recorder or the callback throws', async (ctx) => {
    const t = setup(ctx, {
      nodeEvent: () => {
        throw new Error('recorder broken');
      },
      onOom: () => {
        throw new Error('callback broken');
      },
    });
    t.watcher.start();
    t.kmsg.write(KERNEL_5_SYSTEM_OOM);
    t.kmsg.write(KERNEL_4_SYSTEM_OOM);
    await until('both counted', () => t.watcher.stats().systemOOMs === 2);
    const errors = t.logger.lines.filter((l) => l.level === 'error').map((l) => l.msg);
    assert.equal(errors.filter((m) => m.includes('SystemOOM event failed')).length, 2);
    assert.equal(errors.filter((m) => m.includes('callback failed')).length, 2);
    await t.watcher.stop();
  });

  it('closes its descriptor on stop; stop is idempotent and start after stop does nothing', async (ctx) => {
    const t = setup(ctx);
    await t.watcher.stop(); // never started
    const u = setup(ctx);
    u.watcher.start();
    u.watcher.start();
    await until('opened', () => u.kmsg.isOpen);
    await Promise.all([u.watcher.stop(), u.watcher.stop()]);
    assert.deepEqual([u.kmsg.opens, u.kmsg.closes], [1, 1]);
    u.watcher.start();
    await new Promise((r) => setTimeout(r, 20));
    assert.equal(u.kmsg.opens, 1);
    assert.equal(u.watcher.health().ok, false);
  });
});

describe('systemOOMMessage', () => {
  it('names the victim process only when the report gave both its name and pid', () => {
    assert.equal(
      systemOOMMessage({ processName: 'a', pid: 1 }),
      'System OOM encountered, victim process: a, pid: 1',
    );
    assert.equal(systemOOMMessage({ processName: '', pid: 1 }), 'System OOM encountered');
    assert.equal(systemOOMMessage({ processName: 'a', pid: 0 }), 'System OOM encountered');
  });
});
