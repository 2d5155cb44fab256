import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { cgroupDriverOfContainerdConfig, runtimeCgroupDriver } from './cgroup-driver.ts';
import { FakeRuntimeService } from './testing.ts';

/** The part of containerd 1.6's verbose CRI Status `config` that names the driver. */
function containerdConfig(systemdCgroup: boolean | undefined, runtimeType = 'io.containerd.runc.v2'): string {
  return JSON.stringify({
    containerd: {
      defaultRuntimeName: 'runc',
      runtimes: {
        runc: { runtimeType, options: systemdCgroup === undefined ? null : { SystemdCgroup: systemdCgroup } },
      },
    },
    systemdCgroup: false,
  });
}

describe('the runtime cgroup driver', () => {
  it('reads the default runc runtime’s SystemdCgroup from containerd’s config', () => {
    assert.equal(cgroupDriverOfContainerdConfig(containerdConfig(true)), 'systemd');
    assert.equal(cgroupDriverOfContainerdConfig(containerdConfig(false)), 'cgroupfs');
    assert.equal(cgroupDriverOfContainerdConfig(containerdConfig(undefined)), 'cgroupfs');
  });

  it('falls back to the plugin-wide systemdCgroup of the v1 runtime, and says nothing for other shapes', () => {
    assert.equal(
      cgroupDriverOfContainerdConfig(containerdConfig(true, 'io.containerd.runtime.v1.linux')),
      'cgroupfs',
    );
    assert.equal(cgroupDriverOfContainerdConfig('{"systemdCgroup": true}'), 'systemd');
    assert.equal(cgroupDriverOfContainerdConfig('{"cgroupManager": "systemd"}'), undefined);
    assert.equal(cgroupDriverOfContainerdConfig('not json'), undefined);
  });

  it('asks for a verbose status and reads its config', async () => {
    const fake = new FakeRuntimeService();
    assert.equal(await runtimeCgroupDriver(fake), undefined, 'a runtime without info does not say');
    fake.info = { config: containerdConfig(true) };
    assert.equal(await runtimeCgroupDriver(fake), 'systemd');
  });
});
