/**
 * What a request to the API server is, named as the API server's request-info resolver names it:
 * the verb (LIST and WATCH told apart from GET) and the resource with its subresource, plus what
 * tells one reflector from another (namespace, selectors) and the resourceVersion it asked for.
 */

export type ApiVerb = 'LIST' | 'WATCH' | 'GET' | 'CREATE' | 'UPDATE' | 'PATCH' | 'DELETE' | 'OTHER';

/** What a request was, as the API server's request-info resolver would name it. */
export interface RequestKind {
  verb: ApiVerb;
  /** `pods`, `pods/status`, `leases`, `serviceaccounts/token`, …; `nonresource` for /healthz etc. */
  resource: string;
  /** LIST and WATCH: the namespace and selectors (`ns=…,fieldSelector=…`), which tell reflectors apart. */
  selector?: string;
  /** LIST and WATCH: the resourceVersion asked for ('' when none). */
  resourceVersion?: string;
}

/** Names a request the way the API server's request-info resolver does (verb + resource/subresource). */
export function classifyRequest(method: string, rawUrl: string): RequestKind {
  const url = new URL(rawUrl, 'https://proxy.invalid');
  let segs = url.pathname.split('/').filter(Boolean);
  if (segs[0] === 'api' && segs.length >= 2) segs = segs.slice(2);
  else if (segs[0] === 'apis' && segs.length >= 3) segs = segs.slice(3);
  else return { verb: 'OTHER', resource: 'nonresource' };
  let watch = ['1', 'true'].includes(url.searchParams.get('watch') ?? '');
  if (segs[0] === 'watch') {
    watch = true;
    segs = segs.slice(1);
  }
  // /namespaces/<ns>/<resource>/… ; /namespaces and /namespaces/<ns> name the namespace itself.
  let namespace = '';
  if (segs[0] === 'namespaces' && segs.length >= 3) {
    namespace = segs[1] ?? '';
    segs = segs.slice(2);
  }
  const [resource, name, sub] = segs;
  if (resource === undefined) return { verb: 'OTHER', resource: 'nonresource' };
  const full = sub === undefined ? resource : `${resource}/${sub}`;
  const verb = ((): ApiVerb => {
    switch (method) {
      case 'GET':
        if (watch) return 'WATCH';
        return name === undefined ? 'LIST' : 'GET';
      case 'POST':
        return 'CREATE';
      case 'PUT':
        return 'UPDATE';
      case 'PATCH':
        return 'PATCH';
      case 'DELETE':
        return 'DELETE';
      default:
        return 'OTHER';
    }
  })();
  if (verb !== 'LIST' && verb !== 'WATCH') return { verb, resource: full };
  const selector = [
    ...(namespace ? [`ns=${namespace}`] : []),
    ...['fieldSelector', 'labelSelector'].flatMap((k) => {
      const v = url.searchParams.get(k);
      return v ? [`${k}=${v}`] : [];
    }),
  ].join(',');
  return { verb, resource: full, selector, resourceVersion: url.searchParams.get('resourceVersion') ?? '' };
}
