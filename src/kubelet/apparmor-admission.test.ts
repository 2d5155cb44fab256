import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Pod } from '../api/types.ts';
import { appArmorAdmitHandler, hostAppArmorEnabled, validateAppArmor } from './apparmor-admission.ts';
import { buildPod } from '../../test/kit/pod.ts';

function pod(annotations: Record<string, string> = {}, mutate: (p: Pod) => void = () => undefined): Pod {
  const p: Pod = buildPod('p', { namespace: 'ns', uid: 'u', annotations, image: 'x:1', containers: ['app'] });
  mutate(p);
  return p;
}

const KEY = 'container.apparmor.security.beta.kubernetes.io/app';

describe('AppArmor admission', () => {
  it('admits pods that ask for no profile or only unconfined on a host without AppArmor', () => {
    const h = appArmorAdmitHandler({ enabled: false });
    assert.deepEqual(h.admit(pod(), []), { admit: true });
    assert.deepEqual(h.admit(pod({ [KEY]: 'unconfined' }), []), { admit: true });
  });

  it('refuses any other profile on a host without AppArmor, with reason AppArmor and upstream message', () => {
    const h = appArmorAdmitHandler({ enabled: false });
    for (const value of ['runtime/default', 'localhost/k8s-nginx']) {
      assert.deepEqual(h.admit(pod({ [KEY]: value }), []), {
        admit: false,
        reason: 'AppArmor',
        message: 'Cannot enforce AppArmor: AppArmor is not enabled on the host',
      });
    }
    const byField = pod({}, (p) => {
      const c = p.spec.containers[0];
      if (c) Object.assign((c.securityContext = {}), { appArmorProfile: { type: 'RuntimeDefault' } });
    });
    assert.equal(h.admit(byField, []).reason, 'AppArmor');
    const byPodField = pod({}, (p) => {
      Object.assign((p.spec.securityContext = {}), {
        appArmorProfile: { type: 'Localhost', localhostProfile: 'x' },
      });
    });
    assert.equal(h.admit(byPodField, []).reason, 'AppArmor');
  });

  it('admits confined profiles when the host enforces AppArmor', () => {
    const h = appArmorAdmitHandler({ enabled: true });
    assert.deepEqual(h.admit(pod({ [KEY]: 'runtime/default' }), []), { admit: true });
    assert.deepEqual(h.admit(pod({ [KEY]: 'localhost/k8s-nginx' }), []), { admit: true });
  });

  it('refuses an empty Localhost profile name even where AppArmor is enabled', () => {
    assert.match(
      validateAppArmor(pod({ [KEY]: 'localhost/' }), true) ?? '',
      /invalid empty AppArmor profile name/,
    );
  });

  it('does not re-judge a pod that is already running', () => {
    const running = pod({ [KEY]: 'runtime/default' }, (p) => (p.status = { phase: 'Running' }));
    assert.deepEqual(appArmorAdmitHandler({ enabled: false }).admit(running, []), { admit: true });
    const pending = pod({ [KEY]: 'runtime/default' }, (p) => (p.status = { phase: 'Pending' }));
    assert.equal(appArmorAdmitHandler({ enabled: false }).admit(pending, []).admit, false);
  });
});

describe('host AppArmor detection', () => {
  it('needs both the securityfs directory and the module parameter set to Y', () => {
    assert.equal(
      hostAppArmorEnabled(
        () => 'Y\n',
        () => true,
      ),
      true,
    );
    assert.equal(
      hostAppArmorEnabled(
        () => 'N\n',
        () => true,
      ),
      false,
    );
    assert.equal(
      hostAppArmorEnabled(
        () => 'Y\n',
        () => false,
      ),
      false,
    );
    assert.equal(
      hostAppArmorEnabled(
        () => {
          throw new Error('ENOENT');
        },
        () => true,
      ),
      false,
    );
  });
});
