import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { KubeletError } from '../../util/errors.ts';
import { ImageError } from './image-manager.ts';
import {
  DOCKER_CONFIG_JSON_KEY,
  SECRET_TYPE_DOCKER_CONFIG_JSON,
  keyringFromEntries,
  type Keyring,
  type PullSecret,
} from './pull-secrets.ts';
import {
  SANDBOX_CONFIG,
  dockerSecret,
  imageContainer,
  imageErrorReason,
  imageManagerSetup,
  imagePod,
} from '../testing.ts';

void describe('pull secrets', () => {
  const image = '127.0.0.1:5001/team/app:1';

  void it('pulls with the matching credential as CRI AuthConfig', async () => {
    const asked: string[] = [];
    const s = imageManagerSetup({
      pullSecrets: (p) => {
        asked.push(p.metadata.name ?? '');
        return Promise.resolve([
          dockerSecret('other', { 'quay.io': { username: 'q', password: 'q' } }),
          dockerSecret('mine', { '127.0.0.1:5001': { username: 'bed', password: 's3cret' } }),
        ]);
      },
    });
    s.images.answer(() => 'sha256:ok');
    await s.manager.ensureImage(imagePod('p', [], ['other', 'mine']), imageContainer(image), SANDBOX_CONFIG);
    assert.deepEqual(asked, ['p']);
    assert.deepEqual(
      s.images.pulls.map((c) => c.auth),
      [{ username: 'bed', password: 's3cret' }],
    );
  });

  void it('tries each matching credential in turn until one works', async () => {
    const s = imageManagerSetup({
      pullSecrets: () =>
        Promise.resolve([
          dockerSecret('a', { '127.0.0.1:5001': { username: 'old', password: 'x' } }),
          dockerSecret('b', { '127.0.0.1:5001/team': { username: 'team', password: 'y' } }),
          dockerSecret('c', { '127.0.0.1:5001': { username: 'new', password: 'z' } }),
        ]),
    });
    s.images.answer((_img, auth) => {
      if (auth?.username !== 'new') throw new KubeletError('Unknown', 'CRI PullImage', '401 Unauthorized');
      return 'sha256:ok';
    });
    assert.equal(
      await s.manager.ensureImage(imagePod('p', [], ['a', 'b', 'c']), imageContainer(image), SANDBOX_CONFIG),
      'sha256:ok',
    );
    assert.deepEqual(
      s.images.pulls.map((c) => c.auth?.username),
      ['team', 'old', 'new'],
    );
  });

  void it('fails with every attempt in the message when no credential works, and never goes anonymous', async () => {
    const s = imageManagerSetup({
      pullSecrets: () =>
        Promise.resolve([
          dockerSecret('a', { '127.0.0.1:5001': { username: 'one', password: 'x' } }),
          dockerSecret('b', { '127.0.0.1:5001': { username: 'two', password: 'y' } }),
        ]),
    });
    s.images.answer((_img, auth) => {
      throw new Error(`401 for ${auth?.username ?? 'anonymous'}`);
    });
    const err = await s.manager
      .ensureImage(imagePod('p', [], ['a', 'b']), imageContainer(image), SANDBOX_CONFIG)
      .catch((e: unknown) => e);
    assert.ok(err instanceof ImageError && err.reason === 'ErrImagePull');
    assert.match(err.message, /\[401 for one, 401 for two\]/);
    assert.equal(s.images.pulls.length, 2);
  });

  void it('pulls anonymously when no secret matches the registry', async () => {
    const s = imageManagerSetup({
      pullSecrets: () =>
        Promise.resolve([dockerSecret('q', { 'quay.io': { username: 'q', password: 'q' } })]),
    });
    s.images.answer(() => 'sha256:ok');
    await s.manager.ensureImage(imagePod('p', [], ['q']), imageContainer(image), SANDBOX_CONFIG);
    assert.deepEqual(
      s.images.pulls.map((c) => c.auth),
      [undefined],
    );
  });

  void it('does not ask for secrets when the pod names none', async () => {
    let asked = 0;
    const s = imageManagerSetup({
      pullSecrets: () => {
        asked++;
        return Promise.resolve([]);
      },
    });
    s.images.answer(() => 'sha256:ok');
    await s.manager.ensureImage(imagePod('p', []), imageContainer(image), SANDBOX_CONFIG);
    assert.equal(asked, 0);
  });

  void it('pulls without secrets when they cannot be read', async () => {
    const s = imageManagerSetup({
      pullSecrets: () => Promise.reject(new KubeletError('Unavailable', 'GET secret', 'down')),
    });
    s.images.answer(() => 'sha256:ok');
    assert.equal(
      await s.manager.ensureImage(imagePod('p', [], ['a']), imageContainer(image), SANDBOX_CONFIG),
      'sha256:ok',
    );
    assert.deepEqual(
      s.images.pulls.map((c) => c.auth),
      [undefined],
    );
  });

  void it('fails the pull (ErrImagePull, back-off) on a secret that does not parse', async () => {
    const bad: PullSecret = {
      metadata: { name: 'bad', namespace: 'ns' },
      type: SECRET_TYPE_DOCKER_CONFIG_JSON,
      data: { [DOCKER_CONFIG_JSON_KEY]: Buffer.from('{oops').toString('base64') },
    };
    const s = imageManagerSetup({ pullSecrets: () => Promise.resolve([bad]) });
    const err = await s.manager
      .ensureImage(imagePod('p', [], ['bad']), imageContainer(image), SANDBOX_CONFIG)
      .catch((e: unknown) => e);
    assert.ok(err instanceof ImageError && err.reason === 'ErrImagePull');
    assert.match(err.message, /ns\/bad/);
    assert.equal(s.images.pulls.length, 0);
    assert.equal(
      await imageErrorReason(
        s.manager.ensureImage(imagePod('p', [], ['bad']), imageContainer(image), SANDBOX_CONFIG),
      ),
      'ImagePullBackOff',
    );
  });
});

void describe('node credentials', () => {
  const image = '127.0.0.1:5001/team/app:1';
  const nodeKeyring = (entries: Record<string, string>): Keyring =>
    keyringFromEntries(
      Object.entries(entries).map(([loc, user]) => [
        loc,
        { username: user, password: `${user}-pw`, source: '/var/lib/kubelet/config.json' },
      ]),
    );

  void it('pulls with the node credentials when the pod has no pull secrets', async () => {
    let asked = 0;
    const s = imageManagerSetup({
      nodeCredentials: () => {
        asked++;
        return Promise.resolve(nodeKeyring({ '127.0.0.1:5001': 'node' }));
      },
    });
    s.images.answer(() => 'sha256:ok');
    await s.manager.ensureImage(imagePod('p', []), imageContainer(image), SANDBOX_CONFIG);
    assert.deepEqual(
      s.images.pulls.map((c) => c.auth),
      [{ username: 'node', password: 'node-pw' }],
    );
    assert.equal(asked, 1);
  });

  void it('tries the pod secrets first, then the node credentials', async () => {
    const s = imageManagerSetup({
      pullSecrets: () =>
        Promise.resolve([dockerSecret('mine', { '127.0.0.1:5001': { username: 'pod', password: 'x' } })]),
      nodeCredentials: () => Promise.resolve(nodeKeyring({ '127.0.0.1:5001': 'node' })),
    });
    s.images.answer((_img, auth) => {
      if (auth?.username !== 'node') throw new Error('401 Unauthorized');
      return 'sha256:ok';
    });
    assert.equal(
      await s.manager.ensureImage(imagePod('p', [], ['mine']), imageContainer(image), SANDBOX_CONFIG),
      'sha256:ok',
    );
    assert.deepEqual(
      s.images.pulls.map((c) => c.auth?.username),
      ['pod', 'node'],
    );
  });

  void it('does not read the node credentials for an image already present', async () => {
    let asked = 0;
    const s = imageManagerSetup({
      nodeCredentials: () => {
        asked++;
        return Promise.resolve(nodeKeyring({}));
      },
    });
    s.images.present.add(image);
    await s.manager.ensureImage(imagePod('p', []), imageContainer(image), SANDBOX_CONFIG);
    assert.equal(asked, 0);
  });

  void it('pulls with the pod secrets only when the node credentials cannot be read', async () => {
    const s = imageManagerSetup({ nodeCredentials: () => Promise.reject(new Error('EACCES')) });
    s.images.answer(() => 'sha256:ok');
    assert.equal(
      await s.manager.ensureImage(imagePod('p', []), imageContainer(image), SANDBOX_CONFIG),
      'sha256:ok',
    );
    assert.deepEqual(
      s.images.pulls.map((c) => c.auth),
      [undefined],
    );
  });

  void it('ignores node credentials for other registries', async () => {
    const s = imageManagerSetup({
      nodeCredentials: () => Promise.resolve(nodeKeyring({ 'quay.io': 'node' })),
    });
    s.images.answer(() => 'sha256:ok');
    await s.manager.ensureImage(imagePod('p', []), imageContainer(image), SANDBOX_CONFIG);
    assert.deepEqual(
      s.images.pulls.map((c) => c.auth),
      [undefined],
    );
  });
});
