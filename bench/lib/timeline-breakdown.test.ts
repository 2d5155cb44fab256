import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PodTimeline, TimelineStepView } from '../../src/timeline/index.ts';
import {
  breakdown,
  breakdownSections,
  breakdownTable,
  fetchTimelines,
  podPhases,
} from './timeline-breakdown.ts';

const T0 = Date.UTC(2026, 10, 24, 20, 0, 0);

/** A canned timeline: [step, offsetMs, container?] in order. */
function timeline(name: string, steps: [string, number, string?][], attempts = 1): PodTimeline {
  const views = steps.map(([step, offsetMs, container]): TimelineStepView => ({
    step: step as TimelineStepView['step'],
    at: new Date(T0 + offsetMs).toISOString(),
    offsetMs,
    ...(container ? { container } : {}),
  }));
  return {
    apiVersion: 'tskubelet.io/v1alpha1',
    kind: 'PodTimeline',
    namespace: 'default',
    name,
    uid: `uid-${name}`,
    attempts: Array.from({ length: attempts }, (_, i) => ({
      attempt: i + 1,
      steps: i === 0 ? views : [],
    })),
    droppedSteps: 0,
  };
}

/** One busybox pod: queueing 40, sandbox 300, before image 2, image 5, create 60, start 100. */
const simple = (name: string, shift = 0): PodTimeline =>
  timeline(name, [
    ['seen', 0],
    ['admitted', 1],
    ['sandbox-requested', 40 + shift],
    ['sandbox-created', 340 + shift],
    ['network-ready', 345 + shift],
    ['image-pull-started', 342 + shift, 'main'],
    ['image-pull-done', 347 + shift, 'main'],
    ['container-created', 407 + shift, 'main'],
    ['container-started', 507 + shift, 'main'],
    ['ready', 600 + shift],
  ]);

describe('podPhases', () => {
  it('cuts a pod start into phases that add up to seen → started', () => {
    const p = podPhases(simple('a'));
    assert.deepEqual(p, {
      queueing: 40,
      sandbox: 300,
      'before image': 2,
      image: 5,
      create: 60,
      start: 100,
      total: 507,
    });
    const sum = ['queueing', 'sandbox', 'before image', 'image', 'create', 'start'].reduce(
      (acc, k) => acc + (p[k as keyof typeof p] ?? 0),
      0,
    );
    assert.equal(sum, p.total);
  });

  it('follows the container started last (init containers fall in "before image")', () => {
    const p = podPhases(
      timeline('b', [
        ['seen', 0],
        ['sandbox-requested', 10],
        ['sandbox-created', 110],
        ['image-pull-started', 111, 'init'],
        ['image-pull-done', 112, 'init'],
        ['container-created', 130, 'init'],
        ['container-started', 150, 'init'],
        ['image-pull-started', 1150, 'main'],
        ['image-pull-done', 1900, 'main'],
        ['container-created', 1950, 'main'],
        ['container-started', 2000, 'main'],
        // A restart later on: the first start counts.
        ['container-started', 9000, 'init'],
      ]),
    );
    assert.equal(p['before image'], 1040);
    assert.equal(p.image, 750);
    assert.equal(p.total, 2000);
  });

  it('adds the status phase from the wall time the benchmark saw Running', () => {
    assert.equal(podPhases(simple('a'), T0 + 507 + 250).status, 250);
    assert.equal(podPhases(simple('a')).status, undefined);
  });

  it('leaves out what the timeline does not hold (a pod that never got its sandbox)', () => {
    const p = podPhases(
      timeline('c', [
        ['seen', 0],
        ['sandbox-requested', 5],
      ]),
    );
    assert.deepEqual(p, { queueing: 5 });
  });
});

describe('breakdown', () => {
  it('summarises each phase as nearest-rank p50 / p99 across pods', () => {
    const pods = Array.from({ length: 100 }, (_, i) => simple(`p${i}`, i)); // queueing 40..139
    const seen = new Map(pods.map((p, i) => [p.name, T0 + 507 + i + 10 * (i + 1)]));
    const rows = breakdown(pods, seen);
    const q = rows.find((r) => r.phase === 'queueing');
    assert.deepEqual(q, { phase: 'queueing', n: 100, p50: 89, p99: 138 });
    const s = rows.find((r) => r.phase === 'status');
    assert.deepEqual(s, { phase: 'status', n: 100, p50: 500, p99: 990 });
    assert.deepEqual(
      rows.map((r) => r.phase),
      ['queueing', 'sandbox', 'before image', 'image', 'create', 'start', 'status', 'total'],
    );
    const text = breakdownTable(rows);
    assert.match(text, /^\| phase \| pods \| p50 ms \| p99 ms \|/);
    assert.match(text, /\| queueing \| 100 \| 89 \| 138 \|/);
    assert.match(text, /\| \*\*seen → started\*\* \| 100 \|/);
  });

  it('omits phases no pod has', () => {
    assert.deepEqual(
      breakdown([
        timeline('c', [
          ['seen', 0],
          ['sandbox-requested', 5],
        ]),
      ]).map((r) => r.phase),
      ['queueing'], // no container started: no total either
    );
  });
});

describe('fetchTimelines', () => {
  it('reads every pod, lists the ones it cannot, and never rejects', async () => {
    const served = new Map([['a', simple('a')]]);
    const server: Server = createServer((req, res) => {
      const m = /^\/debug\/pods\/default\/([^/]+)\/timeline$/.exec(req.url ?? '');
      const tl = m?.[1] ? served.get(m[1]) : undefined;
      res.writeHead(tl ? 200 : 404, { 'content-type': 'application/json' });
      res.end(JSON.stringify(tl ?? { kind: 'Status', code: 404 }));
    });
    const dir = await mkdtemp(join(tmpdir(), 'bench-tl-'));
    const socket = join(dir, 'tskubelet.sock');
    await new Promise<void>((r) => server.listen(socket, r));
    try {
      const got = await fetchTimelines(socket, 'default', ['a', 'b']);
      assert.deepEqual(
        got.timelines.map((t) => t.name),
        ['a'],
      );
      assert.deepEqual(got.missing, ['b: HTTP 404']);
      const closed = await fetchTimelines(join(dir, 'none.sock'), 'default', ['a'], { timeoutMs: 1_000 });
      assert.equal(closed.timelines.length, 0);
      assert.equal(closed.missing.length, 1);
    } finally {
      await new Promise((r) => server.close(r));
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('breakdownSections', () => {
  it('renders a table per tskubelet batch, N ascending, and nothing without any', () => {
    const rows = breakdown([simple('a')]);
    const lines = breakdownSections(
      new Map([
        [30, [{ runner: 'tskubelet', n: 30, steps: rows, stepsMissing: ['x: HTTP 404'] }]],
        [
          10,
          [
            { runner: 'upstream', n: 10 },
            { runner: 'tskubelet', n: 10, steps: rows },
          ],
        ],
      ]),
    );
    const headings = lines.filter((l) => l.startsWith('**'));
    assert.equal(headings.length, 2);
    assert.match(headings[0] ?? '', /^\*\*tskubelet, N=10:/);
    assert.match(headings[1] ?? '', /N=30: .*1 pod\(s\) unread: x: HTTP 404/);
    assert.deepEqual(breakdownSections(new Map([[10, [{ runner: 'upstream', n: 10 }]]])), []);
  });

  it('says in one line, without an empty table, that a batch had no timeline to read', () => {
    const lines = breakdownSections(
      new Map([
        [
          10,
          [{ runner: 'tskubelet-base', n: 10, steps: [], stepsMissing: ['p-0: HTTP 404', 'p-1: HTTP 404'] }],
        ],
      ]),
    );
    assert.ok(lines.includes('**tskubelet-base, N=10**: no timeline read (p-0: HTTP 404)'), lines.join('\n'));
    assert.ok(!lines.some((l) => l.startsWith('| phase')), 'no table');
  });
});
