import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import type { Pod } from '../api/types.ts';
import { PLEG_RELIST_THRESHOLD_MS } from '../config/defaults.ts';
import type {
  PodSyncResult,
  RuntimeManager,
  RuntimePodSummary,
} from '../runtime/kuberuntime/runtime-manager.ts';
import type { RuntimeContainerState, RuntimePodStatus } from '../runtime/kuberuntime/runtime-pod.ts';
import { KubeletError } from '../util/errors.ts';
import { nullLogger } from '../util/logger.ts';
import { createPleg, generateEvents, type PodLifecycleEvent, type PodLifecycleEventType } from './pleg.ts';

type State = RuntimeContainerState | 'non-existent';

describe('generateEvents (upstream GenericPLEG generateEvents)', () => {
  const cases: [State, State, PodLifecycleEventType[]][] = [
    ['running', 'running', []],
    ['exited', 'exited', []],
    ['non-existent', 'running', ['ContainerStarted']],
    ['exited', 'running', ['ContainerStarted']],
    ['unknown', 'running', ['ContainerStarted']],
    ['running', 'exited', ['ContainerDied']],
    ['non-existent', 'exited', ['ContainerDied']],
    ['unknown', 'exited', ['ContainerDied']],
    ['running', 'unknown', ['ContainerChanged']],
    ['non-existent', 'unknown', ['ContainerChanged']],
    ['exited', 'non-existent', ['ContainerRemoved']],
    ['running', 'non-existent', ['ContainerDied', 'ContainerRemoved']],
    ['unknown', 'non-existent', ['ContainerDied', 'ContainerRemoved']],
  ];
  for (const [from, to, want] of cases) {
    it(`${from} → ${to} gives [${want.join(', ')}]`, () => {
      const events = generateEvents('uid', 'cid', from, to);
      assert.deepEqual(
        events,
        want.map((type) => ({ uid: 'uid', type, id: 'cid' })),
      );
    });
  }
});

// ---- relist against a fake runtime ----

interface FakeContainer {
  id: string;
  name: string;
  state: RuntimeContainerState;
}
interface FakePod {
  uid: string;
  sandboxes: { id: string; ready: boolean }[];
  containers: FakeContainer[];
}

/** A RuntimeManager where only listPods and getPodStatus mean anything. */
class FakeRuntime implements RuntimeManager {
  pods = new Map<string, FakePod>();
  failStatusFor = new Set<string>();
  failList = false;
  statusCalls: string[] = [];
  clock = 0;

  listPods(): Promise<RuntimePodSummary[]> {
    if (this.failList) return Promise.reject(new KubeletError('Unavailable', 'CRI ListPodSandbox', 'down'));
    return Promise.resolve(
      [...this.pods.values()].map((p) => ({
        uid: p.uid,
        name: `pod-${p.uid}`,
        namespace: 'ns',
        sandboxes: p.sandboxes.map((s) => ({
          id: s.id,
          state: s.ready ? ('ready' as const) : ('notready' as const),
          createdAt: 1,
        })),
        containers: p.containers.map((c) => ({ ...c, createdAt: 2, podSandboxId: p.sandboxes[0]?.id ?? '' })),
      })),
    );
  }

  getPodStatus(uid: string, name: string, namespace: string): Promise<RuntimePodStatus> {
    this.statusCalls.push(uid);
    if (this.failStatusFor.has(uid)) {
      return Promise.reject(new KubeletError('Unavailable', 'CRI PodSandboxStatus', 'flaky'));
    }
    const p = this.pods.get(uid);
    this.clock++;
    return Promise.resolve({
      uid,
      name,
      namespace,
      timestamp: this.clock,
      sandboxes: (p?.sandboxes ?? []).map((s) => ({
        id: s.id,
        ready: s.ready,
        createdAt: 1,
        attempt: 0,
        ip: '10.0.0.1',
        ips: [],
        hostNetwork: false,
      })),
      containers: (p?.containers ?? []).map((c) => ({
        id: c.id,
        name: c.name,
        state: c.state,
        createdAt: 2,
        startedAt: 3,
        finishedAt: 0,
        exitCode: 0,
        reason: '',
        message: '',
        image: 'busybox:1.29',
        imageRef: 'sha256:1',
        hash: 'h',
        restartCount: 0,
        podSandboxId: p?.sandboxes[0]?.id ?? '',
        attempt: 0,
        terminationMessagePath: '',
        terminationMessagePolicy: '',
        terminationGracePeriodSeconds: undefined,
      })),
    });
  }

  syncPod(_pod: Pod, _status: RuntimePodStatus): Promise<PodSyncResult> {
    return Promise.reject(new Error('not used by the PLEG'));
  }
  killPod(): Promise<void> {
    return Promise.reject(new Error('not used by the PLEG'));
  }
  removePod(): Promise<void> {
    return Promise.reject(new Error('not used by the PLEG'));
  }
}

const running: { stop(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((p) => p.stop()));
});

function setup() {
  const runtime = new FakeRuntime();
  let now = 1_000_000;
  // A period far longer than any test: the timer never fires, relists are driven by hand.
  const pleg = createPleg({ runtime, logger: nullLogger, monotonic: () => now, periodMs: 3_600_000 });
  running.push(pleg);
  const events: PodLifecycleEvent[] = [];
  /** The cache entry each event saw when it was emitted. */
  const seen: (RuntimePodStatus | undefined)[] = [];
  // The event handler can only be installed through start(); see started() below.
  const handler = (e: PodLifecycleEvent) => {
    events.push(e);
    seen.push(pleg.cache.get(e.uid));
  };
  return {
    runtime,
    pleg,
    events,
    seen,
    handler,
    advance: (ms: number) => (now += ms),
    take: () =>
      events
        .splice(0)
        .map((e) => `${e.type}:${e.id}`)
        .sort(),
  };
}

/**
 * Starts the PLEG (the only way to install the event handler) and lets its first relist finish: the fake
 * runtime answers with settled promises, so one macrotask turn is enough.
 */
async function started(s: ReturnType<typeof setup>): Promise<void> {
  s.pleg.start(s.handler);
  await new Promise<void>((r) => setImmediate(r));
}

describe('PLEG relist', () => {
  it('emits ContainerStarted for a new pod, after the cache holds its status', async () => {
    const s = setup();
    s.runtime.pods.set('u1', {
      uid: 'u1',
      sandboxes: [{ id: 's1', ready: true }],
      containers: [{ id: 'c1', name: 'app', state: 'running' }],
    });
    await started(s);
    assert.deepEqual(s.take(), ['ContainerStarted:c1', 'ContainerStarted:s1']);
    for (const status of s.seen) {
      assert.ok(status, 'the cache was filled before the event was emitted');
      assert.equal(status.containers[0]?.state, 'running');
    }
    assert.deepEqual(s.runtime.statusCalls, ['u1'], 'one status read per changed pod');
    assert.deepEqual(
      s.pleg.runtimePods()?.map((p) => p.uid),
      ['u1'],
    );
  });

  it('emits nothing and reads no status when nothing changed', async () => {
    const s = setup();
    s.runtime.pods.set('u1', { uid: 'u1', sandboxes: [{ id: 's1', ready: true }], containers: [] });
    await started(s);
    s.take();
    await s.pleg.relist();
    assert.deepEqual(s.take(), []);
    assert.deepEqual(s.runtime.statusCalls, ['u1']);
  });

  it('does not re-read a started pod whose worker already cached what the relist sees, and dates that status to the relist', async () => {
    const s = setup();
    await started(s);
    s.runtime.pods.set('u1', {
      uid: 'u1',
      sandboxes: [{ id: 's1', ready: true }],
      containers: [{ id: 'c1', name: 'app', state: 'running' }],
    });
    // What the pod worker's read after starting the pod leaves in the cache.
    s.pleg.cache.set('u1', await s.runtime.getPodStatus('u1', 'pod-u1', 'ns'));
    s.runtime.statusCalls.length = 0;
    s.advance(1_000);
    await s.pleg.relist();
    assert.deepEqual(s.take(), ['ContainerStarted:c1', 'ContainerStarted:s1']);
    assert.deepEqual(s.runtime.statusCalls, [], 'no second read of the same status');
    assert.equal(s.pleg.cache.get('u1')?.timestamp, 1_001_000, 'current as of the relist');
  });

  it('re-reads a started pod whose cached status shows other containers or states than the relist', async () => {
    const s = setup();
    await started(s);
    const c = { id: 'c1', name: 'app', state: 'created' as RuntimeContainerState };
    s.runtime.pods.set('u1', { uid: 'u1', sandboxes: [{ id: 's1', ready: true }], containers: [c] });
    s.pleg.cache.set('u1', await s.runtime.getPodStatus('u1', 'pod-u1', 'ns'));
    s.runtime.statusCalls.length = 0;
    c.state = 'running';
    s.seen.length = 0;
    await s.pleg.relist();
    assert.deepEqual(s.take(), ['ContainerStarted:c1', 'ContainerStarted:s1']);
    assert.deepEqual(s.runtime.statusCalls, ['u1']);
    assert.equal(s.seen[0]?.containers[0]?.state, 'running');
  });

  it('re-reads a pod with a died container even when the cache already shows it exited', async () => {
    const s = setup();
    const c = { id: 'c1', name: 'app', state: 'running' as RuntimeContainerState };
    s.runtime.pods.set('u1', { uid: 'u1', sandboxes: [{ id: 's1', ready: true }], containers: [c] });
    await started(s);
    s.take();
    c.state = 'exited';
    // The termination message may come from a log still being written: read again, not reused.
    s.pleg.cache.set('u1', await s.runtime.getPodStatus('u1', 'pod-u1', 'ns'));
    s.runtime.statusCalls.length = 0;
    await s.pleg.relist();
    assert.deepEqual(s.take(), ['ContainerDied:c1']);
    assert.deepEqual(s.runtime.statusCalls, ['u1']);
  });

  it('emits ContainerDied when a container exits, with the new state already cached', async () => {
    const s = setup();
    const c = { id: 'c1', name: 'app', state: 'running' as RuntimeContainerState };
    s.runtime.pods.set('u1', { uid: 'u1', sandboxes: [{ id: 's1', ready: true }], containers: [c] });
    await started(s);
    s.take();
    s.seen.length = 0;
    c.state = 'exited';
    await s.pleg.relist();
    assert.deepEqual(s.take(), ['ContainerDied:c1']);
    assert.equal(s.seen[0]?.containers[0]?.state, 'exited');
  });

  it('emits ContainerRemoved when an exited container disappears', async () => {
    const s = setup();
    const pod: FakePod = {
      uid: 'u1',
      sandboxes: [{ id: 's1', ready: true }],
      containers: [{ id: 'c1', name: 'app', state: 'exited' }],
    };
    s.runtime.pods.set('u1', pod);
    await started(s);
    s.take();
    pod.containers = [];
    await s.pleg.relist();
    assert.deepEqual(s.take(), ['ContainerRemoved:c1']);
  });

  it('emits ContainerDied and ContainerRemoved for a running container that vanished', async () => {
    const s = setup();
    const pod: FakePod = {
      uid: 'u1',
      sandboxes: [{ id: 's1', ready: true }],
      containers: [{ id: 'c1', name: 'app', state: 'running' }],
    };
    s.runtime.pods.set('u1', pod);
    await started(s);
    s.take();
    pod.containers = [];
    await s.pleg.relist();
    assert.deepEqual(s.take(), ['ContainerDied:c1', 'ContainerRemoved:c1']);
  });

  it('treats the sandbox like a container: not ready is died', async () => {
    const s = setup();
    const pod: FakePod = { uid: 'u1', sandboxes: [{ id: 's1', ready: true }], containers: [] };
    s.runtime.pods.set('u1', pod);
    await started(s);
    s.take();
    pod.sandboxes[0]!.ready = false;
    await s.pleg.relist();
    assert.deepEqual(s.take(), ['ContainerDied:s1']);
  });

  it('drops the cached status of a pod that left the runtime and emits its removals', async () => {
    const s = setup();
    s.runtime.pods.set('u1', {
      uid: 'u1',
      sandboxes: [{ id: 's1', ready: false }],
      containers: [{ id: 'c1', name: 'app', state: 'exited' }],
    });
    await started(s);
    s.take();
    assert.ok(s.pleg.cache.get('u1'));
    s.runtime.pods.delete('u1');
    s.seen.length = 0;
    await s.pleg.relist();
    assert.deepEqual(s.take(), ['ContainerRemoved:c1', 'ContainerRemoved:s1']);
    assert.equal(s.pleg.cache.get('u1'), undefined);
    assert.deepEqual(s.seen, [undefined, undefined], 'the cache entry was gone before the events');
  });

  it('emits again at the next relist when reading the pod status failed', async () => {
    const s = setup();
    s.runtime.pods.set('u1', {
      uid: 'u1',
      sandboxes: [{ id: 's1', ready: true }],
      containers: [{ id: 'c1', name: 'app', state: 'running' }],
    });
    s.runtime.failStatusFor.add('u1');
    await started(s);
    assert.deepEqual(s.take(), [], 'no event without a fresh status');
    assert.equal(s.pleg.cache.get('u1'), undefined);
    s.runtime.failStatusFor.delete('u1');
    await s.pleg.relist();
    assert.deepEqual(s.take(), ['ContainerStarted:c1', 'ContainerStarted:s1']);
    assert.ok(s.pleg.cache.get('u1'));
  });

  it('re-emits a change of a known pod when its status read failed once', async () => {
    const s = setup();
    const c = { id: 'c1', name: 'app', state: 'running' as RuntimeContainerState };
    s.runtime.pods.set('u1', { uid: 'u1', sandboxes: [{ id: 's1', ready: true }], containers: [c] });
    await started(s);
    s.take();
    c.state = 'exited';
    s.runtime.failStatusFor.add('u1');
    await s.pleg.relist();
    assert.deepEqual(s.take(), []);
    assert.equal(s.pleg.cache.get('u1')?.containers[0]?.state, 'running', 'the old status stays cached');
    s.runtime.failStatusFor.delete('u1');
    await s.pleg.relist();
    assert.deepEqual(s.take(), ['ContainerDied:c1']);
    assert.equal(s.pleg.cache.get('u1')?.containers[0]?.state, 'exited');
  });

  it('keeps the last good relist when listing fails, and turns unhealthy after the threshold', async () => {
    const s = setup();
    s.runtime.pods.set('u1', { uid: 'u1', sandboxes: [{ id: 's1', ready: true }], containers: [] });
    await started(s);
    s.take();
    assert.equal(s.pleg.healthy().ok, true);
    s.runtime.failList = true;
    s.advance(PLEG_RELIST_THRESHOLD_MS);
    await s.pleg.relist();
    assert.deepEqual(s.take(), []);
    assert.deepEqual(
      s.pleg.runtimePods()?.map((p) => p.uid),
      ['u1'],
    );
    assert.equal(s.pleg.healthy().ok, true, 'exactly at the threshold is still healthy');
    s.advance(1);
    const h = s.pleg.healthy();
    assert.equal(h.ok, false);
    assert.match(h.message, /PLEG is not healthy/);
    s.runtime.failList = false;
    await s.pleg.relist();
    assert.equal(s.pleg.healthy().ok, true);
  });

  it('does not let an older status replace a newer one in the cache', () => {
    const s = setup();
    const status = (timestamp: number): RuntimePodStatus => ({
      uid: 'u1',
      name: 'p',
      namespace: 'ns',
      sandboxes: [],
      containers: [],
      timestamp,
    });
    s.pleg.cache.set('u1', status(10));
    s.pleg.cache.set('u1', status(5));
    assert.equal(s.pleg.cache.get('u1')?.timestamp, 10);
    s.pleg.cache.set('u1', status(11));
    assert.equal(s.pleg.cache.get('u1')?.timestamp, 11);
  });

  it('reports every relist to the optional metrics hook: duration, and interval since the last good one', async () => {
    const runtime = new FakeRuntime();
    let now = 5_000;
    const relists: [number, number | undefined][] = [];
    const pleg = createPleg({
      runtime,
      logger: nullLogger,
      monotonic: () => now,
      periodMs: 3_600_000,
      metrics: { relisted: (d, i) => relists.push([d, i]) },
    });
    running.push(pleg);
    const slowList = runtime.listPods.bind(runtime);
    runtime.listPods = () => {
      now += 40; // the list call takes 40 ms
      return slowList();
    };
    await pleg.relist();
    now += 960;
    await pleg.relist();
    runtime.failList = true;
    now += 1000;
    await pleg.relist();
    runtime.failList = false;
    now += 1000;
    await pleg.relist();
    assert.deepEqual(relists, [
      [0.04, undefined],
      [0.04, 1],
      [0.04, 1.04],
      // measured from the start of the last successful relist: the failed one does not count
      [0.04, 2.08],
    ]);
  });

  it('tells the metrics hook it was seen active after each relist whose list succeeded, not after a failed one', async () => {
    const runtime = new FakeRuntime();
    let seen = 0;
    const pleg = createPleg({
      runtime,
      logger: nullLogger,
      periodMs: 3_600_000,
      metrics: { relisted: () => undefined, seenActive: () => seen++ },
    });
    running.push(pleg);
    await pleg.relist();
    runtime.failList = true;
    await pleg.relist();
    assert.equal(seen, 1);
    runtime.failList = false;
    await pleg.relist();
    assert.equal(seen, 2);
  });
});
