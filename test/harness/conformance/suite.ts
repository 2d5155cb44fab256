/**
 * Running e2e.test: a dry run (which specs the focus/skip select), and the real run under ginkgo
 * with N parallel nodes, an overall timeout (SIGINT first, so each node still writes its JUnit
 * report with the specs it finished, then SIGKILL), and live progress from e2e's progress reporter
 * (`--progress-report-url`, one POST per finished spec).
 */
import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import { mkdir, mkdtemp, open, readFile, readdir, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import type { Logger } from '../../../src/util/logger.ts';
import { KubeletError, describeError } from '../../../src/util/errors.ts';
import { abortReason, untilAborted } from '../../../src/util/abort.ts';
import { run } from '../exec.ts';
import { conformanceBinary, CONFORMANCE_PATHS } from './paths.ts';
import { within } from './within.ts';
import { mergeReports, type RunResults, type Selection } from './junit.ts';

/** After SIGINT, how long the nodes get to run AfterSuite and write their reports. */
const INTERRUPT_GRACE_MS = 3 * 60_000;

export interface SuiteEnv {
  adminKubeconfig: string;
  /** unix:///… of the node's containerd (e2e.test's --container-runtime-endpoint). */
  endpoint: string;
  repoList: string;
  dockerConfig: string;
}

function e2eArgs(env: SuiteEnv, sel: Selection, reportDir: string): string[] {
  return [
    `--kubeconfig=${env.adminKubeconfig}`,
    '--provider=skeleton',
    '--num-nodes=1',
    `--ginkgo.focus=${sel.focus}`,
    ...(sel.skip !== '' ? [`--ginkgo.skip=${sel.skip}`] : []),
    `--report-dir=${reportDir}`,
    '--ginkgo.noColor',
    '--container-runtime=remote',
    `--container-runtime-endpoint=${env.endpoint}`,
    `--docker-config-file=${env.dockerConfig}`,
    `--repo-root=${CONFORMANCE_PATHS.srcDir}`,
    // The node is Ready before the suite starts; a missing one should fail fast, not in 30 minutes.
    '--node-schedulable-timeout=5m',
  ];
}

function e2eEnv(env: SuiteEnv): NodeJS.ProcessEnv {
  return { ...process.env, KUBE_TEST_REPO_LIST: env.repoList, KUBECONFIG: env.adminKubeconfig };
}

async function readReports(dir: string): Promise<string[]> {
  const files = (await readdir(dir).catch(() => [] as string[]))
    .filter((f) => /^junit.*\.xml$/.test(f))
    .sort();
  return Promise.all(files.map((f) => readFile(join(dir, f), 'utf8')));
}

/** The names of the specs `sel` selects (ginkgo's dry run: nothing runs, nothing touches the cluster). */
export async function selectedSpecs(env: SuiteEnv, sel: Selection): Promise<string[]> {
  const dir = await mkdtemp(join(tmpdir(), 'tskubelet-dryrun-'));
  try {
    await run(conformanceBinary('e2e.test'), [...e2eArgs(env, sel, dir), '--ginkgo.dryRun'], {
      env: e2eEnv(env),
      timeoutMs: 120_000,
    });
    const r = mergeReports(await readReports(dir), sel);
    return [...r.specs.values()]
      .filter((s) => s.outcome === 'passed')
      .map((s) => s.name)
      .sort();
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

interface Progress {
  msg?: string;
}

/** Collects e2e's progress POSTs and prints one line per finished spec. */
async function progressServer(
  total: number,
  print: (line: string) => void,
): Promise<{ url: string; server: Server }> {
  let passed = 0;
  let failed = 0;
  const server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (d: string) => (body += d));
    req.on('end', () => {
      res.end();
      let p: Progress;
      try {
        p = JSON.parse(body) as Progress;
      } catch {
        return; // not a progress message: ignored, the JUnit reports are the record
      }
      const msg = p.msg ?? '';
      if (msg.startsWith('PASSED ')) passed++;
      else if (msg.startsWith('FAILED ')) failed++;
      else return;
      const time = new Date().toISOString().slice(11, 19);
      print(`${time} [${passed + failed}/${total} · ${failed} failed] ${msg.slice(0, 200)}`);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/progress`, server };
}

export interface SuiteRun {
  results: RunResults;
  /** ginkgo's exit, or `timeout` when the overall timeout interrupted it. */
  ended: string;
  seconds: number;
}

/**
 * Runs the selected specs with ginkgo; ginkgo's output goes to `<dir>/ginkgo.log`, JUnit reports
 * to `dir`. `selected` (from `selectedSpecs`) lets specs the run never reached show as not-run.
 */
export async function runSuite(
  env: SuiteEnv,
  sel: Selection,
  opts: {
    dir: string;
    nodes: number;
    timeoutMs: number;
    selected: readonly string[];
    logger: Logger;
    print: (line: string) => void;
    /** Interrupts the run like the timeout does (the harness is stopping, or the bed got shared). */
    signal?: AbortSignal;
  },
): Promise<SuiteRun> {
  await mkdir(opts.dir, { recursive: true });
  const progress = await progressServer(opts.selected.length, opts.print);
  const log = await open(join(opts.dir, 'ginkgo.log'), 'a');
  const started = Date.now();
  let ended = '';
  try {
    const args = [
      `-nodes=${opts.nodes}`,
      '-noColor',
      conformanceBinary('e2e.test'),
      '--',
      ...e2eArgs(env, sel, opts.dir),
      `--progress-report-url=${progress.url}`,
    ];
    await log.write(
      `# ${conformanceBinary('ginkgo')} ${args.join(' ')}\n# KUBE_TEST_REPO_LIST=${env.repoList}\n`,
    );
    const child = spawn(conformanceBinary('ginkgo'), args, {
      stdio: ['ignore', log.fd, log.fd],
      env: e2eEnv(env),
      detached: true, // its own process group: the timeout signals ginkgo and every e2e.test node
    });
    const pid = child.pid;
    if (pid === undefined)
      throw new KubeletError('NotFound', 'run ginkgo', `cannot run ${conformanceBinary('ginkgo')}`);
    const exited = new Promise<string>((resolve) =>
      child.once('exit', (code, sig) => resolve(sig ?? `exit ${code}`)),
    );
    const signalGroup = (sig: NodeJS.Signals): void => {
      try {
        process.kill(-pid, sig);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err;
      }
    };
    const stop = AbortSignal.any([
      AbortSignal.timeout(opts.timeoutMs),
      ...(opts.signal ? [opts.signal] : []),
    ]);
    const first = await untilAborted(exited, stop).catch(() => 'stopped' as const);
    if (first === 'stopped') {
      ended = opts.signal?.aborted ? `interrupted: ${describeError(abortReason(opts.signal))}` : 'timeout';
      opts.logger.warn('interrupting the suite (each ginkgo node still writes what it finished)', {
        why: ended,
      });
      signalGroup('SIGINT');
      if ((await within(exited, INTERRUPT_GRACE_MS)) === 'timeout') {
        signalGroup('SIGKILL');
        await exited;
      }
    } else {
      ended = first;
    }
  } finally {
    await log.close();
    progress.server.close();
  }
  const results = mergeReports(await readReports(opts.dir), sel, opts.selected);
  return { results, ended, seconds: Math.round((Date.now() - started) / 1000) };
}
