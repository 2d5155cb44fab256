/**
 * The certificate managers' metrics (upstream pkg/kubelet/certificate/kubelet.go and
 * cmd/kubelet/app/server.go): the client and serving certificates' TTL gauges, their renewal
 * error counters, and how long each serving certificate lived before it was rotated. Registered when the kubelet makes the manager (as upstream registers them in
 * the managers' constructors), so a kubelet without rotation serves none of them.
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

/** What the certificate managers report (src/certificate, wired by the kubelet). */
export interface CertificateMetrics {
  /** kubelet_certificate_manager_client_ttl_seconds reads `notAfter` (wall ms; undefined: none) at each scrape. */
  setClientCertificate(notAfter: () => number | undefined): void;
  /** kubelet_certificate_manager_client_expiration_renew_errors. */
  clientRenewError(): void;
  /** kubelet_certificate_manager_server_ttl_seconds. */
  setServingCertificate(notAfter: () => number | undefined): void;
  /** kubelet_server_expiration_renew_errors. */
  servingRenewError(): void;
  /**
   * kubelet_certificate_manager_server_rotation_seconds: a serving certificate was replaced after
   * living `seconds` (from its notBefore; upstream certificateRotation.Observe).
   */
  servingRotated(seconds: number): void;
}

/** The rotation histogram's buckets: a minute, an hour, 4 hours, a day, a week, 1, 3 and 6 months, 1 and 4 years. */
export const ROTATION_BUCKETS: readonly number[] = [
  60, 3600, 14400, 86400, 604800, 2592000, 7776000, 15552000, 31104000, 124416000,
];

const TTL_HELP = (which: string) =>
  `[ALPHA] Gauge of the TTL (time-to-live) of the Kubelet's ${which} certificate. The value is in seconds ` +
  `until certificate expiry (negative if already expired). If ${which} certificate is invalid or unused, ` +
  'the value will be +INF.';

export function createCertificateMetrics(
  registry: Registry,
  now: () => number = Date.now,
): CertificateMetrics {
  const ttl = (name: string, which: string, notAfter: () => number | undefined) =>
    new Gauge({
      name,
      help: TTL_HELP(which),
      registers: [registry],
      collect(this: Gauge) {
        const t = notAfter();
        this.set(t === undefined ? Infinity : Math.trunc((t - now()) / 1000));
      },
    });
  let clientErrors: Counter | undefined;
  let servingErrors: Counter | undefined;
  let servingRotation: Histogram | undefined;
  const rotation = () =>
    new Histogram({
      name: 'kubelet_certificate_manager_server_rotation_seconds',
      help: '[ALPHA] Histogram of the number of seconds the previous certificate lived before being rotated.',
      buckets: [...ROTATION_BUCKETS],
      registers: [registry],
    });
  const counter = (name: string) =>
    new Counter({ name, help: '[ALPHA] Counter of certificate renewal errors.', registers: [registry] });
  return {
    setClientCertificate(notAfter) {
      ttl('kubelet_certificate_manager_client_ttl_seconds', 'client', notAfter);
      clientErrors ??= counter('kubelet_certificate_manager_client_expiration_renew_errors');
    },
    clientRenewError() {
      (clientErrors ??= counter('kubelet_certificate_manager_client_expiration_renew_errors')).inc();
    },
    setServingCertificate(notAfter) {
      ttl('kubelet_certificate_manager_server_ttl_seconds', 'serving', notAfter);
      servingErrors ??= counter('kubelet_server_expiration_renew_errors');
      servingRotation ??= rotation();
    },
    servingRenewError() {
      (servingErrors ??= counter('kubelet_server_expiration_renew_errors')).inc();
    },
    servingRotated(seconds) {
      (servingRotation ??= rotation()).observe(seconds);
    },
  };
}
