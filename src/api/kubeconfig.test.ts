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

  it('refuses exec plugins, a missing context, and a missing certificate file, naming what is wrong', async () => {
    await assert.rejects(
      loadKubeconfig(await write(base({ exec: { command: 'x' } }))),
      /exec and auth-provider/,
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
