/**
 * The words of the attacker suite's table (probes.ts): the nodes, identities and listeners a probe
 * names, the kubelet API's routes as sampled, what a probe checks and expects. No upstream
 * counterpart (upstream has no attacker suite); the routes sampled are upstream
 * pkg/kubelet/server/server.go's plus tskubelet's own (console, timeline, why).
 */

/**
 * The live nodes the suite sets up (targets.ts):
 * - `standalone`: static pods, a client CA with AlwaysAllow (the documented standalone setup), the
 *   read-only port and the console listener on, healthz on its own port; its root dir existed
 *   before as 0755 and its pod log dir is configured (`podLogsDir`).
 * - `standalone-hostile`: started with umask 000, `enableDebuggingHandlers: false`, the local
 *   socket in a directory every user can enter (where only the socket's own mode protects it).
 * - `cluster`: a node of the bed's kube-apiserver 1.20.2 with Webhook authentication and
 *   authorization, `--tls-cert-file` on a fresh root dir, pods with a Secret volume.
 */
export type TargetName = 'standalone' | 'standalone-hostile' | 'cluster';
export const TARGETS: readonly TargetName[] = ['standalone', 'standalone-hostile', 'cluster'];

/** Who makes a request. Credentials are handed to the `nobody` user, which makes every request. */
export type Identity =
  /** No credentials. */
  | 'anonymous'
  /** A client certificate from a CA the kubelet does not trust. */
  | 'foreign-cert'
  /** A bearer token the API server does not know. */
  | 'bad-token'
  /** A valid ServiceAccount token without any RBAC on nodes. */
  | 'norbac-token'
  /** A client certificate signed by the cluster CA for a user without any RBAC. */
  | 'norbac-cert'
  /** A ServiceAccount token allowed `get` (only) on nodes/proxy. */
  | 'get-only-token'
  /** A ServiceAccount token allowed every verb on every node subresource. */
  | 'authorized-token'
  /** Allowed everything: the API server's kubelet client cert, or standalone the client CA's user. */
  | 'authorized';

/** The kubelet's listeners. */
export type Listener = 'api' | 'read-only' | 'healthz' | 'console';

/** One route of the kubelet API, sampled with one request (`{ns}`, `{pod}`, `{c}` filled in). */
export interface RouteSample {
  /** `routes.ts` kind (tskubelet's router), upstream's route where it has one. */
  route: string;
  method: 'GET' | 'POST' | 'HEAD';
  path: string;
  /** Sent as a WebSocket handshake (exec, attach, port-forward as clients use them). */
  websocket?: true;
}

/** Every route of the kubelet API (tskubelet's routes.ts), one request each. */
export const ROUTES: readonly RouteSample[] = [
  { route: 'healthz', method: 'GET', path: '/healthz' },
  { route: 'pods', method: 'GET', path: '/pods' },
  { route: 'runningpods', method: 'GET', path: '/runningpods/' },
  { route: 'configz', method: 'GET', path: '/configz' },
  { route: 'spec', method: 'GET', path: '/spec/' },
  { route: 'metrics', method: 'GET', path: '/metrics' },
  { route: 'metrics/probes', method: 'GET', path: '/metrics/probes' },
  { route: 'metrics/resource', method: 'GET', path: '/metrics/resource' },
  { route: 'metrics/cadvisor', method: 'GET', path: '/metrics/cadvisor' },
  { route: 'stats-summary', method: 'GET', path: '/stats/summary' },
  { route: 'containerLogs', method: 'GET', path: '/containerLogs/{ns}/{pod}/{c}' },
  { route: 'exec', method: 'GET', path: '/exec/{ns}/{pod}/{c}?command=true&output=1', websocket: true },
  { route: 'attach', method: 'GET', path: '/attach/{ns}/{pod}/{c}?output=1', websocket: true },
  { route: 'portForward', method: 'GET', path: '/portForward/{ns}/{pod}?port=80', websocket: true },
  { route: 'run', method: 'POST', path: '/run/{ns}/{pod}/{c}?cmd=true' },
  { route: 'logs', method: 'GET', path: '/logs/' },
  { route: 'pprof', method: 'GET', path: '/debug/pprof/' },
  { route: 'console', method: 'GET', path: '/console/' },
  { route: 'consoleEvents', method: 'GET', path: '/debug/console/events' },
  { route: 'debugPodWhy', method: 'GET', path: '/debug/pods/{ns}/{pod}/why' },
  { route: 'debugPodTimeline', method: 'GET', path: '/debug/pods/{ns}/{pod}/timeline' },
];

/** Upstream's read-only port: its default handlers (server.go InstallDefaultHandlers). */
export const READ_ONLY_SET = [
  'healthz',
  'pods',
  'stats-summary',
  'metrics',
  'metrics/probes',
  'metrics/resource',
  'metrics/cadvisor',
] as const;

/** Routes that show pod output or reach into containers: off with `enableDebuggingHandlers: false`. */
export const DEBUGGING_SET = [
  'debugPodWhy',
  'debugPodTimeline',
  'console',
  'consoleEvents',
  'exec',
  'attach',
  'portForward',
  'run',
  'containerLogs',
  'runningpods',
  'logs',
] as const;

/** What every answer of a probe must be. */
export type Expect =
  /** Its status is one of these. */
  | { status: readonly number[] }
  /** Its status is not one of these (e.g. a control: "not refused"). */
  | { statusNot: readonly number[] }
  /** It carries this header, its value matching the pattern (case-insensitive). */
  | { header: string; pattern: string }
  /** Nothing listens: the connection is refused. */
  | { unreachable: true };

/** The request of an HTTP probe: which routes of which listener, as whom, with what. */
export interface HttpCheck {
  kind: 'http';
  listener: Listener;
  who?: Identity;
  /** Route kinds to sample (ROUTES); absent: every route. */
  routes?: readonly string[];
  /** Route kinds left out of "every route". */
  except?: readonly string[];
  /** Overrides the sample's method (and drops its WebSocket handshake unless `websocket`). */
  method?: 'GET' | 'POST' | 'HEAD';
  websocket?: boolean;
  headers?: Readonly<Record<string, string>>;
  /** Where the identity's token goes: `Authorization` (default) or a WebSocket subprotocol. */
  tokenIn?: 'websocket-protocol';
  /** Replaces the Host header: `{port}` is the listener's port. */
  host?: string;
  body?: string;
  expect: Expect;
}

/** Checks that are not one HTTP request per route. */
export type OtherCheck =
  /** The kubelet API refuses a TLS handshake capped at this version (weak ciphers allowed). */
  | { kind: 'tls'; version: 'TLSv1' | 'TLSv1.1' }
  /** The root dir, `<root>/pods` and each pod's dir have exactly this mode. */
  | { kind: 'dir-modes'; mode: number }
  /** As nobody, nothing of a pod under this directory can be read, written or entered. */
  | { kind: 'nobody-access'; under: 'root-dir' | 'pod-logs' }
  /** `runuser -u nobody -- cat <root>/pods/<uid>/volumes/kubernetes.io~secret/<vol>/<key>` fails. */
  | { kind: 'nobody-cat-secret' }
  /** The local socket is a socket, mode 0600, owned by root. */
  | { kind: 'socket-mode' }
  /** As nobody, connecting to the local socket (and asking for /pods) fails. */
  | { kind: 'socket-connect' }
  /** As nobody, racing the kubelet's start (umask 000) for any socket it binds: no connection. */
  | { kind: 'socket-race' }
  /** The kubelet's log has a warning about this choice. */
  | { kind: 'warning'; about: 'root-dir-mode' | 'read-only-port' | 'console-listener' }
  /**
   * A static pod with this defect is not run, the kubelet logs why and stays healthy; with
   * `event`, it also records a Warning event about it.
   */
  | { kind: 'static-pod'; defect: 'hostpath-dotdot' | 'hostpath-type' | 'bidirectional'; event?: true }
  /** One user takes every console stream it can get; another user still gets one. */
  | { kind: 'sse-per-user' }
  /** A client cert of a new CA is refused, then accepted once the CA file includes that CA. */
  | { kind: 'client-ca-reload' }
  /** A page in headless chromium tries something; see browser.ts. */
  | { kind: 'browser'; scenario: BrowserScenario };

export type BrowserScenario =
  /** A page on `rebind.example` (resolving to 127.0.0.1) reads /pods from a loopback listener. */
  | 'rebind-healthz'
  | 'rebind-console'
  /** A page on `attacker.example` auto-submits forms (urlencoded, multipart, text/plain) POSTing to
   * /run through `kubectl proxy`; the command would create a file in the container. */
  | 'form-run'
  /** The same page opens a WebSocket to exec through `kubectl proxy`. */
  | 'websocket-exec'
  /** The console opened through `kubectl proxy` (same origin) lists the node's pods. */
  | 'console-same-origin';

export type Check = HttpCheck | OtherCheck;

export type Group =
  | 'Files'
  | 'Local socket'
  | 'Healthz listener'
  | 'Read-only port'
  | 'Kubelet API (:10250)'
  | 'Debugging handlers off'
  | 'Cross-site requests'
  | 'Console listener'
  | 'Browser'
  | 'Static pods';

export interface Probe {
  id: string;
  group: Group;
  /** What is tried, for the table. */
  attempt: string;
  /** What tskubelet must answer, for the table. */
  expected: string;
  /** The tskubelet nodes it runs against. */
  targets: readonly TargetName[];
  /**
   * `true`: the same probe runs against the upstream kubelet (run.ts --upstream); a string: why it
   * does not apply to upstream.
   */
  upstream: true | string;
  check: Check;
  /**
   * A hole the probe finds that no change fixes yet: the test is reported as a todo (it runs, and
   * its outcome shows, without failing the suite) and the table says so. Removed with the fix.
   */
  knownGap?: string;
}

/** The route samples an HTTP check sends. */
export function routesOf(c: HttpCheck): RouteSample[] {
  const picked = c.routes ? ROUTES.filter((r) => c.routes?.includes(r.route)) : [...ROUTES];
  return picked.filter((r) => !(c.except ?? []).includes(r.route));
}
