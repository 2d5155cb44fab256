/**
 * The node VM: a Debian 12 guest with systemd as PID 1 and a pure cgroup v2 hierarchy, booted with
 * QEMU under TCG (these machines' /dev/kvm is PVM, which a stock kernel cannot use; ENVIRONMENT.md,
 * "Node VM"), for tests that need a real node: the systemd cgroup driver, logind, cgroup v2. The
 * closest upstream counterpart is the node e2e remote runner (kubernetes/kubernetes
 * test/e2e_node/remote), which boots a cloud VM per run and drives it over ssh.
 *
 * Every boot starts from the clean cached image through a qcow2 overlay; host folders (by default
 * the checkout and node_modules' target, read-only) are shared over 9p at the same absolute paths;
 * ssh is forwarded from a free loopback port. The serial console is logged to
 * /var/log/tskubelet-bed/node-vm/ (the last few boots are kept); the overlay and the QEMU process are
 * gone after `stop()`, after an abort, after a failed boot, at process exit, and (should this process
 * die by SIGKILL) at the next boot. Boot one VM at a time: it costs ~1 GiB and, idle, a fifth of a core.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, rmSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '../../src/util/logger.ts';
import { nullLogger } from '../../src/util/logger.ts';
import { KubeletError, describeError } from '../../src/util/errors.ts';
import { abortReason, sleep } from '../../src/util/abort.ts';
import { logTail } from './cluster/daemon.ts';
import { run } from './exec.ts';
import { ensureNodeVmImage, type NodeVmImage } from './node-vm-image.ts';
import {
  checkSharePath,
  createInstance,
  defaultShares,
  ensureLoopbackAddress,
  extraHostAddresses,
  freePort,
  portForwards,
  reapOrphans,
  userNetOption,
  type NodeVmShare,
  type PortForward,
} from './node-vm-host.ts';
import {
  SSH_FAILED,
  sshExec,
  sshOptions,
  sshRun,
  type GuestResult,
  type GuestRunOptions,
} from './node-vm-ssh.ts';

export type { GuestResult, GuestRunOptions } from './node-vm-ssh.ts';
export { NODE_VM_PATHS, ensureNodeVmImage, type NodeVmImage } from './node-vm-image.ts';
export { CHECKOUT, NODE_VM_GUEST_ADDRESS, type NodeVmShare, type PortForward } from './node-vm-host.ts';

/** ~15 s on an idle 2-core machine; several minutes when other work shares the cores. */
const DEFAULT_BOOT_TIMEOUT_MS = 8 * 60_000;
const DEFAULT_POWEROFF_TIMEOUT_MS = 90_000;
const KILL_GRACE_MS = 5_000;
const READY_POLL_MS = 1_000;

export interface NodeVmOptions {
  logger?: Logger;
  /** Aborts the image build and the boot (the VM is killed and its files removed). */
  signal?: AbortSignal;
  /** Default: the checkout and, when node_modules links out of it, node_modules' target, read-only. */
  shares?: NodeVmShare[];
  memoryMiB?: number;
  cpus?: number;
  /** Until `systemctl is-system-running` says running or degraded (image build not included). */
  bootTimeoutMs?: number;
  /** Extra kernel command line arguments. */
  kernelArgs?: string[];
  /** `nice` for QEMU (default 10: the machine's cores are shared). */
  niceness?: number;
  /**
   * Host TCP ports forwarded to the same port in the guest: a number listens on the host's
   * 127.0.0.1, a `PortForward` on its `hostAddress` (routed locally on the host when missing). E.g.
   * `{ port: 10250, hostAddress: NODE_VM_GUEST_ADDRESS }`: an API server on the host reaches the
   * guest's kubelet at the guest's own address. The boot fails when one is taken.
   */
  forwardPorts?: readonly (number | PortForward)[];
}

export interface NodeVm {
  image: NodeVmImage;
  /** Host loopback port forwarded to the guest's sshd. */
  sshPort: number;
  /** The serial console's log (kept after stop, for diagnosis). */
  serialLog: string;
  /** `systemctl is-system-running` when the boot finished: running or degraded. */
  systemState: string;
  /** Milliseconds from QEMU's start to that state. */
  bootMs: number;
  /** ssh client arguments up to and including the destination (for scp-like uses). */
  ssh: readonly string[];
  /** Runs a shell command line as root in the guest; resolves whatever its exit code. */
  exec(command: string, opts?: GuestRunOptions): Promise<GuestResult>;
  /** Runs a shell command line as root in the guest; a non-zero exit rejects with its output. */
  run(command: string, opts?: GuestRunOptions): Promise<GuestResult>;
  /**
   * `systemctl poweroff`, then SIGTERM/SIGKILL to QEMU when the guest has not powered off within
   * `timeoutMs` (default 90 s) or the signal aborts; removes the overlay. Idempotent.
   */
  stop(opts?: { timeoutMs?: number; signal?: AbortSignal }): Promise<void>;
  /** Resolves when QEMU has exited, with its exit description. */
  readonly exited: Promise<string>;
  [Symbol.asyncDispose](): Promise<void>;
}

/**
 * Builds the image if needed, boots a VM from it and resolves once systemd reports the boot done
 * (running or degraded; a degraded boot is logged with its failed units). Any failure or abort
 * kills QEMU and removes its files before rejecting; the rejection carries the console's tail.
 */
export async function bootNodeVm(opts: NodeVmOptions = {}): Promise<NodeVm> {
  const logger = opts.logger ?? nullLogger;
  const image = await ensureNodeVmImage(logger, { signal: opts.signal });
  await reapOrphans(logger);
  const shares = opts.shares ?? (await defaultShares());
  for (const s of shares) checkSharePath(s.hostPath);

  const forwards = portForwards(opts.forwardPorts ?? []);
  for (const address of extraHostAddresses(forwards)) await ensureLoopbackAddress(address, logger);

  const { dir, serialLog, qemuLog } = await createInstance(logger);

  let child: ChildProcess | undefined;
  const onExit = (): void => {
    // Synchronous last resort when the process exits with the VM still up.
    if (child?.pid !== undefined && child.exitCode === null && child.signalCode === null) {
      try {
        process.kill(child.pid, 'SIGKILL');
      } catch {
        // It ended meanwhile: nothing left to kill.
      }
    }
    rmSync(dir, { recursive: true, force: true });
  };
  process.once('exit', onExit);
  const cleanup = async (): Promise<void> => {
    process.removeListener('exit', onExit);
    await rm(dir, { recursive: true, force: true });
  };

  try {
    const overlay = join(dir, 'overlay.qcow2');
    await run('qemu-img', ['create', '-q', '-f', 'qcow2', '-b', image.disk, '-F', 'raw', overlay], {
      timeoutMs: 30_000,
    });
    const sshPort = await freePort();
    const kernelArgs = [
      'console=ttyS0',
      // Only errors on the console: every byte through the emulated UART costs, and the journal
      // (over ssh) has the rest. A failed boot still shows its kernel errors and failed units.
      'quiet',
      'root=/dev/vda',
      'rw',
      'systemd.unified_cgroup_hierarchy=1',
      'cgroup_no_v1=all',
      'panic=-1',
      ...shares.map((s, i) => `tskubelet.share=share${i}:${s.hostPath}${s.readOnly === false ? '' : ':ro'}`),
      ...(opts.kernelArgs ?? []),
    ];
    const qemuArgs = [
      '-n',
      String(opts.niceness ?? 10),
      'qemu-system-x86_64',
      '-name',
      `tskubelet-node-vm,process=tskubelet-node-vm`,
      '-nodefaults',
      '-accel',
      'tcg,thread=multi,tb-size=256',
      '-cpu',
      'max',
      '-machine',
      'q35',
      '-m',
      String(opts.memoryMiB ?? 4096),
      '-smp',
      String(opts.cpus ?? 2),
      '-display',
      'none',
      '-vga',
      'none',
      '-no-reboot',
      '-kernel',
      image.kernel,
      '-initrd',
      image.initrd,
      '-append',
      kernelArgs.join(' '),
      '-drive',
      `file=${overlay},format=qcow2,if=virtio`,
      '-nic',
      userNetOption(sshPort, forwards),
      '-device',
      'virtio-rng-pci',
      ...shares.flatMap((s, i) => [
        '-virtfs',
        `local,path=${s.hostPath},mount_tag=share${i},security_model=none${s.readOnly === false ? '' : ',readonly=on'}`,
      ]),
      '-serial',
      `file:${serialLog}`,
      '-monitor',
      'none',
      '-pidfile',
      join(dir, 'qemu.pid'),
    ];
    const logFd = openSync(qemuLog, 'a');
    const started = Date.now();
    try {
      child = spawn('nice', qemuArgs, { stdio: ['ignore', logFd, logFd] });
    } finally {
      closeSync(logFd);
    }
    const proc = child;
    const exited = new Promise<string>((resolve) => {
      proc.once('exit', (code, sig) => resolve(sig !== null ? `killed by ${sig}` : `exit ${code ?? '?'}`));
      proc.once('error', (err) => resolve(`cannot start: ${err.message}`));
    });
    logger.info('booting the node VM', { sshPort, serialLog, dir, pid: proc.pid });

    const ssh = sshOptions({ port: sshPort, key: image.sshKey, controlPath: join(dir, 'ssh.ctl') });
    const diagnosis = async (): Promise<string> =>
      `qemu: ${await logTail(qemuLog, 10)}\nconsole (${serialLog}):\n${stripAnsi(await logTail(serialLog, 25))}`;

    const killQemu = async (): Promise<void> => {
      if (proc.pid === undefined || isExited()) return;
      proc.kill('SIGTERM');
      if (await Promise.race([exited.then(() => true), sleep(KILL_GRACE_MS).then(() => false)])) return;
      logger.warn('QEMU still runs after SIGTERM; killing it', { pid: proc.pid });
      proc.kill('SIGKILL');
      await exited;
    };
    const closeMaster = async (): Promise<void> => {
      await run('ssh', [...ssh.slice(0, -1), '-O', 'exit', ssh[ssh.length - 1] ?? ''], {
        timeoutMs: 5_000,
      }).catch((err: unknown) => {
        // Usually no master is left (it ends with the VM's connection): nothing to close.
        logger.debug('ssh control master not closed', { err: describeError(err) });
      });
    };
    const isExited = (): boolean => proc.exitCode !== null || proc.signalCode !== null;

    let systemState: string;
    try {
      systemState = await waitReady({
        ssh,
        isExited,
        exited,
        deadline: started + (opts.bootTimeoutMs ?? DEFAULT_BOOT_TIMEOUT_MS),
        signal: opts.signal,
        logger,
      });
    } catch (err) {
      await killQemu();
      await closeMaster();
      const why = opts.signal?.aborted
        ? abortReason(opts.signal)
        : new KubeletError(
            err instanceof KubeletError ? err.code : 'Internal',
            'boot the node VM',
            `${describeError(err)}\n${await diagnosis()}`,
            { cause: err },
          );
      await cleanup();
      throw why;
    }
    const bootMs = Date.now() - started;
    logger.info('node VM booted', { systemState, bootMs, sshPort });
    if (systemState === 'degraded') {
      const failed = await sshExec(ssh, 'systemctl --failed --no-legend --plain', { timeoutMs: 30_000 });
      logger.warn('node VM booted degraded', { failed: failed.stdout.trim() });
    }

    let stopping: Promise<void> | undefined;
    const stop = (s: { timeoutMs?: number; signal?: AbortSignal } = {}): Promise<void> => {
      stopping ??= (async () => {
        const budget = s.timeoutMs ?? DEFAULT_POWEROFF_TIMEOUT_MS;
        const gone = await gracefulPoweroff(ssh, isExited, budget, s.signal, logger).catch((err: unknown) => {
          logger.warn('node VM poweroff did not finish; killing QEMU', { err: describeError(err) });
          return false;
        });
        if (!gone) await killQemu();
        await closeMaster();
        await cleanup();
        logger.info('node VM stopped', { how: await exited, graceful: gone });
      })();
      return stopping;
    };
    return {
      image,
      sshPort,
      serialLog,
      systemState,
      bootMs,
      ssh,
      exec: (command, o) => sshExec(ssh, command, o),
      run: (command, o) => sshRun(ssh, command, o),
      stop,
      exited,
      [Symbol.asyncDispose]: () => stop(),
    };
  } catch (err) {
    if (child?.pid !== undefined && child.exitCode === null && child.signalCode === null)
      child.kill('SIGKILL');
    await cleanup();
    throw err;
  }
}

/** systemd's coloured status lines, readable in an error message. */
function stripAnsi(text: string): string {
  // eslint-disable-next-line no-control-regex -- the escape character is what is being removed
  return text.replace(/\x1b\[[0-9;?]*[A-Za-z]/g, '');
}

/** Polls over ssh until systemd's boot is done; rejects when QEMU exits, at the deadline, or on abort. */
async function waitReady(p: {
  ssh: readonly string[];
  isExited: () => boolean;
  exited: Promise<string>;
  deadline: number;
  signal?: AbortSignal;
  logger: Logger;
}): Promise<string> {
  let last = 'no ssh answer yet';
  while (true) {
    if (p.signal?.aborted) throw abortReason(p.signal);
    if (p.isExited())
      throw new KubeletError('Internal', 'wait for the node VM', `QEMU ended (${await p.exited})`);
    const left = p.deadline - Date.now();
    if (left <= 0)
      throw new KubeletError('DeadlineExceeded', 'wait for the node VM', `not ready in time (${last})`);
    // --wait returns once the boot job queue is empty; bounded here so QEMU's death is noticed.
    const r = await sshExec(p.ssh, 'systemctl is-system-running --wait', {
      timeoutMs: Math.min(left, 60_000),
      signal: p.signal,
    }).catch((err: unknown) => {
      if (p.signal?.aborted) throw abortReason(p.signal);
      return { code: SSH_FAILED, stdout: '', stderr: describeError(err) };
    });
    const state = r.stdout.trim();
    if (state === 'running' || state === 'degraded') return state;
    if (state === 'maintenance' || state === 'stopping' || state === 'offline')
      throw new KubeletError('Internal', 'wait for the node VM', `systemd is ${state}`);
    last = r.code === SSH_FAILED ? `ssh: ${r.stderr.trim().split('\n').pop() ?? ''}` : `systemd: ${state}`;
    p.logger.debug('node VM not ready yet', { last });
    await sleep(READY_POLL_MS, p.signal);
  }
}

/** Asks the guest to power off; true when QEMU exited within `budget`, false when it did not. */
async function gracefulPoweroff(
  ssh: readonly string[],
  isExited: () => boolean,
  budget: number,
  signal: AbortSignal | undefined,
  logger: Logger,
): Promise<boolean> {
  const timeout = AbortSignal.timeout(budget);
  const stop = signal ? AbortSignal.any([signal, timeout]) : timeout;
  if (isExited()) return true;
  // --no-block: the answer comes before sshd is stopped, so ssh does not hang on a dying connection.
  const r = await sshExec(ssh, 'systemctl --no-block poweroff', {
    timeoutMs: Math.min(budget, 30_000),
    signal: stop,
  });
  if (r.code !== 0)
    logger.warn('systemctl poweroff failed in the node VM', { code: r.code, stderr: r.stderr.trim() });
  while (!isExited()) {
    if (stop.aborted) return false;
    await sleep(200);
  }
  return true;
}
