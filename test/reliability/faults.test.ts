/**
 * The reliability suite's short mode in CI: every fault scenario at its quick repetition count, on
 * the real bed; each check must hold. The full mode is `node test/reliability/run.ts`.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { testLogger } from '../kit/bed.ts';
import { SCENARIOS } from './scenarios/index.ts';

describe('reliability: faults (quick mode)', () => {
  for (const s of SCENARIOS) {
    it(`${s.id}: ${s.fault}`, async () => {
      const r = await s.run({
        reps: s.reps.quick,
        mode: 'quick',
        logger: testLogger(),
        signal: new AbortController().signal,
      });
      const failed = r.checks.filter((c) => !c.ok);
      assert.ok(r.checks.length > 0, 'the scenario checked something');
      assert.deepEqual(
        failed.map((c) => `${c.what}: expected ${c.expected}, saw ${c.observed}`),
        [],
      );
    });
  }
});
