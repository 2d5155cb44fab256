import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { IMAGE, podManifest, removeManifest, sandboxesOf, writeManifest } from '../kit/bed.ts';
import { eventually } from '../kit/poll.ts';
import { findPod, useKubelet, waitForPhase } from './support.ts';

describe('security context and resources on real containerd', () => {
  const t = useKubelet();

  async function logOf(name: string, container: string): Promise<string> {
    const view = findPod(t.k.kubelet, name);
    const uid = view?.pod.metadata.uid ?? '';
    return readFile(join(t.env.logsDir, `default_${name}-itest_${uid}`, container, '0.log'), 'utf8').catch(
      () => '',
    );
  }

  it('refuses runAsNonRoot when the image runs as root: CreateContainerConfigError, never started', async () => {
    await writeManifest(
      t.env,
      'nonroot-bad.yaml',
      podManifest('nonroot-bad', {
        securityContext: { runAsNonRoot: true },
        containers: [{ name: 'main', image: IMAGE, command: ['sleep', '3600'] }],
      }),
    );
    const waiting = await eventually('CreateContainerConfigError', () => {
      const s = findPod(t.k.kubelet, 'nonroot-bad')?.status?.containerStatuses?.[0];
      return s?.state.waiting?.reason === 'CreateContainerConfigError' ? s.state.waiting : undefined;
    });
    assert.match(waiting.message ?? '', /container has runAsNonRoot and image will run as root/);
  });

  it('runs as the requested non-root user, with a read-only root filesystem', async () => {
    await writeManifest(
      t.env,
      'nonroot-ok.yaml',
      podManifest('nonroot-ok', {
        restartPolicy: 'Never',
        securityContext: { runAsNonRoot: true, runAsUser: 65534, runAsGroup: 65534 },
        containers: [
          {
            name: 'main',
            image: IMAGE,
            command: [
              'sh',
              '-c',
              'echo "uid=$(id -u) gid=$(id -g)"; touch /probe 2>/dev/null && echo rw || echo ro',
            ],
            securityContext: { readOnlyRootFilesystem: true },
          },
        ],
      }),
    );
    await waitForPhase(t.k.kubelet, 'nonroot-ok', 'Succeeded');
    const log = await logOf('nonroot-ok', 'main');
    assert.match(log, /uid=65534 gid=65534/);
    assert.match(log, / ro\n/);
  });

  it('applies the memory limit and cpu shares to the container cgroup', async () => {
    await writeManifest(
      t.env,
      'limits.yaml',
      podManifest('limits', {
        restartPolicy: 'Never',
        containers: [
          {
            name: 'main',
            image: IMAGE,
            resources: { limits: { memory: '64Mi', cpu: '500m' }, requests: { memory: '32Mi', cpu: '250m' } },
            command: [
              'sh',
              '-c',
              // cgroup v1 (these VMs) or v2, whichever the container sees.
              'cat /sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null || cat /sys/fs/cgroup/memory.max; ' +
                'cat /sys/fs/cgroup/cpu/cpu.shares 2>/dev/null || cat /sys/fs/cgroup/cpu.weight; ' +
                'cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us 2>/dev/null || cat /sys/fs/cgroup/cpu.max',
            ],
          },
        ],
      }),
    );
    const view = await waitForPhase(t.k.kubelet, 'limits', 'Succeeded');
    assert.equal(view.status?.qosClass, 'Burstable');
    const log = await logOf('limits', 'main');
    assert.match(log, /\b67108864\b/, `memory limit in: ${log}`);
    assert.match(log, /\b(256|10)\b/, 'cpu shares 256 (v1) or the equivalent weight (v2)');
    assert.match(log, /\b50000\b/, 'cfs quota 50000 for 500m with period 100000');
  });

  it('reports a container killed for exceeding its memory limit as OOMKilled, exit code 137', async () => {
    await writeManifest(
      t.env,
      'hog.yaml',
      podManifest('hog', {
        restartPolicy: 'Never',
        containers: [
          {
            name: 'main',
            image: IMAGE,
            // Burstable, so the container (not the shim sharing its pod cgroup) has the highest
            // OOM score: the bed's containerd runs without a negative oom_score_adj of its own.
            resources: { limits: { memory: '32Mi' }, requests: { memory: '8Mi' } },
            // A 128 MiB string in the shell's memory: four times the limit.
            command: ['sh', '-c', 'x=$(head -c 134217728 /dev/zero | tr "\\0" a); echo ${#x}'],
          },
        ],
      }),
    );
    const view = await waitForPhase(t.k.kubelet, 'hog', 'Failed');
    const terminated = view.status?.containerStatuses?.[0]?.state.terminated;
    assert.equal(terminated?.reason, 'OOMKilled', JSON.stringify(view.status?.containerStatuses));
    assert.equal(terminated?.exitCode, 137);
    // The shim shares the pod's memory cgroup and may not survive the squeeze: the kubelet must
    // still take the pod down (its first StopPodSandbox can fail on a closed shim connection).
    await removeManifest(t.env, 'hog.yaml');
    const uid = view.pod.metadata.uid ?? '';
    await eventually('the OOM-killed pod removed from the runtime', async () =>
      (await sandboxesOf(t.env, uid)).length === 0 ? true : undefined,
    );
  });
});
