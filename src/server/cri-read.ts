/**
 * Read-only CRI views for the node CLI's crictl verbs (`tskubelet ps`, `images`, `inspect`,
 * `stats`), served on the local socket only (local-socket.ts; root-only, as the socket file is),
 * never on the HTTPS or read-only ports: upstream's kubelet API has no such routes, crictl talks to
 * the runtime's socket directly (kubernetes-sigs/cri-tools cmd/crictl: container.go, image.go,
 * container_stats.go). The kubelet answers from its own CRI client, so the CLI needs neither
 * crictl nor access to containerd's socket. GET only; nothing here changes the runtime.
 *
 *   GET /cri/containers[?all=true][&podSandboxId=ID]   {containers: Container[]}   (ListContainers)
 *   GET /cri/containers/{id}                           {status, info}              (ContainerStatus, verbose)
 *   GET /cri/images                                    {images: Image[]}           (ListImages)
 *   GET /cri/stats                                     {stats: ContainerStats[]}   (ListContainerStats)
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ImageService, RuntimeService } from '../runtime/cri/index.ts';
import { isCriNotFound } from '../runtime/cri/index.ts';
import { describeError } from '../util/errors.ts';
import type { Logger } from '../util/logger.ts';
import { sendJSON, sendText } from './http-util.ts';

/** The CRI calls the read-only views make. */
export interface CriReadHost {
  runtime: Pick<RuntimeService, 'listContainers' | 'containerStatus' | 'listContainerStats'>;
  images: Pick<ImageService, 'listImages'>;
}

export const CRI_READ_PREFIX = '/cri/';

const CALL_TIMEOUT_MS = 30_000;

/**
 * Answers a `/cri/...` request; false when the path is not one of these views (the caller's
 * router then answers it).
 */
export async function handleCriRead(
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  host: CriReadHost,
  log: Logger,
): Promise<boolean> {
  const path = url.pathname;
  if (!path.startsWith(CRI_READ_PREFIX)) return false;
  const rest = path.slice(CRI_READ_PREFIX.length).split('/');
  const known =
    (rest.length === 1 && ['containers', 'images', 'stats'].includes(rest[0] ?? '')) ||
    (rest.length === 2 && rest[0] === 'containers' && (rest[1] ?? '') !== '');
  if (!known) return false;
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    sendText(res, 405, 'Method Not Allowed: the CRI views are read-only', { allow: 'GET' });
    return true;
  }
  const ac = new AbortController();
  res.once('close', () => ac.abort());
  const opts = { signal: ac.signal, timeoutMs: CALL_TIMEOUT_MS };
  try {
    if (rest[0] === 'containers' && rest.length === 1) {
      const all = url.searchParams.get('all') === 'true';
      const podSandboxId = url.searchParams.get('podSandboxId') ?? '';
      const containers = await host.runtime.listContainers(
        {
          ...(all ? {} : { state: { state: 'CONTAINER_RUNNING' as const } }),
          ...(podSandboxId ? { podSandboxId } : {}),
        },
        opts,
      );
      sendJSON(res, { containers });
    } else if (rest[0] === 'containers') {
      const id = decodeURIComponent(rest[1] ?? '');
      const { info, ...status } = await host.runtime.containerStatus(id, { ...opts, verbose: true });
      sendJSON(res, { status, info: info ?? {} });
    } else if (rest[0] === 'images') {
      sendJSON(res, { images: await host.images.listImages(undefined, opts) });
    } else {
      sendJSON(res, { stats: await host.runtime.listContainerStats({}, opts) });
    }
  } catch (err) {
    if (isCriNotFound(err)) {
      sendText(res, 404, `not found: ${describeError(err)}`);
      return true;
    }
    log.warn('CRI view failed', { path, err: describeError(err) });
    sendText(res, 502, `the runtime failed: ${describeError(err)}`);
  }
  return true;
}
