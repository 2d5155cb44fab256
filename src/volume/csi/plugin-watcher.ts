/**
 * Plugin registration through `<root-dir>/plugins_registry` (upstream pkg/kubelet/pluginmanager:
 * pluginwatcher/plugin_watcher.go finds sockets, reconciler/reconciler.go compares the sockets found
 * with the plugins registered every second, operationexecutor/operation_generator.go registers and
 * deregisters). For each new unix socket (dot-files skipped, sub-folders walked): dial it (10 s),
 * GetInfo (1 s), pick the handler for the plugin's type, validate, register, NotifyRegistrationStatus
 * (5 s). A socket that goes away, or is replaced by a new one, is deregistered (and the new one
 * registered). A failed registration is retried with a back-off. One operation per socket at a time;
 * sockets are handled in parallel so a hung plugin delays no other. Every failure is logged with the
 * socket and plugin name and recorded as a Node event.
 */
import { watch, type FSWatcher } from 'node:fs';
import { lstat, mkdir, readdir } from 'node:fs/promises';
import path from 'node:path';
import type { NodeEventSink } from '../../api/events.ts';
import { describeError, errnoCode } from '../../util/errors.ts';
import type { Logger } from '../../util/logger.ts';
import { dialUnix, type PluginConnection } from './grpc-unix.ts';
import { REGISTRATION_PROTO, type PluginInfo, type RegistrationStatus } from './protos.ts';

/** Upstream operation_generator.go dialTimeoutDuration. */
export const REGISTRATION_DIAL_TIMEOUT_MS = 10_000;
/** Upstream operation_generator.go: GetInfo runs under a 1 s context. */
export const GET_INFO_TIMEOUT_MS = 1_000;
/** Upstream operation_generator.go notifyTimeoutDuration. */
export const NOTIFY_TIMEOUT_MS = 5_000;
/** Upstream plugin_manager.go loopSleepDuration (the reconciler's period). */
export const RECONCILE_PERIOD_MS = 1_000;
/** Upstream goroutinemap exponential back-off: initial 500 ms, doubling, capped at 2 min 2 s. */
export const RETRY_INITIAL_MS = 500;
export const RETRY_MAX_MS = 122_000;
/** How deep below the registry dir sockets are looked for (upstream walks without a limit). */
const MAX_DEPTH = 4;

/** Upstream cache.PluginHandler: what a plugin type (CSIPlugin, DevicePlugin) does with a plugin. */
export interface PluginHandler {
  /** Rejects a plugin before registration (the message goes back to the plugin). */
  validatePlugin(name: string, endpoint: string, versions: string[]): Promise<void>;
  /**
   * Makes the plugin usable; a rejection is reported to the plugin as a failed registration.
   * `signal` aborts when the watcher stops (the kubelet shuts down).
   */
  registerPlugin(name: string, endpoint: string, versions: string[], signal: AbortSignal): Promise<void>;
  /** The plugin's socket went away; a rejection is logged and recorded as a Node event. */
  deregisterPlugin(name: string): Promise<void>;
}

export interface PluginWatcherOptions {
  /** `<root-dir>/plugins_registry`. */
  dir: string;
  /** Handlers by plugin type (`CSIPlugin`). */
  handlers: Record<string, PluginHandler>;
  logger: Logger;
  nodeEvent: NodeEventSink;
  /** Tests: shorter periods and timeouts. */
  reconcilePeriodMs?: number;
  dialTimeoutMs?: number;
  getInfoTimeoutMs?: number;
  notifyTimeoutMs?: number;
  retryInitialMs?: number;
  /** Monotonic ms; default performance.now. */
  monotonic?: () => number;
}

/** A registered plugin (upstream cache.PluginInfo). */
export interface RegisteredPlugin {
  socket: string;
  type: string;
  name: string;
  endpoint: string;
}

export interface PluginWatcher {
  /** Creates the dir, then watches it until `signal` aborts; resolves once the first scan is done. */
  start(signal: AbortSignal): Promise<void>;
  /** The plugins registered now. */
  registered(): RegisteredPlugin[];
  /** Scans and reconciles once now, waiting for the operations it starts (tests). */
  reconcileNow(): Promise<void>;
  /** Stops watching and waits for operations in flight. Registered plugins stay registered. */
  stop(): Promise<void>;
}

interface Found {
  /** Changes when the socket is re-created (upstream keys on the time the socket was seen). */
  stamp: string;
}

interface Registered extends RegisteredPlugin {
  stamp: string;
  handler: PluginHandler;
}

/** Sockets below `dir` (dot-names skipped), by path. */
async function scanSockets(dir: string, log: Logger, depth = 0): Promise<Map<string, Found>> {
  const out = new Map<string, Found>();
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (err) {
    if (errnoCode(err) !== 'ENOENT')
      log.warn('plugin watcher: cannot read dir', { dir, error: describeError(err) });
    return out;
  }
  for (const name of names) {
    if (name.startsWith('.')) continue;
    const p = path.join(dir, name);
    try {
      const st = await lstat(p);
      if (st.isSocket()) out.set(p, { stamp: `${st.ino}:${st.ctimeMs}` });
      else if (st.isDirectory() && depth < MAX_DEPTH)
        for (const [k, v] of await scanSockets(p, log, depth + 1)) out.set(k, v);
    } catch (err) {
      // Gone between readdir and lstat: the next scan sees the dir as it is then.
      if (errnoCode(err) !== 'ENOENT')
        log.warn('plugin watcher: cannot stat', { path: p, error: describeError(err) });
    }
  }
  return out;
}

export function createPluginWatcher(opts: PluginWatcherOptions): PluginWatcher {
  const log = opts.logger.child({ component: 'pluginmanager' });
  const period = opts.reconcilePeriodMs ?? RECONCILE_PERIOD_MS;
  const dialMs = opts.dialTimeoutMs ?? REGISTRATION_DIAL_TIMEOUT_MS;
  const infoMs = opts.getInfoTimeoutMs ?? GET_INFO_TIMEOUT_MS;
  const notifyMs = opts.notifyTimeoutMs ?? NOTIFY_TIMEOUT_MS;
  const retryInitial = opts.retryInitialMs ?? RETRY_INITIAL_MS;
  const now = opts.monotonic ?? (() => performance.now());
  const registered = new Map<string, Registered>();
  /** Operations in flight, by socket. */
  const inFlight = new Map<string, Promise<void>>();
  /** Failed registrations: when the socket may be tried again, and the last delay. */
  const backoff = new Map<string, { stamp: string; notBefore: number; delayMs: number }>();
  let watcher: FSWatcher | undefined;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  /** Aborted by stop(): operations in flight end at once instead of at their deadlines. */
  const stopping = new AbortController();
  let scanning: Promise<void> | undefined;
  let rescan = false;

  const fail = (
    socket: string,
    name: string | undefined,
    message: string,
    reason = 'FailedPluginRegistration',
  ): void => {
    const what = reason === 'FailedPluginRegistration' ? 'registration' : 'deregistration';
    log.error(`plugin ${what} failed`, { socket, plugin: name, error: message });
    opts.nodeEvent('Warning', reason, `${name ? `plugin ${name} ` : ''}at ${socket}: ${message}`);
  };

  async function notify(conn: PluginConnection, socket: string, status: RegistrationStatus): Promise<void> {
    await conn.call(
      'plugin registration NotifyRegistrationStatus',
      REGISTRATION_PROTO.method('pluginregistration.Registration', 'NotifyRegistrationStatus'),
      status,
      { timeoutMs: notifyMs, signal: stopping.signal },
    );
    log.debug('plugin notified of its registration', { socket, ...status });
  }

  /** Upstream GenerateRegisterPluginFunc. Resolves true when the plugin is registered. */
  async function register(socket: string, stamp: string): Promise<boolean> {
    let conn: PluginConnection;
    try {
      conn = await dialUnix(socket, 'plugin registration dial', dialMs);
    } catch (err) {
      fail(socket, undefined, `RegisterPlugin error -- dial failed: ${describeError(err)}`);
      return false;
    }
    let name: string | undefined;
    try {
      const info = await conn.call<PluginInfo>(
        'plugin registration GetInfo',
        REGISTRATION_PROTO.method('pluginregistration.Registration', 'GetInfo'),
        {},
        { timeoutMs: infoMs, signal: stopping.signal },
      );
      name = info.name;
      const handler = opts.handlers[info.type];
      const refuse = async (message: string): Promise<false> => {
        fail(socket, name, message);
        await notify(conn, socket, { pluginRegistered: false, error: message }).catch((err: unknown) =>
          fail(socket, name, `failed to send error: ${describeError(err)}`),
        );
        return false;
      };
      if (!handler)
        return await refuse(`RegisterPlugin error -- no handler registered for plugin type: ${info.type}`);
      const endpoint = info.endpoint || socket;
      const versions = info.supportedVersions ?? [];
      try {
        await handler.validatePlugin(info.name, endpoint, versions);
      } catch (err) {
        return await refuse(
          `RegisterPlugin error -- plugin validation failed with err: ${describeError(err)}`,
        );
      }
      // Recorded before the handler runs, as upstream: a delete during registration deregisters.
      registered.set(socket, { socket, type: info.type, name: info.name, endpoint, stamp, handler });
      try {
        await handler.registerPlugin(info.name, endpoint, versions, stopping.signal);
      } catch (err) {
        registered.delete(socket);
        return await refuse(
          `RegisterPlugin error -- plugin registration failed with err: ${describeError(err)}`,
        );
      }
      log.info('plugin registered', { socket, plugin: info.name, type: info.type, endpoint, versions });
      try {
        await notify(conn, socket, { pluginRegistered: true, error: '' });
      } catch (err) {
        // Registered all the same (upstream: Register is kept even when the notify fails).
        fail(socket, name, `failed to send registration status: ${describeError(err)}`);
      }
      return true;
    } catch (err) {
      fail(
        socket,
        name,
        `RegisterPlugin error -- failed to get plugin info using RPC GetInfo: ${describeError(err)}`,
      );
      return false;
    } finally {
      conn.close();
    }
  }

  async function deregister(p: Registered): Promise<void> {
    registered.delete(p.socket);
    log.info('plugin deregistered: its socket is gone or was replaced', { socket: p.socket, plugin: p.name });
    try {
      await p.handler.deregisterPlugin(p.name);
    } catch (err) {
      fail(p.socket, p.name, `DeRegisterPlugin error -- ${describeError(err)}`, 'FailedPluginDeregistration');
    }
  }

  function run(socket: string, op: () => Promise<void>): void {
    if (inFlight.has(socket)) return;
    const p = op()
      .catch((err: unknown) => fail(socket, registered.get(socket)?.name, describeError(err)))
      .finally(() => inFlight.delete(socket));
    inFlight.set(socket, p);
  }

  /** Upstream reconciler.reconcile: deregister what is gone or changed, register what is new. */
  async function reconcile(): Promise<void> {
    const found = await scanSockets(opts.dir, log);
    for (const p of registered.values()) {
      const f = found.get(p.socket);
      if (!f || f.stamp !== p.stamp) run(p.socket, () => deregister(p));
    }
    const t = now();
    for (const [socket, f] of found) {
      if (registered.get(socket)?.stamp === f.stamp) continue;
      if (registered.has(socket)) continue; // its deregistration runs first
      const b = backoff.get(socket);
      if (b && b.stamp === f.stamp && t < b.notBefore) continue;
      run(socket, async () => {
        if (await register(socket, f.stamp)) {
          backoff.delete(socket);
          return;
        }
        const delayMs = b && b.stamp === f.stamp ? Math.min(b.delayMs * 2, RETRY_MAX_MS) : retryInitial;
        backoff.set(socket, { stamp: f.stamp, notBefore: now() + delayMs, delayMs });
      });
    }
    for (const socket of backoff.keys()) if (!found.has(socket)) backoff.delete(socket);
  }

  function kick(): void {
    if (stopped) return;
    if (scanning) {
      rescan = true;
      return;
    }
    scanning = reconcile()
      .catch((err: unknown) =>
        log.error('plugin watcher: reconcile failed', { dir: opts.dir, error: describeError(err) }),
      )
      .finally(() => {
        scanning = undefined;
        if (rescan) {
          rescan = false;
          kick();
        }
      });
  }

  return {
    async start(signal) {
      await mkdir(opts.dir, { recursive: true, mode: 0o750 });
      signal.addEventListener('abort', () => void this.stop(), { once: true });
      try {
        // Events only hasten the next scan; the periodic scan is what is relied on (fs.watch is
        // not recursive everywhere and coalesces events).
        watcher = watch(opts.dir, { recursive: true }, () => kick());
        watcher.on('error', (err) =>
          log.warn('plugin watcher: fs watch failed; scanning periodically', {
            dir: opts.dir,
            error: describeError(err),
          }),
        );
      } catch (err) {
        log.warn('plugin watcher: cannot watch the dir; scanning periodically', {
          dir: opts.dir,
          error: describeError(err),
        });
      }
      timer = setInterval(kick, period);
      timer.unref();
      log.info('plugin watcher started', { dir: opts.dir });
      kick();
      await scanning;
    },
    registered: () =>
      [...registered.values()].map(({ socket, type, name, endpoint }) => ({ socket, type, name, endpoint })),
    async reconcileNow() {
      await scanning;
      await reconcile();
      await Promise.all(inFlight.values());
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      watcher?.close();
      if (timer) clearInterval(timer);
      stopping.abort(new Error('the plugin watcher stopped'));
      await scanning;
      await Promise.all(inFlight.values());
    },
  };
}
