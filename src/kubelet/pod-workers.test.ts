import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubeletPod } from '../api/types.ts';
import { nullLogger } from '../util/logger.ts';
import { createPodWorkers, type PodSyncHandlers, type PodWorkers, type SyncOutcome } from './pod-workers.ts';
import { buildPod } from '../../test/kit/pod.ts';

/** A promise settled by hand. */
interface Deferred<T> {
  promise: Promise<T>;
  resolve(v: T): void;
  reject(e: unknown): void;
}
function deferred<T>(): Deferred<T> {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** Lets every pending promise continuation run (no timers involved). */
const flush = () => new Promise<void>((r) => setImmediate(r));

type Call =
  | { kind: 'sync'; pod: KubeletPod; signal: AbortSignal; done: Deferred<SyncOutcome> }
  | {
      kind: 'terminating';
      uid: string;
      pod: KubeletPod | undefined;
      grace: number | undefined;
      identity: { name: string; namespace: string };
      signal: AbortSignal;
      done: Deferred<void>;
    }
  | { kind: 'terminated'; uid: string; signal: AbortSignal; done: Deferred<void> };

/**
 * Fake handlers: every call is recorded and waits for the test to settle it. Like the real ones, a call
 * rejects with an AbortError as soon as its signal is aborted.
 */
function fakeHandlers() {
  const calls: Call[] = [];
  const errors: { uid: string; err: unknown }[] = [];
  const onAbort = (signal: AbortSignal, d: { reject(e: unknown): void }) => {
    const fail = () => d.reject(signal.reason instanceof Error ? abortError(signal.reason) : abortError());
    if (signal.aborted) fail();
    else signal.addEventListener('abort', fail, { once: true });
  };
  const handlers: PodSyncHandlers = {
    syncPod(pod, signal) {
      const done = deferred<SyncOutcome>();
      onAbort(signal, done);
      calls.push({ kind: 'sync', pod, signal, done });
      return done.promise;
    },
    syncTerminatingPod(uid, pod, grace, identity, signal) {
      const done = deferred<void>();
      onAbort(signal, done);
      calls.push({ kind: 'terminating', uid, pod, grace, identity, signal, done });
      return done.promise;
    },
    syncTerminatedPod(uid, _pod, signal) {
      const done = deferred<void>();
      onAbort(signal, done);
      calls.push({ kind: 'terminated', uid, signal, done });
      return done.promise;
    },
    onSyncError(uid, err) {
      errors.push({ uid, err });
    },
  };
  const last = <K extends Call['kind']>(kind: K): Extract<Call, { kind: K }> => {
    const found = calls.filter((c): c is Extract<Call, { kind: K }> => c.kind === kind).at(-1);
    assert.ok(found, `no ${kind} call`);
    return found;
  };
  const kinds = () => calls.map((c) => c.kind);
  return { handlers, calls, errors, last, kinds };
}

function abortError(cause?: Error): Error {
  const e = new Error('aborted', cause ? { cause } : undefined);
  e.name = 'AbortError';
  return e;
}

function pod(uid: string, version = 1): KubeletPod {
  return buildPod(`pod-${uid}`, { namespace: 'ns', uid, resourceVersion: String(version) });
}

function setup(): ReturnType<typeof fakeHandlers> & { workers: PodWorkers } {
  const f = fakeHandlers();
  return { ...f, workers: createPodWorkers(f.handlers, nullLogger) };
}

/** Drives a worker through syncPod → kill → terminating → terminated. */
async function terminate(s: ReturnType<typeof setup>, uid: string): Promise<void> {
  s.workers.update({ type: 'kill', uid, pod: undefined });
  await flush();
  s.last('terminating').done.resolve();
  await flush();
  s.last('terminated').done.resolve();
  await flush();
}

describe('pod workers', () => {
  it('runs at most one sync per pod at a time', async () => {
    const s = setup();
    s.workers.update({ type: 'sync', pod: pod('u1', 1) });
    s.workers.update({ type: 'sync', pod: pod('u1', 2) });
    await flush();
    assert.deepEqual(s.kinds(), ['sync']);
    s.last('sync').done.resolve({ terminal: false });
    await flush();
    assert.deepEqual(s.kinds(), ['sync', 'sync']);
  });

  it('runs different pods in parallel', async () => {
    const s = setup();
    s.workers.update({ type: 'sync', pod: pod('u1') });
    s.workers.update({ type: 'sync', pod: pod('u2') });
    await flush();
    assert.deepEqual(
      s.calls.map((c) => (c.kind === 'sync' ? c.pod.metadata.uid : '')),
      ['u1', 'u2'],
    );
  });

  it('drops intermediate updates: the newest pending one wins', async () => {
    const s = setup();
    s.workers.update({ type: 'sync', pod: pod('u1', 1) });
    s.workers.update({ type: 'sync', pod: pod('u1', 2) });
    s.workers.update({ type: 'sync', pod: pod('u1', 3) });
    s.workers.update({ type: 'sync', pod: pod('u1', 4) });
    s.last('sync').done.resolve({ terminal: false });
    await flush();
    s.last('sync').done.resolve({ terminal: false });
    await flush();
    const versions = s.calls.map((c) => (c.kind === 'sync' ? c.pod.metadata.resourceVersion : c.kind));
    assert.deepEqual(versions, ['1', '4']);
    assert.equal(s.workers.phase('u1'), 'syncing');
  });

  it('aborts a sync in flight on kill, then terminates and cleans up the pod', async () => {
    const s = setup();
    const p = pod('u1');
    s.workers.update({ type: 'sync', pod: p });
    const sync = s.last('sync');
    assert.equal(sync.signal.aborted, false);
    s.workers.update({ type: 'kill', uid: 'u1', pod: p, gracePeriodOverride: 30 });
    assert.equal(sync.signal.aborted, true);
    assert.equal(s.workers.phase('u1'), 'terminating');
    await flush();
    const term = s.last('terminating');
    assert.equal(term.uid, 'u1');
    assert.equal(term.grace, 30);
    assert.equal(term.pod, p);
    assert.deepEqual(term.identity, { name: 'pod-u1', namespace: 'ns' });
    assert.equal(s.workers.phase('u1'), 'terminating');
    term.done.resolve();
    await flush();
    assert.equal(s.workers.phase('u1'), 'terminated');
    assert.deepEqual(s.kinds(), ['sync', 'terminating', 'terminated']);
    s.last('terminated').done.resolve();
    await flush();
    assert.deepEqual(s.errors, [], 'an aborted sync is not an error');
  });

  it('kills an orphan found in the runtime with the identity it was given', async () => {
    const s = setup();
    s.workers.update({ type: 'kill', uid: 'orphan', pod: undefined, name: 'old', namespace: 'kube-system' });
    await flush();
    const term = s.last('terminating');
    assert.equal(term.pod, undefined);
    assert.deepEqual(term.identity, { name: 'old', namespace: 'kube-system' });
    assert.deepEqual(s.kinds(), ['terminating']);
  });

  it('never syncs a terminated UID again', async () => {
    const s = setup();
    s.workers.update({ type: 'sync', pod: pod('u1') });
    s.last('sync').done.resolve({ terminal: false });
    await flush();
    await terminate(s, 'u1');
    assert.equal(s.workers.phase('u1'), 'terminated');
    const before = s.calls.length;
    s.workers.update({ type: 'sync', pod: pod('u1', 9) });
    await flush();
    assert.equal(s.calls.length, before);
    assert.equal(s.workers.phase('u1'), 'terminated');
  });

  it('ignores sync updates while terminating', async () => {
    const s = setup();
    s.workers.update({ type: 'kill', uid: 'u1', pod: pod('u1') });
    await flush();
    s.workers.update({ type: 'sync', pod: pod('u1', 2) });
    s.last('terminating').done.resolve();
    await flush();
    assert.deepEqual(s.kinds(), ['terminating', 'terminated']);
  });

  it('uses a shorter grace period that arrives before termination starts', async () => {
    const s = setup();
    s.workers.update({ type: 'sync', pod: pod('u1') });
    // The sync ignores the abort for a while (e.g. it is inside a CRI call).
    const sync = s.last('sync');
    sync.signal.addEventListener('abort', () => undefined);
    s.workers.update({ type: 'kill', uid: 'u1', pod: undefined, gracePeriodOverride: 30 });
    s.workers.update({ type: 'kill', uid: 'u1', pod: undefined, gracePeriodOverride: 5 });
    s.workers.update({ type: 'kill', uid: 'u1', pod: undefined, gracePeriodOverride: 20 });
    await flush();
    assert.equal(s.last('terminating').grace, 5);
  });

  // Upstream pod_workers.go UpdatePod: when a kill shortens the grace period of a pod that is already
  // terminating, the running sync is cancelled (status.cancelFn) and termination runs again with the
  // shorter grace period.
  it('aborts a termination in flight when a shorter grace period arrives, and terminates again with it', async () => {
    const s = setup();
    s.workers.update({ type: 'kill', uid: 'u1', pod: pod('u1'), gracePeriodOverride: 30 });
    await flush();
    const first = s.last('terminating');
    assert.equal(first.grace, 30);
    s.workers.update({ type: 'kill', uid: 'u1', pod: undefined, gracePeriodOverride: 1 });
    assert.equal(first.signal.aborted, true, 'the termination with 30s must be aborted');
    await flush();
    const second = s.last('terminating');
    assert.notEqual(second, first);
    assert.equal(second.grace, 1);
  });

  it('moves to terminating when syncPod reports a terminal phase', async () => {
    const s = setup();
    const p = pod('u1');
    s.workers.update({ type: 'sync', pod: p });
    s.last('sync').done.resolve({ terminal: true });
    await flush();
    assert.equal(s.workers.phase('u1'), 'terminating');
    const term = s.last('terminating');
    assert.equal(term.grace, undefined);
    assert.equal(term.pod, p);
    term.done.resolve();
    await flush();
    assert.equal(s.workers.phase('u1'), 'terminated');
  });

  it('forgets a worker only once it is terminated and idle', async () => {
    const s = setup();
    s.workers.update({ type: 'sync', pod: pod('u1') });
    s.workers.forget('u1');
    assert.deepEqual(s.workers.uids(), ['u1']);
    s.last('sync').done.resolve({ terminal: false });
    await flush();
    s.workers.forget('u1');
    assert.deepEqual(s.workers.uids(), ['u1'], 'a syncing worker is kept');
    s.workers.update({ type: 'kill', uid: 'u1', pod: undefined });
    await flush();
    s.last('terminating').done.resolve();
    await flush();
    assert.equal(s.workers.phase('u1'), 'terminated');
    s.workers.forget('u1');
    assert.deepEqual(s.workers.uids(), ['u1'], 'terminated but still cleaning up');
    s.last('terminated').done.resolve();
    await flush();
    s.workers.forget('u1');
    assert.deepEqual(s.workers.uids(), []);
    assert.equal(s.workers.phase('u1'), undefined);
  });

  it('resolves idle() once no worker has work in flight', async () => {
    const s = setup();
    await s.workers.idle();
    s.workers.update({ type: 'sync', pod: pod('u1') });
    s.workers.update({ type: 'sync', pod: pod('u2') });
    let idle = false;
    void s.workers.idle().then(() => (idle = true));
    await flush();
    assert.equal(idle, false);
    const [first, second] = s.calls.filter((c) => c.kind === 'sync');
    first?.done.resolve({ terminal: false });
    await flush();
    assert.equal(idle, false, 'u2 is still syncing');
    second?.done.resolve({ terminal: false });
    await flush();
    assert.equal(idle, true);
  });

  it('stop() aborts syncs in flight, waits for them, and refuses new work', async () => {
    const s = setup();
    s.workers.update({ type: 'sync', pod: pod('u1') });
    s.workers.update({ type: 'sync', pod: pod('u1', 2) });
    const sync = s.last('sync');
    let stopped = false;
    const stopping = s.workers.stop().then(() => (stopped = true));
    assert.equal(sync.signal.aborted, true);
    await stopping;
    assert.equal(stopped, true);
    assert.deepEqual(s.kinds(), ['sync'], 'the pending update is dropped');
    assert.deepEqual(s.errors, []);
    s.workers.update({ type: 'sync', pod: pod('u3') });
    await flush();
    assert.deepEqual(s.kinds(), ['sync']);
    assert.equal(s.workers.phase('u3'), undefined);
  });

  it('reports a failed sync through onSyncError and keeps the worker usable', async () => {
    const s = setup();
    s.workers.update({ type: 'sync', pod: pod('u1') });
    const boom = new Error('boom');
    s.last('sync').done.reject(boom);
    await flush();
    assert.deepEqual(s.errors, [{ uid: 'u1', err: boom }]);
    assert.equal(s.workers.phase('u1'), 'syncing');
    s.workers.update({ type: 'sync', pod: pod('u1', 2) });
    await flush();
    assert.equal(s.kinds().length, 2);
  });

  it('reports a failed termination and stays terminating so it can be retried', async () => {
    const s = setup();
    s.workers.update({ type: 'kill', uid: 'u1', pod: undefined });
    await flush();
    const err = new Error('StopPodSandbox failed');
    s.last('terminating').done.reject(err);
    await flush();
    assert.deepEqual(s.errors, [{ uid: 'u1', err }]);
    assert.equal(s.workers.phase('u1'), 'terminating');
    s.workers.update({ type: 'kill', uid: 'u1', pod: undefined });
    await flush();
    assert.deepEqual(s.kinds(), ['terminating', 'terminating']);
  });

  it("retries a terminated pod's failed cleanup on its next update, and only until it succeeds", async () => {
    const s = setup();
    s.workers.update({ type: 'kill', uid: 'u1', pod: pod('u1') });
    await flush();
    s.last('terminating').done.resolve();
    await flush();
    const err = new Error('NodeUnpublishVolume: context deadline exceeded');
    s.last('terminated').done.reject(err);
    await flush();
    assert.deepEqual(s.errors, [{ uid: 'u1', err }]);
    assert.equal(s.workers.settled('u1'), false, 'a failed cleanup is not settled');
    // The work queue's resync after the error arrives as a sync: the cleanup runs again.
    s.workers.update({ type: 'sync', pod: pod('u1', 2) });
    await flush();
    assert.deepEqual(s.kinds(), ['terminating', 'terminated', 'terminated']);
    s.last('terminated').done.resolve();
    await flush();
    assert.equal(s.workers.settled('u1'), true);
    s.workers.update({ type: 'sync', pod: pod('u1', 3) });
    await flush();
    assert.deepEqual(s.kinds(), ['terminating', 'terminated', 'terminated'], 'no cleanup after a success');
  });

  it("reports a pod's container count once, at its first sync (upstream's SyncPodCreate)", async () => {
    const f = fakeHandlers();
    const created: number[] = [];
    const workers = createPodWorkers(f.handlers, nullLogger, {
      metrics: {
        workerStarted: () => undefined,
        workDone: () => undefined,
        podCreated: (n) => created.push(n),
      },
    });
    const p = pod('u1', 1);
    p.spec.containers = [
      { name: 'a', image: 'i' },
      { name: 'b', image: 'i' },
    ];
    workers.update({ type: 'sync', pod: p });
    await flush();
    f.last('sync').done.resolve({ terminal: false });
    workers.update({ type: 'sync', pod: p, syncType: 'update' });
    await flush();
    f.last('sync').done.resolve({ terminal: false });
    await flush();
    assert.deepEqual(created, [2]);
  });

  it('reports worker start and per-operation durations to the optional metrics hook', async () => {
    const f = fakeHandlers();
    let t = 1000;
    const started: number[] = [];
    const done: [string, number][] = [];
    const workers = createPodWorkers(f.handlers, nullLogger, {
      now: () => t,
      metrics: {
        workerStarted: (s) => started.push(s),
        workDone: (op, s) => done.push([op, s]),
      },
    });
    workers.update({ type: 'sync', pod: pod('u1', 1) });
    t += 250; // the first sync starts in the same tick; its duration runs until it resolves
    await flush();
    assert.deepEqual(started, [0]);
    workers.update({ type: 'sync', pod: pod('u1', 2), syncType: 'update' });
    t += 500;
    f.last('sync').done.resolve({ terminal: false });
    await flush();
    assert.deepEqual(done, [['create', 0.75]]);
    t += 1000;
    f.last('sync').done.resolve({ terminal: false });
    await flush();
    assert.deepEqual(done[1], ['update', 1.5]);
    workers.update({ type: 'sync', pod: pod('u1', 3) });
    await flush();
    f.last('sync').done.reject(new Error('boom'));
    await flush();
    assert.deepEqual(done[2], ['sync', 0], 'a failed sync is measured too');
    workers.update({ type: 'kill', uid: 'u1', pod: undefined });
    await flush();
    t += 2000;
    f.last('terminating').done.resolve();
    await flush();
    f.last('terminated').done.resolve();
    await flush();
    assert.deepEqual(done[3], ['kill', 2]);
    assert.equal(done.length, 4, 'the cleanup of a terminated pod is not an operation');
    assert.deepEqual(started, [0], 'only the first sync of a pod starts its worker');
  });
});
