/**
 * `tskubelet run` once the flags and the config file are compiled (upstream cmd/kubelet/app
 * Run): the logger, the one assembly (`newKubelet`), signals, and the exit code. Glue only.
 */
import type { KubeletConfig } from '../config/index.ts';
import { newKubelet } from '../kubelet/index.ts';
import { describeError } from '../util/errors.ts';
import { createLogger, parseVmodule } from '../util/logger.ts';

/**
 * Runs the kubelet with a compiled config until SIGTERM/SIGINT (or, with --runonce, until every
 * pod ran). Returns the process exit code.
 */
export async function runKubelet(
  config: KubeletConfig,
  warnings: readonly string[],
  version: string,
): Promise<number> {
  const logger = createLogger({
    verbosity: config.verbosity,
    format: config.logFormat,
    vmodule: parseVmodule(config.vmodule),
  });
  for (const w of warnings) logger.warn(w);
  // Upstream logs the gates at V(1) ("feature gates: …"); tskubelet acts on none of them yet.
  if (Object.keys(config.featureGates).length > 0)
    logger.info('feature gates', { gates: config.featureGates });
  const kubelet = await newKubelet(config, { logger, version });

  if (config.runOnce) {
    const ac = new AbortController();
    const onSignal = () => ac.abort(new Error('interrupted'));
    process.once('SIGINT', onSignal);
    process.once('SIGTERM', onSignal);
    try {
      const results = await kubelet.runOnce({ sourceTimeoutMs: config.runOnceTimeoutMs, signal: ac.signal });
      for (const r of results) {
        process.stdout.write(`${r.ok ? 'ok    ' : 'FAILED'} ${r.pod} (${r.podUID}): ${r.detail}\n`);
      }
      const failed = results.filter((r) => !r.ok).length;
      process.stdout.write(`run-once: ${results.length - failed} started, ${failed} failed\n`);
      return failed === 0 ? 0 : 1;
    } catch (err) {
      logger.error('run-once failed', { err: describeError(err) });
      return 1;
    }
  }

  const shutdown = (signal: string) => {
    logger.info('shutting down', { signal });
    void kubelet.stop();
  };
  process.once('SIGINT', () => shutdown('SIGINT'));
  process.once('SIGTERM', () => shutdown('SIGTERM'));
  // Resolves once stopped; rejects when the kubelet cannot start (a bad TLS file, a live local
  // socket, a pod cgroup hierarchy that cannot be set up).
  await kubelet.run();
  return 0;
}
