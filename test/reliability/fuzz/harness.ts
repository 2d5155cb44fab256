/**
 * The fuzzing harness every surface shares: `runs` generated inputs (fast-check, a fixed seed so a
 * run can be replayed) through the surface's real code path, each classified, and the first
 * failures replayed and shrunk for the report.
 *
 * How a case is classified (the issue's "0 crashes, 0 hangs, each rejection a clear message naming
 * the field", made precise):
 * - crash: the code path threw something that is not the surface's typed rejection (a TypeError,
 *   a RangeError from recursion, an untyped Error…), or an uncaught exception / unhandled rejection
 *   happened while the case ran, or (kubelet API) the answer was a 5xx or no answer at all for a
 *   request the server could have refused;
 * - hang: the case took longer than the surface's per-case bound (measured around the whole case,
 *   so a synchronous stall counts too);
 * - unclear: a rejection whose message names none of the fields the input's generator corrupted
 *   (each generated input carries the paths/flags a rejection must name), or an input with a
 *   corruption that upstream's decoder or validation always refuses (a wrong JSON type for a known
 *   field, a name no DNS label can be…) accepted without a word;
 * - rejected: a typed rejection whose message names the corrupted field;
 * - accepted: everything else.
 */
import fc from 'fast-check';
import { performance } from 'node:perf_hooks';
import { describeError } from '../../../src/util/errors.ts';
import type { FuzzResult } from '../report.ts';

/** What the generator knows about one input: what must happen and what a rejection must name. */
export interface Expectation {
  /** One line for reports: what the input is ("spec.containers[0].ports[0].containerPort = -5"). */
  what: string;
  /** True when every valid kubelet must refuse the input; false when either outcome is fine. */
  mustReject: boolean;
  /**
   * A rejection must contain one of these (a field path, a flag, a status code, "line 3"); empty:
   * any non-empty message is enough (an input with no targeted corruption).
   */
  names: readonly (string | RegExp)[];
}

export interface FuzzInput {
  expect: Expectation;
}

/** What the real code did with one input. */
export type Verdict =
  | { kind: 'accepted'; detail?: string }
  | { kind: 'rejected'; message: string }
  /** A refusal the surface itself found unclear (a rule its expectation cannot state). */
  | { kind: 'unclear'; why: string }
  | { kind: 'crash'; detail: string };

export type Outcome = 'accepted' | 'rejected' | 'crash' | 'hang' | 'unclear';

export interface SurfaceSpec<T extends FuzzInput> {
  id: string;
  arbitrary: fc.Arbitrary<T>;
  /** Runs one input through the real code. `signal` aborts when the case passed its bound. */
  exec(input: T, signal: AbortSignal): Promise<Verdict>;
  /** Per-case bound (or a function of the input, for inputs whose size scales the work); longer is a hang. */
  caseTimeoutMs: number | ((input: T) => number);
  /** A short rendering of an input for the report (default: its expectation's `what`). */
  show?(input: T): string;
}

export const DEFAULT_SEED = 13;

/** The seed: the caller's, else FUZZ_SEED (a number, or `random`), else {@link DEFAULT_SEED}. */
export function seedOf(seed: number | undefined): number {
  if (seed !== undefined) return seed;
  const env = process.env.FUZZ_SEED;
  if (env === 'random') return Date.now() % 2 ** 31;
  if (env !== undefined && env !== '' && Number.isSafeInteger(Number(env))) return Number(env);
  return DEFAULT_SEED;
}

function matchesName(message: string, name: string | RegExp): boolean {
  return typeof name === 'string' ? message.includes(name) : name.test(message);
}

/** The classification of one verdict (see the file comment). */
export function classify(
  expect: Expectation,
  verdict: Verdict,
  elapsedMs: number,
  boundMs: number,
): { outcome: Outcome; why: string } {
  if (verdict.kind === 'crash') return { outcome: 'crash', why: verdict.detail };
  if (elapsedMs > boundMs)
    return { outcome: 'hang', why: `took ${Math.round(elapsedMs)} ms (bound ${boundMs})` };
  if (verdict.kind === 'unclear') return { outcome: 'unclear', why: verdict.why };
  if (verdict.kind === 'accepted') {
    return expect.mustReject
      ? {
          outcome: 'unclear',
          why: `accepted although invalid${verdict.detail ? ` (${verdict.detail})` : ''}`,
        }
      : { outcome: 'accepted', why: '' };
  }
  const msg = verdict.message;
  if (msg.trim() === '') return { outcome: 'unclear', why: 'rejected with an empty message' };
  if (expect.names.length > 0 && !expect.names.some((n) => matchesName(msg, n))) {
    return {
      outcome: 'unclear',
      why: `rejection does not name ${expect.names.map(String).join(' or ')}: ${clip(msg, 300)}`,
    };
  }
  return { outcome: 'rejected', why: '' };
}

export function clip(s: string, max = 200): string {
  const one = s.replace(/\s+/g, ' ');
  return one.length > max ? `${one.slice(0, max - 1)}…` : one;
}

/** A description of anything thrown, with its class: `TypeError: x is not a function`. */
export function thrown(err: unknown): string {
  const name = err instanceof Error ? err.constructor.name : typeof err;
  return `${name}: ${describeError(err)}`;
}

/**
 * Watches for uncaught exceptions and unhandled rejections while a surface runs; each one is a
 * crash of the case running at that moment (or the last one, for late ones).
 */
function watchProcess(): { take(): string[]; stop(): void } {
  let seen: string[] = [];
  const onError = (err: unknown) => seen.push(`uncaught ${thrown(err)}`);
  const onRejection = (err: unknown) => seen.push(`unhandled rejection ${thrown(err)}`);
  process.on('uncaughtException', onError);
  process.on('unhandledRejection', onRejection);
  return {
    take() {
      const out = seen;
      seen = [];
      return out;
    },
    stop() {
      process.off('uncaughtException', onError);
      process.off('unhandledRejection', onRejection);
    },
  };
}

interface Ran {
  outcome: Outcome;
  why: string;
}

async function runCase<T extends FuzzInput>(
  spec: SurfaceSpec<T>,
  input: T,
  proc: { take(): string[] },
): Promise<Ran> {
  const ac = new AbortController();
  const bound = typeof spec.caseTimeoutMs === 'number' ? spec.caseTimeoutMs : spec.caseTimeoutMs(input);
  const t0 = performance.now();
  let timer: NodeJS.Timeout | undefined;
  const overdue = new Promise<Verdict>((resolve) => {
    // Twice the bound before giving up on the case: between bound and 2×bound it still finishes
    // and is counted a hang by its measured time; past 2×bound it is abandoned (and aborted).
    timer = setTimeout(() => {
      ac.abort(new Error('case bound exceeded'));
      resolve({ kind: 'accepted', detail: 'abandoned' });
    }, bound * 2);
  });
  let verdict: Verdict;
  try {
    verdict = await Promise.race([spec.exec(input, ac.signal), overdue]);
  } catch (err) {
    verdict = { kind: 'crash', detail: `exec threw ${thrown(err)}` };
  } finally {
    clearTimeout(timer);
  }
  const elapsed = performance.now() - t0;
  // Let late errors of this case (a handler that throws after answering) surface before judging.
  await new Promise<void>((r) => setImmediate(r));
  const late = proc.take();
  if (late.length > 0) return { outcome: 'crash', why: late.join('; ') };
  return classify(input.expect, verdict, elapsed, bound);
}

const FAILING: ReadonlySet<Outcome> = new Set(['crash', 'hang', 'unclear']);
/** Failures replayed and shrunk for the report (each shrink is bounded in time). */
const SHRINK_EXAMPLES = 3;
const SHRINK_TIME_MS = 20_000;

/** Runs a surface: `runs` cases counted, then the first few failures shrunk into `examples`. */
export async function runSurface<T extends FuzzInput>(
  spec: SurfaceSpec<T>,
  opts: { runs: number; seed?: number },
): Promise<FuzzResult> {
  const seed = seedOf(opts.seed);
  const show = (x: T) => clip(spec.show ? spec.show(x) : x.expect.what, 240);
  const counts: Record<Outcome, number> = { accepted: 0, rejected: 0, crash: 0, hang: 0, unclear: 0 };
  const failures: { index: number; outcome: Outcome; why: string; input: string }[] = [];
  const proc = watchProcess();
  const t0 = performance.now();
  try {
    let index = 0;
    await fc.check(
      fc.asyncProperty(spec.arbitrary, async (input) => {
        const i = index++;
        const r = await runCase(spec, input, proc);
        counts[r.outcome]++;
        if (FAILING.has(r.outcome)) {
          failures.push({ index: i, ...r, input: show(input) });
          if (process.env.FUZZ_VERBOSE)
            process.stderr.write(`${spec.id} #${i} ${r.outcome}: ${show(input)} → ${clip(r.why, 400)}\n`);
        }
        return true;
      }),
      { numRuns: opts.runs, seed },
    );
    const durationMs = performance.now() - t0;
    const examples: string[] = [];
    // One shrunk example per kind of failure first, then more of the commonest.
    const picked = [...new Map(failures.map((f) => [f.outcome, f])).values(), ...failures].filter(
      (f, i, all) => all.indexOf(f) === i,
    );
    for (const f of picked.slice(0, SHRINK_EXAMPLES)) {
      examples.push(await shrink(spec, f, seed, proc, show));
    }
    return {
      surface: spec.id,
      cases: index,
      accepted: counts.accepted,
      rejected: counts.rejected,
      crashes: counts.crash,
      hangs: counts.hang,
      unclear: counts.unclear,
      durationMs,
      examples,
    };
  } finally {
    proc.stop();
  }
}

/** Replays failure `f` (seed + run index) and lets fast-check shrink it while it still fails. */
async function shrink<T extends FuzzInput>(
  spec: SurfaceSpec<T>,
  f: { index: number; outcome: Outcome; why: string; input: string },
  seed: number,
  proc: { take(): string[] },
  show: (x: T) => string,
): Promise<string> {
  const replay = `seed ${seed} path ${f.index}`;
  let last = { outcome: f.outcome, why: f.why };
  const details = await fc.check(
    fc.asyncProperty(spec.arbitrary, async (input) => {
      const r = await runCase(spec, input, proc);
      if (!FAILING.has(r.outcome)) return true;
      last = r;
      return false;
    }),
    { seed, path: String(f.index), numRuns: 1, interruptAfterTimeLimit: SHRINK_TIME_MS },
  );
  const shrunk = details.counterexample?.[0];
  if (!shrunk) return `${f.outcome} (${replay}): ${f.input} → ${clip(f.why, 300)}`;
  return `${last.outcome} (${replay}, shrunk): ${show(shrunk)} → ${clip(last.why, 300)}`;
}
