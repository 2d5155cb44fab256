import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { realpath } from 'node:fs/promises';
import { join } from 'node:path';
import { CHECKOUT, checkSharePath, defaultShares } from './node-vm-host.ts';
import { hasCode } from '../../src/util/errors.ts';

describe('node VM shares', () => {
  it('refuses a share path the kernel command line cannot carry', () => {
    for (const p of ['relative/dir', '/with space', '/with:colon', '/with,comma']) {
      assert.throws(
        () => checkSharePath(p),
        (err: unknown) => hasCode(err, 'InvalidArgument'),
        p,
      );
    }
    assert.doesNotThrow(() => checkSharePath('/work/checkout-1'));
  });

  it("shares the checkout, and node_modules' target when it lies outside it, read-only", async () => {
    const shares = await defaultShares();
    assert.equal(shares[0]?.hostPath, CHECKOUT);
    const modules = await realpath(join(CHECKOUT, 'node_modules'));
    const outside = !modules.startsWith(`${CHECKOUT}/`);
    assert.equal(shares.length, outside ? 2 : 1);
    if (outside) assert.equal(shares[1]?.hostPath, modules);
    assert.ok(shares.every((s) => s.readOnly !== false));
  });
});
