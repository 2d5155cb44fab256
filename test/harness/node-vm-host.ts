/**
 * The node VM's host-side bookkeeping (test/harness/node-vm.ts boots it): where each boot's overlay
 * and logs go, the folders shared with the guest, a free loopback port for ssh, and the reaping of
 * VMs whose test process died without stopping them. No upstream counterpart.
 */
import { mkdir, readFile, readdir, realpath, rm, unlink, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { randomBytes } from 'node:crypto';
import { join, relative, isAbsolute } from 'node:path';
import type { Logger } from '../../src/util/logger.ts';
import { KubeletError, describeError } from '../../src/util/errors.ts';
import { sleep } from '../../src/util/abort.ts';
import { running } from './cluster/daemon.ts';
import { run } from './exec.ts';

export const RUN_ROOT = '/var/lib/tskubelet-bed/node-vm';
export const LOG_DIR = '/var/log/tskubelet-bed/node-vm';
const KEEP_LOGS = 8;
/** The checkout this harness belongs to. */
export const CHECKOUT = new URL('../..', import.meta.url).pathname.replace(/\/$/, '');

/** A host folder the guest sees at the same absolute path. */
export interface NodeVmShare {
  hostPath: string;
  /** Default true: the guest cannot change the host's files. */
  readOnly?: boolean;
}

/** The default shares: the checkout, plus node_modules' real folder when it lies outside it. */
export async function defaultShares(): Promise<NodeVmShare[]> {
  const shares: NodeVmShare[] = [{ hostPath: CHECKOUT }];
  const modules = await realpath(join(CHECKOUT, 'node_modules')).catch((err: unknown) => {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  });
  if (modules !== undefined) {
    const rel = relative(CHECKOUT, modules);
    if (rel.startsWith('..') || isAbsolute(rel)) shares.push({ hostPath: modules });
  }
  return shares;
}

/**
 * The guest's own address under QEMU's user-mode networking (its built-in DHCP server hands out
 * 10.0.2.15 first; the host's loopback appears as 10.0.2.2 in the guest).
 */
export const NODE_VM_GUEST_ADDRESS = '10.0.2.15';

/** A host TCP port forwarded to the same port in the guest. */
export interface PortForward {
  port: number;
  /**
   * The host address QEMU listens on (default 127.0.0.1). Any other is first routed locally on the
   * host's `lo`, from 127.0.0.1 (see `ensureLoopbackAddress`), so that e.g. 10.0.2.15:10250 on the
   * host reaches the guest.
   */
  hostAddress?: string;
}

const LOOPBACK = '127.0.0.1';

/**
 * The forwards with their host address filled in (127.0.0.1 for a bare port); rejects a port out
 * of range or an address that is not IPv4 dotted-quad (QEMU's hostfwd takes no other).
 */
export function portForwards(forwards: readonly (number | PortForward)[]): Required<PortForward>[] {
  return forwards.map((f) => {
    const { port, hostAddress = LOOPBACK } = typeof f === 'number' ? { port: f } : f;
    if (!Number.isInteger(port) || port <= 0 || port > 65_535 || !/^\d+\.\d+\.\d+\.\d+$/.test(hostAddress)) {
      throw new KubeletError(
        'InvalidArgument',
        'forward a port to the node VM',
        `${hostAddress}:${port}: needs an IPv4 address and a TCP port`,
      );
    }
    return { port, hostAddress };
  });
}

/** QEMU's `-nic user` option: ssh from the host's loopback port `sshPort`, then each forward. */
export function userNetOption(sshPort: number, forwards: readonly Required<PortForward>[]): string {
  return [
    'user,model=virtio-net-pci',
    `hostfwd=tcp:${LOOPBACK}:${sshPort}-:22`,
    ...forwards.map((f) => `hostfwd=tcp:${f.hostAddress}:${f.port}-:${f.port}`),
  ].join(',');
}

/** The forwards' host addresses other than 127.0.0.1, once each: the ones the host may not have. */
export function extraHostAddresses(forwards: readonly Required<PortForward>[]): string[] {
  return [...new Set(forwards.map((f) => f.hostAddress).filter((a) => a !== LOOPBACK))];
}

/**
 * Makes `address` a host address the node VM's forwards can listen on: a local route for it on the
 * host's `lo` (the kernel's "AnyIP": a local route alone lets a socket bind the address) with
 * 127.0.0.1 as the preferred source. The source matters: QEMU's user-mode network hands a
 * forwarded connection to the guest with the host peer's address as its source, translated to
 * 10.0.2.2 only when that is 0.0.0.0 or loopback (libslirp's sotranslate_accept). With the address
 * itself on `lo` (`ip addr add`), a connection to the guest's own 10.0.2.15 comes from 10.0.2.15,
 * which the guest drops as a martian (a source address of its own): the API server's dial to the
 * kubelet times out. So the route, not the address: an address left on `lo` by hand is removed.
 * Idempotent, with a log line either way; left in place afterwards (another boot, or a concurrent
 * one, uses it too; it routes nowhere but to this host).
 */
export async function ensureLoopbackAddress(address: string, logger: Logger): Promise<void> {
  const devices = await addressDevices(address);
  const elsewhere = devices.filter((d) => d !== 'lo');
  if (elsewhere.length > 0) {
    throw new KubeletError(
      'FailedPrecondition',
      'forward a port to the node VM',
      `${address} is an address of ${elsewhere.join(', ')}: the host is on the guest's network`,
    );
  }
  if (devices.includes('lo')) {
    // Its own local route would make it the source of connections to it (see above).
    await run('ip', ['addr', 'del', `${address}/32`, 'dev', 'lo'], { timeoutMs: 10_000 });
    logger.info('removed the node VM forward address from the host loopback: a local route replaces it', {
      address,
    });
  }
  const routes = await run('ip', ['-4', 'route', 'show', 'table', 'local', address], { timeoutMs: 10_000 });
  if (localRouteReady(routes.stdout, address)) {
    logger.info('the host already routes the node VM forward address locally, from 127.0.0.1', { address });
    return;
  }
  await run('ip', localRouteArgs(address), { timeoutMs: 10_000 });
  logger.info('routed the node VM forward address locally on the host, from 127.0.0.1', {
    address,
    route: `ip ${localRouteArgs(address).join(' ')}`,
  });
}

/** `ip` arguments for the local route of `address` on `lo` with 127.0.0.1 as its source. */
export function localRouteArgs(address: string): string[] {
  return [
    ...['route', 'replace', 'local', address, 'dev', 'lo', 'table', 'local'],
    ...['scope', 'host', 'src', LOOPBACK],
  ];
}

/** Whether `ip route show table local ADDRESS` lists exactly the route `localRouteArgs` makes. */
export function localRouteReady(routes: string, address: string): boolean {
  const lines = routes.split('\n').filter((l) => l.trim() !== '');
  return (
    lines.length === 1 &&
    /^local (\S+) dev lo\b/.exec(lines[0] ?? '')?.[1] === address &&
    (lines[0] ?? '').includes(` src ${LOOPBACK}`)
  );
}

/** The host interfaces that carry IPv4 `address`. */
async function addressDevices(address: string): Promise<string[]> {
  const { stdout } = await run('ip', ['-4', '-o', 'addr', 'show'], { timeoutMs: 10_000 });
  return devicesWithAddress(stdout, address);
}

/** The interfaces `ip -4 -o addr show` lists with IPv4 `address` (any prefix length). */
export function devicesWithAddress(ipAddrShow: string, address: string): string[] {
  return ipAddrShow
    .split('\n')
    .filter((l) => l.includes(` inet ${address}/`))
    .map((l) => l.split(/\s+/)[1] ?? '');
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => {
        if (addr !== null && typeof addr === 'object') resolve(addr.port);
        else reject(new KubeletError('Internal', 'pick a free port', `unexpected address ${String(addr)}`));
      });
    });
  });
}

/**
 * Kills the QEMU of every instance dir whose owner process is gone (a test process that died by
 * SIGKILL cannot clean up) and removes the dir. A QEMU is recognised by its pid file and its
 * command line naming the dir.
 */
export async function reapOrphans(logger: Logger): Promise<void> {
  const entries = await readdir(RUN_ROOT).catch((err: unknown) => {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  });
  for (const e of entries) {
    if (!e.startsWith('vm-')) continue;
    const dir = join(RUN_ROOT, e);
    const owner = Number.parseInt(await readFile(join(dir, 'owner'), 'utf8').catch(() => ''), 10);
    if (Number.isInteger(owner) && owner !== process.pid && (await running(owner))) {
      logger.warn('another node VM is running; two at once share 2 cores badly', { dir, owner });
      continue;
    }
    if (owner === process.pid) continue;
    const qemu = Number.parseInt(await readFile(join(dir, 'qemu.pid'), 'utf8').catch(() => ''), 10);
    if (Number.isInteger(qemu) && (await running(qemu))) {
      const cmdline = await readFile(`/proc/${qemu}/cmdline`, 'utf8').catch(() => '');
      if (cmdline.includes(dir)) {
        logger.warn('killing an orphaned node VM', { dir, qemuPid: qemu, ownerPid: owner });
        process.kill(qemu, 'SIGKILL');
        await waitGone(qemu, 5_000);
      }
    }
    await rm(dir, { recursive: true, force: true });
  }
}

async function waitGone(pid: number, ms: number, signal?: AbortSignal): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (!(await running(pid))) return true;
    await sleep(100, signal);
  }
  return !(await running(pid));
}

/** Keeps the newest `KEEP_LOGS` boots' logs in LOG_DIR. */
export async function pruneLogs(logger: Logger): Promise<void> {
  const names = (await readdir(LOG_DIR).catch(() => [])).filter((n) => n.startsWith('boot-')).sort();
  const stems = [...new Set(names.map((n) => n.replace(/\.(serial|qemu)\.log$/, '')))];
  for (const stem of stems.slice(0, Math.max(0, stems.length - KEEP_LOGS))) {
    for (const n of names.filter((x) => x.startsWith(stem))) {
      await unlink(join(LOG_DIR, n)).catch((err: unknown) =>
        logger.warn('cannot prune an old node VM log', { file: n, err: describeError(err) }),
      );
    }
  }
}

export function checkSharePath(p: string): void {
  if (!isAbsolute(p) || /[\s:,]/.test(p)) {
    throw new KubeletError(
      'InvalidArgument',
      'share a folder with the node VM',
      `${JSON.stringify(p)}: needs an absolute path without whitespace, ':' or ','`,
    );
  }
}

/** One boot's files: its dir (overlay, pid files, ssh socket; removed at stop) and its logs (kept). */
export interface InstanceFiles {
  dir: string;
  serialLog: string;
  qemuLog: string;
}

/** Makes a boot's dir, owned by this process (what `reapOrphans` checks), and prunes old logs. */
export async function createInstance(logger: Logger): Promise<InstanceFiles> {
  const id = `${process.pid}-${randomBytes(3).toString('hex')}`;
  const dir = join(RUN_ROOT, `vm-${id}`);
  const stamp = `boot-${new Date().toISOString().replace(/[:.]/g, '-')}-${id}`;
  await mkdir(dir, { recursive: true });
  await mkdir(LOG_DIR, { recursive: true });
  await writeFile(join(dir, 'owner'), `${process.pid}\n`);
  await pruneLogs(logger);
  return {
    dir,
    serialLog: join(LOG_DIR, `${stamp}.serial.log`),
    qemuLog: join(LOG_DIR, `${stamp}.qemu.log`),
  };
}
