/**
 * The kubelet API's paths (upstream pkg/kubelet/server InstallDefaultHandlers /
 * InstallDebuggingHandlers) parsed into one typed route. Path segments are percent-decoded; a
 * segment that decodes to something containing `/` or NUL, or that is `.`/`..`, makes the path
 * unmatched (404), so no handler ever sees such a name.
 */
export type Route =
  | { kind: 'healthz' }
  | { kind: 'pods' }
  | { kind: 'runningpods' }
  | { kind: 'configz' }
  | { kind: 'spec' }
  | { kind: 'metrics'; which: 'main' | 'probes' | 'resource' | 'cadvisor' }
  | { kind: 'stats-summary' }
  | { kind: 'containerLogs'; namespace: string; pod: string; container: string }
  | ContainerRoute<'exec'>
  | ContainerRoute<'attach'>
  | ContainerRoute<'run'>
  | { kind: 'portForward'; namespace: string; pod: string; uid?: string }
  | { kind: 'logs'; subpath: string }
  | { kind: 'pprof' }
  // The node console (src/console): its page's files, and its live feed.
  | { kind: 'console'; file: string }
  | { kind: 'consoleEvents' }
  | { kind: 'debugPodWhy'; namespace: string; pod: string }
  /** tskubelet: a pod's startup timeline (PodTimeline), `/debug/pods/{namespace}/{name}/timeline`. */
  | { kind: 'debugPodTimeline'; namespace: string; name: string }
  | { kind: 'not-found' };

/** A route to one container of a pod, optionally naming the pod's UID. */
export interface ContainerRoute<K extends 'exec' | 'attach' | 'run'> {
  kind: K;
  namespace: string;
  pod: string;
  uid?: string;
  container: string;
}

/**
 * Routes that need enableDebuggingHandlers: off, they answer 405 `Debug endpoints are disabled.`
 * Upstream's InstallDebuggingDisabledHandlers paths (run, exec, attach, portForward, containerLogs,
 * runningpods, pprof, logs), and tskubelet's own routes that show what runs in the pods: the
 * console and its feed (container logs, events with hook output), `why` (containers' last log
 * lines) and the timeline (a failed hook's output in its `failed` steps).
 */
export const DEBUGGING_ROUTES: ReadonlySet<Route['kind']> = new Set([
  'containerLogs',
  'exec',
  'attach',
  'run',
  'portForward',
  'runningpods',
  'logs',
  'pprof',
  'console',
  'consoleEvents',
  'debugPodWhy',
  'debugPodTimeline',
]);

/** Upstream's answer on a debugging route while those are off (InstallDebuggingDisabledHandlers). */
export const DEBUG_ENDPOINTS_DISABLED = 'Debug endpoints are disabled.';

/**
 * Routes the plain-HTTP read-only port serves: upstream's ListenAndServeKubeletReadOnlyServer is
 * NewServer without auth and without debugging handlers, so its default handlers only (healthz,
 * pods, stats, metrics, spec). `/configz` is a debugging handler upstream (404 there).
 */
export const READ_ONLY_ROUTES: ReadonlySet<Route['kind']> = new Set([
  'healthz',
  'pods',
  'spec',
  'metrics',
  'stats-summary',
]);

/**
 * What the read-only port does with a route: serve it, answer as upstream's disabled debugging
 * handlers do (405), or not know it (404).
 */
export function readOnlyDisposition(kind: Route['kind']): 'serve' | 'debugging-disabled' | 'not-found' {
  if (READ_ONLY_ROUTES.has(kind)) return 'serve';
  return DEBUGGING_ROUTES.has(kind) ? 'debugging-disabled' : 'not-found';
}

/** Streaming routes: served through an HTTP upgrade proxied to the runtime's streaming server. */
export const STREAMING_ROUTES: ReadonlySet<Route['kind']> = new Set(['exec', 'attach', 'portForward']);

const MAX_PATH_LENGTH = 4096;

function segments(pathname: string): string[] | undefined {
  if (pathname.length > MAX_PATH_LENGTH) return undefined;
  const parts = pathname.split('/').slice(1);
  const out: string[] = [];
  for (const raw of parts) {
    let s: string;
    try {
      s = decodeURIComponent(raw);
    } catch {
      // Malformed percent-encoding: no route matches.
      return undefined;
    }
    if (s.includes('/') || s.includes('\0') || s === '.' || s === '..') return undefined;
    out.push(s);
  }
  return out;
}

/** Matches a request path (without the query) to a route. */
export function matchRoute(pathname: string): Route {
  const parts = segments(pathname);
  if (!parts || parts.length === 0) return { kind: 'not-found' };
  // A trailing slash is optional everywhere (`/pods` and `/pods/`, `/runningpods/`).
  const p = parts.at(-1) === '' ? parts.slice(0, -1) : parts;
  const [head, ...rest] = p;
  switch (head) {
    case 'healthz':
      return rest.length === 0 ? { kind: 'healthz' } : { kind: 'not-found' };
    case 'pods':
      return rest.length === 0 ? { kind: 'pods' } : { kind: 'not-found' };
    case 'runningpods':
      return rest.length === 0 ? { kind: 'runningpods' } : { kind: 'not-found' };
    case 'configz':
      return rest.length === 0 ? { kind: 'configz' } : { kind: 'not-found' };
    case 'spec':
      return rest.length === 0 ? { kind: 'spec' } : { kind: 'not-found' };
    case 'metrics': {
      if (rest.length === 0) return { kind: 'metrics', which: 'main' };
      const which = rest[0];
      if (rest.length === 1 && (which === 'probes' || which === 'resource' || which === 'cadvisor')) {
        return { kind: 'metrics', which };
      }
      return { kind: 'not-found' };
    }
    case 'stats':
      return rest.length === 1 && rest[0] === 'summary' ? { kind: 'stats-summary' } : { kind: 'not-found' };
    case 'containerLogs': {
      const [namespace, pod, container] = rest;
      if (rest.length !== 3 || !namespace || !pod || !container) return { kind: 'not-found' };
      return { kind: 'containerLogs', namespace, pod, container };
    }
    case 'exec':
    case 'attach':
    case 'run':
      return containerRoute(head, rest) ?? { kind: 'not-found' };
    case 'portForward': {
      const [namespace, pod, uid] = rest;
      if (rest.length === 2 && namespace && pod) return { kind: 'portForward', namespace, pod };
      if (rest.length === 3 && namespace && pod && uid) return { kind: 'portForward', namespace, pod, uid };
      return { kind: 'not-found' };
    }
    case 'logs':
      return { kind: 'logs', subpath: rest.join('/') };
    case 'console':
      return rest.length <= 1 ? { kind: 'console', file: rest[0] ?? '' } : { kind: 'not-found' };
    case 'debug': {
      if (rest[0] === 'pprof') return { kind: 'pprof' };
      if (rest.length === 2 && rest[0] === 'console' && rest[1] === 'events')
        return { kind: 'consoleEvents' };
      const [pods, namespace, name, what] = rest;
      if (rest.length === 4 && pods === 'pods' && namespace && name) {
        if (what === 'timeline') return { kind: 'debugPodTimeline', namespace, name };
        if (what === 'why') return { kind: 'debugPodWhy', namespace, pod: name };
      }
      return { kind: 'not-found' };
    }
    default:
      return { kind: 'not-found' };
  }
}

function containerRoute<K extends 'exec' | 'attach' | 'run'>(
  kind: K,
  rest: string[],
): ContainerRoute<K> | undefined {
  if (rest.length === 3) {
    const [namespace, pod, container] = rest;
    if (namespace && pod && container) return { kind, namespace, pod, container };
  } else if (rest.length === 4) {
    const [namespace, pod, uid, container] = rest;
    if (namespace && pod && uid && container) return { kind, namespace, pod, uid, container };
  }
  return undefined;
}
