// enforceNodeAllocatable and the reservations (node-allocatable.ts): upstream counterparts
// pkg/kubelet/apis/config/validation/validation.go and cmd/kubelet/app/server.go parseResourceList.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseRunArgs } from '../cli/flags.ts';
import { toKubeletConfiguration } from './configz.ts';
import { NOT_IMPLEMENTED } from './not-implemented.ts';
import { assertInvalid, compileFields as compile } from './testing.ts';

describe('node allocatable settings', () => {
  it('takes systemReserved and kubeReserved from the file and the flags, and shows them in /configz', () => {
    const { config, warnings } = compile(
      { systemReserved: { cpu: '500m', memory: '1Gi' }, kubeReservedCgroup: '/kube.slice' },
      { kubeReserved: { memory: '256Mi', pid: '1000', 'ephemeral-storage': '1Gi' } },
    );
    assert.deepEqual(config.systemReserved, { cpu: '500m', memory: '1Gi' });
    assert.deepEqual(config.kubeReserved, { memory: '256Mi', pid: '1000', 'ephemeral-storage': '1Gi' });
    assert.equal(config.kubeReservedCgroup, '/kube.slice');
    assert.deepEqual(warnings, []);
    const z = toKubeletConfiguration(config);
    assert.deepEqual(z['systemReserved'], { cpu: '500m', memory: '1Gi' });
    assert.equal(z['kubeReservedCgroup'], '/kube.slice');
    assert.equal(z['reservedSystemCPUs'], undefined);
  });

  it('no longer lists the reservations as not implemented', () => {
    const names = NOT_IMPLEMENTED.map((e) => e.field);
    for (const f of [
      'systemReserved',
      'kubeReserved',
      'reservedSystemCPUs',
      'systemReservedCgroup',
      'kubeReservedCgroup',
    ]) {
      assert.ok(!names.includes(f), f);
    }
  });

  it('refuses resources that cannot be reserved, bad quantities and negative ones (upstream messages)', () => {
    assertInvalid(
      () => compile({ systemReserved: { gpu: '1' } }),
      /systemReserved: cannot reserve "gpu" resource/,
    );
    assertInvalid(
      () => compile(undefined, { kubeReserved: { memory: '-1Gi' } }),
      /--kube-reserved: resource quantity for "memory" cannot be negative: -1Gi/,
    );
    assertInvalid(
      () => compile({ kubeReserved: { cpu: 'lots' } }),
      /kubeReserved\[cpu\]: invalid quantity "lots"/,
    );
  });

  it('enforces system-reserved and kube-reserved only with their cgroups named', () => {
    const { config } = compile({
      enforceNodeAllocatable: ['pods', 'system-reserved', 'kube-reserved'],
      systemReservedCgroup: '/system.slice',
      kubeReservedCgroup: '/kube.slice',
    });
    assert.deepEqual(config.enforceNodeAllocatable, ['pods', 'system-reserved', 'kube-reserved']);
    assertInvalid(
      () => compile({ enforceNodeAllocatable: ['system-reserved'] }),
      /systemReservedCgroup \(--system-reserved-cgroup\) must be specified when "system-reserved" contained in enforceNodeAllocatable/,
    );
    assertInvalid(
      () => compile(undefined, { enforceNodeAllocatable: ['pods', 'kube-reserved'] }),
      /kubeReservedCgroup \(--kube-reserved-cgroup\) must be specified when "kube-reserved" contained/,
    );
  });

  it('takes reservedSystemCPUs as a CPU list, not with the reserved cgroups', () => {
    assert.equal(compile(undefined, { reservedSystemCPUs: '0-1' }).config.reservedSystemCPUs, '0-1');
    assertInvalid(
      () => compile({ reservedSystemCPUs: '1-0' }),
      /reservedSystemCPUs: unable to parse reservedSystemCPUs \(--reserved-cpus\) 1-0, error: invalid range/,
    );
    assertInvalid(
      () => compile({ reservedSystemCPUs: '0', systemReservedCgroup: '/system.slice' }),
      /can't use reservedSystemCPUs \(--reserved-cpus\) with systemReservedCgroup/,
    );
  });

  it('reads the upstream flags (--system-reserved=cpu=100m,memory=100Mi, --reserved-cpus, the cgroups)', async () => {
    const { config, warnings } = await parseRunArgs(
      [
        '--system-reserved=cpu=100m,memory=100Mi',
        '--kube-reserved=memory=50Mi',
        '--enforce-node-allocatable=pods,system-reserved,kube-reserved',
        '--system-reserved-cgroup=/system.slice',
        '--kube-reserved-cgroup=/kube.slice',
      ],
      { hostname: () => 'test-host', cwd: '/work' },
    );
    assert.deepEqual(warnings, []);
    assert.deepEqual(config.systemReserved, { cpu: '100m', memory: '100Mi' });
    assert.deepEqual(config.kubeReserved, { memory: '50Mi' });
    assert.equal(config.systemReservedCgroup, '/system.slice');
    assert.equal(config.kubeReservedCgroup, '/kube.slice');
    const cpus = await parseRunArgs(['--reserved-cpus=0'], { hostname: () => 'test-host', cwd: '/work' });
    assert.equal(cpus.config.reservedSystemCPUs, '0');
  });
});
