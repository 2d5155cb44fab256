/**
 * Scenario `limits` (issue 13): inputs at and past the sizes a kubelet must survive, through the
 * real file source into a kubelet on the fake CRI (in-process: the limits are the kubelet's, not
 * the runtime's) — a manifest directory of 10,000 files (valid and invalid mixed), a 100 MiB
 * manifest next to a 9.5 MiB one, a pod with 1,000 containers and one with 1,000 env vars. Each
 * must be refused with a clear message or handled, and the event loop (which runs the sync loop,
 * probes and the API) must keep turning while it is processed.
 *
 * Bounds, and why:
 * - event-loop stall max ≤ 250 ms and p99 ≤ 100 ms while an input is processed, on the main
 *   thread's own CPU clock (limits-support's delayMeter: the wall clock also counts waiting for a
 *   core behind other processes, and is reported beside, not checked): the kubelet's
 *   shortest periods are 1 s (sync-loop tick, PLEG relist, probes at periodSeconds 1); one stall
 *   may cost them at most a quarter of a period, and waits beyond a tenth of one must be rare
 *   (p99 of the 10 ms meter's samples, checked when there are at least 100: below that the p99
 *   is the max, and the max bound applies). Each phase starts after a full GC (collectGarbage), so
 *   the earlier phases' garbage is not collected inside it;
 * - the 10,000-file directory read within fileCheckFrequency (20 s): a read longer than its own
 *   period would never leave the source idle; the re-read after one file changed likewise;
 * - the 100 MiB manifest refused without being read (upstream's 10 MiB maxConfigLength), in ≤ 2 s;
 * - the pods with 1,000 containers or env vars running within 60 s on the fake CRI (the runtime
 *   costs nothing there: what is measured is the kubelet).
 */
import { mkdtemp, rm, writeFile, mkdir, open } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { MAX_MANIFEST_BYTES } from '../../../src/config/defaults.ts';
import { describeError } from '../../../src/util/errors.ts';
import { buildManifest } from '../../kit/pod.ts';
import { collectGarbage, delayMeter, describeDelay, type Delay } from '../../kit/stall-meter.ts';
import { atMost, check, countIs, type Check, type ScenarioResult } from '../report.ts';
import type { Scenario, ScenarioContext } from '../scenario.ts';
import {
  allRunning,
  podManifest,
  startKubelet,
  until,
  watchedFileSource,
  type Statused,
} from './limits-support.ts';

const EVENT_LOOP_MAX_MS = 250;
const EVENT_LOOP_P99_MS = 100;
const FILES = 10_000;
const FILE_CHECK_FREQUENCY_MS = 20_000;

/** Below this many 10 ms ticks a p99 is the max itself: only the max bound applies. */
const P99_MIN_SAMPLES = 100;

function delayChecks(what: string, d: Delay): Check[] {
  const max = atMost(`${what}: event-loop stall max (thread CPU clock)`, d.maxMs, EVENT_LOOP_MAX_MS, 'ms');
  if (d.samples < P99_MIN_SAMPLES) return [max];
  return [max, atMost(`${what}: event-loop stall p99 (thread CPU clock)`, d.p99Ms, EVENT_LOOP_P99_MS, 'ms')];
}

/** File i of the 10,000: half valid pods, the rest broken in ways that name what is wrong. */
function manifestFile(i: number): { name: string; text: string; kind: 'valid' | 'invalid' | 'ignored' } {
  const c = [{ name: 'app', image: 'busybox:1.29' }];
  switch (i % 20) {
    case 10:
      return {
        name: `p${i}.json`,
        text: podManifest(`p${i}`, [{ name: 'app', image: 'busybox:1.29', ports: 'http' }]),
        kind: 'invalid',
      };
    case 11:
      return {
        name: `p${i}.yaml`,
        text: stringify({
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: { name: `Bad_${i}` },
          spec: { containers: c },
        }),
        kind: 'invalid',
      };
    case 12:
      return {
        name: `p${i}.yaml`,
        text: stringify({
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: { name: `p${i}` },
          spec: { restartPolicy: 'Sometimes', containers: c },
        }),
        kind: 'invalid',
      };
    case 13:
      return {
        name: `p${i}.yaml`,
        text: stringify({ apiVersion: 'v1', kind: 'Deployment', metadata: { name: `p${i}` } }),
        kind: 'invalid',
      };
    case 14:
    case 15:
    case 16:
      return {
        name: `p${i}.yaml`,
        text: `apiVersion: v1\nkind: Pod\nmetadata:\n  name: p${i}\n  : : broken\n`,
        kind: 'invalid',
      };
    case 17:
      return { name: `p${i}.yml`, text: '', kind: 'invalid' };
    case 18:
      return { name: `p${i}.yaml.bak`, text: podManifest(`p${i}`, c), kind: 'ignored' };
    case 19:
      return { name: `p${i}.yaml`, text: '\u0000\u0001\u00ff{[', kind: 'invalid' };
    default:
      return {
        name: `p${i}.${i % 2 === 0 ? 'json' : 'yaml'}`,
        text: i % 2 === 0 ? podManifest(`p${i}`, c) : stringify(buildManifest(`p${i}`, { containers: c })),
        kind: 'valid',
      };
  }
}

async function tenThousandFiles(ctx: ScenarioContext, dir: string, notes: string[]): Promise<Check[]> {
  const manifests = join(dir, 'manifests');
  await mkdir(manifests);
  const files = Array.from({ length: FILES }, (_, i) => manifestFile(i));
  for (let i = 0; i < files.length; i += 500) {
    await Promise.all(files.slice(i, i + 500).map((f) => writeFile(join(manifests, f.name), f.text)));
  }
  const valid = files.filter((f) => f.kind === 'valid').length;
  const invalid = files.filter((f) => f.kind === 'invalid').length;
  const watched = watchedFileSource(manifests, ctx.logger, { checkFrequencyMs: FILE_CHECK_FREQUENCY_MS });
  const meter = delayMeter();
  const t0 = performance.now();
  const k = await startKubelet(dir, watched.source, ctx.logger);
  try {
    const first = await until('the first snapshot', () => watched.snapshots[0], 120_000, ctx.signal);
    const readMs = first.at - t0;
    // Every valid pod is decided: admitted and running (up to maxPods), or refused at admission.
    const settled = await until(
      'every pod admitted or refused',
      () => {
        const pods = k.kubelet.pods() as Statused[];
        if (pods.length < valid) return undefined;
        const running = pods.filter((p) => p.status?.phase === 'Running').length;
        const refused = pods.filter(
          (p) => p.status?.phase === 'Failed' && p.status.reason === 'OutOfpods',
        ).length;
        return running + refused === valid ? { running, refused } : undefined;
      },
      180_000,
      ctx.signal,
    );
    const settleMs = performance.now() - t0;
    const delay = meter.stop();

    // One file changes: the next re-read (watch-triggered) goes through all 10,000 again.
    const again = delayMeter();
    const before = watched.snapshots.length;
    const t1 = performance.now();
    await writeFile(
      join(manifests, 'p0.json'),
      podManifest('p0', [{ name: 'app', image: 'busybox:1.29', args: ['changed'] }]),
    );
    const reread = await until('the re-read', () => watched.snapshots[before], 120_000, ctx.signal);
    const rereadMs = reread.at - t1;
    const rereadDelay = again.stop();

    const unclear = watched.problems.filter(
      (p) => !/(spec|metadata|kind|YAML: line \d+|empty|object)/.test(p.message),
    );
    notes.push(
      `10,000 files: first snapshot after ${Math.round(readMs)} ms, all ${valid} pods decided after ${Math.round(settleMs)} ms ` +
        `(${settled.running} running, ${settled.refused} refused OutOfpods); re-read after one change ${Math.round(rereadMs)} ms; ` +
        `${describeDelay(delay)}; re-read: ${describeDelay(rereadDelay)}`,
    );
    return [
      atMost('10,000 files: first snapshot', readMs, FILE_CHECK_FREQUENCY_MS, 'ms'),
      countIs('10,000 files: valid pods in the snapshot', first.pods, valid),
      countIs('10,000 files: broken files reported (each once)', watched.problems.length, invalid),
      countIs('10,000 files: reports that name no field, line or reason', unclear.length, 0),
      check(
        '10,000 files: pods admitted up to maxPods, the rest refused',
        '110 running, rest OutOfpods',
        `${settled.running} running, ${settled.refused} refused`,
        settled.running === 110 && settled.refused === valid - 110,
      ),
      ...delayChecks('10,000 files (read, admission, 110 pods started)', delay),
      atMost('10,000 files: re-read after one file changed', rereadMs, FILE_CHECK_FREQUENCY_MS, 'ms'),
      ...delayChecks('10,000 files: re-read', rereadDelay),
    ];
  } finally {
    await k.stop();
  }
}

async function writeBig(path: string, bytes: number): Promise<void> {
  const f = await open(path, 'w');
  try {
    const chunk = Buffer.alloc(2 ** 20, 'a');
    const header = Buffer.from('apiVersion: v1\nkind: Pod\nmetadata:\n  name: huge\n  annotations:\n    x: ');
    await f.write(header);
    for (let written = header.length; written < bytes; written += chunk.length) await f.write(chunk);
  } finally {
    await f.close();
  }
}

/** A 100 MiB manifest beside a normal one: refused without being read, the other one runs. */
async function hugeManifest(ctx: ScenarioContext, dir: string, notes: string[]): Promise<Check[]> {
  const manifests = join(dir, 'manifests');
  await mkdir(manifests);
  await writeBig(join(manifests, 'huge.yaml'), 100 * 2 ** 20);
  await writeFile(
    join(manifests, 'small.json'),
    podManifest('small', [{ name: 'app', image: 'busybox:1.29' }]),
  );
  const watched = watchedFileSource(manifests, ctx.logger);
  const meter = delayMeter();
  const t0 = performance.now();
  const k = await startKubelet(dir, watched.source, ctx.logger);
  try {
    const refusal = await until(
      'the 100 MiB refusal',
      () => watched.problems.find((p) => p.origin.endsWith('huge.yaml')),
      30_000,
      ctx.signal,
    );
    const refusedMs = performance.now() - t0;
    await until(
      'the small pod running',
      () => k.kubelet.pods().find((p) => allRunning(p, 1)),
      60_000,
      ctx.signal,
    );
    const runningMs = performance.now() - t0;
    const delay = meter.stop();
    notes.push(
      `100 MiB manifest refused after ${Math.round(refusedMs)} ms ("${refusal.message}"), the pod beside it running after ` +
        `${Math.round(runningMs)} ms; ${describeDelay(delay)}`,
    );
    return [
      check(
        '100 MiB manifest: refused naming the limit',
        `larger than ${MAX_MANIFEST_BYTES} bytes`,
        refusal.message,
        refusal.message.includes(`larger than ${MAX_MANIFEST_BYTES} bytes`),
      ),
      atMost('100 MiB manifest: refused after', refusedMs, 2_000, 'ms'),
      countIs(
        '100 MiB manifest: pods beside it running',
        k.kubelet.pods().filter((p) => allRunning(p, 1)).length,
        1,
      ),
      ...delayChecks('100 MiB manifest', delay),
    ];
  } finally {
    await k.stop();
  }
}

/**
 * A valid manifest just under the 10 MiB limit (a container with ~185,000 args): decoded in the
 * decoder thread, then started. Starting it is O(size) synchronous work on the event loop —
 * container hash, container config, the CRI message — so its stall bound is the kubelet's 1 s
 * tick rather than a quarter of it.
 */
async function nearLimitManifest(ctx: ScenarioContext, dir: string, notes: string[]): Promise<Check[]> {
  const manifests = join(dir, 'manifests');
  await mkdir(manifests);
  const args = Array.from({ length: 185_000 }, (_, i) => `--flag-${i}=${'v'.repeat(30)}`);
  const big = stringify(buildManifest('big', { containers: [{ name: 'app', args }] }));
  const mib = Buffer.byteLength(big) / 2 ** 20;
  if (Buffer.byteLength(big) >= MAX_MANIFEST_BYTES) {
    throw new Error(`the big manifest is ${Buffer.byteLength(big)} bytes, not under the limit`);
  }
  await writeFile(join(manifests, 'big.yaml'), big);
  // The decode's stretch ends as the source hands the pod over (the decoded pod's copy to this
  // thread included), the start's begins there: the kubelet may start the pod in the same task,
  // and a stretch ended later, when a poll saw the snapshot, counted that O(size) start work as
  // the decode's (2026-11-29 CI: 297 ms; 22 ms split here).
  let split: { decode: Delay; starting: ReturnType<typeof delayMeter> } | undefined;
  const watched = watchedFileSource(manifests, ctx.logger, {
    beforeSend: () => {
      split ??= { decode: meter.stop(), starting: delayMeter() };
    },
  });
  const meter = delayMeter();
  const t0 = performance.now();
  const k = await startKubelet(dir, watched.source, ctx.logger);
  try {
    const { decode: decodeDelay, starting } = await until('the snapshot', () => split, 60_000, ctx.signal);
    const decoded = watched.snapshots[0];
    if (!decoded) throw new Error('the source handed over no snapshot');
    const decodedMs = decoded.at - t0;
    await until('the pod running', () => k.kubelet.pods().find((p) => allRunning(p, 1)), 60_000, ctx.signal);
    const runningMs = performance.now() - t0;
    const startDelay = starting.stop();
    notes.push(
      `${mib.toFixed(1)} MiB manifest: decoded (in the decoder thread) after ${Math.round(decodedMs)} ms, ${describeDelay(decodeDelay)}; ` +
        `its pod running after ${Math.round(runningMs)} ms, while starting it ${describeDelay(startDelay)}`,
    );
    return [
      countIs(`${mib.toFixed(1)} MiB manifest: pods decoded`, decoded.pods, 1),
      ...delayChecks(`${mib.toFixed(1)} MiB manifest: decode`, decodeDelay),
      atMost(`${mib.toFixed(1)} MiB manifest: its pod running after`, runningMs, 60_000, 'ms'),
      atMost(
        `${mib.toFixed(1)} MiB manifest: event-loop stall max while its container starts (thread CPU clock)`,
        startDelay.maxMs,
        1_000,
        'ms',
      ),
    ];
  } finally {
    await k.stop();
  }
}

async function bigPod(
  ctx: ScenarioContext,
  dir: string,
  notes: string[],
  what: string,
  containers: object[],
): Promise<Check[]> {
  const manifests = join(dir, 'manifests');
  await mkdir(manifests);
  await writeFile(join(manifests, 'pod.json'), podManifest('big', containers));
  const watched = watchedFileSource(manifests, ctx.logger);
  const meter = delayMeter();
  const t0 = performance.now();
  const k = await startKubelet(dir, watched.source, ctx.logger);
  try {
    await until(
      `${what}: all containers running`,
      () => {
        const [pod] = k.kubelet.pods();
        return pod && allRunning(pod, containers.length) ? pod : undefined;
      },
      60_000,
      ctx.signal,
    );
    const runningMs = performance.now() - t0;
    const delay = meter.stop();
    notes.push(`${what}: running after ${Math.round(runningMs)} ms; ${describeDelay(delay)}`);
    return [atMost(`${what}: running after`, runningMs, 60_000, 'ms'), ...delayChecks(what, delay)];
  } finally {
    await k.stop();
  }
}

/** Runs a phase in a fresh directory, removed afterwards; a phase that fails is a failed check. */
async function inDir(what: string, fn: (dir: string) => Promise<Check[]>): Promise<Check[]> {
  const dir = await mkdtemp(join(tmpdir(), 'tskubelet-limits-'));
  // The phase's stalls are its own kubelet's: the garbage of the phases before it is collected now.
  collectGarbage();
  try {
    return await fn(dir);
  } catch (err) {
    return [check(`${what}: the phase ran to its end`, 'no error', describeError(err), false)];
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

export const limitsScenario: Scenario = {
  id: 'limits',
  fault:
    'a manifest dir of 10,000 files, a 100 MiB manifest, pods with 1,000 containers and 1,000 env vars (file source → kubelet on the fake CRI)',
  reps: { quick: 1, full: 2 },
  cluster: false,
  async run(ctx): Promise<ScenarioResult> {
    const t0 = Date.now();
    const checks: Check[] = [];
    const notes: string[] = [];
    const env = Array.from({ length: 1_000 }, (_, i) => ({
      name: `VAR_${i}`,
      value: i === 0 ? 'x' : `$(VAR_${i - 1})-${i}`,
    }));
    for (let rep = 0; rep < ctx.reps; rep++) {
      checks.push(...(await inDir('10,000 files', (d) => tenThousandFiles(ctx, d, notes))));
      checks.push(...(await inDir('100 MiB manifest', (d) => hugeManifest(ctx, d, notes))));
      checks.push(...(await inDir('manifest near 10 MiB', (d) => nearLimitManifest(ctx, d, notes))));
      checks.push(
        ...(await inDir('1,000 containers', (d) =>
          bigPod(
            ctx,
            d,
            notes,
            'pod with 1,000 containers',
            Array.from({ length: 1_000 }, (_, i) => ({ name: `c${i}`, image: 'busybox:1.29' })),
          ),
        )),
      );
      checks.push(
        ...(await inDir('1,000 env vars', (d) =>
          bigPod(ctx, d, notes, 'pod with 1,000 env vars', [
            { name: 'app', image: 'busybox:1.29', env, args: ['$(VAR_999)'] },
          ]),
        )),
      );
    }
    return {
      id: 'limits',
      fault: this.fault,
      repetitions: ctx.reps,
      checks,
      durationMs: Date.now() - t0,
      notes,
    };
  },
};
