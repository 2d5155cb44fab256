import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { ApiRequest } from '../api/client-types.ts';
import { FakeApi, apiError } from '../api/testing.ts';
import { KubeletError, hasCode, isCanceled } from '../util/errors.ts';
import { recordingLogger } from '../util/testing.ts';
import { createTokenManager, type TokenRequestSpec } from './token-manager.ts';

const T0 = Date.parse('2025-03-01T00:00:00Z');
const TOKEN_PATH = '/api/v1/namespaces/ns/serviceaccounts/sa/token';

function spec(over: Partial<TokenRequestSpec> = {}): TokenRequestSpec {
  return {
    audiences: [],
    expirationSeconds: 3600,
    boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: 'web', uid: 'uid-1' },
    ...over,
  };
}

/** A token API that issues `tok-1`, `tok-2`, … valid for the requested seconds from the fake clock. */
function setup(opts: { random?: number } = {}) {
  const api = new FakeApi();
  const clock = { now: T0 };
  let issued = 0;
  api.respond('POST', /\/serviceaccounts\/[^/]+\/token$/, (req: ApiRequest) => {
    const body = req.body as { spec: TokenRequestSpec };
    issued += 1;
    return {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenRequest',
      spec: body.spec,
      status: {
        token: `tok-${issued}`,
        expirationTimestamp: new Date(clock.now + body.spec.expirationSeconds * 1000).toISOString(),
      },
    };
  });
  const logger = recordingLogger();
  const tokens = createTokenManager({
    api,
    logger,
    monotonic: () => clock.now,
    random: () => opts.random ?? 0,
  });
  const posts = () => api.requestsFor('POST').length;
  return { api, clock, tokens, logger, posts };
}

describe('service account token manager', () => {
  it('asks the TokenRequest API of the service account with audiences, expiration and the bound pod', async () => {
    const { api, tokens } = setup();
    const ac = new AbortController();
    const got = await tokens.getToken('ns', 'sa', spec({ audiences: ['vault'] }), ac.signal);
    assert.deepEqual(got, { token: 'tok-1', expiresAt: T0 + 3600_000 });
    const [req] = api.requestsFor('POST', TOKEN_PATH);
    assert.ok(req);
    assert.deepEqual(req.body, {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenRequest',
      spec: {
        audiences: ['vault'],
        expirationSeconds: 3600,
        boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: 'web', uid: 'uid-1' },
      },
    });
    assert.equal(req.timeoutMs, 10_000);
    assert.equal(req.signal?.aborted, false);
    ac.abort();
    assert.equal(req.signal?.aborted, true, "the caller's signal reaches the request");
  });

  it('hands out the cached token until 80 % of its lifetime has passed, then a new one', async () => {
    const { clock, tokens, posts } = setup();
    assert.equal((await tokens.getToken('ns', 'sa', spec())).token, 'tok-1');
    clock.now = T0 + 2880_000; // exactly 80 % of 3600 s: not yet
    assert.equal((await tokens.getToken('ns', 'sa', spec())).token, 'tok-1');
    assert.equal(posts(), 1);
    clock.now = T0 + 2881_000;
    assert.equal((await tokens.getToken('ns', 'sa', spec())).token, 'tok-2');
    assert.equal(posts(), 2);
    assert.equal((await tokens.getToken('ns', 'sa', spec())).token, 'tok-2');
  });

  it('refreshes up to 10 s earlier by jitter', async () => {
    const { clock, tokens } = setup({ random: 0.95 }); // 9 s of jitter
    await tokens.getToken('ns', 'sa', spec());
    clock.now = T0 + 2871_000;
    assert.equal((await tokens.getToken('ns', 'sa', spec())).token, 'tok-1');
    clock.now = T0 + 2872_000;
    assert.equal((await tokens.getToken('ns', 'sa', spec())).token, 'tok-2');
  });

  it('refreshes a long-lived token once it is older than 24 h', async () => {
    const { clock, tokens } = setup();
    const week = spec({ expirationSeconds: 7 * 86_400 });
    await tokens.getToken('ns', 'sa', week);
    clock.now = T0 + 86_400_000;
    assert.equal((await tokens.getToken('ns', 'sa', week)).token, 'tok-1');
    clock.now = T0 + 86_401_000;
    assert.equal((await tokens.getToken('ns', 'sa', week)).token, 'tok-2');
  });

  it('keeps one token per audience, expiration and bound pod', async () => {
    const { tokens, posts } = setup();
    await tokens.getToken('ns', 'sa', spec());
    await tokens.getToken('ns', 'sa', spec({ audiences: ['vault'] }));
    await tokens.getToken('ns', 'sa', spec({ expirationSeconds: 3607 }));
    const other = { apiVersion: 'v1', kind: 'Pod', name: 'web', uid: 'uid-2' } as const;
    await tokens.getToken('ns', 'sa', spec({ boundObjectRef: other }));
    await tokens.getToken('ns', 'other', spec());
    assert.equal(posts(), 5);
    await tokens.getToken('ns', 'sa', spec({ audiences: ['vault'] }));
    assert.equal(posts(), 5);
  });

  it('fails with the API error, typed, when there is no token yet', async () => {
    const { api, tokens } = setup();
    api.respondOnce('POST', TOKEN_PATH, apiError(403, 'Forbidden', 'no RBAC'));
    await assert.rejects(
      tokens.getToken('ns', 'sa', spec()),
      (err) =>
        err instanceof KubeletError &&
        err.code === 'PermissionDenied' &&
        err.message ===
          'request token for serviceaccount ns/sa: failed to fetch token: fake api: 403 Forbidden: no RBAC',
    );
  });

  it('keeps handing out the cached token, logged, when a refresh fails, and fails once it expired', async () => {
    const { api, clock, tokens, logger } = setup();
    await tokens.getToken('ns', 'sa', spec());
    api.respond('POST', TOKEN_PATH, apiError(503, 'ServiceUnavailable'));
    clock.now = T0 + 3000_000;
    assert.equal((await tokens.getToken('ns', 'sa', spec())).token, 'tok-1');
    const line = logger.lines.find((l) => l.level === 'error');
    assert.match(line?.msg ?? '', /could not refresh service account token/);
    assert.match(String(line?.fields.err), /503 ServiceUnavailable/);
    assert.ok(!JSON.stringify(logger.lines).includes('tok-1'), 'the token itself is never logged');
    clock.now = T0 + 3601_000;
    await assert.rejects(
      tokens.getToken('ns', 'sa', spec()),
      (err) => hasCode(err, 'Unavailable') && /token expired and refresh failed: .*503/.test(String(err)),
    );
  });

  it('tells a missing TokenRequest endpoint from a missing service account', async () => {
    const { api, tokens } = setup();
    api.respond('POST', TOKEN_PATH, apiError(404, 'NotFound', 'serviceaccounts "sa" not found'));
    api.respondOnce('GET', '/api/v1', {
      resources: [{ name: 'serviceaccounts' }, { name: 'serviceaccounts/token' }],
    });
    await assert.rejects(
      tokens.getToken('ns', 'sa', spec()),
      (err) => hasCode(err, 'NotFound') && /serviceaccounts "sa" not found/.test(String(err)),
    );
    const noTokens = setup();
    noTokens.api.respond('POST', TOKEN_PATH, apiError(404, 'NotFound'));
    noTokens.api.respond('GET', '/api/v1', { resources: [{ name: 'serviceaccounts' }] });
    await assert.rejects(
      noTokens.tokens.getToken('ns', 'sa', spec()),
      (err) =>
        hasCode(err, 'Unimplemented') && /does not have TokenRequest endpoints enabled/.test(String(err)),
    );
  });

  it('rejects an answer without a token', async () => {
    const { api, tokens } = setup();
    api.respondOnce('POST', TOKEN_PATH, { kind: 'TokenRequest', status: {} });
    await assert.rejects(tokens.getToken('ns', 'sa', spec()), (err) => hasCode(err, 'Internal'));
  });

  it('forgets the tokens of a pod that is gone, and only those', async () => {
    const { tokens, posts } = setup();
    const other = { apiVersion: 'v1', kind: 'Pod', name: 'db', uid: 'uid-2' } as const;
    await tokens.getToken('ns', 'sa', spec());
    await tokens.getToken('ns', 'sa', spec({ boundObjectRef: other }));
    tokens.forgetPod('uid-1');
    await tokens.getToken('ns', 'sa', spec({ boundObjectRef: other }));
    assert.equal(posts(), 2, "the other pod's token is still cached");
    assert.equal((await tokens.getToken('ns', 'sa', spec())).token, 'tok-3');
  });

  it('times out a hung refresh and hands out the still valid cached token', async () => {
    const api = new FakeApi();
    let clock = T0;
    api.respondOnce('POST', TOKEN_PATH, {
      status: { token: 'tok-1', expirationTimestamp: new Date(T0 + 3600_000).toISOString() },
    });
    api.respond('POST', TOKEN_PATH, () => new Promise(() => {})); // ignores its signal, never answers
    const tokens = createTokenManager({ api, monotonic: () => clock, random: () => 0, requestTimeoutMs: 20 });
    await tokens.getToken('ns', 'sa', spec());
    clock = T0 + 3000_000;
    assert.equal((await tokens.getToken('ns', 'sa', spec())).token, 'tok-1');
    clock = T0 + 3601_000;
    await assert.rejects(
      tokens.getToken('ns', 'sa', spec()),
      (err) =>
        hasCode(err, 'DeadlineExceeded') &&
        /token expired and refresh failed: POST \S+: no answer within 20 ms/.test(String(err)),
    );
  });

  it('passes a cancellation through instead of falling back to the cached token', async () => {
    const { api, clock, tokens } = setup();
    await tokens.getToken('ns', 'sa', spec());
    clock.now = T0 + 3000_000;
    api.respondOnce('POST', TOKEN_PATH, () => new Promise(() => {}));
    const ac = new AbortController();
    const pending = tokens.getToken('ns', 'sa', spec(), ac.signal);
    ac.abort();
    await assert.rejects(pending, (err) => isCanceled(err));
  });
});

describe('service account tokens while the wall clock steps', () => {
  // The kubelet's wall clock is node:test's mocked Date, stepped; the API server's clock (its
  // expirationTimestamp) and the kubelet's monotonic clock are setup's `clock.now`, never stepped.
  it('keeps handing out the cached token after a 2 h forward step (no TokenRequest per call)', async (t) => {
    t.mock.timers.enable({ apis: ['Date'], now: T0 });
    const { clock, tokens, posts } = setup();
    assert.equal((await tokens.getToken('ns', 'sa', spec())).token, 'tok-1');
    t.mock.timers.setTime(T0 + 2 * 3600_000);
    clock.now = T0 + 60_000;
    for (let i = 0; i < 3; i++) assert.equal((await tokens.getToken('ns', 'sa', spec())).token, 'tok-1');
    assert.equal(posts(), 1);
  });

  it('refreshes at 80 % of the lifetime after a 2 h backward step, not after the token expired', async (t) => {
    t.mock.timers.enable({ apis: ['Date'], now: T0 });
    const { clock, tokens, posts } = setup();
    assert.equal((await tokens.getToken('ns', 'sa', spec())).token, 'tok-1');
    t.mock.timers.setTime(T0 - 2 * 3600_000);
    clock.now = T0 + 2880_000;
    assert.equal((await tokens.getToken('ns', 'sa', spec())).token, 'tok-1');
    clock.now = T0 + 2881_000;
    assert.equal((await tokens.getToken('ns', 'sa', spec())).token, 'tok-2');
    assert.equal(posts(), 2);
  });
});
