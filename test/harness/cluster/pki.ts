/**
 * The cluster bed's PKI, as `kubeadm init phase certs` and `kubeconfig` lay it out: the CA, the
 * front-proxy CA, every component's certificate, the service-account key, and the admin and
 * component kubeconfigs.
 */
import { hostname } from 'node:os';
import { join } from 'node:path';
import type { Logger } from '../../../src/util/logger.ts';
import type { KeyPair } from './certs.ts';
import { ensureCa, ensureCert, ensureServiceAccountKey } from './certs.ts';
import { writeKubeconfig } from './kubeconfig.ts';
import {
  CLUSTER_HOST,
  CLUSTER_PATHS,
  CLUSTER_PORTS,
  KUBERNETES_SERVICE_IP,
  NODE_VM_HOST_ADDRESS,
} from './paths.ts';

/** Every file the components are started with. */
export interface ClusterPki {
  ca: KeyPair;
  apiserver: KeyPair;
  /**
   * The aggregation layer's request-header CA and the apiserver's client cert under it; without
   * them every component logs errors about a missing requestheader CA bundle.
   */
  frontProxyCa: KeyPair;
  frontProxyClient: KeyPair;
  /** The apiserver's client identity towards kubelets (logs, exec, port-forward). */
  apiserverKubeletClient: KeyPair;
  serviceAccount: { key: string; pub: string };
  admin: KeyPair;
  controllerManager: KeyPair;
  scheduler: KeyPair;
}

/** The front-proxy client's CN, which the apiserver's requestheader-allowed-names names. */
export const FRONT_PROXY_CLIENT = 'front-proxy-client';
/** The API server's URL on the bed. */
export const SERVER = `https://${CLUSTER_HOST}:${CLUSTER_PORTS.apiserver}`;

function pair(name: string): KeyPair {
  return { cert: join(CLUSTER_PATHS.pki, `${name}.crt`), key: join(CLUSTER_PATHS.pki, `${name}.key`) };
}

/** Where `ensurePki` keeps each file (whether or not it exists yet). */
export function pkiPaths(): ClusterPki {
  return {
    ca: pair('ca'),
    apiserver: pair('apiserver'),
    frontProxyCa: pair('front-proxy-ca'),
    frontProxyClient: pair('front-proxy-client'),
    apiserverKubeletClient: pair('apiserver-kubelet-client'),
    serviceAccount: { key: join(CLUSTER_PATHS.pki, 'sa.key'), pub: join(CLUSTER_PATHS.pki, 'sa.pub') },
    admin: pair('admin'),
    controllerManager: pair('controller-manager'),
    scheduler: pair('scheduler'),
  };
}

/**
 * Makes (or keeps) the CA, every component certificate, and the admin / component kubeconfigs.
 * `changed`: some file was (re)made, so running components hold stale ones. `identityChanged`: the
 * CA or the service-account key is new, so what etcd stores (token secrets, root CA config maps)
 * no longer verifies.
 */
export async function ensurePki(
  logger: Logger,
): Promise<{ pki: ClusterPki; changed: boolean; identityChanged: boolean }> {
  const dir = CLUSTER_PATHS.pki;
  const ca = await ensureCa(dir, 'ca', 'tskubelet-bed-ca', logger);
  const frontProxyCa = await ensureCa(dir, 'front-proxy-ca', 'tskubelet-bed-front-proxy-ca', logger);
  const frontProxyClient = await ensureCert(
    frontProxyCa,
    dir,
    { name: 'front-proxy-client', commonName: FRONT_PROXY_CLIENT, usage: 'client' },
    logger,
  );
  const apiserver = await ensureCert(
    ca,
    dir,
    {
      name: 'apiserver',
      commonName: 'kube-apiserver',
      usage: 'server',
      dnsNames: [
        'localhost',
        'kubernetes',
        'kubernetes.default',
        'kubernetes.default.svc',
        'kubernetes.default.svc.cluster.local',
        ...new Set([hostname(), hostname().split('.')[0] ?? hostname()]),
      ],
      ipAddresses: [CLUSTER_HOST, KUBERNETES_SERVICE_IP, NODE_VM_HOST_ADDRESS],
    },
    logger,
  );
  const client = (name: string, commonName: string, organizations: string[] = []) =>
    ensureCert(ca, dir, { name, commonName, organizations, usage: 'client' }, logger);
  const pki = {
    ca,
    apiserver,
    frontProxyCa,
    frontProxyClient,
    apiserverKubeletClient: await client('apiserver-kubelet-client', 'kube-apiserver-kubelet-client', [
      'system:masters',
    ]),
    serviceAccount: await ensureServiceAccountKey(dir, logger),
    admin: await client('admin', 'admin', ['system:masters']),
    // In system:masters because it runs without --use-service-account-credentials (see componentSpec).
    controllerManager: await client('controller-manager', 'system:kube-controller-manager', [
      'system:masters',
    ]),
    scheduler: await client('scheduler', 'system:kube-scheduler'),
  };
  const changed =
    ca.created ||
    apiserver.created ||
    frontProxyCa.created ||
    frontProxyClient.created ||
    pki.apiserverKubeletClient.created ||
    pki.serviceAccount.created ||
    pki.admin.created ||
    pki.controllerManager.created ||
    pki.scheduler.created;
  const kubeconfig = (path: string, user: string, pair: KeyPair) =>
    writeKubeconfig(path, { server: SERVER, caFile: ca.cert, user, client: pair });
  await kubeconfig(CLUSTER_PATHS.adminKubeconfig, 'admin', pki.admin);
  await kubeconfig(
    CLUSTER_PATHS.controllerManagerKubeconfig,
    'system:kube-controller-manager',
    pki.controllerManager,
  );
  await kubeconfig(CLUSTER_PATHS.schedulerKubeconfig, 'system:kube-scheduler', pki.scheduler);
  return { pki, changed, identityChanged: ca.created || pki.serviceAccount.created };
}
