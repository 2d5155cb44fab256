import { readFile } from 'node:fs/promises';
import { dirname, isAbsolute, join } from 'node:path';
import { parse } from 'yaml';
import { KubeletError, describeError } from '../util/errors.ts';

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

interface NamedCluster {
  name: string;
  cluster: {
    server?: string;
    'certificate-authority'?: string;
    'certificate-authority-data'?: string;
    'insecure-skip-tls-verify'?: boolean;
    'tls-server-name'?: string;
  };
}
interface NamedUser {
  name: string;
  user?: {
    'client-certificate'?: string;
    'client-certificate-data'?: string;
    'client-key'?: string;
    'client-key-data'?: string;
    token?: string;
    tokenFile?: string;
    username?: string;
    password?: string;
    exec?: unknown;
    'auth-provider'?: unknown;
  };
}
interface NamedContext {
  name: string;
  context: { cluster: string; user?: string };
}
interface Kubeconfig {
  clusters?: NamedCluster[];
  users?: NamedUser[];
  contexts?: NamedContext[];
  'current-context'?: string;
}

/**
 * Loads the current context of a kubeconfig (clusters, users, contexts; certificate and key files
 * or inline data; token, tokenFile, basic auth; paths relative to the kubeconfig's directory, as
 * client-go resolves them). exec plugins and auth providers are refused: a node authenticates with
 * its client certificate. Hand-written on purpose: loading @kubernetes/client-node only to read this
 * file costs ~87 MiB of resident memory (measured), more than the rest of the kubelet.
 */
export async function loadKubeconfig(path: string): Promise<KubeconfigCredentials> {
  const op = `load kubeconfig ${path}`;
  const fail = (msg: string, cause?: unknown): never => {
    throw new KubeletError('InvalidArgument', op, msg, cause === undefined ? undefined : { cause });
  };
  let doc: Kubeconfig;
  try {
    doc = parse(await readFile(path, 'utf8')) as Kubeconfig;
  } catch (err) {
    return fail(describeError(err), err);
  }
  if (!doc || typeof doc !== 'object') return fail('not a kubeconfig');
  const dir = dirname(path);
  const resolve = (p: string) => (isAbsolute(p) ? p : join(dir, p));
  const readFileOrData = async (file: string | undefined, data: string | undefined, what: string) => {
    if (file) {
      try {
        return await readFile(resolve(file));
      } catch (err) {
        return fail(`${what} ${file}: ${describeError(err)}`, err);
      }
    }
    return data ? Buffer.from(data, 'base64') : undefined;
  };

  const contexts = doc.contexts ?? [];
  const ctxName = doc['current-context'] ?? contexts[0]?.name;
  const ctx = contexts.find((c) => c.name === ctxName);
  if (!ctx) return fail(`current context "${ctxName ?? ''}" not found`);
  const cluster = (doc.clusters ?? []).find((c) => c.name === ctx.context.cluster)?.cluster;
  if (!cluster?.server) return fail(`cluster "${ctx.context.cluster}" has no server`);
  const user = (doc.users ?? []).find((u) => u.name === ctx.context.user)?.user ?? {};
  if (user.exec !== undefined || user['auth-provider'] !== undefined) {
    return fail('exec and auth-provider credentials are not supported; use a client certificate or a token');
  }

  const creds: KubeconfigCredentials = {
    server: cluster.server,
    insecureSkipTLSVerify: cluster['insecure-skip-tls-verify'] === true,
  };
  const ca = await readFileOrData(
    cluster['certificate-authority'],
    cluster['certificate-authority-data'],
    'CA',
  );
  if (ca) creds.ca = ca;
  if (cluster['tls-server-name']) creds.tlsServerName = cluster['tls-server-name'];
  const cert = await readFileOrData(
    user['client-certificate'],
    user['client-certificate-data'],
    'client certificate',
  );
  const key = await readFileOrData(user['client-key'], user['client-key-data'], 'client key');
  if (cert) creds.cert = cert;
  if (key) creds.key = key;
  if (user.token) creds.authorization = `Bearer ${user.token}`;
  else if (user.tokenFile) {
    const t = await readFileOrData(user.tokenFile, undefined, 'token file');
    if (t) creds.authorization = `Bearer ${t.toString('utf8').trim()}`;
  } else if (user.username !== undefined) {
    creds.authorization = `Basic ${Buffer.from(`${user.username}:${user.password ?? ''}`).toString('base64')}`;
  }
  return creds;
}
