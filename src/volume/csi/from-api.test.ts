import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { hasCode } from '../../util/errors.ts';
import { csiVolumeFromPersistentVolume, csiVolumeFromPodVolume } from './from-api.ts';

describe('CSI volumes from API objects', () => {
  it('maps a CSI PV with the claim readOnly (what upstream 1.20 passes to NodePublish)', () => {
    const v = csiVolumeFromPersistentVolume(
      {
        metadata: { name: 'pv-1' },
        spec: {
          csi: {
            driver: 'd.example.com',
            volumeHandle: 'h1',
            readOnly: false,
            fsType: 'xfs',
            volumeAttributes: { a: 'b' },
            nodePublishSecretRef: { name: 's', namespace: 'ns' },
          },
          accessModes: ['ReadOnlyMany'],
          mountOptions: ['ro'],
        },
      },
      true,
    );
    assert.deepEqual(v, {
      kind: 'persistent',
      pvName: 'pv-1',
      source: {
        driver: 'd.example.com',
        volumeHandle: 'h1',
        readOnly: false,
        fsType: 'xfs',
        volumeAttributes: { a: 'b' },
        nodePublishSecretRef: { name: 's', namespace: 'ns' },
      },
      accessModes: ['ReadOnlyMany'],
      mountOptions: ['ro'],
      readOnly: true,
    });
  });

  it('answers undefined for a PV or a pod volume without csi', () => {
    assert.equal(csiVolumeFromPersistentVolume({ metadata: { name: 'x' }, spec: {} }, false), undefined);
    assert.equal(csiVolumeFromPodVolume({ name: 'x' }), undefined);
  });

  it('maps an inline csi: pod volume as ephemeral', () => {
    assert.deepEqual(csiVolumeFromPodVolume({ name: 'scratch', csi: { driver: 'd', readOnly: true } }), {
      kind: 'ephemeral',
      volumeName: 'scratch',
      source: { driver: 'd', readOnly: true },
    });
  });

  it('refuses a malformed source with an InvalidArgument error naming the field', () => {
    assert.throws(
      () => csiVolumeFromPersistentVolume({ metadata: { name: 'x' }, spec: { csi: { driver: 'd' } } }, false),
      (err) => hasCode(err, 'InvalidArgument') && /spec\.csi\.volumeHandle: Required value/.test(String(err)),
    );
    assert.throws(
      () => csiVolumeFromPodVolume({ name: 'v', csi: { driver: 'd', volumeAttributes: { a: 1 } } }),
      /volumes\[v\]\.csi\.volumeAttributes: must be a map of strings/,
    );
  });
});
