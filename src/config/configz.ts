/**
 * The effective configuration as a KubeletConfiguration v1beta1 object, for `/configz` (upstream
 * serves `{"kubeletconfig": …}` with its internal config). Field names are upstream's; durations
 * are Go duration strings. Flag-only settings (root dir, node name, kubeconfig) are not fields.
 */
import { formatGoDuration } from './duration.ts';
import type { KubeletConfig } from './kubelet-config.ts';

export function toKubeletConfiguration(c: KubeletConfig): Record<string, unknown> {
  const d = formatGoDuration;
  const s = c.server;
  return {
    kind: 'KubeletConfiguration',
    apiVersion: 'kubelet.config.k8s.io/v1beta1',
    enableServer: s.enableServer,
    ...(c.staticPodPath ? { staticPodPath: c.staticPodPath } : {}),
    ...(c.staticPodURL ? { staticPodURL: c.staticPodURL } : {}),
    syncFrequency: d(c.syncFrequencyMs),
    fileCheckFrequency: d(c.fileCheckFrequencyMs),
    httpCheckFrequency: d(c.httpCheckFrequencyMs),
    address: c.address,
    port: c.port,
    readOnlyPort: c.readOnlyPort,
    ...(s.tlsCertFile ? { tlsCertFile: s.tlsCertFile, tlsPrivateKeyFile: s.tlsPrivateKeyFile } : {}),
    authentication: {
      x509: s.authentication.clientCAFile ? { clientCAFile: s.authentication.clientCAFile } : {},
      webhook: { enabled: s.authentication.webhook, cacheTTL: d(s.authentication.webhookCacheTTLMs) },
      anonymous: { enabled: s.authentication.anonymous },
    },
    authorization: {
      mode: s.authorization.mode,
      webhook: {
        cacheAuthorizedTTL: d(s.authorization.cacheAuthorizedTTLMs),
        cacheUnauthorizedTTL: d(s.authorization.cacheUnauthorizedTTLMs),
      },
    },
    registryPullQPS: c.registryPullQPS,
    registryBurst: c.registryBurst,
    eventRecordQPS: c.eventRecordQPS,
    eventBurst: c.eventBurst,
    enableDebuggingHandlers: s.enableDebuggingHandlers,
    healthzPort: c.healthzPort,
    healthzBindAddress: c.healthzBindAddress,
    resolvConf: c.resolvConf,
    clusterDomain: c.clusterDomain,
    clusterDNS: [...c.clusterDNS],
    streamingConnectionIdleTimeout: d(s.streamingConnectionIdleTimeoutMs),
    nodeStatusUpdateFrequency: d(c.nodeStatusUpdateFrequencyMs),
    nodeStatusReportFrequency: d(c.nodeStatusReportFrequencyMs),
    nodeLeaseDurationSeconds: c.nodeLeaseDurationSeconds,
    cgroupsPerQOS: c.cgroupsPerQOS,
    cgroupRoot: c.cgroupRoot,
    cgroupDriver: c.cgroupDriver,
    runtimeRequestTimeout: d(c.runtimeRequestTimeoutMs),
    maxPods: c.maxPods,
    podPidsLimit: c.podPidsLimit,
    cpuCFSQuota: c.cpuCFSQuota,
    cpuCFSQuotaPeriod: d(c.cpuCFSQuotaPeriodMs),
    nodeStatusMaxImages: c.nodeStatusMaxImages,
    configMapAndSecretChangeDetectionStrategy: c.configMapAndSecretChangeDetectionStrategy,
    imageGCHighThresholdPercent: c.imageGCHighThresholdPercent,
    imageGCLowThresholdPercent: c.imageGCLowThresholdPercent,
    imageMinimumGCAge: d(c.imageMinimumGCAgeMs),
    volumeStatsAggPeriod: d(c.volumeStatsAggPeriodMs),
    evictionHard: { ...c.evictionHard },
    evictionSoft: { ...c.evictionSoft },
    evictionSoftGracePeriod: { ...c.evictionSoftGracePeriod },
    evictionPressureTransitionPeriod: d(c.evictionPressureTransitionPeriodMs),
    evictionMaxPodGracePeriod: c.evictionMaxPodGracePeriodSeconds,
    evictionMinimumReclaim: { ...c.evictionMinimumReclaim },
    serializeImagePulls: c.serializeImagePulls,
    ...(c.maxParallelImagePulls !== undefined ? { maxParallelImagePulls: c.maxParallelImagePulls } : {}),
    kubeAPIQPS: c.kubeAPIQPS,
    kubeAPIBurst: c.kubeAPIBurst,
    containerLogMaxSize: String(s.containerLogMaxSizeBytes),
    containerLogMaxFiles: s.containerLogMaxFiles,
    enforceNodeAllocatable: [...c.enforceNodeAllocatable],
    allowedUnsafeSysctls: [...c.allowedUnsafeSysctls],
    registerNode: c.registerNode,
    registerWithTaints: c.registerWithTaints.map((t) => ({ ...t })),
    seccompDefault: c.seccompDefault,
    podLogsDir: c.podLogsDir,
    containerRuntimeEndpoint: c.containerRuntimeEndpoint,
    enableSystemLogHandler: s.enableSystemLogHandler,
    logging: { format: c.logFormat, verbosity: c.verbosity },
    shutdownGracePeriod: d(c.shutdownGracePeriodMs),
    shutdownGracePeriodCriticalPods: d(c.shutdownGracePeriodCriticalPodsMs),
  };
}
