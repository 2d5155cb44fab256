/**
 * The attacker suite's table is whole and its report is current: every route of the router is
 * sampled, every name a probe uses exists, and docs/security.md's table is exactly what the kept
 * results render to (it is never edited by hand). No bed needed.
 */
import assert from 'node:assert/strict';
import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { matchRoute, type Route } from '../../src/server/routes.ts';
import { DEBUGGING_SET, PROBES, READ_ONLY_SET, ROUTES, TARGETS } from './probes.ts';
import { BEGIN, END, renderProbes, spliceProbes, type NodeRun } from './report.ts';

/** Every route kind of routes.ts: adding one fails to compile here until the table samples it. */
const ROUTE_KINDS: Record<Exclude<Route['kind'], 'not-found'>, true> = {
  healthz: true,
  pods: true,
  runningpods: true,
  configz: true,
  spec: true,
  metrics: true,
  'stats-summary': true,
  containerLogs: true,
  exec: true,
  attach: true,
  run: true,
  portForward: true,
  logs: true,
  pprof: true,
  console: true,
  consoleEvents: true,
  debugPodWhy: true,
  debugPodTimeline: true,
};

const REPO = join(import.meta.dirname, '..', '..');

void describe('the probe table', () => {
  void it('samples every route of the kubelet API, each with a path the router matches to it', () => {
    for (const r of ROUTES) {
      const kind = matchRoute(new URL(r.path.replace(/\{\w+\}/g, 'x'), 'https://k').pathname).kind;
      assert.equal(kind, r.route.split('/')[0], `${r.path} is routed to ${kind}, not ${r.route}`);
    }
    const sampled = new Set(ROUTES.map((r) => r.route.split('/')[0]));
    for (const k of Object.keys(ROUTE_KINDS)) assert.ok(sampled.has(k), `route ${k} is not sampled`);
  });

  void it('gives every probe a unique id and names only routes and targets that exist', () => {
    const ids = PROBES.map((p) => p.id);
    assert.equal(new Set(ids).size, ids.length, 'duplicate probe ids');
    const names = new Set(ROUTES.map((r) => r.route));
    for (const n of [...READ_ONLY_SET, ...DEBUGGING_SET]) assert.ok(names.has(n), n);
    for (const p of PROBES) {
      assert.ok(p.targets.length > 0, `${p.id} runs nowhere`);
      for (const t of p.targets) assert.ok(TARGETS.includes(t), `${p.id}: ${t}`);
      if (p.check.kind !== 'http') continue;
      for (const r of [...(p.check.routes ?? []), ...(p.check.except ?? [])]) {
        assert.ok(names.has(r), `${p.id}: no route ${r}`);
      }
    }
  });
});

void describe('the report', () => {
  const runs: NodeRun[] = [
    {
      target: 'standalone',
      kubelet: 'tskubelet',
      recorded: { date: '2026-11-28', commit: 'abc1234' },
      results: [
        {
          id: 'api-anonymous',
          target: 'standalone',
          ok: true,
          observed: '401 ×21',
          details: [],
          durationMs: 1,
        },
      ],
    },
    {
      target: 'upstream',
      kubelet: 'upstream kubelet v1.20.2',
      recorded: { date: '2026-11-28', commit: 'abc1234' },
      results: [
        {
          id: 'healthz-rebinding',
          target: 'upstream',
          ok: false,
          observed: '200 ×1, 404 ×1',
          details: [],
          durationMs: 1,
        },
      ],
    },
  ];

  void it("renders each probe with every node's outcome, 'not run' where none, and why upstream does not apply", () => {
    const text = renderProbes(runs);
    assert.match(text, /\| `api-anonymous` \|.*standalone: 401 ×21 ✔<br>cluster: not run \|/);
    assert.match(text, /\| `healthz-rebinding` \|.*\| 200 ×1, 404 ×1 \(differs\) \|/);
    assert.match(text, /\| `socket-mode` \|.*\| n\/a: upstream has no local API socket \|/);
    assert.match(text, /tskubelet: 1 of 1 probes hold — standalone at abc1234 \(2026-11-28\)/);
  });

  void it('replaces only the text between the markers', () => {
    const doc = `# Security\n\nprose\n\n${BEGIN}\nold\n${END}\n\nmore prose\n`;
    const out = spliceProbes(doc, runs);
    assert.ok(out.startsWith('# Security\n\nprose\n\n'));
    assert.ok(out.endsWith(`${END}\n\nmore prose\n`));
    assert.doesNotMatch(out, /\nold\n/);
  });

  void it('docs/security.md holds exactly the table the kept results render to', async () => {
    const dir = join(REPO, 'bench', 'results', 'security');
    const kept: NodeRun[] = [];
    const names = await readdir(dir).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return []; // nothing kept yet: every cell says "not run"
      throw err;
    });
    for (const n of names.filter((x) => x.endsWith('.json')).sort()) {
      kept.push(JSON.parse(await readFile(join(dir, n), 'utf8')) as NodeRun);
    }
    const doc = await readFile(join(REPO, 'docs', 'security.md'), 'utf8');
    assert.equal(doc, spliceProbes(doc, kept), 'run `node test/security/run.ts --render`');
  });
});
