import { DEFAULT_RUNTIME_REQUEST_TIMEOUT_MS } from '../../config/defaults.ts';
import { nullLogger, type Logger } from '../../util/logger.ts';
import { createH2Invoker } from './h2-invoker.ts';
import { createImageService, createRuntimeService } from './services.ts';
import type { ImageService, RuntimeService } from './types.ts';

export { criPackageDefinition } from './h2-invoker.ts';
export { grpcTarget } from './invoker.ts';

export interface CriClientOptions {
  /** `unix:///path/to.sock`, or a bare absolute socket path. */
  endpoint: string;
  /** Default deadline per call (upstream runtimeRequestTimeout, 2 min). */
  timeoutMs?: number;
  logger?: Logger;
}

/**
 * A connection to a CRI runtime: both services share one connection. Creating it does not
 * connect; the first call does, and a runtime that is down fails calls with `Unavailable`
 * rather than blocking them.
 */
export interface CriClient {
  runtime: RuntimeService;
  image: ImageService;
  /** Closes the connection; calls made afterwards reject with `Unavailable`. */
  close(): void;
}

/** Creates a CRI client; nothing connects until the first call. */
export function createCriClient(opts: CriClientOptions): CriClient {
  const timeoutMs = opts.timeoutMs ?? DEFAULT_RUNTIME_REQUEST_TIMEOUT_MS;
  const logger = (opts.logger ?? nullLogger).child({ component: 'cri', endpoint: opts.endpoint });
  const inv = createH2Invoker(opts.endpoint, logger);
  return {
    runtime: createRuntimeService(inv, timeoutMs),
    image: createImageService(inv, timeoutMs),
    close: () => inv.close(),
  };
}
