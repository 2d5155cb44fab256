import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { checkHostPath, type HostPathType } from './host-dirs.ts';

describe('hostPath checks on the node (upstream hostPathMounter.SetUp)', () => {
  it('refuses a path with a `..` element, as upstream checks again on the node, before looking at it', async () => {
    await assert.rejects(checkHostPath('host', '/tmp/../etc', ''), {
      name: 'KubeletError',
      code: 'InvalidArgument',
      message: "mount volume host: invalid HostPath `/tmp/../etc`: must not contain '..'",
    });
  });

  it('refuses a type it does not know instead of skipping the check (a pod from a source that did not validate)', async () => {
    await assert.rejects(checkHostPath('host', '/tmp', 'Dir' as HostPathType), {
      code: 'InvalidArgument',
      message: 'mount volume host: hostPath type "Dir" is not supported',
    });
    await checkHostPath('host', '/tmp', 'Directory');
  });
});
