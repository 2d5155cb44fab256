import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { ContainerStatus } from '../api/types.ts';
import { explainPod } from './explain.ts';
import { NOW, iso, only, pod, running, snap, status, waiting } from './testing.ts';

describe('explainPod: what holds a container', () => {
  it('reports ErrImagePull with the pull error and the back-off left', () => {
    const err = 'rpc error: code = NotFound desc = failed to pull and unpack image "no/such:1"';
    const f = only(
      snap({
        pod: pod([{ image: 'no/such:1' }]),
        status: status('Pending', false, [waiting('main', 'ErrImagePull', err)]),
        imagePulls: [
          { image: 'no/such:1', container: 'main', backOffLeftMs: 8_200, backOffMs: 10_000, lastError: err },
        ],
      }),
    );
    assert.equal(f.reason, 'ErrImagePull');
    assert.equal(f.container, 'main');
    assert.match(f.message, /Pulling image "no\/such:1" failed: rpc error: code = NotFound/);
    assert.match(f.message, /the next pull is in 9 s/);
    assert.deepEqual(f.evidence, {
      image: 'no/such:1',
      error: err,
      backOffLeftSeconds: 9,
      backOffSeconds: 10,
    });
  });

  it('reports ImagePullBackOff with the last pull error kept by the image manager and the back-off left', () => {
    const why = explainPod(
      snap({
        pod: pod([{ image: 'no/such:1' }]),
        status: status('Pending', false, [
          waiting('main', 'ImagePullBackOff', 'Back-off pulling image "no/such:1"'),
        ]),
        imagePulls: [
          {
            image: 'no/such:1',
            container: 'main',
            backOffLeftMs: 19_000,
            backOffMs: 20_000,
            lastError: 'not found',
          },
        ],
      }),
    );
    const f = why.findings[0];
    assert.equal(f?.reason, 'ImagePullBackOff');
    assert.equal(f?.evidence.backOffLeftSeconds, 19);
    assert.equal(f?.evidence.error, 'not found');
    assert.equal(
      why.summary,
      'Container main is waiting for image "no/such:1": the last pull failed, the next pull is in 19 s.',
    );
  });

  it('reports an image still pulling, for how long, and that its bytes so far are unknown', () => {
    const f = only(
      snap({
        status: status('Pending', false, [waiting('main', 'ContainerCreating')]),
        imagePulls: [{ image: 'busybox:1.29', container: 'main', pullingSince: NOW - 12_000 }],
        synced: false,
      }),
    );
    assert.equal(f.reason, 'PullingImage');
    assert.equal(f.evidence.pullingForSeconds, 12);
    assert.match(f.message, /pulling for 12 s \(the runtime reports no progress/);
    assert.equal(f.since, iso(NOW - 12_000));
  });

  it('reports the bytes pulled so far when they are known', () => {
    const f = only(
      snap({
        status: status('Pending', false, [waiting('main', 'ContainerCreating')]),
        imagePulls: [
          { image: 'busybox:1.29', container: 'main', pullingSince: NOW - 3_000, bytes: 3 * 1024 * 1024 },
        ],
      }),
    );
    assert.equal(f.evidence.bytes, 3 * 1024 * 1024);
    assert.match(f.message, /3Mi so far/);
  });

  it('reports crash-loop back-off with exit code, restarts, last termination, next try and last log lines', () => {
    const finished = Date.parse('2026-11-24T20:01:02.000Z');
    const cs: ContainerStatus = {
      ...waiting(
        'main',
        'CrashLoopBackOff',
        'back-off 40s restarting failed container=main pod=default/web',
        3,
      ),
      lastState: {
        terminated: {
          exitCode: 1,
          reason: 'Error',
          startedAt: iso(finished - 400),
          finishedAt: iso(finished),
        },
      },
    };
    const why = explainPod(
      snap({
        status: status('Running', false, [cs]),
        crashLoop: { main: { delayMs: 40_000, nextRetryAt: finished + 40_000 } },
        logTails: { main: ['starting', 'boom'] },
      }),
    );
    const f = why.findings[0];
    assert.equal(why.findings.length, 1);
    assert.equal(f?.reason, 'CrashLoopBackOff');
    assert.equal(f?.container, 'main');
    assert.equal(
      f?.message,
      'It exited with code 1 at 20:01:02 after running 0.4 s; it has been restarted 3 times and the next restart is in 12 s. Its last log line: "boom".',
    );
    assert.deepEqual(f?.evidence, {
      exitCode: 1,
      terminationReason: 'Error',
      finishedAt: iso(finished),
      restartCount: 3,
      backOffSeconds: 40,
      nextRetryInSeconds: 12,
      lastLogLines: ['starting', 'boom'],
    });
    assert.equal(f?.since, iso(finished));
    assert.equal(
      why.summary,
      'Container main is in crash-loop back-off: it exited with code 1 and is restarted in 12 s.',
    );
  });

  it('falls back to the back-off in the waiting message when the next try is not known', () => {
    const cs: ContainerStatus = {
      ...waiting(
        'main',
        'CrashLoopBackOff',
        'back-off 20s restarting failed container=main pod=default/web',
        2,
      ),
      lastState: { terminated: { exitCode: 137, reason: 'OOMKilled' } },
    };
    const f = only(snap({ status: status('Running', false, [cs]) }));
    assert.match(f.message, /code 137 \(OOMKilled\).*next restart is after its 20s back-off/);
    assert.equal(f.evidence.terminationReason, 'OOMKilled');
  });

  it('reports a failing readiness probe with its output and failures in a row against the threshold', () => {
    const f = only(
      snap({
        status: status('Running', false, [running('main', false)]),
        probes: [
          {
            container: 'main',
            probe: 'readiness',
            result: 'failure',
            consecutiveFailures: 4,
            failureThreshold: 3,
            lastResult: 'failure',
            lastOutput: 'HTTP probe failed with statuscode: 503\n',
            lastAt: NOW - 1_000,
          },
        ],
      }),
    );
    assert.equal(f.reason, 'ProbeFailing');
    assert.equal(f.container, 'main');
    assert.match(
      f.message,
      /readiness probe fails \(4 in a row, threshold 3\): HTTP probe failed with statuscode: 503; it is not Ready/,
    );
    assert.equal(f.evidence.probe, 'readiness');
    assert.equal(f.evidence.consecutiveFailures, 4);
    assert.equal(f.evidence.failureThreshold, 3);
    assert.equal(f.evidence.lastOutput, 'HTTP probe failed with statuscode: 503\n');
    assert.equal(f.evidence.lastProbeAt, iso(NOW - 1_000));
  });

  it('warns of a liveness probe failing below its threshold before it restarts the container', () => {
    const f = only(
      snap({
        probes: [
          {
            container: 'main',
            probe: 'liveness',
            result: 'success',
            consecutiveFailures: 2,
            failureThreshold: 3,
            lastResult: 'failure',
            lastOutput: 'cat: /tmp/healthy: No such file',
          },
        ],
      }),
    );
    assert.equal(f.reason, 'ProbeFailing');
    assert.match(
      f.message,
      /liveness probe fails \(2 in a row, threshold 3\).*at 3 failures in a row the container is restarted/,
    );
  });

  it('ignores probes that pass', () => {
    const why = explainPod(
      snap({
        probes: [
          {
            container: 'main',
            probe: 'readiness',
            result: 'success',
            consecutiveFailures: 0,
            failureThreshold: 3,
            lastResult: 'success',
            lastOutput: '',
          },
        ],
      }),
    );
    assert.deepEqual(why.findings, []);
  });

  it('reports an init container still running, for how long, and holds back the app containers', () => {
    const p = pod([{}], { initContainers: [{ name: 'setup', image: 'busybox:1.29' }] });
    const f = only(
      snap({
        pod: p,
        status: status(
          'Pending',
          false,
          [waiting('main', 'PodInitializing')],
          [running('setup', false, NOW - 15_000)],
        ),
        logTails: { setup: ['waiting for db'] },
      }),
    );
    assert.equal(f.reason, 'InitContainerRunning');
    assert.equal(f.container, 'setup');
    assert.equal(f.evidence.runningForSeconds, 15);
    assert.deepEqual(f.evidence.lastLogLines, ['waiting for db']);
    assert.match(f.message, /running for 15 s; the app containers start once it exits with code 0/);
  });

  it('reports an init container that fails, with its exit code and next restart', () => {
    const p = pod([{}], { initContainers: [{ name: 'setup', image: 'busybox:1.29' }] });
    const cs: ContainerStatus = {
      ...waiting(
        'setup',
        'CrashLoopBackOff',
        'back-off 10s restarting failed container=setup pod=default/web',
        1,
      ),
      lastState: { terminated: { exitCode: 2, reason: 'Error', finishedAt: iso(NOW - 4_000) } },
    };
    const why = explainPod(
      snap({
        pod: p,
        status: status('Pending', false, [waiting('main', 'PodInitializing')], [cs]),
        crashLoop: { setup: { delayMs: 10_000, nextRetryAt: NOW + 6_000 } },
        logTails: { setup: ['config missing'] },
      }),
    );
    assert.equal(why.findings.length, 1);
    const f = why.findings[0];
    assert.equal(f?.reason, 'InitContainerFailing');
    assert.equal(f?.evidence.exitCode, 2);
    assert.equal(f?.evidence.nextRetryInSeconds, 6);
    assert.equal(why.summary, 'Init container setup fails: it exited with code 2 and is restarted in 6 s.');
  });

  it('reports a container config error (CreateContainerConfigError) with its message', () => {
    const f = only(
      snap({
        status: status('Pending', false, [
          waiting('main', 'CreateContainerConfigError', 'secret "db" not found'),
        ]),
      }),
    );
    assert.equal(f.reason, 'CreateContainerConfigError');
    assert.match(f.message, /could not be created: secret "db" not found/);
  });

  it('reports a container that exited and is not restarted under restartPolicy Never', () => {
    const cs: ContainerStatus = {
      ...running(),
      state: { terminated: { exitCode: 3, reason: 'Error', finishedAt: iso(NOW - 1_000) } },
      ready: false,
    };
    const f = only(
      snap({
        pod: pod([{}], { restartPolicy: 'Never' }),
        status: status('Failed', false, [cs]),
        logTails: { main: ['fatal: bad input'] },
      }),
    );
    assert.equal(f.reason, 'Error');
    assert.equal(f.evidence.exitCode, 3);
    assert.match(f.message, /not restarted \(restartPolicy Never\)\. Its last log line: "fatal: bad input"/);
  });
});
