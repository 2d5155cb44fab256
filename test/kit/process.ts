/**
 * A kubelet (or any daemon of the bed) as its own process: spawned with its output appended to a log
 * file, checked for being alive, stopped with SIGTERM as an init system would (SIGKILL after a grace
 * period when one is given). `spawnTskubelet` runs `bin/tskubelet`; `startNodeKubelet` and
 * `startStandaloneKubelet` run it on the test bed the way the integration, reliability and security
 * suites do. No upstream counterpart (the e2e_node suite's kubelet launcher, test/e2e_node/services).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { sleep } from '../../src/util/abort.ts';

export const TSKUBELET_BIN = join(import.meta.dirname, '..', '..', 'bin', 'tskubelet');

let variantFlags: readonly string[] = [];

/**
 * Flags every bed kubelet this process starts gets after all others: a suite run in a variant
 * (the reliability runner's `--kubelet-flag --evented-pleg`). Set once, before the first start.
 */
export function setVariantKubeletFlags(flags: readonly string[]): void {
  variantFlags = [...flags];
}

/** The flags set by setVariantKubeletFlags (none unless a runner set some). */
export function variantKubeletFlags(): readonly string[] {
  return variantFlags;
}

export interface SpawnOptions {
  /** Where stdout and stderr are appended. */
  logFile: string;
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  /** Its own process group, not waited for by this process (a daemon that may outlive a test). */
  detached?: boolean;
}

export interface LoggedProcess {
  readonly child: ChildProcess;
  readonly pid: number;
  /** Where its stdout and stderr go. */
  readonly logFile: string;
  /** Whether it has exited (or was killed). */
  exited(): boolean;
  /** Rejects with the log once the process has exited, so a poll fails at once instead of timing out. */
  assertRunning(): Promise<void>;
  /**
   * Sends SIGTERM and resolves once the process has exited (at once when it already had); after
   * `graceMs`, when given, SIGKILL.
   */
  stop(graceMs?: number): Promise<void>;
}

/** tskubelet as its own process. */
export type TskubeletProcess = LoggedProcess;

/** Spawns `cmd args`, its stdout and stderr appended to `opts.logFile`. */
export function spawnLogged(cmd: string, args: readonly string[], opts: SpawnOptions): LoggedProcess {
  const fd = openSync(opts.logFile, 'a');
  let child: ChildProcess;
  try {
    child = spawn(cmd, args, {
      stdio: ['ignore', fd, fd],
      ...(opts.cwd !== undefined ? { cwd: opts.cwd } : {}),
      ...(opts.env !== undefined ? { env: opts.env } : {}),
      ...(opts.detached ? { detached: true } : {}),
    });
  } finally {
    closeSync(fd);
  }
  if (opts.detached) child.unref();
  const pid = child.pid;
  if (pid === undefined) throw new Error(`cannot run ${cmd}; log ${opts.logFile}`);
  const exited = () => child.exitCode !== null || child.signalCode !== null;
  const gone = new Promise<void>((r) => child.once('exit', () => r()));
  return {
    child,
    pid,
    logFile: opts.logFile,
    exited,
    async assertRunning() {
      if (exited()) {
        throw new Error(
          `${basename(cmd)} exited ${child.exitCode ?? child.signalCode}: ${await readFile(opts.logFile, 'utf8')}`,
        );
      }
    },
    async stop(graceMs) {
      if (exited()) return;
      child.kill('SIGTERM');
      if (graceMs === undefined) return gone;
      const killed = await Promise.race([gone.then(() => false), sleep(graceMs).then(() => true)]);
      if (killed) {
        child.kill('SIGKILL');
        await gone;
      }
    },
  };
}

/** Spawns `bin/tskubelet` with `args`, its stdout and stderr appended to `opts.logFile`. */
export function spawnTskubelet(args: readonly string[], opts: SpawnOptions): TskubeletProcess {
  return spawnLogged(TSKUBELET_BIN, args, opts);
}

/** What of the test bed a bed kubelet uses (test/kit/bed.ts's Env has it). */
export interface BedDirs {
  bed: { endpoint: string };
  /** The kubelet's --root-dir. */
  rootDir: string;
  /** Where `tskubelet.log` goes. */
  dir: string;
  /** The static pod directory. */
  manifests: string;
}

interface BedKubeletOptions {
  /** The node's name (`--hostname-override`). */
  node: string;
  /** Flags after the common ones (ports, DNS, cgroups, labels, console address, verbosity). */
  extraArgs?: readonly string[];
}

/**
 * `bin/tskubelet run` with `ownFlags`, then what every kubelet of the test bed has: the bed's
 * containerd, `env.rootDir`, `opts.node`, node IP 127.0.0.1, no healthz port; then `opts.extraArgs`
 * and the variant's flags. Output to `<env.dir>/tskubelet.log`.
 */
function startBedKubelet(
  env: BedDirs,
  opts: BedKubeletOptions,
  ownFlags: readonly string[],
): TskubeletProcess {
  return spawnTskubelet(
    [
      'run',
      ...ownFlags,
      '--container-runtime-endpoint',
      env.bed.endpoint,
      '--root-dir',
      env.rootDir,
      '--hostname-override',
      opts.node,
      '--node-ip',
      '127.0.0.1',
      '--healthz-port',
      '0',
      ...(opts.extraArgs ?? []),
      ...variantFlags,
    ],
    { logFile: join(env.dir, 'tskubelet.log') },
  );
}

export interface NodeKubeletOptions extends BedKubeletOptions {
  /** The node's kubeconfig (`cluster.kubeletKubeconfig(node)`). */
  kubeconfig: string;
  /** Also read static pods from `env.manifests` (`--pod-manifest-path`). */
  staticPods?: boolean;
}

/**
 * `bin/tskubelet run` as a node of the cluster bed on the test bed's containerd: the node's
 * kubeconfig, `env.rootDir`, node IP 127.0.0.1, no healthz port, then `extraArgs`; output to
 * `<env.dir>/tskubelet.log`. Does not wait for the node to register.
 */
export function startNodeKubelet(env: BedDirs, opts: NodeKubeletOptions): TskubeletProcess {
  return startBedKubelet(env, opts, [
    '--kubeconfig',
    opts.kubeconfig,
    ...(opts.staticPods ? ['--pod-manifest-path', env.manifests] : []),
  ]);
}

export interface StandaloneKubeletOptions extends BedKubeletOptions {
  /** The kubelet API port (`--port`). */
  port: number;
}

/**
 * `bin/tskubelet run` standalone (no API server: static pods only) on the test bed's containerd:
 * static pods from `env.manifests` checked every second, the API on `opts.port`, `env.rootDir`,
 * node IP 127.0.0.1, no healthz port, then `extraArgs`; output to `<env.dir>/tskubelet.log`.
 * Does not wait for the kubelet to serve.
 */
export function startStandaloneKubelet(env: BedDirs, opts: StandaloneKubeletOptions): TskubeletProcess {
  return startBedKubelet(env, opts, [
    '--pod-manifest-path',
    env.manifests,
    '--file-check-frequency',
    '1s',
    '--port',
    String(opts.port),
  ]);
}
