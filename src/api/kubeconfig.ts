/**
 * The one kubeconfig reader (upstream client-go tools/clientcmd, the part a kubelet and a kubectl
 * use: clusters, users, contexts; certificate and key files or inline data, data first as client-go's
 * dataFromSliceOrFile; token, tokenFile, basic auth, exec plugins (clientcmd/validation.go's checks,
 * clientcmd/api/v1/defaults.go's interactiveMode default); paths relative to the kubeconfig's
 * directory, as clientcmd's ResolvePaths makes them, the exec command only when it names a path).
 * Hand-written on purpose: loading @kubernetes/client-node only to read this file costs ~87 MiB of
 * resident memory (measured), more than the rest of the kubelet.
 *
 * `readKubeconfig` reads a context; `loadKubeconfig` is what the kubelet asks of it to reach the API
 * server. The node CLI (`tskubelet node --kubeconfig`) reads the same file for its credentials only.
 * Keeping credentials current (files that change, exec plugins) is `credentials.ts`'s job.
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
  /** Absolute paths of the client certificate and key, when both come from files (reloaded). */
  certFile?: string;
  keyFile?: string;
  /** Absolute path of the user's tokenFile (re-read periodically); `token` holds what it read. */
  tokenFile?: string;
  /** The user's exec credential plugin, validated; run by the API client, never here. */
  exec?: ExecConfig;
  /** The user authenticates through an auth provider (gcp, oidc, azure), which is not supported. */
  usesAuthProvider: boolean;
}

/** The ExecCredential API versions client-go accepts (v1alpha1 was removed in client-go 1.24). */
export type ExecApiVersion = 'client.authentication.k8s.io/v1beta1' | 'client.authentication.k8s.io/v1';
export const EXEC_API_VERSIONS: readonly ExecApiVersion[] = [
  'client.authentication.k8s.io/v1beta1',
  'client.authentication.k8s.io/v1',
];
export type ExecInteractiveMode = 'Never' | 'IfAvailable' | 'Always';
const INTERACTIVE_MODES: readonly ExecInteractiveMode[] = ['Never', 'IfAvailable', 'Always'];

const oneOf =
  <T extends string>(values: readonly T[]) =>
  (v: string | undefined): v is T =>
    (values as readonly (string | undefined)[]).includes(v);
const isExecApiVersion = oneOf(EXEC_API_VERSIONS);
const isInteractiveMode = oneOf(INTERACTIVE_MODES);

/**
 * What the plugin is told of the cluster when `provideClusterInfo` is set (client-go's
 * clientauthentication Cluster, JSON names as in ExecCredential's spec.cluster).
 */
export interface ExecClusterInfo {
  server: string;
  'tls-server-name'?: string;
  'insecure-skip-tls-verify'?: boolean;
  /** Base64 of the CA's PEM, as Go encodes []byte. */
  'certificate-authority-data'?: string;
  'proxy-url'?: string;
  'disable-compression'?: boolean;
  /** The cluster's `client.authentication.k8s.io/exec` extension. */
  config?: unknown;
}

/** A user's `exec` stanza (clientcmd api ExecConfig), checked and defaulted. */
export interface ExecConfig {
  /** As written, or absolute when it names a path relative to the kubeconfig (contains a `/`). */
  command: string;
  args: string[];
  env: { name: string; value: string }[];
  apiVersion: ExecApiVersion;
  installHint?: string;
  provideClusterInfo: boolean;
  interactiveMode: ExecInteractiveMode;
  /** Filled in when provideClusterInfo is set. */
  cluster?: ExecClusterInfo;
}

/** What a kubelet needs from a kubeconfig: where the server is, how to trust it, who we are. */
export interface KubeconfigCredentials {
  server: string;
  ca?: Buffer;
  insecureSkipTLSVerify: boolean;
  tlsServerName?: string;
  cert?: Buffer;
  key?: Buffer;
  /** Where cert and key came from, when both are files: reloaded when they change. */
  certFile?: string;
  keyFile?: string;
  /** Authorization header value (Bearer token or Basic), when the user has one. */
  authorization?: string;
  /** The token file the Bearer token came from: re-read periodically (client-go's token source). */
  tokenFile?: string;
  /** The exec plugin that supplies the credentials, when the user has no other. */
  exec?: ExecConfig;
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

const EXEC_INFO_EXTENSION = 'client.authentication.k8s.io/exec';

/**
 * The user's `exec` stanza as clientcmd validates it (validateAuthInfo's messages), with
 * interactiveMode defaulted to IfAvailable for v1beta1 as clientcmd's SetDefaults_ExecConfig does
 * (v1 has no default). Returns the problems instead of throwing so they are reported together.
 */
function parseExec(
  exec: Fields,
  userName: string,
  dir: string,
  cluster: Fields | undefined,
  ca: Buffer | undefined,
): ExecConfig | string[] {
  const problems: string[] = [];
  const command = str(exec, 'command');
  if (!command) problems.push(`command must be specified for ${userName} to use exec authentication plugin`);
  const apiVersion = str(exec, 'apiVersion');
  if (!apiVersion) {
    problems.push(`apiVersion must be specified for ${userName} to use exec authentication plugin`);
  } else if (!isExecApiVersion(apiVersion)) {
    problems.push(`exec plugin: invalid apiVersion ${JSON.stringify(apiVersion)}`);
  }
  const env: { name: string; value: string }[] = [];
  for (const e of Array.isArray(exec.env) ? (exec.env as unknown[]) : []) {
    const name = isFields(e) ? str(e, 'name') : undefined;
    if (!name)
      problems.push(`env variable name must be specified for ${userName} to use exec authentication plugin`);
    else env.push({ name, value: isFields(e) && typeof e.value === 'string' ? e.value : '' });
  }
  let mode = str(exec, 'interactiveMode');
  if (!mode && apiVersion === 'client.authentication.k8s.io/v1beta1') mode = 'IfAvailable';
  if (!mode)
    problems.push(`interactiveMode must be specified for ${userName} to use exec authentication plugin`);
  else if (!isInteractiveMode(mode)) {
    problems.push(`invalid interactiveMode for ${userName}: ${JSON.stringify(mode)}`);
  }
  if (problems.length > 0 || !command || !isExecApiVersion(apiVersion) || !isInteractiveMode(mode)) {
    return problems;
  }
  const args = Array.isArray(exec.args) ? (exec.args as unknown[]).map(String) : [];
  const out: ExecConfig = {
    command: command.includes('/') && !isAbsolute(command) ? join(dir, command) : command,
    args,
    env,
    apiVersion,
    provideClusterInfo: exec.provideClusterInfo === true,
    interactiveMode: mode,
  };
  const installHint = str(exec, 'installHint');
  if (installHint) out.installHint = installHint;
  if (out.provideClusterInfo) {
    const info: ExecClusterInfo = { server: str(cluster, 'server') ?? '' };
    const serverName = str(cluster, 'tls-server-name');
    if (serverName) info['tls-server-name'] = serverName;
    if (cluster?.['insecure-skip-tls-verify'] === true) info['insecure-skip-tls-verify'] = true;
    if (ca) info['certificate-authority-data'] = ca.toString('base64');
    const proxy = str(cluster, 'proxy-url');
    if (proxy) info['proxy-url'] = proxy;
    if (cluster?.['disable-compression'] === true) info['disable-compression'] = true;
    const ext: unknown = Array.isArray(cluster?.extensions)
      ? (cluster.extensions as unknown[]).find((x) => isFields(x) && x.name === EXEC_INFO_EXTENSION)
      : undefined;
    if (isFields(ext) && ext.extension !== undefined) info.config = ext.extension;
    out.cluster = info;
  }
  return out;
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
  const userName = str(ctx, 'user') ?? '';
  const user = entry(doc.users, userName, 'user');

  const dir = dirname(path);
  const resolve = (file: string): string => (isAbsolute(file) ? file : join(dir, file));
  const read = async (file: string, what: string): Promise<Buffer> => {
    try {
      return await readFile(resolve(file));
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
    usesAuthProvider: user?.['auth-provider'] !== undefined,
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
    const certFile = str(user, 'client-certificate');
    const keyFile = str(user, 'client-key');
    if (certFile && keyFile && !str(user, 'client-certificate-data') && !str(user, 'client-key-data')) {
      out.certFile = resolve(certFile);
      out.keyFile = resolve(keyFile);
    }
  }
  const tokenFile = str(user, 'tokenFile');
  if (tokenFile) out.tokenFile = resolve(tokenFile);
  // clientcmd: an inline token wins for the first request; the file is read now and re-read later.
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
  if (isFields(user?.exec)) {
    if (out.usesAuthProvider) {
      return fail(`authProvider cannot be provided in combination with an exec plugin for ${userName}`);
    }
    const exec = parseExec(user.exec, userName, dir, cluster, ca);
    if (Array.isArray(exec)) return fail(exec.join('; '));
    out.exec = exec;
  } else if (user?.exec !== undefined) {
    return fail(`the exec stanza of user ${JSON.stringify(userName)} is not a mapping`);
  }
  return out;
}

/**
 * The current context as the kubelet uses it to reach the API server: the cluster must name a
 * server; auth providers (deprecated upstream, gone in 1.26) are refused. An exec plugin is used
 * only when the user has no other credential, as client-go's exec UpdateTransportConfig does.
 */
export async function loadKubeconfig(path: string): Promise<KubeconfigCredentials> {
  const ctx = await readKubeconfig(path);
  const fail = (msg: string): never => {
    throw new KubeletError('InvalidArgument', `load kubeconfig ${path}`, msg);
  };
  if (!ctx.server) return fail("the current context's cluster has no server");
  if (ctx.usesAuthProvider) {
    return fail(
      'auth-provider credentials are not supported; use a client certificate, a token or an exec plugin',
    );
  }
  const { usesAuthProvider: _provider, token, basicAuth, server, exec, tokenFile, ...tls } = ctx;
  const creds: KubeconfigCredentials = { ...tls, server };
  if (token) {
    creds.authorization = `Bearer ${token}`;
    if (tokenFile) creds.tokenFile = tokenFile;
  } else if (basicAuth) {
    creds.authorization = `Basic ${Buffer.from(`${basicAuth.username}:${basicAuth.password}`).toString('base64')}`;
  }
  if (exec && !creds.authorization && !creds.cert) creds.exec = exec;
  return creds;
}
