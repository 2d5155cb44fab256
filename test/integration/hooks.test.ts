import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { IMAGE, podManifest, removeManifest, writeManifest } from '../kit/bed.ts';
import { eventually } from '../kit/poll.ts';
import { findPod, waitForPhase, useKubelet } from './support.ts';
import type { ContainerStatus } from '../../src/api/types.ts';

describe('lifecycle hooks and termination messages on real containerd', () => {
  const t = useKubelet();

  const statusOf = (pod: string, container: string): ContainerStatus | undefined =>
    findPod(t.k.kubelet, pod)?.status?.containerStatuses?.find((c) => c.name === container);

  /** The container's output so far, from its CRI log file. */
  async function logOf(containerID: string): Promise<string> {
    const s = await t.env.cri.runtime.containerStatus(containerID.replace(/^containerd:\/\//, ''));
    return readFile(s.logPath, 'utf8').catch(() => '');
  }

  it('runs postStart in the container right after it starts: the container sees what the hook wrote', async () => {
    await writeManifest(
      t.env,
      'poststart.yaml',
      podManifest('poststart', {
        containers: [
          {
            name: 'main',
            image: IMAGE,
            command: [
              'sh',
              '-c',
              'until [ -f /tmp/started ]; do sleep 0.1; done; echo "saw: $(cat /tmp/started)"; exec sleep 3600',
            ],
            lifecycle: { postStart: { exec: { command: ['sh', '-c', 'echo hook-ran > /tmp/started'] } } },
          },
        ],
      }),
    );
    const view = await waitForPhase(t.k.kubelet, 'poststart', 'Running');
    const id = view.status?.containerStatuses?.[0]?.containerID ?? '';
    const log = await eventually('container log shows the hook output', async () => {
      const text = await logOf(id);
      return text.includes('saw: hook-ran') ? text : undefined;
    });
    assert.match(log, /stdout F saw: hook-ran/);
    assert.ok(
      !t.k.events.some((e) => e.reason === 'FailedPostStartHook' && e.pod === 'default/poststart-itest'),
    );
    await removeManifest(t.env, 'poststart.yaml');
  });

  it('kills a container whose postStart fails, with FailedPostStartHook and PostStartHookError', async () => {
    await writeManifest(
      t.env,
      'badstart.yaml',
      podManifest('badstart', {
        containers: [
          {
            name: 'main',
            image: IMAGE,
            command: ['sleep', '3600'],
            lifecycle: { postStart: { exec: { command: ['sh', '-c', 'echo no-go; exit 7'] } } },
          },
        ],
      }),
    );
    const waiting = await eventually(
      'waiting reason PostStartHookError',
      () => {
        const s = statusOf('badstart', 'main');
        return s?.state.waiting?.reason === 'PostStartHookError' ? s : undefined;
      },
      30_000,
      () => findPod(t.k.kubelet, 'badstart')?.status,
    );
    assert.match(
      waiting.state.waiting?.message ?? '',
      /Exec lifecycle hook \(\[sh -c echo no-go; exit 7\]\)/,
    );
    assert.match(waiting.state.waiting?.message ?? '', /exited with 7/);
    // The container was started, then stopped by the kubelet (SIGTERM: 143, or SIGKILL: 137).
    assert.ok(
      [137, 143].includes(waiting.lastState.terminated?.exitCode ?? -1),
      JSON.stringify(waiting.lastState),
    );
    const events = t.k.events.filter((e) => e.pod === 'default/badstart-itest');
    const failed = events.find((e) => e.reason === 'FailedPostStartHook');
    assert.equal(failed?.type, 'Warning');
    assert.match(failed?.message ?? '', /no-go/);
    assert.ok(events.some((e) => e.reason === 'Killing' && e.message === 'FailedPostStartHook'));
    await removeManifest(t.env, 'badstart.yaml');
  });

  it('runs preStop (exec and httpGet) before the container gets SIGTERM', async () => {
    const hostDir = join(t.env.dir, 'prestop');
    const trap = (file: string) => `trap "echo TERM >> /host/${file}; echo got-TERM; exit 0" TERM`;
    await writeManifest(
      t.env,
      'prestop.yaml',
      podManifest('prestop', {
        terminationGracePeriodSeconds: 10,
        volumes: [{ name: 'host', hostPath: { path: hostDir, type: 'DirectoryOrCreate' } }],
        containers: [
          {
            name: 'exec',
            image: IMAGE,
            command: ['sh', '-c', `${trap('exec-order')}; echo up; while true; do sleep 0.1; done`],
            volumeMounts: [{ name: 'host', mountPath: '/host' }],
            lifecycle: {
              preStop: {
                exec: {
                  command: [
                    'sh',
                    '-c',
                    'echo preStop >> /host/exec-order; echo prestop-marker > /proc/1/fd/1',
                  ],
                },
              },
            },
          },
          {
            name: 'http',
            image: IMAGE,
            command: [
              'sh',
              '-c',
              `${trap('http-order')}; mkdir -p /www; httpd -f -vv -p 8080 -h /www 2>>/host/http-order & ` +
                'while true; do sleep 0.1; done',
            ],
            ports: [{ name: 'web', containerPort: 8080 }],
            volumeMounts: [{ name: 'host', mountPath: '/host' }],
            lifecycle: { preStop: { httpGet: { port: 'web', path: '/prestop-hook' } } },
          },
        ],
      }),
    );
    const view = await waitForPhase(t.k.kubelet, 'prestop', 'Running');
    const execID = view.status?.containerStatuses?.find((c) => c.name === 'exec')?.containerID ?? '';
    // The path, not the status: the container is removed with the pod, its log file stays.
    const execLog = (await t.env.cri.runtime.containerStatus(execID.replace(/^containerd:\/\//, ''))).logPath;
    await removeManifest(t.env, 'prestop.yaml');
    const read = (f: string) => readFile(join(hostDir, f), 'utf8').catch(() => '');
    const execOrder = await eventually('exec container saw preStop then TERM', async () => {
      const text = await read('exec-order');
      return text.includes('TERM') ? text : undefined;
    });
    assert.equal(execOrder, 'preStop\nTERM\n');
    const httpOrder = await eventually('http container saw the preStop request then TERM', async () => {
      const text = await read('http-order');
      return text.includes('TERM') ? text : undefined;
    });
    const lines = httpOrder.trim().split('\n');
    const hookAt = lines.findIndex((l) => l.endsWith('url:/prestop-hook'));
    assert.ok(hookAt >= 0 && hookAt < lines.indexOf('TERM'), httpOrder);
    // The exec hook's marker, written to the container's stdout, comes before the TERM trap's line.
    const log = await readFile(execLog, 'utf8');
    const marker = log.indexOf('prestop-marker');
    assert.ok(marker >= 0 && marker < log.indexOf('got-TERM'), log);
    assert.ok(!t.k.events.some((e) => e.reason === 'FailedPreStopHook' && e.pod === 'default/prestop-itest'));
  });

  it('puts what the container wrote to its terminationMessagePath into its terminated state', async () => {
    await writeManifest(
      t.env,
      'tmsg.yaml',
      podManifest('tmsg', {
        restartPolicy: 'Never',
        containers: [
          {
            name: 'custom',
            image: IMAGE,
            command: ['sh', '-c', 'printf "custom bye" > /tmp/bye; exit 3'],
            terminationMessagePath: '/tmp/bye',
          },
          {
            name: 'default',
            image: IMAGE,
            command: ['sh', '-c', 'printf "default path" > /dev/termination-log'],
          },
          {
            name: 'fallback',
            image: IMAGE,
            // One stream: stdout and stderr are separate pipes, so their relative order in the log is
            // not defined.
            command: ['sh', '-c', 'echo line-1; echo "fatal: disk on fire"; exit 2'],
            terminationMessagePolicy: 'FallbackToLogsOnError',
          },
          {
            name: 'fallback-ok',
            image: IMAGE,
            command: ['sh', '-c', 'echo all good'],
            terminationMessagePolicy: 'FallbackToLogsOnError',
          },
        ],
      }),
    );
    const view = await waitForPhase(t.k.kubelet, 'tmsg', 'Failed');
    const terminated = (name: string) =>
      view.status?.containerStatuses?.find((c) => c.name === name)?.state.terminated;
    assert.equal(terminated('custom')?.exitCode, 3);
    assert.equal(terminated('custom')?.message, 'custom bye');
    assert.equal(terminated('default')?.message, 'default path');
    assert.equal(terminated('fallback')?.message, 'line-1\nfatal: disk on fire\n');
    assert.equal(terminated('fallback-ok')?.message, undefined, 'a success never reads the log');
  });

  it('keeps the message of the previous run in lastState after a restart', async () => {
    await writeManifest(
      t.env,
      'tmsg-restart.yaml',
      podManifest('tmsg-restart', {
        containers: [
          {
            name: 'main',
            image: IMAGE,
            command: ['sh', '-c', 'printf "crashed once" > /dev/termination-log; exit 1'],
          },
        ],
      }),
    );
    const s = await eventually('restarted with lastState', () => {
      const c = statusOf('tmsg-restart', 'main');
      return c && c.restartCount >= 1 && c.lastState.terminated ? c : undefined;
    });
    assert.equal(s.lastState.terminated?.message, 'crashed once');
    await removeManifest(t.env, 'tmsg-restart.yaml');
  });
});
