import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mountPointsOf } from './namespace.ts';

void describe('node mount namespace', () => {
  void it('reads mount points from mountinfo, octal escapes decoded', () => {
    const info = [
      '27 1 254:0 / / rw,relatime - ext4 /dev/vda rw',
      '43 27 254:0 /var/lib/kubelet /var/lib/kubelet rw,relatime shared:2 - ext4 /dev/vda rw',
      '50 27 0:40 / /tmp/a\\040b rw - tmpfs tmpfs rw',
      '',
    ].join('\n');
    assert.deepEqual(mountPointsOf(info), ['/', '/var/lib/kubelet', '/tmp/a b']);
  });
});
