import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { mountPropagation } from './host-mounts.ts';

const MOUNTINFO = [
  '27 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard',
  '40 27 254:0 /var/lib/kubelet /var/lib/kubelet rw,relatime shared:12 - ext4 /dev/vda rw',
  '41 27 0:30 / /var/lib/other rw,relatime master:3 - tmpfs tmpfs rw',
].join('\n');

describe('mountPropagation (the harness host check)', () => {
  it('tells a shared mount point from a private one and from a plain directory', () => {
    assert.equal(mountPropagation(MOUNTINFO, '/var/lib/kubelet'), 'shared');
    assert.equal(mountPropagation(MOUNTINFO, '/'), 'private');
    assert.equal(mountPropagation(MOUNTINFO, '/var/lib/other'), 'private');
    assert.equal(mountPropagation(MOUNTINFO, '/var/lib'), undefined);
  });

  it('goes by the last mount on a mount point', () => {
    const stacked = `${MOUNTINFO}\n50 40 254:0 /x /var/lib/kubelet rw - ext4 /dev/vda rw`;
    assert.equal(mountPropagation(stacked, '/var/lib/kubelet'), 'private');
  });
});
