import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { loadKubeconfig, readKubeconfig } from './kubeconfig.ts';

describe('kubeconfig loading', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'kubeconfig-test-'));
    await writeFile(join(dir, 'ca.crt'), 'CA-PEM');
    await writeFile(join(dir, 'token'), 'file-token\n');
  });
  after(() => rm(dir, { recursive: true, force: true }));

  async function write(doc: unknown): Promise<string> {
    const p = join(dir, `kc-${Math.random().toString(16).slice(2)}.yaml`);
    await writeFile(p, stringify(doc));
    return p;
  }

  const base = (user: Record<string, unknown>, cluster: Record<string, unknown> = {}) => ({
    apiVersion: 'v1',
    kind: 'Config',
    'current-context': 'node',
    contexts: [
      { name: 'other', context: { cluster: 'c2', user: 'u2' } },
      { name: 'node', context: { cluster: 'c1', user: 'u1' } },
    ],
    clusters: [
      {
        name: 'c1',
        cluster: { server: 'https://127.0.0.1:16443', 'certificate-authority': 'ca.crt', ...cluster },
      },
      { name: 'c2', cluster: { server: 'https://elsewhere' } },
    ],
    users: [{ name: 'u1', user }],
  });

  it('reads the current context: server, CA file relative to the kubeconfig, inline client cert and key', async () => {
    const p = await write(
      base({
        'client-certificate-data': Buffer.from('CERT').toString('base64'),
        'client-key-data': Buffer.from('KEY').toString('base64'),
      }),
    );
    const c = await loadKubeconfig(p);
    assert.equal(c.server, 'https://127.0.0.1:16443');
    assert.equal(c.ca?.toString(), 'CA-PEM');
    assert.equal(c.cert?.toString(), 'CERT');
    assert.equal(c.key?.toString(), 'KEY');
    assert.equal(c.authorization, undefined);
    assert.equal(c.insecureSkipTLSVerify, false);
  });

  it('uses a bearer token, from the kubeconfig or a token file', async () => {
    assert.equal((await loadKubeconfig(await write(base({ token: 'abc' })))).authorization, 'Bearer abc');
    assert.equal(
      (await loadKubeconfig(await write(base({ tokenFile: 'token' })))).authorization,
      'Bearer file-token',
    );
  });

  it('refuses an auth provider, a missing context, and a missing certificate file, naming what is wrong', async () => {
    await assert.rejects(
      loadKubeconfig(await write(base({ 'auth-provider': { name: 'gcp' } }))),
      /auth-provider credentials are not supported/,
    );
    await assert.rejects(
      loadKubeconfig(await write({ ...base({}), 'current-context': 'nope' })),
      /context "nope" not found/,
    );
    await assert.rejects(
      loadKubeconfig(await write(base({ 'client-certificate': 'missing.crt' }))),
      /missing\.crt/,
    );
  });

  it('reads an exec plugin: command relative to the kubeconfig when it names a path, args, env, cluster info', async () => {
    const c = await loadKubeconfig(
      await write(
        base(
          {
            exec: {
              apiVersion: 'client.authentication.k8s.io/v1',
              command: 'bin/get-token',
              args: ['--region', 'x'],
              env: [{ name: 'A', value: 'b' }],
              interactiveMode: 'Never',
              installHint: 'install get-token',
              provideClusterInfo: true,
            },
          },
          {
            'tls-server-name': 'api.internal',
            extensions: [{ name: 'client.authentication.k8s.io/exec', extension: { audience: 'aud' } }],
          },
        ),
      ),
    );
    assert.equal(c.authorization, undefined);
    assert.deepEqual(c.exec, {
      command: join(dir, 'bin/get-token'),
      args: ['--region', 'x'],
      env: [{ name: 'A', value: 'b' }],
      apiVersion: 'client.authentication.k8s.io/v1',
      installHint: 'install get-token',
      provideClusterInfo: true,
      interactiveMode: 'Never',
      cluster: {
        server: 'https://127.0.0.1:16443',
        'tls-server-name': 'api.internal',
        'certificate-authority-data': Buffer.from('CA-PEM').toString('base64'),
        config: { audience: 'aud' },
      },
    });
    // A bare command name is looked up in PATH, as clientcmd leaves it.
    const bare = await loadKubeconfig(
      await write(
        base({
          exec: { apiVersion: 'client.authentication.k8s.io/v1', command: 'aws', interactiveMode: 'Never' },
        }),
      ),
    );
    assert.equal(bare.exec?.command, 'aws');
  });

  it('defaults interactiveMode to IfAvailable for v1beta1 only, and checks the exec stanza as clientcmd does', async () => {
    const beta = await loadKubeconfig(
      await write(base({ exec: { apiVersion: 'client.authentication.k8s.io/v1beta1', command: 'p' } })),
    );
    assert.equal(beta.exec?.interactiveMode, 'IfAvailable');
    const cases: [Record<string, unknown>, RegExp][] = [
      [
        { apiVersion: 'client.authentication.k8s.io/v1', command: 'p' },
        /interactiveMode must be specified for u1 to use exec authentication plugin/,
      ],
      [
        { apiVersion: 'client.authentication.k8s.io/v1', interactiveMode: 'Never' },
        /command must be specified for u1/,
      ],
      [{ command: 'p', interactiveMode: 'Never' }, /apiVersion must be specified for u1/],
      [
        { apiVersion: 'client.authentication.k8s.io/v1alpha1', command: 'p', interactiveMode: 'Never' },
        /exec plugin: invalid apiVersion "client\.authentication\.k8s\.io\/v1alpha1"/,
      ],
      [
        { apiVersion: 'client.authentication.k8s.io/v1', command: 'p', interactiveMode: 'Sometimes' },
        /invalid interactiveMode for u1: "Sometimes"/,
      ],
      [
        {
          apiVersion: 'client.authentication.k8s.io/v1',
          command: 'p',
          interactiveMode: 'Never',
          env: [{ value: 'x' }],
        },
        /env variable name must be specified for u1/,
      ],
    ];
    for (const [exec, want] of cases) {
      await assert.rejects(loadKubeconfig(await write(base({ exec }))), want);
    }
  });

  it('uses the exec plugin only when the user has no other credential, as client-go does', async () => {
    const exec = { apiVersion: 'client.authentication.k8s.io/v1', command: 'p', interactiveMode: 'Never' };
    const c = await loadKubeconfig(await write(base({ token: 'abc', exec })));
    assert.equal(c.authorization, 'Bearer abc');
    assert.equal(c.exec, undefined);
  });

  it('keeps the paths of client certificate, key and token files, to reload them', async () => {
    await writeFile(join(dir, 'c.crt'), 'CERT');
    await writeFile(join(dir, 'c.key'), 'KEY');
    const files = await loadKubeconfig(
      await write(
        base({ 'client-certificate': 'c.crt', 'client-key': join(dir, 'c.key'), tokenFile: 'token' }),
      ),
    );
    assert.equal(files.certFile, join(dir, 'c.crt'));
    assert.equal(files.keyFile, join(dir, 'c.key'));
    assert.equal(files.tokenFile, join(dir, 'token'));
    const inline = await loadKubeconfig(
      await write(
        base({ 'client-certificate-data': Buffer.from('C').toString('base64'), 'client-key': 'c.key' }),
      ),
    );
    assert.equal(inline.certFile, undefined, 'not reloaded when any half is inline');
  });

  it('reads a named context, else the current one, else the first', async () => {
    const doc = base({ token: 'abc' });
    assert.equal((await readKubeconfig(await write(doc), 'other')).server, 'https://elsewhere');
    const { 'current-context': _current, ...noCurrent } = doc;
    assert.equal((await readKubeconfig(await write(noCurrent))).server, 'https://elsewhere');
  });

  it("takes inline data before a file, as client-go's dataFromSliceOrFile", async () => {
    const c = await loadKubeconfig(
      await write(base({}, { 'certificate-authority-data': Buffer.from('INLINE-CA').toString('base64') })),
    );
    assert.equal(c.ca?.toString(), 'INLINE-CA');
  });

  it('refuses a client certificate without its key', async () => {
    await assert.rejects(
      readKubeconfig(
        await write(base({ 'client-certificate-data': Buffer.from('CERT').toString('base64') })),
      ),
      /client certificate without a key/,
    );
  });

  it('leaves the server to the caller: the node CLI reads credentials from a kubeconfig without one', async () => {
    const doc = base({ token: 'abc' }, { server: undefined });
    const c = await readKubeconfig(await write(doc));
    assert.equal(c.server, undefined);
    assert.equal(c.token, 'abc');
    await assert.rejects(loadKubeconfig(await write(doc)), /has no server/);
  });
});
