/**
 * Watches the runtime from the outside, the same way for the floor and for both kubelets: every
 * `intervalMs` one ListPodSandbox + one ListContainers (what a relist costs containerd), plus one
 * ContainerStatus per newly running container for its exact `startedAt`. Startup times are therefore
 * exact (containerd's clock); teardown times (sandbox stopped / removed) have the poll's resolution.
 */
import type { CriClient } from '../../src/runtime/cri/index.ts';
import { LABEL_POD_NAME } from '../../src/config/defaults.ts';
import { describeError } from '../../src/util/errors.ts';
import { sleep } from '../../src/util/abort.ts';

export interface PodObservation {
  name: string;
  /** CRI createdAt (ms epoch) of the pod's first sandbox: when the runtime began RunPodSandbox. */
  sandboxCreatedAt?: number;
  /** CRI startedAt (ms epoch) of the pod's first running container. */
  startedAt?: number;
  /** First poll at which no sandbox of the pod was ready and no container running (after it ran). */
  stoppedAt?: number;
  /** First poll at which the runtime held no sandbox of the pod (after it was seen). */
  removedAt?: number;
}

export interface CriObserver {
  readonly pods: ReadonlyMap<string, PodObservation>;
  /** Observations of the pods whose (runtime) name starts with `prefix`. */
  matching(prefix: string): PodObservation[];
  /** Resolves true once `done()` holds after a poll, false at the timeout. */
  until(done: () => boolean, timeoutMs: number): Promise<boolean>;
  stop(): Promise<void>;
}

export function observeCri(
  cri: CriClient,
  opts: { prefix: string; intervalMs: number; onError: (msg: string) => void },
): CriObserver {
  const pods = new Map<string, PodObservation>();
  const statusAsked = new Set<string>();
  const waiters = new Set<() => void>();
  let stopped = false;

  async function poll(): Promise<void> {
    const t = Date.now();
    const [sandboxes, containers] = await Promise.all([
      cri.runtime.listPodSandbox(),
      cri.runtime.listContainers(),
    ]);
    const ready = new Set<string>();
    const present = new Set<string>();
    for (const sb of sandboxes) {
      const name = sb.labels?.[LABEL_POD_NAME] ?? sb.metadata.name;
      if (!name.startsWith(opts.prefix)) continue;
      present.add(name);
      const p = pods.get(name) ?? { name };
      pods.set(name, p);
      const created = sb.createdAt / 1e6;
      if (p.sandboxCreatedAt === undefined || created < p.sandboxCreatedAt) p.sandboxCreatedAt = created;
      if (sb.state === 'SANDBOX_READY') ready.add(name);
    }
    const running = new Set<string>();
    const fresh: { id: string; name: string }[] = [];
    for (const c of containers) {
      const name = c.labels?.[LABEL_POD_NAME] ?? '';
      if (!name.startsWith(opts.prefix) || c.state !== 'CONTAINER_RUNNING') continue;
      running.add(name);
      if (!statusAsked.has(c.id)) {
        statusAsked.add(c.id);
        fresh.push({ id: c.id, name });
      }
    }
    await Promise.all(
      fresh.map(async ({ id, name }) => {
        const st = await cri.runtime.containerStatus(id);
        const p = pods.get(name) ?? { name };
        pods.set(name, p);
        const started = st.startedAt / 1e6;
        if (p.startedAt === undefined || started < p.startedAt) p.startedAt = started;
      }),
    );
    for (const p of pods.values()) {
      if (
        p.startedAt !== undefined &&
        p.stoppedAt === undefined &&
        !ready.has(p.name) &&
        !running.has(p.name)
      )
        p.stoppedAt = t;
      if (p.removedAt === undefined && !present.has(p.name)) {
        p.removedAt = t;
        p.stoppedAt ??= t;
      }
      if (p.removedAt !== undefined && present.has(p.name)) p.removedAt = undefined; // a new sandbox
    }
  }

  const loop = (async () => {
    while (!stopped) {
      try {
        await poll();
      } catch (err) {
        opts.onError(`CRI observer poll failed: ${describeError(err)}`);
      }
      for (const w of [...waiters]) w();
      if (!stopped) await sleep(opts.intervalMs);
    }
  })();

  return {
    pods,
    matching(prefix) {
      return [...pods.values()].filter((p) => p.name.startsWith(prefix));
    },
    until(done, timeoutMs) {
      if (done()) return Promise.resolve(true);
      return new Promise((resolve) => {
        const check = (): void => {
          if (!done()) return;
          finish(true);
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
      stopped = true;
      await loop;
    },
  };
}
