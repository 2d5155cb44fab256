/**
 * The attacker suite against live standalone tskubelet processes on the bed's containerd: every
 * probe of probes.ts for the `standalone` and `standalone-hostile` nodes, made as `nobody` and from
 * a headless chromium. Run alone on the bed:
 * `flock /tmp/tskubelet-bed.lock node --test test/security/standalone.test.ts`.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { probesFor } from './probes.ts';
import { createBrowserSession } from './lib/browser.ts';
import { explain, runProbe } from './lib/run-probe.ts';
import { startStandaloneTarget } from './lib/standalone.ts';
import type { LiveTarget } from './lib/target.ts';

for (const name of ['standalone', 'standalone-hostile'] as const) {
  void describe(`attacker suite: ${name} tskubelet`, () => {
    let target: LiveTarget | undefined;
    const browser = createBrowserSession();
    before(async () => {
      target = await startStandaloneTarget(name);
    });
    after(async () => {
      await browser.close();
      await target?.stop();
    });
    for (const p of probesFor(name)) {
      void it(`${p.id}: ${p.attempt} → ${p.expected}`, async () => {
        if (!target) throw new Error('the node did not start (see before())');
        const r = await runProbe(p, target, browser);
        assert.ok(r.ok, explain(p, r));
      });
    }
  });
}
