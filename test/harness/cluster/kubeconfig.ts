/**
 * Kubeconfig files for the cluster bed's identities. Certificates are embedded (`*-data`), so a
 * kubeconfig stays valid when copied elsewhere and every client library can read it.
 */
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { stringify } from 'yaml';
import { CLUSTER_NAME } from './paths.ts';
import type { KeyPair } from './certs.ts';

async function base64Of(path: string): Promise<string> {
  return (await readFile(path)).toString('base64');
}

export function kubeconfigText(opts: {
  server: string;
  caData: string;
  user: string;
  certData: string;
  keyData: string;
}): string {
  return stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      { name: CLUSTER_NAME, cluster: { server: opts.server, 'certificate-authority-data': opts.caData } },
    ],
    users: [
      {
        name: opts.user,
        user: { 'client-certificate-data': opts.certData, 'client-key-data': opts.keyData },
      },
    ],
    contexts: [{ name: CLUSTER_NAME, context: { cluster: CLUSTER_NAME, user: opts.user } }],
    'current-context': CLUSTER_NAME,
    preferences: {},
  });
}

/** Writes (atomically, mode 0600, only when the content changed) a kubeconfig for `client`. */
export async function writeKubeconfig(
  path: string,
  opts: { server: string; caFile: string; user: string; client: KeyPair },
): Promise<string> {
  const text = kubeconfigText({
    server: opts.server,
    caData: await base64Of(opts.caFile),
    user: opts.user,
    certData: await base64Of(opts.client.cert),
    keyData: await base64Of(opts.client.key),
  });
  const current = await readFile(path, 'utf8').catch((err: unknown) => {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  });
  if (current !== text) {
    await mkdir(dirname(path), { recursive: true, mode: 0o700 });
    const tmp = `${path}.${process.pid}.tmp`;
    await writeFile(tmp, text, { mode: 0o600 });
    await rename(tmp, path);
  }
  return path;
}
