/**
 * Wires the kubelet API (src/server) and container log rotation (src/logs) to a running kubelet:
 * the host functions the handlers call, metrics and stats providers, the listeners.
 */
import type { ApiClient } from '../api/client-types.ts';
import { toKubeletConfiguration, type KubeletConfig } from '../config/index.ts';
import { createApiHost } from './api-host.ts';
import type { Kubelet } from './kubelet.ts';
import { createContainerLogManager, type ContainerLogManager } from '../logs/index.ts';
import { readMachineInfo, type MachineInfo } from '../node/index.ts';
import type { ImageService, RuntimeService } from '../runtime/cri/index.ts';
import {
  PROMETHEUS_TEXT_CONTENT_TYPE,
  containerScrapeError,
  cpuTopology,
  machineMetrics,
} from '../stats/index.ts';
import { describeError } from '../util/errors.ts';
import {
  createKubeletApi,
  type KubeletServer,
  type RequestMetrics,
  type LocalEvent,
  type ServingCertificateSource,
  type TextBody,
} from '../server/index.ts';
import type { Logger } from '../util/logger.ts';
import type { NodeConsole } from '../console/index.ts';

export interface ApiProviders {
  metrics(which: 'main' | 'probes' | 'resource' | 'cadvisor'): Promise<TextBody>;
  statsSummary(onlyCpuAndMemory: boolean, signal: AbortSignal): Promise<unknown>;
}

export interface ServedApi {
  server?: KubeletServer;
  logRotation?: ContainerLogManager;
  close(): Promise<void>;
}

/** cadvisor MachineInfo's JSON names, for /spec/. */
function machineSpec(m: MachineInfo): Record<string, unknown> {
  return {
    num_cores: m.numCores,
    memory_capacity: m.memoryCapacityBytes,
    machine_id: m.machineID,
    system_uuid: m.systemUUID,
    boot_id: m.bootID,
    filesystems: m.rootfsCapacityBytes === undefined ? [] : [{ capacity: m.rootfsCapacityBytes }],
    hugepages: m.hugePages.map((h) => ({ page_size: h.pageSizeKiB, num_pages: h.numPages })),
  };
}

export async function serveKubeletApi(opts: {
  config: KubeletConfig;
  kubelet: Kubelet;
  runtime: RuntimeService;
  /** For the local socket's read-only image list (`tskubelet images`). */
  imageService?: ImageService;
  /** The recent events (the console's ring), for `tskubelet describe` over the local socket. */
  events?: () => readonly LocalEvent[];
  nodeIP: string | undefined;
  api?: ApiClient;
  providers: ApiProviders;
  logger: Logger;
  /** The node console at /console/ (and on `consoleAddress`, a loopback HOST:PORT, when given). */
  console?: NodeConsole;
  consoleAddress?: { host: string; port: number };
  /** serverTLSBootstrap: the serving certificate manager (src/certificate). */
  servingCertificate?: ServingCertificateSource;
  /** kubelet_http_requests_* (src/metrics). */
  requestMetrics?: RequestMetrics;
}): Promise<ServedApi> {
  const { config, logger } = opts;
  const s = config.server;
  let logRotation: ContainerLogManager | undefined;
  if (s.containerLogMaxSizeBytes > 0) {
    logRotation = createContainerLogManager({
      runtime: opts.runtime,
      maxSizeBytes: s.containerLogMaxSizeBytes,
      maxFiles: s.containerLogMaxFiles,
      logger: logger.child({ component: 'container-logs' }),
    });
  }
  let server: KubeletServer | undefined;
  if (s.enableServer) {
    // Read on the first /spec/ request: the root dir may not exist before the kubelet runs.
    let machine: Promise<MachineInfo> | undefined;
    const machineInfo = () => (machine ??= readMachineInfo(config.rootDir, undefined, logger));
    let topology: ReturnType<typeof cpuTopology> | undefined;
    // cadvisor's machine families follow the container ones on /metrics/cadvisor; either failing
    // is its scrape-error gauge at 1 and the rest is served, as cadvisor's collectors do.
    const cadvisorWithMachine = async (): Promise<TextBody> => {
      topology ??= cpuTopology().catch((err: unknown) => {
        logger.warn('no CPU topology for machine_cpu_physical_cores / machine_cpu_sockets', {
          err: describeError(err),
        });
        return undefined;
      });
      const [containers, m, t] = await Promise.all([
        opts.providers.metrics('cadvisor').catch((err: unknown) => {
          logger.warn('no container stats for /metrics/cadvisor: container_scrape_error 1', {
            err: describeError(err),
          });
          return undefined;
        }),
        machineInfo().catch((err: unknown) => {
          logger.warn('no machine info for /metrics/cadvisor: machine_scrape_error 1', {
            err: describeError(err),
          });
          machine = undefined; // read again at the next scrape
          return undefined;
        }),
        topology,
      ]);
      const machineText = machineMetrics(m && { ...m, physicalCores: t?.physicalCores, sockets: t?.sockets });
      return {
        contentType: containers?.contentType ?? PROMETHEUS_TEXT_CONTENT_TYPE,
        body: (containers?.body ?? '') + containerScrapeError(!containers) + machineText,
      };
    };
    const configz = toKubeletConfiguration(config);
    const host = createApiHost({
      nodeName: config.nodeName,
      kubelet: opts.kubelet,
      runtime: opts.runtime,
      configz: () => configz,
      spec: async () => machineSpec(await machineInfo()),
      metrics: (which) => (which === 'cadvisor' ? cadvisorWithMachine() : opts.providers.metrics(which)),
      statsSummary: (only, signal) => opts.providers.statsSummary(only, signal),
    });
    // The serving certificate is read or made here: a failure stops the start, with nothing left running.
    server = await createKubeletApi({
      settings: s,
      address: config.address,
      port: config.port,
      readOnlyPort: config.readOnlyPort,
      rootDir: config.rootDir,
      certDir: config.certDirectory,
      nodeName: config.nodeName,
      nodeIPs: [
        ...(opts.nodeIP ? [opts.nodeIP] : []),
        ...(config.nodeIP ? config.nodeIP.split(',').map((ip) => ip.trim()) : []),
      ],
      host,
      ...(opts.api ? { api: opts.api } : {}),
      logger,
      ...(opts.console ? { console: opts.console } : {}),
      ...(opts.consoleAddress ? { consoleAddress: opts.consoleAddress } : {}),
      ...(opts.servingCertificate ? { servingCertificate: opts.servingCertificate } : {}),
      ...(opts.requestMetrics ? { requestMetrics: opts.requestMetrics } : {}),
      ...(opts.imageService ? { cri: { runtime: opts.runtime, images: opts.imageService } } : {}),
      ...(opts.events ? { events: opts.events } : {}),
    });
    await server.start();
  } else if (opts.consoleAddress) {
    logger.warn('--console-address is ignored: the kubelet API is disabled (enableServer: false)');
  }
  // Started once the API is up: a start that fails above leaves no rotation loop behind (it kept
  // a kubelet that could not start running, logging "CRI client is closed").
  logRotation?.start();
  return {
    ...(server ? { server } : {}),
    ...(logRotation ? { logRotation } : {}),
    async close() {
      // Open console streams end first: a server closing waits for its connections.
      opts.console?.close();
      await Promise.all([server?.close(), logRotation?.stop()]);
    },
  };
}
