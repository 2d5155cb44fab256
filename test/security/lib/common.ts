/**
 * What the attacker suite's node setups share: the probed pod's shape, test certificates handed
 * to nobody, CRI exec into the probed container, waits (free ports: test/kit/net.ts). No upstream counterpart.
 */
import { chmod, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { ensureCa, ensureCert, type KeyPair } from '../../harness/cluster/certs.ts';
import type { CriClient } from '../../../src/runtime/cri/index.ts';
import { LABEL_CONTAINER_NAME, LABEL_POD_NAME, LABEL_POD_NAMESPACE } from '../../../src/config/defaults.ts';
import { nullLogger } from '../../../src/util/logger.ts';
import { handOver } from './as-nobody.ts';
import type { Credential, PodRef } from './target.ts';

/** What the probed pod's container leaves behind: in its log, its volumes, its environment. */
export const SECRET_MARKERS = {
  log: 'sec-log-line-5c1b',
  env: 'sec-env-value-77e0',
  emptyDir: 'sec-emptydir-19aa',
  tmpfs: 'sec-tmpfs-42d3',
  secret: 'sec-secret-value-8f2c',
} as const;

/** The probed container's command: writes a marker into each volume and its log, then sleeps. */
export const VICTIM_SCRIPT =
  `echo ${SECRET_MARKERS.log}; ` +
  `echo ${SECRET_MARKERS.emptyDir} > /data/secret.txt; echo ${SECRET_MARKERS.tmpfs} > /mem/secret.txt; ` +
  'exec sleep 3600';

/** A directory every user may enter and read (the suite's own files for nobody). */
export async function openDir(path: string): Promise<string> {
  await mkdir(path, { recursive: true });
  await chmod(path, 0o755);
  return path;
}

/** A CA of the suite's own (standalone client CAs, the untrusted "foreign" CA). */
export async function testCa(dir: string, name: string): Promise<KeyPair> {
  return ensureCa(dir, name, `tskubelet-security-${name}`, nullLogger);
}

/** A client certificate (CN = user) from `ca`, handed to nobody. */
export async function clientCert(
  ca: KeyPair,
  pkiDir: string,
  nobodyDir: string,
  user: string,
): Promise<{ own: KeyPair; nobody: Credential }> {
  const own = await ensureCert(ca, pkiDir, { name: user, commonName: user, usage: 'client' }, nullLogger);
  return { own, nobody: { cert: await handOver(own, join(nobodyDir, user)) } };
}

/** A serving certificate for 127.0.0.1 and the node name (`--tls-cert-file`). */
export async function servingCert(ca: KeyPair, dir: string, node: string): Promise<KeyPair> {
  return ensureCert(
    ca,
    dir,
    {
      name: `${node}-serving`,
      commonName: node,
      usage: 'server',
      dnsNames: [node],
      ipAddresses: ['127.0.0.1'],
    },
    nullLogger,
  );
}

/** Runs `cmd` in the pod's running container through CRI (the container's owner, not the kubelet API). */
export async function criExec(cri: CriClient, pod: PodRef, cmd: readonly string[]): Promise<string> {
  const found = await cri.runtime.listContainers({
    state: { state: 'CONTAINER_RUNNING' },
    labelSelector: {
      [LABEL_POD_NAMESPACE]: pod.namespace,
      [LABEL_POD_NAME]: pod.name,
      [LABEL_CONTAINER_NAME]: pod.container,
    },
  });
  const c = found[0];
  if (!c) throw new Error(`no running container ${pod.container} in ${pod.namespace}/${pod.name}`);
  const r = await cri.runtime.execSync(c.id, [...cmd], 30);
  if (r.exitCode !== 0) {
    throw new Error(
      `${cmd.join(' ')} exited ${r.exitCode}: ${Buffer.concat([r.stdout, r.stderr]).toString()}`,
    );
  }
  return r.stdout.toString('utf8');
}
