/**
 * The kubelet's certificates (upstream pkg/kubelet/certificate and its bootstrap/ package): TLS
 * bootstrap of the client certificate, and the managers that rotate the client and the serving
 * certificate through CertificateSigningRequests, stored as client-go's file store does.
 */
export {
  BOOTSTRAP_WAIT_TIMEOUT_MS,
  kubeconfigUsesStore,
  loadClientCert,
  nodeClientTemplate,
  type BootstrapOptions,
  type BootstrapResult,
} from './bootstrap.ts';
export { createCertificateManager, rotationDeadline, type CertificateManager } from './manager.ts';
export { createFileStore, type CertificatePair, type FileStore } from './store.ts';
export {
  createClientCertificateManager,
  createServingCertificateManager,
  servingTemplate,
} from './kubelet-managers.ts';
export type { CsrTemplate } from './csr.ts';
