/**
 * A kubelet's managed heap, for telling a growing RSS apart from growing live objects. tskubelet:
 * the event-loop probe preloaded into it (eld-probe.ts) appends `process.memoryUsage()` (MiB) to its
 * file on SIGUSR2 — heapUsed and heapTotal. Upstream: the Go runtime's `go_memstats_heap_alloc_bytes`
 * (live and not yet collected objects) and `go_memstats_heap_inuse_bytes` (spans in use) from its
 * `/metrics` (1.20's flag defaults: anonymous, AlwaysAllow).
 */
import { readFile } from 'node:fs/promises';
import { get as httpsGet } from 'node:https';
import { sleep } from '../../src/util/abort.ts';

export interface HeapReading {
  usedMiB: number;
  totalMiB: number;
}

/** heap_alloc / heap_inuse from a Prometheus text exposition, undefined when either is missing. */
export function parseGoHeap(text: string): HeapReading | undefined {
  const value = (name: string): number | undefined => {
    const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
    return m ? Number(m[1]) : undefined;
  };
  const used = value('go_memstats_heap_alloc_bytes');
  const total = value('go_memstats_heap_inuse_bytes');
  if (used === undefined || total === undefined) return undefined;
  return { usedMiB: used / 2 ** 20, totalMiB: total / 2 ** 20 };
}

/** Scrapes `https://127.0.0.1:<port>/metrics` on a connection of its own (closed after). */
export function scrapeGoHeap(port: number): Promise<HeapReading> {
  return new Promise((resolve, reject) => {
    const req = httpsGet(
      // agent: false — a kept-alive connection would show in the kubelet's fd count at the next sample.
      { host: '127.0.0.1', port, path: '/metrics', rejectUnauthorized: false, timeout: 5_000, agent: false },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (text += d));
        res.on('end', () => {
          const h = res.statusCode === 200 ? parseGoHeap(text) : undefined;
          if (h) resolve(h);
          else reject(new Error(`/metrics: HTTP ${res.statusCode ?? '?'}, no Go heap gauges`));
        });
      },
    );
    req.on('error', reject);
    req.on('timeout', () => req.destroy(new Error('/metrics: timeout')));
  });
}

/** heapUsed / heapTotal of the probe's last JSON line, undefined when there is none. */
export function parseEldHeap(lines: string): HeapReading | undefined {
  const last = lines.trimEnd().split('\n').pop();
  if (!last) return undefined;
  const j = JSON.parse(last) as { heapUsed?: number; heapTotal?: number };
  if (typeof j.heapUsed !== 'number' || typeof j.heapTotal !== 'number') return undefined;
  return { usedMiB: j.heapUsed, totalMiB: j.heapTotal };
}

const countLines = (s: string) => s.split('\n').filter(Boolean).length;

/** Asks tskubelet's probe for a reading (SIGUSR2) and waits up to 2 s for its line in `file`. */
export async function probeHeap(pid: number, file: string): Promise<HeapReading> {
  const before = countLines(await readFile(file, 'utf8').catch(() => ''));
  process.kill(pid, 'SIGUSR2');
  for (let i = 0; i < 100; i++) {
    const text = await readFile(file, 'utf8').catch(() => '');
    if (countLines(text) > before) {
      const h = parseEldHeap(text);
      if (h) return h;
      break;
    }
    await sleep(20);
  }
  throw new Error(`no heap reading from the probe in ${file}`);
}
