/**
 * crictl's read-only container verbs (kubernetes-sigs/cri-tools cmd/crictl: `ps`, `images`,
 * `inspect`, `stats`) over the kubelet's local socket: the kubelet answers from its CRI client
 * (src/server/cri-read.ts), so an operator needs neither crictl nor containerd's socket. Printed
 * by crictl-printers.ts as crictl prints them.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Container, ContainerStats, ContainerStatus, Image } from '../../runtime/cri/index.ts';
import { NodeApiError, type NodeClient } from './client.ts';
import { imagesTable, inspectJSON, psTable, statsTable } from './crictl-printers.ts';
import type { CommandIO } from './get-pods.ts';

export interface PsOptions {
  all?: boolean;
  pod?: string;
  quiet?: boolean;
}

/** crictl stats' default sample (`--seconds 1`). */
const STATS_SAMPLE_MS = 1_000;

async function getCri<T>(client: NodeClient, path: string, signal: AbortSignal): Promise<T> {
  try {
    return await client.getJSON<T>(path, signal);
  } catch (err) {
    if (err instanceof NodeApiError && err.status === 404 && /404 page not found/.test(err.message)) {
      throw new Error(
        `${client.target} does not serve the CRI views: they are on the kubelet's local socket only (--socket), ` +
          'not on its HTTPS port',
      );
    }
    throw err;
  }
}

export async function runPs(client: NodeClient, opts: PsOptions, io: CommandIO): Promise<number> {
  const q = new URLSearchParams();
  if (opts.all) q.set('all', 'true');
  if (opts.pod) q.set('podSandboxId', opts.pod);
  const query = q.toString();
  const { containers } = await getCri<{ containers: Container[] }>(
    client,
    `/cri/containers${query ? `?${query}` : ''}`,
    io.signal,
  );
  io.out.write(psTable(containers ?? [], io.now(), { quiet: opts.quiet === true }));
  return 0;
}

export async function runImages(
  client: NodeClient,
  opts: { quiet?: boolean },
  io: CommandIO,
): Promise<number> {
  const { images } = await getCri<{ images: Image[] }>(client, '/cri/images', io.signal);
  io.out.write(imagesTable(images ?? [], { quiet: opts.quiet === true }));
  return 0;
}

export async function runInspect(client: NodeClient, ids: string[], io: CommandIO): Promise<number> {
  for (const id of ids) {
    let doc: { status: ContainerStatus; info: Record<string, string> };
    try {
      doc = await getCri(client, `/cri/containers/${encodeURIComponent(id)}`, io.signal);
    } catch (err) {
      if (err instanceof NodeApiError && err.status === 404) {
        throw new Error(`getting the status of the container "${id}": ${err.message}`);
      }
      throw err;
    }
    io.out.write(inspectJSON(doc.status, doc.info ?? {}));
  }
  return 0;
}

export interface StatsOptions {
  all?: boolean;
  /** Between the two samples (crictl `--seconds`, default 1 s). */
  sampleMs?: number;
}

export async function runStats(client: NodeClient, opts: StatsOptions, io: CommandIO): Promise<number> {
  const first = await getCri<{ stats: ContainerStats[] }>(client, '/cri/stats', io.signal);
  await sleep(opts.sampleMs ?? STATS_SAMPLE_MS, undefined, { signal: io.signal });
  const second = await getCri<{ stats: ContainerStats[] }>(client, '/cri/stats', io.signal);
  io.out.write(statsTable(first.stats ?? [], second.stats ?? [], { all: opts.all === true }));
  return 0;
}
