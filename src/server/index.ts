/**
 * The kubelet's HTTP surfaces: the healthz listener (127.0.0.1:10248, `/healthz` only), and the
 * kubelet API (HTTPS on 10250, authenticated and authorized; plain-HTTP read-only port).
 */
export { createLocalServer, type LocalServer, type ServerHandlers } from './server.ts';
export { createKubeletApi, type KubeletApiOptions } from './kubelet-api.ts';
export type { KubeletServer, RequestMetrics, ServingCertificateSource } from './kubelet-server.ts';
export type { HostPod, KubeletApiHost, TextBody } from './host.ts';
export type { LocalEvent } from './pod-events.ts';
export { requestUser } from './request-user.ts';
