import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { IMAGE, podManifest, removeManifest, writeManifest } from '../kit/bed.ts';
import { eventually } from '../kit/poll.ts';
import { findPod, useKubelet } from './support.ts';
import type { ContainerStatus, PodCondition } from '../../src/api/types.ts';

describe('liveness, readiness and startup probes on real containerd', () => {
  const t = useKubelet();

  const statusOf = (pod: string): ContainerStatus | undefined =>
    findPod(t.k.kubelet, pod)?.status?.containerStatuses?.[0];
  const conditionOf = (pod: string, type: string): PodCondition | undefined =>
    findPod(t.k.kubelet, pod)?.status?.conditions?.find((c) => c.type === type);
  const eventsOf = (pod: string) => t.k.events.filter((e) => e.pod === `default/${pod}-itest`);

  /** Runs a shell command in the pod's current container. */
  async function shIn(pod: string, script: string): Promise<void> {
    const id = (statusOf(pod)?.containerID ?? '').replace(/^containerd:\/\//, '');
    const res = await t.env.cri.runtime.execSync(id, ['sh', '-c', script], 5);
    assert.equal(res.exitCode, 0, `exec ${script}: ${res.stderr.toString()}`);
  }

  it('restarts a container whose liveness probe fails, with Unhealthy and Killing events', async () => {
    await writeManifest(
      t.env,
      'liveness.yaml',
      podManifest('liveness', {
        containers: [
          {
            name: 'main',
            image: IMAGE,
            command: ['sh', '-c', 'touch /tmp/healthy; sleep 2; rm /tmp/healthy; exec sleep 3600'],
            livenessProbe: {
              exec: { command: ['cat', '/tmp/healthy'] },
              periodSeconds: 1,
              failureThreshold: 2,
              terminationGracePeriodSeconds: 1,
            },
          },
        ],
      }),
    );
    const restarted = await eventually(
      'restartCount 1 after liveness failures',
      () => {
        const s = statusOf('liveness');
        return s && s.restartCount >= 1 ? s : undefined;
      },
      60_000,
      () => statusOf('liveness'),
    );
    assert.ok(restarted.lastState.terminated, 'the killed run is the last state');
    assert.equal(
      restarted.lastState.terminated.exitCode,
      137,
      'sleep as PID 1 ignores SIGTERM: killed after the probe grace period',
    );
    const events = eventsOf('liveness');
    assert.ok(
      events.some(
        (e) =>
          e.reason === 'Unhealthy' &&
          e.type === 'Warning' &&
          /^Liveness probe failed: cat: can't open '\/tmp\/healthy'/.test(e.message),
      ),
      JSON.stringify(events),
    );
    assert.ok(
      events.some(
        (e) =>
          e.reason === 'Killing' &&
          e.message.includes('Container main failed liveness probe, will be restarted'),
      ),
      JSON.stringify(events),
    );
    await removeManifest(t.env, 'liveness.yaml');
  });

  it('flips the Ready condition with the readiness probe, without restarting the container', async () => {
    await writeManifest(
      t.env,
      'readiness.yaml',
      podManifest('readiness', {
        containers: [
          {
            name: 'main',
            image: IMAGE,
            command: ['sleep', '3600'],
            readinessProbe: {
              exec: { command: ['cat', '/tmp/ready'] },
              periodSeconds: 1,
              failureThreshold: 1,
            },
          },
        ],
      }),
    );
    await eventually('running and not ready', () => {
      const s = statusOf('readiness');
      return s?.state.running &&
        s.started === true &&
        !s.ready &&
        conditionOf('readiness', 'Ready')?.status === 'False'
        ? true
        : undefined;
    });
    assert.equal(conditionOf('readiness', 'ContainersReady')?.status, 'False');

    await shIn('readiness', 'touch /tmp/ready');
    await eventually(
      'Ready True',
      () => (conditionOf('readiness', 'Ready')?.status === 'True' ? true : undefined),
      30_000,
      () => findPod(t.k.kubelet, 'readiness')?.status,
    );
    assert.equal(statusOf('readiness')?.ready, true);

    await shIn('readiness', 'rm /tmp/ready');
    await eventually(
      'Ready False again',
      () => (conditionOf('readiness', 'Ready')?.status === 'False' ? true : undefined),
      30_000,
      () => findPod(t.k.kubelet, 'readiness')?.status,
    );
    assert.equal(statusOf('readiness')?.restartCount, 0, 'readiness never restarts');
    assert.ok(
      eventsOf('readiness').some(
        (e) => e.reason === 'Unhealthy' && e.message.startsWith('Readiness probe failed:'),
      ),
    );
    await removeManifest(t.env, 'readiness.yaml');
  });

  it('holds liveness and readiness back until the startup probe succeeded', async () => {
    await writeManifest(
      t.env,
      'startup.yaml',
      podManifest('startup', {
        containers: [
          {
            name: 'main',
            image: IMAGE,
            command: ['sh', '-c', 'sleep 4; touch /tmp/started; exec sleep 3600'],
            startupProbe: {
              exec: { command: ['cat', '/tmp/started'] },
              periodSeconds: 1,
              failureThreshold: 30,
            },
            // Would kill the container in its first seconds if it ran before startup succeeded.
            livenessProbe: {
              exec: { command: ['cat', '/tmp/started'] },
              periodSeconds: 1,
              failureThreshold: 1,
            },
            readinessProbe: { exec: { command: ['cat', '/tmp/started'] }, periodSeconds: 1 },
          },
        ],
      }),
    );
    const before = await eventually('running, not started yet', () => {
      const s = statusOf('startup');
      return s?.state.running ? s : undefined;
    });
    assert.equal(before.started, false);
    assert.equal(before.ready, false);
    const started = await eventually(
      'started and ready',
      () => {
        const s = statusOf('startup');
        return s?.started && s.ready ? s : undefined;
      },
      60_000,
      () => statusOf('startup'),
    );
    assert.equal(started.restartCount, 0, 'liveness did not kill the container while it was starting');
    const events = eventsOf('startup');
    assert.ok(events.some((e) => e.reason === 'Unhealthy' && e.message.startsWith('Startup probe failed:')));
    assert.ok(!events.some((e) => e.message.startsWith('Liveness probe failed')), JSON.stringify(events));
    assert.ok(!events.some((e) => e.message.startsWith('Readiness probe failed')), JSON.stringify(events));
    await removeManifest(t.env, 'startup.yaml');
  });

  it('reaches the pod IP with httpGet (named port) and tcpSocket probes', async () => {
    await writeManifest(
      t.env,
      'network.yaml',
      podManifest('network', {
        containers: [
          {
            name: 'main',
            image: IMAGE,
            command: ['sh', '-c', 'mkdir -p /www && echo ok > /www/healthz && exec httpd -f -p 8080 -h /www'],
            ports: [{ name: 'http', containerPort: 8080 }],
            readinessProbe: { httpGet: { path: '/healthz', port: 'http' }, periodSeconds: 1 },
            livenessProbe: { tcpSocket: { port: 8080 }, periodSeconds: 1, failureThreshold: 1 },
          },
        ],
      }),
    );
    await eventually(
      'ready through httpGet',
      () => (statusOf('network')?.ready ? true : undefined),
      30_000,
      () => findPod(t.k.kubelet, 'network')?.status,
    );
    // Break the HTTP answer: readiness turns false with the upstream message; TCP still connects.
    await shIn('network', 'rm /www/healthz');
    await eventually(
      'not ready after a 404',
      () => (statusOf('network')?.ready === false ? true : undefined),
      30_000,
      () => findPod(t.k.kubelet, 'network')?.status,
    );
    assert.ok(
      eventsOf('network').some(
        (e) =>
          e.reason === 'Unhealthy' &&
          e.message === 'Readiness probe failed: HTTP probe failed with statuscode: 404',
      ),
    );
    assert.equal(statusOf('network')?.restartCount, 0, 'the tcpSocket liveness probe kept passing');
    await removeManifest(t.env, 'network.yaml');
  });
});
