/**
 * The attacker suite as a command: every probe of probes.ts against each live node — the three
 * tskubelet nodes the tests use and, with `upstream`, the upstream kubelet 1.20.2 on the same bed —
 * each node's results kept in bench/results/security/<node>.json, then docs/security.md's table
 * rendered from every kept result (so running one node refreshes its column alone).
 *
 *   flock /tmp/tskubelet-bed.lock node test/security/run.ts [--targets standalone,standalone-hostile,cluster,upstream]
 *   node test/security/run.ts --upstream          # the upstream kubelet only
 *   node test/security/run.ts --render            # re-render the doc from the kept results
 *
 * Exits 1 when a tskubelet probe fails, known gaps aside (the upstream column is measured, never
 * judged).
 * No upstream counterpart.
 */
import { execFileSync } from 'node:child_process';
import { mkdir, readFile, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { describeError } from '../../src/util/errors.ts';
import { kubernetesBinary } from '../harness/cluster/index.ts';
import { PROBES, TARGETS, probesFor, upstreamProbes, type Probe, type TargetName } from './probes.ts';
import { createBrowserSession } from './lib/browser.ts';
import { startClusterTarget } from './lib/cluster.ts';
import { runProbe } from './lib/run-probe.ts';
import { startStandaloneTarget } from './lib/standalone.ts';
import type { LiveTarget } from './lib/target.ts';
import { spliceProbes, type NodeRun } from './report.ts';

const REPO = join(import.meta.dirname, '..', '..');
const RESULTS_DIR = join(REPO, 'bench', 'results', 'security');
const DOC = join(REPO, 'docs', 'security.md');

type Node = TargetName | 'upstream';

function start(node: Node): Promise<LiveTarget> {
  switch (node) {
    case 'standalone':
    case 'standalone-hostile':
      return startStandaloneTarget(node);
    case 'cluster':
      return startClusterTarget('tskubelet');
    case 'upstream':
      return startClusterTarget('upstream');
  }
}

function kubeletOf(node: Node): string {
  if (node !== 'upstream') return 'tskubelet';
  const v = execFileSync(kubernetesBinary('kubelet'), ['--version'], { encoding: 'utf8' }).trim();
  return `upstream ${v.replace(/^Kubernetes /, 'kubelet ')}`;
}

async function runNode(node: Node): Promise<NodeRun> {
  const probes: Probe[] = node === 'upstream' ? upstreamProbes() : probesFor(node);
  process.stdout.write(`== ${node}: ${probes.length} probes\n`);
  const target = await start(node);
  const browser = createBrowserSession();
  const results = [];
  try {
    for (const p of probes) {
      const r = await runProbe(p, target, browser);
      results.push(r);
      const mark =
        node === 'upstream' ? (r.ok ? 'same' : 'diff') : r.ok ? 'ok  ' : p.knownGap ? 'GAP ' : 'FAIL';
      process.stdout.write(`   ${mark} ${p.id}: ${r.observed}\n`);
    }
  } finally {
    await browser.close();
    await target.stop();
  }
  const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], {
    cwd: REPO,
    encoding: 'utf8',
  }).trim();
  return {
    target: node,
    kubelet: kubeletOf(node),
    recorded: { date: new Date().toISOString().slice(0, 10), commit },
    results,
  };
}

async function readKept(): Promise<NodeRun[]> {
  const names = (await readdir(RESULTS_DIR).catch(() => [] as string[])).filter((n) => n.endsWith('.json'));
  const runs: NodeRun[] = [];
  for (const n of names.sort())
    runs.push(JSON.parse(await readFile(join(RESULTS_DIR, n), 'utf8')) as NodeRun);
  return runs;
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      targets: { type: 'string' },
      upstream: { type: 'boolean', default: false },
      render: { type: 'boolean', default: false },
    },
  });
  const all: Node[] = [...TARGETS, 'upstream'];
  const nodes: Node[] = values.render
    ? []
    : values.upstream
      ? ['upstream']
      : ((values.targets?.split(',').filter(Boolean) as Node[] | undefined) ?? all);
  for (const n of nodes)
    if (!all.includes(n)) throw new Error(`unknown target ${n} (known: ${all.join(', ')})`);
  let failed = 0;
  await mkdir(RESULTS_DIR, { recursive: true });
  for (const n of nodes) {
    const run = await runNode(n);
    const gaps = new Set(PROBES.filter((p) => p.knownGap).map((p) => p.id));
    if (n !== 'upstream') failed += run.results.filter((r) => !r.ok && !gaps.has(r.id)).length;
    await writeFile(join(RESULTS_DIR, `${n}.json`), JSON.stringify(run, null, 1) + '\n');
  }
  await writeFile(DOC, spliceProbes(await readFile(DOC, 'utf8'), await readKept()));
  process.stdout.write(`report: docs/security.md (results in ${RESULTS_DIR})\n`);
  return failed === 0 ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`security: ${describeError(err)}\n`);
    process.exit(2);
  },
);
