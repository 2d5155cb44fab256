import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { highestSupportedVersion, parseGenericVersion } from './drivers.ts';

describe('highestSupportedVersion (upstream csi_plugin.go)', () => {
  it('picks the highest 1.x and skips 2.x and above', () => {
    assert.equal(highestSupportedVersion(['1.0.0', 'v1.2.0', '1.1.5', '2.0.0']).text, '1.2.0');
  });

  it('refuses an empty list, only 0.x, and unparsable versions', () => {
    assert.throws(() => highestSupportedVersion([]), /empty array for supported versions/);
    assert.throws(
      () => highestSupportedVersion(['0.3.0']),
      /highest supported version reported by driver is 0\.3\.0, must be v1\.x/,
    );
    assert.throws(
      () => highestSupportedVersion(['one', '3.0.0']),
      /could not find a highest supported version.*could not parse "one"/,
    );
  });

  it('reads versions as utilversion.ParseGeneric: an optional v, at least two numbers', () => {
    assert.deepEqual(parseGenericVersion('v1.5'), { major: 1, minor: 5, patch: 0, text: '1.5' });
    assert.equal(parseGenericVersion('1'), undefined);
  });
});
