import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { defaultPullPolicyFor, parseImageReference } from './image-reference.ts';

void describe('image references', () => {
  const table: [string, { repository: string; tag?: string; digest?: string }][] = [
    ['busybox', { repository: 'docker.io/library/busybox' }],
    ['busybox:1.29', { repository: 'docker.io/library/busybox', tag: '1.29' }],
    ['docker.io/library/busybox:1.29', { repository: 'docker.io/library/busybox', tag: '1.29' }],
    ['index.docker.io/team/app', { repository: 'docker.io/team/app' }],
    ['team/app:v1', { repository: 'docker.io/team/app', tag: 'v1' }],
    ['localhost/app', { repository: 'localhost/app' }],
    ['localhost:5000/app:x', { repository: 'localhost:5000/app', tag: 'x' }],
    [
      '127.0.0.1:5000/tskubelet/busybox:pulltest',
      { repository: '127.0.0.1:5000/tskubelet/busybox', tag: 'pulltest' },
    ],
    ['Registry.Example.com/a/b', { repository: 'Registry.Example.com/a/b' }],
    // An upper-case first component can only be a registry host (newer docker/distribution).
    ['Team/app', { repository: 'Team/app' }],
    [
      `app@sha256:${'a'.repeat(64)}`,
      { repository: 'docker.io/library/app', digest: `sha256:${'a'.repeat(64)}` },
    ],
    [
      `quay.io/app:v2@sha256:${'b'.repeat(64)}`,
      { repository: 'quay.io/app', tag: 'v2', digest: `sha256:${'b'.repeat(64)}` },
    ],
  ];
  for (const [image, want] of table) {
    void it(`parses ${image}`, () => {
      const ref = parseImageReference(image);
      assert.equal(ref.repository, want.repository);
      assert.equal(ref.tag, want.tag);
      assert.equal(ref.digest, want.digest);
    });
  }

  const invalid = ['', 'a b', 'team/App', 'app:', 'app:bad/tag', 'app@sha256:abc', '-app', 'a'.repeat(64)];
  for (const image of invalid) {
    void it(`rejects ${JSON.stringify(image)}`, () => {
      assert.throws(() => parseImageReference(image));
    });
  }

  void it('defaults the pull policy as the API server does', () => {
    const policy = (image: string) => defaultPullPolicyFor(parseImageReference(image));
    assert.equal(policy('busybox'), 'Always');
    assert.equal(policy('busybox:latest'), 'Always');
    assert.equal(policy('busybox:1.29'), 'IfNotPresent');
    assert.equal(policy(`busybox@sha256:${'c'.repeat(64)}`), 'IfNotPresent');
    assert.equal(policy(`busybox:latest@sha256:${'c'.repeat(64)}`), 'Always');
  });
});
