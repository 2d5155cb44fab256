import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { KubeletPod, Volume } from '../api/types.ts';
import { KubeletError, hasCode } from '../util/errors.ts';
import type { FileProjection } from './atomic-writer.ts';
import { buildPayload, configMapPayload, secretPayload } from './projection.ts';
import { b64, fakeObjectSource } from './testing.ts';

const op = 'mount volume v';
const ref = (
  over: Partial<{ items: { key: string; path: string; mode?: number }[]; optional: boolean }> = {},
) => ({
  namespace: 'ns',
  name: 'obj',
  optional: false,
  ...over,
});
const show = (p: Map<string, FileProjection>) =>
  Object.fromEntries([...p].map(([k, f]) => [k, [Buffer.from(f.data).toString(), f.mode.toString(8)]]));

const pod = (volumes: Volume[]): KubeletPod => ({
  metadata: { name: 'p', namespace: 'ns', uid: 'u', labels: { a: 'b' } },
  spec: { containers: [{ name: 'c', resources: { limits: { memory: '1Mi' } } }], volumes },
});
const deps = (objects = fakeObjectSource()) => ({ objects, allocatable: () => ({}) });

describe('secret and configMap payloads', () => {
  const secret = { metadata: { name: 'obj' }, data: { user: b64('admin'), pass: b64('s3cret\n') } };

  it('projects every secret key, base64-decoded, with the default mode', () => {
    assert.deepEqual(show(secretPayload(secret, ref(), 0o644, op)), {
      user: ['admin', '644'],
      pass: ['s3cret\n', '644'],
    });
  });

  it('projects only the listed items, at their paths, with per-item modes', () => {
    const items = [
      { key: 'pass', path: 'creds/password', mode: 0o400 },
      { key: 'user', path: 'username' },
    ];
    assert.deepEqual(show(secretPayload(secret, ref({ items }), 0o440, op)), {
      'creds/password': ['s3cret\n', '400'],
      username: ['admin', '440'],
    });
  });

  it('fails on a listed key the secret lacks, unless the volume is optional', () => {
    const items = [
      { key: 'user', path: 'u' },
      { key: 'token', path: 't' },
    ];
    assert.throws(
      () => secretPayload(secret, ref({ items }), 0o644, op),
      (err) => hasCode(err, 'NotFound') && /secret ns\/obj has no key "token"/.test(String(err)),
    );
    assert.deepEqual(show(secretPayload(secret, ref({ items, optional: true }), 0o644, op)), {
      u: ['admin', '644'],
    });
  });

  it('gives an empty payload for an optional object that does not exist', () => {
    assert.equal(secretPayload(undefined, ref({ optional: true }), 0o644, op).size, 0);
  });

  it('rejects secret data that is not base64', () => {
    assert.throws(
      () => secretPayload({ metadata: { name: 'obj' }, data: { k: 'not base64!' } }, ref(), 0o644, op),
      (err) => hasCode(err, 'InvalidArgument') && /key k is not valid base64/.test(String(err)),
    );
  });

  it('projects configMap data as text and binaryData decoded', () => {
    const cm = {
      metadata: { name: 'obj' },
      data: { 'app.conf': 'x=1\n' },
      binaryData: { blob: b64('\x00\x01') },
    };
    const p = configMapPayload(cm, ref(), 0o644, op);
    assert.deepEqual(show(p)['app.conf'], ['x=1\n', '644']);
    assert.deepEqual([...Buffer.from(p.get('blob')?.data ?? [])], [0, 1]);
    const items = [{ key: 'blob', path: 'bin/blob', mode: 0o600 }];
    assert.deepEqual([...configMapPayload(cm, ref({ items }), 0o644, op).keys()], ['bin/blob']);
  });
});

describe('building a volume payload', () => {
  it('fails secret and configMap volumes clearly without an API server (standalone)', async () => {
    for (const v of [
      { name: 'v', secret: { secretName: 's' } },
      { name: 'v', configMap: { name: 'c' } },
    ]) {
      const kind = v.secret ? 'secret' : 'configMap';
      await assert.rejects(
        buildPayload(pod([v]), v, kind, { allocatable: () => ({}) }),
        (err) =>
          err instanceof KubeletError &&
          err.code === 'FailedPrecondition' &&
          err.op === 'mount volume v' &&
          err.message.includes(`${kind} volumes need an API server (cluster mode)`),
      );
    }
  });

  it('names a missing required object, and empties an optional one', async () => {
    const v = { name: 'v', secret: { secretName: 'gone' } };
    await assert.rejects(
      buildPayload(pod([v]), v, 'secret', deps()),
      (err) => hasCode(err, 'NotFound') && /secret "gone" not found in namespace ns/.test(String(err)),
    );
    const opt = { name: 'v', secret: { secretName: 'gone', optional: true } };
    assert.equal((await buildPayload(pod([opt]), opt, 'secret', deps())).size, 0);
  });

  it('reports an API failure as such, never as a missing object', async () => {
    const objects = fakeObjectSource();
    objects.failWith = new KubeletError('Unavailable', 'GET secret', 'connection refused');
    const v = { name: 'v', secret: { secretName: 's', optional: true } };
    await assert.rejects(
      buildPayload(pod([v]), v, 'secret', deps(objects)),
      (err) =>
        hasCode(err, 'Unavailable') && /get secret ns\/s: GET secret: connection refused/.test(String(err)),
    );
  });

  it('stops waiting for a hung source when the sync is aborted', async () => {
    const objects = fakeObjectSource();
    objects.hang = true;
    const v = { name: 'v', configMap: { name: 'c' } };
    const ac = new AbortController();
    const pending = buildPayload(pod([v]), v, 'configMap', deps(objects), ac.signal);
    ac.abort(new KubeletError('Canceled', 'sync pod', 'superseded'));
    await assert.rejects(pending, (err) => hasCode(err, 'Canceled'));
  });

  it('rejects malformed volume sources with the field path', async () => {
    const v = { name: 'v', secret: { secretName: 's', items: [{ key: 'a' }] } };
    await assert.rejects(
      buildPayload(pod([v]), v, 'secret', deps()),
      (err) =>
        hasCode(err, 'InvalidArgument') && /secret\.items\[0\]\.path: required string/.test(String(err)),
    );
    const m = { name: 'v', configMap: { name: 'c', defaultMode: 0o1777 } };
    await assert.rejects(
      buildPayload(pod([m]), m, 'configMap', deps()),
      /configMap\.defaultMode: must be a number/,
    );
  });

  it('merges projected sources in order with the projected default mode', async () => {
    const objects = fakeObjectSource();
    objects.secrets.set('ns/s', { metadata: { name: 's' }, data: { token: b64('t0k') } });
    objects.configMaps.set('ns/c', { metadata: { name: 'c' }, data: { 'ca.crt': 'CERT' } });
    const v = {
      name: 'v',
      projected: {
        defaultMode: 0o440,
        sources: [
          { secret: { name: 's' } },
          { configMap: { name: 'c', items: [{ key: 'ca.crt', path: 'certs/ca.crt', mode: 0o444 }] } },
          { secret: { name: 'missing', optional: true } },
          { downwardAPI: { items: [{ path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } }] } },
        ],
      },
    };
    assert.deepEqual(show(await buildPayload(pod([v]), v, 'projected', deps(objects))), {
      token: ['t0k', '440'],
      'certs/ca.crt': ['CERT', '444'],
      labels: ['a="b"', '440'],
    });
  });

  it('fails a projected serviceAccountToken source as not supported yet', async () => {
    const v = {
      name: 'v',
      projected: { sources: [{ serviceAccountToken: { path: 'token', expirationSeconds: 3600 } }] },
    };
    await assert.rejects(
      buildPayload(pod([v]), v, 'projected', deps()),
      (err) =>
        hasCode(err, 'Unimplemented') &&
        /projected serviceAccountToken sources are not supported yet/.test(String(err)),
    );
  });

  it('builds a downwardAPI volume without an API server', async () => {
    const v = {
      name: 'v',
      downwardAPI: {
        items: [
          { path: 'name', fieldRef: { fieldPath: 'metadata.name' } },
          {
            path: 'mem',
            resourceFieldRef: { containerName: 'c', resource: 'limits.memory', divisor: '1Ki' },
          },
        ],
      },
    };
    assert.deepEqual(show(await buildPayload(pod([v]), v, 'downwardAPI', { allocatable: () => ({}) })), {
      name: ['p', '644'],
      mem: ['1024', '644'],
    });
  });
});
