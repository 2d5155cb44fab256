/**
 * The cluster-mode half of `tskubelet run` (--kubeconfig): the API clients and everything that
 * talks to the API server, built for `runKubelet` (run.ts) to wire into the kubelet.
 */
import type { KubeletConfig } from '../config/index.ts';
import type { Logger } from '../util/logger.ts';
import { monotonicNow } from '../util/clock.ts';
import type { ImageService } from '../runtime/cri/index.ts';
import type { EventType } from '../api/events.ts';
import { createApiSource, type PodSource } from '../podsource/index.ts';
import type { Kubelet } from './kubelet.ts';
import type { ApiClient } from '../api/client-types.ts';
import { createApiClient } from '../api/client.ts';
import { createApiEventRecorder, type ApiEventRecorder } from '../api/event-recorder.ts';
import { createApiObjectSource, objectTTLSeconds, type PodObjectManager } from '../api/object-source.ts';
import { registerSnapshots } from '../api/pod-registration.ts';
import { createServiceInformer } from '../api/service-informer.ts';
import { createRuntimeClassInformer } from '../api/runtime-class-informer.ts';
import { createMirrorPods } from './mirror-pods.ts';
import { createNodeAgent } from '../node/index.ts';
import { KUBERNETES_API_VERSION } from '../config/defaults.ts';
import type { KubeletMetrics, RestClientRequest } from '../metrics/index.ts';
import { tapApiRecorder, type EventRing } from '../console/index.ts';
import type { NodeAllocatablePlan } from './node-allocatable.ts';
import {
  createClientCertificateManager,
  createServingCertificateManager,
  kubeconfigUsesStore,
  loadClientCert,
  type CertificateManager,
} from '../certificate/index.ts';

/**
 * The source as the kubelet sees it, except that each snapshot first registers its pods' Secrets
 * and ConfigMaps with the managers (upstream's pod manager does so on every pod update).
 */
export function registeringObjects(source: PodSource, objects: PodObjectManager): PodSource {
  return {
    name: source.name,
    start(send) {
      const register = registerSnapshots(objects);
      source.start((pods) => {
        register(pods);
        send(pods);
      });
    },
    stop: () => source.stop(),
  };
}

/** The kubelet version reported in the Node object: the Kubernetes API level we implement + ours. */
export function reportedKubeletVersion(version: string): string {
  return `${KUBERNETES_API_VERSION}-tskubelet.${version.replace(/^v/, '')}`;
}

/** Events on this kubelet's Node (upstream nodeRef: the node name doubles as UID). */
export function nodeEventRecorder(recorder: ApiEventRecorder, nodeName: string) {
  const ref = { apiVersion: 'v1', kind: 'Node', name: nodeName, uid: nodeName };
  return (type: EventType, reason: string, message: string) => recorder.eventFor(ref, type, reason, message);
}

/**
 * Cluster mode (--kubeconfig): two API clients (pods/status/events, and heartbeats on their own so
 * they never queue behind pod traffic), the API pod source, events to the API, mirror pods, volume
 * objects, and the node agent (registration, node status, Lease). Nothing is started here.
 */
export async function connectCluster(
  config: KubeletConfig,
  logger: Logger,
  version: string,
  imageService: ImageService,
  metrics: KubeletMetrics,
  events: EventRing,
  allocatable: NodeAllocatablePlan,
) {
  const kubeconfig = config.kubeconfig ?? '';
  // TLS bootstrap (upstream bootstrap.LoadClientCert, before any client is built): a missing or
  // expired kubeconfig is made from --bootstrap-kubeconfig through a CSR.
  if (config.bootstrapKubeconfig) {
    await loadClientCert({
      kubeconfigPath: kubeconfig,
      bootstrapKubeconfigPath: config.bootstrapKubeconfig,
      certDir: config.certDirectory,
      nodeName: config.nodeName,
      logger,
    });
  }
  const client = {
    kubeconfig,
    logger,
    qps: config.kubeAPIQPS,
    burst: config.kubeAPIBurst,
    onRequestDone: (r: RestClientRequest) => metrics.restClient.requestDone(r),
  };
  const api = await createApiClient(client);
  const leaseApi = await createApiClient(client);
  logger.info('cluster mode', { server: api.server, nodeName: config.nodeName });
  const recorder = tapApiRecorder(
    createApiEventRecorder({
      api,
      nodeName: config.nodeName,
      logger,
      qps: config.eventRecordQPS,
      burst: config.eventBurst,
    }),
    events,
  );
  let kubelet: Kubelet | undefined;
  let connectionClosures = 0;
  let lastClosureLogMs = -Infinity;
  const nodeAgent = createNodeAgent({
    api,
    leaseApi,
    logger,
    recorder,
    nodeName: config.nodeName,
    registerNode: config.registerNode,
    ...(config.nodeIP ? { nodeIP: config.nodeIP.split(',')[0]?.trim() } : {}),
    maxPods: config.maxPods,
    rootDir: config.rootDir,
    kubeletVersion: reportedKubeletVersion(version),
    kubeletPort: config.port,
    labels: { ...config.nodeLabels },
    taints: config.registerWithTaints.map((t) => ({ ...t })),
    nodeStatusUpdateFrequencyMs: config.nodeStatusUpdateFrequencyMs,
    nodeStatusReportFrequencyMs: config.nodeStatusReportFrequencyMs,
    nodeLeaseDurationSeconds: config.nodeLeaseDurationSeconds,
    nodeStatusMaxImages: config.nodeStatusMaxImages,
    // Allocatable: capacity − systemReserved − kubeReserved − the hard memory and nodefs thresholds.
    reserved: allocatable.reserved,
    evictionHard: allocatable.evictionHard,
    listImages: (signal) => imageService.listImages(undefined, { signal }),
    // Upstream closeAllConns: connections a partition froze (watches included) are not waited on.
    onRepeatedHeartbeatFailure: () => {
      // Called on every failed retry of both heartbeats: said once a minute, the rest at debug.
      connectionClosures++;
      const now = monotonicNow();
      if (now - lastClosureLogMs >= 60_000) {
        lastClosureLogMs = now;
        logger.info('heartbeats failing repeatedly; closing every API connection', { connectionClosures });
      } else {
        logger.debug('heartbeats still failing; closing every API connection again', { connectionClosures });
      }
      api.closeConnections();
      leaseApi.closeConnections();
    },
    inputs: {
      runtimeReady: () => kubelet?.runtimeReady() ?? { ok: false, message: 'kubelet is starting' },
      runtimeVersion: () => kubelet?.runtimeVersion() ?? '',
      pressure: () => kubelet?.pressure() ?? { memory: false, disk: false, pid: false },
      nodeShutdownError: () => kubelet?.nodeShutdownError(),
    },
  });
  const mirrorPods = createMirrorPods({
    api,
    logger,
    nodeName: config.nodeName,
    nodeUID: () => nodeAgent.node()?.metadata.uid,
  });
  const source = createApiSource({
    api,
    nodeName: config.nodeName,
    logger: logger.child({ source: 'api' }),
    onMirrorPods: (pods) => kubelet?.setMirrorPods(pods),
  });
  const volumeObjects = createApiObjectSource({
    api,
    strategy: config.configMapAndSecretChangeDetectionStrategy,
    logger: logger.child({ component: 'secrets-configmaps' }),
    nodeTtlSeconds: () => objectTTLSeconds(nodeAgent.node()?.metadata.annotations),
  });
  logger.info('secret and configMap change detection', {
    strategy: config.configMapAndSecretChangeDetectionStrategy,
  });
  // Service-link env vars; pods from the API wait for its first list (upstream serviceHasSynced).
  const services = createServiceInformer({ api, logger: logger.child({ informer: 'services' }) });
  // Upstream's runtimeclass.Manager: an informer of node.k8s.io/v1 RuntimeClasses (no resync).
  const runtimeClasses = createRuntimeClassInformer({
    api,
    logger: logger.child({ informer: 'runtimeclasses' }),
  });
  const certificates = await certificateManagers(config, logger, [api, leaseApi], metrics, () =>
    (nodeAgent.node()?.status?.addresses ?? []).map((a) => ({ type: a.type, address: a.address })),
  );
  return {
    api,
    certificates,
    recorder,
    nodeAgent,
    mirrorPods,
    source,
    services,
    runtimeClasses,
    volumeObjects,
    bind(k: Kubelet) {
      kubelet = k;
    },
    /** Starts the certificate rotation loops (rotateCertificates, serverTLSBootstrap). */
    startCertificates() {
      certificates.client?.start();
      certificates.serving?.start();
    },
    async close() {
      await certificates.client?.stop();
      await certificates.serving?.stop();
      await services.stop();
      await runtimeClasses.stop();
      await volumeObjects.stop();
      await nodeAgent.stop();
      await recorder.stop();
      api.close();
      leaseApi.close();
    },
  };
}

/**
 * The certificate managers the config asks for (upstream cmd/kubelet/app buildClientCertificateManager
 * with rotateCertificates; NewMainKubelet's serverCertificateManager with serverTLSBootstrap), with
 * their metrics. The client manager renews `<cert-dir>/kubelet-client-current.pem`; the API client
 * reads that file through the kubeconfig, so a kubeconfig naming other files does not follow.
 */
async function certificateManagers(
  config: KubeletConfig,
  logger: Logger,
  clients: readonly [ApiClient, ...ApiClient[]],
  metrics: KubeletMetrics,
  addresses: () => { type: string; address: string }[],
): Promise<{ client?: CertificateManager; serving?: CertificateManager }> {
  const [api] = clients;
  const out: { client?: CertificateManager; serving?: CertificateManager } = {};
  const common = { certDir: config.certDirectory, nodeName: config.nodeName, api };
  if (config.rotateCertificates) {
    const client = await createClientCertificateManager({
      ...common,
      logger: logger.child({ component: 'client-certificate' }),
      onRenewError: () => metrics.certificates.clientRenewError(),
    });
    metrics.certificates.setClientCertificate(() => client.current()?.notAfter);
    const kubeconfig = config.kubeconfig ?? '';
    if (!(await kubeconfigUsesStore(kubeconfig, config.certDirectory))) {
      logger.warn(
        'rotateCertificates: the kubeconfig does not name <cert-dir>/kubelet-client-current.pem; ' +
          "rotated client certificates are stored there but the API client keeps the kubeconfig's",
        { kubeconfig, certDir: config.certDirectory },
      );
    }
    // Every API client reloads its certificate files at once (they also check every 10 s);
    // connections made with the old certificate drain, watches are not cut.
    client.onRotated((pair) => {
      logger.info('client certificate rotated; the API clients switch to it', {
        notAfter: new Date(pair.notAfter).toISOString(),
      });
      for (const c of clients) void c.reloadCredentials();
    });
    out.client = client;
  }
  if (config.serverTLSBootstrap) {
    const serving = await createServingCertificateManager({
      ...common,
      logger: logger.child({ component: 'serving-certificate' }),
      addresses,
      ...(config.server.tlsCertFile && config.server.tlsPrivateKeyFile
        ? { certFile: config.server.tlsCertFile, keyFile: config.server.tlsPrivateKeyFile }
        : {}),
      onRenewError: () => metrics.certificates.servingRenewError(),
    });
    metrics.certificates.setServingCertificate(() => serving.current()?.notAfter);
    // How long the replaced certificate lived (upstream: now − the old certificate's NotBefore).
    let previous = serving.current();
    serving.onRotated((pair) => {
      if (previous) metrics.certificates.servingRotated((Date.now() - previous.notBefore) / 1000);
      previous = pair;
    });
    out.serving = serving;
  }
  return out;
}
