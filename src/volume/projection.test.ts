import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { KubeletPod, Volume } from '../api/types.ts';
import { KubeletError, hasCode } from '../util/errors.ts';
import type { FileProjection } from './atomic-writer.ts';
import { buildPayload, configMapPayload, secretPayload } from './projection.ts';
import { b64, fakeObjectSource, fakeTokenSource, volumePod } from './testing.ts';

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

const pod = (volumes: Volume[]): KubeletPod =>
  volumePod('p', 'u', volumes, [], {
    labels: { a: 'b' },
    containers: [{ name: 'c', resources: { limits: { memory: '1Mi' } } }],
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

  it('projects a serviceAccountToken bound to the pod, at its path, with the projected default mode', async () => {
    const tokens = fakeTokenSource('jwt-abc');
    const v = {
      name: 'v',
      projected: {
        defaultMode: 0o440,
        sources: [{ serviceAccountToken: { audience: 'vault', path: 'sa/token', expirationSeconds: 7200 } }],
      },
    };
    const p = { ...pod([v]), spec: { ...pod([v]).spec, serviceAccountName: 'builder' } };
    const payload = await buildPayload(p, v, 'projected', { ...deps(), tokens });
    assert.deepEqual(show(payload), { 'sa/token': ['jwt-abc', '440'] });
    assert.deepEqual(tokens.calls, [
      {
        namespace: 'ns',
        serviceAccount: 'builder',
        spec: {
          audiences: ['vault'],
          expirationSeconds: 7200,
          boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: 'p', uid: 'u' },
        },
      },
    ]);
  });

  it("asks for the default service account's token with the API server's audiences when none is named", async () => {
    const tokens = fakeTokenSource();
    const v = { name: 'v', projected: { sources: [{ serviceAccountToken: { path: 'token' } }] } };
    assert.deepEqual(show(await buildPayload(pod([v]), v, 'projected', { ...deps(), tokens })), {
      token: ['jwt-1', '644'],
    });
    assert.equal(tokens.calls[0]?.serviceAccount, 'default');
    assert.deepEqual(tokens.calls[0]?.spec.audiences, []);
    assert.equal(tokens.calls[0]?.spec.expirationSeconds, 3600, 'the pod default when a manifest skipped it');
  });

  it('writes the token 0600 under an fsGroup (group read is added with the ownership)', async () => {
    const v = { name: 'v', projected: { sources: [{ serviceAccountToken: { path: 'token' } }] } };
    const p = pod([v]);
    p.spec.securityContext = { fsGroup: 1234 };
    const payload = await buildPayload(p, v, 'projected', { ...deps(), tokens: fakeTokenSource() });
    assert.deepEqual(show(payload), { token: ['jwt-1', '600'] });
  });

  it('fails serviceAccountToken sources clearly without an API server (standalone)', async () => {
    const v = { name: 'v', projected: { sources: [{ serviceAccountToken: { path: 'token' } }] } };
    await assert.rejects(
      buildPayload(pod([v]), v, 'projected', deps()),
      (err) =>
        err instanceof KubeletError &&
        err.code === 'FailedPrecondition' &&
        err.message === 'mount volume v: serviceAccountToken volumes need an API server (cluster mode)',
    );
  });

  it('fails the volume, named, with the token error', async () => {
    const tokens = fakeTokenSource();
    tokens.failWith = new KubeletError(
      'PermissionDenied',
      'request token for serviceaccount ns/default',
      'no',
    );
    const v = { name: 'v', projected: { sources: [{ serviceAccountToken: { path: 'token' } }] } };
    await assert.rejects(
      buildPayload(pod([v]), v, 'projected', { ...deps(), tokens }),
      (err) =>
        hasCode(err, 'PermissionDenied') &&
        String(err) === 'KubeletError: mount volume v: request token for serviceaccount ns/default: no',
    );
  });

  it('rejects a serviceAccountToken source without a path or with an expiration under 10 minutes', async () => {
    const tokens = fakeTokenSource();
    const short = {
      name: 'v',
      projected: { sources: [{ serviceAccountToken: { path: 't', expirationSeconds: 599 } }] },
    };
    await assert.rejects(
      buildPayload(pod([short]), short, 'projected', { ...deps(), tokens }),
      (err) =>
        hasCode(err, 'InvalidArgument') &&
        /serviceAccountToken\.expirationSeconds: may not specify a duration less than 10 minutes/.test(
          String(err),
        ),
    );
    const noPath = { name: 'v', projected: { sources: [{ serviceAccountToken: { audience: 'a' } }] } };
    await assert.rejects(
      buildPayload(pod([noPath]), noPath, 'projected', { ...deps(), tokens }),
      /serviceAccountToken\.path: required string/,
    );
    assert.equal(tokens.calls.length, 0);
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
