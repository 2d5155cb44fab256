// The kit's poll-until (test/kit/poll.ts): no upstream counterpart (wait.PollUntilContextTimeout's tests).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { until, untilWithin } from './poll.ts';

describe('until', () => {
  it('returns the first value that is neither undefined nor false', async () => {
    let n = 0;
    const v = await until('n to reach 3', () => (++n >= 3 ? n : false), { intervalMs: 1 });
    assert.equal(v, 3);
  });

  it('awaits an async getter', async () => {
    let n = 0;
    assert.equal(
      await until('n', () => Promise.resolve(++n === 2 ? 'two' : undefined), { intervalMs: 1 }),
      'two',
    );
  });

  it('fails naming what it waited for and the last value seen', async () => {
    await assert.rejects(
      until('the answer', () => false, { timeoutMs: 20, intervalMs: 5 }),
      {
        message: /^timed out waiting for the answer \(after 20 ms; last value: false\)$/,
      },
    );
  });

  it('fails at once when the getter throws, unless the error is to be retried', async () => {
    await assert.rejects(
      until('x', () => {
        throw new Error('boom');
      }),
      { message: 'boom' },
    );
    await assert.rejects(
      until(
        'x',
        () => {
          throw new Error('not up yet');
        },
        { timeoutMs: 20, intervalMs: 5, retryError: () => true },
      ),
      { message: /timed out waiting for x \(after 20 ms; last error: not up yet\)/ },
    );
  });

  it('adds the described state to the failure', async () => {
    await assert.rejects(
      until('x', () => undefined, { timeoutMs: 1, intervalMs: 0, describe: () => ({ pods: 0 }) }),
      {
        message: /last value: undefined\)\n\{\n "pods": 0\n\}/,
      },
    );
  });

  it('stops when aborted', async () => {
    const ac = new AbortController();
    setTimeout(() => ac.abort(new Error('stopped')), 10);
    await assert.rejects(
      until('never', () => false, { signal: ac.signal, intervalMs: 5 }),
      { message: 'stopped' },
    );
  });
});

describe('untilWithin', () => {
  it('uses its default timeout unless a call gives one', async () => {
    const u = untilWithin(10, { intervalMs: 2 });
    await assert.rejects(
      u('x', () => false),
      { message: /after 10 ms/ },
    );
    await assert.rejects(
      u('x', () => false, 15),
      { message: /after 15 ms/ },
    );
  });
});
