import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createAuthenticator } from '../server/auth/authenticator.ts';
import { requestUser } from '../server/request-user.ts';
import { fakeHost, makeTestPki, startTestServer, type TestPki } from '../server/testing.ts';
import { fakeConsole, fakeKubelet } from './testing.ts';

let dir: string;
let pki: TestPki;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tsk-console-slots-'));
  pki = await makeTestPki(dir);
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Opens the console's feed as a client certificate's user; resolves with the answer's head. */
function openFeed(
  port: number,
  cert: { cert: Buffer; key: Buffer },
): Promise<{ status: number; body: Promise<string>; res: IncomingMessage }> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path: '/debug/console/events',
        rejectUnauthorized: false,
        agent: false,
        ...cert,
      },
      (res) => {
        const body = new Promise<string>((done) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => (text += c));
          res.on('end', () => done(text));
        });
        resolve({ status: res.statusCode ?? 0, body, res });
      },
    );
    req.on('error', reject);
    req.end();
  });
}

describe('the console feed behind the kubelet API', () => {
  it('gives each authenticated user at most 4 of the 16 streams; the fifth is 429 (one user could take all 16)', async () => {
    const kubelet = fakeKubelet();
    const { console: nodeConsole } = fakeConsole(kubelet, { userOf: (req) => requestUser(req)?.name });
    const { server, port } = await startTestServer(fakeHost([]), dir, {
      clientCA: pki.caCert,
      authenticator: createAuthenticator({ anonymous: false, x509: true }),
      console: nodeConsole,
    });
    const open: IncomingMessage[] = [];
    try {
      const alice = await pki.client('alice', []);
      const bob = await pki.client('bob', []);
      for (let i = 0; i < 4; i++) {
        const feed = await openFeed(port, alice);
        open.push(feed.res);
        assert.equal(feed.status, 200, `alice's stream ${i + 1}`);
      }
      const fifth = await openFeed(port, alice);
      assert.equal(fifth.status, 429);
      assert.equal(fifth.res.headers['retry-after'], '5');
      assert.equal(
        await fifth.body,
        'too many console streams open for user "alice" (4 per user); close one and retry\n',
      );
      const other = await openFeed(port, bob);
      open.push(other.res);
      assert.equal(other.status, 200, 'another user still gets a stream');
      assert.equal(nodeConsole.streams, 5);
    } finally {
      for (const r of open) r.destroy();
      nodeConsole.close();
      await server.close();
    }
  });
});
