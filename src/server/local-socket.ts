/**
 * The kubelet API on a unix socket under the root dir (`<rootDir>/tskubelet.sock`), for the node's
 * own CLI (`tskubelet get pods`, `logs`, `exec`, …) without certificates: a standalone node is
 * usable out of the box. Every route is served, streaming included, by the same handlers as the
 * HTTPS listener.
 *
 * No authentication runs here: a request on the socket is the local root user
 * (`LOCAL_SOCKET_USER`), authorized for everything. What protects it is the file system: connecting
 * to a unix socket needs write permission on it, and the socket is mode 0600, owned by the kubelet's
 * user (root), in the root dir (0750, kubelet/data-dirs.ts). It is bound inside a fresh 0700
 * directory, chmod-ed, then renamed into place, so no other user can reach it at any moment, whatever
 * the umask (binding it in the open and chmod-ing after leaves a window in which another user can
 * connect and keep the connection).
 *
 * No peer-credential check: Node exposes neither SO_PEERCRED nor SCM_CREDENTIALS, and the ways
 * around that without native code are poor — `ss -xp` (or walking /proc/<pid>/fd) per connection
 * finds the processes holding the peer socket, not who connected (a descriptor can be passed on or
 * outlive its process), costs a scan of every process's descriptors, and races; sock_diag's
 * UNIX_DIAG_UID needs a netlink socket Node cannot open, and `ss` 6.1 does not print it. It would
 * also add little: SO_PEERCRED reports the connecting process's credentials at connect(), the same
 * moment the kernel checks the socket's mode, so the only extra callers it would refuse are non-root
 * processes with CAP_DAC_OVERRIDE, which can read every pod's files anyway.
 *
 * At start a socket left at the path by a dead kubelet (nobody answers a connect) is replaced; a
 * live one (another kubelet answers) or a file that is not a socket is never touched: `start()`
 * rejects with an error saying so. On close the socket file is removed if it is still ours.
 */
import { chmod, lstat, mkdir, mkdtemp, rename, rm, unlink } from 'node:fs/promises';
import type { IncomingMessage, Server } from 'node:http';
import { connect } from 'node:net';
import { dirname, join, basename } from 'node:path';
import type { Duplex } from 'node:stream';
import { createServer } from '../util/node-http.ts';
import { KubeletError, describeError, errnoCode } from '../util/errors.ts';
import type { Logger } from '../util/logger.ts';
import { KUBELET_DIR_MODE } from '../util/private-dir.ts';
import type { ApiHandlers } from './api-handlers.ts';
import { handleCriRead, type CriReadHost } from './cri-read.ts';
import { handlePodEvents, type LocalEvent } from './pod-events.ts';
import { rejectUpgrade, sendText } from './http-util.ts';
import { setRequestUser } from './request-user.ts';
import { matchRoute, type Route } from './routes.ts';

/** Who a request on the local socket is (for logs; no authorizer is asked). */
export const LOCAL_SOCKET_USER = { name: 'local:root', groups: ['system:masters', 'system:authenticated'] };

/** The socket's file name under the root dir. */
export const LOCAL_SOCKET_NAME = 'tskubelet.sock';

const PROBE_TIMEOUT_MS = 2_000;

export interface LocalSocketServerOptions {
  path: string;
  handlers: ApiHandlers;
  logger: Logger;
  /** The read-only CRI views (`/cri/...`, cri-read.ts) for `tskubelet ps|images|inspect|stats`; here only. */
  cri?: CriReadHost;
  /** The kubelet's recent events (`/debug/pods/{ns}/{name}/events`, pod-events.ts); here only. */
  events?: () => readonly LocalEvent[];
}

export interface LocalSocketServer {
  /** Binds the socket; rejects when another process serves it or the path is not a socket. */
  start(): Promise<void>;
  readonly path: string;
  close(): Promise<void>;
}

/** Whether something accepts connections on the unix socket at `path`. */
export function socketAnswers(path: string, timeoutMs = PROBE_TIMEOUT_MS): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect({ path });
    const done = (answer: boolean): void => {
      clearTimeout(timer);
      s.destroy();
      resolve(answer);
    };
    // A socket that accepts but is too slow to answer is alive: never delete it.
    const timer = setTimeout(() => done(true), timeoutMs);
    s.once('connect', () => done(true));
    s.once('error', () => done(false));
  });
}

/** Clears the way for a new socket at `path`, or throws why it cannot. */
async function clearStale(path: string, log: Logger): Promise<void> {
  let st;
  try {
    st = await lstat(path);
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') return;
    throw err;
  }
  if (!st.isSocket()) {
    throw new KubeletError(
      'AlreadyExists',
      'serve the local socket',
      `${path} exists and is not a socket; remove it or choose another path (--local-socket)`,
    );
  }
  if (await socketAnswers(path)) {
    throw new KubeletError(
      'AlreadyExists',
      'serve the local socket',
      `another process (a running kubelet?) serves ${path}; stop it or choose another path (--local-socket, "" to disable)`,
    );
  }
  log.info('removing a stale local socket nobody answers on', { path });
  await unlink(path).catch((err: unknown) => {
    if (errnoCode(err) !== 'ENOENT') throw err;
  });
}

export function createLocalSocketServer(opts: LocalSocketServerOptions): LocalSocketServer {
  const log = opts.logger.child({ component: 'local-socket' });
  const upgraded = new Set<Duplex>();
  let ino: number | undefined;

  function parse(req: IncomingMessage): { url: URL; route: Route } | undefined {
    try {
      const url = new URL(req.url ?? '/', 'http://localhost');
      return { url, route: matchRoute(url.pathname) };
    } catch {
      return undefined;
    }
  }

  const server: Server = createServer((req, res) => {
    const parsed = parse(req);
    if (!parsed) {
      sendText(res, 400, 'Bad Request: malformed request URL', { connection: 'close' });
      return;
    }
    const { url, route } = parsed;
    setRequestUser(req, LOCAL_SOCKET_USER);
    if (opts.events && handlePodEvents(req, res, url, opts.events)) return;
    const cri = opts.cri;
    const answer = cri
      ? handleCriRead(req, res, url, cri, log).then((done) =>
          done ? undefined : opts.handlers.request(req, res, route, url),
        )
      : opts.handlers.request(req, res, route, url);
    answer.catch((err: unknown) => {
      log.error('kubelet API handler failed', { path: url.pathname, err: describeError(err) });
      if (!res.headersSent) sendText(res, 500, `internal error: ${describeError(err)}`);
      else res.destroy();
    });
  });
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    upgraded.add(socket);
    socket.once('close', () => upgraded.delete(socket));
    socket.on('error', (err) => log.debug('upgrade socket error', { err: describeError(err) }));
    const parsed = parse(req);
    if (!parsed) {
      rejectUpgrade(socket, 400, 'Bad Request: malformed request URL');
      return;
    }
    const { url, route } = parsed;
    opts.handlers.upgrade(req, socket, head, route, url).catch((err: unknown) => {
      log.error('kubelet API upgrade failed', { path: url.pathname, err: describeError(err) });
      rejectUpgrade(socket, 500, `internal error: ${describeError(err)}`);
    });
  });
  server.headersTimeout = 30_000;
  server.requestTimeout = 0; // logs -f and watches are long; streams are upgrades.
  server.keepAliveTimeout = 30_000;

  return {
    path: opts.path,
    async start() {
      const dir = dirname(opts.path);
      await mkdir(dir, { recursive: true, mode: KUBELET_DIR_MODE });
      await clearStale(opts.path, log);
      // Bound inside a fresh directory only this user can enter (mkdtemp: 0700, random name), made
      // 0600, then renamed into place: whatever the umask, no other user can reach the socket at any
      // moment, not even between the bind and the chmod. Same directory, so the rename is atomic.
      const privateDir = await mkdtemp(join(dir, `.${basename(opts.path)}.`));
      const bound = join(privateDir, 's');
      try {
        await new Promise<void>((resolve, reject) => {
          server.once('error', reject);
          server.listen(bound, () => {
            server.off('error', reject);
            resolve();
          });
        });
        await chmod(bound, 0o600);
        await rename(bound, opts.path);
        ino = (await lstat(opts.path)).ino;
      } catch (err) {
        if (server.listening) await new Promise<void>((resolve) => server.close(() => resolve()));
        throw new KubeletError('Internal', 'serve the local socket', `${opts.path}: ${describeError(err)}`, {
          cause: err,
        });
      } finally {
        await rm(privateDir, { recursive: true, force: true }).catch((err: unknown) => {
          // An empty directory left behind is harmless (0700, ours); say so rather than fail the start.
          log.warn("cannot remove the local socket's temporary directory", {
            dir: privateDir,
            err: describeError(err),
          });
        });
      }
      log.info('serving the kubelet API on the local socket (root only, no certificates)', {
        path: opts.path,
      });
    },
    async close() {
      if (!server.listening) return;
      const closing = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      for (const s of upgraded) s.destroy();
      await closing;
      // Only our own socket: another kubelet may have replaced a path we no longer answer on.
      try {
        if ((await lstat(opts.path)).ino === ino) await unlink(opts.path);
      } catch (err) {
        if (errnoCode(err) !== 'ENOENT') {
          log.warn('cannot remove the local socket', { path: opts.path, err: describeError(err) });
        }
      }
    },
  };
}
