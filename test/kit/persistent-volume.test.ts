import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { buildBoundClaim, localPvSource } from './persistent-volume.ts';

describe('buildBoundClaim', () => {
  it('pre-binds the PV to the claim and the claim to the PV, with the defaults a static PV needs', () => {
    const list = buildBoundClaim('pv-a', 'claim-a', { source: { csi: { driver: 'd', volumeHandle: 'h' } } });
    const [pv, pvc] = list.items;
    assert.equal(list.kind, 'List');
    assert.deepEqual(pv, {
      apiVersion: 'v1',
      kind: 'PersistentVolume',
      metadata: { name: 'pv-a' },
      spec: {
        capacity: { storage: '64Mi' },
        persistentVolumeReclaimPolicy: 'Retain',
        accessModes: ['ReadWriteOnce'],
        storageClassName: '',
        claimRef: { namespace: 'default', name: 'claim-a' },
        csi: { driver: 'd', volumeHandle: 'h' },
      },
    });
    assert.deepEqual(pvc, {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: 'claim-a', namespace: 'default' },
      spec: {
        accessModes: ['ReadWriteOnce'],
        storageClassName: '',
        volumeName: 'pv-a',
        resources: { requests: { storage: '64Mi' } },
      },
    });
  });

  it('gives both objects the namespace, volume mode and size asked for', () => {
    const [pv, pvc] = buildBoundClaim('pv-b', 'claim-b', {
      source: localPvSource('/dev/loop7', 'node-1'),
      namespace: 'ns',
      volumeMode: 'Block',
      storage: '16Mi',
    }).items;
    assert.deepEqual(pv.spec.claimRef, { namespace: 'ns', name: 'claim-b' });
    assert.equal(pvc.metadata.namespace, 'ns');
    assert.equal(pv.spec.volumeMode, 'Block');
    assert.equal(pvc.spec.volumeMode, 'Block');
    assert.deepEqual(pv.spec.capacity, { storage: '16Mi' });
    assert.deepEqual(pvc.spec.resources, { requests: { storage: '16Mi' } });
    assert.deepEqual(pv.spec.local, { path: '/dev/loop7' });
    assert.deepEqual(pv.spec.nodeAffinity, {
      required: {
        nodeSelectorTerms: [
          { matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: ['node-1'] }] },
        ],
      },
    });
  });
});
