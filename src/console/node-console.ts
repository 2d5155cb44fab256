/**
 * The node console's server side: the page's files at `/console/`, and its live feed at
 * `/debug/console/events` (server-sent events: a snapshot, then changes). The feed costs nothing
 * while nobody looks: the pod and node polls and the event subscription run only while at least
 * one stream is open.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { KubeletPod, PodStatus } from '../api/types.ts';
import { describeError } from '../util/errors.ts';
import type { Logger } from '../util/logger.ts';
import type { EventRing } from './event-ring.ts';
import { consolePod, type ConsoleNode, type ConsolePod, type NodeUsage } from './model.ts';
import { createSseHub, type SseMessage } from './sse-hub.ts';
import { readStatic, SECURITY_HEADERS, STATIC_DIR } from './static-files.ts';

/** What the console reads from the kubelet. */
export interface ConsoleSource {
  /** The pods bound to this kubelet with their computed status (the kubelet API's `/pods`). */
  pods(): readonly { pod: KubeletPod; status: PodStatus | undefined }[];
  /** The node without usage: conditions, capacity, allocatable, info. */
  node(): Omit<ConsoleNode, 'usage'>;
  /** Node usage from the kubelet's Summary API; undefined when stats are unavailable. */
  usage(signal: AbortSignal): Promise<NodeUsage | undefined>;
}

export interface ConsoleLimits {
  /** Console streams open at once (default 16). */
  maxStreams: number;
  /** Console streams one user may hold at once (default 4): nobody takes every slot. */
  maxStreamsPerUser: number;
  /** Unsent bytes after which a stream client is dropped (default 1 MiB). */
  maxBufferedBytes: number;
  /** Default 15 s. */
  heartbeatMs: number;
  /** How often pods are compared with what was sent (default 1 s). */
  podPollMs: number;
  /** How often the node and its usage are read (default 5 s). */
  nodePollMs: number;
}

export const DEFAULT_CONSOLE_LIMITS: Readonly<ConsoleLimits> = {
  maxStreams: 16,
  maxStreamsPerUser: 4,
  maxBufferedBytes: 1024 * 1024,
  heartbeatMs: 15_000,
  podPollMs: 1_000,
  nodePollMs: 5_000,
};

/** The console's two routes, as `src/server/routes.ts` parses them. */
export type ConsoleRoute = { kind: 'console'; file: string } | { kind: 'consoleEvents' };

export interface NodeConsole {
  serve(req: IncomingMessage, res: ServerResponse, route: ConsoleRoute, url: URL): Promise<void>;
  readonly streams: number;
  /** Ends every stream and stops the polls; later streams are refused. */
  close(): void;
}

export interface NodeConsoleOptions {
  source: ConsoleSource;
  events: EventRing;
  logger: Logger;
  limits?: Partial<ConsoleLimits>;
  staticDir?: string;
  /**
   * Who made a request (the authenticated user's name, from the listener that admitted it), for the
   * per-user stream limit; undefined or absent: every unknown requester counts as one user.
   */
  userOf?: (req: IncomingMessage) => string | undefined;
}

const USAGE_TIMEOUT_MS = 10_000;

function sendPlain(
  res: ServerResponse,
  status: number,
  body: string,
  headers: Record<string, string> = {},
): void {
  res.writeHead(status, {
    ...SECURITY_HEADERS,
    'content-type': 'text/plain; charset=utf-8',
    'cache-control': 'no-store',
    ...headers,
  });
  res.end(body.endsWith('\n') ? body : `${body}\n`);
}

export function createNodeConsole(opts: NodeConsoleOptions): NodeConsole {
  const limits: ConsoleLimits = { ...DEFAULT_CONSOLE_LIMITS, ...opts.limits };
  const log = opts.logger.child({ component: 'console' });
  /** What was last sent per pod UID (JSON), while streams are open. */
  let sent = new Map<string, string>();
  let lastNode = '';
  let usage: NodeUsage | undefined;
  let podTimer: NodeJS.Timeout | undefined;
  let nodeTimer: NodeJS.Timeout | undefined;
  let unsubscribe: (() => void) | undefined;
  let usageInFlight = false;
  const stop = new AbortController();

  const hub = createSseHub({
    maxClients: limits.maxStreams,
    maxClientsPerUser: limits.maxStreamsPerUser,
    maxBufferedBytes: limits.maxBufferedBytes,
    heartbeatMs: limits.heartbeatMs,
    logger: log,
    onActive: () => {
      podTimer = setInterval(pollPods, limits.podPollMs);
      nodeTimer = setInterval(pollNode, limits.nodePollMs);
      podTimer.unref();
      nodeTimer.unref();
      unsubscribe = opts.events.subscribe((event) => hub.broadcast({ event: 'k8s-event', data: event }));
      log.debug('console streams active');
    },
    onIdle: () => {
      clearInterval(podTimer);
      clearInterval(nodeTimer);
      unsubscribe?.();
      unsubscribe = undefined;
      sent = new Map();
      lastNode = '';
      log.debug('console streams idle');
    },
  });

  function currentPods(): ConsolePod[] {
    return opts.source.pods().map(({ pod, status }) => consolePod(pod, status));
  }

  function currentNode(): ConsoleNode {
    return { ...opts.source.node(), ...(usage ? { usage } : {}) };
  }

  function pollPods(): void {
    try {
      const seen = new Set<string>();
      for (const p of currentPods()) {
        seen.add(p.uid);
        const json = JSON.stringify(p);
        if (sent.get(p.uid) === json) continue;
        sent.set(p.uid, json);
        hub.broadcast({ event: 'pod', data: p });
      }
      for (const uid of [...sent.keys()]) {
        if (seen.has(uid)) continue;
        sent.delete(uid);
        hub.broadcast({ event: 'pod-removed', data: { uid } });
      }
    } catch (err) {
      log.error('console: reading the pods failed', { err: describeError(err) });
    }
  }

  function sendNodeIfChanged(): void {
    const node = currentNode();
    const json = JSON.stringify(node);
    if (json === lastNode) return;
    lastNode = json;
    hub.broadcast({ event: 'node', data: node });
  }

  function pollNode(): void {
    try {
      sendNodeIfChanged();
    } catch (err) {
      log.error('console: reading the node failed', { err: describeError(err) });
    }
    if (usageInFlight) return;
    usageInFlight = true;
    opts.source
      .usage(AbortSignal.any([stop.signal, AbortSignal.timeout(USAGE_TIMEOUT_MS)]))
      .then((u) => {
        usage = u;
        if (hub.clients > 0) sendNodeIfChanged();
      })
      .catch((err: unknown) => {
        if (!stop.signal.aborted) log.debug('console: node usage unavailable', { err: describeError(err) });
      })
      .finally(() => {
        usageInFlight = false;
      });
  }

  function openStream(req: IncomingMessage, res: ServerResponse): void {
    const pods = currentPods();
    const node = currentNode();
    const initial: SseMessage[] = [{ event: 'snapshot', data: { node, pods, events: opts.events.list() } }];
    const wasIdle = hub.clients === 0;
    const opened = hub.open(req, withSecurityHeaders(res), initial, opts.userOf?.(req) ?? '');
    if (!opened.ok) {
      sendPlain(res, opened.status, opened.reason, { 'retry-after': '5' });
      return;
    }
    if (wasIdle) {
      // The first stream's snapshot is the baseline the polls compare with.
      sent = new Map(pods.map((p) => [p.uid, JSON.stringify(p)]));
      lastNode = JSON.stringify(node);
      pollNode();
    }
  }

  return {
    async serve(req, res, route, url) {
      const method = req.method ?? 'GET';
      if (method !== 'GET' && method !== 'HEAD') {
        sendPlain(res, 405, `method ${method} is not allowed: the console is read-only`, {
          allow: 'GET, HEAD',
        });
        return;
      }
      if (route.kind === 'consoleEvents') {
        if (method === 'HEAD') {
          sendPlain(res, 200, '');
          return;
        }
        openStream(req, res);
        return;
      }
      // Relative links in the page need the trailing slash (also behind the API server's proxy).
      if (route.file === '' && !url.pathname.endsWith('/')) {
        sendPlain(res, 301, 'console/', { location: 'console/' });
        return;
      }
      const file = await readStatic(route.file, opts.staticDir ?? STATIC_DIR);
      if (file.status !== 200) {
        if (file.status === 500) log.error('console: cannot serve a page file', { err: file.body });
        sendPlain(res, file.status, file.body);
        return;
      }
      res.writeHead(200, {
        ...SECURITY_HEADERS,
        'content-type': file.type,
        'content-length': String(file.body.length),
        'cache-control': 'no-cache',
      });
      res.end(method === 'HEAD' ? undefined : file.body);
    },
    get streams() {
      return hub.clients;
    },
    close() {
      stop.abort(new Error('console closed'));
      hub.close();
    },
  };
}

/** The response with the console's security headers merged into its stream headers. */
function withSecurityHeaders(res: ServerResponse) {
  return {
    writeHead: (status: number, headers: Record<string, string>) =>
      res.writeHead(status, { ...SECURITY_HEADERS, ...headers }),
    write: (chunk: string) => res.write(chunk),
    end: (chunk?: string) => res.end(chunk),
    destroy: () => res.destroy(),
    get writableLength() {
      return res.writableLength;
    },
    get destroyed() {
      return res.destroyed;
    },
    once: (event: 'close', listener: () => void) => res.once(event, listener),
  };
}
