import * as http from '../util/node-http.ts';
import * as https from 'node:https';
import type { IncomingMessage } from 'node:http';
import { PROBE_MAX_OUTPUT_BYTES, PROBE_MAX_REDIRECTS, PROBE_USER_AGENT } from '../config/defaults.ts';
import { describeError } from '../util/errors.ts';
import { abortReason } from '../util/abort.ts';
import { failure, limitedText, success, type ProbeOutcome } from './outcome.ts';
import { joinHostPort } from './port.ts';

export interface HttpProbeRequest {
  /** `HTTP` (default) or `HTTPS`; HTTPS certificates are not verified, as upstream. */
  scheme?: 'HTTP' | 'HTTPS';
  host: string;
  port: number;
  /** Path, optionally with a query string. */
  path?: string;
  httpHeaders?: { name: string; value: string }[];
  timeoutMs: number;
}

type Headers = Record<string, string[]>;

/** Go's textproto.CanonicalMIMEHeaderKey for the usual token names: `user-agent` → `User-Agent`. */
function canonicalHeaderName(name: string): string {
  if (!/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/.test(name)) return name;
  return name
    .split('-')
    .map((w) => (w === '' ? w : w[0]!.toUpperCase() + w.slice(1).toLowerCase()))
    .join('-');
}

/**
 * The request headers upstream sends: the probe's own (repeated names keep every value), plus
 * `User-Agent: kube-probe/<version>` and `Accept: *\/*` unless the probe sets them; an empty Accept
 * removes the header.
 */
export function probeHeaders(list: { name: string; value: string }[] | undefined): Headers {
  const headers: Headers = {};
  for (const h of list ?? []) {
    const k = canonicalHeaderName(h.name);
    (headers[k] ??= []).push(h.value);
  }
  if (!headers['User-Agent']) headers['User-Agent'] = [PROBE_USER_AGENT];
  const accept = headers['Accept'];
  if (!accept) headers['Accept'] = ['*/*'];
  else if (accept[0] === '') delete headers['Accept'];
  return headers;
}

/** `scheme://host:port/path?query`, the path taken verbatim as upstream's formatURL does. */
export function probeURL(scheme: 'HTTP' | 'HTTPS' | undefined, host: string, port: number, path = ''): URL {
  const proto = (scheme ?? 'HTTP').toLowerCase();
  const url = new URL(`${proto}://${joinHostPort(host, port)}`);
  const q = path.search(/[?#]/);
  const pathname = q === -1 ? path : path.slice(0, q);
  const rest = q === -1 ? '' : path.slice(q);
  url.pathname = pathname.startsWith('/') ? pathname : `/${pathname}`;
  const hash = rest.indexOf('#');
  url.search = hash === -1 ? rest : rest.slice(0, hash);
  return url;
}

interface Response {
  status: number;
  location: string | undefined;
  body: string;
}

function getOnce(
  url: URL,
  headers: Headers,
  hostHeader: string | undefined,
  signal: AbortSignal,
): Promise<Response> {
  const mod = url.protocol === 'https:' ? https : http;
  const outgoing: Record<string, string[] | string> = { ...headers };
  delete outgoing['Host'];
  if (hostHeader) outgoing['Host'] = hostHeader;
  const options: https.RequestOptions = {
    method: 'GET',
    headers: outgoing,
    agent: false, // no keep-alive (upstream DisableKeepAlives)
    rejectUnauthorized: false,
    signal,
  };
  return new Promise<Response>((resolve, reject) => {
    let settled = false;
    const settle = (fn: () => void) => {
      if (settled) return;
      settled = true;
      fn();
    };
    const req = mod.request(url, options, (res: IncomingMessage) => {
      const chunks: Buffer[] = [];
      let size = 0;
      const finish = () =>
        settle(() =>
          resolve({
            status: res.statusCode ?? 0,
            location: res.headers.location,
            body: limitedText(chunks, PROBE_MAX_OUTPUT_BYTES),
          }),
        );
      res.on('data', (c: Buffer) => {
        chunks.push(c);
        size += c.length;
        // Only the first 10 KiB matter; the rest is not read (upstream: non-fatal truncation).
        if (size >= PROBE_MAX_OUTPUT_BYTES) {
          finish();
          res.destroy();
        }
      });
      res.on('end', finish);
      res.on('error', (err) => settle(() => reject(err)));
      res.on('close', () => {
        if (!res.complete) settle(() => reject(new Error('unexpected EOF')));
      });
    });
    req.on('error', (err) => settle(() => reject(err)));
    req.end();
  });
}

function isFollowedRedirect(status: number): boolean {
  return status === 301 || status === 302 || status === 303 || status === 307 || status === 308;
}

/** Why the request failed, worded as Go's net/http client words it. */
function describeRequestError(err: unknown, url: URL, timedOut: boolean): string {
  if (timedOut)
    return `Get "${url.href}": context deadline exceeded (Client.Timeout exceeded while awaiting headers)`;
  const code = (err as { code?: unknown }).code;
  const addr = joinHostPort(
    url.hostname.replace(/^\[|\]$/g, ''),
    Number(url.port || (url.protocol === 'https:' ? 443 : 80)),
  );
  if (code === 'ECONNREFUSED') return `Get "${url.href}": dial tcp ${addr}: connect: connection refused`;
  if (code === 'EHOSTUNREACH') return `Get "${url.href}": dial tcp ${addr}: connect: no route to host`;
  if (code === 'ENETUNREACH') return `Get "${url.href}": dial tcp ${addr}: connect: network is unreachable`;
  if (code === 'ECONNRESET') return `Get "${url.href}": read: connection reset by peer`;
  if (code === 'ENOTFOUND') return `Get "${url.href}": dial tcp: lookup ${url.hostname}: no such host`;
  return `Get "${url.href}": ${describeError(err)}`;
}

/**
 * An HTTP GET probe (upstream probe/http): 200 ≤ status < 400 is success. Redirects are followed
 * on the same host name (at most 10 requests); a redirect to another host is not followed and
 * counts as success with a warning, as does any other 3xx answer. A connection error or the
 * timeout (covering redirects and the body) is a failure. Only the parent `signal` aborting throws.
 */
export async function httpProbe(req: HttpProbeRequest, signal?: AbortSignal): Promise<ProbeOutcome> {
  const timeout = AbortSignal.timeout(req.timeoutMs);
  const combined = signal ? AbortSignal.any([signal, timeout]) : timeout;
  const headers = probeHeaders(req.httpHeaders);
  const first = probeURL(req.scheme, req.host, req.port, req.path);
  let url = first;
  let hostHeader = headers['Host']?.[0];
  for (let requests = 1; ; requests++) {
    let res: Response;
    try {
      res = await getOnce(url, headers, hostHeader, combined);
    } catch (err) {
      if (signal?.aborted) throw abortReason(signal);
      return failure(describeRequestError(err, url, timeout.aborted));
    }
    if (isFollowedRedirect(res.status) && res.location) {
      let next: URL;
      try {
        next = new URL(res.location, url);
      } catch (err) {
        return failure(
          `Get "${url.href}": failed to parse Location header ${JSON.stringify(res.location)}: ${describeError(err)}`,
        );
      }
      if (next.hostname === first.hostname) {
        if (requests >= PROBE_MAX_REDIRECTS) {
          return failure(`Get "${next.href}": stopped after ${PROBE_MAX_REDIRECTS} redirects`);
        }
        // A Host override survives only a relative redirect (Go net/http).
        if (/^[a-zA-Z][a-zA-Z0-9+.-]*:/.test(res.location)) hostHeader = undefined;
        url = next;
        continue;
      }
    }
    if (res.status >= 200 && res.status < 400) {
      if (res.status >= 300) {
        return { result: 'warning', output: `Probe terminated redirects, Response body: ${res.body}` };
      }
      return success(res.body);
    }
    return failure(`HTTP probe failed with statuscode: ${res.status}`);
  }
}
