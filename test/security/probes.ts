/**
 * The attacker suite's one table: every probe, what it tries, against which live node, what
 * tskubelet must do, and whether the same probe runs against the upstream kubelet. The tests
 * (`*.test.ts`) and the runner (`run.ts`) execute it; `report.ts` renders it into
 * docs/security.md. No upstream counterpart (upstream has no attacker suite); the routes sampled
 * are upstream pkg/kubelet/server/server.go's plus tskubelet's own (console, timeline, why).
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
  | { kind: 'warning'; about: 'root-dir-mode' | 'read-only-port' }
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
}

const STANDALONE: readonly TargetName[] = ['standalone'];
const CLUSTER: readonly TargetName[] = ['cluster'];
const BOTH: readonly TargetName[] = ['standalone', 'cluster'];
const UPGRADES = ['exec', 'attach', 'portForward'] as const;
const FOREIGN_ORIGIN = 'http://attacker.example';
const NO_CONSOLE = 'upstream has no node console';
const NO_SOCKET = 'upstream has no local API socket';

export const PROBES: readonly Probe[] = [
  // Files.
  {
    id: 'files-dir-modes',
    group: 'Files',
    attempt:
      'mode of the root dir, `<root>/pods` and every pod dir (root dir pre-existing 0755; umask 000; `--tls-cert-file` on a fresh root dir)',
    expected: '0750 each',
    targets: ['standalone', 'standalone-hostile', 'cluster'],
    upstream: true,
    check: { kind: 'dir-modes', mode: 0o750 },
  },
  {
    id: 'files-root-dir-warning',
    group: 'Files',
    attempt: 'a root dir that existed as 0755',
    expected: 'tightened to 0750, with a warning in the log',
    targets: STANDALONE,
    upstream: 'upstream creates the root dir 0750 but leaves an existing one as it is',
    check: { kind: 'warning', about: 'root-dir-mode' },
  },
  {
    id: 'files-nobody-root-dir',
    group: 'Files',
    attempt:
      'as nobody: read, write or enter every file and directory of a pod under the root dir (volumes, tmpfs, projected, etc-hosts)',
    expected: 'none accessible',
    targets: ['standalone', 'standalone-hostile', 'cluster'],
    upstream: true,
    check: { kind: 'nobody-access', under: 'root-dir' },
  },
  {
    id: 'files-nobody-pod-logs',
    group: 'Files',
    attempt:
      'as nobody: read, write or enter every file and directory of a pod under the pod log dir (/var/log/pods or `podLogsDir`)',
    expected: 'none accessible',
    targets: ['standalone', 'standalone-hostile', 'cluster'],
    upstream: true,
    check: { kind: 'nobody-access', under: 'pod-logs' },
  },
  {
    id: 'files-nobody-cat-secret',
    group: 'Files',
    attempt: '`runuser -u nobody -- cat <root>/pods/*/volumes/kubernetes.io~secret/*/*`',
    expected: 'fails (Permission denied)',
    targets: CLUSTER,
    upstream: true,
    check: { kind: 'nobody-cat-secret' },
  },
  // The local socket.
  {
    id: 'socket-mode',
    group: 'Local socket',
    attempt: 'mode and owner of `<root>/tskubelet.sock` (also started with umask 000)',
    expected: 'socket, 0600, root',
    targets: ['standalone', 'standalone-hostile', 'cluster'],
    upstream: NO_SOCKET,
    check: { kind: 'socket-mode' },
  },
  {
    id: 'socket-nobody-connect',
    group: 'Local socket',
    attempt: 'as nobody: connect and `GET /pods` (the socket in a directory nobody may enter)',
    expected: 'connect refused',
    targets: ['standalone', 'standalone-hostile', 'cluster'],
    upstream: NO_SOCKET,
    check: { kind: 'socket-connect' },
  },
  {
    id: 'socket-start-race',
    group: 'Local socket',
    attempt: 'as nobody: connect to every socket that appears while the kubelet starts with umask 000',
    expected: 'no connection',
    targets: ['standalone-hostile'],
    upstream: NO_SOCKET,
    check: { kind: 'socket-race' },
  },
  // The healthz listener.
  {
    id: 'healthz-healthz',
    group: 'Healthz listener',
    attempt: '`GET /healthz` (control)',
    expected: '200',
    targets: BOTH,
    upstream: true,
    check: { kind: 'http', listener: 'healthz', routes: ['healthz'], expect: { status: [200] } },
  },
  {
    id: 'healthz-other-routes',
    group: 'Healthz listener',
    attempt: 'every other route (`/pods`, `/configz`, `/containerLogs/…`, …)',
    expected: '404',
    targets: BOTH,
    upstream: true,
    check: { kind: 'http', listener: 'healthz', except: ['healthz'], expect: { status: [404] } },
  },
  {
    id: 'healthz-rebinding',
    group: 'Healthz listener',
    attempt: '`/healthz` and `/pods` with `Host: rebind.example:<port>` (DNS rebinding)',
    expected: '403 or 421',
    targets: BOTH,
    upstream: true,
    check: {
      kind: 'http',
      listener: 'healthz',
      routes: ['healthz', 'pods'],
      host: 'rebind.example:{port}',
      expect: { status: [403, 421] },
    },
  },
  // The read-only port.
  {
    id: 'read-only-served',
    group: 'Read-only port',
    attempt: "upstream's read-only routes (`/healthz`, `/pods`, `/stats/summary`, `/metrics…`)",
    expected: '200',
    targets: STANDALONE,
    upstream: true,
    check: { kind: 'http', listener: 'read-only', routes: READ_ONLY_SET, expect: { status: [200] } },
  },
  {
    id: 'read-only-not-served',
    group: 'Read-only port',
    attempt: 'every other route (`/configz`, `/runningpods`, timeline, why, console, logs, exec, run, …)',
    expected: '404 or 405',
    targets: STANDALONE,
    upstream: true,
    check: {
      kind: 'http',
      listener: 'read-only',
      except: [...READ_ONLY_SET, 'spec'],
      expect: { status: [404, 405] },
    },
  },
  {
    id: 'read-only-warning',
    group: 'Read-only port',
    attempt: 'enabling the read-only port',
    expected: 'a warning in the log',
    targets: STANDALONE,
    upstream: 'upstream logs nothing',
    check: { kind: 'warning', about: 'read-only-port' },
  },
  // The kubelet API.
  {
    id: 'api-anonymous',
    group: 'Kubelet API (:10250)',
    attempt: 'every route, no credentials',
    expected: '401',
    targets: BOTH,
    upstream: true,
    check: { kind: 'http', listener: 'api', who: 'anonymous', expect: { status: [401] } },
  },
  {
    id: 'api-foreign-cert',
    group: 'Kubelet API (:10250)',
    attempt: 'every route, a client certificate from an untrusted CA',
    expected: '401',
    targets: BOTH,
    upstream: true,
    check: { kind: 'http', listener: 'api', who: 'foreign-cert', expect: { status: [401] } },
  },
  {
    id: 'api-bad-token',
    group: 'Kubelet API (:10250)',
    attempt: 'every route, a bearer token the API server does not know',
    expected: '401',
    targets: CLUSTER,
    upstream: true,
    check: { kind: 'http', listener: 'api', who: 'bad-token', expect: { status: [401] } },
  },
  {
    id: 'api-norbac-token',
    group: 'Kubelet API (:10250)',
    attempt: 'every route, a ServiceAccount token without RBAC',
    expected: '403',
    targets: CLUSTER,
    upstream: true,
    check: { kind: 'http', listener: 'api', who: 'norbac-token', expect: { status: [403] } },
  },
  {
    id: 'api-norbac-cert',
    group: 'Kubelet API (:10250)',
    attempt: 'every route, a client certificate of the cluster CA for a user without RBAC',
    expected: '403',
    targets: CLUSTER,
    upstream: true,
    check: { kind: 'http', listener: 'api', who: 'norbac-cert', expect: { status: [403] } },
  },
  {
    id: 'api-head-verb',
    group: 'Kubelet API (:10250)',
    attempt: '`HEAD /pods` with a token allowed only `get` on nodes/proxy',
    expected: '403 (HEAD is not `get`: the verb is empty, as upstream)',
    targets: CLUSTER,
    upstream: true,
    check: {
      kind: 'http',
      listener: 'api',
      who: 'get-only-token',
      routes: ['pods'],
      method: 'HEAD',
      expect: { status: [403] },
    },
  },
  {
    id: 'api-get-only-control',
    group: 'Kubelet API (:10250)',
    attempt: '`GET /pods` with the same token (control)',
    expected: '200',
    targets: CLUSTER,
    upstream: true,
    check: {
      kind: 'http',
      listener: 'api',
      who: 'get-only-token',
      routes: ['pods'],
      expect: { status: [200] },
    },
  },
  {
    id: 'api-ws-token-not-upgrade',
    group: 'Kubelet API (:10250)',
    attempt:
      '`GET /pods` with an allowed token only in `Sec-WebSocket-Protocol` (`base64url.bearer.authorization.k8s.io.…`), not an upgrade',
    expected: '401',
    targets: CLUSTER,
    upstream: true,
    check: {
      kind: 'http',
      listener: 'api',
      who: 'authorized-token',
      routes: ['pods'],
      tokenIn: 'websocket-protocol',
      expect: { status: [401] },
    },
  },
  {
    id: 'api-ws-token-upgrade',
    group: 'Kubelet API (:10250)',
    attempt: 'exec upgrade with the same token in `Sec-WebSocket-Protocol` (control)',
    expected: '101',
    targets: CLUSTER,
    upstream: true,
    check: {
      kind: 'http',
      listener: 'api',
      who: 'authorized-token',
      routes: ['exec'],
      tokenIn: 'websocket-protocol',
      expect: { status: [101] },
    },
  },
  {
    id: 'api-weak-tls10',
    group: 'Kubelet API (:10250)',
    attempt: 'TLS handshake capped at TLS 1.0',
    expected: 'refused',
    targets: BOTH,
    upstream: true,
    check: { kind: 'tls', version: 'TLSv1' },
  },
  {
    id: 'api-weak-tls11',
    group: 'Kubelet API (:10250)',
    attempt: 'TLS handshake capped at TLS 1.1',
    expected: 'refused',
    targets: BOTH,
    upstream: true,
    check: { kind: 'tls', version: 'TLSv1.1' },
  },
  {
    id: 'api-nosniff',
    group: 'Kubelet API (:10250)',
    attempt: 'every route (upgrades as plain requests), allowed user: `X-Content-Type-Options`',
    expected: '`nosniff` on every answer',
    targets: BOTH,
    upstream: true,
    check: {
      kind: 'http',
      listener: 'api',
      who: 'authorized',
      websocket: false,
      expect: { header: 'x-content-type-options', pattern: '^nosniff$' },
    },
  },
  {
    id: 'api-nosniff-refused',
    group: 'Kubelet API (:10250)',
    attempt: 'every route, no credentials: `X-Content-Type-Options` on the 401',
    expected: '`nosniff` on every answer',
    targets: BOTH,
    upstream: true,
    check: {
      kind: 'http',
      listener: 'api',
      who: 'anonymous',
      websocket: false,
      expect: { header: 'x-content-type-options', pattern: '^nosniff$' },
    },
  },
  {
    id: 'api-logs-csp',
    group: 'Kubelet API (:10250)',
    attempt: '`containerLogs` and `/logs/`, allowed user: `Content-Security-Policy`',
    expected: "a CSP that runs nothing (`default-src 'none'` or `sandbox`)",
    targets: BOTH,
    upstream: true,
    check: {
      kind: 'http',
      listener: 'api',
      who: 'authorized',
      routes: ['containerLogs', 'logs'],
      expect: { header: 'content-security-policy', pattern: "default-src 'none'|sandbox" },
    },
  },
  {
    id: 'api-sse-per-user',
    group: 'Kubelet API (:10250)',
    attempt: "one user opens console streams until refused; then another user's stream",
    expected: "the other user's stream is served",
    targets: STANDALONE,
    upstream: NO_CONSOLE,
    check: { kind: 'sse-per-user' },
  },
  {
    id: 'api-client-ca-reload',
    group: 'Kubelet API (:10250)',
    attempt: 'a certificate of a new CA, before and after the CA is added to the client CA file',
    expected: '401, then 200 without a restart',
    targets: STANDALONE,
    upstream: 'upstream reloads the client CA file too (dynamiccertificates); not measured here',
    check: { kind: 'client-ca-reload' },
  },
  // Debugging handlers off.
  {
    id: 'debug-off-routes',
    group: 'Debugging handlers off',
    attempt:
      '`enableDebuggingHandlers: false`, allowed user: why, console, exec, attach, port-forward, run, containerLogs, runningpods, /logs/',
    expected: '405',
    targets: ['standalone-hostile'],
    upstream: 'measured on the upstream kubelet with debugging handlers on only',
    check: {
      kind: 'http',
      listener: 'api',
      who: 'authorized',
      routes: DEBUGGING_SET,
      expect: { status: [405] },
    },
  },
  {
    id: 'debug-off-console-listener',
    group: 'Debugging handlers off',
    attempt: '`enableDebuggingHandlers: false` with `--console-address`: the console listener',
    expected: 'not started (connection refused)',
    targets: ['standalone-hostile'],
    upstream: NO_CONSOLE,
    check: {
      kind: 'http',
      listener: 'console',
      routes: ['console', 'pods'],
      expect: { unreachable: true },
    },
  },
  // Cross-site requests (with an allowed identity: the browser's user is allowed).
  {
    id: 'xsite-cross-site',
    group: 'Cross-site requests',
    attempt: 'every route, allowed user, `Sec-Fetch-Site: cross-site`',
    expected: '403',
    targets: BOTH,
    upstream: true,
    check: {
      kind: 'http',
      listener: 'api',
      who: 'authorized',
      headers: { 'sec-fetch-site': 'cross-site' },
      expect: { status: [403] },
    },
  },
  {
    id: 'xsite-same-site',
    group: 'Cross-site requests',
    attempt: 'every route, allowed user, `Sec-Fetch-Site: same-site` (another port of the same host)',
    expected: '403',
    targets: BOTH,
    upstream: true,
    check: {
      kind: 'http',
      listener: 'api',
      who: 'authorized',
      headers: { 'sec-fetch-site': 'same-site' },
      expect: { status: [403] },
    },
  },
  {
    id: 'xsite-same-origin-control',
    group: 'Cross-site requests',
    attempt: '`/pods`, exec upgrade and `/console/`, allowed user, `Sec-Fetch-Site: same-origin` (control)',
    expected: 'served (200, 101)',
    targets: BOTH,
    upstream: true,
    check: {
      kind: 'http',
      listener: 'api',
      who: 'authorized',
      routes: ['pods', 'exec', 'console'],
      headers: { 'sec-fetch-site': 'same-origin' },
      expect: { status: [200, 101] },
    },
  },
  {
    id: 'xsite-origin-post',
    group: 'Cross-site requests',
    attempt: '`POST /run`, allowed user, `Origin: http://attacker.example`, no `Sec-Fetch-Site`',
    expected: '403',
    targets: BOTH,
    upstream: true,
    check: {
      kind: 'http',
      listener: 'api',
      who: 'authorized',
      routes: ['run'],
      headers: { origin: FOREIGN_ORIGIN },
      expect: { status: [403] },
    },
  },
  {
    id: 'xsite-origin-upgrade',
    group: 'Cross-site requests',
    attempt: 'exec, attach, port-forward WebSocket upgrades, allowed user, foreign `Origin`',
    expected: '403',
    targets: BOTH,
    upstream: true,
    check: {
      kind: 'http',
      listener: 'api',
      who: 'authorized',
      routes: UPGRADES,
      headers: { origin: FOREIGN_ORIGIN },
      expect: { status: [403] },
    },
  },
  {
    id: 'xsite-origin-get-control',
    group: 'Cross-site requests',
    attempt:
      '`GET /pods`, allowed user, foreign `Origin` (control: a read the browser would not let the page see)',
    expected: '200',
    targets: BOTH,
    upstream: true,
    check: {
      kind: 'http',
      listener: 'api',
      who: 'authorized',
      routes: ['pods'],
      headers: { origin: FOREIGN_ORIGIN },
      expect: { status: [200] },
    },
  },
  ...(
    [
      ['urlencoded', 'application/x-www-form-urlencoded', 'a=b'],
      [
        'multipart',
        'multipart/form-data; boundary=x',
        '--x\r\nContent-Disposition: form-data; name="a"\r\n\r\nb\r\n--x--\r\n',
      ],
      ['text-plain', 'text/plain', 'a=b'],
    ] as const
  ).map(([name, type, body]): Probe => ({
    id: `xsite-run-form-${name}`,
    group: 'Cross-site requests',
    attempt: `\`POST /run\`, allowed user, \`Content-Type: ${type.split(';')[0] ?? type}\` and a body (what an HTML form sends)`,
    expected: '415',
    targets: BOTH,
    upstream: true,
    check: {
      kind: 'http',
      listener: 'api',
      who: 'authorized',
      routes: ['run'],
      headers: { 'content-type': type },
      body,
      expect: { status: [415] },
    },
  })),
  {
    id: 'xsite-console-listener',
    group: 'Console listener',
    attempt: 'a GET of every route of the loopback console listener with `Sec-Fetch-Site: cross-site`',
    expected: '403',
    targets: STANDALONE,
    upstream: NO_CONSOLE,
    check: {
      kind: 'http',
      listener: 'console',
      method: 'GET',
      headers: { 'sec-fetch-site': 'cross-site' },
      expect: { status: [403] },
    },
  },
  {
    id: 'console-listener-rebinding',
    group: 'Console listener',
    attempt: 'every route with `Host: rebind.example:<port>`',
    expected: '403',
    targets: STANDALONE,
    upstream: NO_CONSOLE,
    check: { kind: 'http', listener: 'console', host: 'rebind.example:{port}', expect: { status: [403] } },
  },
  {
    id: 'console-listener-writes',
    group: 'Console listener',
    attempt: '`POST` to every route',
    expected: '405',
    targets: STANDALONE,
    upstream: NO_CONSOLE,
    check: { kind: 'http', listener: 'console', method: 'POST', expect: { status: [405] } },
  },
  {
    id: 'console-listener-streams',
    group: 'Console listener',
    attempt: 'exec, attach, port-forward, run, configz, runningpods, /logs/, metrics',
    expected: '404 (not on this listener)',
    targets: STANDALONE,
    upstream: NO_CONSOLE,
    check: {
      kind: 'http',
      listener: 'console',
      routes: ['exec', 'attach', 'portForward', 'configz', 'runningpods', 'logs', 'metrics'],
      expect: { status: [404] },
    },
  },
  // The browser.
  {
    id: 'browser-rebind-healthz',
    group: 'Browser',
    attempt: 'chromium opens `http://rebind.example:<healthz port>/pods` (the name resolves to 127.0.0.1)',
    expected: 'refused, no pod in the page',
    targets: STANDALONE,
    upstream: true,
    check: { kind: 'browser', scenario: 'rebind-healthz' },
  },
  {
    id: 'browser-rebind-console',
    group: 'Browser',
    attempt: 'chromium opens `http://rebind.example:<console port>/pods`',
    expected: 'refused, no pod in the page',
    targets: STANDALONE,
    upstream: NO_CONSOLE,
    check: { kind: 'browser', scenario: 'rebind-console' },
  },
  {
    id: 'browser-form-run',
    group: 'Browser',
    attempt:
      'a page on `http://attacker.example:<port>/` auto-submits three forms (urlencoded, multipart, text/plain) to `/run/…?cmd=touch /tmp/…` through `kubectl proxy`',
    expected: 'every POST refused; no file in the container',
    targets: CLUSTER,
    upstream: true,
    check: { kind: 'browser', scenario: 'form-run' },
  },
  {
    id: 'browser-websocket-exec',
    group: 'Browser',
    attempt:
      'the same page opens a WebSocket to `/exec/…?command=touch&command=/tmp/…` through `kubectl proxy`',
    expected: 'refused; no file in the container',
    targets: CLUSTER,
    upstream: true,
    check: { kind: 'browser', scenario: 'websocket-exec' },
  },
  {
    id: 'browser-console-same-origin',
    group: 'Browser',
    attempt: 'the console opened through `kubectl proxy` (same origin; control)',
    expected: "works: the node's pods listed, live",
    targets: CLUSTER,
    upstream: NO_CONSOLE,
    check: { kind: 'browser', scenario: 'console-same-origin' },
  },
  // Static pods.
  {
    id: 'static-hostpath-dotdot',
    group: 'Static pods',
    attempt: 'a static pod with `hostPath: {path: /tmp/../etc}`',
    expected: 'not run, the reason logged; the kubelet stays healthy',
    targets: STANDALONE,
    upstream: true,
    check: { kind: 'static-pod', defect: 'hostpath-dotdot' },
  },
  {
    id: 'static-hostpath-type',
    group: 'Static pods',
    attempt: 'a static pod with `hostPath: {type: Sideways}`',
    expected: 'not run, the reason logged; the kubelet stays healthy',
    targets: STANDALONE,
    upstream: true,
    check: { kind: 'static-pod', defect: 'hostpath-type' },
  },
  {
    id: 'static-bidirectional',
    group: 'Static pods',
    attempt: 'a static pod with `mountPropagation: Bidirectional` in an unprivileged container',
    expected: 'not run, the reason logged; the kubelet stays healthy',
    targets: STANDALONE,
    upstream: true,
    check: { kind: 'static-pod', defect: 'bidirectional' },
  },
  {
    id: 'static-rejection-event',
    group: 'Static pods',
    attempt: 'the static pod with a `..` hostPath again: the events the kubelet recorded',
    expected: 'a Warning event naming the pod or its file',
    targets: STANDALONE,
    upstream: true,
    check: { kind: 'static-pod', defect: 'hostpath-dotdot', event: true },
  },
];

/** The probes that run against one tskubelet node. */
export function probesFor(target: TargetName): Probe[] {
  return PROBES.filter((p) => p.targets.includes(target));
}

/** The probes that also run against the upstream kubelet. */
export function upstreamProbes(): Probe[] {
  return PROBES.filter((p) => p.upstream === true);
}

/** The route samples an HTTP check sends. */
export function routesOf(c: HttpCheck): RouteSample[] {
  const picked = c.routes ? ROUTES.filter((r) => c.routes?.includes(r.route)) : [...ROUTES];
  return picked.filter((r) => !(c.except ?? []).includes(r.route));
}
