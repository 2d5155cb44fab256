import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import { sleep } from '../util/abort.ts';
import { recordingLogger } from '../util/testing.ts';
import {
  ANNOTATION_POD_TERMINATION_GRACE_PERIOD,
  LABEL_CONTAINER_NAME,
  LABEL_POD_NAME,
  LABEL_POD_NAMESPACE,
  LABEL_POD_UID,
} from '../config/defaults.ts';
import { FakeRuntimeService } from '../runtime/cri/testing.ts';
import type { PodSandboxConfig } from '../runtime/cri/types.ts';
import { createContainerGC, type ContainerGCPolicy } from './index.ts';

const T0 = Date.parse('2026-01-10T08:00:00Z');
const MIN = 60_000;
/** Upstream's flag defaults: no minimum age, one dead instance per container, no node cap. */
const DEFAULT_POLICY: ContainerGCPolicy = { minAgeMs: 0, maxPerPodContainer: 1, maxContainers: -1 };

type State = 'running' | 'exited' | 'created' | 'unknown';

/** The fake CRI on a clock the test sets, a pod logs dir, and the kubelet's answers the GC asks for. */
async function setup(t: TestContext) {
  let nowMs = T0;
  const cri = new FakeRuntimeService({ clock: { now: () => nowMs, sleep } });
  const podLogsDir = await mkdtemp(join(tmpdir(), 'tskubelet-gc-'));
  t.after(() => rm(podLogsDir, { recursive: true, force: true }));
  const deleted = new Set<string>();
  const stop = new AbortController();
  const logger = recordingLogger();
  const env = { sourcesReady: true };

  function sandboxConfig(uid: string, attempt: number): PodSandboxConfig {
    const name = `pod-${uid}`;
    return {
      metadata: { name, namespace: 'ns', uid, attempt },
      logDirectory: join(podLogsDir, `ns_${name}_${uid}`),
      labels: { [LABEL_POD_UID]: uid, [LABEL_POD_NAME]: name, [LABEL_POD_NAMESPACE]: 'ns' },
    };
  }

  return {
    cri,
    podLogsDir,
    deleted,
    stop,
    logger,
    env,
    /** Sets the clock to `minutesAgo` before the moment the GC runs (T0 + 1 h). */
    at(minutesAgo: number) {
      nowMs = T0 + 60 * MIN - minutesAgo * MIN;
    },
    gc(
      policy: ContainerGCPolicy = DEFAULT_POLICY,
      extra: { passTimeoutMs?: number; callTimeoutMs?: number } = {},
    ) {
      return createContainerGC({
        runtime: cri,
        policy,
        podLogsDir,
        sourcesReady: () => env.sourcesReady,
        isPodDeleted: (uid) => deleted.has(uid),
        signal: stop.signal,
        logger,
        now: () => T0 + 60 * MIN,
        ...extra,
      });
    },
    /** A pod sandbox (ready) with its log directory on disk; returns its ID. */
    async sandbox(uid: string, attempt = 0): Promise<string> {
      const config = sandboxConfig(uid, attempt);
      await mkdir(config.logDirectory ?? '', { recursive: true });
      return cri.runPodSandbox(config);
    },
    /** A container instance (`attempt`) in `state`, with its log file (and a rotated one) on disk. */
    async container(sandboxId: string, name: string, attempt: number, state: State): Promise<string> {
      const sb = cri.sandboxes.get(sandboxId);
      if (!sb) throw new Error(`no sandbox ${sandboxId}`);
      const uid = sb.status.metadata.uid;
      const config = sandboxConfig(uid, sb.status.metadata.attempt);
      const id = await cri.createContainer(
        sandboxId,
        {
          metadata: { name, attempt },
          image: { image: 'busybox:1.29' },
          labels: {
            [LABEL_POD_UID]: uid,
            [LABEL_POD_NAME]: `pod-${uid}`,
            [LABEL_POD_NAMESPACE]: 'ns',
            [LABEL_CONTAINER_NAME]: name,
          },
          annotations: { [ANNOTATION_POD_TERMINATION_GRACE_PERIOD]: '5' },
          logPath: `${name}/${attempt}.log`,
        },
        config,
      );
      const logDir = join(sb.logDirectory, name);
      await mkdir(logDir, { recursive: true });
      await writeFile(join(logDir, `${attempt}.log`), 'line\n');
      await writeFile(join(logDir, `${attempt}.log.20260110-080000.gz`), 'old\n');
      if (state === 'created') return id;
      await cri.startContainer(id);
      if (state === 'exited') cri.exitContainer(id, 1);
      if (state === 'unknown') {
        const c = cri.containers.get(id);
        if (c) c.status.state = 'CONTAINER_UNKNOWN';
      }
      return id;
    },
    /** Container attempts left in the runtime, by (pod UID, name), sorted. */
    left(uid: string, name: string): number[] {
      return [...cri.containers.values()]
        .filter((c) => c.status.labels[LABEL_POD_UID] === uid && c.status.metadata.name === name)
        .map((c) => c.status.metadata.attempt)
        .sort((a, b) => a - b);
    },
    logDirs: () => readdir(podLogsDir).then((names) => names.sort()),
  };
}

describe('container GC: which dead containers stay', () => {
  const cases: {
    name: string;
    policy?: Partial<ContainerGCPolicy>;
    /** Per attempt: minutes since creation and state. */
    instances: { ageMin: number; state: State }[];
    stay: number[];
  }[] = [
    {
      name: 'a running container keeps its newest exited instance (kubectl logs --previous)',
      instances: [
        { ageMin: 50, state: 'exited' },
        { ageMin: 40, state: 'exited' },
        { ageMin: 30, state: 'exited' },
        { ageMin: 20, state: 'running' },
      ],
      stay: [2, 3],
    },
    {
      name: 'a container in back-off (no running instance) keeps its newest exited one',
      instances: [
        { ageMin: 50, state: 'exited' },
        { ageMin: 40, state: 'exited' },
        { ageMin: 30, state: 'exited' },
      ],
      stay: [2],
    },
    {
      name: 'containers younger than the minimum age are neither removed nor counted',
      policy: { minAgeMs: 10 * MIN },
      instances: [
        { ageMin: 20, state: 'exited' },
        { ageMin: 15, state: 'exited' },
        { ageMin: 5, state: 'exited' },
        { ageMin: 1, state: 'exited' },
      ],
      stay: [1, 2, 3],
    },
    {
      name: 'a minimum age of exactly the container age makes it collectable',
      policy: { minAgeMs: 20 * MIN },
      instances: [
        { ageMin: 25, state: 'exited' },
        { ageMin: 20, state: 'exited' },
      ],
      stay: [1],
    },
    {
      name: '--maximum-dead-containers-per-container=2 keeps the two newest',
      policy: { maxPerPodContainer: 2 },
      instances: [
        { ageMin: 50, state: 'exited' },
        { ageMin: 40, state: 'exited' },
        { ageMin: 30, state: 'exited' },
        { ageMin: 20, state: 'running' },
      ],
      stay: [1, 2, 3],
    },
    {
      name: 'a negative per-container limit keeps every instance',
      policy: { maxPerPodContainer: -1 },
      instances: [
        { ageMin: 50, state: 'exited' },
        { ageMin: 40, state: 'exited' },
        { ageMin: 30, state: 'running' },
      ],
      stay: [0, 1, 2],
    },
    {
      name: 'a per-container limit of 0 removes every dead instance, never the running one',
      policy: { maxPerPodContainer: 0 },
      instances: [
        { ageMin: 50, state: 'exited' },
        { ageMin: 40, state: 'exited' },
        { ageMin: 30, state: 'running' },
      ],
      stay: [2],
    },
    {
      name: 'created and unknown instances count as dead (an unknown one is stopped first)',
      instances: [
        { ageMin: 50, state: 'unknown' },
        { ageMin: 40, state: 'created' },
        { ageMin: 30, state: 'exited' },
      ],
      stay: [2],
    },
    {
      name: 'after a backward wall step the newest run by attempt stays, though created "earlier"',
      instances: [
        { ageMin: 30, state: 'exited' },
        { ageMin: 50, state: 'exited' },
      ],
      stay: [1],
    },
    {
      name: 'runs created "in the future" (the clock stepped back since) are age 0, not too young for GC',
      instances: [
        { ageMin: -30, state: 'exited' },
        { ageMin: -20, state: 'exited' },
      ],
      stay: [1],
    },
  ];
  for (const c of cases) {
    it(c.name, async (t) => {
      const w = await setup(t);
      w.at(60);
      const sb = await w.sandbox('u1');
      for (const [attempt, inst] of c.instances.entries()) {
        w.at(inst.ageMin);
        await w.container(sb, 'app', attempt, inst.state);
      }
      const result = await w.gc({ ...DEFAULT_POLICY, ...c.policy }).collect();
      assert.deepEqual(w.left('u1', 'app'), c.stay);
      assert.deepEqual(result.errors, []);
      assert.equal(result.removedContainers, c.instances.length - c.stay.length);
      assert.equal(w.cri.sandboxes.size, 1, 'the ready sandbox stays');
    });
  }

  it('stops an unknown-state container with its annotated grace period before removing it', async (t) => {
    const w = await setup(t);
    const sb = await w.sandbox('u1');
    w.at(50);
    const id = await w.container(sb, 'app', 0, 'unknown');
    w.at(40);
    await w.container(sb, 'app', 1, 'exited');
    await w.gc().collect();
    assert.deepEqual(w.cri.callsTo('stopContainer'), [[id, 5]]);
    assert.deepEqual(w.left('u1', 'app'), [1]);
  });

  it('removes a dead container’s log file and its rotated files, keeping the kept instance’s', async (t) => {
    const w = await setup(t);
    const sb = await w.sandbox('u1');
    w.at(50);
    await w.container(sb, 'app', 0, 'exited');
    w.at(40);
    await w.container(sb, 'app', 1, 'exited');
    await w.gc().collect();
    const dir = join(w.podLogsDir, 'ns_pod-u1_u1', 'app');
    assert.deepEqual((await readdir(dir)).sort(), ['1.log', '1.log.20260110-080000.gz']);
  });

  it('never touches containers that no kubelet created (no pod UID label)', async (t) => {
    const w = await setup(t);
    const sb = await w.sandbox('u1');
    for (const attempt of [0, 1, 2]) {
      const id = await w.cri.createContainer(
        sb,
        { metadata: { name: 'foreign', attempt }, image: { image: 'busybox:1.29' } },
        { metadata: { name: 'pod-u1', namespace: 'ns', uid: 'u1', attempt: 0 } },
      );
      await w.cri.startContainer(id);
      w.cri.exitContainer(id, 0);
    }
    w.deleted.add('u1');
    await w.gc().collect();
    assert.equal(w.cri.containers.size, 3);
    assert.deepEqual(w.cri.callsTo('removeContainer'), []);
  });
});

describe('container GC: the node-wide cap (--maximum-dead-containers)', () => {
  /** Pods a, b, c with 5, 2 and 1 exited `app` instances; a's are the newest, c's the oldest. */
  async function threePods(t: TestContext) {
    const w = await setup(t);
    const plan: [string, number, number][] = [
      ['c', 1, 59],
      ['b', 2, 50],
      ['a', 5, 40],
    ];
    for (const [uid, n, from] of plan) {
      const sb = await w.sandbox(uid);
      for (let attempt = 0; attempt < n; attempt++) {
        w.at(from - attempt);
        await w.container(sb, 'app', attempt, 'exited');
      }
    }
    return w;
  }

  it('first brings every (pod, container) down to an equal share, newest kept', async (t) => {
    const w = await threePods(t);
    await w.gc({ minAgeMs: 0, maxPerPodContainer: -1, maxContainers: 4 }).collect();
    // 8 dead > 4: share floor(4 / 3) = 1 each → 3 left, within the cap.
    assert.deepEqual([w.left('a', 'app'), w.left('b', 'app'), w.left('c', 'app')], [[4], [1], [0]]);
  });

  it('then removes the oldest across the node, even the last instance of a container', async (t) => {
    const w = await threePods(t);
    await w.gc({ minAgeMs: 0, maxPerPodContainer: -1, maxContainers: 2 }).collect();
    // Share max(1, floor(2 / 3)) = 1 → 3 left > 2: c's, the oldest, goes.
    assert.deepEqual([w.left('a', 'app'), w.left('b', 'app'), w.left('c', 'app')], [[4], [1], []]);
  });

  it('applies after the per-container limit and leaves running containers out of the count', async (t) => {
    const w = await threePods(t);
    const sb = [...w.cri.sandboxes.keys()].find((id) => id.includes('_c_'));
    assert.ok(sb);
    w.at(1);
    await w.container(sb, 'app', 9, 'running');
    await w.gc({ minAgeMs: 0, maxPerPodContainer: 1, maxContainers: 3 }).collect();
    assert.deepEqual([w.left('a', 'app'), w.left('b', 'app'), w.left('c', 'app')], [[4], [1], [0, 9]]);
  });
});

describe('container GC: deleted pods', () => {
  it('removes all containers, dead sandboxes and the log directory of a deleted pod', async (t) => {
    const w = await setup(t);
    const gone = await w.sandbox('gone');
    w.at(30);
    await w.container(gone, 'app', 0, 'exited');
    await w.container(gone, 'sidecar', 0, 'exited');
    await w.cri.stopPodSandbox(gone);
    const live = await w.sandbox('live');
    await w.container(live, 'app', 0, 'running');
    w.deleted.add('gone');

    const result = await w.gc().collect();
    assert.deepEqual([w.left('gone', 'app'), w.left('gone', 'sidecar')], [[], []]);
    assert.deepEqual([...w.cri.sandboxes.keys()], [live]);
    assert.deepEqual(await w.logDirs(), ['ns_pod-live_live']);
    assert.deepEqual(
      [result.removedContainers, result.removedSandboxes, result.removedLogDirs, result.errors],
      [2, 1, 1, []],
    );
    // Upstream DeleteSandbox: stop (network released) before remove.
    assert.deepEqual(
      w.cri.called().filter((m) => m === 'stopPodSandbox' || m === 'removePodSandbox'),
      ['stopPodSandbox', 'stopPodSandbox', 'removePodSandbox'],
    );
  });

  it('removes every dead sandbox of a deleted pod, the newest included', async (t) => {
    const w = await setup(t);
    w.at(50);
    const old = await w.sandbox('gone', 0);
    await w.cri.stopPodSandbox(old);
    w.at(40);
    const newer = await w.sandbox('gone', 1);
    await w.cri.stopPodSandbox(newer);
    w.deleted.add('gone');
    await w.gc().collect();
    assert.equal(w.cri.sandboxes.size, 0);
  });

  it('keeps what a deleted pod still runs: its running container, that sandbox and the log directory', async (t) => {
    const w = await setup(t);
    const sb = await w.sandbox('gone');
    w.at(30);
    await w.container(sb, 'app', 0, 'exited');
    await w.container(sb, 'stuck', 0, 'running');
    w.deleted.add('gone');
    await w.gc().collect();
    assert.deepEqual([w.left('gone', 'app'), w.left('gone', 'stuck')], [[], [0]]);
    assert.deepEqual([...w.cri.sandboxes.keys()], [sb]);
    assert.deepEqual(await w.logDirs(), ['ns_pod-gone_gone']);
  });

  it('treats no pod as deleted until every source is ready: only the per-container limit applies', async (t) => {
    const w = await setup(t);
    const sb = await w.sandbox('gone');
    w.at(50);
    await w.container(sb, 'app', 0, 'exited');
    w.at(40);
    await w.container(sb, 'app', 1, 'exited');
    await w.cri.stopPodSandbox(sb);
    w.deleted.add('gone');
    w.env.sourcesReady = false;
    await w.gc().collect();
    assert.deepEqual(w.left('gone', 'app'), [1]);
    assert.equal(w.cri.sandboxes.size, 1);
    assert.deepEqual(await w.logDirs(), ['ns_pod-gone_gone']);
  });

  it('leaves log directories of pods that are not deleted, and entries of other shapes', async (t) => {
    const w = await setup(t);
    await mkdir(join(w.podLogsDir, 'ns_pod-active_active'));
    await mkdir(join(w.podLogsDir, 'not-a-pod-dir'));
    await writeFile(join(w.podLogsDir, 'ns_file_gone'), '');
    await mkdir(join(w.podLogsDir, 'ns_pod-gone_gone'));
    w.deleted.add('gone');
    w.deleted.add('not-a-pod-dir');
    await w.gc().collect();
    assert.deepEqual(await w.logDirs(), ['not-a-pod-dir', 'ns_file_gone', 'ns_pod-active_active']);
  });
});

describe('container GC: pods that are still active', () => {
  it('leaves a running pod untouched: no stop or remove call at all', async (t) => {
    const w = await setup(t);
    const sb = await w.sandbox('u1');
    w.at(50);
    await w.container(sb, 'app', 0, 'exited');
    w.at(40);
    await w.container(sb, 'app', 1, 'running');
    await w.container(sb, 'sidecar', 0, 'running');
    const mark = w.cri.calls.length;
    const result = await w.gc().collect();
    assert.deepEqual(
      w.cri
        .called()
        .slice(mark)
        .filter((m) => !m.startsWith('list')),
      [],
    );
    assert.deepEqual([result.removedContainers, result.removedSandboxes, result.removedLogDirs], [0, 0, 0]);
    assert.deepEqual(await w.logDirs(), ['ns_pod-u1_u1']);
  });

  it('keeps the newest sandbox and any old one that still has containers; removes the other dead ones', async (t) => {
    const w = await setup(t);
    w.at(50);
    const oldest = await w.sandbox('u1', 0);
    await w.cri.stopPodSandbox(oldest);
    w.at(45);
    const withContainer = await w.sandbox('u1', 1);
    await w.container(withContainer, 'app', 0, 'exited');
    await w.cri.stopPodSandbox(withContainer);
    w.at(40);
    const previous = await w.sandbox('u1', 2);
    await w.cri.stopPodSandbox(previous);
    w.at(30);
    const newest = await w.sandbox('u1', 3);
    await w.cri.stopPodSandbox(newest); // not ready, e.g. between a sandbox death and its re-creation
    await w.gc().collect();
    assert.deepEqual([...w.cri.sandboxes.keys()].sort(), [newest, withContainer].sort());
  });
});

describe('container GC: failures and bounds', () => {
  it('logs a failing RemoveContainer with the pod and container, and carries on with the rest', async (t) => {
    const w = await setup(t);
    for (const uid of ['a', 'b']) {
      const sb = await w.sandbox(uid);
      w.at(30);
      await w.container(sb, 'app', 0, 'exited');
      await w.cri.stopPodSandbox(sb);
      w.deleted.add(uid);
    }
    w.cri.injectError('removeContainer', 'UNAVAILABLE', { once: true, message: 'runtime busy' });
    const result = await w.gc().collect();

    assert.equal(result.errors.length, 1);
    assert.equal(result.removedContainers, 1);
    const failed = ['a', 'b'].find((uid) => w.left(uid, 'app').length === 1);
    const other = failed === 'a' ? 'b' : 'a';
    assert.ok(failed, 'exactly one container is left');
    assert.deepEqual(w.left(other, 'app'), []);
    // The pod whose container is left keeps its sandbox and its log directory for the next pass.
    assert.deepEqual(
      [...w.cri.sandboxes.values()].map((s) => s.status.metadata.uid),
      [failed],
    );
    assert.deepEqual(await w.logDirs(), [`ns_pod-${failed}_${failed}`]);
    const line = w.logger.lines.find((l) => l.msg.includes('failed to remove dead container'));
    assert.ok(line);
    assert.equal(line.level, 'warn');
    assert.deepEqual(
      [line.fields['pod'], line.fields['podUID'], line.fields['container']],
      [`ns/pod-${failed}`, failed, 'app'],
    );
    assert.match(String(line.fields['err']), /runtime busy/);
    assert.ok(
      w.logger.lines.some((l) => l.level === 'error' && l.msg === 'container garbage collection failed'),
    );

    // The next pass finishes the job.
    const again = await w.gc().collect();
    assert.deepEqual(again.errors, []);
    assert.equal(w.cri.containers.size + w.cri.sandboxes.size, 0);
  });

  it('carries on to sandboxes and log directories when the first container listing fails', async (t) => {
    const w = await setup(t);
    const sb = await w.sandbox('gone');
    await w.cri.stopPodSandbox(sb);
    w.deleted.add('gone');
    w.cri.injectError('listContainers', 'UNAVAILABLE', { once: true });
    const result = await w.gc().collect();
    assert.equal(result.errors.length, 1);
    assert.deepEqual([result.removedSandboxes, result.removedLogDirs], [1, 1]);
  });

  it('runs one pass at a time: a second collect joins the pass in flight', async (t) => {
    const w = await setup(t);
    const sb = await w.sandbox('u1');
    w.at(50);
    await w.container(sb, 'app', 0, 'exited');
    w.at(40);
    await w.container(sb, 'app', 1, 'exited');
    const gc = w.gc();
    const first = gc.collect();
    const second = gc.collect();
    assert.equal(first, second);
    await first;
    assert.equal(w.cri.callsTo('removeContainer').length, 1);
    assert.equal(w.cri.callsTo('listContainers').length, 2, 'one pass: one listing per step');
    await gc.collect();
    assert.equal(w.cri.callsTo('listContainers').length, 4, 'a later collect is a new pass');
  });

  it('gives every CRI call a deadline and the pass’s signal', async (t) => {
    const w = await setup(t);
    const sb = await w.sandbox('u1');
    w.at(50);
    await w.container(sb, 'app', 0, 'exited');
    w.at(40);
    await w.container(sb, 'app', 1, 'exited');
    const mark = w.cri.calls.length;
    await w.gc(DEFAULT_POLICY, { callTimeoutMs: 1_234 }).collect();
    const calls = w.cri.calls.slice(mark);
    assert.ok(calls.length > 0);
    for (const c of calls) {
      assert.equal(c.opts?.timeoutMs, 1_234, c.method);
      assert.ok(c.opts?.signal, c.method);
    }
  });

  it('ends the pass in flight when the kubelet stops, without an error', async (t) => {
    const w = await setup(t);
    const sb = await w.sandbox('u1');
    w.at(50);
    await w.container(sb, 'app', 0, 'exited');
    w.at(40);
    await w.container(sb, 'app', 1, 'exited');
    w.cri.setLatency('removeContainer', Infinity);
    const gc = w.gc();
    const pass = gc.collect();
    await sleep(20);
    w.stop.abort();
    const result = await pass;
    assert.equal(result.aborted, true);
    assert.deepEqual(result.errors, []);
    assert.ok(!w.logger.lines.some((l) => l.level === 'error' || l.level === 'warn'));
    await gc.idle();
  });

  it('stops a pass at its deadline with a warning; the next pass carries on', async (t) => {
    const w = await setup(t);
    const sb = await w.sandbox('u1');
    w.at(50);
    await w.container(sb, 'app', 0, 'exited');
    w.at(40);
    await w.container(sb, 'app', 1, 'exited');
    w.cri.setLatency('removeContainer', Infinity);
    const result = await w.gc(DEFAULT_POLICY, { passTimeoutMs: 50 }).collect();
    assert.equal(result.aborted, true);
    assert.ok(w.logger.lines.some((l) => l.level === 'warn' && l.msg.includes('deadline')));
    w.cri.setLatency('removeContainer', 0);
    await w.gc().collect();
    assert.deepEqual(w.left('u1', 'app'), [1]);
  });
});
