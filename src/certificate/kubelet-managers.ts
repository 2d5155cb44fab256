/**
 * The kubelet's two certificate managers (upstream pkg/kubelet/certificate/kubelet.go
 * NewKubeletClientCertificateManager, NewKubeletServerCertificateManager): the client certificate
 * (`kubelet-client-*.pem`, signer kube-apiserver-client-kubelet) and the serving certificate
 * (`kubelet-server-*.pem`, signer kubelet-serving, the node's addresses as SANs).
 */
import { isIP } from 'node:net';
import type { ApiClient } from '../api/client-types.ts';
import type { Logger } from '../util/logger.ts';
import { nodeClientTemplate } from './bootstrap.ts';
import type { CsrTemplate } from './csr.ts';
import { SERVING_TEMPLATE_RECHECK_MS, createCertificateManager, type CertificateManager } from './manager.ts';
import { CLIENT_KUBELET_SIGNER, CLIENT_USAGES, KUBELET_SERVING_SIGNER, SERVING_USAGES } from './request.ts';
import { createFileStore } from './store.ts';

/** A Node status address (core/v1 NodeAddress). */
export interface NodeAddress {
  type: string;
  address: string;
}

interface Common {
  /** --cert-dir. */
  certDir: string;
  nodeName: string;
  api: ApiClient;
  logger: Logger;
  onRenewError?: () => void;
  now?: () => number;
}

/**
 * The client certificate's manager: the store's current pair (or `certFile`/`keyFile`, the
 * kubeconfig's, when the store has none), renewed with the same subject.
 */
export function createClientCertificateManager(
  opts: Common & { certFile?: string; keyFile?: string },
): Promise<CertificateManager> {
  const store = createFileStore({
    prefix: 'kubelet-client',
    dir: opts.certDir,
    ...(opts.certFile && opts.keyFile ? { certFile: opts.certFile, keyFile: opts.keyFile } : {}),
    ...(opts.now ? { now: opts.now } : {}),
    logger: opts.logger,
  });
  const template = nodeClientTemplate(opts.nodeName);
  return createCertificateManager({
    name: CLIENT_KUBELET_SIGNER,
    store,
    api: opts.api,
    signerName: CLIENT_KUBELET_SIGNER,
    usages: CLIENT_USAGES,
    template: () => template,
    logger: opts.logger,
    ...(opts.now ? { now: opts.now } : {}),
    ...(opts.onRenewError ? { onRenewError: opts.onRenewError } : {}),
  });
}

/**
 * What a serving certificate asks for (upstream newGetTemplateFn + addressesToHostnamesAndIPs):
 * Hostname/InternalDNS/ExternalDNS addresses as DNS names, Internal/ExternalIP (and a Hostname
 * that is an IP) as IPs, each sorted; undefined while the node has no IP address (upstream's
 * default without the AllowDNSOnlyNodeCSR gate).
 */
export function servingTemplate(
  nodeName: string,
  addresses: readonly NodeAddress[],
): CsrTemplate | undefined {
  const dns = new Set<string>();
  const ips = new Set<string>();
  for (const a of addresses) {
    if (a.address === '') continue;
    switch (a.type) {
      case 'Hostname':
        (isIP(a.address) ? ips : dns).add(a.address);
        break;
      case 'InternalIP':
      case 'ExternalIP':
        if (isIP(a.address)) ips.add(a.address);
        break;
      case 'InternalDNS':
      case 'ExternalDNS':
        dns.add(a.address);
        break;
      default:
        break;
    }
  }
  if (ips.size === 0) return undefined;
  return {
    ...nodeClientTemplate(nodeName),
    dnsNames: [...dns].sort(),
    ips: [...ips].sort(),
  };
}

/**
 * The serving certificate's manager. `addresses` is read at each decision (the node status's
 * last addresses, upstream getLastObservedNodeAddresses): a new address is a rotation.
 */
export function createServingCertificateManager(
  opts: Common & {
    addresses: () => readonly NodeAddress[];
    /** tlsCertFile / tlsPrivateKeyFile: served until the first issue (upstream passes them to the store). */
    certFile?: string;
    keyFile?: string;
    templateRecheckMs?: number;
  },
): Promise<CertificateManager> {
  const store = createFileStore({
    prefix: 'kubelet-server',
    dir: opts.certDir,
    ...(opts.certFile && opts.keyFile ? { certFile: opts.certFile, keyFile: opts.keyFile } : {}),
    ...(opts.now ? { now: opts.now } : {}),
    logger: opts.logger,
  });
  return createCertificateManager({
    name: KUBELET_SERVING_SIGNER,
    store,
    api: opts.api,
    signerName: KUBELET_SERVING_SIGNER,
    usages: SERVING_USAGES,
    template: () => servingTemplate(opts.nodeName, opts.addresses()),
    templateRecheckMs: opts.templateRecheckMs ?? SERVING_TEMPLATE_RECHECK_MS,
    logger: opts.logger,
    ...(opts.now ? { now: opts.now } : {}),
    ...(opts.onRenewError ? { onRenewError: opts.onRenewError } : {}),
  });
}
