import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { FakeApi } from '../../api/testing.ts';
import { fakeHost, get, startTestServer, testPod } from '../testing.ts';
import { createAuthenticator } from './authenticator.ts';
import { createWebhookAuthorizer } from './authorizer.ts';

const SAR = '/apis/authorization.k8s.io/v1/subjectaccessreviews';
const TOKEN_REVIEW = '/apis/authentication.k8s.io/v1/tokenreviews';

let dir: string;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tsk-head-'));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

/**
 * A kubelet API whose SubjectAccessReviews allow what `rules` lists for a user: verbs per user, `*`
 * for all (RBAC's wildcard is the only rule an empty verb matches).
 */
async function serve(rules: Record<string, string[]>) {
  const api = new FakeApi()
    .respond('POST', TOKEN_REVIEW, (req: { body?: unknown }) => {
      const token = (req.body as { spec: { token: string } }).spec.token;
      return { status: { authenticated: true, user: { username: token, groups: [] } } };
    })
    .respond('POST', SAR, (req: { body?: unknown }) => {
      const spec = (req.body as { spec: { user: string; resourceAttributes: { verb: string } } }).spec;
      const verbs = rules[spec.user] ?? [];
      return { status: { allowed: verbs.includes('*') || verbs.includes(spec.resourceAttributes.verb) } };
    });
  const started = await startTestServer(
    fakeHost([{ pod: testPod('default', 'web', 'u1'), status: { phase: 'Running' } }]),
    dir,
    {
      authenticator: createAuthenticator({
        anonymous: false,
        x509: false,
        tokenReview: { api, cacheTTLMs: 60_000 },
      }),
      authorizer: createWebhookAuthorizer({
        api,
        cacheAuthorizedTTLMs: 60_000,
        cacheUnauthorizedTTLMs: 60_000,
      }),
    },
  );
  return { ...started, api };
}

describe('HEAD on the kubelet API', () => {
  it('is authorized with an empty verb, as upstream (it was `get`)', async () => {
    const { server, port, api } = await serve({ reader: ['get'] });
    try {
      const res = await get(port, '/pods', { method: 'HEAD', token: 'reader' });
      assert.equal(res.status, 403);
      assert.equal(
        res.headers['content-type'],
        'text/plain; charset=utf-8',
        'the body of a refused HEAD is not sent, its headers are',
      );
      const sar = api.requestsFor('POST', SAR)[0]?.body as {
        spec: { resourceAttributes: { verb: string; subresource: string } };
      };
      assert.equal(sar.spec.resourceAttributes.verb, '');
      assert.equal(sar.spec.resourceAttributes.subresource, 'proxy');
      // The same user's GET is allowed: only the verb differs.
      assert.equal((await get(port, '/pods', { token: 'reader' })).status, 200);
    } finally {
      await server.close();
    }
  });

  it("answers an allowed user's HEAD as its GET, without the body", async () => {
    const { server, port } = await serve({ admin: ['*'] });
    try {
      for (const path of ['/pods', '/healthz', '/metrics', '/spec/']) {
        const getRes = await get(port, path, { token: 'admin' });
        const head = await get(port, path, { method: 'HEAD', token: 'admin' });
        assert.equal(head.status, getRes.status, path);
        assert.equal(head.headers['content-type'], getRes.headers['content-type'], path);
        assert.equal(head.body, '', path);
      }
    } finally {
      await server.close();
    }
  });
});
