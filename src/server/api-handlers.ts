/**
 * The kubelet API's handlers behind authentication and authorization: one function for plain
 * requests and one for upgrade requests (exec, attach, port-forward), dispatching on the parsed
 * route. Shapes, status codes and messages follow upstream pkg/kubelet/server.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { isCriError } from '../runtime/cri/index.ts';
import { describeError, hasCode } from '../util/errors.ts';
import type { Logger } from '../util/logger.ts';
import { podFullName, type Pod, type PodList } from '../api/types.ts';
import { isStaticPod } from '../api/pod-source.ts';
import { serveContainerLogs } from './container-logs.ts';
import type { KubeletApiHost } from './host.ts';
import { crossSiteMessage, crossSiteVerdict, quoteHeader, simpleBodyType } from './cross-site.ts';
import { POD_OUTPUT_HEADERS, rejectUpgrade, sendJSON, sendText, writeHead } from './http-util.ts';
import { DEBUGGING_ROUTES, type Route } from './routes.ts';
import { proxyUpgrade } from './stream-proxy.ts';
import { serveSystemLogs } from './system-logs.ts';
import { servePodWhy } from './pod-why.ts';
import { servePodTimeline } from './debug-pods.ts';

export interface ApiHandlerOptions {
  host: KubeletApiHost;
  enableDebuggingHandlers: boolean;
  enableSystemLogHandler: boolean;
  streamingIdleTimeoutMs: number;
  logger: Logger;
  /** The node console (src/console) at /console/ and /debug/console/events; absent: 404. */
  console?: ConsoleHandler;
}

/** The node console's side of the API: its two routes. */
export interface ConsoleHandler {
  serve(
    req: IncomingMessage,
    res: ServerResponse,
    route: Extract<Route, { kind: 'console' | 'consoleEvents' }>,
    url: URL,
  ): Promise<void>;
}

export interface ApiHandlers {
  request(req: IncomingMessage, res: ServerResponse, route: Route, url: URL): Promise<void>;
  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer, route: Route, url: URL): Promise<void>;
  /** Upgraded connections being proxied right now. */
  readonly activeStreams: number;
}

/** remotecommand options from the query (upstream remotecommandserver.NewOptions). */
export function streamOptions(
  query: URLSearchParams,
): { ok: true; flags: StreamFlags } | { ok: false; message: string } {
  const tty = query.get('tty') === '1';
  const stdin = query.get('input') === '1';
  const stdout = query.get('output') === '1';
  // stderr is merged into the tty; upstream drops it rather than failing.
  const stderr = query.get('error') === '1' && !tty;
  if (!stdin && !stdout && !stderr)
    return { ok: false, message: 'you must specify at least 1 of stdin, stdout, stderr' };
  return { ok: true, flags: { stdin, stdout, stderr, tty } };
}

interface StreamFlags {
  stdin: boolean;
  stdout: boolean;
  stderr: boolean;
  tty: boolean;
}

/** Port-forward ports from the query: required for WebSocket clients only (upstream NewV4Options). */
export function forwardPorts(
  req: IncomingMessage,
  query: URLSearchParams,
): { ok: true; ports: number[] } | { ok: false; message: string } {
  if ((req.headers.upgrade ?? '').toLowerCase() !== 'websocket') return { ok: true, ports: [] };
  const values = query.getAll('port');
  if (values.length === 0) return { ok: false, message: 'query parameter "port" is required' };
  const ports: number[] = [];
  for (const value of values) {
    if (value === '') return { ok: false, message: 'query parameter "port" cannot be empty' };
    for (const p of value.split(',')) {
      const n = /^\d{1,5}$/.test(p) ? Number(p) : NaN;
      if (!(n <= 65535)) return { ok: false, message: `unable to parse "${value}" as a port` };
      if (n < 1) return { ok: false, message: `port "${value}" must be > 0` };
      ports.push(n);
    }
  }
  return { ok: true, ports };
}

/** A CRI failure as upstream's streaming.WriteError maps it. */
function runtimeErrorStatus(err: unknown): number {
  if (isCriError(err) && hasCode(err, 'NotFound')) return 404;
  if (isCriError(err) && hasCode(err, 'ResourceExhausted')) return 429;
  return 500;
}

function asPodList(pods: Pod[]): PodList {
  return {
    apiVersion: 'v1',
    kind: 'PodList',
    metadata: {},
    items: pods.map((p) => ({ apiVersion: 'v1', kind: 'Pod', ...p })),
  };
}

export function createApiHandlers(opts: ApiHandlerOptions): ApiHandlers {
  const { host, logger } = opts;
  let activeStreams = 0;

  function methodAllowed(req: IncomingMessage, res: ServerResponse, allowed: readonly string[]): boolean {
    const m = req.method === 'HEAD' ? 'GET' : (req.method ?? 'GET');
    if (allowed.includes(m)) return true;
    sendText(res, 405, `method ${req.method ?? ''} is not allowed`, { allow: allowed.join(', ') });
    return false;
  }

  /** The 403 body when the request comes from another site's page (cross-site.ts), logged. */
  function crossSiteRefusal(req: IncomingMessage, url: URL, upgrade: boolean): string | undefined {
    const verdict = crossSiteVerdict({ method: req.method, upgrade, headers: req.headers });
    if (verdict.ok) return undefined;
    const header = (v: string | string[] | undefined) => quoteHeader(Array.isArray(v) ? v.join(', ') : v);
    // Path only: the query may hold a command (`/run?cmd=`) or other request data.
    logger.warn('cross-site request refused', {
      method: (req.method ?? '').slice(0, 20),
      path: url.pathname.slice(0, 200),
      upgrade,
      origin: header(req.headers.origin),
      secFetchSite: header(req.headers['sec-fetch-site']),
    });
    return crossSiteMessage(verdict.reason);
  }

  async function request(req: IncomingMessage, res: ServerResponse, route: Route, url: URL): Promise<void> {
    const refused = crossSiteRefusal(req, url, false);
    if (refused !== undefined) {
      sendText(res, 403, refused);
      return;
    }
    if (DEBUGGING_ROUTES.has(route.kind) && !opts.enableDebuggingHandlers) {
      sendText(res, 405, 'Debug endpoints are disabled.');
      return;
    }
    const ac = new AbortController();
    res.once('close', () => ac.abort(new Error('client went away')));
    switch (route.kind) {
      case 'healthz': {
        const h = host.healthz();
        sendText(
          res,
          h.ok ? 200 : 500,
          h.ok ? 'ok' : `[-]syncloop failed: ${h.message}\nhealthz check failed`,
        );
        return;
      }
      case 'pods':
        if (!methodAllowed(req, res, ['GET'])) return;
        sendJSON(
          res,
          asPodList(host.pods().map(({ pod, status }) => ({ ...pod, ...(status ? { status } : {}) }))),
        );
        return;
      case 'runningpods':
        if (!methodAllowed(req, res, ['GET'])) return;
        sendJSON(res, asPodList(await host.runningPods(ac.signal)));
        return;
      case 'configz':
        // Upstream installs /configz with the debugging handlers only: without them it is unknown.
        if (!opts.enableDebuggingHandlers) {
          sendText(res, 404, '404 page not found');
          return;
        }
        if (!methodAllowed(req, res, ['GET'])) return;
        sendJSON(res, { kubeletconfig: host.configz() });
        return;
      case 'spec':
        if (!methodAllowed(req, res, ['GET'])) return;
        sendJSON(res, await host.spec());
        return;
      case 'metrics': {
        if (!methodAllowed(req, res, ['GET'])) return;
        const text = await host.metrics(route.which);
        writeHead(res, 200, { 'content-type': text.contentType });
        res.end(text.body);
        return;
      }
      case 'stats-summary': {
        if (!methodAllowed(req, res, ['GET', 'POST'])) return;
        const only = url.searchParams.get('only_cpu_and_memory') === 'true';
        sendJSON(res, await host.statsSummary(only, ac.signal));
        return;
      }
      case 'containerLogs':
        if (!methodAllowed(req, res, ['GET'])) return;
        await serveContainerLogs(res, route, url.searchParams, host, logger);
        return;
      case 'run': {
        if (!methodAllowed(req, res, ['POST'])) return;
        // The command comes from the query only (upstream also reads it from a form body): a form
        // or no-cors body from a web page is refused before anything runs.
        const form = simpleBodyType(req.headers['content-type']);
        if (form !== undefined) {
          sendText(
            res,
            415,
            `/run does not take a ${form} body: pass the command in the query (?cmd=...), with no body`,
          );
          return;
        }
        await run(res, route, url.searchParams, ac.signal);
        return;
      }
      case 'exec':
      case 'attach':
      case 'portForward': {
        if (!methodAllowed(req, res, ['GET', 'POST'])) return;
        // Upstream validates, then refuses a plain request to a streaming endpoint.
        sendText(res, 400, 'Upgrade request required');
        return;
      }
      case 'logs':
        if (!opts.enableSystemLogHandler) {
          sendText(res, 405, 'logs endpoint is disabled.');
          return;
        }
        if (!methodAllowed(req, res, ['GET'])) return;
        await serveSystemLogs(req, res, host.systemLogDir, route.subpath);
        return;
      case 'pprof':
        sendText(res, 404, 'profiling endpoints are not available in tskubelet');
        return;
      case 'console':
      case 'consoleEvents':
        if (!opts.console) {
          sendText(res, 404, '404 page not found');
          return;
        }
        await opts.console.serve(req, res, route, url);
        return;
      case 'debugPodWhy':
        if (!methodAllowed(req, res, ['GET'])) return;
        await servePodWhy(res, route, host, ac.signal);
        return;
      case 'debugPodTimeline':
        if (!methodAllowed(req, res, ['GET'])) return;
        servePodTimeline(res, route, host);
        return;
      case 'not-found':
        sendText(res, 404, '404 page not found');
        return;
    }
  }

  async function run(
    res: ServerResponse,
    route: { namespace: string; pod: string; uid?: string; container: string },
    query: URLSearchParams,
    signal: AbortSignal,
  ): Promise<void> {
    const found = host.getPod(route.namespace, route.pod);
    if (!found) {
      sendText(res, 404, 'pod does not exist');
      return;
    }
    const id = await host.findRunningContainer(found.pod, route.container, signal);
    if (!id) {
      // 404 like exec and attach (upstream: 500, as if the kubelet had failed).
      sendText(res, 404, `container not found ("${route.container}")`);
      return;
    }
    // Legacy: /run takes one `cmd` parameter split on spaces.
    const cmd = (query.get('cmd') ?? '').split(' ');
    try {
      const r = await host.runtime.execSync(id, cmd, 0, { signal, timeoutMs: 10 * 60_000 });
      const out = Buffer.concat([r.stdout, r.stderr]);
      if (r.exitCode !== 0) {
        sendText(
          res,
          500,
          `command '${cmd.join(' ')}' exited with ${r.exitCode}: ${out.toString('utf8')}`,
          POD_OUTPUT_HEADERS,
        );
        return;
      }
      writeHead(res, 200, {
        ...POD_OUTPUT_HEADERS,
        'content-type': 'application/json',
        'content-length': out.length,
      });
      res.end(out);
    } catch (err) {
      sendText(res, 500, describeError(err));
    }
  }

  async function streamURL(
    req: IncomingMessage,
    route: Extract<Route, { kind: 'exec' | 'attach' | 'portForward' }>,
    query: URLSearchParams,
    signal: AbortSignal,
  ): Promise<{ ok: true; url: string } | { ok: false; status: number; message: string }> {
    const fail = (status: number, message: string) => ({ ok: false as const, status, message });
    let flags: StreamFlags | undefined;
    let ports: number[] = [];
    if (route.kind === 'portForward') {
      const p = forwardPorts(req, query);
      if (!p.ok) return fail(400, p.message);
      ports = p.ports;
    } else {
      const o = streamOptions(query);
      if (!o.ok) return fail(400, o.message);
      flags = o.flags;
    }
    const found = host.getPod(route.namespace, route.pod);
    if (!found) return fail(404, 'pod does not exist');
    const pod = found.pod;
    // A static pod is addressed by its mirror pod's UID from the API: only API pods are checked.
    if (route.uid && route.uid !== pod.metadata.uid && !isStaticPod(pod)) return fail(404, 'pod not found');
    try {
      if (route.kind === 'portForward') {
        const sandbox = await host.findReadySandbox(pod, signal);
        if (!sandbox) return fail(404, `pod not found ("${podFullName(pod)}")`);
        return { ok: true, url: await host.runtime.portForward(sandbox, ports, { signal }) };
      }
      const { container } = route;
      const id = await host.findRunningContainer(pod, container, signal);
      if (!id || !flags) return fail(404, `container not found ("${container}")`);
      if (route.kind === 'exec') {
        return { ok: true, url: await host.runtime.exec(id, query.getAll('command'), flags, { signal }) };
      }
      // Attach's tty must match the container's own setting.
      const spec = [...pod.spec.containers, ...(pod.spec.initContainers ?? [])].find(
        (c) => c.name === container,
      );
      return {
        ok: true,
        url: await host.runtime.attach(id, { ...flags, tty: spec?.tty === true }, { signal }),
      };
    } catch (err) {
      return fail(runtimeErrorStatus(err), describeError(err));
    }
  }

  async function upgrade(
    req: IncomingMessage,
    socket: Duplex,
    head: Buffer,
    route: Route,
    url: URL,
  ): Promise<void> {
    const refused = crossSiteRefusal(req, url, true);
    if (refused !== undefined) {
      rejectUpgrade(socket, 403, refused);
      return;
    }
    if (route.kind !== 'exec' && route.kind !== 'attach' && route.kind !== 'portForward') {
      rejectUpgrade(socket, route.kind === 'not-found' ? 404 : 400, 'this endpoint does not upgrade');
      return;
    }
    if (!opts.enableDebuggingHandlers) {
      rejectUpgrade(socket, 405, 'Debug endpoints are disabled.');
      return;
    }
    if (req.method !== 'GET' && req.method !== 'POST') {
      rejectUpgrade(socket, 405, `method ${req.method ?? ''} is not allowed`);
      return;
    }
    const ac = new AbortController();
    const onClose = () => ac.abort(new Error('client went away'));
    socket.once('close', onClose);
    const target = await streamURL(req, route, url.searchParams, ac.signal);
    socket.off('close', onClose);
    if (!target.ok) {
      logger.debug('stream refused', {
        kind: route.kind,
        pod: `${route.namespace}/${route.pod}`,
        query: url.search,
        status: target.status,
        reason: target.message,
      });
      rejectUpgrade(socket, target.status, target.message);
      return;
    }
    let runtimeURL: URL;
    try {
      runtimeURL = new URL(target.url);
    } catch {
      rejectUpgrade(
        socket,
        500,
        `the runtime returned an invalid streaming URL ${JSON.stringify(target.url)}`,
      );
      return;
    }
    activeStreams++;
    logger.debug('streaming', { kind: route.kind, pod: `${route.namespace}/${route.pod}` });
    proxyUpgrade(req, socket, head, runtimeURL, {
      idleTimeoutMs: opts.streamingIdleTimeoutMs,
      logger,
      onClose: () => {
        activeStreams--;
      },
    });
  }

  return {
    request,
    upgrade,
    get activeStreams() {
      return activeStreams;
    },
  };
}
