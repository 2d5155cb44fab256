// Allocatable arithmetic (capacity.ts). Upstream counterparts: pkg/kubelet/cm/node_container_manager_linux.go
// (GetNodeAllocatableReservation, getNodeAllocatableAbsoluteImpl) and cmd/kubelet/app/server.go (--reserved-cpus).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { hasCode } from '../util/errors.ts';
import { allocatableReservation, nodeReservations, subtractReservation, totalReserved } from './capacity.ts';

const GI = 2 ** 30;
const MI = 2 ** 20;
const none = { systemReserved: {}, kubeReserved: {}, reservedSystemCPUs: '' };

describe('node reservations', () => {
  it('parses systemReserved and kubeReserved into amounts and sums them', () => {
    const r = nodeReservations(
      {
        ...none,
        systemReserved: { cpu: '500m', memory: '1Gi', pid: '100' },
        kubeReserved: { cpu: '250m', memory: '512Mi' },
      },
      [0, 1, 2, 3],
    );
    assert.deepEqual(r.system, { cpu: 0.5, memory: GI, pid: 100 });
    assert.deepEqual(totalReserved(r), { cpu: 0.75, memory: GI + 512 * MI, pid: 100 });
  });

  it('lets reservedSystemCPUs replace the cpu of both reservations, as upstream', () => {
    const r = nodeReservations(
      {
        systemReserved: { cpu: '100m', memory: '1Gi' },
        kubeReserved: { cpu: '3' },
        reservedSystemCPUs: '0-1',
      },
      [0, 1, 2, 3],
    );
    assert.deepEqual(r.system, { cpu: 2, memory: GI });
    assert.deepEqual(r.kube, {});
  });

  it('refuses reserved CPUs that are not online (upstream message)', () => {
    assert.throws(
      () => nodeReservations({ ...none, reservedSystemCPUs: '2,6' }, [0, 1, 2, 3]),
      (err: unknown) =>
        hasCode(err, 'InvalidArgument') &&
        /reserved-cpus: 2,6 is not a subset of online-cpus: 0-3/.test(String(err)),
    );
  });
});

describe('allocatable', () => {
  const capacity = { cpu: 4, memory: 8 * GI, 'ephemeral-storage': 100 * GI, pods: 110, 'hugepages-2Mi': GI };

  it('is capacity − system − kube reserved − hard eviction for the node status', () => {
    const reserved = { cpu: 0.75, memory: GI + 512 * MI, 'ephemeral-storage': GI };
    const reservation = allocatableReservation(capacity, {
      reserved,
      evictionHard: { memoryAvailable: '100Mi', nodefsAvailable: '10%' },
    });
    // 10% as a float32, as upstream.
    const tenPercent = Math.trunc(100 * GI * Math.fround(0.1));
    assert.deepEqual(reservation, { cpu: 0.75, memory: GI + 612 * MI, 'ephemeral-storage': GI + tenPercent });
    const a = subtractReservation(capacity, reservation);
    assert.equal(a['cpu'], 3.25);
    // 8Gi − 1.5Gi − 100Mi − 1Gi of huge pages.
    assert.equal(a['memory'], 8 * GI - GI - 612 * MI - GI);
    assert.equal(a['ephemeral-storage'], 99 * GI - tenPercent);
    assert.equal(a['pods'], 110);
  });

  it('never goes below zero', () => {
    assert.deepEqual(subtractReservation({ cpu: 1, memory: GI }, { cpu: 2, memory: 2 * GI }), {
      cpu: 0,
      memory: 0,
    });
  });
});
