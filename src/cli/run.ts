import type { KubeletConfig } from '../config/index.ts';
import { createLogger, type Logger } from '../util/logger.ts';
import { describeError } from '../util/errors.ts';
import { detectNodeIP } from '../util/net.ts';
import { createCriClient } from '../runtime/cri/index.ts';
import { createLoggingRecorder } from '../api/events.ts';
import { createFileSource, createHttpSource, type PodSource } from '../podsource/index.ts';
import { createKubelet } from '../kubelet/kubelet.ts';
import { machineNodeView } from '../kubelet/node-view.ts';
import { runOnce } from '../kubelet/run-once.ts';
import { createLocalServer, type LocalServer } from '../server/server.ts';

function buildSources(config: KubeletConfig, logger: Logger): PodSource[] {
  const sources: PodSource[] = [];
  if (config.staticPodPath) {
    sources.push(
      createFileSource({
        path: config.staticPodPath,
        nodeName: config.nodeName,
        checkFrequencyMs: config.fileCheckFrequencyMs,
        logger: logger.child({ source: 'file' }),
      }),
    );
  }
  if (config.staticPodURL) {
    const headers: Record<string, string[]> = {};
    for (const [k, v] of Object.entries(config.staticPodURLHeader)) headers[k] = [...v];
    sources.push(
      createHttpSource({
        url: config.staticPodURL,
        headers,
        nodeName: config.nodeName,
        checkFrequencyMs: config.httpCheckFrequencyMs,
        logger: logger.child({ source: 'http' }),
      }),
    );
  }
  return sources;
}

/**
 * Runs the kubelet with a compiled config until SIGTERM/SIGINT (or, with --runonce, until every
 * pod ran). Returns the process exit code.
 */
export async function runKubelet(
  config: KubeletConfig,
  warnings: readonly string[],
  version: string,
): Promise<number> {
  const logger = createLogger({ verbosity: config.verbosity, format: config.logFormat });
  for (const w of warnings) logger.warn(w);
  if (config.kubeconfig) {
    logger.error('cluster mode (--kubeconfig) is not implemented yet; run without it for standalone mode', {
      kubeconfig: config.kubeconfig,
    });
    return 1;
  }
  const nodeIP = config.nodeIP?.split(',')[0]?.trim() || detectNodeIP();
  const cri = createCriClient({
    endpoint: config.containerRuntimeEndpoint,
    timeoutMs: config.runtimeRequestTimeoutMs,
    logger,
  });
  try {
    const v = await cri.runtime.version({ timeoutMs: 10_000 });
    logger.info('container runtime', {
      endpoint: config.containerRuntimeEndpoint,
      runtime: v.runtimeName,
      version: v.runtimeVersion,
      criVersion: v.runtimeApiVersion,
    });
  } catch (err) {
    // Keep running: pods sync as soon as the runtime answers; healthz reports it meanwhile.
    logger.error('container runtime is not answering; will keep retrying', {
      endpoint: config.containerRuntimeEndpoint,
      err: describeError(err),
    });
  }
  const sources = buildSources(config, logger);
  if (sources.length === 0) logger.warn('no pod source configured (--pod-manifest-path or --manifest-url)');
  const kubelet = createKubelet(
    {
      nodeName: config.nodeName,
      nodeIP,
      rootDir: config.rootDir,
      podLogsDir: config.podLogsDir,
      maxPods: config.maxPods,
      syncFrequencyMs: config.syncFrequencyMs,
    },
    {
      runtimeService: cri.runtime,
      imageService: cri.image,
      sources,
      recorder: createLoggingRecorder(logger),
      logger,
      node: () => machineNodeView(config.nodeName, config.maxPods),
    },
  );
  logger.info('tskubelet version', { version, nodeName: config.nodeName });

  if (config.runOnce) {
    const ac = new AbortController();
    const onSignal = () => ac.abort(new Error('interrupted'));
    process.once('SIGINT', onSignal);
    process.once('SIGTERM', onSignal);
    try {
      const results = await runOnce(kubelet, logger, {
        sourceTimeoutMs: config.runOnceTimeoutMs,
        signal: ac.signal,
      });
      for (const r of results) {
        process.stdout.write(`${r.ok ? 'ok    ' : 'FAILED'} ${r.pod} (${r.podUID}): ${r.detail}\n`);
      }
      const failed = results.filter((r) => !r.ok).length;
      process.stdout.write(`run-once: ${results.length - failed} started, ${failed} failed\n`);
      return failed === 0 ? 0 : 1;
    } catch (err) {
      logger.error('run-once failed', { err: describeError(err) });
      return 1;
    } finally {
      cri.close();
    }
  }

  let server: LocalServer | undefined;
  if (config.healthzPort > 0) {
    server = createLocalServer(
      { host: config.healthzBindAddress, port: config.healthzPort },
      { healthz: () => kubelet.healthz(), pods: () => kubelet.pods() },
      logger,
    );
    try {
      await server.listen();
    } catch (err) {
      logger.error('cannot serve healthz; continuing without it', {
        address: `${config.healthzBindAddress}:${config.healthzPort}`,
        err: describeError(err),
      });
      server = undefined;
    }
  }
  const shutdown = (signal: string) => {
    logger.info('shutting down', { signal });
    void kubelet.stop();
  };
  process.once('SIGINT', () => shutdown('SIGINT'));
  process.once('SIGTERM', () => shutdown('SIGTERM'));
  await kubelet.run();
  await server?.close();
  cri.close();
  return 0;
}
