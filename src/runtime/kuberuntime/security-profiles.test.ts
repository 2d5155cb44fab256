import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Container, KubeletPod } from '../../api/types.ts';
import { hasCode } from '../../util/errors.ts';
import {
  appArmorProfileOf,
  appArmorRequired,
  containerAppArmorProfile,
  containerSeccompProfile,
  sandboxSeccompProfile,
  seccompProfileRoot,
  type SeccompOptions,
} from './security-profiles.ts';
import { generateSandboxConfig } from './sandbox-config.ts';

const ROOT = '/var/lib/kubelet/seccomp';
const opts: SeccompOptions = { profileRoot: ROOT, defaultToRuntimeDefault: false };
const withDefault: SeccompOptions = { profileRoot: ROOT, defaultToRuntimeDefault: true };

function pod(containers: Container[], mutate: (p: KubeletPod) => void = () => undefined): KubeletPod {
  const p: KubeletPod = { metadata: { name: 'p', namespace: 'ns', uid: 'u' }, spec: { containers } };
  mutate(p);
  return p;
}

const app = (securityContext?: Container['securityContext']): Container =>
  securityContext ? { name: 'app', image: 'x:1', securityContext } : { name: 'app', image: 'x:1' };

/** Sets a field tskubelet's Pod type does not declare (the 1.20 API has no appArmorProfile). */
function setAppArmor(target: object, profile: { type: string; localhostProfile?: string }): void {
  Object.assign(target, { appArmorProfile: profile });
}

describe('seccomp profile of a container', () => {
  it('is Unconfined when nothing is set, RuntimeDefault with seccompDefault', () => {
    const c = app();
    assert.deepEqual(containerSeccompProfile(pod([c]), c, opts), { profileType: 'Unconfined' });
    assert.deepEqual(containerSeccompProfile(pod([c]), c, withDefault), { profileType: 'RuntimeDefault' });
  });

  it('maps the three field types; an explicit Unconfined wins over seccompDefault', () => {
    const rd = app({ seccompProfile: { type: 'RuntimeDefault' } });
    const un = app({ seccompProfile: { type: 'Unconfined' } });
    const lh = app({ seccompProfile: { type: 'Localhost', localhostProfile: 'profiles/audit.json' } });
    assert.deepEqual(containerSeccompProfile(pod([rd]), rd, opts), { profileType: 'RuntimeDefault' });
    assert.deepEqual(containerSeccompProfile(pod([un]), un, withDefault), { profileType: 'Unconfined' });
    assert.deepEqual(containerSeccompProfile(pod([lh]), lh, opts), {
      profileType: 'Localhost',
      localhostRef: `${ROOT}/profiles/audit.json`,
    });
  });

  it('lets the container field win over the pod field', () => {
    const c = app({ seccompProfile: { type: 'Unconfined' } });
    const p = pod([c], (x) => (x.spec.securityContext = { seccompProfile: { type: 'RuntimeDefault' } }));
    assert.deepEqual(containerSeccompProfile(p, c, opts), { profileType: 'Unconfined' });
    const plain = app();
    const p2 = pod([plain], (x) => (x.spec.securityContext = { seccompProfile: { type: 'RuntimeDefault' } }));
    assert.deepEqual(containerSeccompProfile(p2, plain, opts), { profileType: 'RuntimeDefault' });
  });

  it('honours the deprecated annotations: container annotation before pod field, pod annotation last', () => {
    const c = app();
    const byContainerAnnotation = pod([c], (x) => {
      x.metadata.annotations = { 'container.seccomp.security.alpha.kubernetes.io/app': 'docker/default' };
      x.spec.securityContext = { seccompProfile: { type: 'Unconfined' } };
    });
    assert.deepEqual(containerSeccompProfile(byContainerAnnotation, c, opts), {
      profileType: 'RuntimeDefault',
    });

    const podFieldOverPodAnnotation = pod([c], (x) => {
      x.metadata.annotations = { 'seccomp.security.alpha.kubernetes.io/pod': 'runtime/default' };
      x.spec.securityContext = { seccompProfile: { type: 'Unconfined' } };
    });
    assert.deepEqual(containerSeccompProfile(podFieldOverPodAnnotation, c, opts), {
      profileType: 'Unconfined',
    });

    const podAnnotation = pod([c], (x) => {
      x.metadata.annotations = { 'seccomp.security.alpha.kubernetes.io/pod': 'localhost/deny.json' };
    });
    assert.deepEqual(containerSeccompProfile(podAnnotation, c, withDefault), {
      profileType: 'Localhost',
      localhostRef: `${ROOT}/deny.json`,
    });

    const unconfined = pod([c], (x) => {
      x.metadata.annotations = { 'seccomp.security.alpha.kubernetes.io/pod': 'unconfined' };
    });
    assert.deepEqual(containerSeccompProfile(unconfined, c, withDefault), { profileType: 'Unconfined' });
  });

  it('ignores another container’s annotation', () => {
    const c = app();
    const p = pod([c], (x) => {
      x.metadata.annotations = { 'container.seccomp.security.alpha.kubernetes.io/other': 'runtime/default' };
    });
    assert.deepEqual(containerSeccompProfile(p, c, opts), { profileType: 'Unconfined' });
  });

  it('refuses Localhost paths that leave the profile root, and unknown values', () => {
    const bad = (c: Container, p: KubeletPod = pod([c]), re: RegExp) =>
      assert.throws(
        () => containerSeccompProfile(p, c, opts),
        (err: unknown) => hasCode(err, 'InvalidArgument') && re.test(String(err)),
      );
    bad(
      app({ seccompProfile: { type: 'Localhost', localhostProfile: '../../etc/x.json' } }),
      undefined,
      /'\.\.'/,
    );
    bad(
      app({ seccompProfile: { type: 'Localhost', localhostProfile: '/etc/x.json' } }),
      undefined,
      /relative/,
    );
    bad(app({ seccompProfile: { type: 'Localhost' } }), undefined, /localhostProfile must be set/);
    bad(app({ seccompProfile: { type: 'Bogus' } }), undefined, /unsupported seccompProfile type/);
    const c = app();
    bad(
      c,
      pod([c], (x) => (x.metadata.annotations = { 'seccomp.security.alpha.kubernetes.io/pod': 'bogus' })),
      /not a valid seccomp profile/,
    );
  });

  it('runs the sandbox with RuntimeDefault whatever the pod asks for', () => {
    assert.deepEqual(sandboxSeccompProfile(), { profileType: 'RuntimeDefault' });
  });

  it('puts the profile root under the kubelet root dir', () => {
    assert.equal(seccompProfileRoot('/var/lib/kubelet'), '/var/lib/kubelet/seccomp');
  });
});

describe('AppArmor profile of a container', () => {
  it('is undefined when nothing is asked for', () => {
    const c = app();
    assert.equal(containerAppArmorProfile(pod([c]), c), undefined);
    assert.equal(appArmorRequired(pod([c])), false);
  });

  it('reads the container field, then the container annotation, then the pod field', () => {
    const c = app();
    setAppArmor(c.securityContext ?? (c.securityContext = {}), {
      type: 'Localhost',
      localhostProfile: 'mine',
    });
    const p = pod([c], (x) => {
      x.metadata.annotations = { 'container.apparmor.security.beta.kubernetes.io/app': 'runtime/default' };
      x.spec.securityContext = {};
      setAppArmor(x.spec.securityContext, { type: 'Unconfined' });
    });
    assert.deepEqual(containerAppArmorProfile(p, c), { profileType: 'Localhost', localhostRef: 'mine' });

    const plain = app();
    const p2 = pod([plain], (x) => {
      x.metadata.annotations = { 'container.apparmor.security.beta.kubernetes.io/app': 'runtime/default' };
      x.spec.securityContext = {};
      setAppArmor(x.spec.securityContext, { type: 'Unconfined' });
    });
    assert.deepEqual(containerAppArmorProfile(p2, plain), { profileType: 'RuntimeDefault' });

    const p3 = pod([plain], (x) => {
      x.spec.securityContext = {};
      setAppArmor(x.spec.securityContext, { type: 'Unconfined' });
    });
    assert.deepEqual(containerAppArmorProfile(p3, plain), { profileType: 'Unconfined' });
  });

  it('treats an unrecognised annotation value as no profile, as upstream', () => {
    const c = app();
    const p = pod([c], (x) => {
      x.metadata.annotations = { 'container.apparmor.security.beta.kubernetes.io/app': 'something' };
    });
    assert.equal(appArmorProfileOf(p, c), undefined);
  });

  it('refuses a Localhost profile without a name', () => {
    const c = app();
    const p = pod([c], (x) => {
      x.metadata.annotations = { 'container.apparmor.security.beta.kubernetes.io/app': 'localhost/' };
    });
    assert.throws(
      () => containerAppArmorProfile(p, c),
      (err: unknown) =>
        hasCode(err, 'InvalidArgument') && /missing localhost apparmor profile name/.test(String(err)),
    );
  });

  it('is required for any profile other than unconfined, in fields or annotations', () => {
    const c = app();
    const annotated = (v: string) =>
      pod([c], (x) => (x.metadata.annotations = { 'container.apparmor.security.beta.kubernetes.io/app': v }));
    assert.equal(appArmorRequired(annotated('unconfined')), false);
    assert.equal(appArmorRequired(annotated('runtime/default')), true);
    assert.equal(appArmorRequired(annotated('localhost/x')), true);

    const init: Container = { name: 'init', image: 'x:1', securityContext: {} };
    setAppArmor(init.securityContext ?? {}, { type: 'RuntimeDefault' });
    assert.equal(appArmorRequired(pod([c], (x) => (x.spec.initContainers = [init]))), true);

    const podLevel = pod([c], (x) => {
      x.spec.securityContext = {};
      setAppArmor(x.spec.securityContext, { type: 'Unconfined' });
    });
    assert.equal(appArmorRequired(podLevel), false);
  });

  it('refuses an appArmorProfile field of the wrong shape', () => {
    const c = app({});
    Object.assign(c.securityContext ?? {}, { appArmorProfile: 'runtime/default' });
    assert.throws(
      () => appArmorProfileOf(pod([c]), c),
      (err: unknown) => hasCode(err, 'InvalidArgument'),
    );
  });
});

describe('sandbox security context', () => {
  const sandbox = (p: KubeletPod) => generateSandboxConfig(p, { podLogsDir: '/l', hostDNS: {}, attempt: 0 });

  it('runs the sandbox with RuntimeDefault seccomp even when the pod asks for Unconfined', () => {
    const c = app();
    const p = pod([c], (x) => (x.spec.securityContext = { seccompProfile: { type: 'Unconfined' } }));
    assert.deepEqual(sandbox(p).linux?.securityContext?.seccomp, { profileType: 'RuntimeDefault' });
  });

  it('marks the sandbox privileged when any container, init containers included, is privileged', () => {
    assert.equal(sandbox(pod([app()])).linux?.securityContext?.privileged, false);
    assert.equal(sandbox(pod([app({ privileged: true })])).linux?.securityContext?.privileged, true);
    const init: Container = { name: 'init', image: 'x:1', securityContext: { privileged: true } };
    assert.equal(
      sandbox(pod([app()], (x) => (x.spec.initContainers = [init]))).linux?.securityContext?.privileged,
      true,
    );
  });

  it('passes sysctls to the runtime in the dotted form', () => {
    const p = pod([app()], (x) => {
      x.spec.securityContext = {
        sysctls: [
          { name: 'kernel/shm_rmid_forced', value: '1' },
          { name: 'net.ipv4.ip_local_port_range', value: '1024 65535' },
        ],
      };
    });
    assert.deepEqual(sandbox(p).linux?.sysctls, {
      'kernel.shm_rmid_forced': '1',
      'net.ipv4.ip_local_port_range': '1024 65535',
    });
  });
});
