/**
 * The reliability suite's fuzzing in CI: every input surface with a few hundred generated cases
 * (FUZZ_RUNS overrides; the nightly count is 10,000 through `node test/reliability/run.ts`).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { SURFACES } from './fuzz/index.ts';

const RUNS = Number(process.env.FUZZ_RUNS ?? 300);

describe('reliability: fuzzing (CI count)', () => {
  for (const f of SURFACES) {
    it(`${f.id}: ${RUNS} generated inputs, no crash, no hang, every rejection names what is wrong`, async () => {
      const r = await f.run({ runs: RUNS });
      assert.equal(r.cases, RUNS);
      assert.deepEqual(
        { crashes: r.crashes, hangs: r.hangs, unclear: r.unclear },
        { crashes: 0, hangs: 0, unclear: 0 },
        r.examples.join('\n'),
      );
    });
  }
});
