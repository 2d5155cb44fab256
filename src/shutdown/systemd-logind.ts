/**
 * The real `Logind`: systemd's own command-line tools on the system D-Bus (upstream talks D-Bus
 * with godbus; Node has no D-Bus client, and could not receive the inhibitor's file descriptor
 * anyway).
 *
 * - properties and calls: `busctl --system get-property|call …`, each under a deadline;
 * - the inhibitor lock: a `systemd-inhibit --what=shutdown --mode=delay --who=kubelet` child that
 *   holds logind's lock descriptor and runs `sh -c 'echo inhibited; exec cat >/dev/null'`: the line
 *   says logind granted the lock, and `cat` ends when our end of its stdin closes — on release, and
 *   also when the kubelet dies, so a crashed kubelet never holds a shutdown up. systemd-inhibit
 *   kills its command when it is itself killed.
 * - PrepareForShutdown: `busctl --json=short --match=<logind's PrepareForShutdown> monitor`, one JSON
 *   message per line (busctl is systemd's own: a node has it wherever it has logind; gdbus is not
 *   on a minimal Debian node).
 *
 * The tools honour DBUS_SYSTEM_BUS_ADDRESS, which is how the tests put a fake logind under them.
 */
import { mkdir, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { KUBELET_LOGIND_CONF_NAME, LOGIND_CONF_DROP_IN_DIR } from '../config/defaults.ts';
import { KubeletError, describeError } from '../util/errors.ts';
import type { Logger } from '../util/logger.ts';
import { describeExit, startLineProcess, type LineProcess } from '../util/child-process.ts';
import { createSystemBus, type BusObject } from '../util/busctl.ts';
import type { InhibitLock, InhibitOptions, Logind, ShutdownSignalHandlers, ShutdownWatch } from './logind.ts';

const LOGIND_SERVICE = 'org.freedesktop.login1';
const LOGIND_OBJECT = '/org/freedesktop/login1';
const LOGIND_INTERFACE = 'org.freedesktop.login1.Manager';
const SYSTEMD_MANAGER: BusObject = {
  service: 'org.freedesktop.systemd1',
  path: '/org/freedesktop/systemd1',
  interface: 'org.freedesktop.systemd1.Manager',
};
const LOGIND: BusObject = { service: LOGIND_SERVICE, path: LOGIND_OBJECT, interface: LOGIND_INTERFACE };
/** Upstream InhibitShutdown's `why`. */
export const INHIBIT_WHY = 'Kubelet needs time to handle node shutdown';
const INHIBIT_READY_LINE = 'inhibited';
/** The bus rule of the signal: only logind's own (the daemon checks the sender owns the name). */
const PREPARE_FOR_SHUTDOWN_MATCH =
  `type='signal',sender='${LOGIND_SERVICE}',path='${LOGIND_OBJECT}',` +
  `interface='${LOGIND_INTERFACE}',member='PrepareForShutdown'`;
/** busctl monitor says this on stderr once the bus made it a monitor. */
const MONITORING = 'Monitoring bus message stream.';
const DEFAULT_CALL_TIMEOUT_MS = 10_000;

export interface SystemdLogindOptions {
  logger: Logger;
  /** The tools' environment (default: the kubelet's); tests set DBUS_SYSTEM_BUS_ADDRESS here. */
  env?: NodeJS.ProcessEnv;
  /** Where the InhibitDelayMaxSec drop-in goes (default /etc/systemd/logind.conf.d). */
  dropInDir?: string;
  /** Deadline of one D-Bus call, of getting the lock and of starting the watch (default 10 s). */
  callTimeoutMs?: number;
  /** Paths of the tools (default: found on PATH). */
  commands?: { busctl?: string; systemdInhibit?: string };
}

export function createSystemdLogind(opts: SystemdLogindOptions): Logind {
  const log = opts.logger.child({ component: 'logind' });
  const env = opts.env ?? process.env;
  const timeoutMs = opts.callTimeoutMs ?? DEFAULT_CALL_TIMEOUT_MS;
  const busctl = opts.commands?.busctl ?? 'busctl';
  const systemdInhibit = opts.commands?.systemdInhibit ?? 'systemd-inhibit';
  const dropInDir = opts.dropInDir ?? LOGIND_CONF_DROP_IN_DIR;

  const bus = createSystemBus({
    env,
    callTimeoutMs: timeoutMs,
    ...(opts.commands?.busctl ? { busctl: opts.commands.busctl } : {}),
  });

  /** A D-Bus failure said as logind being unreachable (a missed deadline stays one). */
  async function onLogindBus(op: string, call: () => Promise<string>): Promise<string> {
    try {
      return await call();
    } catch (err) {
      if (!(err instanceof KubeletError) || err.code === 'DeadlineExceeded' || err.code === 'Canceled')
        throw err;
      const why = err.message.replace(/^.*?system D-Bus: /, '');
      throw new KubeletError('Unavailable', op, `logind is not reachable on the system D-Bus: ${why}`, {
        cause: err,
      });
    }
  }

  async function inhibitDelayMaxMs(signal?: AbortSignal): Promise<number> {
    const op = 'read logind InhibitDelayMaxUSec';
    const out = await onLogindBus(op, () => bus.getProperty(op, LOGIND, 'InhibitDelayMaxUSec', signal));
    const m = /^t (\d+)\s*$/.exec(out);
    if (!m?.[1]) throw new KubeletError('Internal', op, `unexpected busctl output ${JSON.stringify(out)}`);
    return Number(BigInt(m[1]) / 1000n);
  }

  async function inhibitShutdown(options: InhibitOptions = {}): Promise<InhibitLock> {
    const op = 'take a logind delay inhibitor lock for shutdown';
    let released = false;
    let onGranted: () => void = () => undefined;
    const grantedNow = new Promise<void>((resolve) => (onGranted = resolve));
    const proc = startLineProcess(
      systemdInhibit,
      [
        '--what=shutdown',
        '--mode=delay',
        '--who=kubelet',
        `--why=${INHIBIT_WHY}`,
        '/bin/sh',
        '-c',
        `echo ${INHIBIT_READY_LINE}; exec cat >/dev/null`,
      ],
      {
        env,
        stdinPipe: true,
        onLine: (line) => {
          if (line === INHIBIT_READY_LINE) onGranted();
          else log.debug('systemd-inhibit output', { line });
        },
      },
    );
    const outcome = await firstOf(grantedNow, proc, timeoutMs, options.signal);
    if (outcome !== 'ready') throw await failure(op, outcome, proc, 'systemd-inhibit');
    void proc.exited.then((exit) => {
      if (released) return;
      released = true;
      const err = new KubeletError(
        'Unavailable',
        'logind inhibitor lock',
        describeExit('systemd-inhibit', exit, proc.stderrTail()),
      );
      log.error('the logind inhibitor lock holder exited', { err: err.message });
      options.onLost?.(err);
    });
    return {
      held: () => !released,
      async release() {
        if (released) return;
        released = true;
        await proc.stop();
      },
    };
  }

  async function watchShutdown(
    handlers: ShutdownSignalHandlers,
    signal?: AbortSignal,
  ): Promise<ShutdownWatch> {
    const op = 'watch logind PrepareForShutdown';
    let stopped = false;
    let onReady: () => void = () => undefined;
    const ready = new Promise<void>((resolve) => (onReady = resolve));
    const proc = startLineProcess(
      busctl,
      ['--system', '--json=short', `--match=${PREPARE_FOR_SHUTDOWN_MATCH}`, 'monitor'],
      {
        env,
        onLine: (line) => {
          const active = prepareForShutdownOf(line);
          if (active === undefined) log.debug('unexpected busctl monitor output', { line });
          else if (!stopped) handlers.onPrepareForShutdown(active);
        },
        onStderr: (tail) => {
          if (tail.includes(MONITORING)) onReady();
        },
      },
    );
    const outcome = await firstOf(ready, proc, timeoutMs, signal);
    if (outcome !== 'ready') throw await failure(op, outcome, proc, 'busctl monitor');
    void proc.exited.then((exit) => {
      if (stopped) return;
      stopped = true;
      handlers.onError(
        new KubeletError('Unavailable', op, describeExit('busctl monitor', exit, proc.stderrTail())),
      );
    });
    return {
      async stop() {
        stopped = true;
        await proc.stop();
      },
    };
  }

  async function overrideInhibitDelay(ms: number): Promise<void> {
    // Whole seconds, rounded up so the result is never below what was asked for.
    const seconds = Math.ceil(ms / 1000);
    const file = path.join(dropInDir, KUBELET_LOGIND_CONF_NAME);
    const text = `# Kubelet logind override\n[Login]\nInhibitDelayMaxSec=${seconds}\n`;
    try {
      await mkdir(dropInDir, { recursive: true, mode: 0o755 });
      const tmp = `${file}.tmp-${process.pid}`;
      await writeFile(tmp, text, { mode: 0o644 });
      await rename(tmp, file);
    } catch (err) {
      throw new KubeletError('Internal', `write logind drop-in ${file}`, describeError(err), { cause: err });
    }
    log.info('wrote logind drop-in raising InhibitDelayMaxSec', { file, inhibitDelayMaxSec: seconds });
  }

  async function reloadLogindConf(signal?: AbortSignal): Promise<void> {
    // Upstream ReloadLogindConf: systemd's KillUnit(systemd-logind.service, "all", SIGHUP).
    const op = 'reload logind configuration';
    await onLogindBus(op, () =>
      bus.call(op, SYSTEMD_MANAGER, 'KillUnit', 'ssi', ['systemd-logind.service', 'all', '1'], signal),
    );
  }

  return {
    async reachable(signal) {
      try {
        await inhibitDelayMaxMs(signal);
        return { reachable: true };
      } catch (err) {
        return { reachable: false, reason: describeError(err) };
      }
    },
    inhibitDelayMaxMs,
    inhibitShutdown,
    watchShutdown,
    overrideInhibitDelay,
    reloadLogindConf,
  };
}

/** The boolean of a PrepareForShutdown message busctl printed as JSON; undefined for anything else. */
export function prepareForShutdownOf(line: string): boolean | undefined {
  let msg: { member?: unknown; payload?: { type?: unknown; data?: unknown } };
  try {
    msg = JSON.parse(line) as typeof msg;
  } catch {
    // Not a JSON message line: not ours to act on (the caller logs it).
    return undefined;
  }
  const data = msg.payload?.data;
  if (msg.member !== 'PrepareForShutdown' || msg.payload?.type !== 'b' || !Array.isArray(data))
    return undefined;
  return typeof data[0] === 'boolean' ? data[0] : undefined;
}

type Outcome = 'ready' | 'exited' | 'timeout' | 'aborted';

/** Waits for `ready`, the process's exit, the deadline or the signal, whichever comes first. */
async function firstOf(
  ready: Promise<void>,
  proc: LineProcess,
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<Outcome> {
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  try {
    return await Promise.race<Outcome>([
      ready.then(() => 'ready'),
      proc.exited.then(() => 'exited'),
      new Promise<Outcome>((resolve) => {
        timer = setTimeout(() => resolve('timeout'), timeoutMs);
        if (!signal) return;
        if (signal.aborted) resolve('aborted');
        onAbort = () => resolve('aborted');
        signal.addEventListener('abort', onAbort, { once: true });
      }),
    ]);
  } finally {
    clearTimeout(timer);
    if (onAbort) signal?.removeEventListener('abort', onAbort);
  }
}

/** Stops a process that did not get ready and says why. */
async function failure(op: string, outcome: Outcome, proc: LineProcess, name: string): Promise<KubeletError> {
  await proc.stop();
  switch (outcome) {
    case 'timeout':
      return new KubeletError('DeadlineExceeded', op, `${name} did not get ready in time`);
    case 'aborted':
      return new KubeletError('Canceled', op, 'aborted');
    default:
      return new KubeletError('Unavailable', op, describeExit(name, await proc.exited, proc.stderrTail()));
  }
}
