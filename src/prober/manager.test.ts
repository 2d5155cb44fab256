import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Container, KubeletPod, Pod, Probe } from '../api/types.ts';
import { createMemoryRecorder } from '../api/events.ts';
import { KubeletError } from '../util/errors.ts';
import { nullLogger } from '../util/logger.ts';
import { createProbeManager } from './index.ts';
import type { ProbeContainer, ProbeManager } from './index.ts';
import type { ProbeMetrics } from './types.ts';
import { createFakeClock, probedPod, type FakeClock } from './testing.ts';

const UID = 'uid-1';

function execProbe(extra: Partial<Probe> = {}): Probe {
  return {
    exec: { command: ['check'] },
    periodSeconds: 10,
    timeoutSeconds: 1,
    successThreshold: 1,
    failureThreshold: 3,
    ...extra,
  };
}

function makePod(container: Partial<Container>, spec: Partial<Pod['spec']> = {}): KubeletPod {
  return probedPod(container, spec);
}

interface Harness {
  m: ProbeManager;
  clock: FakeClock;
  events: ReturnType<typeof createMemoryRecorder>['events'];
  changes: string[];
  /** Exec calls: containerId and command. */
  calls: { containerId: string; cmd: string[] }[];
  /** What the next exec calls return: exit codes by container ID (default 0), or a thrown error. */
  exitCode: Map<string, number | Error>;
  running(id: string, startedAt?: number): void;
}

function harness(
  opts: { random?: number; hang?: (signal?: AbortSignal) => Promise<never>; metrics?: ProbeMetrics } = {},
): Harness {
  const clock = createFakeClock();
  const recorder = createMemoryRecorder();
  const changes: string[] = [];
  const calls: { containerId: string; cmd: string[] }[] = [];
  const exitCode = new Map<string, number | Error>();
  const m = createProbeManager({
    exec: async (containerId, cmd, _timeout, signal) => {
      calls.push({ containerId, cmd });
      if (opts.hang) return opts.hang(signal);
      const code = exitCode.get(containerId) ?? 0;
      if (code instanceof Error) throw code;
      return { stdout: Buffer.from(code === 0 ? 'ok' : 'not ok'), stderr: Buffer.from(''), exitCode: code };
    },
    podIP: () => '10.0.0.2',
    recorder,
    logger: nullLogger,
    onChange: (uid) => changes.push(uid),
    now: () => clock.now(),
    monotonic: () => clock.monotonic(),
    random: () => opts.random ?? 0,
    timers: clock.timers,
    metrics: opts.metrics,
  });
  return {
    m,
    clock,
    events: recorder.events,
    changes,
    calls,
    exitCode,
    running(id, startedAt = clock.now()) {
      const c: ProbeContainer = { name: 'main', containerId: id, state: 'running', startedAt };
      m.updateContainers(UID, [c]);
    },
  };
}

describe('probe manager', () => {
  it('reports a running container without probes as started and ready, an exited one as neither', async () => {
    const h = harness();
    h.m.addPod(makePod({}));
    h.running('c1');
    assert.equal(h.m.isStarted(UID, 'main'), true);
    assert.equal(h.m.isReady(UID, 'main'), true);
    h.m.updateContainers(UID, [{ name: 'main', containerId: 'c1', state: 'exited', startedAt: 0 }]);
    assert.equal(h.m.isStarted(UID, 'main'), false);
    assert.equal(h.m.isReady(UID, 'main'), false);
    assert.equal(h.m.restartReason(UID, 'main'), undefined);
    await h.m.stop();
  });

  it('keeps readiness false until the first success, then flips it only after failureThreshold failures', async () => {
    const h = harness();
    h.m.addPod(makePod({ readinessProbe: execProbe({ failureThreshold: 2 }) }));
    h.running('c1');
    assert.equal(h.m.isReady(UID, 'main'), false, 'readiness starts false');
    await h.clock.advance(0);
    assert.equal(h.m.isReady(UID, 'main'), true);
    assert.deepEqual(h.changes, [UID]);

    h.exitCode.set('c1', 1);
    await h.clock.advance(10_000);
    assert.equal(h.m.isReady(UID, 'main'), true, 'one failure is below the threshold of 2');
    await h.clock.advance(10_000);
    assert.equal(h.m.isReady(UID, 'main'), false);
    assert.deepEqual(h.changes, [UID, UID]);
    assert.deepEqual(
      h.events.filter((e) => e.reason === 'Unhealthy').map((e) => [e.type, e.message]),
      [
        ['Warning', 'Readiness probe failed: not ok'],
        ['Warning', 'Readiness probe failed: not ok'],
      ],
    );
    assert.equal(h.m.restartReason(UID, 'main'), undefined, 'readiness never restarts a container');
    await h.m.stop();
  });

  it('needs successThreshold successes in a row before readiness turns true', async () => {
    const h = harness();
    h.m.addPod(makePod({ readinessProbe: execProbe({ successThreshold: 2 }) }));
    h.running('c1');
    await h.clock.advance(0);
    assert.equal(h.m.isReady(UID, 'main'), false);
    await h.clock.advance(10_000);
    assert.equal(h.m.isReady(UID, 'main'), true);
    await h.m.stop();
  });

  it('asks for a restart after failureThreshold liveness failures and holds until a new container ID', async () => {
    const h = harness();
    h.m.addPod(makePod({ livenessProbe: execProbe({ terminationGracePeriodSeconds: 5 }) }));
    h.running('c1');
    h.exitCode.set('c1', 1);
    await h.clock.advance(0);
    await h.clock.advance(10_000);
    assert.equal(h.m.restartReason(UID, 'main'), undefined, 'two failures are below the threshold of 3');
    assert.equal(h.m.isReady(UID, 'main'), true, 'liveness does not decide readiness');
    await h.clock.advance(10_000);
    assert.deepEqual(h.m.restartReason(UID, 'main'), {
      probe: 'liveness',
      message: 'Container main failed liveness probe, will be restarted',
      terminationGracePeriodSeconds: 5,
    });
    assert.deepEqual(h.changes, [UID]);
    assert.equal(h.events.filter((e) => e.message === 'Liveness probe failed: not ok').length, 3);

    const probes = h.calls.length;
    await h.clock.advance(60_000);
    assert.equal(h.calls.length, probes, 'on hold: no probes while the container is being killed');

    h.running('c2');
    assert.equal(
      h.m.restartReason(UID, 'main'),
      undefined,
      'the new container starts with a passing liveness',
    );
    await h.clock.advance(10_000);
    assert.ok(h.calls.length > probes, 'probing resumed');
    assert.equal(h.calls.at(-1)?.containerId, 'c2');
    await h.m.stop();
  });

  it('words the restart reason without a restart under restartPolicy Never', async () => {
    const h = harness();
    h.m.addPod(makePod({ livenessProbe: execProbe({ failureThreshold: 1 }) }, { restartPolicy: 'Never' }));
    h.running('c1');
    h.exitCode.set('c1', 1);
    await h.clock.advance(0);
    assert.deepEqual(h.m.restartReason(UID, 'main'), {
      probe: 'liveness',
      message: 'Container main failed liveness probe',
    });
    await h.m.stop();
  });

  it('runs neither liveness nor readiness until the startup probe succeeded', async () => {
    const h = harness();
    h.m.addPod(
      makePod({
        startupProbe: execProbe({ exec: { command: ['startup'] }, failureThreshold: 30 }),
        readinessProbe: execProbe({ exec: { command: ['ready'] } }),
        livenessProbe: execProbe({ exec: { command: ['live'] } }),
      }),
    );
    h.running('c1');
    h.exitCode.set('c1', 1);
    await h.clock.advance(0);
    await h.clock.advance(20_000);
    const commands = () => h.calls.map((c) => c.cmd[0]);
    assert.deepEqual([...new Set(commands())], ['startup'], 'only the startup probe ran');
    assert.equal(h.m.isStarted(UID, 'main'), false);
    assert.equal(h.m.isReady(UID, 'main'), false);
    assert.equal(
      h.m.restartReason(UID, 'main'),
      undefined,
      'startup failures below the threshold kill nothing',
    );

    h.exitCode.set('c1', 0);
    await h.clock.advance(10_000);
    assert.equal(h.m.isStarted(UID, 'main'), true);
    // Startup success triggers the readiness probe at once.
    assert.equal(h.m.isReady(UID, 'main'), true);
    await h.clock.advance(10_000);
    assert.ok(commands().includes('live'), 'liveness runs once started');
    const startupRuns = commands().filter((c) => c === 'startup').length;
    await h.clock.advance(30_000);
    assert.equal(
      commands().filter((c) => c === 'startup').length,
      startupRuns,
      'startup stops probing once started',
    );
    await h.m.stop();
  });

  it('asks for a restart when the startup probe fails failureThreshold times', async () => {
    const h = harness();
    h.m.addPod(
      makePod({ startupProbe: execProbe({ failureThreshold: 2, terminationGracePeriodSeconds: 1 }) }),
    );
    h.running('c1');
    h.exitCode.set('c1', 1);
    await h.clock.advance(0);
    await h.clock.advance(10_000);
    assert.deepEqual(h.m.restartReason(UID, 'main'), {
      probe: 'startup',
      message: 'Container main failed startup probe, will be restarted',
      terminationGracePeriodSeconds: 1,
    });
    assert.equal(h.m.isStarted(UID, 'main'), false);
    await h.m.stop();
  });

  it('does not probe before initialDelaySeconds have passed since the container started', async () => {
    const h = harness();
    h.m.addPod(makePod({ readinessProbe: execProbe({ initialDelaySeconds: 15 }) }));
    h.running('c1');
    await h.clock.advance(0);
    await h.clock.advance(10_000);
    assert.equal(h.calls.length, 0);
    await h.clock.advance(10_000);
    assert.equal(h.calls.length, 1);
    assert.equal(h.m.isReady(UID, 'main'), true);
    await h.m.stop();
  });

  it('starts a new container ID afresh: readiness false again until it passes', async () => {
    const h = harness();
    h.m.addPod(makePod({ readinessProbe: execProbe({ initialDelaySeconds: 5 }) }));
    h.running('c1', h.clock.now() - 60_000);
    await h.clock.advance(0);
    assert.equal(h.m.isReady(UID, 'main'), true);
    h.running('c2');
    assert.equal(h.m.isReady(UID, 'main'), false);
    await h.clock.advance(10_000);
    assert.equal(h.m.isReady(UID, 'main'), true);
    assert.equal(h.calls.at(-1)?.containerId, 'c2');
    await h.m.stop();
  });

  it('probes a newly running container promptly for readiness', async () => {
    const h = harness();
    h.m.addPod(makePod({ readinessProbe: execProbe({ periodSeconds: 30 }) }));
    await h.clock.advance(0); // first round: no container yet
    assert.equal(h.calls.length, 0);
    h.running('c1');
    await h.clock.advance(0);
    assert.equal(h.calls.length, 1);
    assert.equal(h.m.isReady(UID, 'main'), true);
    await h.m.stop();
  });

  it('spreads the first probe over one period right after the kubelet started', async () => {
    const h = harness({ random: 0.5 });
    h.m.addPod(makePod({ livenessProbe: execProbe() }));
    h.running('c1', h.clock.now() - 60_000);
    await h.clock.advance(4_999);
    assert.equal(h.calls.length, 0);
    await h.clock.advance(1);
    assert.equal(h.calls.length, 1);
    await h.m.stop();
  });

  it('discards a probe that errors (after retries) and reports it', async () => {
    const h = harness();
    h.m.addPod(makePod({ livenessProbe: execProbe({ failureThreshold: 1 }) }));
    h.running('c1');
    h.exitCode.set('c1', new KubeletError('Unavailable', 'CRI ExecSync', 'runtime is down'));
    await h.clock.advance(0);
    assert.equal(h.calls.length, 3, 'an errored probe is retried up to 3 times');
    assert.equal(h.m.restartReason(UID, 'main'), undefined, 'an error is not a failure');
    assert.deepEqual(
      h.events.map((e) => e.message),
      ['Liveness probe errored: CRI ExecSync: runtime is down'],
    );
    await h.m.stop();
  });

  it('treats an exec that outlives its timeout as a failure', async () => {
    const h = harness();
    h.m.addPod(makePod({ livenessProbe: execProbe({ failureThreshold: 1 }) }));
    h.running('c1');
    h.exitCode.set('c1', new KubeletError('Unknown', 'CRI ExecSync', 'timeout 1s exceeded: <nil>'));
    await h.clock.advance(0);
    assert.equal(
      h.m.restartReason(UID, 'main')?.message,
      'Container main failed liveness probe, will be restarted',
    );
    assert.deepEqual(
      h.events.map((e) => e.message),
      ['Liveness probe failed: command "check" timed out'],
    );
    await h.m.stop();
  });

  it('stops liveness probing with a passing result once the pod is being deleted', async () => {
    const h = harness();
    const pod = makePod({ livenessProbe: execProbe({ failureThreshold: 1 }) });
    h.m.addPod(pod);
    h.running('c1');
    h.m.addPod({ ...pod, metadata: { ...pod.metadata, deletionTimestamp: '2026-01-01T00:00:00Z' } });
    h.exitCode.set('c1', 1);
    await h.clock.advance(60_000);
    assert.equal(h.calls.length, 0);
    assert.equal(h.m.restartReason(UID, 'main'), undefined);
    await h.m.stop();
  });

  it('stops probing a container that exited under restartPolicy Never', async () => {
    const h = harness();
    h.m.addPod(makePod({ readinessProbe: execProbe() }, { restartPolicy: 'Never' }));
    h.m.updateContainers(UID, [{ name: 'main', containerId: 'c1', state: 'exited', startedAt: 0 }]);
    await h.clock.advance(0);
    assert.equal(h.clock.pending(), 0, 'the worker ended: no timer left');
    assert.equal(h.m.isReady(UID, 'main'), false);
    await h.m.stop();
  });

  it('restarts a worker whose probe changed and stops one whose probe is gone', async () => {
    const h = harness();
    h.m.addPod(makePod({ readinessProbe: execProbe() }));
    h.running('c1');
    await h.clock.advance(0);
    assert.equal(h.m.isReady(UID, 'main'), true);
    h.m.addPod(makePod({ readinessProbe: execProbe() })); // same spec: nothing changes
    assert.equal(h.m.isReady(UID, 'main'), true);
    h.m.addPod(makePod({ readinessProbe: execProbe({ exec: { command: ['other'] } }) }));
    assert.equal(h.m.isReady(UID, 'main'), false, 'a new worker starts from the initial result');
    await h.clock.advance(0);
    assert.deepEqual(h.calls.at(-1)?.cmd, ['other']);
    h.m.addPod(makePod({}));
    assert.equal(h.m.isReady(UID, 'main'), true, 'no readiness probe any more');
    await h.clock.advance(0);
    assert.equal(h.clock.pending(), 0);
    await h.m.stop();
  });

  it('aborts a probe in flight and clears its timers when the pod is removed', async () => {
    let aborted = false;
    const h = harness({
      hang: (signal) =>
        new Promise<never>((_, reject) => {
          signal?.addEventListener('abort', () => {
            aborted = true;
            reject(new Error('aborted'));
          });
        }),
    });
    h.m.addPod(makePod({ livenessProbe: execProbe(), readinessProbe: execProbe() }));
    h.running('c1');
    await h.clock.advance(0);
    assert.equal(h.calls.length, 2, 'both probes are in flight');
    h.m.removePod(UID);
    await h.m.stop();
    assert.equal(aborted, true);
    assert.equal(h.clock.pending(), 0);
    assert.equal(h.events.length, 0, 'an aborted probe is not reported');
    assert.equal(h.m.isReady(UID, 'main'), true, 'a forgotten pod has no probes');
  });

  it('keeps probing readiness after stopLivenessAndStartup, so readiness falls while the pod shuts down', async () => {
    const h = harness();
    h.m.addPod(
      makePod({
        readinessProbe: execProbe({ exec: { command: ['ready'] }, failureThreshold: 1 }),
        livenessProbe: execProbe({ exec: { command: ['live'] }, failureThreshold: 1 }),
      }),
    );
    h.running('c1');
    await h.clock.advance(0);
    assert.equal(h.m.isReady(UID, 'main'), true);

    h.m.stopLivenessAndStartup(UID);
    h.m.addPod(
      makePod({
        readinessProbe: execProbe({ exec: { command: ['ready'] }, failureThreshold: 1 }),
        livenessProbe: execProbe({ exec: { command: ['live'] }, failureThreshold: 1 }),
      }),
    );
    const liveRuns = h.calls.filter((c) => c.cmd[0] === 'live').length;
    h.exitCode.set('c1', 1); // the container is shutting down: both checks would fail now
    await h.clock.advance(10_000);
    assert.equal(h.m.isReady(UID, 'main'), false, 'readiness still probes and turns false');
    assert.ok(h.changes.length >= 2, 'the readiness change is reported');
    assert.equal(
      h.calls.filter((c) => c.cmd[0] === 'live').length,
      liveRuns,
      'liveness stopped, even after addPod',
    );
    assert.equal(h.m.restartReason(UID, 'main'), undefined, 'no restart for a container being stopped');

    h.m.removePod(UID);
    await h.m.stop();
    assert.equal(h.clock.pending(), 0);
  });

  it('keeps the startup verdict of a container that had not started when liveness and startup stop', async () => {
    const h = harness();
    h.m.addPod(makePod({ startupProbe: execProbe({ failureThreshold: 30 }), readinessProbe: execProbe() }));
    h.running('c1');
    h.exitCode.set('c1', 1);
    await h.clock.advance(0);
    h.m.stopLivenessAndStartup(UID);
    await h.clock.advance(30_000);
    assert.equal(h.m.isStarted(UID, 'main'), false);
    assert.equal(h.m.isReady(UID, 'main'), false);
    await h.m.stop();
  });

  it('names which probe failed for a sidecar init container, which always restarts', async () => {
    const h = harness();
    const pod = makePod({}, { restartPolicy: 'Never' });
    pod.spec.initContainers = [
      {
        name: 'proxy',
        image: 'busybox',
        restartPolicy: 'Always',
        livenessProbe: execProbe({ failureThreshold: 1 }),
      },
    ];
    h.m.addPod(pod);
    h.m.updateContainers(UID, [
      { name: 'proxy', containerId: 'p1', state: 'running', startedAt: h.clock.now() },
    ]);
    h.exitCode.set('p1', 1);
    await h.clock.advance(0);
    assert.deepEqual(h.m.restartReason(UID, 'proxy'), {
      probe: 'liveness',
      message: 'Container proxy failed liveness probe, will be restarted',
    });
    await h.m.stop();
  });

  it('ignores pods after stop', async () => {
    const h = harness();
    await h.m.stop();
    h.m.addPod(makePod({ livenessProbe: execProbe() }));
    h.running('c1');
    await h.clock.advance(60_000);
    assert.equal(h.calls.length, 0);
    assert.equal(h.clock.pending(), 0);
  });

  it('expands $(VAR) in exec commands from literal env values only', async () => {
    const h = harness();
    h.m.addPod(
      makePod({
        env: [
          { name: 'FILE', value: '/tmp/healthy' },
          { name: 'REF', valueFrom: { fieldRef: { fieldPath: 'x' } } },
        ],
        readinessProbe: execProbe({ exec: { command: ['cat', '$(FILE)', '$(REF)', '$$(FILE)'] } }),
      }),
    );
    h.running('c1');
    await h.clock.advance(0);
    assert.deepEqual(h.calls[0]?.cmd, ['cat', '/tmp/healthy', '$(REF)', '$(FILE)']);
    await h.m.stop();
  });

  it('counts concluded probes per worker for the metrics hook, and forgets a stopped worker', async () => {
    const counted: string[] = [];
    const stopped: string[] = [];
    const h = harness({
      metrics: {
        probed: (l, result) =>
          counted.push(`${l.probeType}/${l.container}/${l.pod}/${l.namespace}/${l.podUID}=${result}`),
        workerStopped: (l) => stopped.push(`${l.probeType}/${l.container}`),
      },
    });
    h.m.addPod(makePod({ readinessProbe: execProbe(), livenessProbe: execProbe() }));
    h.running('c1');
    await h.clock.advance(0);
    h.exitCode.set('c1', 1);
    await h.clock.advance(10_000);
    h.exitCode.set('c1', new KubeletError('Unavailable', 'CRI ExecSync', 'runtime down'));
    await h.clock.advance(10_000);
    assert.deepEqual(counted.sort(), [
      'Liveness/main/web/default/uid-1=failed',
      'Liveness/main/web/default/uid-1=successful',
      'Readiness/main/web/default/uid-1=failed',
      'Readiness/main/web/default/uid-1=successful',
    ]);
    h.m.stopLivenessAndStartup(UID);
    assert.deepEqual(stopped, ['Liveness/main']);
    h.m.removePod(UID);
    assert.deepEqual(stopped, ['Liveness/main', 'Readiness/main']);
    const before = counted.length;
    await h.clock.advance(30_000);
    assert.equal(counted.length, before, 'stopped workers count nothing more');
    await h.m.stop();
  });
});
