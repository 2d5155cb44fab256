/**
 * The reliability suite's `limits` scenario in CI (quick mode), in a process of its own: the
 * kubelet it measures runs in this process (on the fake CRI), so its event-loop stalls include
 * this process's garbage collection, and the heap must be the kubelet's alone — not what the
 * other scenarios (faults.test.ts) leave behind. Each check must hold.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { testLogger } from '../kit/bed.ts';
import { limitsScenario } from './scenarios/limits.ts';
import { failedQuickChecks } from './scenario.ts';

describe('reliability: limits (quick mode)', () => {
  it(`limits: ${limitsScenario.fault}`, async () => {
    assert.deepEqual(await failedQuickChecks(limitsScenario, testLogger()), []);
  });
});
