import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { KubeletError } from '../../util/errors.ts';
import { flush } from '../../util/testing.ts';
import { createRuntimePacer, type PacedStep } from './pacer.ts';

/** A call the test finishes by hand, on a clock the test moves. */
function harness(opts: { initial?: number; floor?: number; max?: number } = {}) {
  let now = 0;
  const pacer = createRuntimePacer({ ...opts, monotonic: () => now });
  const started: string[] = [];
  const finishers = new Map<string, (fail?: Error) => void>();
  const results = new Map<string, unknown>();
  const call = (pod: string, step: PacedStep, name: string, signal?: AbortSignal): Promise<unknown> => {
    const p = pacer.run(
      pod,
      step,
      () =>
        new Promise<string>((resolve, reject) => {
          started.push(name);
          finishers.set(name, (fail) => (fail ? reject(fail) : resolve(name)));
        }),
      signal,
    );
    void p.then(
      (v) => results.set(name, v),
      (e: unknown) => results.set(name, e),
    );
    return p;
  };
  const finish = async (name: string, afterMs = 0, fail?: Error): Promise<void> => {
    now += afterMs;
    const f = finishers.get(name);
    assert.ok(f, `${name} has not started`);
    f(fail);
    await flush();
  };
  return { pacer, call, finish, started, results, advance: (ms: number) => (now += ms) };
}

describe('runtime pacer', () => {
  it('never holds back a pod alone with the runtime, however many containers it starts', async () => {
    const h = harness({ initial: 2 });
    for (let i = 0; i < 10; i++) void h.call('a', 'CreateContainer', `a-${i}`);
    await flush();
    assert.equal(h.started.length, 10);
  });

  it('runs at most the limit of calls at once when several pods start, the rest waiting', async () => {
    const h = harness({ initial: 4 });
    for (let i = 0; i < 10; i++) void h.call(`p${i}`, 'RunPodSandbox', `sb-${i}`);
    await flush();
    assert.deepEqual(h.started, ['sb-0', 'sb-1', 'sb-2', 'sb-3']);
    assert.deepEqual(h.pacer.stats(), { limit: 4, inFlight: 4, waiting: 6 });
  });

  it("puts a pod's later step before the first step of a pod that arrived after it", async () => {
    const h = harness({ initial: 2, max: 2 });
    for (let i = 0; i < 4; i++) void h.call(`p${i}`, 'RunPodSandbox', `sb-${i}`);
    await flush();
    assert.deepEqual(h.started, ['sb-0', 'sb-1']);
    // p0's sandbox is ready: its container create queues behind nothing of later pods.
    void h.call('p0', 'CreateContainer', 'create-0');
    await h.finish('sb-0', 100);
    assert.deepEqual(h.started, ['sb-0', 'sb-1', 'create-0']);
    await h.finish('sb-1', 0);
    assert.deepEqual(h.started.at(-1), 'sb-2', 'then the next pod in arrival order');
  });

  it('shrinks the limit when calls take over 3× their baseline, never below the floor', async () => {
    const h = harness({ initial: 4, floor: 2 });
    void h.call('warm', 'RunPodSandbox', 'warm');
    await flush();
    await h.finish('warm', 80); // the baseline: 80 ms alone (and the limit grows: 5)
    assert.equal(h.pacer.stats().limit, 5);
    for (let round = 0; round < 12; round++) {
      const names = [`x${round}`, `y${round}`];
      void h.call(`px${round}`, 'RunPodSandbox', names[0]!);
      void h.call(`py${round}`, 'RunPodSandbox', names[1]!);
      await flush();
      await h.finish(names[0]!, 400); // 5× the baseline: the runtime queues
      await h.finish(names[1]!, 0);
    }
    assert.equal(h.pacer.stats().limit, 2, 'down to the floor and held there');
  });

  it('grows the limit while calls stay near their baseline, never above the max', async () => {
    const h = harness({ initial: 2, max: 6 });
    for (let i = 0; i < 10; i++) {
      void h.call(`p${i}`, 'StartContainer', `s${i}`);
      await flush();
      await h.finish(`s${i}`, 50);
    }
    assert.equal(h.pacer.stats().limit, 6);
  });

  it('ends a wait with Canceled when its signal aborts, and the others go on', async () => {
    const h = harness({ initial: 2, max: 2 });
    void h.call('p0', 'RunPodSandbox', 'sb-0');
    void h.call('p1', 'RunPodSandbox', 'sb-1');
    const ac = new AbortController();
    const waiting = h.call('p2', 'RunPodSandbox', 'sb-2', ac.signal);
    void h.call('p3', 'RunPodSandbox', 'sb-3');
    await flush();
    ac.abort(new Error('pod deleted'));
    await assert.rejects(waiting, (e: unknown) => e instanceof KubeletError && e.code === 'Canceled');
    await h.finish('sb-0', 10);
    assert.deepEqual(h.started, ['sb-0', 'sb-1', 'sb-3']);
    assert.equal(h.pacer.stats().waiting, 0);
  });

  it("passes a call's error through and frees its slot", async () => {
    const h = harness({ initial: 2, max: 2 });
    const failing = h.call('p0', 'CreateContainer', 'c0');
    void h.call('p1', 'CreateContainer', 'c1');
    void h.call('p2', 'CreateContainer', 'c2');
    await flush();
    await h.finish('c0', 10, new Error('image not found'));
    await assert.rejects(failing, /image not found/);
    assert.deepEqual(h.started, ['c0', 'c1', 'c2']);
  });
});
