/**
 * kubelet.service on a joined node, run as systemd would run it: the command line and environment come
 * from the node's copy of kubeadm's drop-in and the environment files it names (unit.ts), read at each
 * start (as `systemctl daemon-reload` + `restart` would), and the process runs in the node's mount
 * namespace, detached, its output appended to `<rootDir>/kubelet.log`, its pid in `<rootDir>/run`.
 * ExecStart's /usr/bin/kubelet is the node's installed kubelet: `<rootDir>/bin/kubelet`, a link to the
 * binary under test. No Restart=: a kubelet that exits stays down, for the test to see.
 * No upstream counterpart (systemd's job on a real node).
 */
import { readFile, stat, unlink } from 'node:fs/promises';
import { basename, join } from 'node:path';
import type { Logger } from '../../../src/util/logger.ts';
import { KubeletError } from '../../../src/util/errors.ts';
import { running, spawnDaemon, terminate } from '../cluster/daemon.ts';
import { inNamespace } from './namespace.ts';
import type { NodePaths } from './paths.ts';
import { serviceCommand } from './unit.ts';

const STOP_GRACE_MS = 15_000;

export interface KubeletService {
  /** Starts it unless it runs; resolves once spawned (systemd's Type=simple). */
  start(): Promise<void>;
  /** Stops it if it runs (SIGTERM, SIGKILL after 15 s). */
  stop(): Promise<void>;
  restart(): Promise<void>;
  /** Its pid while it runs. */
  pid(): Promise<number | undefined>;
  /** The command line of the last start (argv[0] as in ExecStart=), for reports. */
  lastCommand(): readonly string[] | undefined;
}

async function readOptional(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/** The inode of a mount namespace (what /proc/PID/ns/mnt names as `mnt:[INODE]`), or undefined. */
async function namespaceInode(path: string): Promise<number | undefined> {
  try {
    return (await stat(path)).ino;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/**
 * The pid file's process, if it still runs and is this node's kubelet: it lives in the node's mount
 * namespace or (that namespace gone) its command line names the node's root dir. A kubelet that
 * execs another program (bin/tskubelet execs node) keeps its namespace, not its command line.
 */
async function ourPid(paths: NodePaths, nsFile: string): Promise<number | undefined> {
  const pid = Number.parseInt(((await readOptional(pidFile(paths))) ?? '').trim(), 10);
  if (!Number.isInteger(pid) || pid <= 1 || !(await running(pid))) return undefined;
  const ns = await namespaceInode(nsFile);
  if (ns !== undefined) return (await namespaceInode(`/proc/${pid}/ns/mnt`)) === ns ? pid : undefined;
  const cmdline = (await readOptional(`/proc/${pid}/cmdline`)) ?? '';
  return cmdline.split('\0').some((a) => a.includes(paths.kubeletDir)) ? pid : undefined;
}

export function pidFile(paths: NodePaths): string {
  return join(paths.runDir, 'kubelet.pid');
}

/**
 * The argv and environment systemd would start the node's kubelet with, from its files (the unit's
 * absolute paths read under `rootDir`, the node's filesystem as the namespace shows it).
 */
export async function kubeletCommand(
  paths: NodePaths,
): Promise<{ argv: string[]; env: Map<string, string> }> {
  const unit = await readOptional(paths.dropIn);
  if (unit === undefined)
    throw new KubeletError('NotFound', 'start the kubelet', `no unit at ${paths.dropIn}`);
  return serviceCommand(unit, (p) => readOptional(join(paths.rootDir, p)));
}

export function kubeletService(paths: NodePaths, nsFile: string, logger: Logger): KubeletService {
  let last: string[] | undefined;
  const stop = async (): Promise<void> => {
    const pid = await ourPid(paths, nsFile);
    if (pid !== undefined) {
      await terminate(pid, 'kubelet', logger, STOP_GRACE_MS);
      logger.info('stopped the node kubelet', { pid, node: paths.rootDir });
    }
    await unlink(pidFile(paths)).catch((err: unknown) => {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    });
  };
  const start = async (): Promise<void> => {
    if ((await ourPid(paths, nsFile)) !== undefined) return;
    const { argv, env } = await kubeletCommand(paths);
    last = argv;
    const [exec, ...args] = argv;
    // The node's /usr/bin/kubelet (any directory: the package's path is not the point).
    const installed = join(paths.binDir, basename(exec ?? 'kubelet'));
    const [binary, ...rest] = inNamespace(nsFile, [installed, ...args]);
    await spawnDaemon(
      {
        name: 'kubelet',
        binary: binary ?? 'nsenter',
        args: rest,
        pidFile: pidFile(paths),
        log: paths.kubeletLog,
        marker: paths.kubeletDir,
        env: { ...process.env, ...Object.fromEntries(env) },
      },
      logger,
    );
  };
  return {
    start,
    stop,
    async restart() {
      await stop();
      await start();
    },
    pid: () => ourPid(paths, nsFile),
    lastCommand: () => last,
  };
}
