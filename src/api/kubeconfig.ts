/**
 * The one kubeconfig reader (upstream client-go tools/clientcmd, the part a kubelet and a kubectl
 * use: clusters, users, contexts; certificate and key files or inline data, data first as client-go's
 * dataFromSliceOrFile; token, tokenFile, basic auth; paths relative to the kubeconfig's directory, as
 * clientcmd resolves them). Hand-written on purpose: loading @kubernetes/client-node only to read this
 * file costs ~87 MiB of resident memory (measured), more than the rest of the kubelet.
 *
 * `readKubeconfig` reads a context; `loadKubeconfig` is what the kubelet asks of it to reach the API
 * server. The node CLI (`tskubelet node --kubeconfig`) reads the same file for its credentials only.
 */
import { readFile } from 'node:fs/promises';
import { dirname, isAbsolute, join } from 'node:path';
import { parse } from 'yaml';
import { KubeletError, describeError } from '../util/errors.ts';

/** A context of a kubeconfig with its cluster and user, the files they name read. */
export interface KubeconfigContext {
  /** The cluster's server; a kubeconfig names the API server, not a kubelet. */
  server?: string;
  ca?: Buffer;
  insecureSkipTLSVerify: boolean;
  tlsServerName?: string;
  cert?: Buffer;
  key?: Buffer;
  token?: string;
  basicAuth?: { username: string; password: string };
  /** The user authenticates through an exec plugin or an auth provider, which are not run here. */
  usesPlugin: boolean;
}

/** What a kubelet needs from a kubeconfig: where the server is, how to trust it, who we are. */
export interface KubeconfigCredentials {
  server: string;
  ca?: Buffer;
  insecureSkipTLSVerify: boolean;
  tlsServerName?: string;
  cert?: Buffer;
  key?: Buffer;
  /** Authorization header value (Bearer token or Basic), when the user has one. */
  authorization?: string;
}

type Fields = Record<string, unknown>;

function isFields(v: unknown): v is Fields {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** `list`'s entry called `name`, its `field` (`cluster`, `user`, `context`) when that is a mapping. */
function entry(list: unknown, name: string | undefined, field: string): Fields | undefined {
  if (!Array.isArray(list)) return undefined;
  const found: unknown = list.find((e) => isFields(e) && e.name === name);
  const v = isFields(found) ? found[field] : undefined;
  return isFields(v) ? v : undefined;
}

function str(f: Fields | undefined, key: string): string | undefined {
  const v = f?.[key];
  return typeof v === 'string' && v !== '' ? v : undefined;
}

/**
 * Reads `context` (default: the current context, else the first) of the kubeconfig at `path`.
 * Rejects with an InvalidArgument KubeletError naming the file and what is wrong with it.
 */
export async function readKubeconfig(path: string, context?: string): Promise<KubeconfigContext> {
  const op = `load kubeconfig ${path}`;
  const fail = (msg: string, cause?: unknown): never => {
    throw new KubeletError('InvalidArgument', op, msg, cause === undefined ? undefined : { cause });
  };
  let doc: unknown;
  try {
    doc = parse(await readFile(path, 'utf8'));
  } catch (err) {
    return fail(describeError(err), err);
  }
  if (!isFields(doc)) return fail('not a kubeconfig');
  const first: unknown = Array.isArray(doc.contexts) ? doc.contexts[0] : undefined;
  const ctxName =
    context ?? str(doc, 'current-context') ?? (isFields(first) ? str(first, 'name') : undefined);
  const ctx = entry(doc.contexts, ctxName, 'context');
  if (!ctx) return fail(`context ${JSON.stringify(ctxName ?? '')} not found`);
  const cluster = entry(doc.clusters, str(ctx, 'cluster'), 'cluster');
  const user = entry(doc.users, str(ctx, 'user'), 'user');

  const dir = dirname(path);
  const read = async (file: string, what: string): Promise<Buffer> => {
    try {
      return await readFile(isAbsolute(file) ? file : join(dir, file));
    } catch (err) {
      return fail(`${what} ${file}: ${describeError(err)}`, err);
    }
  };
  const dataOrFile = async (f: Fields | undefined, dataKey: string, fileKey: string, what: string) => {
    const data = str(f, dataKey);
    if (data) return Buffer.from(data, 'base64');
    const file = str(f, fileKey);
    return file ? read(file, what) : undefined;
  };

  const out: KubeconfigContext = {
    insecureSkipTLSVerify: cluster?.['insecure-skip-tls-verify'] === true,
    usesPlugin: user?.exec !== undefined || user?.['auth-provider'] !== undefined,
  };
  const server = str(cluster, 'server');
  if (server) out.server = server;
  const ca = await dataOrFile(cluster, 'certificate-authority-data', 'certificate-authority', 'CA');
  if (ca) out.ca = ca;
  const tlsServerName = str(cluster, 'tls-server-name');
  if (tlsServerName) out.tlsServerName = tlsServerName;
  const cert = await dataOrFile(user, 'client-certificate-data', 'client-certificate', 'client certificate');
  const key = await dataOrFile(user, 'client-key-data', 'client-key', 'client key');
  if ((cert === undefined) !== (key === undefined)) {
    return fail('the user has a client certificate without a key, or a key without a certificate');
  }
  if (cert && key) {
    out.cert = cert;
    out.key = key;
  }
  const tokenFile = str(user, 'tokenFile');
  const token =
    str(user, 'token') ??
    (tokenFile ? (await read(tokenFile, 'token file')).toString('utf8').trim() : undefined);
  if (token) out.token = token;
  else if (typeof user?.username === 'string') {
    out.basicAuth = {
      username: user.username,
      password: typeof user.password === 'string' ? user.password : '',
    };
  }
  return out;
}

/**
 * The current context as the kubelet uses it to reach the API server: the cluster must name a
 * server, and exec plugins and auth providers are refused (a node authenticates with its client
 * certificate or a token).
 */
export async function loadKubeconfig(path: string): Promise<KubeconfigCredentials> {
  const ctx = await readKubeconfig(path);
  const fail = (msg: string): never => {
    throw new KubeletError('InvalidArgument', `load kubeconfig ${path}`, msg);
  };
  if (!ctx.server) return fail("the current context's cluster has no server");
  if (ctx.usesPlugin) {
    return fail('exec and auth-provider credentials are not supported; use a client certificate or a token');
  }
  const { usesPlugin: _plugin, token, basicAuth, server, ...tls } = ctx;
  const creds: KubeconfigCredentials = { ...tls, server };
  if (token) creds.authorization = `Bearer ${token}`;
  else if (basicAuth) {
    creds.authorization = `Basic ${Buffer.from(`${basicAuth.username}:${basicAuth.password}`).toString('base64')}`;
  }
  return creds;
}
