/**
 * The credentials of a kubeconfig's current context, for talking to a kubelet over HTTPS: client
 * certificate and key (files or inline data), or a bearer token (inline or a token file); the
 * cluster's CA and `insecure-skip-tls-verify`. Relative paths are relative to the kubeconfig file.
 * The server is not taken from it: a kubeconfig names the API server, not a kubelet.
 */
import { readFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { parse } from 'yaml';

export interface KubeletCredentials {
  cert?: Buffer;
  key?: Buffer;
  token?: string;
  ca?: Buffer;
  insecureSkipTLSVerify: boolean;
}

interface Named<T> {
  name?: string;
  [k: string]: unknown;
  value?: T;
}

type Fields = Record<string, unknown>;

function entry(list: unknown, name: string | undefined, field: string): Fields | undefined {
  if (!Array.isArray(list)) return undefined;
  const found = (list as Named<unknown>[]).find((e) => e && e.name === name);
  const v = found?.[field];
  return typeof v === 'object' && v !== null ? (v as Fields) : undefined;
}

function str(f: Fields | undefined, key: string): string | undefined {
  const v = f?.[key];
  return typeof v === 'string' && v !== '' ? v : undefined;
}

/** Reads the current context's user and cluster credentials from the kubeconfig at `path`. */
export async function loadKubeconfig(path: string, context?: string): Promise<KubeletCredentials> {
  let doc: unknown;
  try {
    doc = parse(await readFile(path, 'utf8'));
  } catch (err) {
    throw new Error(`cannot read kubeconfig ${path}: ${err instanceof Error ? err.message : String(err)}`, {
      cause: err,
    });
  }
  if (typeof doc !== 'object' || doc === null)
    throw new Error(`kubeconfig ${path} is empty or not a mapping`);
  const cfg = doc as Fields;
  const ctxName =
    context ?? (typeof cfg['current-context'] === 'string' ? cfg['current-context'] : undefined);
  const ctx = entry(cfg.contexts, ctxName, 'context');
  if (!ctx) throw new Error(`kubeconfig ${path}: context ${JSON.stringify(ctxName ?? '')} not found`);
  const user = entry(cfg.users, str(ctx, 'user'), 'user');
  const cluster = entry(cfg.clusters, str(ctx, 'cluster'), 'cluster');
  const base = dirname(resolve(path));
  const fileOrData = async (f: Fields | undefined, fileKey: string, dataKey: string) => {
    const data = str(f, dataKey);
    if (data) return Buffer.from(data, 'base64');
    const file = str(f, fileKey);
    if (!file) return undefined;
    try {
      return await readFile(resolve(base, file));
    } catch (err) {
      throw new Error(
        `kubeconfig ${path}: ${fileKey} ${file}: ${err instanceof Error ? err.message : String(err)}`,
        {
          cause: err,
        },
      );
    }
  };
  const cert = await fileOrData(user, 'client-certificate', 'client-certificate-data');
  const key = await fileOrData(user, 'client-key', 'client-key-data');
  let token = str(user, 'token');
  const tokenFile = str(user, 'tokenFile');
  if (!token && tokenFile) token = (await readFile(resolve(base, tokenFile), 'utf8')).trim();
  const ca = await fileOrData(cluster, 'certificate-authority', 'certificate-authority-data');
  if ((cert === undefined) !== (key === undefined)) {
    throw new Error(
      `kubeconfig ${path}: user has a client certificate without a key, or a key without a certificate`,
    );
  }
  return {
    ...(cert ? { cert } : {}),
    ...(key ? { key } : {}),
    ...(token ? { token } : {}),
    ...(ca ? { ca } : {}),
    insecureSkipTLSVerify: cluster?.['insecure-skip-tls-verify'] === true,
  };
}
