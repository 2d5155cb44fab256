/**
 * tskubelet as its own process (bin/tskubelet), for tests that run it as a cluster's node or from a
 * config file: its output appended to a log file, stopped with SIGTERM as an init system would.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { openSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Env } from './support.ts';

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

export interface TskubeletProcess {
  readonly child: ChildProcess;
  /** Where its stdout and stderr go. */
  readonly logFile: string;
  /** Rejects with the log once the process has exited, so a poll fails at once instead of timing out. */
  assertRunning(): Promise<void>;
  /** Sends SIGTERM and resolves once the process has exited (at once when it already had). */
  stop(): Promise<void>;
}

/** Spawns `bin/tskubelet` with `args`, its stdout and stderr appended to `logFile`. */
export function spawnTskubelet(
  args: readonly string[],
  opts: { logFile: string; cwd?: string },
): TskubeletProcess {
  const fd = openSync(opts.logFile, 'a');
  const child = spawn(TSKUBELET_BIN, args, {
    stdio: ['ignore', fd, fd],
    ...(opts.cwd !== undefined ? { cwd: opts.cwd } : {}),
  });
  const exited = () => child.exitCode !== null || child.signalCode !== null;
  return {
    child,
    logFile: opts.logFile,
    async assertRunning() {
      if (exited()) {
        throw new Error(
          `tskubelet exited ${child.exitCode ?? child.signalCode}: ${await readFile(opts.logFile, 'utf8')}`,
        );
      }
    },
    async stop() {
      if (exited()) return;
      const done = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await done;
    },
  };
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
 * and the variant's flags.
 * Output to `<env.dir>/tskubelet.log`.
 */
function startBedKubelet(env: Env, opts: BedKubeletOptions, ownFlags: readonly string[]): TskubeletProcess {
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
export function startNodeKubelet(env: Env, opts: NodeKubeletOptions): TskubeletProcess {
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
export function startStandaloneKubelet(env: Env, opts: StandaloneKubeletOptions): TskubeletProcess {
  return startBedKubelet(env, opts, [
    '--pod-manifest-path',
    env.manifests,
    '--file-check-frequency',
    '1s',
    '--port',
    String(opts.port),
  ]);
}
