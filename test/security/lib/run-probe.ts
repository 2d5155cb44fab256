/**
 * One probe of the table against one live kubelet, its outcome as a record the tests assert on
 * and the runner keeps (bench/results/security/). No upstream counterpart.
 */
import { describeError } from '../../../src/util/errors.ts';
import type { Probe } from '../probes.ts';
import type { BrowserSession } from './browser.ts';
import { runCheck } from './checks.ts';
import type { LiveTarget } from './target.ts';

export interface ProbeResult {
  id: string;
  /** The node probed: a tskubelet target, or `upstream`. */
  target: string;
  /** Whether tskubelet's expectation holds for what was seen (for upstream: whether it would). */
  ok: boolean;
  observed: string;
  details: string[];
  durationMs: number;
}

export async function runProbe(p: Probe, t: LiveTarget, browser: BrowserSession): Promise<ProbeResult> {
  const started = Date.now();
  try {
    const o = p.check.kind === 'browser' ? await browser.run(p.check.scenario, t) : await runCheck(p, t);
    return { id: p.id, target: t.name, ...o, durationMs: Date.now() - started };
  } catch (err) {
    return {
      id: p.id,
      target: t.name,
      ok: false,
      observed: `the probe failed: ${describeError(err).slice(0, 200)}`,
      details: [],
      durationMs: Date.now() - started,
    };
  }
}

/** The assertion message of a failed probe. */
export function explain(p: Probe, r: ProbeResult): string {
  return [`${p.id} on ${r.target}: expected ${p.expected}, saw ${r.observed}`, ...r.details].join('\n  ');
}
