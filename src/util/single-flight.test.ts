import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { singleFlight } from './single-flight.ts';

describe('singleFlight', () => {
  it('joins a call made while a pass runs instead of starting a second one', async () => {
    const flight = singleFlight<number>();
    const gate = Promise.withResolvers<number>();
    let runs = 0;
    const pass = (): Promise<number> => {
      runs++;
      return gate.promise;
    };
    const a = flight.run(pass);
    const b = flight.run(() => Promise.resolve(-1));
    assert.equal(flight.busy, true);
    gate.resolve(7);
    assert.deepEqual(await Promise.all([a, b]), [7, 7]);
    assert.equal(runs, 1);
    assert.equal(flight.busy, false);
    assert.equal(await flight.run(() => Promise.resolve(8)), 8, 'a call after the pass starts a new one');
  });

  it('hands a rejection to every caller, frees the slot, and idle() still resolves', async () => {
    const flight = singleFlight<void>();
    const gate = Promise.withResolvers<void>();
    const a = flight.run(() => gate.promise);
    const b = flight.run(() => Promise.resolve());
    const idle = flight.idle();
    gate.reject(new Error('boom'));
    await assert.rejects(a, /boom/);
    await assert.rejects(b, /boom/);
    await idle;
    assert.equal(flight.busy, false);
    await flight.idle();
  });
});
