/**
 * Fuzzed surface `api-pod`: pods as the API server source receives them — in a LIST, in an ADDED
 * watch event, or as a MODIFIED version of a pod it already has — with one field broken (wrong
 * JSON types, nulls, huge values, negative numbers, invalid names and labels, unknown enum values,
 * deep nesting), plus watch events that carry no pod at all. Each case runs the real source
 * (src/podsource/api-source.ts on the real reflector) over the fake API client, then the kubelet's
 * first I/O-free steps (consumers.ts) on what it accepted.
 *
 * Accepted: the pod is in the source's snapshot as sent. Rejected: the source skipped it with a
 * warning, whose `error` must name the broken field. API pods were validated by the API server, so
 * only wrong types (what upstream's decoder refuses) must be refused; odd values may pass.
 */
import fc from 'fast-check';
import { FakeApi } from '../../../src/api/testing.ts';
import type { KubeletPod } from '../../../src/api/types.ts';
import { createApiSource } from '../../../src/podsource/api-source.ts';
import { recordingLogger } from '../../../src/util/testing.ts';
import type { FuzzSurface } from '../scenario.ts';
import { exercise } from './consumers.ts';
import { corruptPod, type Corrupted } from './corrupt.ts';
import { runSurface, type Expectation, type FuzzInput, type Verdict } from './harness.ts';
import { validPod, type Json, type JsonObj } from './pod-arbitrary.ts';

const PODS = '/api/v1/pods';
const NODE = 'fuzz-node';
const HOUR = 3_600_000;

type Delivery = 'list' | 'added' | 'modified';

interface ApiPodInput extends FuzzInput {
  delivery: Delivery;
  /** The valid pod the case started from (what a MODIFIED event replaces). */
  base: JsonObj;
  /** The object delivered: the corrupted pod, or for `raw` events anything at all. */
  object: Json;
  raw?: { type: string };
}

const corrupted: fc.Arbitrary<ApiPodInput> = validPod({ from: 'api', nodeName: NODE }).chain((base) =>
  fc
    .tuple(
      corruptPod(fc.constant(base), { validated: false, deep: 'value' }),
      fc.constantFrom<Delivery>('list', 'added', 'modified'),
    )
    .map(([c, delivery]: [Corrupted, Delivery]) => ({
      // The fake client structured-clones LIST replies, which cannot take thousands of levels
      // (the real one JSON-parses them); deep values come in a watch event instead.
      delivery: delivery === 'list' && / nested lists/.test(c.expect.what) ? 'added' : delivery,
      base,
      object: c.doc,
      expect: { ...c.expect, what: `${delivery}: ${c.expect.what}` },
    })),
);

/** Watch events that carry no pod: the source must ignore them and keep watching. */
const oddEvents: fc.Arbitrary<ApiPodInput> = fc
  .tuple(
    fc.constantFrom('ADDED', 'MODIFIED', 'DELETED', 'BOOKMARK', 'BOGUS'),
    fc.constantFrom<Json>(null, 'x', 42, [], [{}], {}, { metadata: 'x' }, { metadata: { uid: 7 } }),
  )
  .map(([type, object]) => ({
    delivery: 'added' as const,
    base: {},
    object,
    raw: { type },
    expect: {
      what: `${type} event with object ${JSON.stringify(object)}`,
      mustReject: false,
      names: [],
    } satisfies Expectation,
  }));

/** Every case of the surface (exported for replaying one: seed + path). */
export const apiPodArbitrary: fc.Arbitrary<ApiPodInput> = fc.oneof(
  { arbitrary: corrupted, weight: 12 },
  { arbitrary: oddEvents, weight: 1 },
);

function podList(items: Json[]): Record<string, unknown> {
  return { apiVersion: 'v1', kind: 'PodList', metadata: { resourceVersion: '10' }, items };
}

function flushOnce(): Promise<void> {
  return new Promise((r) => setImmediate(r));
}

async function runCase(input: ApiPodInput): Promise<Verdict> {
  const api = new FakeApi();
  const logger = recordingLogger();
  const snapshots: KubeletPod[][] = [];
  const source = createApiSource({
    api,
    nodeName: NODE,
    logger,
    backoffInitialMs: HOUR,
    backoffMaxMs: HOUR,
    minWatchTimeoutSeconds: 300,
    quietWatchMs: HOUR,
  });
  const initial: Json[] =
    input.delivery === 'list' ? [input.object] : input.delivery === 'modified' ? [input.base] : [];
  api.respondOnce('GET', PODS, podList(initial));
  try {
    source.start((pods) => snapshots.push(pods));
    for (let i = 0; i < 20 && snapshots.length === 0; i++) await flushOnce();
    if (snapshots.length === 0) return { kind: 'crash', detail: 'no snapshot after the first LIST' };
    if (input.delivery !== 'list') {
      const w = await api.nextWatch(1_000);
      const before = snapshots.length;
      const type = input.raw?.type ?? (input.delivery === 'added' ? 'ADDED' : 'MODIFIED');
      w.push(type as 'ADDED', input.object as Record<string, unknown>);
      for (let i = 0; i < 5; i++) await flushOnce();
      if (w.state !== 'open') return { kind: 'crash', detail: `the watch ended (${w.state}) on this event` };
      if (input.raw) return { kind: 'accepted' };
      if (snapshots.length === before && !warned(logger.lines)) {
        // An update identical to what the source has changes nothing: nothing to send.
        if (JSON.stringify(input.object) === JSON.stringify(input.base)) return { kind: 'accepted' };
      }
    }
    if (warned(logger.lines)) return rejection(logger.lines);
    const last = snapshots.at(-1) ?? [];
    const uid = uidOf(input.object);
    const got = last.find((p) => p.metadata.uid === uid);
    if (!got) return { kind: 'crash', detail: 'the pod was dropped without a word' };
    const crash = exercise(got);
    if (crash) return { kind: 'crash', detail: crash };
    return { kind: 'accepted' };
  } finally {
    await source.stop();
  }
}

function uidOf(obj: Json): unknown {
  const m = obj !== null && typeof obj === 'object' && !Array.isArray(obj) ? obj.metadata : undefined;
  return m !== null && typeof m === 'object' && !Array.isArray(m) ? m.uid : undefined;
}

type Lines = { msg: string; fields: Record<string, unknown> }[];

function warned(lines: Lines): Lines[number] | undefined {
  return lines.find((l) => l.msg.startsWith('Ignoring pod from the API server'));
}

function rejection(lines: Lines): Verdict {
  const w = warned(lines);
  if (!w) return { kind: 'crash', detail: 'the pod was dropped without a word' };
  return { kind: 'rejected', message: `${w.msg}: ${String(w.fields.error)}` };
}

export const apiPodSurface: FuzzSurface = {
  id: 'api-pod',
  title: 'Pods from the API server (list and watch): every field malformed, events without a pod',
  run(opts) {
    return runSurface<ApiPodInput>(
      {
        id: 'api-pod',
        arbitrary: apiPodArbitrary,
        caseTimeoutMs: 2_000,
        exec: (input) => runCase(input),
        show: (input) => input.expect.what,
      },
      opts,
    );
  },
};
