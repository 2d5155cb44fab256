import assert from 'node:assert/strict';
import type { IncomingHttpHeaders } from 'node:http';
import { describe, it } from 'node:test';
import { bearerToken, isWebSocketUpgrade, WEBSOCKET_TOKEN_PROTOCOL_PREFIX } from './authenticator.ts';

const WS: IncomingHttpHeaders = { connection: 'Upgrade', upgrade: 'websocket' };
const tokenProtocol = (token: string) =>
  `${WEBSOCKET_TOKEN_PROTOCOL_PREFIX}${Buffer.from(token).toString('base64url')}`;
const bearer = (headers: IncomingHttpHeaders) => bearerToken({ headers });

describe('bearer token of a request', () => {
  it('reads Authorization: Bearer on any request', () => {
    assert.deepEqual(bearer({ authorization: 'Bearer abc ' }), { token: 'abc' });
    assert.deepEqual(bearer({ authorization: 'bearer ' }), { token: '' });
    assert.equal(bearer({ authorization: 'Basic eDp5' }), undefined);
    assert.equal(bearer({}), undefined);
  });

  it('takes the subprotocol token on a WebSocket upgrade only (a plain request carried it too)', () => {
    const protocols = `v4.channel.k8s.io, ${tokenProtocol('t0k')}`;
    assert.deepEqual(bearer({ ...WS, 'sec-websocket-protocol': protocols }), { token: 't0k' });
    for (const headers of [
      {},
      { connection: 'keep-alive' },
      { upgrade: 'websocket' },
      { connection: 'Upgrade', upgrade: 'SPDY/3.1' },
      { connection: 'upgraded', upgrade: 'websocket' },
    ]) {
      assert.equal(
        bearer({ ...headers, 'sec-websocket-protocol': protocols }),
        undefined,
        JSON.stringify(headers),
      );
    }
  });

  it("applies upstream's subprotocol checks", () => {
    const ws = (protocols: string) => bearer({ ...WS, 'sec-websocket-protocol': protocols });
    assert.deepEqual(ws(`${tokenProtocol('a')}, ${tokenProtocol('b')}, v4.channel.k8s.io`), {
      error: 'multiple base64url.bearer.authorization tokens specified',
    });
    assert.deepEqual(ws(tokenProtocol('alone')), { error: 'missing additional subprotocol' });
    assert.deepEqual(ws(`${WEBSOCKET_TOKEN_PROTOCOL_PREFIX}a+b=, v4.channel.k8s.io`), {
      error: 'invalid base64url.bearer.authorization token encoding',
    });
    const notUtf8 = Buffer.from([0xff, 0xfe]).toString('base64url');
    assert.deepEqual(ws(`${WEBSOCKET_TOKEN_PROTOCOL_PREFIX}${notUtf8}, v4.channel.k8s.io`), {
      error: 'invalid base64url.bearer.authorization token',
    });
    // An empty token is no token (upstream: not this authenticator's request).
    assert.equal(ws(`${WEBSOCKET_TOKEN_PROTOCOL_PREFIX}, v4.channel.k8s.io`), undefined);
  });

  it('knows a WebSocket upgrade as upstream wsstream.IsWebSocketRequest does', () => {
    assert.ok(isWebSocketUpgrade({ connection: 'keep-alive, Upgrade', upgrade: 'WebSocket' }));
    assert.ok(!isWebSocketUpgrade({ connection: 'close', upgrade: 'websocket' }));
    assert.ok(!isWebSocketUpgrade({ connection: 'upgrade', upgrade: 'h2c' }));
  });
});
