import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  DOCKERCFG_KEY,
  DOCKER_CONFIG_JSON_KEY,
  SECRET_TYPE_DOCKERCFG,
  SECRET_TYPE_DOCKER_CONFIG_JSON,
  decodeAuthField,
  globMatch,
  isDefaultRegistryMatch,
  keyringFromEntries,
  keyringFromSecrets,
  locationKey,
  locationMatches,
  parseDockerConfigSecret,
  parseDockerConfigJSON,
  parseDockercfg,
  toAuthConfig,
  unionKeyring,
  type PullSecret,
} from './pull-secrets.ts';
import { KubeletError } from '../../util/errors.ts';

const b64 = (s: string) => Buffer.from(s).toString('base64');

function configJsonSecret(name: string, auths: unknown): PullSecret {
  return {
    metadata: { name, namespace: 'ns' },
    type: SECRET_TYPE_DOCKER_CONFIG_JSON,
    data: { [DOCKER_CONFIG_JSON_KEY]: b64(JSON.stringify({ auths })) },
  };
}

function dockercfgSecret(name: string, cfg: unknown): PullSecret {
  return {
    metadata: { name, namespace: 'ns' },
    type: SECRET_TYPE_DOCKERCFG,
    data: { [DOCKERCFG_KEY]: b64(JSON.stringify(cfg)) },
  };
}

/** Usernames of the credentials a keyring built from `auths` returns for `repo`, in order. */
function lookupUsers(auths: Record<string, string>, repo: string): string[] {
  const entries = Object.fromEntries(Object.entries(auths).map(([loc, user]) => [loc, { username: user }]));
  return keyringFromSecrets([configJsonSecret('s', entries)])
    .lookup(repo)
    .map((c) => c.username);
}

void describe('pull secret parsing', () => {
  void it('reads username and password from a dockerconfigjson secret', () => {
    const entries = parseDockerConfigSecret(
      configJsonSecret('regcred', { 'registry.example.com': { username: 'u', password: 'p', email: 'e@x' } }),
    );
    assert.deepEqual(entries, [
      ['registry.example.com', { username: 'u', password: 'p', source: 'ns/regcred' }],
    ]);
  });

  void it('reads the legacy dockercfg format (the registry map at top level)', () => {
    const entries = parseDockerConfigSecret(dockercfgSecret('old', { 'quay.io': { auth: b64('a:b') } }));
    assert.deepEqual(entries, [['quay.io', { username: 'a', password: 'b', source: 'ns/old' }]]);
  });

  void it('decodes the auth field, which wins over username/password, padded or not', () => {
    const padded = b64('user:pa:ss'); // "dXNlcjpwYTpzcw==": padded
    assert.ok(padded.endsWith('='));
    const entries = parseDockerConfigSecret(
      configJsonSecret('x', {
        one: { username: 'ignored', password: 'ignored', auth: padded },
        two: { auth: padded.replace(/=+$/, '') },
      }),
    );
    assert.deepEqual(
      entries?.map(([, c]) => [c.username, c.password]),
      [
        ['user', 'pa:ss'],
        ['user', 'pa:ss'],
      ],
    );
  });

  void it('matches field names case-insensitively, as Go encoding/json does', () => {
    const secret: PullSecret = {
      type: SECRET_TYPE_DOCKER_CONFIG_JSON,
      data: { [DOCKER_CONFIG_JSON_KEY]: b64('{"Auths":{"r.io":{"Username":"U","PASSWORD":"P"}}}') },
    };
    assert.deepEqual(parseDockerConfigSecret(secret), [
      ['r.io', { username: 'U', password: 'P', source: '/' }],
    ]);
  });

  void it('keeps identitytoken and registrytoken', () => {
    const entries = parseDockerConfigSecret(
      configJsonSecret('acr', {
        'x.azurecr.io': { username: '00000000-0000-0000-0000-000000000000', identitytoken: 'refresh' },
        'y.io': { registrytoken: 'bearer' },
      }),
    );
    const [acr, y] = entries?.map(([, c]) => toAuthConfig(c)) ?? [];
    assert.deepEqual(acr, {
      username: '00000000-0000-0000-0000-000000000000',
      password: '',
      identityToken: 'refresh',
    });
    assert.deepEqual(y, { username: '', password: '', registryToken: 'bearer' });
  });

  void it('skips secrets of another type or without their key, as upstream does', () => {
    const data = { [DOCKER_CONFIG_JSON_KEY]: b64('{"auths":{"r.io":{"username":"u"}}}') };
    assert.equal(parseDockerConfigSecret({ type: 'Opaque', data }), undefined);
    assert.equal(parseDockerConfigSecret({ type: SECRET_TYPE_DOCKERCFG, data }), undefined);
    assert.equal(parseDockerConfigSecret({ type: SECRET_TYPE_DOCKER_CONFIG_JSON, data: {} }), undefined);
    assert.equal(
      parseDockerConfigSecret({
        type: SECRET_TYPE_DOCKER_CONFIG_JSON,
        data: { [DOCKER_CONFIG_JSON_KEY]: '' },
      }),
      undefined,
    );
  });

  void it('accepts a config without auths (no credentials)', () => {
    const s: PullSecret = {
      type: SECRET_TYPE_DOCKER_CONFIG_JSON,
      data: { [DOCKER_CONFIG_JSON_KEY]: b64('{}') },
    };
    assert.deepEqual(parseDockerConfigSecret(s), []);
  });

  const broken: [string, PullSecret][] = [
    [
      'invalid JSON',
      { type: SECRET_TYPE_DOCKER_CONFIG_JSON, data: { [DOCKER_CONFIG_JSON_KEY]: b64('{not json') } },
    ],
    ['auths not an object', configJsonSecret('x', ['r.io'])],
    ['a non-string username', configJsonSecret('x', { 'r.io': { username: 5 } })],
    ['auth without a colon', configJsonSecret('x', { 'r.io': { auth: b64('nocolon') } })],
    ['auth not base64', configJsonSecret('x', { 'r.io': { auth: 'not base64!' } })],
    ['dockercfg not JSON', { type: SECRET_TYPE_DOCKERCFG, data: { [DOCKERCFG_KEY]: b64('[') } }],
  ];
  for (const [what, secret] of broken) {
    void it(`rejects a docker config secret with ${what} (upstream fails the pull)`, () => {
      assert.throws(
        () => parseDockerConfigSecret(secret),
        (err: unknown) => err instanceof KubeletError && err.code === 'InvalidArgument',
      );
      assert.throws(() => keyringFromSecrets([secret]), KubeletError);
    });
  }

  void it('decodeAuthField rejects padding on input that needs none', () => {
    assert.throws(() => decodeAuthField('dXNlcjpw=a'));
    assert.deepEqual(decodeAuthField(b64('u:')), { username: 'u', password: '' });
  });
});

void describe('keyring location keys', () => {
  const table: [string, string | undefined][] = [
    ['registry.example.com', 'registry.example.com'],
    ['https://index.docker.io/v1/', 'index.docker.io'],
    ['http://foo.example.com/v2/', 'foo.example.com'],
    ['http://foo.example.com/v2/team', 'foo.example.com/team'],
    ['quay.io/team/app', 'quay.io/team/app'],
    ['127.0.0.1:5001', '127.0.0.1:5001'],
    ['https://127.0.0.1:5001/', '127.0.0.1:5001'],
    ['host:notaport', undefined],
  ];
  for (const [location, key] of table) {
    void it(`files ${JSON.stringify(location)} under ${JSON.stringify(key)}`, () => {
      assert.equal(locationKey(location), key);
    });
  }
});

void describe('keyring matching', () => {
  const table: { name: string; auths: Record<string, string>; repo: string; want: string[] }[] = [
    { name: 'host match', auths: { 'quay.io': 'a' }, repo: 'quay.io/team/app', want: ['a'] },
    {
      name: 'most specific path first',
      auths: { 'quay.io': 'host', 'quay.io/team': 'team', 'quay.io/team/app': 'app' },
      repo: 'quay.io/team/app',
      want: ['app', 'team', 'host'],
    },
    {
      name: 'a path that does not cover the repository',
      auths: { 'quay.io/other': 'o', 'quay.io': 'h' },
      repo: 'quay.io/team/app',
      want: ['h'],
    },
    {
      name: 'the path is a plain string prefix, as upstream',
      auths: { 'quay.io/team': 't' },
      repo: 'quay.io/teamfoo/app',
      want: ['t'],
    },
    { name: 'glob in a host label', auths: { '*.example.com': 'g' }, repo: 'a.example.com/x', want: ['g'] },
    {
      name: 'glob needs the same label count',
      auths: { '*.example.com': 'g' },
      repo: 'example.com/x',
      want: [],
    },
    {
      name: 'glob does not cross domains',
      auths: { '*.example.com': 'g' },
      repo: 'a.example.org/x',
      want: [],
    },
    { name: 'port must match', auths: { '127.0.0.1:5000': 'p' }, repo: '127.0.0.1:5001/x', want: [] },
    { name: 'no port vs port', auths: { 'reg.io': 'p' }, repo: 'reg.io:443/x', want: [] },
    { name: 'exact port', auths: { '127.0.0.1:5001': 'p' }, repo: '127.0.0.1:5001/tskubelet/x', want: ['p'] },
    { name: 'docker.io entry', auths: { 'docker.io': 'd' }, repo: 'docker.io/library/busybox', want: ['d'] },
    {
      name: 'Docker Hub entry (https://index.docker.io/v1/) for a docker.io image',
      auths: { 'https://index.docker.io/v1/': 'hub' },
      repo: 'docker.io/library/busybox',
      want: ['hub'],
    },
    {
      name: 'Docker Hub entry only when nothing else matched',
      auths: { 'https://index.docker.io/v1/': 'hub', 'docker.io/library': 'lib' },
      repo: 'docker.io/library/busybox',
      want: ['lib'],
    },
    {
      name: 'Docker Hub entry is not used for another registry',
      auths: { 'https://index.docker.io/v1/': 'hub' },
      repo: 'quay.io/x/y',
      want: [],
    },
    { name: 'nothing matches', auths: { 'gcr.io': 'g' }, repo: 'quay.io/x', want: [] },
  ];
  for (const c of table) {
    void it(c.name, () => {
      assert.deepEqual(lookupUsers(c.auths, c.repo), c.want);
    });
  }

  void it('returns the credentials of every secret for one location, in secret order', () => {
    const keyring = keyringFromSecrets([
      configJsonSecret('first', { 'r.io': { username: 'one' } }),
      { type: 'Opaque', data: {} },
      dockercfgSecret('second', { 'https://r.io': { username: 'two' } }),
    ]);
    assert.deepEqual(
      keyring.lookup('r.io/app').map((c) => [c.username, c.source]),
      [
        ['one', 'ns/first'],
        ['two', 'ns/second'],
      ],
    );
    assert.equal(keyring.size(), 1);
  });

  void it('an empty keyring matches nothing', () => {
    assert.deepEqual(keyringFromSecrets([]).lookup('docker.io/library/busybox'), []);
  });

  void it('locationMatches and isDefaultRegistryMatch follow upstream', () => {
    assert.equal(locationMatches('reg.io', 'reg.io'), true);
    assert.equal(isDefaultRegistryMatch('docker.io/library/busybox'), true);
    assert.equal(isDefaultRegistryMatch('index.docker.io/x/y'), true);
    assert.equal(isDefaultRegistryMatch('library/busybox'), true);
    assert.equal(isDefaultRegistryMatch('busybox'), true);
    assert.equal(isDefaultRegistryMatch('quay.io/x'), false);
    assert.equal(isDefaultRegistryMatch('localhost:5000/x'), false);
    assert.equal(isDefaultRegistryMatch('/x'), false);
  });
});

void describe('docker config files and keyring unions', () => {
  void it('reads the auths of a config.json, ignoring other keys, each credential naming the file', () => {
    const text = JSON.stringify({
      auths: { 'r.io': { auth: b64('u:p') }, 'q.io': { username: 'q', password: 'w' } },
      credsStore: 'desktop',
      HttpHeaders: { 'X-A': 'b' },
    });
    assert.deepEqual(parseDockerConfigJSON(text, '/root/.docker/config.json'), [
      ['r.io', { username: 'u', password: 'p', source: '/root/.docker/config.json' }],
      ['q.io', { username: 'q', password: 'w', source: '/root/.docker/config.json' }],
    ]);
    assert.deepEqual(parseDockerConfigJSON('{}', 'f'), []);
    assert.deepEqual(parseDockerConfigJSON('null', 'f'), []);
  });

  void it('reads a .dockercfg as a registry map at top level', () => {
    assert.deepEqual(parseDockercfg(JSON.stringify({ 'r.io': { auth: b64('u:p') } }), '/.dockercfg'), [
      ['r.io', { username: 'u', password: 'p', source: '/.dockercfg' }],
    ]);
  });

  void it('throws on files that are not docker configs', () => {
    assert.throws(() => parseDockerConfigJSON('{', 'f'), SyntaxError);
    assert.throws(() => parseDockerConfigJSON('[]', 'f'), /not a JSON object/);
    assert.throws(() => parseDockercfg('"x"', 'f'), /registry map is not an object/);
  });

  void it('a union keyring returns the first keyring matches before the second', () => {
    const cred = (username: string) => ({ username, password: '', source: 's' });
    const pod = keyringFromEntries([['r.io', cred('pod')]]);
    const node = keyringFromEntries([
      ['r.io', cred('node')],
      ['r.io/team', cred('node-team')],
    ]);
    const union = unionKeyring(pod, node);
    assert.deepEqual(
      union.lookup('r.io/team/app').map((c) => c.username),
      ['pod', 'node-team', 'node'],
    );
    assert.equal(union.size(), 3);
  });
});

void describe('host label globs (Go filepath.Match)', () => {
  const table: [string, string, boolean][] = [
    ['*', 'anything', true],
    ['a*', 'abc', true],
    ['a*', 'bc', false],
    ['?b', 'ab', true],
    ['?b', 'aab', false],
    ['[ab]x', 'bx', true],
    ['[^ab]x', 'bx', false],
    ['[a-c]', 'b', true],
    ['[c-a]', 'b', false],
    ['[', 'x', false],
    ['[]', 'x', false],
    ['a\\*', 'a*', true],
    ['a\\*', 'ab', false],
    ['a.b', 'axb', false],
  ];
  for (const [pattern, text, want] of table) {
    void it(`${JSON.stringify(pattern)} ${want ? 'matches' : 'does not match'} ${JSON.stringify(text)}`, () => {
      assert.equal(globMatch(pattern, text), want);
    });
  }
});
