/**
 * A test file's `after`: every teardown step runs, in order, even when an earlier one failed, and
 * the failures are reported together at the end (Go tests' t.Cleanup semantics, where one failing
 * cleanup does not skip the others).
 */
import { describeError } from '../../src/util/errors.ts';

export interface TeardownOptions {
  /** Failures that mean "already gone" (e.g. a 404 on a DELETE) and are not reported. */
  ignore?: (err: unknown) => boolean;
}

/** What a DELETE of something already deleted answers: not a teardown failure. */
export const alreadyGone = (err: unknown): boolean => /404|not found/i.test(describeError(err));

/** Runs each step in order; rejects once, naming every failed step, if any failed. */
export async function runTeardown(
  steps: readonly (() => unknown)[],
  opts: TeardownOptions = {},
): Promise<void> {
  const failures: string[] = [];
  for (const [i, step] of steps.entries()) {
    try {
      await step();
    } catch (err) {
      if (!opts.ignore?.(err)) failures.push(`step ${i + 1}: ${describeError(err)}`);
    }
  }
  if (failures.length > 0) throw new Error(`teardown: ${failures.join('; ')}`);
}
