/**
 * The requests of the `kubelet-api` fuzzed surface (kubelet-api.ts), as raw HTTP/1.x bytes: any
 * method, paths over every route with odd segments and percent-encodings (malformed ones too),
 * absolute-form and `*` targets, query strings with bad numbers and times, random and huge headers,
 * upgrade requests, bodies that do not match their length. Most are well-formed enough to reach a
 * handler (the known pods and containers, HTTP/1.1, no odd header).
 */
import fc from 'fast-check';
import type { FuzzInput } from './harness.ts';

export interface ApiInput extends FuzzInput {
  /** The request as written to the socket. */
  raw: string;
  readOnly: boolean;
  /** The query parameter names, which a refusal of a parameter's value must name. */
  params: string[];
}

/** The pods the fake host holds (and the requests name). */
export const PODS: { ns: string; name: string; uid: string; containers: string[]; static?: boolean }[] = [
  { ns: 'default', name: 'web', uid: 'uid-web', containers: ['app', 'sidecar'] },
  { ns: 'kube-system', name: 'etcd-node', uid: 'uid-etcd', containers: ['etcd'], static: true },
];

const known = fc.constantFrom(...PODS);

/** A path segment: a real name, an odd one, or an encoding trick. */
const segment = fc.oneof(
  {
    arbitrary: fc.constantFrom(
      'default',
      'web',
      'app',
      'sidecar',
      'kube-system',
      'etcd-node',
      'etcd',
      'uid-web',
    ),
    weight: 6,
  },
  {
    arbitrary: fc.constantFrom(
      '',
      '.',
      '..',
      '%2e%2e',
      '%2F',
      'a%2Fb',
      '%00',
      '%',
      '%zz',
      '%C0%AF',
      '%E2%80%AE',
      'a b',
      '~',
      'x'.repeat(300),
      'x'.repeat(5000),
      '\u00e9',
      ';',
      '?',
      '#',
      '%3F',
      'web%3Bx',
      '*',
    ),
    weight: 2,
  },
  { arbitrary: fc.string({ maxLength: 12 }).map(encodeURIComponent), weight: 1 },
);

const routes = fc.oneof(
  {
    arbitrary: fc.constantFrom(
      '/healthz',
      '/pods',
      '/runningpods/',
      '/configz',
      '/spec/',
      '/metrics',
      '/stats/summary',
      '/logs/syslog',
    ),
    weight: 2,
  },
  fc.constantFrom(
    '/healthz',
    '/pods',
    '/pods/',
    '/runningpods/',
    '/configz',
    '/spec/',
    '/metrics',
    '/metrics/probes',
    '/metrics/resource',
    '/metrics/cadvisor',
    '/stats/summary',
    '/logs/',
    '/logs/syslog',
    '/logs/sub/',
    '/logs/../../etc/passwd',
    '/logs/%2e%2e/%2e%2e/etc/passwd',
    '/debug/pprof/',
    '/',
    '*',
    'http://kubelet/pods',
    'http://[',
    '//pods',
    '/healthz/x',
    '/nope',
    `/${'a/'.repeat(3000)}`,
  ),
  known.chain((p) =>
    fc
      .tuple(
        fc.constantFrom(...p.containers, 'missing'),
        fc.constantFrom('containerLogs', 'exec', 'attach', 'run', 'portForward'),
      )
      .map(([c, kind]) =>
        kind === 'portForward' ? `/portForward/${p.ns}/${p.name}` : `/${kind}/${p.ns}/${p.name}/${c}`,
      ),
  ),
  known.map((p) => `/exec/${p.ns}/${p.name}/${p.uid}/${p.containers[0] ?? ''}`),
  fc
    .tuple(
      fc.constantFrom('containerLogs', 'exec', 'attach', 'run', 'portForward', 'logs', 'stats', 'metrics'),
      fc.array(segment, { maxLength: 5 }),
    )
    .map(([head, segs]) => `/${head}/${segs.join('/')}`),
);

const queryValue = fc.oneof(
  fc.constantFrom(
    '',
    '1',
    '0',
    '-1',
    'true',
    'false',
    'abc',
    '1.5',
    '9223372036854775808',
    '99999999999999999999',
    '%',
    '%zz',
    'x'.repeat(5000),
  ),
  fc.constantFrom('2026-11-24T00:00:00Z', '2026-13-40T99:99:99Z', 'yesterday', '1e3'),
);

const queryParam = fc.tuple(
  fc.constantFrom(
    'tailLines',
    'tail',
    'limitBytes',
    'sinceSeconds',
    'sinceTime',
    'timestamps',
    'follow',
    'previous',
    'command',
    'input',
    'output',
    'error',
    'tty',
    'port',
    'cmd',
    'only_cpu_and_memory',
    'x',
    '%zz',
    '',
  ),
  queryValue,
);

const methods = fc.oneof(
  { arbitrary: fc.constantFrom('GET', 'POST', 'HEAD'), weight: 8 },
  {
    arbitrary: fc.constantFrom('PUT', 'DELETE', 'OPTIONS', 'PATCH', 'TRACE', 'FOO', 'get', 'CONNECT'),
    weight: 1,
  },
);

const header = fc.oneof(
  fc.constantFrom(
    'Authorization: Bearer junk',
    'Authorization: Basic Zm9vOmJhcg==',
    'Authorization: ',
    'Connection: Upgrade\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: v4.channel.k8s.io',
    'Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13',
    'Content-Type: application/json',
    'Accept: */*',
    'X-Forwarded-For: 1.2.3.4',
    'Host: ',
    'Transfer-Encoding: chunked',
    'Content-Length: 5',
    'Content-Length: -1',
    'Content-Length: 1, 2',
    'Expect: 100-continue',
    `X-Big: ${'x'.repeat(10_000)}`,
    `X-Huge: ${'x'.repeat(100_000)}`,
    'X-Bad\u0000Name: 1',
    'X-Bad-Value: a\u0000b',
    'No colon here',
    ' Leading-Space: 1',
  ),
  fc.nat({ max: 300 }).map((n) => Array.from({ length: n }, (_, i) => `X-H${i}: ${i}`).join('\r\n')),
);

const body = fc.constantFrom(
  '',
  'hello',
  '{"a":1}',
  '0\r\n\r\n',
  '5\r\nhello\r\n0\r\n\r\n',
  'x'.repeat(70_000),
);

export const kubeletApiArbitrary: fc.Arbitrary<ApiInput> = fc
  .record({
    method: methods,
    path: routes,
    query: fc.array(queryParam, { maxLength: 4 }),
    streamFlags: fc.subarray([
      'output=1',
      'error=1',
      'input=1',
      'tty=1',
      'command=ls',
      'command=-la',
      'port=80',
    ]),
    headers: fc.oneof(
      { arbitrary: fc.constant<string[]>([]), weight: 2 },
      fc.array(header, { maxLength: 3 }),
    ),
    body: fc.oneof({ arbitrary: fc.constant(''), weight: 3 }, body),
    version: fc.oneof(
      { arbitrary: fc.constant('HTTP/1.1'), weight: 12 },
      fc.constantFrom('HTTP/1.0', 'HTTP/2.0', 'HTTP/9', ''),
    ),
    readOnlyPort: fc.nat({ max: 5 }),
  })
  .map((r) => {
    const params = [...r.streamFlags, ...r.query.map(([k, v]) => `${k}=${v}`)];
    const query = params.length > 0 ? `?${params.join('&')}` : '';
    const target = `${r.path}${query}`;
    const hasLength = r.headers.some((h) => /^(Content-Length|Transfer-Encoding):/im.test(h));
    const head = [
      `${r.method} ${target} ${r.version}`.trimEnd(),
      'Host: fuzz-node',
      ...r.headers,
      ...(r.body && !hasLength ? [`Content-Length: ${Buffer.byteLength(r.body)}`] : []),
      'Connection: close',
    ];
    return {
      raw: `${head.join('\r\n')}\r\n\r\n${r.body}`,
      readOnly: r.readOnlyPort === 0,
      expect: {
        what: `${r.readOnlyPort === 0 ? 'read-only ' : ''}${r.method} ${target.slice(0, 120)} ${r.version} [${r.headers.map((h) => h.slice(0, 30)).join(' | ')}] body ${r.body.length}`,
        mustReject: false,
        names: [],
      },
      params: r.query.map(([k]) => k).filter((k) => k !== ''),
    };
  });
