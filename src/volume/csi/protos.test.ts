import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { BED_KUBERNETES_SRC, CSI_PB_GO, generateCsiProto } from '../../../scripts/csi-proto.ts';
import { CSI_PROTO, CSI_PROTO_FILE, REGISTRATION_PROTO } from './protos.ts';

describe('the CSI and plugin-registration protos', () => {
  it('are the checked-in csi.proto the script regenerates from the bed Kubernetes tree', (t) => {
    if (!fs.existsSync(path.join(BED_KUBERNETES_SRC, CSI_PB_GO))) {
      t.skip('the bed has not unpacked the Kubernetes 1.20.2 source');
      return;
    }
    assert.equal(generateCsiProto(BED_KUBERNETES_SRC), fs.readFileSync(CSI_PROTO_FILE, 'utf8'));
  });

  it('serve the Identity and Node RPCs the kubelet calls, at the spec paths', () => {
    assert.equal(CSI_PROTO.method('csi.v1.Identity', 'GetPluginInfo').path, '/csi.v1.Identity/GetPluginInfo');
    for (const name of ['NodeGetInfo', 'NodeGetCapabilities', 'NodeStageVolume', 'NodePublishVolume'])
      assert.equal(CSI_PROTO.method('csi.v1.Node', name).path, `/csi.v1.Node/${name}`);
    assert.equal(
      REGISTRATION_PROTO.method('pluginregistration.Registration', 'NotifyRegistrationStatus').path,
      '/pluginregistration.Registration/NotifyRegistrationStatus',
    );
  });

  it('encode a volume capability oneof and a map as the spec numbers them', () => {
    const m = CSI_PROTO.method('csi.v1.Node', 'NodePublishVolume');
    const req = {
      volumeId: 'v1',
      targetPath: '/t',
      volumeCapability: {
        mount: { fsType: 'ext4', mountFlags: ['ro'] },
        accessMode: { mode: 'SINGLE_NODE_WRITER' },
      },
      volumeContext: { a: 'b' },
      readonly: true,
    };
    const bytes = m.requestSerialize(req);
    // field 1 volume_id "v1": tag 0x0a, length 2.
    assert.deepEqual([...bytes.subarray(0, 4)], [0x0a, 2, 0x76, 0x31]);
    const back = m.requestDeserialize(bytes) as typeof req & { volumeCapability: { accessType: string } };
    assert.equal(back.volumeCapability.accessType, 'mount');
    assert.deepEqual(back.volumeCapability.mount, { fsType: 'ext4', mountFlags: ['ro'] });
    assert.equal(back.volumeCapability.accessMode.mode, 'SINGLE_NODE_WRITER');
    assert.deepEqual(back.volumeContext, { a: 'b' });
    assert.equal(back.readonly, true);
  });
});
