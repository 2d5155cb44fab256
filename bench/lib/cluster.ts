/** API-side helpers for the cluster scenarios: node readiness, pod creation, a pod watch, deletion. */
import { get as httpsGet } from 'node:https';
import type { ApiClient } from '../../src/api/client-types.ts';
import { isApiStatus } from '../../src/api/client-types.ts';
import type { Pod, PodList } from '../../src/api/types.ts';
import type { Node } from '../../src/node/types.ts';
import { KubeletError, describeError } from '../../src/util/errors.ts';
import { sleep } from '../../src/util/abort.ts';

export async function deleteNode(admin: ApiClient, name: string): Promise<void> {
  try {
    await admin.request({ method: 'DELETE', path: `/api/v1/nodes/${name}` });
  } catch (err) {
    if (!isApiStatus(err, 404)) throw err;
  }
}

export async function waitNodeReady(admin: ApiClient, name: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const n = await admin
      .request<Node>({ method: 'GET', path: `/api/v1/nodes/${name}` })
      .catch((err: unknown) => {
        if (isApiStatus(err, 404)) return undefined;
        throw err;
      });
    if (n?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')) return;
    if (Date.now() > deadline) {
      throw new KubeletError(
        'DeadlineExceeded',
        'wait node ready',
        `node ${name} not Ready in ${timeoutMs} ms`,
      );
    }
    await sleep(200);
  }
}

/** Deletes every pod of the namespace bound to `nodeName` with grace 0; returns how many. */
export async function deletePodsOnNode(
  admin: ApiClient,
  namespace: string,
  nodeName: string,
): Promise<number> {
  const list = await admin.request<PodList>({
    method: 'GET',
    path: `/api/v1/namespaces/${namespace}/pods`,
    query: { fieldSelector: `spec.nodeName=${nodeName}` },
  });
  await deletePods(
    admin,
    namespace,
    list.items.map((p) => p.metadata.name ?? ''),
  );
  return list.items.length;
}

/** Deletes the pods with grace 0, all at once; returns when every DELETE call answered. */
export async function deletePods(
  admin: ApiClient,
  namespace: string,
  names: readonly string[],
): Promise<void> {
  await Promise.all(
    names.map(async (name) => {
      try {
        await admin.request({
          method: 'DELETE',
          path: `/api/v1/namespaces/${namespace}/pods/${name}`,
          body: { kind: 'DeleteOptions', apiVersion: 'v1', gracePeriodSeconds: 0 },
        });
      } catch (err) {
        if (!isApiStatus(err, 404)) throw err;
      }
    }),
  );
}

/** Creates the pods all at once; returns each pod's creation time (just before its POST). */
export async function createPods(
  admin: ApiClient,
  namespace: string,
  pods: readonly { metadata: { name: string } }[],
): Promise<Map<string, number>> {
  const created = new Map<string, number>();
  await Promise.all(
    pods.map(async (pod) => {
      created.set(pod.metadata.name, Date.now());
      await admin.request({ method: 'POST', path: `/api/v1/namespaces/${namespace}/pods`, body: pod });
    }),
  );
  return created;
}

export interface PodWatch {
  /** First time each pod was seen Running with every container running. */
  readonly running: ReadonlyMap<string, number>;
  until(done: () => boolean, timeoutMs: number): Promise<boolean>;
  stop(): Promise<void>;
}

/** Watches the namespace's pods bound to `nodeName`, from now on (list, then watch from its version). */
export async function watchPods(
  admin: ApiClient,
  namespace: string,
  nodeName: string,
  onError: (msg: string) => void,
): Promise<PodWatch> {
  const path = `/api/v1/namespaces/${namespace}/pods`;
  const fieldSelector = `spec.nodeName=${nodeName}`;
  const list = await admin.request<PodList>({ method: 'GET', path, query: { fieldSelector } });
  let rv = list.metadata.resourceVersion ?? '';
  const running = new Map<string, number>();
  const waiters = new Set<() => void>();
  const stop = new AbortController();
  const onPod = (p: Pod): void => {
    const name = p.metadata.name ?? '';
    const statuses = p.status?.containerStatuses ?? [];
    const allRunning =
      statuses.length === p.spec.containers.length && statuses.every((c) => c.state?.running !== undefined);
    if (p.status?.phase === 'Running' && allRunning && !running.has(name)) running.set(name, Date.now());
  };
  const loop = (async () => {
    while (!stop.signal.aborted) {
      try {
        await admin.watch(
          path,
          { fieldSelector, resourceVersion: rv, timeoutSeconds: 3600, allowWatchBookmarks: true },
          (ev) => {
            const meta = ev.object.metadata as { resourceVersion?: string } | undefined;
            if (meta?.resourceVersion) rv = meta.resourceVersion;
            if (ev.type === 'ADDED' || ev.type === 'MODIFIED') onPod(ev.object as unknown as Pod);
            for (const w of [...waiters]) w();
          },
          { signal: stop.signal },
        );
      } catch (err) {
        if (stop.signal.aborted) return;
        onError(`pod watch failed, restarting: ${describeError(err)}`);
        await sleep(500);
      }
    }
  })();
  return {
    running,
    until(done, timeoutMs) {
      if (done()) return Promise.resolve(true);
      return new Promise((resolve) => {
        const check = (): void => {
          if (done()) finish(true);
        };
        const timer = setTimeout(() => finish(false), timeoutMs);
        const finish = (ok: boolean): void => {
          clearTimeout(timer);
          waiters.delete(check);
          resolve(ok);
        };
        waiters.add(check);
      });
    },
    async stop() {
      stop.abort();
      await loop;
    },
  };
}

export interface Histogram {
  buckets: { le: number; count: number }[];
  sum: number;
  count: number;
}

/** A Prometheus histogram (no labels) from the upstream kubelet's /metrics (self-signed TLS, anonymous). */
export function scrapeHistogram(port: number, metric: string): Promise<Histogram | undefined> {
  return new Promise((resolve) => {
    const req = httpsGet(
      { host: '127.0.0.1', port, path: '/metrics', rejectUnauthorized: false, timeout: 5_000 },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (text += d));
        res.on('end', () => {
          if (res.statusCode !== 200) return resolve(undefined);
          const h: Histogram = { buckets: [], sum: NaN, count: NaN };
          for (const line of text.split('\n')) {
            const b = new RegExp(`^${metric}_bucket\\{le="([^"]+)"\\} (\\S+)`).exec(line);
            if (b) h.buckets.push({ le: b[1] === '+Inf' ? Infinity : Number(b[1]), count: Number(b[2]) });
            else if (line.startsWith(`${metric}_sum `)) h.sum = Number(line.split(' ')[1]);
            else if (line.startsWith(`${metric}_count `)) h.count = Number(line.split(' ')[1]);
          }
          resolve(h.buckets.length > 0 ? h : undefined);
        });
      },
    );
    req.on('error', () => resolve(undefined));
    req.on('timeout', () => req.destroy());
  });
}

/** The observations between two scrapes of one histogram. */
export function histogramDelta(a: Histogram, b: Histogram): Histogram {
  return {
    buckets: b.buckets.map((x, i) => ({ le: x.le, count: x.count - (a.buckets[i]?.count ?? 0) })),
    sum: b.sum - a.sum,
    count: b.count - a.count,
  };
}

/** Quantile by linear interpolation inside the bucket, as PromQL's histogram_quantile does. */
export function histogramQuantile(h: Histogram, q: number): number {
  if (!(h.count > 0)) return NaN;
  const rank = q * h.count;
  let prevLe = 0;
  let prevCount = 0;
  for (const b of h.buckets) {
    if (b.count >= rank) {
      if (b.le === Infinity) return prevLe;
      return prevLe + ((b.le - prevLe) * (rank - prevCount)) / Math.max(1, b.count - prevCount);
    }
    prevLe = b.le;
    prevCount = b.count;
  }
  return NaN;
}
