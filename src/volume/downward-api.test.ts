import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { downwardAllocatable, downwardPod } from '../api/testing.ts';
import { hasCode } from '../util/errors.ts';
import { downwardAPIPayload } from './downward-api.ts';

const pod = downwardPod;
const allocatable = downwardAllocatable;

describe('downward API volume payload', () => {
  it('builds one file per item with item or default modes and reports every bad item together', () => {
    const payload = downwardAPIPayload(
      pod,
      [
        { path: 'name', fieldRef: { fieldPath: 'metadata.name' } },
        { path: 'meta/labels', fieldRef: { fieldPath: 'metadata.labels' }, mode: 0o400 },
        { path: 'cpu', resourceFieldRef: { containerName: 'app', resource: 'limits.cpu', divisor: '1m' } },
      ],
      0o644,
      allocatable,
      'mount volume info',
    );
    assert.deepEqual(
      [...payload].map(([p, f]) => [p, Buffer.from(f.data).toString(), f.mode]),
      [
        ['name', 'web', 0o644],
        ['meta/labels', 'app="web"\ntier="front"', 0o400],
        ['cpu', '250', 0o644],
      ],
    );
    assert.throws(
      () =>
        downwardAPIPayload(
          pod,
          [
            { path: 'a', fieldRef: { fieldPath: 'status.podIP' } },
            { path: 'b', resourceFieldRef: { containerName: 'x', resource: 'limits.cpu' } },
          ],
          0o644,
          allocatable,
          'mount volume info',
        ),
      (err) =>
        hasCode(err, 'InvalidArgument') &&
        /a: unsupported fieldPath.*b: container x not found/.test(String(err)),
    );
  });
});
