/**
 * One node:test suite per live node: the node started once, then one test per probe of the table
 * that applies to it, failing with what was expected and what was seen. No upstream counterpart.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { probesFor, type TargetName } from '../probes.ts';
import { createBrowserSession } from './browser.ts';
import { explain, runProbe } from './run-probe.ts';
import type { LiveTarget } from './target.ts';

export function probeSuite(name: TargetName, start: () => Promise<LiveTarget>): void {
  void describe(`attacker suite: ${name} tskubelet`, () => {
    let target: LiveTarget | undefined;
    const browser = createBrowserSession();
    before(async () => {
      target = await start();
    });
    after(async () => {
      await browser.close();
      await target?.stop();
    });
    for (const p of probesFor(name)) {
      const opts = p.knownGap ? { todo: `known gap: ${p.knownGap}` } : {};
      void it(`${p.id}: ${p.attempt} → ${p.expected}`, opts, async () => {
        if (!target) throw new Error('the node did not start (see before())');
        const r = await runProbe(p, target, browser);
        assert.ok(r.ok, explain(p, r));
      });
    }
  });
}
