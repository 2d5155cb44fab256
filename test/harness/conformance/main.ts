/**
 * The node conformance harness (issue 10): builds the 1.20.2 e2e suite and its images, starts the
 * bed (containerd + control plane + registries), runs the kubelet under test as the only node, runs
 * the selected specs with ginkgo, and prints a summary; `--compare` does it for both kubelets in
 * turn and prints the specs whose outcome differs. scripts/conformance.sh is the front door;
 * `--help` lists the options.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createLogger } from '../../../src/util/logger.ts';
import { describeError } from '../../../src/util/errors.ts';
import { BED_PATHS, startContainerd } from '../index.ts';
import { startCluster, type ClusterBed } from '../cluster/index.ts';
import { ensureConformanceBinaries } from './build.ts';
import { serveE2eImages, writeSuiteFiles } from './e2e-images.ts';
import { compareRuns, comparisonMarkdown, countOutcomes } from './junit.ts';
import { KUBELET_KINDS, type KubeletKind } from './kubelet.ts';
import { passesFor, type Pass, type SuiteChoice } from './passes.ts';
import { CONFORMANCE_PATHS } from './paths.ts';
import { selectedSpecs } from './suite.ts';
import { reprint } from './report.ts';
import { runKubelet, stamp, type KubeletRun } from './session.ts';

const USAGE = `usage: scripts/conformance.sh [options]
  --kubelet tskubelet|upstream   the kubelet under test (default tskubelet)
  --compare                      run upstream, then tskubelet; print the specs whose outcome differs
  --suite node-conformance|kubelet-extra|storage|all
                                 [NodeConformance] specs (default), the kubelet-only [sig-node]/[sig-storage]
                                 specs not tagged so, both (all), or the local/hostPath volume specs (storage)
  --focus REGEX / --skip REGEX   ginkgo focus/skip instead of the suite's (e.g. one spec for the inner loop)
  --nodes N                      parallel ginkgo nodes (default 2)
  --timeout MINUTES              per suite run (default 90); then interrupted, finished specs still reported
  --results DIR                  parent of the results folders (default ${CONFORMANCE_PATHS.resultsRoot})
  --wait MINUTES                 how long to wait for another kubelet/test run to leave the bed (default 60)
  --kubelet-arg ARG              extra flag for the kubelet under test (repeatable)
  --node-ip IP                   the node's InternalIP (default: the host's default-route address; not loopback)
  --node-vm                      run the kubelet (either, or both with --compare) inside the node VM (systemd,
                                 cgroup v2, cgroupDriver: systemd), node IP 10.0.2.15 (routed to lo on the host),
                                 with the control plane and the suite on the host (scripts/build-node-vm.sh)
  --quiet SECONDS                how long the bed must have been free before a run starts (default 120)
  --retries N                    start a kubelet's run over at most N times when the bed stops being its
                                 alone (another kubelet, test run or Node appears; default 3)
  --stop-bed                     stop the containerd, control plane and registries this run started
                                 (default: leave them running, like bed.ts up / cluster-up)
  --list                         print the specs the selection runs, and exit (no bed needed)
  --build-only                   build the suite and the images, and exit
  --report DIR [DIR2]            print the summary of an earlier results folder (compare two)
  -v, --verbose                  harness debug logs`;

interface Options {
  kubelets: KubeletKind[];
  compare: boolean;
  passes: Pass[];
  nodes: number;
  timeoutMs: number;
  resultsRoot: string;
  waitMs: number;
  kubeletArgs: string[];
  nodeIp: string | undefined;
  nodeVm: boolean;
  retries: number;
  quietMs: number;
  stopBed: boolean;
  list: boolean;
  buildOnly: boolean;
  report: string[];
  verbose: boolean;
}

function positiveInt(name: string, v: string | undefined, dflt: number): number {
  if (v === undefined) return dflt;
  const n = Number(v);
  if (!Number.isInteger(n) || n <= 0)
    throw new Error(`--${name} wants a positive integer, got ${JSON.stringify(v)}`);
  return n;
}

function parseOptions(argv: string[]): Options | undefined {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      kubelet: { type: 'string' },
      compare: { type: 'boolean' },
      suite: { type: 'string' },
      focus: { type: 'string' },
      skip: { type: 'string' },
      nodes: { type: 'string' },
      timeout: { type: 'string' },
      results: { type: 'string' },
      wait: { type: 'string' },
      'kubelet-arg': { type: 'string', multiple: true },
      'node-ip': { type: 'string' },
      'node-vm': { type: 'boolean' },
      retries: { type: 'string' },
      quiet: { type: 'string' },
      'stop-bed': { type: 'boolean' },
      list: { type: 'boolean' },
      'build-only': { type: 'boolean' },
      report: { type: 'boolean' },
      verbose: { type: 'boolean', short: 'v' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) return undefined;
  const kubelet = values.kubelet ?? 'tskubelet';
  if (!KUBELET_KINDS.includes(kubelet as KubeletKind))
    throw new Error(`--kubelet must be tskubelet or upstream, got ${kubelet}`);
  const suite = values.suite ?? 'node-conformance';
  if (!['node-conformance', 'kubelet-extra', 'storage', 'all'].includes(suite))
    throw new Error(`unknown --suite ${suite}`);
  if (values['node-vm'] && values['node-ip'] !== undefined)
    throw new Error("--node-ip does not apply with --node-vm: the node IP is the guest's own, 10.0.2.15");
  if (positionals.length > 0 && !values.report)
    throw new Error(`unexpected arguments: ${positionals.join(' ')}`);
  return {
    kubelets: values.compare ? ['upstream', 'tskubelet'] : [kubelet as KubeletKind],
    compare: values.compare ?? false,
    passes: passesFor(suite as SuiteChoice, values.focus, values.skip),
    nodes: positiveInt('nodes', values.nodes, 2),
    timeoutMs: positiveInt('timeout', values.timeout, 90) * 60_000,
    resultsRoot: values.results ?? CONFORMANCE_PATHS.resultsRoot,
    waitMs: positiveInt('wait', values.wait, 60) * 60_000,
    kubeletArgs: values['kubelet-arg'] ?? [],
    nodeIp: values['node-ip'],
    nodeVm: values['node-vm'] ?? false,
    retries: values.retries === undefined ? 3 : Number.parseInt(values.retries, 10) || 0,
    stopBed: values['stop-bed'] ?? false,
    quietMs: positiveInt('quiet', values.quiet, 120) * 1000,
    list: values.list ?? false,
    buildOnly: values['build-only'] ?? false,
    report: values.report ? positionals : [],
    verbose: values.verbose ?? false,
  };
}

const print = (line: string): void => void process.stdout.write(`${line}\n`);

async function compare(runs: KubeletRun[], opts: Options): Promise<void> {
  const [left, right] = runs;
  if (!left || !right) return;
  const out: string[] = [];
  for (const pass of opts.passes) {
    const l = left.results.get(pass.name);
    const r = right.results.get(pass.name);
    if (!l || !r) continue;
    const [lc, rc] = [countOutcomes(l), countOutcomes(r)];
    out.push(
      `### ${pass.name}: ${left.kind} passed ${lc.passed}/${lc.selected}, ${right.kind} passed ${rc.passed}/${rc.selected}`,
      '',
      comparisonMarkdown(left.kind, right.kind, compareRuns(l, r)),
    );
  }
  const text = out.join('\n');
  const file = join(opts.resultsRoot, `${stamp()}-compare.md`);
  await writeFile(file, text);
  print(`\n== specs whose outcome differs (also in ${file})\n\n${text}`);
}

async function main(argv: string[]): Promise<number> {
  const opts = parseOptions(argv);
  if (!opts) {
    print(USAGE);
    return 0;
  }
  const logger = createLogger({ verbosity: opts.verbose ? 4 : 2, format: 'text' });
  if (opts.report.length > 0) {
    print(await reprint(opts.report));
    return 0;
  }
  if (process.getuid?.() !== 0)
    throw new Error('run as root: the harness starts containerd, the control plane and a kubelet');
  const build = await ensureConformanceBinaries(logger);
  if (build.controlPlaneSeconds !== undefined || build.suiteSeconds !== undefined)
    print(`== build: ${JSON.stringify(build)}`);
  const files = await writeSuiteFiles();
  const envBase = { adminKubeconfig: '', endpoint: `unix://${BED_PATHS.socket}`, ...files };
  if (opts.list) {
    for (const pass of opts.passes) {
      // A dry run: e2e.test neither reads the kubeconfig nor touches the cluster.
      const names = await selectedSpecs({ ...envBase, adminKubeconfig: '/nonexistent' }, pass);
      print(`== ${pass.name}: ${names.length} specs\n${names.join('\n')}`);
    }
    return 0;
  }
  const containerd = await startContainerd({ logger });
  const served = await serveE2eImages(containerd.socket, logger);
  // SIGINT/SIGTERM: interrupt the suite, stop the kubelet, clean up; a second one exits at once.
  const stopping = new AbortController();
  const onSignal = (sig: NodeJS.Signals): void => {
    if (stopping.signal.aborted) process.exit(130);
    print(`!! ${sig}: stopping (again to exit at once)`);
    stopping.abort(new Error(`stopped by ${sig}`));
  };
  process.on('SIGINT', onSignal).on('SIGTERM', onSignal);
  let cluster: ClusterBed | undefined;
  const runs: KubeletRun[] = [];
  try {
    if (opts.buildOnly) return 0;
    cluster = await startCluster({ logger, signal: stopping.signal });
    const bed = { containerd, cluster, env: { ...envBase, adminKubeconfig: cluster.adminKubeconfig } };
    const session = { ...opts, logger, print, signal: stopping.signal };
    for (const kind of opts.kubelets) runs.push(await runKubelet(kind, session, bed));
    if (opts.compare) await compare(runs, opts);
  } finally {
    // The bed is shared (other engineers' tests reuse a running one): left running unless asked.
    if (opts.stopBed) {
      for (const stop of [
        () => cluster?.stop(),
        ...served.registries.map((r) => () => r.stop()),
        () => containerd.stop(),
      ]) {
        await Promise.resolve(stop()).catch((err: unknown) =>
          logger.warn('teardown', { err: describeError(err) }),
        );
      }
    }
  }
  const failed = runs.some((r) => [...r.results.values()].some((x) => countOutcomes(x).failed > 0));
  return failed ? 1 : 0;
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`conformance: ${describeError(err)}\n`);
    process.exitCode = 2;
  },
);
