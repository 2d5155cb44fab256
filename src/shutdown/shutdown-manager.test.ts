import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import type { KubeletPod } from '../api/types.ts';
import { flush, recordingLogger, type LogLine } from '../util/testing.ts';
import {
  createShutdownManager,
  type KillPodFunc,
  type ShutdownManager,
  type ShutdownManagerOptions,
  type ShutdownPodStatus,
} from './shutdown-manager.ts';
import { createFakeLogind, shutdownPod, type FakeLogind } from './testing.ts';

interface Kill {
  name: string;
  gracePeriodSeconds: number;
  status: ShutdownPodStatus;
}

interface Setup {
  manager: ShutdownManager;
  logind: FakeLogind;
  kills: Kill[];
  lines: LogLine[];
  changes: boolean[];
}

function setup(
  over: Partial<ShutdownManagerOptions> & { pods?: KubeletPod[]; logind?: FakeLogind } = {},
): Setup {
  const kills: Kill[] = [];
  const lines: LogLine[] = [];
  const changes: boolean[] = [];
  const logind = over.logind ?? createFakeLogind();
  const killPod: KillPodFunc = (pod, gracePeriodSeconds, status) => {
    kills.push({ name: pod.metadata.name, gracePeriodSeconds, status });
    return Promise.resolve();
  };
  const manager = createShutdownManager({
    shutdownGracePeriodMs: 30_000,
    shutdownGracePeriodCriticalPodsMs: 10_000,
    logind,
    activePods: () => over.pods ?? [],
    killPod,
    onShuttingDownChange: (on) => changes.push(on),
    logger: recordingLogger(lines),
    ...over,
  });
  return { manager, logind, kills, lines, changes };
}

/** Mocks setTimeout; returns `advance(ms)`, which ticks and lets the callbacks run. */
function mockTime(t: TestContext): (ms: number) => Promise<void> {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  return async (ms) => {
    t.mock.timers.tick(ms);
    await flush();
  };
}

const graces = (kills: Kill[]) => Object.fromEntries(kills.map((k) => [k.name, k.gracePeriodSeconds]));

describe('node shutdown manager: starting', () => {
  it('stays off without touching logind when shutdownGracePeriod is 0', async () => {
    const s = setup({ shutdownGracePeriodMs: 0, shutdownGracePeriodCriticalPodsMs: 0 });
    assert.deepEqual(await s.manager.start(), { state: 'disabled', reason: 'shutdownGracePeriod is 0' });
    assert.deepEqual(s.logind.calls, []);
    s.logind.emit(true);
    await flush();
    assert.equal(s.manager.shuttingDown(), false);
    assert.equal(s.manager.readyConditionError(), undefined);
    assert.deepEqual(s.manager.admitHandler.admit(shutdownPod('new'), []), { admit: true });
  });

  it('logs and carries on, disabled, when logind cannot be reached', async () => {
    const logind = createFakeLogind({ unreachable: 'Failed to connect to bus: No such file or directory' });
    const s = setup({ logind });
    const state = await s.manager.start();
    assert.equal(state.state, 'disabled');
    assert.match(state.state === 'disabled' ? state.reason : '', /Failed to connect to bus/);
    const error = s.lines.find((l) => l.level === 'error');
    assert.match(error?.msg ?? '', /graceful node shutdown is disabled/);
    assert.match(String(error?.fields.err), /Failed to connect to bus/);
    assert.equal(logind.heldLocks(), 0);
    assert.equal(s.manager.shuttingDown(), false);
    await s.manager.stop();
  });

  it('takes a delay inhibitor lock and watches PrepareForShutdown when logind allows the period', async () => {
    const s = setup();
    assert.deepEqual(await s.manager.start(), {
      state: 'running',
      shuttingDown: false,
      inhibitorHeld: true,
      watching: true,
    });
    assert.deepEqual(s.logind.calls, ['delay', 'inhibit', 'watch']);
    assert.equal(s.logind.heldLocks(), 1);
    assert.equal(s.manager.readyConditionError(), undefined);
    await s.manager.stop();
  });

  it('raises InhibitDelayMaxSec with the drop-in and a reload when logind allows less', async () => {
    const logind = createFakeLogind({ delayMs: 5_000 });
    const s = setup({ logind });
    assert.equal((await s.manager.start()).state, 'running');
    assert.deepEqual(logind.calls, ['delay', 'override 30000', 'reload', 'delay', 'inhibit', 'watch']);
    await s.manager.stop();
  });

  it('stays disabled, without a lock, when the raised delay does not take effect', async (t) => {
    const advance = mockTime(t);
    const logind = createFakeLogind({ delayMs: 5_000 });
    logind.delayAfterReload = 5_000;
    const s = setup({ logind });
    const started = s.manager.start();
    await flush();
    await advance(500);
    const state = await started;
    assert.equal(state.state, 'disabled');
    assert.match(state.state === 'disabled' ? state.reason : '', /it is 5s after the override.*\(30s\)/);
    assert.equal(logind.heldLocks(), 0);
    assert.ok(!logind.calls.includes('inhibit'));
  });

  it('handles a PrepareForShutdown that arrives while start() is finishing', async () => {
    const logind = createFakeLogind();
    const watchShutdown = logind.watchShutdown.bind(logind);
    logind.watchShutdown = async (handlers, signal) => {
      const watch = await watchShutdown(handlers, signal);
      handlers.onPrepareForShutdown(true);
      return watch;
    };
    const s = setup({ logind, pods: [shutdownPod('a')], shutdownGracePeriodCriticalPodsMs: 0 });
    await s.manager.start();
    await flush();
    assert.deepEqual(graces(s.kills), { a: 30 });
    assert.equal(s.manager.shuttingDown(), true);
    assert.equal(logind.heldLocks(), 0);
    await s.manager.stop();
  });

  it('gives the lock back when the watch cannot start', async () => {
    const logind = createFakeLogind();
    logind.failWatch = new Error('gdbus: not found');
    const s = setup({ logind });
    assert.equal((await s.manager.start()).state, 'disabled');
    assert.deepEqual(logind.calls, ['delay', 'inhibit', 'watch', 'release']);
    assert.equal(logind.heldLocks(), 0);
  });
});

describe('node shutdown manager: PrepareForShutdown(true)', () => {
  const pods = () => [
    shutdownPod('normal'),
    shutdownPod('critical', { critical: true }),
    shutdownPod('normal-short', { terminationGracePeriodSeconds: 2 }),
    shutdownPod('critical-short', { critical: true, terminationGracePeriodSeconds: 2 }),
    shutdownPod('normal-long', { terminationGracePeriodSeconds: 1000 }),
    shutdownPod('static', { annotations: { 'kubernetes.io/config.source': 'file' } }),
  ];

  it('kills the other pods at once, the critical ones after the non-critical period, each with its grace', async (t) => {
    const advance = mockTime(t);
    const s = setup({ pods: pods() });
    await s.manager.start();
    s.logind.emit(true);
    await flush();
    // total 30s, critical 10s: the others get min(own, 20s) now.
    assert.deepEqual(graces(s.kills), { normal: 20, 'normal-short': 2, 'normal-long': 20 });
    await advance(19_999);
    assert.equal(s.kills.length, 3);
    await advance(1);
    // ...and the critical ones (static pods included) min(own, 10s) from the 20s mark.
    assert.deepEqual(graces(s.kills.slice(3)), { critical: 10, 'critical-short': 2, static: 10 });
    await flush();
    assert.equal(s.logind.heldLocks(), 0);
    await s.manager.stop();
  });

  it('gives every killed pod phase Failed with upstream reason and message', async () => {
    const s = setup({ pods: [shutdownPod('a'), shutdownPod('b')], shutdownGracePeriodCriticalPodsMs: 0 });
    await s.manager.start();
    s.logind.emit(true);
    await flush();
    assert.equal(s.kills.length, 2);
    for (const k of s.kills) {
      assert.deepEqual(k.status, {
        phase: 'Failed',
        reason: 'Shutdown',
        message: 'Node is shutting, evicting pods',
      });
    }
    await s.manager.stop();
  });

  it('gives all the time to critical pods when the two periods are equal, none to the others', async () => {
    const s = setup({
      pods: [shutdownPod('n'), shutdownPod('c', { critical: true })],
      shutdownGracePeriodMs: 5_000,
      shutdownGracePeriodCriticalPodsMs: 5_000,
    });
    await s.manager.start();
    s.logind.emit(true);
    await flush();
    assert.deepEqual(graces(s.kills), { n: 0, c: 5 });
    await s.manager.stop();
  });

  it('marks the node as shutting down: Ready error, admission refused, status callback', async () => {
    const s = setup({ pods: [shutdownPod('a')] });
    await s.manager.start();
    s.logind.emit(true);
    await flush();
    assert.equal(s.manager.shuttingDown(), true);
    assert.equal(s.manager.readyConditionError(), 'node is shutting down');
    assert.deepEqual(s.manager.admitHandler.admit(shutdownPod('new'), []), {
      admit: false,
      reason: 'Shutdown',
      message: 'Node is in progress of shutting down, not admitting any new pods',
    });
    assert.deepEqual(s.changes, [true]);
    await s.manager.stop();
  });

  it('releases the inhibitor lock only after the kills finish', async () => {
    const pending: (() => void)[] = [];
    const s = setup({
      pods: [shutdownPod('a'), shutdownPod('b')],
      killPod: (pod) => {
        s.logind.calls.push(`kill ${pod.metadata.name}`);
        return new Promise<void>((resolve) => pending.push(resolve));
      },
    });
    await s.manager.start();
    s.logind.emit(true);
    await flush();
    assert.equal(s.logind.heldLocks(), 1);
    pending[0]?.();
    await flush();
    assert.equal(s.logind.heldLocks(), 1);
    pending[1]?.();
    await flush();
    assert.equal(s.logind.heldLocks(), 0);
    assert.deepEqual(s.logind.calls.slice(3), ['kill a', 'kill b', 'release']);
    assert.equal(s.manager.shuttingDown(), true);
    await s.manager.stop();
  });

  it('releases the lock at shutdownGracePeriod even when kills hang', async (t) => {
    const advance = mockTime(t);
    const s = setup({
      pods: [shutdownPod('stuck')],
      shutdownGracePeriodCriticalPodsMs: 0,
      killPod: () => new Promise<void>(() => {}),
    });
    await s.manager.start();
    s.logind.emit(true);
    await flush();
    await advance(29_999);
    assert.equal(s.logind.heldLocks(), 1);
    await advance(1);
    assert.equal(s.logind.heldLocks(), 0);
    assert.ok(s.lines.some((l) => l.level === 'warn' && /did not finish/.test(l.msg)));
    await s.manager.stop();
  });

  it('logs a failed kill with its pod and still kills the others and releases the lock', async () => {
    const killed: string[] = [];
    const s = setup({
      pods: [shutdownPod('rejects'), shutdownPod('throws'), shutdownPod('ok')],
      shutdownGracePeriodCriticalPodsMs: 0,
      killPod: (pod) => {
        const name = pod.metadata.name;
        if (name === 'throws') throw new Error('sync failure');
        if (name === 'rejects') return Promise.reject(new Error('runtime said no'));
        killed.push(name);
        return Promise.resolve();
      },
    });
    await s.manager.start();
    s.logind.emit(true);
    await flush();
    assert.deepEqual(killed, ['ok']);
    const failures = s.lines.filter((l) => l.level === 'error' && /failed to kill pod/.test(l.msg));
    assert.deepEqual(failures.map((l) => [l.fields.pod, l.fields.err]).sort(), [
      ['default/rejects', 'runtime said no'],
      ['default/throws', 'sync failure'],
    ]);
    assert.equal(s.logind.heldLocks(), 0);
    await s.manager.stop();
  });
});

describe('node shutdown manager: cancel, failures, stop', () => {
  it('logs and still releases the lock when the active pods cannot be listed', async () => {
    const s = setup({
      activePods: () => {
        throw new Error('pod state unavailable');
      },
    });
    await s.manager.start();
    s.logind.emit(true);
    await flush();
    assert.equal(s.logind.heldLocks(), 0);
    assert.ok(s.lines.some((l) => l.level === 'error' && l.fields.err === 'pod state unavailable'));
    await s.manager.stop();
  });

  it('returns to normal and takes the lock again when the shutdown is cancelled', async () => {
    const s = setup({ pods: [shutdownPod('a')], shutdownGracePeriodCriticalPodsMs: 0 });
    await s.manager.start();
    s.logind.emit(true);
    await flush();
    assert.equal(s.logind.heldLocks(), 0);
    s.logind.emit(false);
    await flush();
    assert.equal(s.manager.shuttingDown(), false);
    assert.equal(s.manager.readyConditionError(), undefined);
    assert.deepEqual(s.manager.admitHandler.admit(shutdownPod('new'), []), { admit: true });
    assert.equal(s.logind.heldLocks(), 1);
    assert.deepEqual(s.changes, [true, false]);
    assert.deepEqual(s.logind.calls.filter((c) => c === 'inhibit').length, 2);
    await s.manager.stop();
  });

  it('handles a cancel that arrives mid-shutdown after the shutdown, in order', async () => {
    let finish: (() => void) | undefined;
    const s = setup({
      pods: [shutdownPod('a')],
      shutdownGracePeriodCriticalPodsMs: 0,
      killPod: () => new Promise<void>((resolve) => (finish = resolve)),
    });
    await s.manager.start();
    s.logind.emit(true);
    s.logind.emit(false);
    await flush();
    assert.equal(s.manager.shuttingDown(), true);
    finish?.();
    await flush();
    assert.equal(s.manager.shuttingDown(), false);
    assert.deepEqual(s.logind.calls.slice(3), ['release', 'inhibit']);
    await s.manager.stop();
  });

  it('watches again after the PrepareForShutdown watch dies', async (t) => {
    const advance = mockTime(t);
    const s = setup();
    await s.manager.start();
    s.logind.breakWatch();
    await flush();
    assert.equal(s.logind.watches(), 0);
    assert.ok(s.lines.some((l) => l.level === 'error' && /stopped receiving PrepareForShutdown/.test(l.msg)));
    await advance(1_000);
    assert.equal(s.logind.watches(), 1);
    s.logind.emit(true);
    await flush();
    assert.equal(s.manager.shuttingDown(), true);
    await s.manager.stop();
  });

  it('takes the lock again when its holder dies', async () => {
    const s = setup();
    await s.manager.start();
    s.logind.loseLock();
    await flush();
    assert.equal(s.logind.heldLocks(), 1);
    assert.deepEqual(s.logind.calls, ['delay', 'inhibit', 'watch', 'lost', 'inhibit']);
    await s.manager.stop();
  });

  it('stop() releases the lock and ends the watch', async () => {
    const s = setup();
    await s.manager.start();
    await s.manager.stop();
    assert.equal(s.logind.heldLocks(), 0);
    assert.equal(s.logind.watches(), 0);
    assert.deepEqual(s.manager.status(), { state: 'stopped' });
    await s.manager.stop();
  });

  it('stop() during a shutdown abandons the critical kills still waiting and releases the lock', async (t) => {
    mockTime(t);
    const s = setup({ pods: [shutdownPod('n'), shutdownPod('c', { critical: true })] });
    await s.manager.start();
    s.logind.emit(true);
    await flush();
    assert.deepEqual(graces(s.kills), { n: 20 });
    await s.manager.stop();
    assert.deepEqual(graces(s.kills), { n: 20 });
    assert.equal(s.logind.heldLocks(), 0);
    assert.equal(s.logind.watches(), 0);
    t.mock.timers.tick(60_000);
    await flush();
    assert.deepEqual(graces(s.kills), { n: 20 });
  });
});
