/**
 * Cross-site request refusal for the kubelet API. Upstream pkg/kubelet/server has no counterpart:
 * it checks neither Origin nor Fetch metadata, so with `kubectl proxy` running any web page can
 * auto-submit a form to `/run` or open a WebSocket to `/exec` through the proxy's credentials.
 *
 * The decision is pure (headers in, verdict out); the handlers apply it on every listener.
 * - `Sec-Fetch-Site: cross-site | same-site` → refused, whatever the route and method. Same-site
 *   counts: a page on another port of 127.0.0.1 is same-site with `kubectl proxy` on 127.0.0.1:8001.
 * - `Sec-Fetch-Site: same-origin | none` → allowed. The console served through `kubectl proxy`
 *   (origin http://127.0.0.1:8001, while the kubelet sees its own Host) sends `same-origin`.
 * - No (known) `Sec-Fetch-Site` (an older browser; chromium sends none on WebSocket handshakes):
 *   a browser's request that is not GET/HEAD, or that is an upgrade (WebSockets always carry
 *   Origin), is refused when its `Origin`'s host:port is not the request's Host (`null` included).
 *   A browser is a `User-Agent` starting `Mozilla/`, which every browser sends and no page can
 *   change on a form submission or a WebSocket. Other clients pass whatever their Origin: kubectl,
 *   curl and client-go send none, and the Python client's websocket-client sends the address it
 *   dialled (the API server's), which through the API server's proxy is never the kubelet's Host.
 */
export interface CrossSiteFacts {
  method: string | undefined;
  /** An upgrade request (WebSocket, SPDY). */
  upgrade: boolean;
  headers: {
    host?: string | undefined;
    'user-agent'?: string | undefined;
    origin?: string | string[] | undefined;
    'sec-fetch-site'?: string | string[] | undefined;
  };
}

export type CrossSiteVerdict = { ok: true } | { ok: false; reason: string };

/** Longest header value quoted back in a refusal (and in its log line). */
const QUOTE_LIMIT = 200;

/** A header value bounded and JSON-quoted, for messages and logs. */
export function quoteHeader(value: string | undefined): string {
  if (value === undefined) return '(none)';
  return JSON.stringify(value.length > QUOTE_LIMIT ? `${value.slice(0, QUOTE_LIMIT)}…` : value);
}

function single(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v.join(', ') : v;
}

/** Whether `origin` (a serialized origin) names the same host:port as the Host header. */
export function originMatchesHost(origin: string, host: string | undefined): boolean {
  if (!host || origin === 'null') return false;
  let o: URL;
  let h: URL;
  try {
    o = new URL(origin);
    // The Host header read with the Origin's scheme, so a default port written out compares equal.
    h = new URL(`${o.protocol}//${host}`);
  } catch {
    return false;
  }
  return o.host !== '' && o.host === h.host && h.pathname === '/' && h.username === '';
}

/** Every browser's User-Agent starts so (for compatibility since Netscape); a page cannot change it. */
export function isBrowser(userAgent: string | undefined): boolean {
  return userAgent?.startsWith('Mozilla/') === true;
}

/** Allowed, or refused with the reason (the start of the 403 body). */
export function crossSiteVerdict(req: CrossSiteFacts): CrossSiteVerdict {
  const site = single(req.headers['sec-fetch-site'])?.trim().toLowerCase();
  if (site === 'cross-site' || site === 'same-site') {
    return {
      ok: false,
      reason: `the browser marked it Sec-Fetch-Site: ${site}; the kubelet API answers a browser only for its own pages (same-origin) or a URL opened directly`,
    };
  }
  if (site === 'same-origin' || site === 'none') return { ok: true };
  const origin = single(req.headers.origin);
  if (origin === undefined) return { ok: true };
  if (!isBrowser(req.headers['user-agent'])) return { ok: true };
  const method = (req.method ?? 'GET').toUpperCase();
  if (!req.upgrade && (method === 'GET' || method === 'HEAD')) return { ok: true };
  if (originMatchesHost(origin, req.headers.host)) return { ok: true };
  return {
    ok: false,
    reason: `Origin ${quoteHeader(origin)} is not this server (Host ${quoteHeader(req.headers.host)}) and the request ${req.upgrade ? 'is an upgrade' : `is a ${method}`}`,
  };
}

/** The 403 body of a refused request. */
export function crossSiteMessage(reason: string): string {
  return `cross-site request refused: ${reason}`;
}

/**
 * Request body types a page can send without a CORS preflight (an HTML form, or `fetch` in
 * no-cors mode). `/run` takes its command from the query only, so a body of one of these types
 * is refused (415): a form auto-submitted from any page is refused even by a browser that sends
 * no Fetch metadata.
 */
const SIMPLE_BODY_TYPES: ReadonlySet<string> = new Set([
  'application/x-www-form-urlencoded',
  'multipart/form-data',
  'text/plain',
]);

/** The media type (lowercase, without parameters) when it is one a page can send cross-site. */
export function simpleBodyType(contentType: string | undefined): string | undefined {
  if (contentType === undefined) return undefined;
  const media = (contentType.split(';')[0] ?? '').trim().toLowerCase();
  return SIMPLE_BODY_TYPES.has(media) ? media : undefined;
}
