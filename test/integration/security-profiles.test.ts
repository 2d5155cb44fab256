/**
 * Seccomp, procMount, sysctl and AppArmor handling on real containerd 1.6: what the kubelet sends
 * is what the container gets (seccomp mode in /proc/self/status, masked /proc paths, sysctl
 * values), and what admission refuses never reaches the runtime.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { IMAGE, NODE, podManifest, setupEnv, writeManifest, type Env } from '../kit/bed.ts';
import { eventually } from '../kit/poll.ts';
import { findPod, startKubelet, waitForPhase, type RunningKubelet as Running } from './support.ts';
import type { Container, Pod } from '../../src/api/types.ts';

function useSecurityKubelet(opts: { seccompDefault?: boolean; allowedUnsafeSysctls?: string[] }) {
  let env: Env | undefined;
  let k: Running | undefined;
  before(async () => {
    env = await setupEnv();
    await mkdir(env.manifests, { recursive: true });
    await mkdir(join(env.rootDir, 'seccomp'), { recursive: true });
    // No pod cgroups: this file is about the security options alone.
    k = await startKubelet(env, { cgroupsPerQOS: false, config: opts });
  });
  after(async () => {
    await k?.stop();
    await env?.close();
  });
  return {
    get env(): Env {
      if (!env) throw new Error('env read outside a test');
      return env;
    },
    get k(): Running {
      if (!k) throw new Error('kubelet read outside a test');
      return k;
    },
  };
}

async function logOf(t: { env: Env; k: Running }, name: string, container: string): Promise<string> {
  const uid = findPod(t.k.kubelet, name)?.pod.metadata.uid ?? '';
  return readFile(join(t.env.logsDir, `default_${name}-${NODE}_${uid}`, container, '0.log'), 'utf8').catch(
    () => '',
  );
}

/** The seccomp mode (0 off, 2 filter) the container's own process reports. */
const SECCOMP_MODE = ['sh', '-c', "grep '^Seccomp:' /proc/self/status"];

function probe(name: string, securityContext?: Container['securityContext']): Container {
  const c: Container = { name, image: IMAGE, command: SECCOMP_MODE };
  if (securityContext) c.securityContext = securityContext;
  return c;
}

async function runToCompletion(
  t: { env: Env; k: Running },
  name: string,
  spec: Partial<Pod['spec']> & Pick<Pod['spec'], 'containers'>,
  annotations: Record<string, string> = {},
): Promise<void> {
  const pod = podManifest(name, { restartPolicy: 'Never', ...spec });
  pod.metadata.annotations = annotations;
  await writeManifest(t.env, `${name}.yaml`, pod);
  await waitForPhase(t.k.kubelet, name, 'Succeeded', 60_000);
}

describe('security profiles on real containerd (seccompDefault off)', () => {
  const t = useSecurityKubelet({ allowedUnsafeSysctls: ['kernel.msgmax'] });

  it('applies RuntimeDefault and Unconfined seccomp as asked, Unconfined when unset', async () => {
    await runToCompletion(
      t,
      'seccomp-modes',
      {
        containers: [
          probe('runtime-default', { seccompProfile: { type: 'RuntimeDefault' } }),
          probe('unconfined', { seccompProfile: { type: 'Unconfined' } }),
          probe('unset'),
          probe('legacy'),
        ],
      },
      { 'container.seccomp.security.alpha.kubernetes.io/legacy': 'runtime/default' },
    );
    assert.match(await logOf(t, 'seccomp-modes', 'runtime-default'), /Seccomp:\s+2/);
    assert.match(await logOf(t, 'seccomp-modes', 'unconfined'), /Seccomp:\s+0/);
    assert.match(await logOf(t, 'seccomp-modes', 'unset'), /Seccomp:\s+0/);
    assert.match(
      await logOf(t, 'seccomp-modes', 'legacy'),
      /Seccomp:\s+2/,
      'deprecated container annotation',
    );
  });

  it('takes the pod-level profile unless the container sets its own', async () => {
    await runToCompletion(t, 'seccomp-pod-level', {
      securityContext: { seccompProfile: { type: 'RuntimeDefault' } },
      containers: [probe('inherits'), probe('overrides', { seccompProfile: { type: 'Unconfined' } })],
    });
    assert.match(await logOf(t, 'seccomp-pod-level', 'inherits'), /Seccomp:\s+2/);
    assert.match(await logOf(t, 'seccomp-pod-level', 'overrides'), /Seccomp:\s+0/);
  });

  it('runs a privileged container without seccomp and without masked /proc paths', async () => {
    await runToCompletion(t, 'privileged', {
      containers: [
        {
          name: 'main',
          image: IMAGE,
          securityContext: { privileged: true, seccompProfile: { type: 'RuntimeDefault' } },
          command: [
            'sh',
            '-c',
            "grep '^Seccomp:' /proc/self/status; echo masks=$(grep -c ' /proc/keys ' /proc/mounts)",
          ],
        },
      ],
    });
    const log = await logOf(t, 'privileged', 'main');
    assert.match(log, /Seccomp:\s+0/);
    assert.match(log, /masks=0/);
  });

  it('enforces a Localhost profile from <rootDir>/seccomp: mkdir fails with EPERM', async () => {
    const profile = {
      defaultAction: 'SCMP_ACT_ALLOW',
      syscalls: [{ names: ['mkdir', 'mkdirat'], action: 'SCMP_ACT_ERRNO' }],
    };
    await mkdir(join(t.env.rootDir, 'seccomp', 'profiles'), { recursive: true });
    await writeFile(join(t.env.rootDir, 'seccomp', 'profiles', 'deny-mkdir.json'), JSON.stringify(profile));
    await runToCompletion(t, 'seccomp-localhost', {
      containers: [
        {
          name: 'main',
          image: IMAGE,
          securityContext: {
            seccompProfile: { type: 'Localhost', localhostProfile: 'profiles/deny-mkdir.json' },
          },
          command: ['sh', '-c', "grep '^Seccomp:' /proc/self/status; mkdir /tmp/x 2>&1; echo rc=$?"],
        },
      ],
    });
    const log = await logOf(t, 'seccomp-localhost', 'main');
    assert.match(log, /Seccomp:\s+2/);
    assert.match(log, /Operation not permitted/);
    assert.match(log, /rc=1/);
  });

  it('reports CreateContainerError with an event when the Localhost profile does not exist', async () => {
    await writeManifest(
      t.env,
      'seccomp-missing.yaml',
      podManifest('seccomp-missing', {
        containers: [
          {
            name: 'main',
            image: IMAGE,
            command: ['sleep', '3600'],
            securityContext: { seccompProfile: { type: 'Localhost', localhostProfile: 'absent.json' } },
          },
        ],
      }),
    );
    const waiting = await eventually('CreateContainerError', () => {
      const s = findPod(t.k.kubelet, 'seccomp-missing')?.status?.containerStatuses?.[0];
      return s?.state.waiting?.reason === 'CreateContainerError' ? s.state.waiting : undefined;
    });
    const expectedPath = join(t.env.rootDir, 'seccomp', 'absent.json');
    assert.ok(waiting.message?.includes(expectedPath), `message names the profile: ${waiting.message}`);
    const event = t.k.events.find(
      (e) => e.pod.includes('/seccomp-missing-') && e.reason === 'Failed' && e.message.includes(expectedPath),
    );
    assert.ok(event, 'a Failed event names the missing profile');
  });

  it('reports CreateContainerConfigError for a Localhost profile that leaves the profile root', async () => {
    await writeManifest(
      t.env,
      'seccomp-escape.yaml',
      podManifest('seccomp-escape', {
        containers: [
          {
            name: 'main',
            image: IMAGE,
            command: ['sleep', '3600'],
            securityContext: { seccompProfile: { type: 'Localhost', localhostProfile: '../escape.json' } },
          },
        ],
      }),
    );
    const waiting = await eventually('CreateContainerConfigError', () => {
      const s = findPod(t.k.kubelet, 'seccomp-escape')?.status?.containerStatuses?.[0];
      return s?.state.waiting?.reason === 'CreateContainerConfigError' ? s.state.waiting : undefined;
    });
    assert.match(waiting.message ?? '', /must not contain '\.\.'/);
  });

  it('masks /proc paths by default and not for the Unmasked procMount', async () => {
    // /proc/keys is masked, /proc/bus read-only by default (both exist on this kernel; /proc/kcore not).
    const masks = [
      'sh',
      '-c',
      "echo masks=$(grep -c ' /proc/keys ' /proc/mounts) ro=$(grep -c ' /proc/bus ' /proc/mounts)",
    ];
    await runToCompletion(t, 'procmount', {
      containers: [
        { name: 'default', image: IMAGE, command: masks },
        { name: 'unmasked', image: IMAGE, command: masks, securityContext: { procMount: 'Unmasked' } },
      ],
    });
    assert.match(await logOf(t, 'procmount', 'default'), /masks=1 ro=1/);
    assert.match(await logOf(t, 'procmount', 'unmasked'), /masks=0 ro=0/);
  });

  it('sets safe sysctls (slash form too) and allowed unsafe ones in the pod', async () => {
    await runToCompletion(t, 'sysctls-ok', {
      securityContext: {
        sysctls: [
          { name: 'kernel/shm_rmid_forced', value: '1' },
          { name: 'net.ipv4.ip_local_port_range', value: '20000 30000' },
          { name: 'kernel.msgmax', value: '12345' },
        ],
      },
      containers: [
        {
          name: 'main',
          image: IMAGE,
          command: [
            'sh',
            '-c',
            'cat /proc/sys/kernel/shm_rmid_forced /proc/sys/net/ipv4/ip_local_port_range /proc/sys/kernel/msgmax',
          ],
        },
      ],
    });
    const log = await logOf(t, 'sysctls-ok', 'main');
    assert.match(log, /\b1\n/);
    assert.match(log, /20000\s+30000/);
    assert.match(log, /12345/);
  });

  it('rejects a pod with a sysctl that is not allowed: Failed, SysctlForbidden, never started', async () => {
    await writeManifest(
      t.env,
      'sysctl-forbidden.yaml',
      podManifest('sysctl-forbidden', {
        securityContext: { sysctls: [{ name: 'net.core.somaxconn', value: '1024' }] },
        containers: [{ name: 'main', image: IMAGE, command: ['sleep', '3600'] }],
      }),
    );
    const view = await waitForPhase(t.k.kubelet, 'sysctl-forbidden', 'Failed');
    assert.equal(view.status?.reason, 'SysctlForbidden');
    assert.equal(view.status?.message, 'forbidden sysctl: "net.core.somaxconn" not allowlisted');
    assert.ok(t.k.events.some((e) => e.pod.includes('/sysctl-forbidden-') && e.reason === 'SysctlForbidden'));
    const sandboxes = await t.env.cri.runtime.listPodSandbox({
      labelSelector: { 'io.kubernetes.pod.uid': view.pod.metadata.uid ?? '' },
    });
    assert.equal(sandboxes.length, 0);
  });

  it('rejects net.* sysctls for a hostNetwork pod', async () => {
    await writeManifest(
      t.env,
      'sysctl-hostnet.yaml',
      podManifest('sysctl-hostnet', {
        hostNetwork: true,
        securityContext: { sysctls: [{ name: 'net.ipv4.ip_local_port_range', value: '20000 30000' }] },
        containers: [{ name: 'main', image: IMAGE, command: ['sleep', '3600'] }],
      }),
    );
    const view = await waitForPhase(t.k.kubelet, 'sysctl-hostnet', 'Failed');
    assert.equal(view.status?.reason, 'SysctlForbidden');
    assert.equal(
      view.status?.message,
      'forbidden sysctl: "net.ipv4.ip_local_port_range" not allowed with host net enabled',
    );
  });

  it('rejects an AppArmor profile on this host without AppArmor, and runs an unconfined one', async () => {
    const pod = podManifest('apparmor-default', {
      containers: [{ name: 'main', image: IMAGE, command: ['sleep', '3600'] }],
    });
    pod.metadata.annotations = { 'container.apparmor.security.beta.kubernetes.io/main': 'runtime/default' };
    await writeManifest(t.env, 'apparmor-default.yaml', pod);
    const view = await waitForPhase(t.k.kubelet, 'apparmor-default', 'Failed');
    assert.equal(view.status?.reason, 'AppArmor');
    assert.equal(view.status?.message, 'Cannot enforce AppArmor: AppArmor is not enabled on the host');

    await runToCompletion(
      t,
      'apparmor-unconfined',
      { containers: [{ name: 'main', image: IMAGE, command: ['true'] }] },
      { 'container.apparmor.security.beta.kubernetes.io/main': 'unconfined' },
    );
  });
});

describe('security profiles on real containerd (seccompDefault on)', () => {
  const t = useSecurityKubelet({ seccompDefault: true });

  it('runs containers that set no profile with RuntimeDefault, an explicit Unconfined without', async () => {
    await runToCompletion(t, 'seccomp-default', {
      containers: [probe('unset'), probe('unconfined', { seccompProfile: { type: 'Unconfined' } })],
    });
    assert.match(await logOf(t, 'seccomp-default', 'unset'), /Seccomp:\s+2/);
    assert.match(await logOf(t, 'seccomp-default', 'unconfined'), /Seccomp:\s+0/);
  });
});
