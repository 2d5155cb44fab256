import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { alreadyGone, runTeardown } from './teardown.ts';

describe('runTeardown', () => {
  void it('runs every step after a failing one and reports each failure once at the end', async () => {
    const ran: number[] = [];
    await assert.rejects(
      runTeardown([
        () => ran.push(1),
        () => Promise.reject(new Error('stop failed')),
        () => ran.push(3),
        () => {
          throw new Error('close failed');
        },
        () => ran.push(5),
      ]),
      (err: Error) => {
        assert.equal(err.message, 'teardown: step 2: stop failed; step 4: close failed');
        return true;
      },
    );
    assert.deepEqual(ran, [1, 3, 5]);
  });

  void it('does not report failures the caller ignores, such as a 404 on a DELETE', async () => {
    await runTeardown([() => Promise.reject(new Error('nodes "n1" not found (404)'))], {
      ignore: alreadyGone,
    });
    await assert.rejects(
      runTeardown([() => Promise.reject(new Error('500'))], { ignore: alreadyGone }),
      /step 1: 500/,
    );
  });
});
