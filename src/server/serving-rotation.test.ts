import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as tlsConnect } from 'node:tls';
import { after, before, describe, it } from 'node:test';
import { recordingLogger } from '../util/testing.ts';
import { createApiHandlers } from './api-handlers.ts';
import { createAuthenticator } from './auth/authenticator.ts';
import { createAlwaysAllowAuthorizer } from './auth/authorizer.ts';
import { createKubeletServer } from './kubelet-server.ts';
import { makeSelfSignedPair } from './serving-cert.ts';
import { fakeHost } from './testing.ts';

let dir: string;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tsk-serving-'));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function pair(cn: string): Promise<{ certPem: string; keyPem: string }> {
  const certFile = join(dir, `${cn}.crt`);
  const keyFile = join(dir, `${cn}.key`);
  await makeSelfSignedPair({ certFile, keyFile, subject: `/CN=${cn}`, days: 1 });
  return { certPem: await readFile(certFile, 'utf8'), keyPem: await readFile(keyFile, 'utf8') };
}

/** The CN the server presents on a new connection, or the handshake error. */
function handshake(port: number): Promise<string> {
  return new Promise((resolve) => {
    const s = tlsConnect({ host: '127.0.0.1', port, rejectUnauthorized: false }, () => {
      const cn = s.getPeerCertificate().subject.CN;
      s.end();
      resolve(`CN=${String(cn)}`);
    });
    s.on('error', (err: Error) => resolve(`error: ${err.message}`));
  });
}

describe('kubelet API with a bootstrapped serving certificate (serverTLSBootstrap)', () => {
  it('fails handshakes until the certificate is issued, then serves each rotated one to new connections', async () => {
    let current: { certPem: string; keyPem: string } | undefined;
    const listeners = new Set<() => void>();
    const logger = recordingLogger();
    const server = createKubeletServer({
      address: '127.0.0.1',
      port: 0,
      readOnlyPort: 0,
      tls: {
        servingCertificate: {
          current: () => current,
          onRotated(cb) {
            listeners.add(cb);
            return () => listeners.delete(cb);
          },
        },
      },
      nodeName: 'node-1',
      authenticator: createAuthenticator({ anonymous: true, x509: false }),
      authorizer: createAlwaysAllowAuthorizer(),
      handlers: createApiHandlers({
        host: fakeHost([]),
        enableDebuggingHandlers: true,
        enableSystemLogHandler: false,
        streamingIdleTimeoutMs: 60_000,
        logger,
      }),
      logger,
    });
    await server.start();
    try {
      const port = server.ports().secure;
      assert.match(await handshake(port), /^error: /);
      await new Promise((r) => setTimeout(r, 20));
      assert.ok(
        logger.lines.some(
          (l) => l.msg === 'TLS handshake error: no serving certificate available for the kubelet',
        ),
      );

      current = await pair('issued-1');
      for (const cb of listeners) cb();
      assert.equal(await handshake(port), 'CN=issued-1');

      current = await pair('issued-2');
      for (const cb of listeners) cb();
      assert.equal(await handshake(port), 'CN=issued-2');
    } finally {
      await server.close();
    }
    assert.equal(listeners.size, 0, 'close() unsubscribes');
  });
});
