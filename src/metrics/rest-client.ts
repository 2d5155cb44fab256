/**
 * The `url` label of rest_client_request_duration_seconds, as client-go computes it: names and
 * namespaces in the path become `{name}` / `{namespace}` and every query value becomes `{value}`,
 * so the label's cardinality is bounded by the API paths the kubelet uses, not by object names.
 */

/** Which segments of an API path (after `/api/<version>` or `/apis/<group>/<version>`) name objects. */
function templatePath(path: string): string | undefined {
  const seg = path.split('/');
  // seg[0] is '' (the path starts with '/'); seg[1] is the prefix.
  if (seg.length <= 2) return path;
  let index: number;
  if (seg[1] === 'api') index = 3;
  else if (seg[1] === 'apis') index = 4;
  else return undefined; // not an API path: `/{prefix}`
  const rest = seg.length - index;
  const isSub = (s: string | undefined): boolean => s === 'status' || s === 'finalize';
  if (rest === 2) {
    seg[index + 1] = '{name}';
  } else if (rest === 3) {
    seg[index + 1] = isSub(seg[index + 2]) ? '{name}' : '{namespace}';
  } else if (rest >= 4) {
    seg[index + 1] = '{namespace}';
    if (!isSub(seg[index + 3])) seg[index + 3] = '{name}';
  }
  return seg.join('/');
}

/**
 * The templated URL of a request: scheme, host, templated path, and the query's keys (sorted, as
 * Go's url.Values.Encode sorts them) each with the value `{value}`. `basePath` is the path prefix
 * of the API server URL from the kubeconfig, if any; it is kept in front of the template.
 */
export function restClientURLTemplate(url: URL, basePath = ''): string {
  const base = basePath.replace(/\/+$/, '');
  let path = url.pathname;
  if (base !== '' && path.startsWith(base)) path = path.slice(base.length) || '/';
  const templated = templatePath(path);
  const out = new URL(`${url.protocol}//${url.host}`);
  if (templated === undefined) {
    out.pathname = `${base}/{prefix}`;
    return out.toString();
  }
  out.pathname = base + templated;
  const keys = [...new Set(url.searchParams.keys())].sort();
  const query = keys.map((k) => `${encodeURIComponent(k)}=%7Bvalue%7D`).join('&');
  return `${out.origin}${out.pathname}${query ? `?${query}` : ''}`;
}
