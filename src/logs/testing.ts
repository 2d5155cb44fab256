/** Test helpers for this folder (not exported from index.ts). */
import { readdirSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import type { Container, ContainerFilter, ContainerStatus, RuntimeService } from '../runtime/cri/types.ts';
import { KubeletError } from '../util/errors.ts';
import { until as poll } from '../../test/kit/poll.ts';

/** One CRI log record as containerd writes it. */
export function criLine(time: string, stream: 'stdout' | 'stderr', tag: 'P' | 'F', content: string): string {
  return `${time} ${stream} ${tag} ${content}\n`;
}

/** The i-th second after 2024-01-02T03:04:05Z as containerd's RFC3339Nano (trailing zeros trimmed). */
export function ts(i: number, nanos = 0): string {
  const d = new Date(Date.UTC(2024, 0, 2, 3, 4, 5) + i * 1000).toISOString().slice(0, 19);
  return nanos === 0 ? `${d}Z` : `${d}.${String(nanos).padStart(9, '0').replace(/0+$/, '')}Z`;
}

/** A writable that keeps what it receives; `highWaterMark` small to exercise backpressure. */
export class Sink extends Writable {
  readonly chunks: Buffer[] = [];
  private readonly delayMs: number;

  constructor(opts: { highWaterMark?: number; delayMs?: number } = {}) {
    super({ highWaterMark: opts.highWaterMark ?? 16 * 1024 });
    this.delayMs = opts.delayMs ?? 0;
  }

  override _write(chunk: Buffer, _enc: BufferEncoding, cb: (err?: Error | null) => void): void {
    this.chunks.push(Buffer.from(chunk));
    if (this.delayMs > 0) setTimeout(() => cb(), this.delayMs);
    else cb();
  }

  text(): string {
    return Buffer.concat(this.chunks).toString('utf8');
  }
}

/** Open file descriptors of this process. */
export function openFds(): number {
  return readdirSync('/proc/self/fd').length;
}

export async function withTmpDir<T>(fn: (dir: string) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(join(tmpdir(), 'tskubelet-logs-'));
  try {
    return await fn(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** The kit's poll-until (test/kit/poll.ts) in this folder's argument order. */
export function until(cond: () => boolean, timeoutMs = 5000, what = 'condition'): Promise<true> {
  return poll(what, () => cond(), { timeoutMs, intervalMs: 10 });
}

export interface FakeContainer {
  id: string;
  state: Container['state'];
  logPath: string;
  labels?: Record<string, string>;
}

type RotationRuntime = Pick<RuntimeService, 'listContainers' | 'containerStatus' | 'reopenContainerLog'>;

/** An in-memory runtime with just the calls log rotation makes, and a record of them. */
export class FakeRuntime implements RotationRuntime {
  containers: FakeContainer[] = [];
  calls: string[] = [];
  filters: (ContainerFilter | undefined)[] = [];
  /** What ReopenContainerLog does (default: create an empty live file, as containerd does). */
  onReopen: (c: FakeContainer) => Promise<void> = (c) => writeFile(c.logPath, '', { flag: 'a' });
  listError: Error | undefined;

  listContainers(filter?: ContainerFilter): Promise<Container[]> {
    this.calls.push('ListContainers');
    this.filters.push(filter);
    if (this.listError) return Promise.reject(this.listError);
    // Like containerd, honour the state filter.
    const want = filter?.state?.state;
    return Promise.resolve(
      this.containers
        .filter((c) => want === undefined || c.state === want)
        .map((c) => ({
          id: c.id,
          podSandboxId: 'sandbox',
          metadata: { name: c.labels?.['io.kubernetes.container.name'] ?? c.id, attempt: 0 },
          image: { image: 'busybox' },
          imageRef: 'busybox',
          state: c.state,
          createdAt: 0,
          labels: c.labels ?? {},
          annotations: {},
        })),
    );
  }

  containerStatus(id: string): Promise<ContainerStatus> {
    this.calls.push(`ContainerStatus ${id}`);
    const c = this.containers.find((x) => x.id === id);
    if (!c)
      return Promise.reject(new KubeletError('NotFound', 'CRI ContainerStatus', `container ${id} not found`));
    return Promise.resolve({
      id,
      metadata: { name: id, attempt: 0 },
      state: c.state,
      createdAt: 0,
      startedAt: 0,
      finishedAt: 0,
      exitCode: 0,
      image: { image: 'busybox' },
      imageRef: 'busybox',
      reason: '',
      message: '',
      labels: c.labels ?? {},
      annotations: {},
      mounts: [],
      logPath: c.logPath,
    });
  }

  async reopenContainerLog(id: string): Promise<void> {
    this.calls.push(`ReopenContainerLog ${id}`);
    const c = this.containers.find((x) => x.id === id);
    if (!c) throw new KubeletError('NotFound', 'CRI ReopenContainerLog', `container ${id} not found`);
    await this.onReopen(c);
  }
}
