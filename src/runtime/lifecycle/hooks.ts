/**
 * Container lifecycle hooks (upstream pkg/kubelet/lifecycle handlerRunner): runs one postStart or
 * preStop handler — exec (CRI ExecSync), httpGet (to the pod IP unless a host is given) or sleep —
 * and reports the outcome with upstream's failure message. The runner never kills, never records
 * FailedPostStartHook/FailedPreStopHook and never decides budgets: the runtime manager does.
 */
import type { IncomingMessage } from 'node:http';
import { request as httpRequest } from '../../util/node-http.ts';
import { request as httpsRequest } from 'node:https';
import { isIPv6 } from 'node:net';
import type {
  Container,
  ContainerPort,
  HTTPGetAction,
  KubeletPod,
  LifecycleHandler,
  Pod,
} from '../../api/types.ts';
import type { EventRecorder } from '../../api/events.ts';
import type { ExecSyncResult } from '../cri/index.ts';
import { abortReason, combineSignals, sleep as abortableSleep } from '../../util/abort.ts';
import { describeError } from '../../util/errors.ts';
import { nullLogger, type Logger } from '../../util/logger.ts';
import {
  ANNOTATION_CONTAINER_PORTS,
  ANNOTATION_CONTAINER_PRESTOP_HANDLER,
  KUBERNETES_API_VERSION,
  LIFECYCLE_HTTP_MAX_REDIRECTS,
  LIFECYCLE_HTTP_MAX_RESPONSE_BYTES,
  MIN_GRACE_PERIOD_SECONDS,
  POST_START_HOOK_MIN_TIMEOUT_SECONDS,
} from '../../config/defaults.ts';

/** What a hook runs against. For orphans `pod`/`container` are stubs restored from CRI annotations. */
export interface HookTarget {
  pod: KubeletPod;
  /** Needs `name`, and `ports` to resolve a named httpGet port. */
  container: Container;
  containerId: string;
}

export interface HookRunOptions {
  /**
   * Budget for exec (the ExecSync timeout) and httpGet (the whole request, redirects included).
   * A sleep handler is bounded by its own seconds and by `signal` only.
   */
  timeoutSeconds: number;
  /** The pod IP for an httpGet without `host`; asked only when needed. '' or undefined: none. */
  podIP: () => Promise<string | undefined>;
  /** Aborts whatever the handler is doing; the outcome then reports the abort as a failure. */
  signal?: AbortSignal;
}

export type HookOutcome = { ok: true } | { ok: false; message: string };

export interface HookRunner {
  /** Runs one handler. Never throws: every failure (an abort included) is an outcome. */
  run(handler: LifecycleHandler, target: HookTarget, opts: HookRunOptions): Promise<HookOutcome>;
}

export interface HookHttpRequest {
  url: URL;
  /** Header name (as written in the spec) → values. */
  headers: Record<string, string[]>;
}

export interface HookHttpResponse {
  status: number;
  /** The Location header, if any. */
  location: string | undefined;
}

/** One GET without following redirects; rejects on transport errors (any status is a response). */
export type HookHttpTransport = (req: HookHttpRequest, signal: AbortSignal) => Promise<HookHttpResponse>;

export interface HookRunnerDeps {
  /** CRI ExecSync (the runtime service's `execSync`). */
  exec(
    containerId: string,
    cmd: string[],
    timeoutSeconds: number,
    opts?: { signal?: AbortSignal },
  ): Promise<ExecSyncResult>;
  /** For the LifecycleHTTPFallback event. */
  recorder?: EventRecorder;
  logger?: Logger;
  /** Default: node:http / node:https, TLS certificates not verified (as upstream). */
  http?: HookHttpTransport;
  /** Default: a timer. Tests pass a fake clock. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

const USER_AGENT = (() => {
  const m = /^v?(\d+)\.(\d+)/.exec(KUBERNETES_API_VERSION);
  return `kube-lifecycle/${m?.[1] ?? '1'}.${m?.[2] ?? '0'}`;
})();

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);

/** Upstream format.Pod: `name_namespace(uid)`. */
export function formatPod(pod: KubeletPod): string {
  return `${pod.metadata.name}_${pod.metadata.namespace}(${pod.metadata.uid})`;
}

/** Go's `%v` of a []string: `[a b c]`. */
function goSlice(xs: string[]): string {
  return `[${xs.join(' ')}]`;
}

/**
 * Upstream probe.ResolveContainerPort: a number is taken as is; a string is a number or the name of one
 * of the container's ports.
 */
export function resolvePort(port: number | string, container: Container): number {
  let n: number | undefined;
  if (typeof port === 'number') n = port;
  else if (/^\d+$/.test(port)) n = Number.parseInt(port, 10);
  else n = container.ports?.find((p) => p.name === port)?.containerPort;
  if (n === undefined) throw new Error(`couldn't find port: ${port} in container ${container.name}`);
  if (!Number.isInteger(n) || n <= 0 || n >= 65536) throw new Error(`invalid port number: ${n}`);
  return n;
}

/** Upstream NewRequestForHTTPGetAction (URL and headers), for the lifecycle user agent. */
export function buildHttpGetRequest(
  action: HTTPGetAction,
  container: Container,
  podIP: string,
): HookHttpRequest {
  const scheme = (action.scheme ?? 'HTTP').toLowerCase();
  if (scheme !== 'http' && scheme !== 'https') throw new Error(`unsupported scheme ${action.scheme}`);
  const host = action.host !== undefined && action.host !== '' ? action.host : podIP;
  const port = resolvePort(action.port, container);
  const hostPort = isIPv6(host) ? `[${host}]:${port}` : `${host}:${port}`;
  let path = action.path ?? '';
  if (path !== '' && !path.startsWith('/')) path = `/${path}`;
  const url = new URL(`${scheme}://${hostPort}${path}`);
  const headers: Record<string, string[]> = {};
  const canonical = new Map<string, string>();
  for (const h of action.httpHeaders ?? []) {
    const lower = h.name.toLowerCase();
    const name = canonical.get(lower) ?? h.name;
    canonical.set(lower, name);
    (headers[name] ??= []).push(h.value);
  }
  if (!canonical.has('user-agent')) headers['User-Agent'] = [USER_AGENT];
  const accept = canonical.get('accept');
  if (accept === undefined) headers.Accept = ['*/*'];
  else if ((headers[accept] ?? []).every((v) => v === '')) delete headers[accept];
  return { url, headers };
}

/** The default transport: one GET, body drained up to the upstream limit, certificates not verified. */
export const nodeHttpTransport: HookHttpTransport = (req, signal) =>
  new Promise((resolve, reject) => {
    const headers: Record<string, string | string[]> = {};
    for (const [k, v] of Object.entries(req.headers)) headers[k] = v.length === 1 ? (v[0] ?? '') : v;
    const onResponse = (res: IncomingMessage) => {
      let seen = 0;
      const done = () =>
        resolve({
          status: res.statusCode ?? 0,
          location: typeof res.headers.location === 'string' ? res.headers.location : undefined,
        });
      res.on('data', (chunk: Buffer) => {
        seen += chunk.length;
        // Enough read: the status is all that matters, the rest of the body is not worth waiting for.
        if (seen > LIFECYCLE_HTTP_MAX_RESPONSE_BYTES) {
          res.destroy();
          done();
        }
      });
      res.on('end', done);
      res.on('error', (err) => (seen > LIFECYCLE_HTTP_MAX_RESPONSE_BYTES ? done() : reject(err)));
    };
    const opts = { method: 'GET', headers, signal, agent: false as const };
    const r =
      req.url.protocol === 'https:'
        ? httpsRequest(req.url, { ...opts, rejectUnauthorized: false }, onResponse)
        : httpRequest(req.url, opts, onResponse);
    r.on('error', reject);
    r.end();
  });

/** Upstream isHTTPResponseError: an HTTPS request answered by a plain-HTTP server. */
function isPlainHttpAnswer(err: unknown): boolean {
  const code = (err as { code?: unknown } | undefined)?.code;
  if (code === 'ERR_SSL_WRONG_VERSION_NUMBER' || code === 'ERR_SSL_PACKET_LENGTH_TOO_LONG') return true;
  return /wrong version number|packet length too long/i.test(describeError(err));
}

export function createHookRunner(deps: HookRunnerDeps): HookRunner {
  const log = deps.logger ?? nullLogger;
  const transport = deps.http ?? nodeHttpTransport;
  const sleep = deps.sleep ?? abortableSleep;

  /** GET with upstream's redirect policy: same host only (else the redirect is the answer), at most 10. */
  async function getFollowingLocalRedirects(req: HookHttpRequest, signal: AbortSignal): Promise<void> {
    let url = req.url;
    for (let hops = 0; ; hops++) {
      let res: HookHttpResponse;
      try {
        res = await transport({ url, headers: req.headers }, signal);
      } catch (err) {
        throw new Error(`Get "${url.href}": ${describeError(err)}`, { cause: err });
      }
      if (!REDIRECT_STATUSES.has(res.status) || res.location === undefined) return;
      const next = new URL(res.location, url);
      if (next.hostname !== req.url.hostname) return;
      if (hops + 1 >= LIFECYCLE_HTTP_MAX_REDIRECTS) {
        throw new Error(`Get "${next.href}": stopped after ${LIFECYCLE_HTTP_MAX_REDIRECTS} redirects`);
      }
      url = next;
    }
  }

  async function runHttp(
    action: HTTPGetAction,
    target: HookTarget,
    opts: HookRunOptions,
    signal: AbortSignal,
  ): Promise<void> {
    let podIP = '';
    if (action.host === undefined || action.host === '') {
      podIP = (await opts.podIP()) ?? '';
      if (podIP === '') throw new Error('failed to find networking container: the pod has no IP');
    }
    const req = buildHttpGetRequest(action, target.container, podIP);
    try {
      await getFollowingLocalRedirects(req, signal);
    } catch (err) {
      if (req.url.protocol !== 'https:' || !(err instanceof Error) || !isPlainHttpAnswer(err.cause))
        throw err;
      // Upstream: an HTTPS hook answered in plain HTTP is retried over HTTP, without credentials.
      log.debug('HTTPS lifecycle hook got an HTTP response, retrying with HTTP', { host: req.url.host });
      const url = new URL(req.url.href);
      url.protocol = 'http:';
      const headers = Object.fromEntries(
        Object.entries(req.headers).filter(([k]) => k.toLowerCase() !== 'authorization'),
      );
      await getFollowingLocalRedirects({ url, headers }, signal).catch(() => {
        throw err;
      });
      deps.recorder?.event(
        target.pod,
        'Warning',
        'LifecycleHTTPFallback',
        `request to HTTPS lifecycle hook ${req.url.host} got HTTP response, retry with HTTP succeeded`,
      );
    }
  }

  async function runExec(
    command: string[],
    target: HookTarget,
    opts: HookRunOptions,
    signal: AbortSignal,
  ): Promise<{ output: string; error: string } | undefined> {
    if (command.length === 0) return { output: '', error: 'exec handler has no command' };
    const timeout = Math.max(1, Math.ceil(opts.timeoutSeconds));
    let r: ExecSyncResult;
    try {
      r = await deps.exec(target.containerId, command, timeout, { signal });
    } catch (err) {
      if (signal.aborted) throw abortReason(signal);
      return { output: '', error: describeError(err) };
    }
    if (r.exitCode === 0) return undefined;
    const stderr = r.stderr.toString('utf8');
    return {
      output: r.stdout.toString('utf8') + stderr,
      error: `command '${command.join(' ')}' exited with ${r.exitCode}: ${stderr}`,
    };
  }

  return {
    async run(handler, target, opts) {
      const who = `for Container ${JSON.stringify(target.container.name)} in Pod ${JSON.stringify(formatPod(target.pod))}`;
      const deadline = combineSignals([opts.signal], Math.max(0, opts.timeoutSeconds) * 1000);
      const timedOut = (err: unknown) =>
        deadline.aborted && !opts.signal?.aborted
          ? `timed out after ${opts.timeoutSeconds}s`
          : describeError(err);
      if (handler.exec) {
        const command = handler.exec.command ?? [];
        try {
          const failed = await runExec(command, target, opts, deadline);
          if (!failed) return { ok: true };
          return {
            ok: false,
            message: `Exec lifecycle hook (${goSlice(command)}) ${who} failed - error: ${failed.error}, message: ${JSON.stringify(failed.output)}`,
          };
        } catch (err) {
          return {
            ok: false,
            message: `Exec lifecycle hook (${goSlice(command)}) ${who} failed - error: ${timedOut(err)}, message: ""`,
          };
        }
      }
      if (handler.httpGet) {
        try {
          await runHttp(handler.httpGet, target, opts, deadline);
          return { ok: true };
        } catch (err) {
          const reason = deadline.aborted ? timedOut(err) : describeError(err);
          return {
            ok: false,
            message: `HTTP lifecycle hook (${handler.httpGet.path ?? ''}) ${who} failed - error: ${reason}`,
          };
        }
      }
      if (handler.sleep) {
        const seconds = handler.sleep.seconds;
        try {
          if (seconds > 0) await sleep(seconds * 1000, opts.signal);
          return { ok: true };
        } catch {
          // The only way a sleep fails: it was cut short (the container is going away).
          return {
            ok: false,
            message: `Sleep lifecycle hook (${seconds}) ${who} failed - error: container terminated before sleep hook finished`,
          };
        }
      }
      // tcpSocket is kept in the API for compatibility only; upstream fails such a hook at runtime.
      const what = handler.tcpSocket ? 'tcpSocket is not supported as a lifecycle handler' : 'no action set';
      log.warn('cannot run lifecycle handler', {
        pod: `${target.pod.metadata.namespace}/${target.pod.metadata.name}`,
        podUID: target.pod.metadata.uid,
        container: target.container.name,
        reason: what,
      });
      return { ok: false, message: `Cannot run handler: invalid handler: ${what}` };
    },
  };
}

/**
 * The budget for a postStart exec/httpGet hook (tskubelet's choice; upstream has none): the pod's
 * termination grace period, but never less than POST_START_HOOK_MIN_TIMEOUT_SECONDS.
 */
export function postStartTimeoutSeconds(pod: Pod): number {
  return Math.max(POST_START_HOOK_MIN_TIMEOUT_SECONDS, pod.spec.terminationGracePeriodSeconds ?? 0);
}

/**
 * Upstream killContainer: the time a preStop hook took (whole seconds, truncated) comes off the grace
 * period given to StopContainer, which still gets at least the minimum grace period.
 */
export function graceAfterPreStop(gracePeriodSeconds: number, hookElapsedMs: number): number {
  const left = gracePeriodSeconds - Math.floor(Math.max(0, hookElapsedMs) / 1000);
  return Math.max(MIN_GRACE_PERIOD_SECONDS, left);
}

/** Enough of a shape check that running the handler cannot trip over a hand-edited annotation. */
function isLifecycleHandler(v: unknown): v is LifecycleHandler {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return false;
  const h = v as Record<string, unknown>;
  const obj = (x: unknown) => x === undefined || (x !== null && typeof x === 'object');
  if (!obj(h.exec) || !obj(h.httpGet) || !obj(h.sleep) || !obj(h.tcpSocket)) return false;
  const command = (h.exec as { command?: unknown } | undefined)?.command;
  if (command !== undefined && !(Array.isArray(command) && command.every((c) => typeof c === 'string'))) {
    return false;
  }
  const seconds = (h.sleep as { seconds?: unknown } | undefined)?.seconds;
  if (h.sleep !== undefined && typeof seconds !== 'number') return false;
  const port = (h.httpGet as { port?: unknown } | undefined)?.port;
  return h.httpGet === undefined || typeof port === 'number' || typeof port === 'string';
}

/**
 * Upstream restoreSpecsFromContainerLabels, the hook part: the preStop handler and ports a container
 * was created with, from its CRI annotations. Malformed annotations are reported, not guessed at.
 */
export function restoreHookSpec(
  name: string,
  annotations: Record<string, string>,
): { container: Container; problems: string[] } {
  const container: Container = { name };
  const problems: string[] = [];
  const preStop = annotations[ANNOTATION_CONTAINER_PRESTOP_HANDLER];
  if (preStop !== undefined) {
    try {
      const parsed: unknown = JSON.parse(preStop);
      if (isLifecycleHandler(parsed)) container.lifecycle = { preStop: parsed };
      else problems.push(`${ANNOTATION_CONTAINER_PRESTOP_HANDLER} is not a lifecycle handler`);
    } catch (err) {
      problems.push(`${ANNOTATION_CONTAINER_PRESTOP_HANDLER}: ${describeError(err)}`);
    }
  }
  const ports = annotations[ANNOTATION_CONTAINER_PORTS];
  if (ports !== undefined) {
    try {
      const parsed: unknown = JSON.parse(ports);
      if (Array.isArray(parsed)) container.ports = parsed as ContainerPort[];
      else problems.push(`${ANNOTATION_CONTAINER_PORTS} is not a list`);
    } catch (err) {
      problems.push(`${ANNOTATION_CONTAINER_PORTS}: ${describeError(err)}`);
    }
  }
  return { container, problems };
}
