/**
 * The reliability suite's short mode in CI: every fault scenario at its quick repetition count, on
 * the real bed; each check must hold. The full mode is `node test/reliability/run.ts`.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { testLogger } from '../kit/bed.ts';
import { SCENARIOS } from './scenarios/index.ts';
import { failedQuickChecks } from './scenario.ts';

describe('reliability: faults (quick mode)', () => {
  // The in-process `limits` scenario runs in its own file (limits.test.ts), so its own process: in
  // this one the heap the earlier scenarios leave behind made its GC pauses part of the kubelet's.
  for (const s of SCENARIOS.filter((x) => x.id !== 'limits')) {
    it(`${s.id}: ${s.fault}`, async () => {
      assert.deepEqual(await failedQuickChecks(s, testLogger()), []);
    });
  }
});
